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
//! | `sigmoid-faithful` | Sigmoid exactly as the Sigmoid paper's Algorithm 1 |
//! | `static`, `static:1,3` | one package per device, ∝ nominal GFLOP/s or the given weights |
//! | `static-rev`, `static-rev:1,3` | the same, laid out from the last device to the first |
//! | `dynamic`, `dynamic:64` | 128 (or n) equal packages, first come first served |
//! | `dynamic-chunk`, `dynamic-chunk:16` | packages of 64 (or n) work-groups |
//! | `hguided`, `hguided:k=2,m=1` | HGuided, k = 2 and minimum = occupancy bound unless given |
//! | `hguided-tuned`, `hguided-tuned:k=3.5/1,m=1/30` | HGuided with per-device (k_i, m_i); the EngineCL optimisation study's values by device kind when left out |
//! | `adaptive` | probes, then a proportional split (Boyer et al.) |
//! | `minmax` | probes, least-squares time lines, min–max split (min–max model paper) |
//! | `linear2p` | two probes, two-point lines, equal-finish split (sparse-grid paper) |
//!
//! Minimum packages (`m`) and chunk sizes are in work-groups.

use std::fmt;
use std::str::FromStr;

use super::{
    Adaptive, Balancer, Dynamic, HGuided, LinearTwoPoint, MinMax, PerDevice, Sigmoid, Static,
};
use crate::error::{Error, Result};

/// Every balancer name [`BalancerSpec`] accepts (the registry's, shared with the macros).
pub const NAMES: &[&str] = &hetdsl_decl::balancer::NAMES;

/// Package count of a bare `dynamic` (the skeleton's and EngineCL's middle setting).
const DEFAULT_DYNAMIC_PACKAGES: u64 = 128;
/// Chunk of a bare `dynamic-chunk`, in work-groups.
const DEFAULT_DYNAMIC_CHUNK: u64 = 64;
/// HGuided's k when none is given (the EngineCL optimisation study's best single k).
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
    /// `None` sides take the EngineCL optimisation study's values by device kind.
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

fn per_device<T: Clone>(values: Vec<T>) -> PerDevice<T> {
    match values.as_slice() {
        [one] => PerDevice::All(one.clone()),
        _ => PerDevice::Each(values),
    }
}

/// Only one value for a balancer that takes one for all devices (the registry reads it as a
/// list of one).
fn single<T: Copy>(values: Option<Vec<T>>) -> Option<T> {
    values.and_then(|v| v.first().copied())
}

impl FromStr for BalancerSpec {
    type Err = Error;

    /// Parsed by the registry `hetdsl_decl::balancer` (which the macros check specs with);
    /// here only the description becomes a spec, defaults filled in.
    fn from_str(spec: &str) -> Result<Self> {
        use hetdsl_decl::balancer::{parse, Kind, Options};
        let parsed = parse(spec).map_err(|why| bad(spec.trim(), why))?;
        let (numbers, one, k, m) = match parsed.options {
            Options::Nothing => (None, None, None, None),
            Options::Numbers(n) => (n, None, None, None),
            Options::OneCount(c) => (None, c, None, None),
            Options::KM { k, m } => (None, None, k, m),
        };
        Ok(match parsed.kind {
            Kind::Sigmoid => BalancerSpec::Sigmoid { guarded: true },
            Kind::SigmoidFaithful => BalancerSpec::Sigmoid { guarded: false },
            Kind::Static => BalancerSpec::Static { weights: numbers, reverse: false },
            Kind::StaticRev => BalancerSpec::Static { weights: numbers, reverse: true },
            Kind::Dynamic => {
                BalancerSpec::Dynamic { packages: one.unwrap_or(DEFAULT_DYNAMIC_PACKAGES) }
            }
            Kind::DynamicChunk => {
                BalancerSpec::DynamicChunk { groups: one.unwrap_or(DEFAULT_DYNAMIC_CHUNK) }
            }
            Kind::HGuided => BalancerSpec::HGuided {
                k: single(k).unwrap_or(DEFAULT_HGUIDED_K),
                min_groups: single(m),
            },
            Kind::HGuidedTuned => {
                BalancerSpec::HGuidedTuned { k: k.map(per_device), min_groups: m.map(per_device) }
            }
            Kind::Adaptive => BalancerSpec::Adaptive,
            Kind::MinMax => BalancerSpec::MinMax,
            Kind::LinearTwoPoint => BalancerSpec::LinearTwoPoint,
        })
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
        assert!(err("static:inf").contains("`inf` is not a number"));
        assert!(err("dynamic:x").contains("`x` is not a whole number"));
        assert!(err("sigmoid:fast").contains("takes no options"));
    }
}
