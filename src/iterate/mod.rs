//! The iterative benchmarks: kernels launched many times over the same data, run in several
//! ways side by side so that the cost of moving data between launches shows.
//!
//! - `single`: a session on one device, data resident there (each device in turn; the fastest
//!   is the baseline);
//! - `one-shot`: `Launch::run` per launch on every device, which copies every input in and
//!   every output out each time;
//! - `session`: a session over every device (co-execution, default balancer), data resident;
//! - `opencl3` (jacobi only): the same kernel enqueued by hand on one device, the floor that
//!   shows the session's own overhead.
//!
//! Every variant's final data is checked against an independent CPU reference
//! ([`crate::samples::iterative`]).

pub mod blackscholes;
pub mod chain;
pub mod handwritten;
pub mod jacobi;
pub mod minimum;
pub mod nbody;
mod report;

use std::time::Instant;

use hetdsl::{Program, Report};

use crate::samples::check::Verdict;

pub use report::{efficiency, print_result, Efficiency};

/// Names accepted on the command line, in the order `all` runs them.
pub const NAMES: [&str; 4] = ["nbody", "jacobi", "blackscholes", "chain"];

/// Problem scale: `Tiny` for the tests, `Small` for PoCL on a laptop, `Large` (the default)
/// for two H200s and a many-core CPU; or the benchmark's size parameter itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    Tiny,
    Small,
    Large,
    /// Bodies, grid side, options or elements (a multiple of the work-group size).
    Exactly(usize),
}

impl std::str::FromStr for Scale {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "tiny" => Scale::Tiny,
            "small" => Scale::Small,
            "large" => Scale::Large,
            n => {
                Scale::Exactly(n.parse().ok().filter(|n| *n > 0).ok_or_else(|| {
                    format!("`--size {n}`: expected tiny, small, large or a count")
                })?)
            }
        })
    }
}

impl Scale {
    /// The size parameter for a benchmark whose sizes are `[tiny, small, large]`.
    pub fn pick(self, sizes: [usize; 3]) -> usize {
        match self {
            Scale::Tiny => sizes[0],
            Scale::Small => sizes[1],
            Scale::Large => sizes[2],
            Scale::Exactly(n) => n,
        }
    }
}

/// What a run of the benchmarks does.
#[derive(Debug, Clone)]
pub struct Config {
    pub scale: Scale,
    /// Steps of every loop; the benchmark's default if `None`.
    pub steps: Option<usize>,
    /// Positions (in the program's devices) of the devices used.
    pub devices: Vec<usize>,
    /// A loop stops early (after at least two steps) once it has run this long; the steps it
    /// ran are reported and checked.
    pub budget_seconds: f64,
    /// Session launches are submitted ([`hetdsl::SessionLaunch::submit`]): a relaunch that
    /// replays a balanced split with its inputs in place is queued and the loop does not wait
    /// for it; the loop ends with [`hetdsl::Session::finish`].
    pub submit: bool,
    /// Steps of the one-shot loop, if fewer than `steps` (it is the slow one).
    pub oneshot_steps: Option<usize>,
    /// Which variants run: any of `single`, `oneshot`, `session`, `opencl3`.
    pub variants: Vec<String>,
}

impl Config {
    pub fn wants(&self, variant: &str) -> bool {
        self.variants.iter().any(|v| v == variant)
    }
}

/// The variants in the order they run.
pub const VARIANTS: [&str; 4] = ["single", "oneshot", "session", "opencl3"];

/// One timed loop: the seconds of every step (all its launches) and of the whole loop.
#[derive(Debug, Clone, Default)]
pub struct LoopRun {
    pub step_seconds: Vec<f64>,
    pub loop_seconds: f64,
    /// Each step's reports (one per launch), where the variant has them.
    pub reports: Vec<Vec<Report>>,
    /// Submitted loops: the host's time in each step's submit calls (the step times become
    /// the loop's mean once it has ended).
    pub submit_seconds: Vec<f64>,
}

impl LoopRun {
    pub fn steps(&self) -> usize {
        self.step_seconds.len()
    }
}

/// Runs `step(k)` for `k` in `0..steps`, timing each, stopping early (after at least two
/// steps) once `budget_seconds` have passed.
/// A session variant's label: a device alone is the `single` baseline, several the `session`.
pub fn session_label(devices: &[usize]) -> &'static str {
    if devices.len() == 1 {
        "single"
    } else {
        "session"
    }
}

/// Start a session launch as the run asks: `run` (its report now) or `submit` (reports later,
/// from [`finish_submitted`]).
pub fn go(cfg: &Config, launch: hetdsl::SessionLaunch<'_>) -> hetdsl::Result<Option<Report>> {
    if cfg.submit {
        launch.submit().map(|()| None)
    } else {
        launch.run().map(Some)
    }
}

/// After a loop of submitted launches: wait for the last, count the wait in the loop, and
/// deal the reports back to their steps. The first step ran to its end (nothing to replay
/// yet: its time is its own, uploads and warm-up included); the host saw no later step end,
/// so each of those is their mean.
pub fn finish_submitted(
    cfg: &Config,
    session: &hetdsl::Session,
    run: &mut LoopRun,
    per_step: usize,
) -> hetdsl::Result<()> {
    if !cfg.submit {
        return Ok(());
    }
    let t = Instant::now();
    let reports = session.finish()?;
    run.loop_seconds += t.elapsed().as_secs_f64();
    run.submit_seconds = run.step_seconds.clone();
    if let Some((&first, rest)) = run.step_seconds.split_first() {
        let mean = (run.loop_seconds - first).max(0.0) / rest.len().max(1) as f64;
        run.step_seconds = std::iter::once(first).chain(rest.iter().map(|_| mean)).collect();
    }
    run.reports = reports.chunks(per_step.max(1)).map(<[Report]>::to_vec).collect();
    Ok(())
}

pub fn timed_loop(
    steps: usize,
    budget_seconds: f64,
    mut step: impl FnMut(usize) -> hetdsl::Result<Vec<Report>>,
) -> hetdsl::Result<LoopRun> {
    let mut run = LoopRun::default();
    let start = Instant::now();
    for k in 0..steps {
        let t = Instant::now();
        let reports = step(k)?;
        run.step_seconds.push(t.elapsed().as_secs_f64());
        run.reports.push(reports);
        if k >= 1 && start.elapsed().as_secs_f64() > budget_seconds {
            break;
        }
    }
    run.loop_seconds = start.elapsed().as_secs_f64();
    Ok(run)
}

/// One variant's outcome.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Variant {
    /// `single`, `oneshot`, `session` or `opencl3`.
    pub variant: String,
    /// Positions (in the program's devices) of the devices it ran on.
    pub devices: Vec<usize>,
    pub steps: usize,
    pub steps_done: usize,
    /// Before the loop: the session and its buffers (uploads included, where made then).
    pub setup_seconds: f64,
    pub median_step_seconds: Option<f64>,
    pub mean_step_seconds: Option<f64>,
    /// The median of the steps after the first (the first pays for uploads and warm-up).
    pub median_from_second: Option<f64>,
    pub loop_seconds: f64,
    /// Bytes the session moved per step (host to device + device to device), when it counts.
    pub moved_per_step: Option<Vec<u64>>,
    /// Bytes read back per step (device to host), when the session counts them.
    pub read_back_per_step: Option<Vec<u64>>,
    /// The fewest bytes into the devices that each step needed, given the partitions of the
    /// launches before it and its own. Per step a session may move less (a kernel's first
    /// launch on a device warms up on a work-group at each end, and a later step may find
    /// those inputs there); summed from the first step on, never.
    pub minimum_per_step: Option<Vec<u64>>,
    /// The fewest bytes each step would need had the partition stayed as this step's: the
    /// halo rows across its boundaries, the all-gather of positions, nothing for 1:1 data.
    pub steady_per_step: Option<Vec<u64>>,
    /// Per device (as the reports number them): the share of the balancing units whose output
    /// it computed, over the steps after the first (all steps when there is one).
    pub share: Vec<(usize, f64)>,
    /// Per device: the median over the steps after the first of the seconds its kernels ran
    /// in a step (from the devices' own clocks), beside the step's time: what it idled.
    pub busy_per_step: Vec<(usize, f64)>,
    /// Submitted loops: the median over the steps after the first of the host's time in the
    /// step's submit calls. Well under the step time, the host has time to spare. Near it, either
    /// the host or the devices set the pace: a submit also waits for the oldest launch once the
    /// session's queue is full (`RUST_LOG=hetdsl=debug` tells the wait apart, the `queued launch`
    /// event, summed up by `scripts/queued-gaps.sh`).
    pub submit_per_step: Option<f64>,
    /// How the launches after the first step were split: each balancer's name (a replay
    /// queued, a relaunch plan, the learned balancer, ...) and how many launches it split.
    pub splits: Vec<(String, usize)>,
    pub verdict: Verdict,
    /// How the check was made (whole problem, sample, one extra step, ...).
    pub check: String,
    /// Every step's seconds (empty for `opencl3`, which waits once for all its launches).
    pub step_seconds: Vec<f64>,
    /// Session variants: the seconds the reads of the results after the loop took (every range
    /// still on a device brought home), and the bytes those results hold.
    pub home: Option<(f64, u64)>,
    /// The launches of the first [`FIRST_STEPS_KEPT`] steps as they were split: a session that
    /// ends on the wrong split got there in its first launches, which the counts of `splits`
    /// do not show (JSON only).
    pub first_launches: Vec<LaunchSplit>,
}

/// Steps whose launches [`Variant::first_launches`] keeps.
pub const FIRST_STEPS_KEPT: usize = 4;

/// One launch as it was split.
#[derive(Debug, Clone, serde::Serialize)]
pub struct LaunchSplit {
    pub step: usize,
    pub kernel: String,
    pub balancer: String,
    /// Per merged package: the device (as the report numbers it), its first balancing unit,
    /// how many, and the seconds its kernel ran (from the device's clock) where known.
    pub packages: Vec<(usize, u64, u64, Option<f64>)>,
}

/// The launches of the first [`FIRST_STEPS_KEPT`] of `steps`, as they were split.
fn first_launches(steps: &[Vec<Report>]) -> Vec<LaunchSplit> {
    let launches = steps.iter().enumerate().take(FIRST_STEPS_KEPT);
    let per_step = launches.flat_map(|(step, reports)| reports.iter().map(move |r| (step, r)));
    per_step
        .map(|(step, r)| LaunchSplit {
            step,
            kernel: r.kernel.clone(),
            balancer: r.balancer.clone(),
            packages: (r.trace.iter().filter(|t| t.merged))
                .map(|t| (t.device, t.package.offset, t.package.len, t.kernel_seconds))
                .collect(),
        })
        .collect()
}

/// The steps after the first (the first pays for uploads and warm-up), or the only one.
fn after_first(steps: &[Vec<Report>]) -> &[Vec<Report>] {
    if steps.len() > 1 {
        &steps[1..]
    } else {
        steps
    }
}

/// Each device's share of the merged balancing units of `steps` after the first.
fn share(steps: &[Vec<Report>]) -> Vec<(usize, f64)> {
    let counted = after_first(steps);
    let mut units: Vec<(usize, u64)> = Vec::new();
    for t in counted.iter().flatten().flat_map(|r| &r.trace).filter(|t| t.merged) {
        match units.iter_mut().find(|u| u.0 == t.device) {
            Some(u) => u.1 += t.package.len,
            None => units.push((t.device, t.package.len)),
        }
    }
    units.sort();
    let total: u64 = units.iter().map(|u| u.1).sum();
    units.into_iter().map(|(d, n)| (d, n as f64 / total.max(1) as f64)).collect()
}

/// The balancers that split the launches of `steps` after the first, with their counts, in
/// order of first use.
fn splits(steps: &[Vec<Report>]) -> Vec<(String, usize)> {
    let mut out: Vec<(String, usize)> = Vec::new();
    for r in steps.iter().skip(1).flatten() {
        match out.iter_mut().find(|(name, _)| *name == r.balancer) {
            Some(entry) => entry.1 += 1,
            None => out.push((r.balancer.clone(), 1)),
        }
    }
    out
}

/// Each device's kernel seconds per step, the median over `steps` after the first.
fn busy(steps: &[Vec<Report>]) -> Vec<(usize, f64)> {
    let counted = after_first(steps);
    let mut devices: Vec<usize> =
        counted.iter().flatten().flat_map(|r| &r.trace).map(|t| t.device).collect();
    devices.sort_unstable();
    devices.dedup();
    // A step in which a device ran nothing counts as zero for it.
    devices
        .into_iter()
        .filter_map(|d| {
            let per_step: Vec<f64> = counted
                .iter()
                .map(|step| {
                    let mine = step.iter().flat_map(|r| &r.trace).filter(|t| t.device == d);
                    mine.map(|t| t.kernel_seconds.unwrap_or(0.0)).sum()
                })
                .collect();
            Some((d, median(&per_step)?))
        })
        .collect()
}

fn median(v: &[f64]) -> Option<f64> {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    match s.len() {
        0 => None,
        n if n % 2 == 1 => Some(s[n / 2]),
        n => Some(0.5 * (s[n / 2 - 1] + s[n / 2])),
    }
}

impl Variant {
    /// A variant from its timed loop and its check.
    pub fn new(
        variant: &str,
        devices: &[usize],
        steps: usize,
        setup_seconds: f64,
        run: &LoopRun,
        verdict: Verdict,
        check: &str,
    ) -> Variant {
        let s = &run.step_seconds;
        Variant {
            variant: variant.to_string(),
            devices: devices.to_vec(),
            steps,
            steps_done: s.len(),
            setup_seconds,
            median_step_seconds: median(s),
            mean_step_seconds: (!s.is_empty()).then(|| s.iter().sum::<f64>() / s.len() as f64),
            median_from_second: median(s.get(1..).unwrap_or(&[])),
            loop_seconds: run.loop_seconds,
            moved_per_step: None,
            read_back_per_step: None,
            minimum_per_step: None,
            steady_per_step: None,
            share: share(&run.reports),
            busy_per_step: busy(&run.reports),
            submit_per_step: median(run.submit_seconds.get(1..).unwrap_or(&[])),
            splits: splits(&run.reports),
            verdict,
            check: check.to_string(),
            step_seconds: s.clone(),
            home: None,
            first_launches: first_launches(&run.reports),
        }
    }

    /// The per-step time compared across variants: the median after the first step (the
    /// median of all when there is only one).
    pub fn step_time(&self) -> Option<f64> {
        self.median_from_second.or(self.median_step_seconds)
    }
}

/// Everything one benchmark measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct BenchResult {
    pub bench: String,
    pub describe: String,
    pub steps: usize,
    pub launches_per_step: usize,
    /// The session loops submitted their launches (`--submit`) rather than ran each to its end.
    pub submitted: bool,
    pub devices: Vec<String>,
    pub variants: Vec<Variant>,
    /// Position of the fastest device alone (by [`Variant::step_time`]).
    pub best_single: Option<usize>,
    pub efficiency: Option<Efficiency>,
}

/// A benchmark: its problem, built for a program holding `kernels/iterate.cl`.
pub trait Iterative {
    fn name(&self) -> &'static str;
    fn describe(&self) -> String;
    fn steps(&self) -> usize;
    /// Kernel launches per step (1 unless the step chains several kernels).
    fn launches_per_step(&self) -> usize {
        1
    }
    /// The loop on a session over `devices`, data resident, then the check.
    fn session(
        &mut self,
        program: &Program,
        devices: &[usize],
        cfg: &Config,
    ) -> Result<Variant, String>;
    /// The loop with one `Launch::run` per launch over `devices`, then the check.
    fn oneshot(
        &mut self,
        program: &Program,
        devices: &[usize],
        cfg: &Config,
    ) -> Result<Variant, String>;
    /// The hand-written OpenCL loop on the device at program position `position` (unified
    /// index `unified`), if this benchmark has one.
    fn handwritten(
        &mut self,
        _position: usize,
        _unified: usize,
        _cfg: &Config,
    ) -> Option<Result<Variant, String>> {
        None
    }
}

/// The benchmark `name` at `scale`, or why not: an unknown name, or a size that is not a
/// multiple of its work-group size (jacobi: a side of at least two work-groups).
/// The host's memory in bytes (`MemTotal` of /proc/meminfo), where it can be read.
fn host_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

pub fn create(
    name: &str,
    scale: Scale,
    steps: Option<usize>,
) -> Result<Box<dyn Iterative>, String> {
    // The work-group size, the fewest groups, and about how many host bytes each body,
    // option, element or (Jacobi) grid cell takes with its copies and reference.
    let (unit, least, per) = match name {
        "nbody" => (crate::samples::iterative::nbody::LWS, 1, 64),
        "jacobi" => (crate::samples::iterative::jacobi::LWS[0], 2, 16),
        "blackscholes" => (crate::samples::iterative::blackscholes::LWS, 1, 32),
        "chain" => (crate::samples::iterative::chain::LWS, 1, 16),
        _ => return Err(format!("unknown benchmark `{name}`: {}", NAMES.join(", "))),
    };
    if let Scale::Exactly(n) = scale {
        if n % unit != 0 || n < least * unit {
            return Err(format!(
                "{name}: size {n} must be a multiple of {unit} (its work-group size), at least {}",
                least * unit
            ));
        }
        // A size past the host's memory is refused here rather than aborting an allocation.
        let items = if name == "jacobi" { n as u128 * n as u128 } else { n as u128 };
        let need = items * per;
        if need > host_memory().map_or(u64::MAX as u128, u128::from) {
            return Err(format!(
                "{name}: size {n} needs about {} GiB of host memory, more than this machine has",
                need >> 30
            ));
        }
    }
    Ok(match name {
        "nbody" => Box::new(nbody::NBody::new(scale, steps)),
        "jacobi" => Box::new(jacobi::Jacobi::new(scale, steps)),
        "blackscholes" => Box::new(blackscholes::BlackScholes::new(scale, steps)),
        _ => Box::new(chain::Chain::new(scale, steps)),
    })
}

/// The variants `cfg` asks for, each device alone first. A variant that fails is reported as
/// a failed check with the error, and the others still run.
pub fn run_bench(bench: &mut dyn Iterative, program: &Program, cfg: &Config) -> BenchResult {
    let names = program.devices();
    let steps = bench.steps();
    let failed = |variant: &str, devices: &[usize], e: String| {
        Variant::new(
            variant,
            devices,
            steps,
            0.0,
            &LoopRun::default(),
            Verdict::new(false, 0, e),
            "",
        )
    };
    let mut variants = Vec::new();
    if cfg.wants("single") {
        for &d in &cfg.devices {
            let v = bench.session(program, &[d], cfg).unwrap_or_else(|e| failed("single", &[d], e));
            variants.push(v);
        }
    }
    if cfg.wants("oneshot") {
        let v = bench
            .oneshot(program, &cfg.devices, cfg)
            .unwrap_or_else(|e| failed("oneshot", &cfg.devices, e));
        variants.push(v);
    }
    if cfg.wants("session") {
        let v = bench
            .session(program, &cfg.devices, cfg)
            .unwrap_or_else(|e| failed("session", &cfg.devices, e));
        variants.push(v);
    }
    let best_single = variants
        .iter()
        .filter(|v| v.devices.len() == 1 && v.variant == "single" && v.verdict.correct)
        .filter_map(|v| Some((v.devices[0], v.step_time()?)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(d, _)| d);
    if cfg.wants("opencl3") {
        // The device the best single session ran on (the first selected one otherwise), so the
        // two measure the same hardware.
        let d = best_single.unwrap_or(cfg.devices[0]);
        let unified = names.get(d).map_or(d, |i| i.index);
        if let Some(v) = bench.handwritten(d, unified, cfg) {
            variants.push(v.unwrap_or_else(|e| failed("opencl3", &[d], e)));
        }
    }
    let efficiency = efficiency(&variants);
    BenchResult {
        submitted: cfg.submit,
        bench: bench.name().to_string(),
        describe: bench.describe(),
        steps: bench.steps(),
        launches_per_step: bench.launches_per_step(),
        devices: cfg
            .devices
            .iter()
            .map(|&d| names.get(d).map_or(String::new(), |i| i.name.clone()))
            .collect(),
        variants,
        best_single,
        efficiency,
    }
}

/// The program of the iterative kernels for `runtime`'s devices.
pub fn program(runtime: &hetdsl::Runtime) -> hetdsl::Result<Program> {
    let source = hetdsl::KernelSource::from_file(crate::kernel_path("iterate.cl"), &[])?;
    runtime.program(&source)
}

/// Milliseconds with three decimals, or `-`.
pub(crate) fn ms(s: Option<f64>) -> String {
    s.map_or("-".into(), |s| format!("{:.3}", s * 1e3))
}

/// The error of a hetdsl call, as the runner's message.
pub(crate) fn say(e: hetdsl::Error) -> String {
    e.to_string()
}

/// One-shot steps: at most `cfg.oneshot_steps`.
pub(crate) fn oneshot_steps(cfg: &Config, steps: usize) -> usize {
    cfg.oneshot_steps.map_or(steps, |n| n.min(steps)).max(1)
}
