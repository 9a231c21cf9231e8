//! Command-line plumbing shared by the examples and the suite runner: `--flag value` pairs and
//! device selection.

use std::collections::HashMap;

use hetdsl::balance::DeviceKind;
use hetdsl::DeviceInfo;

/// `--name value` pairs; every flag takes a value. Unknown flags are errors.
pub fn parse_flags(
    args: impl Iterator<Item = String>,
    known: &[&str],
) -> Result<HashMap<String, String>, String> {
    let mut flags = HashMap::new();
    let mut args = args.peekable();
    while let Some(a) = args.next() {
        let name = a.strip_prefix("--").ok_or_else(|| format!("unexpected argument `{a}`"))?;
        if !known.contains(&name) {
            return Err(format!(
                "unknown flag `--{name}`; flags: {}",
                known.iter().map(|k| format!("--{k}")).collect::<Vec<_>>().join(" ")
            ));
        }
        let value = args.next().ok_or_else(|| format!("`--{name}` needs a value"))?;
        flags.insert(name.to_string(), value);
    }
    Ok(flags)
}

/// Positions (in `devices`) selected by `all`, `cpu`, `gpu` or a list such as `0,2`.
/// The `--kernels` flag: `all` (the default) or a comma-separated list of sample names.
pub fn kernel_list(flags: &HashMap<String, String>) -> Result<Vec<String>, String> {
    let kernels: Vec<String> = match flags.get("kernels").map_or("all", String::as_str) {
        "all" => crate::samples::NAMES.iter().map(|s| s.to_string()).collect(),
        list => list.split(',').map(|s| s.trim().to_string()).collect(),
    };
    match kernels.iter().find(|k| !crate::samples::NAMES.contains(&k.as_str())) {
        Some(bad) => {
            Err(format!("unknown kernel `{bad}`; kernels: {}", crate::samples::NAMES.join(", ")))
        }
        None => Ok(kernels),
    }
}

pub fn select_devices(spec: &str, devices: &[DeviceInfo]) -> Result<Vec<usize>, String> {
    let by_kind = |kind: DeviceKind| -> Vec<usize> {
        (0..devices.len()).filter(|&i| devices[i].kind == kind).collect()
    };
    let chosen = match spec {
        "all" => (0..devices.len()).collect(),
        "cpu" => by_kind(DeviceKind::Cpu),
        "gpu" => by_kind(DeviceKind::Gpu),
        list => {
            let mut chosen = Vec::new();
            for part in list.split(',') {
                let i: usize = part.trim().parse().map_err(|_| {
                    format!("`--devices {spec}`: `{part}` is not all, cpu, gpu or a device number")
                })?;
                if i >= devices.len() {
                    return Err(format!(
                        "device {i} does not exist; there are {} (0..{})",
                        devices.len(),
                        devices.len()
                    ));
                }
                if !chosen.contains(&i) {
                    chosen.push(i);
                }
            }
            chosen
        }
    };
    if chosen.is_empty() {
        return Err(format!("`--devices {spec}` selects no device"));
    }
    Ok(chosen)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_and_device_lists() {
        let f = parse_flags(["--size", "small"].iter().map(|s| s.to_string()), &["size"])
            .unwrap_or_default();
        assert_eq!(f.get("size").map(String::as_str), Some("small"));
        assert!(parse_flags(["--bogus", "1"].iter().map(|s| s.to_string()), &["size"]).is_err());
        assert!(parse_flags(["--size"].iter().map(|s| s.to_string()), &["size"]).is_err());
        let devices = vec![DeviceInfo::example_cpu(0, 2), DeviceInfo::example_cpu(1, 2)];
        assert_eq!(select_devices("all", &devices), Ok(vec![0, 1]));
        assert_eq!(select_devices("1,0,1", &devices), Ok(vec![1, 0]));
        assert_eq!(select_devices("cpu", &devices), Ok(vec![0, 1]));
        assert!(select_devices("gpu", &devices).is_err());
        assert!(select_devices("5", &devices).is_err());
    }
}
