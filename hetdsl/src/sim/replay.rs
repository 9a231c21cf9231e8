//! Simulation cases rebuilt from a real run: the suite's JSON (`examples/suite.rs --json`)
//! holds, per kernel, each device's time alone and every co-executed package with its kernel
//! time. From those, a case gets the kernel's measured cost map and the devices' measured
//! speeds, so a balancer can be tried on the real irregularity of Mandelbrot's band or RAP's
//! rising cost without a GPU (`examples/simulate.rs --replay FILE`).
//!
//! What is rebuilt, and the assumptions:
//! - **Cost map**: from the run of that kernel with the most GPU packages (the finest map),
//!   each package's kernel seconds per work-group, read as the relative cost of the slices
//!   it covers; slices no GPU package covered take the mean. Only GPU packages count: they
//!   ran on identical devices, so their per-group times compare. Packages below a GPU's
//!   occupancy bound read costlier than they are (a partial fill); the tails where they occur
//!   are cheap either way.
//! - **Devices**: speed from the time alone (`G / (T_alone − overhead)` in mean work-groups per
//!   second), the occupancy bound from Sigmoid's first package on the device (the guard probes
//!   with exactly that), nominal GFLOP/s from the device kind: an H200 (66 908) for a GPU and
//!   a 16-core PoCL CPU (2 150) for a CPU, the figures hetdsl's occupancy tables give them.
//! - **Overheads**: the measured median host overhead per package on the H200s (45 µs) and
//!   50 µs on the PoCL CPU.

use super::scenario::{Case, JITTER};
use super::{CostProfile, SimDevice};
use crate::report::Report;
use crate::work::DeviceKind;

/// Slices of the rebuilt cost map.
const SLICES: usize = 4096;
const GPU_NOMINAL: f64 = 66_908.0;
const CPU_NOMINAL: f64 = 2_150.0;
const GPU_OVERHEAD: f64 = 45e-6;
const CPU_OVERHEAD: f64 = 50e-6;

/// One kernel's runs in the file: its reports, and each device's time alone.
struct KernelRuns {
    kernel: String,
    reports: Vec<Report>,
    alone: Vec<f64>,
}

fn parse(text: &str) -> Result<Vec<KernelRuns>, String> {
    let doc: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("not a suite JSON file: {e}"))?;
    let runs = doc["runs"].as_array().ok_or("no `runs` array: not a suite JSON file")?;
    let mut kernels: Vec<KernelRuns> = Vec::new();
    for run in runs {
        let kernel = run["kernel"].as_str().ok_or("a run without `kernel`")?.to_string();
        let report: Report = serde_json::from_value(run["report"].clone())
            .map_err(|e| format!("{kernel}: unreadable report: {e}"))?;
        let alone: Vec<f64> = run["single_device"]
            .as_array()
            .ok_or_else(|| format!("{kernel}: no `single_device` times"))?
            .iter()
            .map(|d| d["roi_seconds"].as_f64().ok_or_else(|| format!("{kernel}: bad alone time")))
            .collect::<Result<_, _>>()?;
        if alone.len() != report.devices.len() {
            return Err(format!(
                "{kernel}: {} alone times for {} devices",
                alone.len(),
                report.devices.len()
            ));
        }
        match kernels.iter_mut().find(|k| k.kernel == kernel) {
            Some(k) => k.reports.push(report),
            None => kernels.push(KernelRuns { kernel, reports: vec![report], alone }),
        }
    }
    Ok(kernels)
}

/// The relative cost of [`SLICES`] equal slices of `total` work-groups, from the GPU packages
/// of `report` (see the module comment).
fn cost_map(report: &Report, total: u64) -> Vec<f64> {
    let gpu = |d: usize| report.devices.get(d).is_some_and(|r| r.kind == DeviceKind::Gpu);
    let mut slices = vec![f64::NAN; SLICES];
    for t in report.trace.iter().filter(|t| t.merged && gpu(t.device)) {
        let (Some(seconds), true) = (t.kernel_seconds, t.package.len > 0) else { continue };
        let per_group = seconds / t.package.len as f64;
        let first = (t.package.offset as u128 * SLICES as u128 / total as u128) as usize;
        let end = (t.package.end() as u128 * SLICES as u128).div_ceil(total as u128) as usize;
        for s in &mut slices[first.min(SLICES)..end.min(SLICES)] {
            // A slice two packages share takes the cheaper: the costlier is often a partial fill.
            *s = if s.is_nan() { per_group } else { s.min(per_group) };
        }
    }
    let known: Vec<f64> = slices.iter().copied().filter(|s| !s.is_nan()).collect();
    let mean = if known.is_empty() { 1.0 } else { known.iter().sum::<f64>() / known.len() as f64 };
    slices.into_iter().map(|s| if s.is_nan() { mean } else { s }).collect()
}

/// The cases of a suite JSON file, one per kernel, labelled `label` (the file's name, say).
pub fn replay(text: &str, label: &str) -> Result<Vec<Case>, String> {
    let mut cases = Vec::new();
    for k in parse(text)? {
        let finest = k
            .reports
            .iter()
            .max_by_key(|r| {
                r.devices
                    .iter()
                    .filter(|d| d.kind == DeviceKind::Gpu)
                    .map(|d| d.packages)
                    .sum::<usize>()
            })
            .ok_or_else(|| format!("{}: no runs", k.kernel))?;
        let total = finest.total_groups;
        if total == 0 {
            return Err(format!("{}: an empty range", k.kernel));
        }
        let probe = k.reports.iter().find(|r| r.balancer == "sigmoid");
        let devices = finest
            .devices
            .iter()
            .zip(&k.alone)
            .map(|(d, &alone)| {
                let gpu = d.kind == DeviceKind::Gpu;
                let overhead = if gpu { GPU_OVERHEAD } else { CPU_OVERHEAD };
                let min_groups = probe
                    .and_then(|r| r.trace.iter().find(|t| t.device == d.index))
                    .map_or(1, |t| t.package.len);
                SimDevice {
                    name: d.name.clone(),
                    kind: d.kind,
                    speed: total as f64 / (alone - overhead).max(1e-9),
                    overhead,
                    min_groups,
                    nominal_gflops: if gpu { GPU_NOMINAL } else { CPU_NOMINAL },
                    jitter: JITTER,
                    link: None,
                }
            })
            .collect::<Vec<_>>();
        let names: Vec<&str> = devices.iter().map(|d| d.name.as_str()).collect();
        cases.push(Case {
            scenario: "replay",
            machine: format!("{label}: {}", names.join(" + ")),
            kernel: k.kernel,
            profile: CostProfile::Measured { slices: cost_map(finest, total) },
            total_groups: total,
            traffic: super::Traffic::default(),
            devices,
        });
    }
    Ok(cases)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{DeviceReport, PackageTrace, Transfer};
    use crate::work::Package;

    fn trace(device: usize, offset: u64, len: u64, seconds: f64) -> PackageTrace {
        PackageTrace {
            device,
            package: Package { offset, len },
            host_start: 0.0,
            host_end: seconds,
            kernel_seconds: Some(seconds),
            written: Transfer::default(),
            read: Transfer::default(),
            merged: true,
            idle_before: None,
        }
    }

    fn device(index: usize, kind: DeviceKind) -> DeviceReport {
        DeviceReport {
            index,
            name: format!("dev{index}"),
            kind,
            packages: 1,
            groups: 0,
            busy_seconds: 0.0,
            finish_seconds: 0.0,
            fault: None,
        }
    }

    fn suite_json(trace: Vec<PackageTrace>, alone: [f64; 2]) -> String {
        let report = Report {
            roi_seconds: 2.0,
            binary_seconds: 2.0,
            ..Report::fixture(
                1000,
                vec![device(0, DeviceKind::Cpu), device(1, DeviceKind::Gpu)],
                trace,
            )
        };
        serde_json::json!({"runs": [{
            "kernel": "k", "balancer": "sigmoid", "report": report,
            "single_device": [{"roi_seconds": alone[0]}, {"roi_seconds": alone[1]}],
        }]})
        .to_string()
    }

    #[test]
    fn the_cost_map_follows_the_gpu_packages_and_the_speeds_the_alone_times() {
        // The GPU ran [0, 500) at 1 ms per group and [600, 1000) at 4 ms per group; the CPU's
        // [500, 600) teaches nothing about costs.
        let text = suite_json(
            vec![trace(1, 0, 500, 0.5), trace(0, 500, 100, 50.0), trace(1, 600, 400, 1.6)],
            [100.0, 2.0],
        );
        let cases = replay(&text, "test").unwrap();
        assert_eq!(cases.len(), 1);
        let case = &cases[0];
        let table = case.cost_table();
        let (cheap, dear) = (table.cost(0, 100), table.cost(800, 100));
        assert!((dear / cheap - 4.0).abs() < 0.05, "{cheap} {dear}");
        assert!((table.cost(0, 1000) - 1000.0).abs() < 1e-6);
        // Speed from the alone time, the occupancy bound from Sigmoid's first package.
        let gpu = &case.devices[1];
        assert!((gpu.speed - 1000.0 / (2.0 - GPU_OVERHEAD)).abs() < 1e-6);
        assert_eq!(gpu.min_groups, 500);
        assert_eq!(case.devices[0].min_groups, 100);
        assert!(case.devices[0].nominal_gflops < gpu.nominal_gflops / 8.0);
    }

    #[test]
    fn files_that_are_not_suite_output_are_errors() {
        assert!(replay("{}", "x").is_err());
        assert!(replay("not json", "x").is_err());
        let bad = serde_json::json!({"runs": [{"kernel": "k", "report": 3}]}).to_string();
        assert!(replay(&bad, "x").unwrap_err().contains("k:"));
    }
}
