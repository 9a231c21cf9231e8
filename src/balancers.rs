//! Balancers by name, for the command line (`static`, `dynamic:64`, …).
//!
//! Stop-gap until `hetdsl::balance::BalancerSpec` lands on main: this module is the one place to
//! switch over to it.

use hetdsl::balance::{Dynamic, Static};
use hetdsl::Balancer;

/// The names `all` expands to.
pub const ALL: &[&str] = &["static", "static-rev", "dynamic:16", "dynamic:64"];

/// The balancer called `name`: `static` (one package per device, by nominal speed),
/// `static-rev` (the same, laid out from the last device), `dynamic` (128 packages) or
/// `dynamic:N` (N equal packages).
pub fn parse(name: &str) -> Result<Box<dyn Balancer>, String> {
    let (kind, arg) = match name.split_once(':') {
        Some((k, a)) => (k, Some(a)),
        None => (name, None),
    };
    match (kind, arg) {
        ("static", None) => Ok(Box::new(Static::nominal())),
        ("static-rev", None) => Ok(Box::new(Static::nominal().reversed())),
        ("dynamic", None) => Ok(Box::new(Dynamic::default())),
        ("dynamic", Some(n)) => match n.parse::<u64>() {
            Ok(n) if n > 0 => Ok(Box::new(Dynamic::packages(n))),
            _ => Err(format!("`{name}`: the package count must be a positive integer")),
        },
        _ => Err(format!("unknown balancer `{name}`; known: {}", ALL.join(", "))),
    }
}

/// Expand a comma-separated list (`all` for every known balancer) and check every name.
pub fn parse_list(list: &str) -> Result<Vec<String>, String> {
    let names: Vec<String> = if list == "all" {
        ALL.iter().map(|s| s.to_string()).collect()
    } else {
        list.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect()
    };
    for n in &names {
        parse(n)?;
    }
    if names.is_empty() {
        return Err("no balancer named".into());
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_or_explain() {
        assert!(parse("static").is_ok());
        assert_eq!(parse("dynamic:8").map(|b| b.name()), Ok("dynamic(8)".to_string()));
        assert!(parse("dynamic:0").is_err());
        assert!(parse("nope").err().unwrap_or_default().contains("known"));
        assert_eq!(parse_list("all").map(|l| l.len()), Ok(ALL.len()));
        assert!(parse_list("static,bogus").is_err());
    }
}
