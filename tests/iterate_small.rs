//! CI: the iterative benchmarks (`examples/iterate.rs`) at a tiny size on two PoCL devices
//! (`POCL_DEVICES="pthread basic"`): every variant's final data checked against the
//! independent CPU references of `samples::iterative`, and those checks shown to reject a
//! result one step off.

use hetdsl::{Program, Runtime};
use hetdsl_samples::iterate::{self, Config, Scale, Variant, NAMES};
use hetdsl_samples::samples::iterative::{blackscholes, chain, jacobi, nbody};

fn setup() -> (Runtime, Program) {
    if std::env::var_os("POCL_DEVICES").is_none() {
        // Must happen before the first OpenCL call of the process (PoCL reads it then).
        std::env::set_var("POCL_DEVICES", "pthread basic");
    }
    let runtime = Runtime::new().expect("an OpenCL platform (CI installs PoCL)");
    assert!(runtime.devices().len() >= 2, "need two OpenCL devices, found {:?}", runtime.devices());
    let program = iterate::program(&runtime).expect("kernels/iterate.cl builds");
    (runtime, program)
}

fn config(variants: &[&str]) -> Config {
    Config {
        scale: Scale::Tiny,
        steps: None,
        devices: vec![0, 1],
        budget_seconds: 1e9,
        submit: false,
        oneshot_steps: None,
        variants: variants.iter().map(|v| v.to_string()).collect(),
    }
}

/// Every variant of every benchmark ran all its steps and matches the reference.
fn assert_all_correct(variants: &[(String, Variant)], expected: usize) {
    let mut failures = Vec::new();
    for (bench, v) in variants {
        println!("{bench:<12} {:<8} {:?}: {} [{}]", v.variant, v.devices, v.verdict, v.check);
        if !v.verdict.correct || v.steps_done != v.steps || v.steps == 0 {
            failures.push(format!(
                "{bench} {} on {:?}: {}/{} steps, {}",
                v.variant, v.devices, v.steps_done, v.steps, v.verdict
            ));
        }
    }
    assert_eq!(variants.len(), expected, "variants run: {variants:?}");
    assert!(failures.is_empty(), "{} failure(s):\n{}", failures.len(), failures.join("\n"));
}

fn run(program: &Program, cfg: &Config) -> Vec<(String, Variant)> {
    let mut out = Vec::new();
    for name in NAMES {
        let mut bench =
            iterate::create(name, cfg.scale, cfg.steps).expect("a benchmark at a valid size");
        let result = iterate::run_bench(bench.as_mut(), program, cfg);
        out.extend(result.variants.into_iter().map(|v| (name.to_string(), v)));
    }
    out
}

#[test]
fn oneshot_loops_match_the_cpu_reference_on_two_pocl_devices() {
    let (_rt, program) = setup();
    let variants = run(&program, &config(&["oneshot"]));
    assert_all_correct(&variants, NAMES.len());
    for (_, v) in &variants {
        assert_eq!(v.devices, [0, 1]);
    }
}

/// A size past the host's memory is an error naming it, not a capacity-overflow panic or an
/// aborted allocation (Jacobi's side, squared, wrapped to an empty grid).
#[test]
fn a_size_past_the_host_memory_is_refused() {
    for (name, n) in [("nbody", 1usize << 62), ("chain", usize::MAX - 255), ("jacobi", 1 << 44)] {
        let e = iterate::create(name, Scale::Exactly(n), None).err().expect("refused");
        assert!(e.contains("host memory"), "{name}: {e}");
    }
    assert!(iterate::create("blackscholes", Scale::Exactly(1 << 14), None).is_ok());
}

#[test]
fn the_handwritten_jacobi_loop_matches_the_cpu_reference() {
    let (_rt, program) = setup();
    let mut bench = iterate::create("jacobi", Scale::Tiny, None).expect("jacobi at a valid size");
    let result = iterate::run_bench(bench.as_mut(), &program, &config(&["opencl3"]));
    let variants: Vec<(String, Variant)> =
        result.variants.into_iter().map(|v| ("jacobi".into(), v)).collect();
    assert_all_correct(&variants, 1);
    assert!(variants[0].1.mean_step_seconds.is_some_and(|s| s > 0.0));
}

#[test]
fn the_checks_reject_a_result_one_step_off() {
    // Jacobi: the grid after 7 sweeps is not the grid after 8, on every cell or from cones.
    let (w, sweeps) = (48, 8);
    let g = jacobi::grid(w, w);
    let seven = jacobi::whole(&g, w, w, sweeps - 1);
    let eight = jacobi::whole(&g, w, w, sweeps);
    assert!(jacobi::verify(&g, &eight, (w, w), sweeps, u64::MAX, 0, &[]).correct);
    assert!(!jacobi::verify(&g, &seven, (w, w), sweeps, u64::MAX, 0, &[]).correct);
    assert!(jacobi::verify(&g, &eight, (w, w), sweeps, 0, 40, &[]).correct);
    assert!(!jacobi::verify(&g, &seven, (w, w), sweeps, 0, 40, &[]).correct);
    // A grid wrong only along one row (a halo that never arrived) passes a check that does
    // not look there, and fails one told to look at that row.
    let mut seam = eight.clone();
    for v in &mut seam[20 * w..21 * w] {
        *v += 1.0;
    }
    assert!(!jacobi::verify(&g, &seam, (w, w), sweeps, 0, 0, &[20]).correct);
    assert!(jacobi::verify(&g, &seam, (w, w), sweeps, 0, 0, &[]).correct);

    // Chain: y after 9 steps is not y after 10.
    let (x, y0) = chain::vectors(4096);
    let run = |steps: usize| -> Vec<f32> {
        let mut y = y0.clone();
        for _ in 0..steps {
            y.iter_mut().zip(&x).for_each(|(y, x)| *y += chain::A * x);
        }
        y
    };
    assert!(chain::verify(&x, &y0, &run(10), 10).correct);
    assert!(!chain::verify(&x, &y0, &run(9), 10).correct);

    // Black-Scholes: puts in place of calls fail.
    let o = blackscholes::options(2048);
    let prices: Vec<(f64, f64)> = (0..2048).map(|i| blackscholes::price(&o, i)).collect();
    let call: Vec<f32> = prices.iter().map(|p| p.0 as f32).collect();
    let put: Vec<f32> = prices.iter().map(|p| p.1 as f32).collect();
    assert!(blackscholes::verify(&o, &call, &put).correct);
    assert!(!blackscholes::verify(&o, &put, &call).correct);

    // N-body: the state after 2 steps is not the state after 3.
    let (p, v) = nbody::bodies(256);
    let all: Vec<usize> = (0..256).collect();
    let narrow =
        |s: &[[f64; 4]]| -> Vec<[f32; 4]> { s.iter().map(|r| r.map(|c| c as f32)).collect() };
    let [p2, v2] = nbody::trajectory(&p, &v, 2);
    let three = nbody::trajectory(&p, &v, 3);
    let (p2, v2) = (narrow(&p2), narrow(&v2));
    assert!(!nbody::verify(&p, [&p2, &v2], &all, &three, 1e-4).correct);
    let [p3, v3] = &three;
    assert!(nbody::verify(&p, [&narrow(p3), &narrow(v3)], &all, &three, 1e-4).correct);
    // And one step from the state after 2 is the state after 3.
    let one = nbody::one_step(&p2, &v2, &all);
    assert!(nbody::verify(&p2, [&narrow(p3), &narrow(v3)], &all, &one, 1e-5).correct);
    // A step that changed nothing (a stale read of the state) fails the one-step check.
    assert!(!nbody::verify(&p2, [&p2, &v2], &all, &one, 1e-5).correct);
}

#[test]
fn sessions_match_the_cpu_reference_and_move_what_their_partitions_need() {
    let (_rt, program) = setup();
    let cfg = config(&["single", "session"]);
    let mut variants = Vec::new();
    let mut efficiencies = Vec::new();
    for name in NAMES {
        let mut bench =
            iterate::create(name, cfg.scale, cfg.steps).expect("a benchmark at a valid size");
        let result = iterate::run_bench(bench.as_mut(), &program, &cfg);
        efficiencies.push((name, result.efficiency));
        variants.extend(result.variants.into_iter().map(|v| (name.to_string(), v)));
    }
    assert_all_correct(&variants, NAMES.len() * 3);
    // Every device alone and the session over both, all correct: the efficiency exists.
    for (name, e) in &efficiencies {
        assert!(e.as_ref().is_some_and(|e| e.smax >= 1.0 && e.speedup > 0.0), "{name}: {e:?}");
    }
    for (bench, v) in &variants {
        let moved = v.moved_per_step.as_ref().expect("a session counts its moves");
        let least = v.minimum_per_step.as_ref().expect("the minimum is computed");
        let steady = v.steady_per_step.as_ref().expect("the steady minimum is computed");
        let what =
            format!("{bench} {} on {:?}: moved {moved:?}, least {least:?}", v.variant, v.devices);
        assert_eq!(moved.len(), v.steps_done, "{what}");
        // The first launch uploads the starting data; up to every step, the counters may claim
        // no less than the partitions needed (the session's counters against an independent
        // model). Per step they may: a kernel's first launch on a device warms up on a
        // work-group at each end, whose inputs a later step then finds there.
        assert!(moved[0] > 0 && least[0] > 0, "{what}");
        let prefix = |v: &[u64]| -> Vec<u64> {
            v.iter()
                .scan(0, |sum, b| {
                    *sum += b;
                    Some(*sum)
                })
                .collect()
        };
        assert!(prefix(moved).iter().zip(prefix(least)).all(|(m, l)| *m >= l), "{what}");
        assert!(steady.iter().zip(least).skip(1).all(|(s, l)| s <= l), "{what}");
        if v.variant == "single" {
            // One device holds everything it wrote: nothing moves after the first step.
            assert!(moved[1..].iter().all(|m| *m == 0), "{what}");
        }
        // The first steps' launches as they were split: each launch's merged packages cover
        // one range from its start, each unit once.
        let steps: std::collections::BTreeSet<usize> =
            v.first_launches.iter().map(|l| l.step).collect();
        assert_eq!(steps.len(), v.steps_done.min(iterate::FIRST_STEPS_KEPT), "{what}");
        for l in &v.first_launches {
            let mut packages = l.packages.clone();
            packages.sort_by_key(|p| p.1);
            let mut next = 0;
            for &(_, offset, len, _) in &packages {
                assert_eq!(offset, next, "{what}: {l:?}");
                next += len;
            }
            assert!(next > 0, "{what}: {l:?}");
        }
    }
}

/// The same session loops with every launch submitted (queued wherever a relaunch replays a
/// balanced split: halos and NBody's all-gathered positions then move between the devices
/// without the host waiting for the launch) end with the same data as the CPU references.
#[test]
fn submitted_session_loops_match_the_cpu_reference() {
    let (_rt, program) = setup();
    let mut cfg = config(&["single", "session"]);
    cfg.submit = true;
    let variants = run(&program, &cfg);
    // Each device alone, then the session over both, for every benchmark.
    assert_all_correct(&variants, NAMES.len() * 3);
}
