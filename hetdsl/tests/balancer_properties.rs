//! Property tests: every balancer, driven by the simulator over random machines and kernels,
//! hands out every work-group exactly once, never an empty package, and the run terminates —
//! also when a random device is lost at a random instant (its running package is then re-run
//! by the driver, so the completed packages still cover every work-group exactly once), or a
//! random device joins late (its set-up ending at a random instant, as the engine lets it) —
//! and no run beats the simulator's ideal makespan, which must be a lower bound.
//!
//! Cases come from a seeded generator: a failure prints the case seed, and
//! `HETDSL_PROPERTY_SEED=<seed>` replays that one case (`HETDSL_PROPERTY_CASES` sets the count).

use hetdsl::balance::{
    Adaptive, Balancer, Completion, DeviceHistory, DeviceKind, Dynamic, HGuided, History, Learned,
    LinearTwoPoint, MinMax, Next, Package, PerDevice, Regions, Setup, Sigmoid, Static,
};
use hetdsl::sim::{
    simulate, CostProfile, CostTable, Join, Loss, SimDevice, SimOptions, SimResult, SplitMix64,
};

const CASES: u64 = 10_000;

/// A random machine and kernel.
struct Case {
    devices: Vec<SimDevice>,
    work: CostTable,
    loss: Option<Loss>,
    /// A device whose set-up ends late (the engine starts without it).
    join: Option<Join>,
    seed: u64,
}

fn random_profile(g: &mut SplitMix64) -> CostProfile {
    match g.range(0, 4) {
        0 => CostProfile::Uniform,
        1 => CostProfile::Band {
            center: g.unit(),
            width: 0.02 + 0.3 * g.unit(),
            peak: g.log_uniform(1.0, 50.0),
        },
        2 => CostProfile::Rising { from: g.log_uniform(0.01, 1.0), to: g.log_uniform(0.01, 10.0) },
        3 => CostProfile::Random { spread: 2.0 * g.unit(), seed: g.next_u64() },
        _ => CostProfile::Bursts {
            rate: 0.2 * g.unit(),
            height: g.log_uniform(1.0, 100.0),
            length: 0.1 * g.unit(),
            seed: g.next_u64(),
        },
    }
}

fn random_case(seed: u64) -> Case {
    let mut g = SplitMix64::new(seed);
    let n = g.range(1, 8) as usize;
    let total_groups = g.log_uniform(1.0, 200_000.0) as u64;
    let base_speed = g.log_uniform(10.0, 1e7);
    let devices: Vec<SimDevice> = (0..n)
        .map(|i| SimDevice {
            name: format!("dev{i}"),
            kind: if g.unit() < 0.3 { DeviceKind::Cpu } else { DeviceKind::Gpu },
            // Speeds spanning 1:1000 between devices.
            speed: base_speed * g.log_uniform(1.0, 1000.0),
            overhead: if g.unit() < 0.2 { 0.0 } else { g.log_uniform(1e-7, 1e-2) },
            min_groups: g.log_uniform(1.0, 5000.0) as u64,
            // Nominal figures unrelated to the real speeds, sometimes missing.
            nominal_gflops: if g.unit() < 0.1 { 0.0 } else { g.log_uniform(1.0, 1e5) },
            jitter: 0.3 * g.unit(),
            link: None,
        })
        .collect();
    let work = CostTable::new(&random_profile(&mut g), total_groups, 32);
    let loss = (n > 1 && g.unit() < 0.3).then(|| {
        let fastest = devices.iter().map(|d| d.speed).fold(0.0, f64::max);
        Loss {
            device: g.range(0, n as u64 - 1) as usize,
            at: g.unit() * 2.0 * total_groups as f64 / fastest,
        }
    });
    // Drawn apart, so that the cases drawn before late joins existed stay the same.
    let mut late = SplitMix64::new(seed ^ 0x1a7e);
    let join = (n > 1 && late.unit() < 0.3).then(|| {
        let fastest = devices.iter().map(|d| d.speed).fold(0.0, f64::max);
        Join {
            device: late.range(0, n as u64 - 1) as usize,
            at: late.unit() * 2.0 * total_groups as f64 / fastest,
        }
    });
    Case { devices, work, loss, join, seed: g.next_u64() }
}

/// Checks that `packages` tile `0..total` exactly: each work-group once, none empty.
fn tiles(total: u64, mut packages: Vec<Package>) -> Result<(), String> {
    packages.sort_by_key(|p| p.offset);
    let mut next = 0;
    for p in &packages {
        if p.len == 0 {
            return Err(format!("empty package {p:?}"));
        }
        if p.offset != next {
            return Err(format!("expected a package at {next}, found {p:?} (gap or overlap)"));
        }
        next = p.end();
    }
    if next != total {
        return Err(format!("packages end at {next}, not at {total}"));
    }
    Ok(())
}

fn check(case: &Case, r: &SimResult) -> Result<(), String> {
    let g = case.work.total_groups();
    // What the balancer handed out (a lost device's running package included, once).
    tiles(g, r.packages.iter().filter(|p| !p.rerun && !p.backup).map(|p| p.package).collect())
        .map_err(|e| format!("balancer hand-outs: {e}"))?;
    // What actually completed (the lost package through its driver re-run, a backed-up one
    // through the copy that won).
    tiles(g, r.packages.iter().filter(|p| !p.aborted).map(|p| p.package).collect())
        .map_err(|e| format!("completed packages: {e}"))?;
    if let Some(loss) = case.loss {
        if let Some(p) = r.packages.iter().find(|p| p.device == loss.device && p.start > loss.at) {
            return Err(format!(
                "lost device {} got {p:?} after its loss at {}",
                loss.device, loss.at
            ));
        }
    }
    if let Some(join) = case.join {
        if let Some(p) = r.packages.iter().find(|p| p.device == join.device && p.start < join.at) {
            return Err(format!(
                "device {} got {p:?} before it joined at {}",
                join.device, join.at
            ));
        }
    }
    if !(r.makespan.is_finite() && r.makespan >= 0.0) {
        return Err(format!("makespan {}", r.makespan));
    }
    // The ideal makespan is a lower bound (sim::SimDevice::alone_seconds): no balancer beats it.
    if r.makespan < r.ideal_makespan * (1.0 - 1e-9) || r.efficiency > 1.0 + 1e-9 {
        return Err(format!(
            "makespan {} below the ideal {} (efficiency {})",
            r.makespan, r.ideal_makespan, r.efficiency
        ));
    }
    Ok(())
}

fn run_case(case: &Case, balancer: &mut dyn Balancer) -> Result<SimResult, String> {
    // Half the cases with the engine's speculative back-ups, and a third with packages queued
    // ahead where the balancer offers them: what completes must still tile the range, each
    // work-group once.
    let options = SimOptions {
        seed: case.seed,
        loss: case.loss,
        backups: case.seed % 2 == 1,
        waves: false,
        joins: case.join.into_iter().collect(),
        pipeline: case.seed.is_multiple_of(3),
    };
    simulate(&case.devices, &case.work, balancer, &options).map_err(|e| e.to_string())
}

/// Run `CASES` random cases (or the one in `HETDSL_PROPERTY_SEED`) for one balancer family.
fn for_all(family: &str, make: impl Fn(&mut SplitMix64, usize) -> Box<dyn Balancer>) {
    let env = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u64>().ok());
    let family_key = family.bytes().fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(b as u64));
    let seeds: Vec<u64> = match env("HETDSL_PROPERTY_SEED") {
        Some(seed) => vec![seed],
        None => (0..env("HETDSL_PROPERTY_CASES").unwrap_or(CASES))
            .map(|i| family_key ^ (i << 20))
            .collect(),
    };
    let single = seeds.len() == 1;
    let (mut backed_up, mut joined, mut queued) = (0, 0, 0);
    for seed in seeds {
        let case = random_case(seed);
        let mut g = SplitMix64::new(seed ^ 0x5eed);
        let mut balancer = make(&mut g, case.devices.len());
        let name = balancer.name();
        let outcome = run_case(&case, balancer.as_mut()).and_then(|r| {
            backed_up += r.packages.iter().any(|p| p.backup) as usize;
            queued += r.packages.iter().any(|p| p.queued) as usize;
            let late = |j: Join| r.packages.iter().any(|p| p.device == j.device);
            joined += case.join.is_some_and(late) as usize;
            check(&case, &r)
        });
        if let Err(e) = outcome {
            panic!(
                "{family} ({name}) failed on case seed {seed} (HETDSL_PROPERTY_SEED={seed}): {e}\n\
                 {} devices, G = {}, loss {:?}, join {:?}",
                case.devices.len(),
                case.work.total_groups(),
                case.loss,
                case.join
            );
        }
    }
    // The back-up half of the cases must have exercised back-ups at all.
    assert!(single || backed_up > 0, "{family}: no case made a speculative back-up");
    // And some device that joined late must have run work.
    assert!(single || joined > 0, "{family}: no device that joined late ran a package");
    // The balancers that offer packages ahead must have had some queued.
    let ahead = ["dynamic", "hguided"].contains(&family);
    assert!(single || !ahead || queued > 0, "{family}: no case queued a package ahead");
}

fn weights(g: &mut SplitMix64, n: usize) -> Vec<f64> {
    let mut w: Vec<f64> =
        (0..n).map(|_| if g.unit() < 0.2 { 0.0 } else { g.log_uniform(0.01, 100.0) }).collect();
    if w.iter().all(|x| *x == 0.0) {
        w[0] = 1.0;
    }
    w
}

#[test]
fn sigmoid_guarded() {
    for_all("sigmoid", |_, _| Box::new(Sigmoid::guarded()));
}

#[test]
fn sigmoid_faithful() {
    for_all("sigmoid-faithful", |_, _| Box::new(Sigmoid::faithful()));
}

#[test]
fn static_forward_and_reverse() {
    for_all("static", |g, n| {
        let s =
            if g.unit() < 0.5 { Static::nominal() } else { Static::with_weights(weights(g, n)) };
        Box::new(if g.unit() < 0.5 { s.reversed() } else { s })
    });
}

#[test]
fn dynamic_count_and_chunk() {
    for_all("dynamic", |g, _| {
        Box::new(if g.unit() < 0.5 {
            Dynamic::packages(g.range(1, 512))
        } else {
            Dynamic::chunk(g.range(40, 100_000))
        })
    });
}

#[test]
fn hguided_uniform_and_tuned() {
    for_all("hguided", |g, n| {
        if g.unit() < 0.5 {
            let m = (g.unit() < 0.5).then(|| g.log_uniform(1.0, 1000.0) as u64);
            Box::new(HGuided::uniform(g.log_uniform(0.5, 8.0), m))
        } else {
            let k = (g.unit() < 0.7)
                .then(|| PerDevice::Each((0..n).map(|_| g.log_uniform(1.0, 4.0)).collect()));
            let m =
                (g.unit() < 0.7).then(|| PerDevice::Each((0..n).map(|_| g.range(1, 64)).collect()));
            Box::new(HGuided::tuned(k, m))
        }
    });
}

#[test]
fn regions() {
    for_all("regions", |_, _| Box::new(Regions::default()));
}

#[test]
fn adaptive() {
    for_all("adaptive", |_, _| Box::new(Adaptive::default()));
}

#[test]
fn minmax() {
    for_all("minmax", |_, _| Box::new(MinMax::default()));
}

#[test]
fn linear_two_point() {
    for_all("linear2p", |_, _| Box::new(LinearTwoPoint::default()));
}

/// A history for `case`: what a first launch under the default balancer left (as a session
/// would keep it), then perturbed: speeds scaled at random, a device's speed lost, owned ranges
/// scrambled, or a history of another size or device count (the balancer must fall back).
// An owned list of one range is what is meant here.
#[allow(clippy::single_range_in_vec_init)]
fn random_history(case: &Case, g: &mut SplitMix64) -> History {
    let total = case.work.total_groups();
    let first = SimOptions {
        seed: case.seed ^ 1,
        loss: None,
        backups: false,
        waves: false,
        ..SimOptions::default()
    };
    let mut h = simulate(&case.devices, &case.work, &mut Sigmoid::guarded(), &first)
        .expect("the default balancer runs every case")
        .history(&case.devices, total);
    for d in &mut h.devices {
        if g.unit() < 0.3 {
            d.speed *= g.log_uniform(0.1, 10.0);
        }
        if g.unit() < 0.1 {
            d.speed = if g.unit() < 0.5 { 0.0 } else { f64::NAN };
        }
        if g.unit() < 0.1 {
            let a = g.range(0, total + 10);
            d.owned = vec![a..a + g.range(0, total + 10)];
        }
    }
    match g.range(0, 9) {
        0 => h.total_groups += 1,
        1 => h.devices.push(DeviceHistory::default()),
        _ => {}
    }
    h
}

#[test]
fn learned_over_histories() {
    // The cases come from random_case like every family's, so the history is built here.
    let cases: u64 =
        std::env::var("HETDSL_PROPERTY_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(CASES);
    let (mut fallbacks, mut learned) = (0, 0);
    let only: Option<u64> = std::env::var("HETDSL_PROPERTY_SEED").ok().and_then(|v| v.parse().ok());
    for i in 0..cases {
        let seed = 0x1ea2_0000 ^ (i << 20);
        if only.is_some_and(|o| o != seed) {
            continue;
        }
        let case = random_case(seed);
        let mut g = SplitMix64::new(seed ^ 0x5eed);
        let mut balancer = Learned::new(random_history(&case, &mut g));
        let outcome = run_case(&case, &mut balancer).and_then(|r| check(&case, &r));
        if let Err(e) = outcome {
            panic!(
                "learned failed on case seed {seed}: {e}\n{} devices, G = {}, loss {:?}",
                case.devices.len(),
                case.work.total_groups(),
                case.loss
            );
        }
        match balancer.name().as_str() {
            "learned" => learned += 1,
            _ => fallbacks += 1,
        }
    }
    // Both paths must have been exercised.
    assert!(
        only.is_some() || learned > cases / 2 && fallbacks > 0,
        "{learned} learned, {fallbacks} fallbacks"
    );
}

/// A balancer that breaks the contract on purpose (hands out the first work-group twice), to
/// show that the checks above can fail.
struct Stutter {
    next: u64,
    total: u64,
}

impl Balancer for Stutter {
    fn name(&self) -> String {
        "stutter".into()
    }
    fn start(&mut self, setup: &Setup) -> hetdsl::Result<()> {
        self.total = setup.total_groups;
        Ok(())
    }
    fn next(&mut self, _device: usize, _now: f64) -> Next {
        if self.next >= self.total {
            return Next::Done;
        }
        let p = Package { offset: self.next.saturating_sub(1), len: 1 };
        self.next += 1;
        Next::Run(p)
    }
    fn completed(&mut self, _done: &Completion) {}
    fn device_lost(&mut self, _device: usize) {}
}

#[test]
fn the_checks_catch_a_balancer_that_repeats_work() {
    // The dispatcher refuses the repeated hand-out before it runs...
    let case = random_case(42);
    let err = run_case(&case, &mut Stutter { next: 0, total: 0 }).expect_err("refused");
    assert!(err.contains("`stutter` handed out work-group 0 twice"), "{err}");
    // ...and the checks above see a result that repeats work, were one to get through.
    let mut r = run_case(&case, &mut Dynamic::packages(8)).expect("a correct balancer runs");
    check(&case, &r).expect("a correct run passes");
    let first = r.packages[0];
    r.packages.push(first);
    let err = check(&case, &r).expect_err("a repeated work-group must be caught");
    assert!(err.contains("overlap") || err.contains("end at"), "{err}");
    assert!(tiles(10, vec![Package { offset: 0, len: 4 }, Package { offset: 5, len: 5 }]).is_err());
    assert!(tiles(10, vec![Package { offset: 0, len: 10 }, Package { offset: 3, len: 0 }]).is_err());
    assert!(tiles(10, vec![Package { offset: 5, len: 5 }, Package { offset: 0, len: 5 }]).is_ok());
}
