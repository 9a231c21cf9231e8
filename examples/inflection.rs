//! The inflection point (the EngineCL optimisation study's term): the smallest problem, measured as
//! the ROI time of the fastest device alone, at which co-execution beats that device alone, and
//! keeps beating it at every larger size tried.
//!
//! ```text
//! cargo run --release --example inflection -- --kernels all --devices 1,2 --balancer sigmoid \
//!     --size paper --reps 3 --from -14 --to -3 --json inflection.json
//! ```
//! For each kernel: the fastest device of `--devices` (by nominal GFLOP/s, as the suite picks
//! it) runs the whole problem alone once, checked against the CPU reference, which gives the
//! problem's size in balancing units. Then, for every exponent e from `--from` to `--to`, the
//! first ⌈2^e · units⌉ units (`Sample::run`'s `groups` range, from unit 0) are timed on that
//! device alone (Static over it) and co-executed on `--devices` with `--balancer`; each time
//! is the median of `--reps` runs. A table per kernel gives the points and the inflection point.
//!
//! NOT VERIFIED: the timing runs of sub-ranges (every exponent below 0) are NOT checked
//! against the CPU reference, because `Sample::verify` compares the whole output and a
//! sub-range run leaves the rest of it poisoned. Only whole-problem runs are checked: the
//! fastest device's run here, `--to 0`'s points, and every run of the suite.
//!
//! A sub-range is the first units of the problem, not a sample of it: for an irregular kernel
//! (Mandelbrot, Ray) its cost per unit differs from the whole problem's; the table gives the
//! times measured on it, which is what the inflection point is defined on.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

use hetdsl::balance::Static;
use hetdsl::{Balancer, Runtime};
use hetdsl_samples::harness::balancers;
use hetdsl_samples::harness::cli::{select_devices, KernelList};
use hetdsl_samples::harness::measure::{inflection_point, repeat};
use hetdsl_samples::harness::progress::Progress;
use hetdsl_samples::samples::{self, Size};
use serde_json::{json, Value};

/// Finds, per kernel, the smallest problem at which co-execution beats the fastest device alone.
#[derive(Debug, Parser)]
#[command(name = "inflection")]
struct Options {
    /// Samples to measure: `all` or a comma-separated list of names.
    #[arg(long, default_value = "all", value_name = "all|NAME,...")]
    kernels: KernelList,
    /// The co-executing devices: `all`, `cpu`, `gpu` or positions such as `1,2`.
    #[arg(long, default_value = "all", value_name = "all|cpu|gpu|0,2")]
    devices: String,
    /// The co-executing balancer's spec.
    #[arg(long, default_value = "sigmoid", value_name = "SPEC", value_parser = balancer_name)]
    balancer: String,
    /// Problem size.
    #[arg(long, default_value = "paper", value_name = "small|paper")]
    size: Size,
    /// Runs per point; each time is their median (0 counts as 1).
    #[arg(long, default_value_t = 3)]
    reps: usize,
    /// The smallest fraction tried is 2^FROM of the problem (-40 <= FROM <= TO).
    #[arg(long, default_value_t = -14, allow_negative_numbers = true)]
    from: i32,
    /// The largest fraction tried is 2^TO of the problem (TO <= 0).
    #[arg(long, default_value_t = -3, allow_negative_numbers = true)]
    to: i32,
    /// Every kernel's points, written after every kernel [default: none]
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

fn balancer_name(spec: &str) -> Result<String, String> {
    balancers::parse(spec).map(|_| spec.to_string())
}

fn options() -> Result<Options, String> {
    let mut opts = Options::parse();
    let (from, to) = (opts.from, opts.to);
    if !(-40..=0).contains(&from) || !(from..=0).contains(&to) {
        return Err(format!("--from {from} --to {to}: expected -40 <= from <= to <= 0"));
    }
    opts.reps = opts.reps.max(1);
    Ok(opts)
}

fn static_one() -> Result<Option<Box<dyn Balancer>>, String> {
    Ok(Some(Box::new(Static::nominal())))
}

/// `println!` or `print!` with the progress bar cleared while it writes.
macro_rules! say {
    ($progress:expr, $how:ident, $($arg:tt)*) => {
        $progress.suspend(|| $how!($($arg)*))
    };
}

/// Measure one kernel; its JSON record.
fn kernel_points(
    opts: &Options,
    runtime: &Runtime,
    kernel: &str,
    progress: &Progress,
) -> Result<(Value, bool), String> {
    let started = std::time::Instant::now();
    let mut sample =
        samples::create(kernel, opts.size, runtime).map_err(|e| format!("{kernel}: {e}"))?;
    let all = sample.devices();
    let set = select_devices(&opts.devices, &all)?;
    let fastest = set
        .iter()
        .copied()
        .max_by(|&a, &b| {
            hetdsl::occupancy::nominal_gflops(&all[a])
                .total_cmp(&hetdsl::occupancy::nominal_gflops(&all[b]))
        })
        .ok_or("no device chosen")?;
    progress.set_what(format!("{kernel} · whole on dev {fastest}"));
    let whole = repeat(sample.as_mut(), &[fastest], None, 1, &static_one, true, false, progress)?;
    let units = whole.report.total_groups;
    let whole_correct = whole.verdict.as_ref().is_some_and(|v| v.correct);
    say!(
        progress,
        println,
        "\n{kernel}: {} | {units} units | fastest: dev {fastest} {} ({:.3} ms whole, {}) | \
         co-executed on {:?} with {}",
        sample.describe(),
        all[fastest].name,
        whole.report.roi_seconds * 1e3,
        whole.verdict.as_ref().map_or("unchecked".to_string(), |v| v.to_string()),
        set,
        opts.balancer
    );
    say!(
        progress,
        println,
        "{:>10} {:>10} {:>12} {:>12} {:>8}  checked",
        "fraction",
        "groups",
        "alone ms",
        "coexec ms",
        "ratio"
    );
    let mut points: Vec<Value> = Vec::new();
    let mut times: Vec<(f64, f64)> = Vec::new();
    let mut all_correct = whole_correct;
    let mut last_groups = 0;
    for e in opts.from..=opts.to {
        let fraction = 2f64.powi(e);
        let groups = ((units as f64 * fraction).ceil() as u64).clamp(1, units);
        let before = progress.done();
        if groups == last_groups {
            progress.reach(before + 2 * opts.reps as u64);
            continue; // A small problem: several fractions round to the same units.
        }
        last_groups = groups;
        // Only a whole-problem run can be checked (see the module's comment).
        let check = groups == units;
        let range = Some(0..groups);
        progress.set_what(format!("{kernel} · 2^{e} alone on dev {fastest}"));
        let alone = repeat(
            sample.as_mut(),
            &[fastest],
            range.clone(),
            opts.reps,
            &static_one,
            check,
            false,
            progress,
        )?;
        progress.set_what(format!("{kernel} · 2^{e} on {:?} · {}", set, opts.balancer));
        let coexec = repeat(
            sample.as_mut(),
            &set,
            range,
            opts.reps,
            &|| balancers::parse(&opts.balancer),
            check,
            false,
            progress,
        )?;
        let verdicts: Vec<bool> = [&alone.verdict, &coexec.verdict]
            .iter()
            .filter_map(|v| v.as_ref())
            .map(|v| v.correct)
            .collect();
        all_correct &= verdicts.iter().all(|&c| c);
        let checked = match verdicts.is_empty() {
            true => "not verified (sub-range)".to_string(),
            false => verdicts.iter().all(|&c| c).to_string(),
        };
        let (a, c) = (alone.report.roi_seconds, coexec.report.roi_seconds);
        say!(
            progress,
            println,
            "{:>10} {groups:>10} {:>12.3} {:>12.3} {:>8.3}  {checked}",
            format!("2^{e}"),
            a * 1e3,
            c * 1e3,
            c / a
        );
        times.push((a, c));
        points.push(json!({
            "exponent": e, "fraction": fraction, "groups": groups,
            "alone_seconds": a, "coexec_seconds": c, "ratio": c / a,
            "verified": (!verdicts.is_empty()).then(|| verdicts.iter().all(|&c| c)),
            "coexec_packages": coexec.report.devices.iter().map(|d| d.packages).collect::<Vec<_>>(),
            "coexec_balance": coexec.report.balance,
        }));
    }
    let point = inflection_point(&times);
    match point {
        Some(i) => say!(
            progress,
            print,
            "inflection point: {:.3} ms of the fastest device alone ({} units, 2^{})",
            times[i].0 * 1e3,
            points[i]["groups"],
            points[i]["exponent"]
        ),
        None => say!(
            progress,
            print,
            "inflection point: not reached up to {:.3} ms of the fastest device alone",
            times.last().map_or(0.0, |t| t.0) * 1e3
        ),
    }
    say!(progress, println, " [{:.1} s wall]", started.elapsed().as_secs_f64());
    let record = json!({
        "kernel": kernel,
        "problem": sample.describe(),
        "units": units,
        "devices": set,
        "fastest": {"device": fastest, "name": all[fastest].name,
            "whole_seconds": whole.report.roi_seconds, "whole_check": whole.verdict},
        "points": points,
        "inflection": point.map(|i| json!({"alone_seconds": times[i].0,
            "groups": points[i]["groups"], "exponent": points[i]["exponent"]})),
        "largest_alone_seconds": times.last().map(|t| t.0),
        "wall_seconds": started.elapsed().as_secs_f64(),
    });
    Ok((record, all_correct))
}

fn run() -> Result<bool, String> {
    let opts = options()?;
    let runtime = Runtime::new().map_err(|e| e.to_string())?;
    let mut records = Vec::new();
    let mut all_correct = true;
    // Per kernel: the whole problem once, then every point alone and co-executed, `reps` each.
    let points = (opts.to - opts.from + 1) as u64;
    let per_kernel = 1 + points * 2 * opts.reps as u64;
    let progress = Progress::new(per_kernel * opts.kernels.0.len() as u64);
    for (k, kernel) in opts.kernels.0.iter().enumerate() {
        let (record, correct) = kernel_points(&opts, &runtime, kernel, &progress)?;
        progress.reach(per_kernel * (k as u64 + 1));
        all_correct &= correct;
        records.push(record);
        // Written after every kernel, so that a crash keeps what was measured.
        if let Some(path) = &opts.json {
            let doc = json!({"size": opts.size, "reps": opts.reps, "balancer": opts.balancer,
                "devices": opts.devices, "from": opts.from, "to": opts.to, "kernels": records});
            let text = serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())?;
            std::fs::write(path, text).map_err(|e| format!("writing {}: {e}", path.display()))?;
        }
    }
    progress.finish();
    Ok(all_correct)
}

fn main() -> ExitCode {
    hetdsl_samples::harness::init_tracing();
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("some whole-problem runs did not match their CPU reference");
            ExitCode::from(1)
        }
        Err(e) => {
            eprintln!("inflection: {e}");
            ExitCode::from(2)
        }
    }
}
