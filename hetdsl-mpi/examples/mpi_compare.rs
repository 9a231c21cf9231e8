//! Compute-bound kernels co-executed by one process over every device of a machine, against
//! the same kernels across MPI ranks of that machine (each rank some of its devices): time,
//! bytes moved and time not computing per rank. Every run is checked against a CPU reference.
//!
//! ```text
//! mpi_compare single [--scale S] [--reps N] [--json FILE]    one process, no MPI, every device
//! mpirun -n R mpi_compare ranks [--scale S] [--reps N] [--json FILE]
//! mpi_compare table SINGLE.json RANKS.json [--json FILE]     the comparison, from the two
//! ```
//!
//! Kernels: Mandelbrot (2-D, irregular), NBody (a `whole` input broadcast to every rank),
//! Binomial options (`__local` memory, one output per work-group) and Taylor (2-D, regular).
//! Per rank the ranks' table gives the bytes rank 0 sent it and received from it, its ranges,
//! and the seconds before its last range was merged that it was not computing: setting up each
//! range's run on its node, and messages and waiting (`RankReport`).
//!
//! `--scale` multiplies every problem's size (1: sized for two H200s and a 32-core CPU, a
//! fraction of a second to a second or two each, estimated from FP32 peaks: Mandelbrot
//! 6144×4096 pixels to 131 072 iterations, 786 432 bodies, 33.5 million options of 254 steps,
//! Taylor 8192² to order 256); each kernel runs once to warm up, then `--reps` times (default 3), and the
//! medians are reported. `--kernels a,b` runs a subset. Across ranks, a repeated call runs
//! the plan remembered from the call before (`hetdsl_mpi::plan`); each call's line says which
//! form it ran, and `--fresh` runs every call fresh, `--plan-tail S` sets the plan's tail,
//! `--no-queue` hands a rank its next range only once it has answered the last (no inputs
//! moving while it computes), `--piece-min S` runs a node's cut range in pieces only where each
//! computes at least S seconds (`recall::PieceRule`). `scripts/mpi-compare.sh` runs all three steps on a machine where `scripts/mpi-stage.sh` staged the binary. Exit status 0
//! only when every output was right.

use std::process::ExitCode;
use std::time::Instant;

use hetdsl::{KernelSource, Launch, Pattern, Pod, Program, Runtime};
use hetdsl_mpi::{Cluster, ClusterLaunch, ClusterReport};

/// What one launch builder needs, so that each kernel's arguments are written once for the
/// single-process [`Launch`] and the cluster's [`ClusterLaunch`].
trait Args<'a>: Sized {
    fn g(self, global: &[usize], local: &[usize]) -> Self;
    fn inp<T: Pod>(self, data: &'a [T], pattern: Pattern) -> Self;
    fn out<T: Pod>(self, data: &'a mut [T], pattern: Pattern) -> Self;
    fn val<T: Pod>(self, value: T) -> Self;
    fn loc<T: Pod>(self, count: usize) -> Self;
}

impl<'a> Args<'a> for Launch<'a> {
    fn g(self, global: &[usize], local: &[usize]) -> Self {
        self.global(global).local(local)
    }
    fn inp<T: Pod>(self, data: &'a [T], pattern: Pattern) -> Self {
        self.input(data, pattern)
    }
    fn out<T: Pod>(self, data: &'a mut [T], pattern: Pattern) -> Self {
        self.output(data, pattern)
    }
    fn val<T: Pod>(self, value: T) -> Self {
        self.scalar(value)
    }
    fn loc<T: Pod>(self, count: usize) -> Self {
        self.local_buffer::<T>(count)
    }
}

impl<'a> Args<'a> for ClusterLaunch<'a> {
    fn g(self, global: &[usize], local: &[usize]) -> Self {
        self.global(global).local(local)
    }
    fn inp<T: Pod>(self, data: &'a [T], pattern: Pattern) -> Self {
        self.input(data, pattern)
    }
    fn out<T: Pod>(self, data: &'a mut [T], pattern: Pattern) -> Self {
        self.output(data, pattern)
    }
    fn val<T: Pod>(self, value: T) -> Self {
        self.scalar(value)
    }
    fn loc<T: Pod>(self, count: usize) -> Self {
        self.local_buffer::<T>(count)
    }
}

const NAMES: [&str; 4] = ["mandelbrot", "nbody", "binomial", "taylor"];

/// A multiple of `of`, at least `of`, near `x`.
fn round(x: f64, of: usize) -> usize {
    ((x / of as f64).round() as usize).max(1) * of
}

/// Indices spread evenly over `0..n` (at most `count`), for the CPU reference.
fn sample(n: usize, count: usize) -> Vec<usize> {
    let step = (n / count.max(1)).max(1);
    (0..n).step_by(step).map(|i| (i + step / 2).min(n - 1)).collect()
}

/// One kernel's problem: inputs made on the rank that holds the data (empty elsewhere).
enum Work {
    Mandelbrot {
        width: usize,
        height: usize,
        max: u32,
        counts: Vec<u32>,
    },
    NBody {
        n: usize,
        position: Vec<[f32; 4]>,
        velocity: Vec<[f32; 4]>,
        pos: Vec<[f32; 4]>,
        vel: Vec<[f32; 4]>,
    },
    Binomial {
        random: Vec<[f32; 4]>,
        groups: usize,
        prices: Vec<[f32; 4]>,
    },
    Taylor {
        width: usize,
        height: usize,
        order: i32,
        approx: Vec<f32>,
    },
}

const STEPS: usize = 254;
const DT: f32 = 0.005;
const SOFTENING2: f32 = 500.0;
const TAYLOR_X0: f32 = 0.5;
const TAYLOR_Y0: f32 = 0.8;
const MANDEL: (f32, f32) = (-2.0, 1.0);

/// A small reproducible generator (the inputs need only be the same on every run).
struct Lcg(u64);
impl Lcg {
    fn unit(&mut self) -> f32 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((self.0 >> 40) as f32) / (1u64 << 24) as f32
    }
}

impl Work {
    fn new(name: &str, scale: f64, holds: bool) -> Work {
        let keep = |n: usize| if holds { n } else { 0 };
        match name {
            "mandelbrot" => {
                // Deep iterations over few pixels: compute, not the image's transfer, dominates.
                let height = round(4096.0 * scale.sqrt(), 64);
                let width = round(1.5 * height as f64, 64);
                let counts = vec![0; keep(width * height)];
                Work::Mandelbrot { width, height, max: 131_072, counts }
            }
            "nbody" => {
                let n = round(786_432.0 * scale.sqrt(), 128);
                let mut g = Lcg(0x00B0_D1E5);
                let mut r = |lo: f32, hi: f32| lo + (hi - lo) * g.unit();
                let position = (0..keep(n))
                    .map(|_| [r(3.0, 50.0), r(3.0, 50.0), r(3.0, 50.0), r(1.0, 1000.0)])
                    .collect();
                let velocity =
                    (0..keep(n)).map(|_| [r(-1.0, 1.0), r(-1.0, 1.0), r(-1.0, 1.0), 0.0]).collect();
                let z = vec![[0.0; 4]; keep(n)];
                Work::NBody { n, position, velocity, pos: z.clone(), vel: z }
            }
            "binomial" => {
                // At most 8 Mi groups of 255: every global id stays below 2^31 (NVIDIA's OpenCL
                // faulted in launches reaching past it).
                let groups = round(8_388_608.0 * scale, 64).min(8 << 20);
                let mut g = Lcg(0xB1_0001);
                let random = (0..keep(groups)).map(|_| [g.unit(), g.unit(), g.unit(), g.unit()]);
                Work::Binomial {
                    random: random.collect(),
                    groups,
                    prices: vec![[0.0; 4]; keep(groups)],
                }
            }
            _ => {
                let width = round(8192.0 * scale.sqrt(), 64);
                let height = round(8192.0 * scale.sqrt(), 64);
                Work::Taylor { width, height, order: 256, approx: vec![0.0; keep(width * height)] }
            }
        }
    }

    fn source(&self) -> KernelSource {
        match self {
            Work::Mandelbrot { .. } => KernelSource::from_text(
                "cluster_tests.cl",
                include_str!("../kernels/cluster_tests.cl"),
            ),
            Work::NBody { .. } => {
                KernelSource::from_text("nbody.cl", include_str!("../../kernels/nbody.cl"))
            }
            Work::Binomial { .. } => {
                KernelSource::from_text("binomial.cl", include_str!("../../kernels/binomial.cl"))
            }
            Work::Taylor { .. } => {
                KernelSource::from_text("taylor.cl", include_str!("../../kernels/taylor.cl"))
            }
        }
    }

    fn kernel(&self) -> &'static str {
        match self {
            Work::Mandelbrot { .. } => "mandelbrot",
            Work::NBody { .. } => "nbody_step",
            Work::Binomial { .. } => "binomial_options",
            Work::Taylor { .. } => "taylor2d",
        }
    }

    fn describe(&self) -> String {
        match self {
            Work::Mandelbrot { width, height, max, .. } => {
                format!("{width}x{height} pixels, {max} iterations")
            }
            Work::NBody { n, .. } => format!("{n} bodies"),
            Work::Binomial { groups, .. } => format!("{} options, {STEPS} steps", groups * 4),
            Work::Taylor { width, height, order, .. } => format!("{width}x{height}, order {order}"),
        }
    }

    /// The kernel's arguments on `b`.
    fn args<'a, B: Args<'a>>(&'a mut self, b: B) -> B {
        let step = |height: usize| 2.0 / height as f32;
        match self {
            Work::Mandelbrot { width, height, max, counts } => b
                .g(&[*width, *height], &[16, 4])
                .out(counts, Pattern::ONE_TO_ONE)
                .val(MANDEL.0)
                .val(MANDEL.1)
                .val(step(*height))
                .val(*max),
            Work::NBody { n, position, velocity, pos, vel } => b
                .g(&[*n], &[128])
                .inp(position, Pattern::Whole)
                .inp(velocity, Pattern::ONE_TO_ONE)
                .val(*n as i32)
                .val(DT)
                .val(SOFTENING2)
                .out(pos, Pattern::ONE_TO_ONE)
                .out(vel, Pattern::ONE_TO_ONE),
            Work::Binomial { random, groups, prices } => {
                let per_group = Pattern::ratio(1, (STEPS + 1) as u64).unwrap_or(Pattern::Whole);
                b.g(&[*groups * (STEPS + 1)], &[STEPS + 1])
                    .val(STEPS as i32)
                    .inp(random, per_group)
                    .out(prices, per_group)
                    .loc::<[f32; 4]>(STEPS + 1)
                    .loc::<[f32; 4]>(STEPS + 1)
            }
            Work::Taylor { width, height, order, approx } => {
                let s = 2.0 / *width as f32;
                let (x_min, y_min) = (TAYLOR_X0 - 1.0, TAYLOR_Y0 - s * *height as f32 / 2.0);
                b.g(&[*width, *height], &[16, 8])
                    .out(approx, Pattern::ONE_TO_ONE)
                    .val(TAYLOR_X0)
                    .val(TAYLOR_Y0)
                    .val(x_min)
                    .val(y_min)
                    .val(s)
                    .val(*width as i32)
                    .val(*order)
            }
        }
    }

    /// Clears the outputs, so that a run that wrote nothing cannot pass on an earlier one's.
    fn clear(&mut self) {
        match self {
            Work::Mandelbrot { counts, .. } => counts.fill(u32::MAX),
            Work::NBody { pos, vel, .. } => {
                pos.fill([f32::NAN; 4]);
                vel.fill([f32::NAN; 4]);
            }
            Work::Binomial { prices, .. } => prices.fill([f32::NAN; 4]),
            Work::Taylor { approx, .. } => approx.fill(f32::NAN),
        }
    }

    /// The outputs against a CPU reference at sampled points: `None` when right.
    fn wrong(&self) -> Option<String> {
        match self {
            Work::Mandelbrot { width, height, max, counts } => {
                mandelbrot_wrong(*width, *height, *max, counts)
            }
            Work::NBody { position, velocity, pos, vel, .. } => {
                nbody_wrong(position, velocity, pos, vel)
            }
            Work::Binomial { random, prices, .. } => {
                sample(prices.len() * 4, 1024).into_iter().find_map(|k| {
                    let want = binomial_price(random[k / 4][k % 4] as f64);
                    let got = prices[k / 4][k % 4] as f64;
                    let ok = (got - want).abs() <= 1e-3 * want.abs().max(1.0);
                    (!ok).then(|| format!("option {k}: {got} not {want}"))
                })
            }
            Work::Taylor { width, height, order, approx } => {
                taylor_wrong(*width, *height, *order, approx)
            }
        }
    }
}

fn mandelbrot_wrong(width: usize, height: usize, max: u32, counts: &[u32]) -> Option<String> {
    let step = 2.0f32 / height as f32;
    let points = sample(width * height, 4096);
    let mut off = 0;
    for &p in &points {
        let (column, row) = (p % width, p / width);
        let cx = MANDEL.0 + column as f32 * step;
        let cy = MANDEL.1 - row as f32 * step;
        let i = hetdsl_mpi::reference::mandelbrot_pixel(cx, cy, max);
        if counts[p] == u32::MAX {
            return Some(format!("pixel ({column}, {row}) was never written"));
        }
        off += usize::from(counts[p] != i);
    }
    // Exact on every device with contraction off; a few chaotic boundary pixels may still
    // escape one iteration apart where a driver rounds differently. A misplaced range does not
    // stay under 1 %.
    (off * 100 > points.len())
        .then(|| format!("{off} of {} sampled pixels differ from the CPU", points.len()))
}

fn nbody_wrong(
    position: &[[f32; 4]],
    velocity: &[[f32; 4]],
    pos: &[[f32; 4]],
    vel: &[[f32; 4]],
) -> Option<String> {
    let (mut dp, mut np, mut dv, mut nv) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
    for i in sample(position.len(), 64) {
        let me = position[i].map(f64::from);
        let mut acc = [0.0f64; 3];
        for other in position {
            let r: [f64; 3] = std::array::from_fn(|d| other[d] as f64 - me[d]);
            let d2 = r[0] * r[0] + r[1] * r[1] + r[2] * r[2] + SOFTENING2 as f64;
            let s = other[3] as f64 / (d2 * d2.sqrt());
            (0..3).for_each(|d| acc[d] += s * r[d]);
        }
        let (v, dt) = (velocity[i].map(f64::from), DT as f64);
        for d in 0..3 {
            let want_p = me[d] + v[d] * dt + 0.5 * acc[d] * dt * dt;
            let want_v = v[d] + acc[d] * dt;
            dp += (pos[i][d] as f64 - want_p).powi(2);
            np += want_p * want_p;
            dv += (vel[i][d] as f64 - want_v).powi(2);
            nv += want_v * want_v;
        }
    }
    let (ep, ev) = ((dp / np).sqrt(), (dv / nv).sqrt());
    // Positions: the SDK's relative L2 of 1e-5 up to the base size of 786 432 bodies, growing
    // with the bodies beyond (each work-item's float sum over every body loses more: 2.3e-5 was
    // measured at 2.2 million on H200s, the same in one process and in two ranks); velocities,
    // the float sum against a double one, 1e-3. A body given another's data is off by order 1.
    // NaN fails.
    let positions = 1e-5 * (position.len() as f64 / 786_432.0).max(1.0);
    (!(ep < positions && ev < 1e-3))
        .then(|| format!("relative L2 {ep:e} (positions), {ev:e} (velocities)"))
}

fn binomial_price(r: f64) -> f64 {
    let (risk_free, volatility) = (0.02f64, 0.30f64);
    let (spot, strike, years) =
        (5.0 * (1.0 - r) + 30.0 * r, 1.0 * (1.0 - r) + 100.0 * r, 0.25 * (1.0 - r) + 10.0 * r);
    let dt = years / STEPS as f64;
    let vol_sqrt_dt = volatility * dt.sqrt();
    let growth = (risk_free * dt).exp();
    let (up, down) = (vol_sqrt_dt.exp(), (-vol_sqrt_dt).exp());
    let p_up = (growth - down) / (up - down);
    let (pu, pd) = (p_up / growth, (1.0 - p_up) / growth);
    let mut value: Vec<f64> = (0..=STEPS)
        .map(|k| (spot * (vol_sqrt_dt * (2.0 * k as f64 - STEPS as f64)).exp() - strike).max(0.0))
        .collect();
    for level in (1..=STEPS).rev() {
        for k in 0..level {
            value[k] = pu * value[k + 1] + pd * value[k];
        }
    }
    value[0]
}

fn taylor_wrong(width: usize, height: usize, order: i32, approx: &[f32]) -> Option<String> {
    let s = 2.0 / width as f32;
    let (x_min, y_min) = (TAYLOR_X0 - 1.0, TAYLOR_Y0 - s * height as f32 / 2.0);
    let k = order.max(0) as usize;
    let derivative: Vec<f64> = (0..=k)
        .map(|n| (TAYLOR_Y0 as f64 + n as f64 * std::f64::consts::FRAC_PI_2).sin())
        .collect();
    let factorial: Vec<f64> = (0..=k).map(|i| (1..=i).map(|j| j as f64).product()).collect();
    sample(width * height, 256).into_iter().find_map(|p| {
        let dx = (x_min + (p % width) as f32 * s - TAYLOR_X0) as f64;
        let dy = (y_min + (p / width) as f32 * s - TAYLOR_Y0) as f64;
        let mut total = 0.0;
        for m in 0..=k {
            for n in 0..=k - m {
                total += derivative[n] * dx.powi(m as i32) / factorial[m] * dy.powi(n as i32)
                    / factorial[n];
            }
        }
        let want = (TAYLOR_X0 as f64).exp() * total;
        // Float rounding over the sum: a few ulps of the terms' magnitudes, exp(x0+|dx|+|dy|).
        let bound = 1e-5 * (TAYLOR_X0 as f64 + dx.abs() + dy.abs()).exp();
        let got = approx[p] as f64;
        let ok = (got - want).abs() <= bound;
        (!ok).then(|| format!("point {p}: {got} not {want}"))
    })
}

/// The median of some seconds (of 3: the middle one).
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

struct Opts {
    scale: f64,
    reps: usize,
    json: Option<String>,
    kernels: Vec<String>,
    files: Vec<String>,
    /// Ranks: `--plan-tail S` (a repeated call's tail share), `--fresh` (nothing remembered),
    /// `--no-queue` (a rank gets its next range only once it has answered the last),
    /// `--piece-min S` (a node's pieces of a cut range compute at least S seconds).
    plan_tail: Option<f64>,
    fresh: bool,
    no_queue: bool,
    piece_min: Option<f64>,
}

fn options(args: &[String]) -> Result<Opts, String> {
    let mut o = Opts {
        scale: 1.0,
        reps: 3,
        json: None,
        kernels: Vec::new(),
        files: Vec::new(),
        plan_tail: None,
        fresh: false,
        no_queue: false,
        piece_min: None,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().cloned().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--scale" => o.scale = value()?.parse().map_err(|_| "--scale: a number")?,
            "--reps" => o.reps = value()?.parse().map_err(|_| "--reps: a whole number")?,
            "--json" => o.json = Some(value()?),
            "--kernels" => o.kernels = value()?.split(',').map(str::to_string).collect(),
            "--plan-tail" => {
                o.plan_tail = Some(value()?.parse().map_err(|_| "--plan-tail: a number")?)
            }
            "--fresh" => o.fresh = true,
            "--no-queue" => o.no_queue = true,
            "--piece-min" => {
                o.piece_min = Some(value()?.parse().map_err(|_| "--piece-min: seconds")?)
            }
            f => o.files.push(f.to_string()),
        }
    }
    if o.kernels.is_empty() {
        o.kernels = NAMES.iter().map(|s| s.to_string()).collect();
    }
    if o.scale.is_nan()
        || o.scale <= 0.0
        || o.reps == 0
        || o.kernels.iter().any(|k| !NAMES.contains(&k.as_str()))
    {
        return Err(format!("--scale > 0, --reps > 0, --kernels among {}", NAMES.join(",")));
    }
    Ok(o)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: mpi_compare single|ranks [--scale S] [--reps N] [--kernels a,b] [--json FILE]\n       mpi_compare table SINGLE.json RANKS.json [--json FILE]";
    let (mode, rest) = match args.split_first() {
        Some((m, rest)) => (m.as_str(), rest),
        None => ("", &args[..]),
    };
    let opts = match options(rest) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("mpi_compare: {e}\n{usage}");
            return ExitCode::from(2);
        }
    };
    let ok = match mode {
        "single" => single(&opts),
        "ranks" => ranks(&opts),
        "table" => table(&opts),
        _ => {
            eprintln!("{usage}");
            return ExitCode::from(2);
        }
    };
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn devices_line(who: &str, program: &Program) {
    for d in program.devices() {
        println!(
            "{who}: device {} {} [{:?}], {} compute units",
            d.index, d.name, d.kind, d.compute_units
        );
    }
}

fn write(path: &Option<String>, value: &serde_json::Value) {
    if let Some(p) = path {
        if let Err(e) = std::fs::write(p, serde_json::to_string_pretty(value).unwrap_or_default()) {
            eprintln!("{p}: {e}");
        }
    }
}

/// One process over every device `HETDSL_DEVICES` leaves it (all by default), no MPI.
fn single(o: &Opts) -> bool {
    let runtime = match Runtime::new() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("single: {e}");
            return false;
        }
    };
    let mut rows = Vec::new();
    let mut all_ok = true;
    for name in &o.kernels {
        let mut work = Work::new(name, o.scale, true);
        let outcome = (|| -> hetdsl::Result<serde_json::Value> {
            let program = runtime.program(&work.source())?;
            if rows.is_empty() {
                devices_line("single", &program);
            }
            let (mut roi, mut wall, mut verdicts) = (Vec::new(), Vec::new(), Vec::new());
            for rep in 0..=o.reps {
                work.clear();
                let kernel = work.kernel();
                let t = Instant::now();
                let report = work.args(program.launch(kernel)).run()?;
                let seconds = t.elapsed().as_secs_f64();
                if rep > 0 {
                    roi.push(report.roi_seconds);
                    wall.push(seconds);
                    verdicts.push(work.wrong());
                }
            }
            let wrong = verdicts.into_iter().flatten().next();
            Ok(serde_json::json!({
                "kernel": name, "problem": work.describe(), "roi_s": median(roi.clone()),
                "wall_s": median(wall.clone()), "roi_all_s": roi, "wall_all_s": wall,
                "correct": wrong.is_none(), "wrong": wrong,
            }))
        })();
        match outcome {
            Ok(row) => {
                let ok = row["correct"].as_bool().unwrap_or(false);
                println!(
                    "single {name} ({}): roi {:.4} s, wall {:.4} s, {}",
                    work.describe(),
                    row["roi_s"].as_f64().unwrap_or(f64::NAN),
                    row["wall_s"].as_f64().unwrap_or(f64::NAN),
                    if ok { "correct".to_string() } else { format!("WRONG: {}", row["wrong"]) }
                );
                all_ok &= ok;
                rows.push(row);
            }
            Err(e) => {
                eprintln!("single {name}: {e}");
                all_ok = false;
            }
        }
    }
    write(&o.json, &serde_json::json!({ "mode": "single", "scale": o.scale, "kernels": rows }));
    all_ok
}

/// The same kernels across the job's ranks; rank 0 holds the data, checks and writes.
fn ranks(o: &Opts) -> bool {
    let cluster = match Cluster::init() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("ranks: {e}");
            return false;
        }
    };
    let root = cluster.rank() == 0;
    let runtime = Runtime::new().unwrap_or_else(|e| {
        eprintln!("rank {}: {e}", cluster.rank());
        cluster.abort(2)
    });
    let mut rows = Vec::new();
    let mut all_ok = true;
    for (k, name) in o.kernels.iter().enumerate() {
        let mut work = Work::new(name, o.scale, root);
        let program = runtime.program(&work.source()).unwrap_or_else(|e| {
            eprintln!("rank {}: {name}: {e}", cluster.rank());
            cluster.abort(2)
        });
        if k == 0 {
            devices_line(&format!("rank {} @ {}", cluster.rank(), cluster.host()), &program);
        }
        let (mut roi, mut wall, mut reports, mut wrong) =
            (Vec::new(), Vec::new(), Vec::new(), None);
        let mut failed = None;
        for rep in 0..=o.reps {
            work.clear();
            let kernel = work.kernel();
            let t = Instant::now();
            let mut launch = work.args(cluster.launch(&program, kernel)).remember(!o.fresh);
            if o.no_queue {
                launch = launch.queue_ahead(false);
            }
            if let Some(min_piece_seconds) = o.piece_min {
                let rule =
                    hetdsl_mpi::recall::PieceRule { min_piece_seconds, ..Default::default() };
                launch = launch.node_pieces(rule);
            }
            if let Some(tail) = o.plan_tail {
                launch = launch.plan_tail(tail);
            }
            match launch.run() {
                Ok(report) => {
                    let seconds = t.elapsed().as_secs_f64();
                    if root {
                        call_line(name, rep, &report);
                    }
                    if rep > 0 && root {
                        roi.push(report.roi_seconds);
                        wall.push(seconds);
                        wrong = wrong.or_else(|| work.wrong());
                        wrong = wrong.or_else(|| {
                            (!report.tiles_exactly_once()).then(|| "ranges do not tile".into())
                        });
                        reports.push(report);
                    }
                }
                Err(e) => {
                    failed = Some(e.to_string());
                    break;
                }
            }
        }
        if let Some(e) = &failed {
            eprintln!("rank {}: {name}: {e}", cluster.rank());
            all_ok = false;
        }
        if !root || failed.is_some() {
            continue;
        }
        let row = rank_row(name, &work, roi, wall, &reports, wrong);
        let ok = row["correct"].as_bool().unwrap_or(false);
        println!(
            "{} ranks {name} ({}): roi {:.4} s, wall {:.4} s, {}",
            cluster.size(),
            work.describe(),
            row["roi_s"].as_f64().unwrap_or(f64::NAN),
            row["wall_s"].as_f64().unwrap_or(f64::NAN),
            if ok { "correct".to_string() } else { format!("WRONG: {}", row["wrong"]) }
        );
        if let Some(last) = reports.last() {
            print!("{}", last.table());
        }
        all_ok &= ok;
        rows.push(row);
    }
    if root {
        let doc = serde_json::json!({ "mode": "ranks", "ranks": cluster.size(), "scale": o.scale, "kernels": rows });
        write(&o.json, &doc);
    }
    cluster.all_agree(all_ok)
}

/// How call `rep` of a kernel ran across ranks (call 0 is the warm-up): fresh or from the
/// remembered plan, and per rank its ranges, those its node cut from memory, and its devices'
/// packages.
fn call_line(name: &str, rep: usize, r: &ClusterReport) {
    let ranks: Vec<String> = r
        .ranks
        .iter()
        .map(|k| {
            let packages: Vec<String> = k.devices.iter().map(|d| d.packages.to_string()).collect();
            format!(
                "r{} {} ranges ({} cut, {} in pieces, {} queued), packages {}",
                k.rank,
                k.packages.len(),
                k.planned_ranges,
                k.pieces_ranges,
                k.queued_ranges,
                packages.join("+")
            )
        })
        .collect();
    println!(
        "  {name} call {rep}{}: {} ({}), roi {:.4} s, balance {:.3}; {}",
        if rep == 0 { " (warm-up)" } else { "" },
        r.form,
        r.balancer,
        r.roi_seconds,
        r.balance,
        ranks.join("; ")
    );
}

/// One kernel's row of the ranks' JSON: medians, and per rank (from the median run by ROI)
/// bytes each way, compute seconds and seconds not computing.
fn rank_row(
    name: &str,
    work: &Work,
    roi: Vec<f64>,
    wall: Vec<f64>,
    reports: &[ClusterReport],
    wrong: Option<String>,
) -> serde_json::Value {
    let mid = median(roi.clone());
    let typical = reports.iter().find(|r| r.roi_seconds == mid).or(reports.first());
    let per_rank: Vec<serde_json::Value> = typical
        .map(|r| {
            r.ranks
                .iter()
                .map(|k| {
                    serde_json::json!({
                        "rank": k.rank, "host": k.host, "ranges": k.packages.len(),
                        "units": k.packages.iter().map(|p| p.len).sum::<u64>(),
                        "bytes_sent": k.bytes_sent, "bytes_received": k.bytes_received,
                        "compute_s": k.compute_seconds, "finish_s": k.finish_seconds,
                        "setup_s": k.setup_seconds,
                        "not_computing_s": (k.finish_seconds - k.compute_seconds).max(0.0),
                        "messages_and_waiting_s":
                            (k.finish_seconds - k.compute_seconds - k.setup_seconds).max(0.0),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    serde_json::json!({
        "kernel": name, "problem": work.describe(), "roi_s": mid, "wall_s": median(wall.clone()),
        "roi_all_s": roi, "wall_all_s": wall, "correct": wrong.is_none(), "wrong": wrong,
        "balance": typical.map(|r| r.balance), "per_rank": per_rank,
        "forms": reports.iter().map(|r| r.form.clone()).collect::<Vec<_>>(),
        "form": typical.map(|r| r.form.clone()),
    })
}

/// The comparison table from the two JSON files.
fn table(o: &Opts) -> bool {
    let read = |p: &String| -> Option<serde_json::Value> {
        let text = std::fs::read_to_string(p).map_err(|e| eprintln!("{p}: {e}")).ok()?;
        serde_json::from_str(&text).map_err(|e| eprintln!("{p}: {e}")).ok()
    };
    let (Some(single), Some(ranks)) =
        (o.files.first().and_then(read), o.files.get(1).and_then(read))
    else {
        eprintln!("table: needs SINGLE.json RANKS.json");
        return false;
    };
    let empty = Vec::new();
    let rows_of = |v: &serde_json::Value| v["kernels"].as_array().unwrap_or(&empty).clone();
    let f = |v: &serde_json::Value| v.as_f64().unwrap_or(f64::NAN);
    println!(
        "| kernel | problem | 1 process ROI s | wall s | {} ranks ROI s | wall s | ROI ratio (1 process / ranks) | wall ratio | per rank: MB sent, MB received, ranges, s not computing (set-up + messages and waiting) | correct |",
        ranks["ranks"]
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---|---|");
    let mut out = Vec::new();
    let mut ok = true;
    for s in rows_of(&single) {
        let Some(r) = rows_of(&ranks).into_iter().find(|r| r["kernel"] == s["kernel"]) else {
            continue;
        };
        let per: Vec<String> = r["per_rank"]
            .as_array()
            .unwrap_or(&empty)
            .iter()
            .map(|k| {
                format!(
                    "r{}: {:.1}, {:.1}, {}, {:.3} ({:.3} + {:.3})",
                    k["rank"],
                    f(&k["bytes_sent"]) / 1e6,
                    f(&k["bytes_received"]) / 1e6,
                    k["ranges"],
                    f(&k["not_computing_s"]),
                    f(&k["setup_s"]),
                    f(&k["messages_and_waiting_s"])
                )
            })
            .collect();
        let correct = s["correct"].as_bool() == Some(true) && r["correct"].as_bool() == Some(true);
        ok &= correct;
        let (roi_ratio, wall_ratio) =
            (f(&s["roi_s"]) / f(&r["roi_s"]), f(&s["wall_s"]) / f(&r["wall_s"]));
        println!(
            "| {} | {} | {:.4} | {:.4} | {:.4} | {:.4} | {:.3} | {:.3} | {} | {} |",
            s["kernel"].as_str().unwrap_or("?"),
            s["problem"].as_str().unwrap_or("?"),
            f(&s["roi_s"]),
            f(&s["wall_s"]),
            f(&r["roi_s"]),
            f(&r["wall_s"]),
            roi_ratio,
            wall_ratio,
            per.join("; "),
            if correct { "yes" } else { "NO" }
        );
        out.push(serde_json::json!({
            "kernel": s["kernel"], "single": s, "ranks": r,
            "roi_ratio": roi_ratio, "wall_ratio": wall_ratio, "correct": correct,
        }));
    }
    write(
        &o.json,
        &serde_json::json!({ "ranks": ranks["ranks"], "scale": single["scale"], "kernels": out }),
    );
    ok && !out.is_empty()
}
