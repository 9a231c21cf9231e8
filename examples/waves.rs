//! Time per work-group against package size on one device: does a partial wave cost a whole
//! one, and what does one kernel cost beyond its work-groups?
//!
//! ```text
//! cargo run --release --example waves -- --kernels nbody --device 1 --size paper --reps 3 \
//!     --fills 0.5,1,1.5,2,2.5,3,4,5 --pieces 1,2 --json waves.json
//! ```
//! For each kernel the device first runs the whole problem as one package, checked against the
//! CPU reference; the run also gives the device's fill (its occupancy bound, the fewest
//! work-groups that fill it). Then, for each `--fills` point, the first ⌈f · fill⌉ work-groups
//! run as one package, and the whole problem and its first half run as consecutive packages of
//! `--pieces` fills each (queued back to back). Each time is the median of `--reps` runs of the
//! kernels' device time (profiling clock, summed over packages) and of the ROI.
//!
//! The affine fit `kernel = a + b · groups` over the one-package points of at least one fill
//! gives `a`, what one kernel costs beyond its work-groups (its first and last waves), and with
//! it the most that k identical devices can reach on the whole problem, one package each:
//! (a + b·G) / (k·a + b·G).
//!
//! NOT VERIFIED: runs of a sub-range (every point but the whole problem) are NOT checked against
//! the CPU reference (`Sample::verify` compares the whole output); the whole problem is, in one
//! package and in pieces.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use clap::Parser;

use hetdsl::balance::{Completion, Dynamic, Next, Setup, Static};
use hetdsl::{Balancer, Report, Runtime};
use hetdsl_samples::harness::cli::KernelList;
use hetdsl_samples::samples::{self, Sample, Size};
use serde_json::{json, Value};

/// Times kernels over growing packages on one device.
#[derive(Debug, Parser)]
#[command(name = "waves")]
struct Options {
    /// Samples to measure: `all` or a comma-separated list of names.
    #[arg(long, default_value = "nbody", value_name = "all|NAME,...")]
    kernels: KernelList,
    /// The device (position in the sample's device list) [default: the last one].
    #[arg(long)]
    device: Option<usize>,
    /// Problem size.
    #[arg(long, default_value = "paper", value_name = "small|paper")]
    size: Size,
    /// Runs per point; each time is their median (0 counts as 1).
    #[arg(long, default_value_t = 3)]
    reps: usize,
    /// Package sizes, in fills of the device.
    #[arg(
        long,
        default_value = "0.25,0.5,0.75,1,1.25,1.5,1.75,2,2.5,3,3.5,4,5,6",
        value_delimiter = ','
    )]
    fills: Vec<f64>,
    /// Sizes of consecutive packages, in whole fills, for the whole problem and its half.
    #[arg(long, default_value = "1,2", value_delimiter = ',')]
    pieces: Vec<u64>,
    /// Every kernel's points, written after every kernel [default: none]
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

/// Static over one device, keeping the fill the engine gave it.
struct Recording {
    inner: Static,
    fill: Arc<Mutex<Option<u64>>>,
}

impl Balancer for Recording {
    fn name(&self) -> String {
        self.inner.name()
    }
    fn start(&mut self, setup: &Setup) -> hetdsl::Result<()> {
        if let Some(d) = setup.devices.first() {
            *self.fill.lock().unwrap_or_else(|p| p.into_inner()) = Some(d.min_groups);
        }
        self.inner.start(setup)
    }
    fn next(&mut self, device: usize, now: f64) -> Next {
        self.inner.next(device, now)
    }
    fn completed(&mut self, done: &Completion) {
        self.inner.completed(done)
    }
    fn device_lost(&mut self, device: usize) {
        self.inner.device_lost(device)
    }
}

/// One timed shape: median kernel seconds (device clock, summed) and median ROI seconds.
struct Point {
    kernel: f64,
    roi: f64,
    packages: usize,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn kernel_seconds(report: &Report) -> Result<f64, String> {
    let mut sum = 0.0;
    for t in report.trace.iter().filter(|t| t.merged) {
        sum += t.kernel_seconds.ok_or("the device gave no profiling times")?;
    }
    Ok(sum)
}

/// `reps` runs over `groups` with a fresh balancer from `make`; checked when `check`.
fn time(
    sample: &mut dyn Sample,
    device: usize,
    groups: u64,
    reps: usize,
    make: &dyn Fn() -> Box<dyn Balancer>,
    check: bool,
) -> Result<Point, String> {
    let (mut kernels, mut rois, mut packages) = (Vec::new(), Vec::new(), 0);
    for _ in 0..reps.max(1) {
        let report = sample
            .run(Some(&[device]), Some(make()), Some(0..groups))
            .map_err(|e| e.to_string())?;
        if check {
            let verdict = sample.verify();
            if !verdict.correct {
                return Err(format!("{}: {verdict}", sample.name()));
            }
        }
        kernels.push(kernel_seconds(&report)?);
        rois.push(report.roi_seconds);
        packages = report.trace.iter().filter(|t| t.merged).count();
    }
    Ok(Point { kernel: median(kernels), roi: median(rois), packages })
}

/// Least squares `y = a + b x`.
fn affine(points: &[(f64, f64)]) -> Option<(f64, f64)> {
    let n = points.len() as f64;
    let (sx, sy) = points.iter().fold((0.0, 0.0), |(sx, sy), &(x, y)| (sx + x, sy + y));
    let (mx, my) = (sx / n, sy / n);
    let sxx: f64 = points.iter().map(|&(x, _)| (x - mx) * (x - mx)).sum();
    let sxy: f64 = points.iter().map(|&(x, y)| (x - mx) * (y - my)).sum();
    (points.len() >= 2 && sxx > 0.0).then(|| (my - sxy / sxx * mx, sxy / sxx))
}

fn row(label: &str, groups: u64, fill: u64, p: &Point) -> Value {
    println!(
        "{label:>14} {groups:>9} {:>7.2} {:>4} {:>12.3} {:>12.3} {:>10.3} {:>10.3}",
        groups as f64 / fill as f64,
        p.packages,
        p.kernel * 1e3,
        p.roi * 1e3,
        p.kernel * 1e6 / groups as f64,
        p.kernel * 1e3 * fill as f64 / groups as f64,
    );
    json!({"shape": label, "groups": groups, "fills": groups as f64 / fill as f64,
        "packages": p.packages, "kernel_seconds": p.kernel, "roi_seconds": p.roi})
}

fn kernel_points(opts: &Options, runtime: &Runtime, name: &str) -> Result<Value, String> {
    let mut sample =
        samples::create(name, opts.size, runtime).map_err(|e| format!("{name}: {e}"))?;
    let devices = sample.devices();
    let device = opts.device.unwrap_or(devices.len() - 1);
    let info = devices.get(device).ok_or(format!("no device {device}"))?.clone();
    let fill = Arc::new(Mutex::new(None));
    let one = || -> Box<dyn Balancer> {
        Box::new(Recording { inner: Static::nominal(), fill: fill.clone() })
    };
    // The whole problem in one package: checked, and it records the fill.
    let total = sample.run(Some(&[device]), Some(one()), None).map_err(|e| e.to_string())?;
    let total = total.total_groups;
    let whole = time(sample.as_mut(), device, total, opts.reps, &one, true)?;
    let fill = fill.lock().unwrap_or_else(|p| p.into_inner()).ok_or("no fill recorded")?;
    println!(
        "\n{name}: {} | dev {device} {} | {total} groups, fill {fill} | the whole problem checked \
         correct; sub-ranges NOT VERIFIED",
        sample.describe(),
        info.name
    );
    println!(
        "{:>14} {:>9} {:>7} {:>4} {:>12} {:>12} {:>10} {:>10}",
        "shape", "groups", "fills", "pkgs", "kernel ms", "ROI ms", "µs/group", "ms/fill"
    );
    let mut rows = Vec::new();
    let mut line = Vec::new();
    let mut sizes: Vec<u64> =
        opts.fills.iter().map(|f| ((f * fill as f64).ceil() as u64).clamp(1, total)).collect();
    sizes.push(total.div_ceil(2));
    sizes.sort_unstable();
    sizes.dedup();
    for groups in sizes.into_iter().filter(|&g| g < total) {
        let p = time(sample.as_mut(), device, groups, opts.reps, &one, false)?;
        if groups >= fill {
            line.push((groups as f64, p.kernel));
        }
        rows.push(row("one package", groups, fill, &p));
    }
    line.push((total as f64, whole.kernel));
    rows.push(row("one package", total, fill, &whole));
    for &k in opts.pieces.iter().filter(|&&k| k > 0) {
        for (groups, check) in [(total.div_ceil(2), false), (total, true)] {
            let chunk = || -> Box<dyn Balancer> { Box::new(Dynamic::chunk(k * fill)) };
            let p = time(sample.as_mut(), device, groups, opts.reps, &chunk, check)?;
            rows.push(row(&format!("pieces of {k}"), groups, fill, &p));
        }
    }
    let fit = affine(&line);
    if let Some((a, _)) = fit.filter(|&(a, _)| a < 0.0) {
        // A cost that grows along the range (RAP) or varies by group (Mandelbrot) is not affine
        // in the group count; a bound from such a fit would mean nothing.
        println!("kernel fit's fixed cost {:.3} ms < 0: not affine, no bound given", a * 1e3);
    } else if let Some((a, b)) = fit {
        let g = total as f64;
        let bound = |k: f64| (a + b * g) / (k * a + b * g);
        println!(
            "kernel ≈ {:.3} ms + {:.4} µs × groups (points of ≥ 1 fill); at most {:.3} on 2 such \
             devices, {:.3} on 4, one package each",
            a * 1e3,
            b * 1e6,
            bound(2.0),
            bound(4.0)
        );
    }
    Ok(json!({"kernel": name, "problem": sample.describe(), "device": device,
        "device_name": info.name, "groups": total, "fill": fill, "points": rows,
        "fit": fit.map(|(a, b)| json!({"fixed_seconds": a, "seconds_per_group": b}))}))
}

fn run() -> Result<(), String> {
    let opts = Options::parse();
    let runtime = Runtime::new().map_err(|e| e.to_string())?;
    let mut records = Vec::new();
    for name in &opts.kernels.0 {
        records.push(kernel_points(&opts, &runtime, name)?);
        if let Some(path) = &opts.json {
            let doc = json!({"size": opts.size, "reps": opts.reps, "kernels": records});
            let text = serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())?;
            std::fs::write(path, text).map_err(|e| format!("writing {}: {e}", path.display()))?;
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("waves: {e}");
            ExitCode::FAILURE
        }
    }
}
