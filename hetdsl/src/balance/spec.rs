//! Typed balancer configuration, parsed from and printed as short strings, so that runners,
//! environment variables and the macros pick balancers by name.
//!
//! # Grammar
//!
//! ```text
//! spec    := name [ ":" options ]
//! options := number ( "," number )*                 positional: static, static-rev, dynamic, dynamic-chunk
//!          | key "=" values ( "," key "=" values )*  named: hguided, hguided-tuned
//! values  := number ( "/" number )*                 one value, or one per device (hguided-tuned)
//! ```
//!
//! | spec | balancer |
//! | --- | --- |
//! | `sigmoid` | Sigmoid with the probe-and-horizon guard (the default balancer) |
//! | `sigmoid-faithful` | Sigmoid exactly as seed 000 Algorithm 1 |
//! | `static`, `static:1,3` | one package per device, ∝ nominal GFLOP/s or the given weights |
//! | `static-rev`, `static-rev:1,3` | the same, laid out from the last device to the first |
//! | `dynamic`, `dynamic:64` | 128 (or n) equal packages, first come first served |
//! | `dynamic-chunk`, `dynamic-chunk:16` | packages of 64 (or n) work-groups |
//! | `hguided`, `hguided:k=2,m=1` | HGuided, k = 2 and minimum = occupancy bound unless given |
//! | `hguided-tuned`, `hguided-tuned:k=3.5/1,m=1/30` | HGuided with per-device (k_i, m_i); seed 001's values by device kind when left out |
//! | `adaptive` | probes, then a proportional split (Boyer et al.) |
//! | `minmax` | probes, least-squares time lines, min–max split (seed 002) |
//! | `linear2p` | two probes, two-point lines, equal-finish split (seed 003) |
//!
//! Minimum packages (`m`) and chunk sizes are in work-groups.

use std::fmt;
use std::str::FromStr;

use super::{
    Adaptive, Balancer, Dynamic, HGuided, LinearTwoPoint, MinMax, PerDevice, Sigmoid, Static,
};
use crate::error::{Error, Result};

/// Every balancer name [`BalancerSpec`] accepts (mirrored by the macro crate).
pub const NAMES: &[&str] = &[
    "sigmoid",
    "sigmoid-faithful",
    "static",
    "static-rev",
    "dynamic",
    "dynamic-chunk",
    "hguided",
    "hguided-tuned",
    "adaptive",
    "minmax",
    "linear2p",
];

/// Package count of a bare `dynamic` (the skeleton's and EngineCL's middle setting).
const DEFAULT_DYNAMIC_PACKAGES: u64 = 128;
/// Chunk of a bare `dynamic-chunk`, in work-groups.
const DEFAULT_DYNAMIC_CHUNK: u64 = 64;
/// HGuided's k when none is given (seed 001: the best single k).
const DEFAULT_HGUIDED_K: f64 = 2.0;

/// A balancer and its parameters.
#[derive(Debug, Clone, PartialEq)]
pub enum BalancerSpec {
    Sigmoid {
        guarded: bool,
    },
    Static {
        weights: Option<Vec<f64>>,
        reverse: bool,
    },
    Dynamic {
        packages: u64,
    },
    DynamicChunk {
        groups: u64,
    },
    /// `min_groups: None` is each device's occupancy bound.
    HGuided {
        k: f64,
        min_groups: Option<u64>,
    },
    /// `None` sides take seed 001's values by device kind.
    HGuidedTuned {
        k: Option<PerDevice<f64>>,
        min_groups: Option<PerDevice<u64>>,
    },
    Adaptive,
    MinMax,
    LinearTwoPoint,
}

impl Default for BalancerSpec {
    fn default() -> Self {
        BalancerSpec::Sigmoid { guarded: true }
    }
}

impl BalancerSpec {
    /// A fresh balancer for one run.
    pub fn build(&self) -> Box<dyn Balancer> {
        match self {
            BalancerSpec::Sigmoid { guarded: true } => Box::new(Sigmoid::guarded()),
            BalancerSpec::Sigmoid { guarded: false } => Box::new(Sigmoid::faithful()),
            BalancerSpec::Static { weights, reverse } => {
                let s = weights.clone().map_or_else(Static::nominal, Static::with_weights);
                Box::new(if *reverse { s.reversed() } else { s })
            }
            BalancerSpec::Dynamic { packages } => Box::new(Dynamic::packages(*packages)),
            BalancerSpec::DynamicChunk { groups } => Box::new(Dynamic::chunk(*groups)),
            BalancerSpec::HGuided { k, min_groups } => Box::new(HGuided::uniform(*k, *min_groups)),
            BalancerSpec::HGuidedTuned { k, min_groups } => {
                Box::new(HGuided::tuned(k.clone(), min_groups.clone()))
            }
            BalancerSpec::Adaptive => Box::new(Adaptive::default()),
            BalancerSpec::MinMax => Box::new(MinMax::default()),
            BalancerSpec::LinearTwoPoint => Box::new(LinearTwoPoint::default()),
        }
    }
}

fn bad(spec: &str, why: impl fmt::Display) -> Error {
    Error::BadBalancer(format!("`{spec}`: {why}"))
}

fn number<T: FromStr>(spec: &str, text: &str) -> Result<T> {
    text.trim().parse().map_err(|_| bad(spec, format!("`{text}` is not a valid number")))
}

fn positional<T: FromStr>(spec: &str, options: &str) -> Result<Vec<T>> {
    options.split(',').map(|t| number(spec, t)).collect()
}

fn only_one<T: FromStr>(spec: &str, options: &str) -> Result<T> {
    match positional::<T>(spec, options)?.as_slice() {
        [_] => number(spec, options),
        _ => Err(bad(spec, "expects exactly one number")),
    }
}

fn per_device<T: FromStr + Clone>(spec: &str, text: &str) -> Result<PerDevice<T>> {
    let values: Vec<T> = text.split('/').map(|t| number(spec, t)).collect::<Result<_>>()?;
    Ok(if values.len() == 1 { PerDevice::All(values[0].clone()) } else { PerDevice::Each(values) })
}

/// `k=..,m=..` pairs; each key at most once, no other key.
fn named<'a>(spec: &str, options: &'a str) -> Result<(Option<&'a str>, Option<&'a str>)> {
    let (mut k, mut m) = (None, None);
    for pair in options.split(',') {
        let (key, value) = pair
            .split_once('=')
            .ok_or_else(|| bad(spec, format!("`{pair}` is not key=value; keys: k, m")))?;
        let slot = match key.trim() {
            "k" => &mut k,
            "m" => &mut m,
            other => return Err(bad(spec, format!("unknown option `{other}`; options: k, m"))),
        };
        if slot.replace(value).is_some() {
            return Err(bad(spec, format!("option `{}` given twice", key.trim())));
        }
    }
    Ok((k, m))
}

impl FromStr for BalancerSpec {
    type Err = Error;

    fn from_str(spec: &str) -> Result<Self> {
        let spec = spec.trim();
        let (name, options) = match spec.split_once(':') {
            Some((n, o)) => (n.trim(), Some(o.trim())),
            None => (spec, None),
        };
        let no_options = |built: BalancerSpec| match options {
            None => Ok(built),
            Some(_) => Err(bad(spec, format!("`{name}` takes no options"))),
        };
        match name {
            "sigmoid" => no_options(BalancerSpec::Sigmoid { guarded: true }),
            "sigmoid-faithful" => no_options(BalancerSpec::Sigmoid { guarded: false }),
            "adaptive" => no_options(BalancerSpec::Adaptive),
            "minmax" => no_options(BalancerSpec::MinMax),
            "linear2p" => no_options(BalancerSpec::LinearTwoPoint),
            "static" | "static-rev" => Ok(BalancerSpec::Static {
                weights: options.map(|o| positional(spec, o)).transpose()?,
                reverse: name == "static-rev",
            }),
            "dynamic" => Ok(BalancerSpec::Dynamic {
                packages: options
                    .map(|o| only_one(spec, o))
                    .transpose()?
                    .unwrap_or(DEFAULT_DYNAMIC_PACKAGES),
            }),
            "dynamic-chunk" => Ok(BalancerSpec::DynamicChunk {
                groups: options
                    .map(|o| only_one(spec, o))
                    .transpose()?
                    .unwrap_or(DEFAULT_DYNAMIC_CHUNK),
            }),
            "hguided" => {
                let (k, m) = options.map(|o| named(spec, o)).transpose()?.unwrap_or_default();
                Ok(BalancerSpec::HGuided {
                    k: k.map(|k| number(spec, k)).transpose()?.unwrap_or(DEFAULT_HGUIDED_K),
                    min_groups: m.map(|m| number(spec, m)).transpose()?,
                })
            }
            "hguided-tuned" => {
                let (k, m) = options.map(|o| named(spec, o)).transpose()?.unwrap_or_default();
                Ok(BalancerSpec::HGuidedTuned {
                    k: k.map(|k| per_device(spec, k)).transpose()?,
                    min_groups: m.map(|m| per_device(spec, m)).transpose()?,
                })
            }
            other => Err(bad(
                spec,
                format!("unknown balancer `{other}`; balancers: {}", NAMES.join(", ")),
            )),
        }
    }
}

fn join<T: fmt::Display>(values: &[T], sep: &str) -> String {
    values.iter().map(ToString::to_string).collect::<Vec<_>>().join(sep)
}

fn per_device_text<T: fmt::Display>(v: &PerDevice<T>) -> String {
    match v {
        PerDevice::All(x) => x.to_string(),
        PerDevice::Each(list) => join(list, "/"),
    }
}

impl fmt::Display for BalancerSpec {
    /// The canonical spec string; it parses back to the same value.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BalancerSpec::Sigmoid { guarded: true } => write!(f, "sigmoid"),
            BalancerSpec::Sigmoid { guarded: false } => write!(f, "sigmoid-faithful"),
            BalancerSpec::Static { weights, reverse } => {
                write!(f, "{}", if *reverse { "static-rev" } else { "static" })?;
                match weights {
                    Some(w) => write!(f, ":{}", join(w, ",")),
                    None => Ok(()),
                }
            }
            BalancerSpec::Dynamic { packages } => write!(f, "dynamic:{packages}"),
            BalancerSpec::DynamicChunk { groups } => write!(f, "dynamic-chunk:{groups}"),
            BalancerSpec::HGuided { k, min_groups } => {
                write!(f, "hguided:k={k}")?;
                match min_groups {
                    Some(m) => write!(f, ",m={m}"),
                    None => Ok(()),
                }
            }
            BalancerSpec::HGuidedTuned { k, min_groups } => {
                let mut parts = Vec::new();
                if let Some(k) = k {
                    parts.push(format!("k={}", per_device_text(k)));
                }
                if let Some(m) = min_groups {
                    parts.push(format!("m={}", per_device_text(m)));
                }
                write!(f, "hguided-tuned")?;
                if parts.is_empty() {
                    Ok(())
                } else {
                    write!(f, ":{}", parts.join(","))
                }
            }
            BalancerSpec::Adaptive => write!(f, "adaptive"),
            BalancerSpec::MinMax => write!(f, "minmax"),
            BalancerSpec::LinearTwoPoint => write!(f, "linear2p"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> BalancerSpec {
        s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn every_name_parses_bare_and_builds() {
        for name in NAMES {
            let spec = parse(name);
            assert!(spec.to_string().starts_with(name), "{name} printed as {spec}");
            spec.build();
        }
    }

    #[test]
    fn options_are_read() {
        assert_eq!(
            parse("static:1,3"),
            BalancerSpec::Static { weights: Some(vec![1.0, 3.0]), reverse: false }
        );
        assert_eq!(parse("static-rev"), BalancerSpec::Static { weights: None, reverse: true });
        assert_eq!(parse("dynamic:64"), BalancerSpec::Dynamic { packages: 64 });
        assert_eq!(parse("dynamic-chunk:16"), BalancerSpec::DynamicChunk { groups: 16 });
        assert_eq!(parse("hguided"), BalancerSpec::HGuided { k: 2.0, min_groups: None });
        assert_eq!(parse("hguided:k=2,m=1"), BalancerSpec::HGuided { k: 2.0, min_groups: Some(1) });
        assert_eq!(
            parse("hguided-tuned:k=3.5/1,m=1/30"),
            BalancerSpec::HGuidedTuned {
                k: Some(PerDevice::Each(vec![3.5, 1.0])),
                min_groups: Some(PerDevice::Each(vec![1, 30]))
            }
        );
        assert_eq!(parse(" sigmoid-faithful "), BalancerSpec::Sigmoid { guarded: false });
    }

    #[test]
    fn display_round_trips() {
        for s in [
            "sigmoid",
            "sigmoid-faithful",
            "static",
            "static-rev:1,2.5",
            "dynamic:7",
            "dynamic-chunk:3",
            "hguided:k=1.5",
            "hguided:k=2,m=9",
            "hguided-tuned",
            "hguided-tuned:m=4",
            "hguided-tuned:k=3.5/1.5/1,m=1/15/30",
            "adaptive",
            "minmax",
            "linear2p",
        ] {
            let spec = parse(s);
            assert_eq!(spec.to_string(), s);
            assert_eq!(parse(&spec.to_string()), spec);
        }
    }

    #[test]
    fn mistakes_are_explained() {
        let err = |s: &str| s.parse::<BalancerSpec>().unwrap_err().to_string();
        let unknown = err("sigmod");
        assert!(
            unknown.contains("unknown balancer `sigmod`") && unknown.contains("linear2p"),
            "{unknown}"
        );
        assert!(err("hguided:q=1").contains("unknown option `q`"));
        assert!(err("hguided:k=1,k=2").contains("given twice"));
        assert!(err("hguided:k").contains("not key=value"));
        assert!(err("dynamic:1,2").contains("exactly one"));
        assert!(err("dynamic:x").contains("`x` is not a valid number"));
        assert!(err("sigmoid:fast").contains("takes no options"));
    }
}
