//! Balancers by name for the command line: `hetdsl::balance::BalancerSpec` (`sigmoid`,
//! `static`, `dynamic:64`, `hguided`, …), `default` (no balancer given: what a caller who names
//! none gets, Sigmoid on a first run and the program's last split on a repeated one), plus the
//! list `all` expands to.

use hetdsl::balance::{BalancerSpec, NAMES};
use hetdsl::Balancer;

/// The spec that gives a launch no balancer of its own.
pub const DEFAULT: &str = "default";

/// A fresh balancer from its spec, e.g. `dynamic:64`; `None` for [`DEFAULT`].
pub fn parse(spec: &str) -> Result<Option<Box<dyn Balancer>>, String> {
    if spec == DEFAULT {
        return Ok(None);
    }
    spec.parse::<BalancerSpec>().map(|s| Some(s.build())).map_err(|e| e.to_string())
}

/// Expand a comma-separated list (`all`: every balancer family, with its default parameters)
/// and check every spec.
pub fn parse_list(list: &str) -> Result<Vec<String>, String> {
    let specs: Vec<String> = if list == "all" {
        NAMES.iter().map(|s| s.to_string()).collect()
    } else {
        let mut specs: Vec<String> = Vec::new();
        for t in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            // A number goes on the parameters of the spec before it (`static:1,3`): no balancer's
            // name is a number.
            match specs.last_mut() {
                Some(before) if before.contains(':') && t.parse::<f64>().is_ok() => {
                    before.push(',');
                    before.push_str(t);
                }
                _ => specs.push(t.to_string()),
            }
        }
        specs
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
        assert_eq!(parse("dynamic:8").map(|b| b.map(|b| b.name())), Ok(Some("dynamic(8)".into())));
        assert!(matches!(parse("default"), Ok(None)));
        assert!(parse("sigmoid").is_ok());
        assert!(parse("nope").is_err());
        assert_eq!(parse_list("all").map(|l| l.len()), Ok(NAMES.len()));
        assert_eq!(parse_list("static, hguided").map(|l| l.len()), Ok(2));
        assert!(parse_list("static,bogus").is_err());
        // Static weights keep their commas, as the README writes them.
        assert_eq!(
            parse_list("static:1,3, dynamic:8"),
            Ok(vec!["static:1,3".to_string(), "dynamic:8".to_string()])
        );
        assert!(parse_list("sigmoid,3").is_err());
    }
}
