//! Command-line pieces shared by the examples and the suite runner, declared with clap's derive:
//! the flags every sample's example takes, kernel lists and device selection.

use hetdsl::balance::{BalancerSpec, DeviceKind};
use hetdsl::sim::{Link, Traffic};
use hetdsl::DeviceInfo;

use crate::samples::Size;

/// The flags of every sample's stand-alone example (and of the examples built like them).
#[derive(Debug, Clone, clap::Args)]
pub struct SampleFlags {
    /// Problem size: `small` (well under a second per kernel on PoCL) or `paper`.
    #[arg(long, default_value = "small", value_name = "small|paper")]
    pub size: Size,
    /// Balancer spec: `sigmoid`, `static`, `dynamic:64`, `hguided`, ... [default: the kernel's
    /// declared one]
    #[arg(long, value_name = "SPEC")]
    pub balancer: Option<BalancerSpec>,
    /// Devices to co-execute on: `all`, `cpu`, `gpu` or positions such as `0,2`.
    #[arg(long, default_value = "all", value_name = "all|cpu|gpu|0,2")]
    pub devices: String,
}

/// The `--kernels` flag's value, parsed and checked by [`kernel_list`].
#[derive(Debug, Clone, PartialEq)]
pub struct KernelList(pub Vec<String>);

impl std::str::FromStr for KernelList {
    type Err = String;
    fn from_str(spec: &str) -> Result<Self, String> {
        kernel_list(spec).map(KernelList)
    }
}

/// `all` (every sample) or a comma-separated list of sample names, each checked.
pub fn kernel_list(spec: &str) -> Result<Vec<String>, String> {
    let kernels: Vec<String> = match spec {
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

/// Positions (in `devices`) selected by `all`, `cpu`, `gpu` or a list such as `0,2`.
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

/// Comma-separated finite numbers of at least 0.
fn numbers(text: &str) -> Result<Vec<f64>, String> {
    text.split(',')
        .map(|t| match t.trim().parse::<f64>() {
            Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
            _ => Err(format!("`{t}` is not a finite number of at least 0")),
        })
        .collect()
}

/// `IN,OUT`: bytes a work-group writes to its device and reads back (`simulate --traffic`).
pub fn parse_traffic(text: &str) -> Result<Traffic, String> {
    match numbers(text)?[..] {
        [bytes_in, bytes_out] => Ok(Traffic { bytes_in, bytes_out }),
        _ => Err("expected IN,OUT: bytes per work-group each way".into()),
    }
}

/// `GBPS[,US]`: a link of GBPS GB/s with US microseconds per transfer, 10 if not given
/// (`simulate --gpu-link`, `--cpu-link`).
pub fn parse_link(text: &str) -> Result<Link, String> {
    let (gbps, us) = match numbers(text)?[..] {
        [gbps] => (gbps, 10.0),
        [gbps, us] => (gbps, us),
        _ => return Err("expected GBPS or GBPS,US".into()),
    };
    if gbps <= 0.0 {
        return Err("a link needs more than 0 GB/s".into());
    }
    Ok(Link { bytes_per_second: gbps * 1e9, latency: us / 1e6 })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Example {
        #[command(flatten)]
        flags: SampleFlags,
    }

    #[test]
    fn sample_flags_parse_check_and_default() {
        let parse = |args: &[&str]| {
            Example::try_parse_from(std::iter::once("x").chain(args.iter().copied()))
        };
        let f = parse(&["--size", "paper", "--balancer", "dynamic:8"]).map(|e| e.flags);
        let f = f.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(f.size, Size::Paper);
        assert_eq!(f.balancer.map(|b| b.to_string()), Some("dynamic:8".to_string()));
        assert_eq!(f.devices, "all");
        let defaults = parse(&[]).unwrap_or_else(|e| panic!("{e}")).flags;
        assert_eq!((defaults.size, defaults.balancer.is_none()), (Size::Small, true));
        assert!(parse(&["--bogus", "1"]).is_err(), "unknown flags are errors");
        assert!(parse(&["--size"]).is_err(), "a flag without its value is an error");
        assert!(parse(&["--size", "huge"]).is_err(), "sizes are checked");
        assert!(parse(&["--balancer", "nope"]).is_err(), "balancer specs are checked");
    }

    #[test]
    fn help_lists_every_flag_with_its_default() {
        use clap::CommandFactory;
        let help = Example::command().render_long_help().to_string();
        for flag in ["--size", "--balancer", "--devices"] {
            assert!(help.contains(flag), "{flag} missing from:\n{help}");
        }
        assert!(help.contains("[default: small]") && help.contains("[default: all]"), "{help}");
        assert!(help.contains("[default: the kernel's"), "{help}");
    }

    #[test]
    fn kernel_lists_and_device_lists() {
        assert_eq!(kernel_list("all").map(|k| k.len()), Ok(crate::samples::NAMES.len()));
        assert!(kernel_list("binomial, nope").is_err());
        let devices = vec![DeviceInfo::example_cpu(0, 2), DeviceInfo::example_cpu(1, 2)];
        assert_eq!(select_devices("all", &devices), Ok(vec![0, 1]));
        assert_eq!(select_devices("1,0,1", &devices), Ok(vec![1, 0]));
        assert_eq!(select_devices("cpu", &devices), Ok(vec![0, 1]));
        assert!(select_devices("gpu", &devices).is_err());
        assert!(select_devices("5", &devices).is_err());
    }

    #[test]
    fn traffic_and_links_parse_and_refuse_what_makes_no_sense() {
        assert_eq!(
            parse_traffic("2048, 1024"),
            Ok(Traffic { bytes_in: 2048.0, bytes_out: 1024.0 })
        );
        assert_eq!(parse_link("25"), Ok(Link { bytes_per_second: 25e9, latency: 10e-6 }));
        assert_eq!(parse_link("5,2"), Ok(Link { bytes_per_second: 5e9, latency: 2e-6 }));
        for bad in ["1", "1,2,3", "a,1", "-1,2", "inf,1"] {
            assert!(parse_traffic(bad).is_err(), "--traffic {bad}");
        }
        for bad in ["0", "1,2,3", "x", "-5", "NaN"] {
            assert!(parse_link(bad).is_err(), "--gpu-link {bad}");
        }
    }
}
