//! Balancers by name for the command line: `hetdsl::balance::BalancerSpec` (`sigmoid`,
//! `static`, `dynamic:64`, `hguided`, …), plus the list `all` expands to.

use hetdsl::balance::{BalancerSpec, NAMES};
use hetdsl::Balancer;

/// A fresh balancer from its spec, e.g. `dynamic:64`.
pub fn parse(spec: &str) -> Result<Box<dyn Balancer>, String> {
    spec.parse::<BalancerSpec>().map(|s| s.build()).map_err(|e| e.to_string())
}

/// Expand a comma-separated list (`all`: every balancer family, with its default parameters)
/// and check every spec.
pub fn parse_list(list: &str) -> Result<Vec<String>, String> {
    let specs: Vec<String> = if list == "all" {
        NAMES.iter().map(|s| s.to_string()).collect()
    } else {
        list.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect()
    };
    for s in &specs {
        parse(s)?;
    }
    if specs.is_empty() {
        return Err("no balancer named".into());
    }
    Ok(specs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_or_explain() {
        assert_eq!(parse("dynamic:8").map(|b| b.name()), Ok("dynamic(8)".to_string()));
        assert!(parse("sigmoid").is_ok());
        assert!(parse("nope").is_err());
        assert_eq!(parse_list("all").map(|l| l.len()), Ok(NAMES.len()));
        assert_eq!(parse_list("static, hguided").map(|l| l.len()), Ok(2));
        assert!(parse_list("static,bogus").is_err());
    }
}
