//! The registry of balancers: every name a balancer spec may use, the options each accepts,
//! and the parsing of a spec string into a [`Parsed`] description. The runtime turns a
//! description into a balancer; the macros call [`validate`] to refuse a bad spec at compile
//! time. One table feeds both, so they cannot disagree.
//!
//! Grammar: `name[:options]`, options being positional numbers (`static:1,3`, `dynamic:64`) or
//! `key=value` pairs (`hguided:k=2,m=1`; `hguided-tuned:k=3.5/1,m=1/30`, one value per device).

/// Which balancer a spec names. Adding a balancer: one variant here, one line of [`REGISTRY`],
/// one arm of the runtime's match that builds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Sigmoid,
    SigmoidFaithful,
    Static,
    StaticRev,
    Dynamic,
    DynamicChunk,
    HGuided,
    HGuidedTuned,
    Adaptive,
    MinMax,
    LinearTwoPoint,
}

/// The options a balancer accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accepts {
    /// No options (`sigmoid`).
    Nothing,
    /// Any count of finite numbers (`static:1,3`).
    Numbers,
    /// Exactly one whole number (`dynamic:64`).
    OneCount,
    /// `k=<number>,m=<whole number>`, each at most once; with `per_device`, each value may be
    /// a `/`-separated list, one per device.
    KM { per_device: bool },
}

/// One balancer of the registry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    pub name: &'static str,
    pub kind: Kind,
    pub accepts: Accepts,
}

const fn entry(name: &'static str, kind: Kind, accepts: Accepts) -> Entry {
    Entry { name, kind, accepts }
}

/// Every balancer, in the order listings show them.
pub const REGISTRY: [Entry; 11] = [
    entry("sigmoid", Kind::Sigmoid, Accepts::Nothing),
    entry("sigmoid-faithful", Kind::SigmoidFaithful, Accepts::Nothing),
    entry("static", Kind::Static, Accepts::Numbers),
    entry("static-rev", Kind::StaticRev, Accepts::Numbers),
    entry("dynamic", Kind::Dynamic, Accepts::OneCount),
    entry("dynamic-chunk", Kind::DynamicChunk, Accepts::OneCount),
    entry("hguided", Kind::HGuided, Accepts::KM { per_device: false }),
    entry("hguided-tuned", Kind::HGuidedTuned, Accepts::KM { per_device: true }),
    entry("adaptive", Kind::Adaptive, Accepts::Nothing),
    entry("minmax", Kind::MinMax, Accepts::Nothing),
    entry("linear2p", Kind::LinearTwoPoint, Accepts::Nothing),
];

/// Every balancer name, in registry order.
pub const NAMES: [&str; REGISTRY.len()] = {
    let mut names = [""; REGISTRY.len()];
    let mut i = 0;
    while i < REGISTRY.len() {
        names[i] = REGISTRY[i].name;
        i += 1;
    }
    names
};

/// The options given with a spec, read according to the balancer's [`Accepts`]. A field left
/// out of the spec is `None` (the runtime supplies the default).
#[derive(Debug, Clone, PartialEq)]
pub enum Options {
    Nothing,
    Numbers(Option<Vec<f64>>),
    OneCount(Option<u64>),
    /// One value, or one per device for `per_device` balancers.
    KM {
        k: Option<Vec<f64>>,
        m: Option<Vec<u64>>,
    },
}

/// A parsed balancer spec.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    pub kind: Kind,
    pub name: &'static str,
    pub options: Options,
}

/// The registry entry of a name.
pub fn lookup(name: &str) -> Option<&'static Entry> {
    REGISTRY.iter().find(|e| e.name == name)
}

/// Parses a spec such as `"dynamic:64"` or `"hguided:k=2,m=1"`; the error says what is wrong
/// (without repeating the spec).
pub fn parse(spec: &str) -> Result<Parsed, String> {
    let spec = spec.trim();
    let (name, options) = match spec.split_once(':') {
        Some((n, o)) => (n.trim(), Some(o.trim())),
        None => (spec, None),
    };
    let Some(entry) = lookup(name) else {
        return Err(format!("unknown balancer `{name}`; the balancers are {}", NAMES.join(", ")));
    };
    let options = match (entry.accepts, options) {
        (Accepts::Nothing, None) => Options::Nothing,
        (Accepts::Nothing, Some(_)) => return Err(format!("`{name}` takes no options")),
        (Accepts::Numbers, None) => Options::Numbers(None),
        (Accepts::Numbers, Some(o)) => {
            Options::Numbers(Some(o.split(',').map(number).collect::<Result<_, _>>()?))
        }
        (Accepts::OneCount, None) => Options::OneCount(None),
        (Accepts::OneCount, Some(o)) => match o.split(',').count() {
            1 => Options::OneCount(Some(count(o)?)),
            _ => return Err(format!("`{name}` takes exactly one number")),
        },
        (Accepts::KM { .. }, None) => Options::KM { k: None, m: None },
        (Accepts::KM { per_device }, Some(o)) => key_values(name, o, per_device)?,
    };
    Ok(Parsed { kind: entry.kind, name: entry.name, options })
}

/// `Ok` if [`parse`] accepts `spec`, else what is wrong with it.
pub fn validate(spec: &str) -> Result<(), String> {
    parse(spec).map(|_| ())
}

fn number(text: &str) -> Result<f64, String> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .ok_or(format!("`{}` is not a number", text.trim()))
}

fn count(text: &str) -> Result<u64, String> {
    text.trim().parse::<u64>().map_err(|_| format!("`{}` is not a whole number", text.trim()))
}

fn key_values(name: &str, options: &str, per_device: bool) -> Result<Options, String> {
    let (mut k, mut m) = (None, None);
    for pair in options.split(',') {
        let (key, value) = pair
            .split_once('=')
            .ok_or(format!("`{pair}` is not key=value; the options of `{name}` are k, m"))?;
        let key = key.trim();
        let values: Vec<&str> = if per_device { value.split('/').collect() } else { vec![value] };
        let twice = || format!("option `{key}` of `{name}` given twice");
        match key {
            "k" if k.is_some() => return Err(twice()),
            "m" if m.is_some() => return Err(twice()),
            "k" => k = Some(values.into_iter().map(number).collect::<Result<_, _>>()?),
            "m" => m = Some(values.into_iter().map(count).collect::<Result<_, _>>()?),
            _ => return Err(format!("unknown option `{key}` of `{name}`; the options are k, m")),
        }
    }
    Ok(Options::KM { k, m })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_listed_in_registry_order() {
        for (i, e) in REGISTRY.iter().enumerate() {
            assert_eq!(NAMES[i], e.name);
            assert_eq!(lookup(e.name), Some(e));
            assert!(REGISTRY[..i].iter().all(|o| o.name != e.name && o.kind != e.kind), "{e:?}");
        }
    }

    #[test]
    fn every_name_parses_bare_to_its_kind() {
        for e in REGISTRY {
            let p = parse(e.name).unwrap();
            assert_eq!((p.kind, p.name), (e.kind, e.name));
        }
    }

    #[test]
    fn options_are_read_by_what_each_balancer_accepts() {
        let opts = |s: &str| parse(s).unwrap().options;
        assert_eq!(opts("static:1,3"), Options::Numbers(Some(vec![1.0, 3.0])));
        assert_eq!(opts("static-rev"), Options::Numbers(None));
        assert_eq!(opts("dynamic:64"), Options::OneCount(Some(64)));
        assert_eq!(opts(" dynamic-chunk : 16 "), Options::OneCount(Some(16)));
        assert_eq!(opts("hguided:k=2,m=1"), Options::KM { k: Some(vec![2.0]), m: Some(vec![1]) });
        assert_eq!(
            opts("hguided-tuned:k=3.5/1,m=1/30"),
            Options::KM { k: Some(vec![3.5, 1.0]), m: Some(vec![1, 30]) }
        );
        assert_eq!(opts("hguided-tuned:m=4"), Options::KM { k: None, m: Some(vec![4]) });
        assert_eq!(opts("linear2p"), Options::Nothing);
    }

    #[test]
    fn mistakes_are_explained() {
        let cases = [
            ("sigmod", "unknown balancer `sigmod`; the balancers are sigmoid, sigmoid-faithful"),
            ("sigmoid:2", "`sigmoid` takes no options"),
            ("dynamic:x", "`x` is not a whole number"),
            ("dynamic:-1", "`-1` is not a whole number"),
            ("dynamic:1,2", "takes exactly one number"),
            ("hguided:q=1", "unknown option `q` of `hguided`"),
            ("hguided:k=1,k=2", "option `k` of `hguided` given twice"),
            ("hguided:m=1,m=1", "option `m` of `hguided` given twice"),
            ("hguided:m=1.5", "`1.5` is not a whole number"),
            ("hguided:k=1/2", "`1/2` is not a number"),
            ("hguided:k", "`k` is not key=value"),
            ("static:1,x", "`x` is not a number"),
            ("static:inf", "`inf` is not a number"),
            ("static:NaN", "`NaN` is not a number"),
        ];
        for (spec, why) in cases {
            let err = parse(spec).unwrap_err();
            assert!(err.contains(why), "{spec}: {err}");
            assert_eq!(validate(spec), Err(err));
        }
    }
}
