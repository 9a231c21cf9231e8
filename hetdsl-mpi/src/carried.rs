//! An error as it travels between ranks: its kind and fields, so that rank 0 and the other
//! ranks return the variant the rank that found it got (a kernel missing on one rank is
//! `NoSuchKernel` everywhere, not a `BadConfig` of its text; rank 0 refusing a launch's
//! argument or NDRange is `BadArgument` or `BadRange` everywhere), each saying which rank.
//! Kinds a caller matches on travel whole (a balancer's error, found the same on every rank,
//! stays the `BadConfig` the ranks have always returned); any other travels as its text. Pure.

use hetdsl::Error;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
enum Carried {
    NoSuchKernel { name: String, file: String, available: String },
    BadArgument { index: usize, reason: String },
    BadDeclaredArgument { index: usize, name: String, reason: String },
    DeviceLimit { device: usize, name: String, reason: String },
    BadRange(String),
    Text(String),
}

/// `e` as bytes for a message.
pub fn encode(e: &Error) -> Vec<u8> {
    let c = match e {
        Error::NoSuchKernel { name, file, available } => Carried::NoSuchKernel {
            name: name.clone(),
            file: file.clone(),
            available: available.clone(),
        },
        Error::BadArgument { index, reason } => {
            Carried::BadArgument { index: *index, reason: reason.clone() }
        }
        Error::BadDeclaredArgument { index, name, reason } => Carried::BadDeclaredArgument {
            index: *index,
            name: name.clone(),
            reason: reason.clone(),
        },
        Error::DeviceLimit { device, name, reason } => {
            Carried::DeviceLimit { device: *device, name: name.clone(), reason: reason.clone() }
        }
        Error::BadRange(m) => Carried::BadRange(m.clone()),
        other => Carried::Text(other.to_string()),
    };
    serde_json::to_vec(&c).unwrap_or_default()
}

/// The error in `bytes`, each text of it led by `context` (which says where it happened); a
/// text error becomes `BadConfig`. Bytes that are no carried error are taken as its text.
pub fn decode(bytes: &[u8], context: &str) -> Error {
    rebuild(read(bytes), Some(context))
}

/// A carried error's text, for a report.
pub fn text(bytes: &[u8]) -> String {
    match read(bytes) {
        Carried::Text(m) => m,
        c => rebuild(c, None).to_string(),
    }
}

fn read(bytes: &[u8]) -> Carried {
    serde_json::from_slice::<Carried>(bytes)
        .unwrap_or_else(|_| Carried::Text(String::from_utf8_lossy(bytes).into_owned()))
}

fn rebuild(c: Carried, context: Option<&str>) -> Error {
    let at = |text: String| context.map_or_else(|| text.clone(), |c| format!("{c}: {text}"));
    match c {
        // The kernel's own fields stay as the rank found them; the file says where.
        Carried::NoSuchKernel { name, file, available } => {
            let file = context.map_or_else(|| file.clone(), |c| format!("{file} ({c})"));
            Error::NoSuchKernel { name, file, available }
        }
        Carried::BadArgument { index, reason } => Error::BadArgument { index, reason: at(reason) },
        Carried::BadDeclaredArgument { index, name, reason } => {
            Error::BadDeclaredArgument { index, name, reason: at(reason) }
        }
        Carried::DeviceLimit { device, name, reason } => {
            Error::DeviceLimit { device, name, reason: at(reason) }
        }
        Carried::BadRange(m) => Error::BadRange(at(m)),
        Carried::Text(m) => Error::BadConfig(at(m)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kinds_a_caller_matches_on_survive_the_trip_and_say_where() {
        let missing =
            Error::NoSuchKernel { name: "k".into(), file: "a.cl".into(), available: "j".into() };
        let got = decode(&encode(&missing), "rank 2 refused the launch");
        assert!(
            matches!(&got, Error::NoSuchKernel { name, file, available }
                if name == "k" && file == "a.cl (rank 2 refused the launch)" && available == "j"),
            "{got:?}"
        );
        let arg = Error::BadArgument { index: 3, reason: "too short".into() };
        let got = decode(&encode(&arg), "rank 1");
        assert!(
            matches!(&got, Error::BadArgument { index: 3, reason } if reason == "rank 1: too short")
        );
        let decl = Error::BadDeclaredArgument { index: 1, name: "x".into(), reason: "r".into() };
        let got = decode(&encode(&decl), "rank 1");
        assert!(matches!(&got, Error::BadDeclaredArgument { index: 1, name, .. } if name == "x"));
        let limit = Error::DeviceLimit { device: 2, name: "gpu".into(), reason: "r".into() };
        let got = decode(&encode(&limit), "rank 1");
        assert!(
            matches!(&got, Error::DeviceLimit { device: 2, reason, .. } if reason == "rank 1: r")
        );
        let range = Error::BadRange("global [288] over local [64]".into());
        let got = decode(&encode(&range), "rank 0");
        assert!(matches!(&got, Error::BadRange(m) if m == "rank 0: global [288] over local [64]"));
        assert_eq!(text(&encode(&range)), range.to_string());
        let other = Error::Internal("oops".into());
        let got = decode(&encode(&other), "rank 0");
        assert!(
            matches!(&got, Error::BadConfig(m) if m.starts_with("rank 0: ") && m.contains("oops"))
        );
        assert!(
            matches!(decode(b"plain words", "r"), Error::BadConfig(m) if m == "r: plain words")
        );
        let why = Error::BadConfig("why".into());
        assert_eq!(text(&encode(&why)), "invalid launch configuration: why");
        assert_eq!(text(&encode(&arg)), "argument 3: too short");
        assert_eq!(text(b"plain"), "plain");
    }
}
