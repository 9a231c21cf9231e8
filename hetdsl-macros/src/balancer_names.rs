//! Compile-time validation of a balancer spec such as `"dynamic:64"` or `"hguided:k=2,m=1"`.
//!
//! A proc-macro crate cannot depend on the runtime, so this mirrors the grammar of
//! `hetdsl::balance::BalancerSpec` (its module docs): `name[:options]`, options positional
//! numbers or `key=value` pairs. The runtime parses the same string again; the test
//! `hetdsl/tests/balancer_names.rs` includes this file and holds the two lists equal.

/// How a balancer takes options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Options {
    None,
    /// Any count of numbers (`static:1,3`).
    Numbers,
    /// Exactly one whole number (`dynamic:64`).
    OneCount,
    /// `k=<number>,m=<count>`, each at most once.
    KM {
        per_device: bool,
    },
}

/// Every balancer name and its options.
pub const BALANCERS: &[(&str, Options)] = &[
    ("sigmoid", Options::None),
    ("sigmoid-faithful", Options::None),
    ("static", Options::Numbers),
    ("static-rev", Options::Numbers),
    ("dynamic", Options::OneCount),
    ("dynamic-chunk", Options::OneCount),
    ("hguided", Options::KM { per_device: false }),
    ("hguided-tuned", Options::KM { per_device: true }),
    ("adaptive", Options::None),
    ("minmax", Options::None),
    ("linear2p", Options::None),
];

/// `Ok` if the runtime will accept `spec`, else what is wrong with it.
pub fn validate(spec: &str) -> Result<(), String> {
    let spec = spec.trim();
    let (name, options) = match spec.split_once(':') {
        Some((n, o)) => (n.trim(), Some(o.trim())),
        None => (spec, None),
    };
    let Some(&(_, kind)) = BALANCERS.iter().find(|(n, _)| *n == name) else {
        let names: Vec<&str> = BALANCERS.iter().map(|(n, _)| *n).collect();
        return Err(format!("unknown balancer `{name}`; the balancers are {}", names.join(", ")));
    };
    let Some(options) = options else {
        return Ok(());
    };
    let number = |t: &str| {
        t.trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .map(|_| ())
            .ok_or(format!("`{t}` is not a number"))
    };
    let count = |t: &str| {
        t.trim().parse::<u64>().map(|_| ()).map_err(|_| format!("`{t}` is not a whole number"))
    };
    match kind {
        Options::None => Err(format!("`{name}` takes no options")),
        Options::Numbers => options.split(',').try_for_each(number),
        Options::OneCount => match options.split(',').count() {
            1 => count(options),
            _ => Err(format!("`{name}` takes one number")),
        },
        Options::KM { per_device } => {
            let mut seen = Vec::new();
            for pair in options.split(',') {
                let (key, value) = pair
                    .split_once('=')
                    .ok_or(format!("`{pair}` is not key=value; the keys are k, m"))?;
                let key = key.trim();
                if !matches!(key, "k" | "m") {
                    return Err(format!(
                        "unknown option `{key}` of `{name}`; the options are k, m"
                    ));
                }
                if seen.contains(&key) {
                    return Err(format!("option `{key}` of `{name}` given twice"));
                }
                seen.push(key);
                let values: Vec<&str> =
                    if per_device { value.split('/').collect() } else { vec![value] };
                for v in values {
                    if key == "k" {
                        number(v)?
                    } else {
                        count(v)?
                    }
                }
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::validate;

    #[test]
    fn accepts_the_runtime_grammar() {
        for ok in [
            "sigmoid",
            "sigmoid-faithful",
            "static",
            "static:1,3",
            "static-rev:2.5",
            "dynamic:64",
            "dynamic-chunk",
            "hguided:k=2,m=1",
            "hguided-tuned:k=3.5/1,m=1/30",
            " adaptive ",
            "minmax",
            "linear2p",
        ] {
            assert_eq!(validate(ok), Ok(()), "{ok}");
        }
    }

    #[test]
    fn rejects_names_and_options_the_runtime_rejects() {
        let cases = [
            ("sigmod", "unknown balancer `sigmod`"),
            ("sigmoid:2", "takes no options"),
            ("dynamic:x", "not a whole number"),
            ("dynamic:1,2", "takes one number"),
            ("hguided:q=1", "unknown option `q`"),
            ("hguided:k=1,k=2", "given twice"),
            ("hguided:m=1.5", "not a whole number"),
            ("hguided:k", "not key=value"),
            ("static:1,x", "not a number"),
        ];
        for (spec, why) in cases {
            let err = validate(spec).unwrap_err();
            assert!(err.contains(why), "{spec}: {err}");
        }
    }
}
