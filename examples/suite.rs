//! The suite runner: chosen kernels × balancers on chosen devices. For every kernel, each
//! device first runs the whole problem alone (for Smax and the speedup's baseline), then every
//! balancer co-executes it; every run is checked against the CPU reference.
//!
//! ```text
//! cargo run --release --example suite -- --kernels all --balancers all --devices all \
//!     --size small --reps 3 --json out.json --plots plots/
//! ```
//! A device nominally more than 8× slower than the fastest chosen one (a CPU beside an H200)
//! is timed alone on a stratified sample of 1/256 of the problem and its whole time
//! extrapolated (`alone~` rows; `--alone full` runs it whole instead).
//!
//! Prints one table row per kernel × balancer (ROI time is the median of `--reps` runs);
//! `--json` holds every row with its full report; `--plots` writes one SVG per co-executed run
//! (package size and computing speed per device over time).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use hetdsl::balance::Static;
use hetdsl::{Report, Runtime};
use hetdsl_samples::balancers;
use hetdsl_samples::check::Verdict;
use hetdsl_samples::cli::{parse_flags, select_devices};
use hetdsl_samples::samples::{self, Sample, Size};
use serde_json::{json, Value};

struct Options {
    kernels: Vec<String>,
    balancers: Vec<String>,
    devices: String,
    size: Size,
    reps: usize,
    json: Option<PathBuf>,
    plots: Option<PathBuf>,
    /// Time devices of a slower class alone on a stratified sample instead of the whole problem.
    sampled_alone: bool,
}

/// A device nominally this many times slower than the fastest one chosen is timed alone on a
/// sample (`--alone auto`): at paper size a 16-core CPU alone would take ~700× an H200's
/// 1–2 s per kernel. Same threshold as Sigmoid's slower class.
const SLOWER_CLASS: f64 = hetdsl::balance::SLOW_CLASS;
/// The sample: this many slices, evenly spaced over the range, together 1/SAMPLE_DIVISOR of it.
const SAMPLE_SLICES: u64 = 8;
const SAMPLE_DIVISOR: u64 = 256;

fn options() -> Result<Options, String> {
    let flags = parse_flags(
        std::env::args().skip(1),
        &["kernels", "balancers", "devices", "size", "reps", "json", "plots", "alone"],
    )?;
    let kernels: Vec<String> = match flags.get("kernels").map_or("all", String::as_str) {
        "all" => samples::NAMES.iter().map(|s| s.to_string()).collect(),
        list => list.split(',').map(|s| s.trim().to_string()).collect(),
    };
    if let Some(bad) = kernels.iter().find(|k| !samples::NAMES.contains(&k.as_str())) {
        return Err(format!("unknown kernel `{bad}`; kernels: {}", samples::NAMES.join(", ")));
    }
    let reps: usize = flags
        .get("reps")
        .map_or(Ok(3), |r| r.parse().map_err(|_| format!("--reps `{r}` is not a count")))?;
    Ok(Options {
        kernels,
        balancers: balancers::parse_list(flags.get("balancers").map_or("all", String::as_str))?,
        devices: flags.get("devices").cloned().unwrap_or_else(|| "all".into()),
        size: flags.get("size").map_or(Ok(Size::Small), |s| s.parse())?,
        reps: reps.max(1),
        json: flags.get("json").map(PathBuf::from),
        plots: flags.get("plots").map(PathBuf::from),
        sampled_alone: match flags.get("alone").map_or("auto", String::as_str) {
            "auto" => true,
            "full" => false,
            other => return Err(format!("--alone `{other}`: expected `auto` or `full`")),
        },
    })
}

/// `reps` runs of `sample`, each checked; the run with the median ROI time, and whether every
/// run was correct (with the first failing verdict, or the last one).
fn repeat(
    sample: &mut dyn Sample,
    devices: &[usize],
    reps: usize,
    balancer: &dyn Fn() -> Result<Box<dyn hetdsl::Balancer>, String>,
) -> Result<(Report, Verdict), String> {
    let mut reports = Vec::new();
    let mut verdict: Option<Verdict> = None;
    for _ in 0..reps {
        let report =
            sample.run(Some(devices), Some(balancer()?), None).map_err(|e| e.to_string())?;
        let v = sample.verify();
        if !v.correct {
            eprintln!("{}: {v}", sample.name());
        }
        if verdict.as_ref().is_none_or(|old| old.correct) {
            verdict = Some(v);
        }
        reports.push(report);
    }
    reports.sort_by(|a, b| a.roi_seconds.total_cmp(&b.roi_seconds));
    let median = reports.swap_remove(reports.len() / 2);
    Ok((median, verdict.unwrap_or_else(|| Verdict::new(false, 0, "no run"))))
}

/// A device's time alone on the whole problem of `units` balancing units, estimated from
/// [`SAMPLE_SLICES`] slices evenly spread over the range (so an irregular kernel's costly and
/// cheap regions are both sampled), together 1/[`SAMPLE_DIVISOR`] of it: the slices' summed
/// ROI times, scaled by the whole over the sampled units. Returns (seconds, sampled fraction).
fn sampled_alone(sample: &mut dyn Sample, device: usize, units: u64) -> Result<(f64, f64), String> {
    let slice = (units / (SAMPLE_SLICES * SAMPLE_DIVISOR)).max(1);
    let (mut seconds, mut sampled) = (0.0, 0);
    for i in 0..SAMPLE_SLICES {
        let start = i * units / SAMPLE_SLICES;
        let end = (start + slice).min(units);
        let report = sample
            .run(Some(&[device]), Some(Box::new(Static::nominal())), Some(start..end))
            .map_err(|e| e.to_string())?;
        seconds += report.roi_seconds;
        sampled += end - start;
    }
    Ok((seconds * units as f64 / sampled as f64, sampled as f64 / units as f64))
}

fn file_name(kernel: &str, balancer: &str) -> String {
    let clean: String = balancer
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' })
        .collect();
    format!("{kernel}_{clean}.svg")
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("writing {}: {e}", path.display()))
}

fn run() -> Result<bool, String> {
    let opts = options()?;
    let runtime = Runtime::new().map_err(|e| e.to_string())?;
    if let Some(dir) = &opts.plots {
        std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    }
    let mut rows: Vec<Value> = Vec::new();
    let mut all_correct = true;
    let mut device_list;
    println!(
        "{:<10} {:<16} {:>11} {:>8} {:>6} {:>6} {:>7} {:>12} {:>7}",
        "kernel", "balancer", "ROI ms", "speedup", "Smax", "eff", "balance", "packages", "correct"
    );
    for kernel in &opts.kernels {
        let mut sample =
            samples::create(kernel, opts.size, &runtime).map_err(|e| format!("{kernel}: {e}"))?;
        let all = sample.devices();
        let chosen = select_devices(&opts.devices, &all)?;
        device_list = json!(chosen
            .iter()
            .map(|&i| json!({"position": i, "name": all[i].name, "kind": all[i].kind}))
            .collect::<Vec<_>>());

        // Each device alone on the whole problem (one package: Static over one device); the
        // fastest first, so that the problem's size in balancing units is known when a device
        // of a slower class is timed on a sample (`--alone auto`).
        let nominal: Vec<f64> =
            chosen.iter().map(|&d| hetdsl::occupancy::nominal_gflops(&all[d])).collect();
        let fastest = nominal.iter().copied().fold(0.0, f64::max);
        let mut order: Vec<usize> = (0..chosen.len()).collect();
        order.sort_by(|&a, &b| nominal[b].total_cmp(&nominal[a]));
        let mut single = vec![0.0; chosen.len()];
        let mut single_rows = vec![Value::Null; chosen.len()];
        let mut units = None;
        for k in order {
            let d = chosen[k];
            let slower = opts.sampled_alone && nominal[k] * SLOWER_CLASS < fastest;
            let (seconds, label, correct, row) = match (slower, units) {
                (true, Some(g)) => {
                    let (seconds, fraction) = sampled_alone(sample.as_mut(), d, g)?;
                    let row = json!({"device": d, "name": all[d].name, "roi_seconds": seconds,
                        "estimated_from_fraction": fraction, "correct": null});
                    (seconds, format!("alone~ dev {d}"), "est.".to_string(), row)
                }
                _ => {
                    let (report, verdict) = repeat(sample.as_mut(), &[d], opts.reps, &|| {
                        Ok(Box::new(Static::nominal()))
                    })?;
                    units = Some(report.total_groups);
                    all_correct &= verdict.correct;
                    let row = json!({"device": d, "name": all[d].name, "roi_seconds": report.roi_seconds, "correct": verdict.correct, "check": verdict});
                    (
                        report.roi_seconds,
                        format!("alone: dev {d}"),
                        verdict.correct.to_string(),
                        row,
                    )
                }
            };
            println!(
                "{kernel:<10} {label:<16} {:>11.3} {:>8} {:>6} {:>6} {:>7} {:>12} {:>7}",
                seconds * 1e3,
                "-",
                "-",
                "-",
                "-",
                "1",
                correct
            );
            single[k] = seconds;
            single_rows[k] = row;
        }

        for name in &opts.balancers {
            let (mut report, verdict) =
                repeat(sample.as_mut(), &chosen, opts.reps, &|| balancers::parse(name))?;
            report.compare_with_single_device(&single);
            let packages: Vec<String> =
                report.devices.iter().map(|d| d.packages.to_string()).collect();
            println!(
                "{kernel:<10} {name:<16} {:>11.3} {:>8.3} {:>6.3} {:>6.3} {:>7.3} {:>12} {:>7}",
                report.roi_seconds * 1e3,
                report.speedup.unwrap_or(f64::NAN),
                report.smax.unwrap_or(f64::NAN),
                report.efficiency.unwrap_or(f64::NAN),
                report.balance,
                packages.join("+"),
                verdict.correct
            );
            all_correct &= verdict.correct;
            if let Some(dir) = &opts.plots {
                write(
                    &dir.join(file_name(kernel, name)),
                    &hetdsl_samples::svg::run_plot(kernel, &report),
                )?;
            }
            rows.push(json!({
                "kernel": kernel,
                "problem": sample.describe(),
                "balancer": name,
                "correct": verdict.correct,
                "check": verdict,
                "roi_seconds": report.roi_seconds,
                "binary_seconds": report.binary_seconds,
                "speedup": report.speedup,
                "smax": report.smax,
                "efficiency": report.efficiency,
                "balance": report.balance,
                "packages": report.devices.iter().map(|d| d.packages).collect::<Vec<_>>(),
                "single_device": single_rows,
                "report": report,
            }));
        }
        // Written after every kernel, so that a crash keeps what was measured.
        if let Some(path) = &opts.json {
            let doc =
                json!({"size": opts.size, "reps": opts.reps, "devices": device_list, "runs": rows});
            write(path, &serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())?)?;
        }
    }
    Ok(all_correct)
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("some runs did not match their CPU reference");
            ExitCode::from(1)
        }
        Err(e) => {
            eprintln!("suite: {e}");
            ExitCode::from(2)
        }
    }
}
