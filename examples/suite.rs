//! The suite runner: chosen kernels × balancers on chosen device sets. For every kernel, each
//! device of the sets first runs the whole problem alone (once, for Smax and the speedup's
//! baseline of every set), then every balancer co-executes it on every set; every run is
//! checked against the CPU reference.
//!
//! A device's time alone is the better of the whole range as one package (`alone/one` rows)
//! and the device alone under the default balancer (`alone/def`), so that efficiency is never
//! measured against a baseline the runtime itself beats; an efficiency above 1.01 is printed
//! as an `INVESTIGATE:` line. Every row shows the ROI time and the wall time of the whole
//! `run()` call (set-up and release included, `run() ms`).
//!
//! ```text
//! cargo run --release --example suite -- --kernels all --balancers all --devices 0,1/1,2/all \
//!     --size small --reps 3 --json out.json --plots plots/
//! ```
//! `--devices` takes one set (`all`, `cpu`, `gpu`, `0,2`) or several separated by `/`; with
//! several, every row starts with its set as written and the plots' names with the set.
//! A device nominally more than SLOW_CLASS (4)× slower than the fastest chosen one (a CPU beside
//! a GPU) is timed alone on a stratified sample of 1/256 of the problem and its whole time
//! extrapolated (`alone~` rows; `--alone full` runs it whole instead).
//!
//! Prints one table row per kernel × balancer (ROI time is the median of `--reps` runs);
//! `--json` holds every row with its full report; `--plots` writes one plot per co-executed run
//! (package size and computing speed per device over time; `--plot-format svg|png|both`);
//! `--trace DIR` one Chrome trace-event JSON per co-executed run (Perfetto, chrome://tracing).
//! `--help` lists every flag with its default. A progress bar on stderr (when it is a terminal)
//! tells the kernel, set, balancer and repetition, with the elapsed time and an estimate of
//! what is left.
//!
//! Energy (`--energy on`, the default; `off` disables it): every run timed whole is wrapped in
//! an energy sampler (NVML for NVIDIA GPUs, RAPL for the CPU packages; `alone~` runs are not),
//! and each co-executed row gets `E/Ebest` and `EDP/best`: its energy and energy-delay product
//! over those of the set's fastest device alone, both summed over the set's domains (see
//! `hetdsl_samples::harness::energy_ratio`); `n/a` (JSON null, with the reasons) where unreadable.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;

use hetdsl::balance::Static;
use hetdsl::Runtime;
use hetdsl_samples::harness::balancers;
use hetdsl_samples::harness::cli::{select_devices, KernelList};
use hetdsl_samples::harness::energy::EnergyReading;
use hetdsl_samples::harness::energy_ratio;
use hetdsl_samples::harness::measure::{repeat, Timed};
use hetdsl_samples::harness::paired;
use hetdsl_samples::harness::plot::RunPlot;
use hetdsl_samples::harness::progress::Progress;
use hetdsl_samples::samples::{self, Sample, Size};
use serde_json::{json, Value};

/// Runs the chosen kernels × balancers on the chosen device sets, every run checked against the
/// CPU reference.
#[derive(Debug, Parser)]
#[command(name = "suite")]
struct Cli {
    /// Samples to run: `all` or a comma-separated list of names.
    #[arg(long, default_value = "all", value_name = "all|NAME,...")]
    kernels: KernelList,
    /// Balancer specs: `all` (every family, default parameters) or a comma-separated list.
    #[arg(long, default_value = "all", value_name = "all|SPEC,...")]
    balancers: String,
    /// Device sets separated by `/`, each `all`, `cpu`, `gpu` or positions such as `0,2`.
    #[arg(long, default_value = "all", value_name = "SET[/SET...]")]
    devices: String,
    /// Problem size.
    #[arg(long, default_value = "small", value_name = "small|paper")]
    size: Size,
    /// Runs per row; the row's ROI time is their median (0 counts as 1).
    #[arg(long, default_value_t = 3)]
    reps: usize,
    /// Every row with its full report, written after every kernel [default: none]
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// One plot per co-executed run (package size and speed per device over time) [default:
    /// none]
    #[arg(long, value_name = "DIR")]
    plots: Option<PathBuf>,
    /// Format of the `--plots` files.
    #[arg(long, default_value = "svg", value_name = "svg|png|both")]
    plot_format: PlotFormat,
    /// One Chrome trace-event JSON per co-executed run (open in Perfetto or chrome://tracing)
    /// [default: none]
    #[arg(long, value_name = "DIR")]
    trace: Option<PathBuf>,
    /// `auto`: devices of a slower class are timed alone on a 1/256 sample; `full`: whole.
    #[arg(long, default_value = "auto", value_name = "auto|full")]
    alone: AloneMode,
    /// Wrap every timed run in an energy sampler (NVML, RAPL).
    #[arg(long, default_value = "on", value_name = "on|off")]
    energy: OnOff,
    /// Untimed calls of the default balancer on each set before its timed ones: a repeated
    /// launch tries its forms (plan whole, in pieces, the fastest device alone) on its first
    /// calls, and these let the timed calls measure the form it settled on. Each is printed.
    /// Each device timed alone (whole) gets as many untimed calls of each of its two forms.
    #[arg(long, default_value_t = 0, value_name = "N")]
    settle: usize,
    /// Before the default balancer's timed calls on each set, N rounds that alternate the
    /// set's fastest device alone (one package, then the default balancer) with the default on
    /// the set, each printed with its medians: all three see the same stretch of the machine.
    #[arg(long, default_value_t = 0, value_name = "N")]
    paired: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, clap::ValueEnum)]
enum PlotFormat {
    Svg,
    Png,
    Both,
}

#[derive(Debug, Clone, Copy, PartialEq, clap::ValueEnum)]
enum AloneMode {
    Auto,
    Full,
}

#[derive(Debug, Clone, Copy, PartialEq, clap::ValueEnum)]
enum OnOff {
    On,
    Off,
}

struct Options {
    kernels: Vec<String>,
    balancers: Vec<String>,
    /// The device sets as written (`--devices 0,1/1,2` gives `0,1` and `1,2`).
    sets: Vec<String>,
    size: Size,
    reps: usize,
    json: Option<PathBuf>,
    plots: Option<PathBuf>,
    plot_format: PlotFormat,
    trace: Option<PathBuf>,
    /// Time devices of a slower class alone on a stratified sample instead of the whole problem.
    sampled_alone: bool,
    /// Wrap every timed run in an energy sampler.
    energy: bool,
    /// Untimed default calls before the timed ones.
    settle: usize,
    /// Rounds of alternated calls against the fastest device alone.
    paired: usize,
}

/// A device alone in one package: the first of the two alone baselines.
fn one_package() -> Result<Option<Box<dyn hetdsl::Balancer>>, String> {
    Ok(Some(Box::new(Static::nominal())))
}

/// The default balancer, as a caller repeating the call gets it (Sigmoid first, then the
/// repeated launch's forms: the plan whole, or in pieces that overlap one's read-back with the
/// next one's writes). On a device alone, the second baseline.
fn default_balancer() -> Result<Option<Box<dyn hetdsl::Balancer>>, String> {
    balancers::parse(balancers::DEFAULT)
}

/// A device nominally this many times slower than the fastest one chosen is timed alone on a
/// sample (`--alone auto`): at paper size a CPU alone would take hundreds of times a GPU's
/// 1–2 s per kernel. Same threshold as Sigmoid's slower class.
const SLOWER_CLASS: f64 = hetdsl::balance::SLOW_CLASS;
/// An efficiency above this is printed as a line to investigate (`INVESTIGATE:` on stderr,
/// `investigate` in the JSON row): the ideal is built from each device at its best alone.
const EFFICIENCY_LIMIT: f64 = 1.01;
/// The sample: this many slices, evenly spaced over the range, together 1/SAMPLE_DIVISOR of it.
const SAMPLE_SLICES: u64 = 8;
const SAMPLE_DIVISOR: u64 = 256;

fn options(cli: Cli) -> Result<Options, String> {
    let sets: Vec<String> = cli.devices.split('/').map(|s| s.trim().to_string()).collect();
    if sets.iter().any(String::is_empty) {
        return Err("--devices: an empty device set (two `/` in a row?)".into());
    }
    Ok(Options {
        kernels: cli.kernels.0,
        balancers: balancers::parse_list(&cli.balancers)?,
        sets,
        size: cli.size,
        reps: cli.reps.max(1),
        json: cli.json,
        plots: cli.plots,
        plot_format: cli.plot_format,
        trace: cli.trace,
        sampled_alone: cli.alone == AloneMode::Auto,
        energy: cli.energy == OnOff::On,
        settle: cli.settle,
        paired: cli.paired,
    })
}

/// A device's time alone on the whole problem of `units` balancing units, estimated from
/// [`SAMPLE_SLICES`] slices evenly spread over the range (so an irregular kernel's costly and
/// cheap regions are both sampled), together 1/[`SAMPLE_DIVISOR`] of it: the slices' summed
/// ROI times, scaled by the whole over the sampled units. Returns (seconds, sampled fraction).
/// `Err(Cannot::Hold)` where the device cannot hold the problem's buffers at all: it adds
/// nothing to a set, whose co-executed runs leave it out.
fn sampled_alone(sample: &mut dyn Sample, device: usize, units: u64) -> Result<(f64, f64), Cannot> {
    let slice = (units / (SAMPLE_SLICES * SAMPLE_DIVISOR)).max(1);
    let (mut seconds, mut sampled) = (0.0, 0);
    for i in 0..SAMPLE_SLICES {
        let start = i * units / SAMPLE_SLICES;
        let end = (start + slice).min(units);
        let report = sample
            .run(Some(&[device]), Some(Box::new(Static::nominal())), Some(start..end))
            .map_err(|e| match e {
                hetdsl::Error::DeviceLimit { .. } => Cannot::Hold(e.to_string()),
                e => Cannot::Run(e.to_string()),
            })?;
        seconds += report.roi_seconds;
        sampled += end - start;
    }
    Ok((seconds * units as f64 / sampled as f64, sampled as f64 / units as f64))
}

/// Why a device could not be timed alone.
enum Cannot {
    /// It cannot hold the problem (a device limit): it counts as adding nothing.
    Hold(String),
    /// Anything else: its sets are skipped.
    Run(String),
}

/// `text` with everything but ASCII letters, digits and `-` replaced by `_` (for file names).
fn clean(text: &str) -> String {
    text.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect()
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("writing {}: {e}", path.display()))
}

/// The printed table: the single-set layout of earlier runs, with a leading `set` column when
/// several sets are run and two trailing energy columns when energy is measured.
struct Table {
    sets: bool,
    energy: bool,
    progress: Progress,
}

impl Table {
    #[allow(clippy::too_many_arguments)]
    fn row(
        &self,
        set: &str,
        kernel: &str,
        label: &str,
        roi: &str,
        wall: &str,
        figures: [&str; 4],
        packages: &str,
        correct: &str,
        energy: [&str; 2],
    ) {
        let mut line = String::new();
        if self.sets {
            line += &format!("{set:<12} ");
        }
        line += &format!(
            "{kernel:<11} {label:<16} {roi:>11} {wall:>11} {:>8} {:>6} {:>6} {:>7} {packages:>12} {correct:>7}",
            figures[0], figures[1], figures[2], figures[3]
        );
        if self.energy {
            line += &format!(" {:>8} {:>9}", energy[0], energy[1]);
        }
        self.progress.suspend(|| println!("{line}"));
    }

    fn header(&self) {
        self.row(
            "set",
            "kernel",
            "balancer",
            "ROI ms",
            "run() ms",
            ["speedup", "Smax", "eff", "balance"],
            "packages",
            "correct",
            ["E/Ebest", "EDP/best"],
        );
    }
}

/// `x` with `digits` decimals, or `n/a`.
fn figure(x: Option<f64>, digits: usize) -> String {
    x.map_or_else(|| "n/a".to_string(), |x| format!("{x:.digits$}"))
}

/// One device of the union of the sets, timed alone.
struct Alone {
    seconds: f64,
    /// Timed on the whole problem (not estimated from a sample).
    whole: bool,
    energy: Option<EnergyReading>,
    row: Value,
}

/// What the suite has gathered so far: the printed table, the JSON rows and the verdicts.
struct Suite {
    opts: Options,
    table: Table,
    rows: Vec<Value>,
    all_correct: bool,
    /// Wall seconds per kernel (inputs, kernel build, every run and check), to plan runs on
    /// machines whose calls are time-limited.
    wall: serde_json::Map<String, Value>,
    /// Runs that could not be made, with why; they make the exit status non-zero.
    skipped: Vec<Value>,
    /// The `--settle` calls of each kernel and set.
    settled: Vec<Value>,
    /// The `--paired` rounds of each kernel and set.
    paired: Vec<Value>,
    /// The last kernel's devices and sets, for the JSON document.
    device_list: Value,
    set_list: Value,
    progress: Progress,
}

/// A kernel's device sets resolved against its program's devices, and their union.
struct Sets<'a> {
    all: Vec<hetdsl::DeviceInfo>,
    /// Each set as written, with its device positions.
    sets: Vec<(&'a str, Vec<usize>)>,
    /// Every device of any set, in the order first named.
    union: Vec<usize>,
}

fn resolve_sets<'a>(labels: &'a [String], sample: &dyn Sample) -> Result<Sets<'a>, String> {
    let all = sample.devices();
    let sets: Vec<(&str, Vec<usize>)> = labels
        .iter()
        .map(|label| select_devices(label, &all).map(|d| (label.as_str(), d)))
        .collect::<Result<_, _>>()?;
    let mut union: Vec<usize> = Vec::new();
    for d in sets.iter().flat_map(|(_, s)| s) {
        if !union.contains(d) {
            union.push(*d);
        }
    }
    Ok(Sets { all, sets, union })
}

impl Suite {
    fn new(opts: Options) -> Self {
        let progress = Progress::new(0);
        let table =
            Table { sets: opts.sets.len() > 1, energy: opts.energy, progress: progress.clone() };
        Suite {
            opts,
            table,
            rows: Vec::new(),
            all_correct: true,
            wall: serde_json::Map::new(),
            skipped: Vec::new(),
            settled: Vec::new(),
            paired: Vec::new(),
            device_list: Value::Null,
            set_list: Value::Null,
            progress,
        }
    }

    /// Every set's runs of one kernel: each device alone, then every balancer on every set.
    fn kernel(&mut self, runtime: &Runtime, kernel: &str) -> Result<(), String> {
        let started = std::time::Instant::now();
        let mut sample = samples::create(kernel, self.opts.size, runtime)
            .map_err(|e| format!("{kernel}: {e}"))?;
        let created = started.elapsed().as_secs_f64();
        let labels = self.opts.sets.clone();
        let sets = resolve_sets(&labels, sample.as_ref())?;
        self.device_list = json!(sets
            .union
            .iter()
            .map(|&i| json!({"position": i, "name": sets.all[i].name, "kind": sets.all[i].kind}))
            .collect::<Vec<_>>());
        self.set_list = json!(sets
            .sets
            .iter()
            .map(|(label, d)| json!({"label": label, "devices": d}))
            .collect::<Vec<_>>());
        // Every kernel has the same number of runs: the union's devices alone, then every
        // balancer on every set, each `reps` times.
        let per_kernel =
            (2 * sets.union.len() + sets.sets.len() * self.opts.balancers.len()) as u64;
        self.progress.set_total(per_kernel * (self.opts.reps * self.opts.kernels.len()) as u64);
        // One untimed run on every device first: the first run of a kernel pays for its
        // devices' first-use work (kernel compilation for the local size, first touch of the
        // buffers), which made whichever run came first, a device alone, look slow and every
        // efficiency after it above 1.
        // It is also the caller's first call of this launch (the program is new): its run()
        // time, set-up included, is what a one-off call waits for.
        self.progress.set_what(format!("{kernel} · warm-up"));
        let first_call = match sample.run(Some(&sets.union), None, None) {
            Ok(r) => {
                let (run, roi) = (r.binary_seconds, r.roi_seconds);
                self.progress.suspend(|| {
                    println!(
                        "{kernel}: first call on devices {:?}: run() {:.1} ms around a {:.1} ms ROI",
                        sets.union,
                        run * 1e3,
                        roi * 1e3
                    )
                });
                json!({"devices": sets.union, "run_seconds": run, "roi_seconds": roi})
            }
            Err(e) => {
                self.progress.suspend(|| eprintln!("{kernel}: warm-up run failed: {e}"));
                json!(null)
            }
        };
        let alone = self.time_alone(sample.as_mut(), kernel, &sets);
        // Every device of a set is in the union: the lookup loses nothing.
        let position = |d: usize| sets.union.iter().position(|&u| u == d).unwrap_or(0);
        for (set_label, set) in &sets.sets {
            let Some(alone) =
                set.iter().map(|&d| alone[position(d)].as_ref()).collect::<Option<Vec<&Alone>>>()
            else {
                self.progress.suspend(|| {
                    eprintln!(
                        "SKIPPED: {kernel} on set {set_label}: a device of it could not run alone"
                    )
                });
                let runs = self.opts.balancers.len() * self.opts.reps;
                self.progress.reach(self.progress.done() + runs as u64);
                self.skipped.push(json!({"kernel": kernel, "set": set_label,
                    "reason": "a device of the set could not run the problem alone"}));
                continue;
            };
            self.co_execute(sample.as_mut(), kernel, &sets.all, set_label, set, &alone)?;
        }
        self.wall.insert(
            kernel.to_string(),
            json!({"setup_seconds": created, "total_seconds": started.elapsed().as_secs_f64(),
                "first_call": first_call}),
        );
        self.write_json()
    }

    /// Each device of the union alone on the whole problem (one package: Static over one
    /// device), once for every set; the fastest first, so that the problem's size in balancing
    /// units is known when a device of a slower class is timed on a sample (`--alone auto`).
    /// `None` for a device that could not run the problem.
    fn time_alone(
        &mut self,
        sample: &mut dyn Sample,
        kernel: &str,
        s: &Sets,
    ) -> Vec<Option<Alone>> {
        let nominal: Vec<f64> =
            s.union.iter().map(|&d| hetdsl::occupancy::nominal_gflops(&s.all[d])).collect();
        let fastest = nominal.iter().copied().fold(0.0, f64::max);
        let mut order: Vec<usize> = (0..s.union.len()).collect();
        order.sort_by(|&a, &b| nominal[b].total_cmp(&nominal[a]));
        let mut alone: Vec<Option<Alone>> = (0..s.union.len()).map(|_| None).collect();
        let mut units = None;
        for k in order {
            let d = s.union[k];
            let slower = self.opts.sampled_alone && nominal[k] * SLOWER_CLASS < fastest;
            self.progress.set_what(format!("{kernel} · alone dev {d}"));
            let before = self.progress.done();
            let result = self.alone_one(sample, d, &s.all, slower, &mut units);
            self.progress.reach(before + 2 * self.opts.reps as u64);
            let (timed, label, correct) = match result {
                Ok(m) => m,
                Err(e) => {
                    // A device that cannot run the problem (PoCL's 1 GiB allocation limit on
                    // paper-size Aho) leaves out the sets it is in, loudly; the rest go on.
                    self.progress
                        .suspend(|| eprintln!("SKIPPED: {kernel} alone on device {d}: {e}"));
                    self.skipped.push(json!({"kernel": kernel, "device": d, "reason": e}));
                    continue;
                }
            };
            let joules = timed.energy.as_ref().and_then(EnergyReading::joules);
            self.table.row(
                "-",
                kernel,
                &label,
                &format!("{:.3}", timed.seconds * 1e3),
                "-",
                ["-", "-", "-", "-"],
                "1",
                &correct,
                // An alone row has no ratio; its own joules (every domain) stand in the column.
                [&joules.map_or("-".to_string(), |j| format!("{j:.1}J")), "-"],
            );
            alone[k] = Some(timed);
        }
        alone
    }

    /// Device `d` alone: estimated from a sample when it is of a `slower` class and the
    /// problem's size in `units` is known, else timed whole (which sets `units`). Returns the
    /// timing, the row's label and its correctness column.
    fn alone_one(
        &mut self,
        sample: &mut dyn Sample,
        d: usize,
        all: &[hetdsl::DeviceInfo],
        slower: bool,
        units: &mut Option<u64>,
    ) -> Result<(Alone, String, String), String> {
        if let (true, Some(g)) = (slower, *units) {
            let (seconds, fraction) = match sampled_alone(sample, d, g) {
                Ok(timed) => timed,
                Err(Cannot::Run(e)) => return Err(e),
                Err(Cannot::Hold(e)) => {
                    // Co-executed, it sits out (the report says why): alone, it would never
                    // end, which is what its place in the ideal speed-up is.
                    let note = format!("{e}; it counts as adding nothing");
                    self.progress
                        .suspend(|| eprintln!("{}: alone on device {d}: {note}", sample.name()));
                    let row = json!({"device": d, "name": all[d].name, "roi_seconds": null,
                        "cannot_hold": e, "correct": null, "energy": null});
                    let timed = Alone { seconds: f64::INFINITY, whole: false, energy: None, row };
                    return Ok((timed, format!("alone~ dev {d}"), "cannot".to_string()));
                }
            };
            let row = json!({"device": d, "name": all[d].name, "roi_seconds": seconds,
                "estimated_from_fraction": fraction, "correct": null, "energy": null});
            let timed = Alone { seconds, whole: false, energy: None, row };
            return Ok((timed, format!("alone~ dev {d}"), "est.".to_string()));
        }
        let (reps, energy) = (self.opts.reps, self.opts.energy);
        self.settle_alone(sample, d, &one_package)?;
        let one = repeat(sample, &[d], None, reps, &one_package, true, energy, &self.progress)?;
        *units = Some(one.report.total_groups);
        // The same device alone under the default balancer: on a memory-bound kernel several
        // packages overlap one's read-back with the next one's writes, and beat one package.
        self.settle_alone(sample, d, &default_balancer)?;
        let def =
            repeat(sample, &[d], None, reps, &default_balancer, true, energy, &self.progress)?;
        let checked = |t: &Timed| t.verdict.as_ref().is_some_and(|v| v.correct);
        let correct = checked(&one) && checked(&def);
        self.all_correct &= correct;
        let (one_s, def_s) = (one.report.roi_seconds, def.report.roi_seconds);
        for (label, t) in [("one", &one), ("def", &def)] {
            self.table.row(
                "-",
                sample.name(),
                &format!("alone/{label} dev {d}"),
                &format!("{:.3}", t.report.roi_seconds * 1e3),
                &format!("{:.3}", t.report.binary_seconds * 1e3),
                ["-", "-", "-", "-"],
                &t.report.devices.iter().map(|r| r.packages).sum::<usize>().to_string(),
                &checked(t).to_string(),
                ["-", "-"],
            );
        }
        let (best, by) = if def_s < one_s { (def, "default") } else { (one, "one package") };
        let row = json!({"device": d, "name": all[d].name,
            "roi_seconds": best.report.roi_seconds, "baseline": by,
            "one_package_seconds": one_s, "default_seconds": def_s,
            "binary_seconds": best.report.binary_seconds, "correct": correct,
            "check": best.verdict, "energy": best.energy});
        let seconds = best.report.roi_seconds;
        let timed = Alone { seconds, whole: true, energy: best.energy, row };
        Ok((timed, format!("alone: dev {d}"), correct.to_string()))
    }

    /// `--settle` untimed calls of device `d` alone under `balancer`, as the default balancer
    /// gets on each set: timed cold, the baseline carried first-call costs that the settled
    /// default did not (reduction on one H100: 8.52 ms alone in one package, 6.19 when timed in
    /// turn with the default, which ran the same package in 6.50).
    fn settle_alone(
        &self,
        sample: &mut dyn Sample,
        d: usize,
        balancer: paired::MakeBalancer<'_>,
    ) -> Result<(), String> {
        for _ in 0..self.opts.settle {
            sample.run(Some(&[d]), balancer()?, None).map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// Every balancer co-executing the kernel on one set, against the set's devices `alone`
    /// (in the set's order).
    fn co_execute(
        &mut self,
        sample: &mut dyn Sample,
        kernel: &str,
        all: &[hetdsl::DeviceInfo],
        set_label: &str,
        set: &[usize],
        alone: &[&Alone],
    ) -> Result<(), String> {
        let single: Vec<f64> = alone.iter().map(|a| a.seconds).collect();
        // The energy baseline: the set's fastest device timed alone on the whole problem.
        let best = (0..set.len())
            .filter(|&k| alone[k].whole)
            .min_by(|&a, &b| alone[a].seconds.total_cmp(&alone[b].seconds));
        let baseline = Baseline {
            single,
            rows: alone.iter().map(|a| a.row.clone()).collect(),
            best_device: best.map(|k| set[k]),
            best_energy: best.and_then(|k| alone[k].energy.clone()),
        };
        for name in &self.opts.balancers.clone() {
            let balancer = || balancers::parse(name);
            let (reps, energy) = (self.opts.reps, self.opts.energy);
            self.progress.set_what(format!("{kernel} · set {set_label} · {name}"));
            if name == "default" && self.opts.settle > 0 {
                self.settle(sample, kernel, set_label, set);
            }
            if let (true, true, Some(best)) =
                (name == "default", self.opts.paired > 0, baseline.best_device)
            {
                self.paired(sample, kernel, set_label, set, best);
            }
            let before = self.progress.done();
            let result = repeat(sample, set, None, reps, &balancer, true, energy, &self.progress);
            self.progress.reach(before + reps as u64);
            let t = match result {
                Ok(t) => t,
                Err(e) => {
                    self.progress.suspend(|| {
                        eprintln!("SKIPPED: {kernel} on set {set_label} with {name}: {e}")
                    });
                    self.skipped.push(json!({"kernel": kernel, "set": set_label,
                        "balancer": name, "reason": e}));
                    continue;
                }
            };
            if name == "default" {
                let shown: Vec<String> =
                    t.runs.iter().map(|(b, s)| format!("{b} {:.2}", s * 1e3)).collect();
                let line = format!(
                    "{kernel} on set {set_label}: timed calls (ROI ms): {}",
                    shown.join(", ")
                );
                self.progress.suspend(|| println!("{line}"));
            }
            let run = CoRun { kernel, problem: sample.describe(), set_label, set, balancer: name };
            self.record(&run, t, all, &baseline)?;
        }
        Ok(())
    }

    /// `--settle` untimed calls of the default balancer on `set`, each printed (its balancer,
    /// ROI and run()) and kept in the JSON (`settled`, with its report); a failed one is
    /// printed and ends them.
    fn settle(&mut self, sample: &mut dyn Sample, kernel: &str, set_label: &str, set: &[usize]) {
        let mut calls = Vec::new();
        for _ in 0..self.opts.settle {
            match sample.run(Some(set), None, None) {
                // The whole report: a form that settles badly shows why in its trace.
                Ok(r) => calls.push(json!({"balancer": r.balancer, "roi_seconds": r.roi_seconds,
                    "run_seconds": r.binary_seconds, "report": r})),
                Err(e) => {
                    self.progress.suspend(|| eprintln!("{kernel}: a settling call failed: {e}"));
                    break;
                }
            }
        }
        let shown: Vec<String> = calls
            .iter()
            .map(|c| {
                let ms = |k: &str| c[k].as_f64().unwrap_or(f64::NAN) * 1e3;
                let name = c["balancer"].as_str().unwrap_or("?");
                format!("{name} {:.2}/{:.2}", ms("roi_seconds"), ms("run_seconds"))
            })
            .collect();
        self.progress.suspend(|| {
            println!(
                "{kernel} on set {set_label}: settling calls (ROI/run() ms): {}",
                shown.join(", ")
            )
        });
        self.settled.push(json!({"kernel": kernel, "set": set_label, "calls": calls}));
    }

    /// `--paired` rounds: device `best` alone in one package, then under the default
    /// balancer, then the default on `set`, in turn; printed with each variant's medians and
    /// the set's ratio to the better alone variant, and kept in the JSON (`paired`).
    fn paired(
        &mut self,
        sample: &mut dyn Sample,
        kernel: &str,
        set_label: &str,
        set: &[usize],
        best: usize,
    ) {
        let alone = [best];
        let variants = [
            paired::Variant { devices: &alone, balancer: &one_package },
            paired::Variant { devices: &alone, balancer: &default_balancer },
            paired::Variant { devices: set, balancer: &default_balancer },
        ];
        let calls = match paired::alternate(sample, &variants, self.opts.paired) {
            Ok(c) => c,
            Err(e) => {
                self.progress.suspend(|| eprintln!("{kernel}: the paired rounds failed: {e}"));
                self.skipped.push(json!({"kernel": kernel, "set": set_label,
                    "paired": true, "reason": e}));
                return;
            }
        };
        let ms = |c: &paired::Calls| (c.median_roi() * 1e3, c.median_run() * 1e3);
        let (one_ms, sig_ms, set_ms) = (ms(&calls[0]), ms(&calls[1]), ms(&calls[2]));
        let alone_roi = one_ms.0.min(sig_ms.0);
        let alone_run = if one_ms.0 <= sig_ms.0 { one_ms.1 } else { sig_ms.1 };
        self.progress.suspend(|| {
            println!(
                "{kernel} on set {set_label}, {} rounds alternated with device {best} alone \
                 (median ROI/run() ms): one package {:.2}/{:.2}, default alone {:.2}/{:.2}, \
                 default on the set {:.2}/{:.2} (forms {}): ratio {:.3} (ROI), {:.3} (run())",
                self.opts.paired,
                one_ms.0,
                one_ms.1,
                sig_ms.0,
                sig_ms.1,
                set_ms.0,
                set_ms.1,
                calls[2].balancers.join(","),
                set_ms.0 / alone_roi,
                set_ms.1 / alone_run,
            )
        });
        let each = |c: &paired::Calls| {
            json!({"roi_seconds": c.roi, "run_seconds": c.run,
            "balancers": c.balancers})
        };
        self.paired.push(json!({"kernel": kernel, "set": set_label, "alone_device": best,
            "one_package": each(&calls[0]), "default_alone": each(&calls[1]),
            "default_set": each(&calls[2]), "ratio_roi": set_ms.0 / alone_roi,
            "ratio_run": set_ms.1 / alone_run}));
    }

    /// One co-executed run: its table row, its plot and its JSON row.
    fn record(
        &mut self,
        run: &CoRun,
        mut t: Timed,
        all: &[hetdsl::DeviceInfo],
        base: &Baseline,
    ) -> Result<(), String> {
        t.report.compare_with_single_device(&base.single).map_err(|e| e.to_string())?;
        let report = &t.report;
        let correct = t.verdict.as_ref().is_some_and(|v| v.correct);
        self.all_correct &= correct;
        let ratios =
            energy_ratio::compare(t.energy.as_ref(), base.best_energy.as_ref(), all, run.set);
        let packages: Vec<String> = report.devices.iter().map(|d| d.packages.to_string()).collect();
        // Above 1, a run beat the ideal built from its devices alone: the baseline is wrong
        // (a device alone slower than it can be) or the run is; either way, look.
        let investigate = report.efficiency.is_some_and(|e| e > EFFICIENCY_LIMIT);
        if investigate {
            self.progress.suspend(|| {
                eprintln!(
                    "INVESTIGATE: {} on set {} with {}: efficiency {} above {EFFICIENCY_LIMIT}",
                    run.kernel,
                    run.set_label,
                    run.balancer,
                    figure(report.efficiency, 3)
                )
            });
        }
        self.table.row(
            run.set_label,
            run.kernel,
            run.balancer,
            &format!("{:.3}", report.roi_seconds * 1e3),
            &format!("{:.3}", report.binary_seconds * 1e3),
            [
                &figure(report.speedup, 3),
                &figure(report.smax, 3),
                &figure(report.efficiency, 3),
                &format!("{:.3}", report.balance),
            ],
            &packages.join("+"),
            &correct.to_string(),
            [&figure(ratios.energy_ratio, 3), &figure(ratios.edp_ratio, 3)],
        );
        let stem = match self.table.sets {
            true => format!("{}_{}_{}", clean(run.set_label), run.kernel, clean(run.balancer)),
            false => format!("{}_{}", run.kernel, clean(run.balancer)),
        };
        if let Some(dir) = &self.opts.plots {
            // A plot that cannot be drawn (no font on a GPU machine) costs the plot, not the
            // measurements: said once, then the suite goes on without plots.
            if let Err(e) = plot_files(dir, &stem, self.opts.plot_format, run.kernel, report) {
                self.progress.suspend(|| eprintln!("suite: no more plots: {e}"));
                self.opts.plots = None;
            }
        }
        if let Some(dir) = &self.opts.trace {
            write(&dir.join(format!("{stem}.trace.json")), &report.chrome_trace())?;
        }
        let mut row = json_row(run, &t, correct, base, &ratios);
        row["investigate"] = json!(investigate);
        row["reps"] = json!(t
            .runs
            .iter()
            .map(|(b, s)| json!({"balancer": b, "roi_seconds": s}))
            .collect::<Vec<_>>());
        self.rows.push(row);
        Ok(())
    }

    /// The JSON document so far; written after every kernel, so that a crash keeps what was
    /// measured.
    fn write_json(&self) -> Result<(), String> {
        let Some(path) = &self.opts.json else { return Ok(()) };
        let doc = json!({"size": self.opts.size, "reps": self.opts.reps,
            "devices": self.device_list, "sets": self.set_list, "energy": self.opts.energy,
            "wall": self.wall, "skipped": self.skipped, "settled": self.settled,
            "paired": self.paired,
            "runs": self.rows});
        write(path, &serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())?)
    }
}

/// The plot of one run as `dir/stem.svg` and/or `dir/stem.png`.
fn plot_files(
    dir: &Path,
    stem: &str,
    format: PlotFormat,
    kernel: &str,
    report: &hetdsl::Report,
) -> Result<(), String> {
    let plot = RunPlot::of_report(kernel, report);
    if format != PlotFormat::Png {
        write(&dir.join(format!("{stem}.svg")), &plot.svg()?)?;
    }
    if format != PlotFormat::Svg {
        let path = dir.join(format!("{stem}.png"));
        std::fs::write(&path, plot.png()?)
            .map_err(|e| format!("writing {}: {e}", path.display()))?;
    }
    Ok(())
}

/// The JSON row of one co-executed run.
fn json_row(
    run: &CoRun,
    t: &Timed,
    correct: bool,
    base: &Baseline,
    ratios: &energy_ratio::EnergyRatios,
) -> Value {
    let report = &t.report;
    json!({
        "kernel": run.kernel,
        "problem": run.problem,
        "set": run.set_label,
        "set_devices": run.set,
        "balancer": run.balancer,
        "correct": correct,
        "check": t.verdict,
        "roi_seconds": report.roi_seconds,
        "binary_seconds": report.binary_seconds,
        "speedup": report.speedup,
        "smax": report.smax,
        "efficiency": report.efficiency,
        "balance": report.balance,
        "packages": report.devices.iter().map(|d| d.packages).collect::<Vec<_>>(),
        "single_device": base.rows,
        "energy": t.energy,
        "energy_best_alone_device": base.best_device,
        "energy_ratio": ratios.energy_ratio,
        "edp_ratio": ratios.edp_ratio,
        "energy_domains": ratios.domains,
        "energy_notes": ratios.notes,
        "report": report,
    })
}

/// The set's devices alone, as every co-executed row of the set compares with them.
struct Baseline {
    /// Seconds alone, in the set's order.
    single: Vec<f64>,
    rows: Vec<Value>,
    /// The set's fastest device timed whole, and its energy: the energy ratios' baseline.
    best_device: Option<usize>,
    best_energy: Option<EnergyReading>,
}

/// What names one co-executed run.
struct CoRun<'a> {
    kernel: &'a str,
    problem: String,
    set_label: &'a str,
    set: &'a [usize],
    balancer: &'a str,
}

fn run(cli: Cli) -> Result<bool, String> {
    let opts = options(cli)?;
    let runtime = Runtime::new().map_err(|e| e.to_string())?;
    for dir in opts.plots.iter().chain(&opts.trace) {
        std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    }
    let kernels = opts.kernels.clone();
    let mut suite = Suite::new(opts);
    suite.table.header();
    for kernel in &kernels {
        suite.kernel(&runtime, kernel)?;
    }
    suite.progress.finish();
    if !suite.skipped.is_empty() {
        eprintln!("suite: {} run(s) SKIPPED (see the SKIPPED lines above)", suite.skipped.len());
    }
    if !suite.all_correct {
        eprintln!("suite: some runs did not match their CPU reference");
    }
    Ok(suite.all_correct && suite.skipped.is_empty())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    hetdsl_samples::harness::init_tracing();
    match run(cli) {
        Ok(true) => ExitCode::SUCCESS,
        // Wrong output or skipped runs, each said above.
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("suite: {e}");
            ExitCode::from(2)
        }
    }
}
