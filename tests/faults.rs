//! Nothing lost: a device that fails or hangs mid-run hands its work to the others and the
//! output still equals the CPU reference; when every device fails the error names each fault.
//! Every test is bounded in time.

mod common;

use common::{lcg, program, round_robin, within};
use hetdsl::{Error, Fault, Pattern, Report, WatchdogConfig};
use std::time::Duration;

const N: usize = 1 << 16;

/// expand4 (4:1 output) of `input` into `out`, ready for balancer, faults and devices.
fn expand4<'a>(p: &'a hetdsl::Program, input: &'a [u32], out: &'a mut [u32]) -> hetdsl::Launch<'a> {
    // The faults below name devices 0 and 1: pin the launch to them, so a machine with more
    // devices (a CPU and two GPUs) runs the same two-device cases.
    p.launch("expand4")
        .on_devices(&[0, 1])
        .global(&[N])
        .local(&[64])
        .input(input, Pattern::ONE_TO_ONE)
        .output(out, Pattern::ratio(4, 1).unwrap())
}

/// expand4 (4:1 output) over two devices, four packages each, with `faults` injected.
fn run_with(
    faults: Vec<Fault>,
    watchdog: WatchdogConfig,
) -> (hetdsl::Result<Report>, Vec<u32>, Vec<u32>) {
    let p = program("engine.cl");
    let input = lcg(11, N);
    let mut out = vec![0u32; 4 * N];
    let mut launch = expand4(&p, &input, &mut out)
        .balancer(round_robin(4))
        .watchdog(watchdog)
        // These tests count each device's packages exactly: no speculative copies.
        .backups(false);
    for f in faults {
        launch = launch.inject(f);
    }
    let r = launch.run();
    (r, input, out)
}

#[test]
fn a_device_failing_at_a_random_package_loses_nothing() {
    // Several seeds: each picks the failing device and the package at which it fails.
    for seed in 1..=4u32 {
        let pick = lcg(seed, 2);
        let (device, package) = ((pick[0] % 2) as usize, (pick[1] % 4) as usize);
        let (r, input, out) = within(Duration::from_secs(60), move || {
            run_with(vec![Fault::Fail { device, package }], WatchdogConfig::default())
        });
        let r = r.unwrap_or_else(|e| panic!("seed {seed}: run failed: {e}"));
        assert_eq!(
            out,
            common::expand4_reference(&input),
            "seed {seed}: device {device} failing at package {package}"
        );
        let d = &r.devices[device];
        assert!(d.fault.as_deref().unwrap_or("").contains("injected"), "{}", r.table());
        assert_eq!(d.packages, package, "it completed the packages before the fault");
        assert!(!r.faults.is_empty() && r.faults.iter().all(|f| f.0 == device), "{:?}", r.faults);
        let survivor = &r.devices[1 - device];
        assert!(survivor.fault.is_none());
        // Every work-group merged exactly once (a package may also have been backed up).
        common::assert_coexecuted_once(&r);
    }
}

#[test]
fn a_hung_device_is_dropped_by_the_watchdog() {
    let watchdog = WatchdogConfig { factor: 10.0, min: Duration::from_millis(300) };
    let started = std::time::Instant::now();
    let (r, input, out) = within(Duration::from_secs(60), move || {
        run_with(vec![Fault::Hang { device: 1, package: 1 }], watchdog)
    });
    let r = r.unwrap();
    assert_eq!(out, common::expand4_reference(&input));
    let hung = &r.devices[1];
    assert!(hung.fault.as_deref().unwrap_or("").starts_with("hung"), "{}", r.table());
    assert_eq!(hung.packages, 1);
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[test]
fn every_device_failing_is_an_error_naming_each_fault() {
    let faults = vec![Fault::Fail { device: 0, package: 0 }, Fault::Fail { device: 1, package: 1 }];
    let (r, _, _) =
        within(Duration::from_secs(60), move || run_with(faults, WatchdogConfig::default()));
    match r {
        Err(Error::AllDevicesFailed(list)) => {
            assert_eq!(list.len(), 2, "{list:?}");
            assert!(list.iter().all(|f| f.reason.contains("injected")), "{list:?}");
            let msg = Error::AllDevicesFailed(list).to_string();
            assert!(msg.contains("device 0") && msg.contains("device 1"), "{msg}");
        }
        Err(e) => panic!("expected AllDevicesFailed, got {e}"),
        Ok(r) => panic!("a run with every device failing succeeded:\n{}", r.table()),
    }
}

#[test]
fn a_slow_device_still_completes_correctly() {
    let (r, input, out) = within(Duration::from_secs(60), || {
        run_with(vec![Fault::Slow { device: 0, factor: 4 }], WatchdogConfig::default())
    });
    let r = r.unwrap();
    assert_eq!(out, common::expand4_reference(&input));
    assert!(r.devices.iter().all(|d| d.fault.is_none()), "{}", r.table());
}

#[test]
fn a_straggling_package_is_backed_up_on_an_idle_device() {
    // Device 0 answers each package 200x late; device 1, done with its own two, runs a copy of
    // the package device 0 is still holding. The first copy merged wins.
    let p = program("engine.cl");
    let input = lcg(12, N);
    for round in 0..2 {
        let mut out = vec![0u32; 4 * N];
        let r = within_scope(|| {
            expand4(&p, &input, &mut out)
                .balancer(round_robin(2))
                .inject(Fault::Slow { device: 0, factor: 200 })
                .backups(true)
                .run()
                .unwrap()
        });
        assert_eq!(out, common::expand4_reference(&input), "round {round}");
        assert!(!r.backups.is_empty(), "round {round}: no back-up:\n{}", r.table());
        assert!(r.backups.iter().all(|b| b.0 == 0 && b.1 == 1), "{:?}", r.backups);
        common::assert_coexecuted_once(&r);
    }
}

/// Bound a closure that borrows from the test in time, on this thread (the engine bounds
/// itself; this only reports a hang as a failure).
fn within_scope<T>(f: impl FnOnce() -> T) -> T {
    let start = std::time::Instant::now();
    let t = f();
    assert!(start.elapsed() < Duration::from_secs(60), "took {:?}", start.elapsed());
    t
}

#[test]
fn a_slow_device_alone_is_not_declared_hung() {
    // The only device of the run, slowed 2000x past a 5 ms watchdog floor with nothing measured
    // (no other device to scale a limit from, nobody to hand its work to): it must finish,
    // since dropping it could only turn a slow run into a failed one.
    let watchdog = WatchdogConfig { factor: 1.0, min: Duration::from_millis(5) };
    let p = program("engine.cl");
    let input = lcg(5, N);
    let mut out = vec![0u32; 4 * N];
    let started = std::time::Instant::now();
    let r = within_scope(|| {
        expand4(&p, &input, &mut out)
            .on_devices(&[0])
            // One package: it runs unmeasured, so only the floor limits it.
            .balancer(Box::new(hetdsl::balance::Static::nominal()))
            .watchdog(watchdog)
            .inject(Fault::Slow { device: 0, factor: 2000 })
            .run()
    });
    let r = r.unwrap_or_else(|e| panic!("the lone slow device was dropped: {e}"));
    assert!(r.roi_seconds > 0.005, "not slowed past the floor: {}", r.table());
    assert!(started.elapsed() < Duration::from_secs(60));
    assert_eq!(out, common::expand4_reference(&input));
    assert!(r.devices.iter().all(|d| d.fault.is_none()), "{}", r.table());
}

/// The fault path, over and over: between a device being marked lost and its packages reaching
/// the retry list, no other thread may conclude that the work is stuck. A race there failed
/// about one run in two thousand, so one pass proves nothing; this runs ten thousand (seconds in
/// release), each with a failing device and package drawn at random, on a small problem.
#[test]
fn ten_thousand_failing_runs_in_a_row_lose_nothing() {
    const SMALL: usize = 4096;
    const RUNS: u32 = 10_000;
    let p = program("engine.cl");
    let input = lcg(99, SMALL);
    let expected = common::expand4_reference(&input);
    let started = std::time::Instant::now();
    for run in 0..RUNS {
        let pick = lcg(run + 1, 2);
        let (device, package) = ((pick[0] % 2) as usize, (pick[1] % 4) as usize);
        let mut out = vec![0u32; 4 * SMALL];
        let r = common::expand4(&p, SMALL, &input, &mut out)
            .balancer(round_robin(4))
            .backups(false)
            .warmup(false)
            .inject(Fault::Fail { device, package })
            .run()
            .unwrap_or_else(|e| panic!("run {run} (device {device} failing at {package}): {e}"));
        assert_eq!(out, expected, "run {run}: device {device} failing at package {package}");
        assert_eq!(r.devices[device].packages, package, "run {run}");
        common::assert_coexecuted_once(&r);
        assert!(started.elapsed() < Duration::from_secs(150), "too slow: {run} runs so far");
    }
    eprintln!("{RUNS} failing runs in {:.1} s", started.elapsed().as_secs_f64());
}

/// A kernel as long as asked: `iters` steps of an integer recurrence per work-item.
const SPIN: &str =
    "__kernel void spin(__global const uint* in, __global uint* out, const uint iters) {
    const size_t i = get_global_id(0);
    uint v = in[i];
    for (uint k = 0; k < iters; k++) v = v * 1664525u + 1013904223u + (uint)k;
    out[i] = v;
}";

fn spin_reference(input: &[u32], iters: u32) -> Vec<u32> {
    input
        .iter()
        .map(|&v0| {
            (0..iters)
                .fold(v0, |v, k| v.wrapping_mul(1664525).wrapping_add(1013904223).wrapping_add(k))
        })
        .collect()
}

#[test]
fn long_packages_on_busy_devices_are_not_declared_hung() {
    // One package per device (static), each far longer than a 20 ms watchdog floor, with
    // nothing measured anywhere while both run: neither is hung, and nobody idle could take
    // either over, so the run must finish with the right output.
    let rt = hetdsl::Runtime::new().unwrap();
    let p = rt.program(&hetdsl::KernelSource::from_text("spin.cl", SPIN)).unwrap();
    let (n, iters) = (2048usize, 150_000u32);
    let input = lcg(21, n);
    let mut out = vec![0u32; n];
    let started = std::time::Instant::now();
    let r = within_scope(|| {
        p.launch("spin")
            .global(&[n])
            .local(&[64])
            .input(&input, Pattern::ONE_TO_ONE)
            .output(&mut out, Pattern::ONE_TO_ONE)
            .scalar(iters)
            .balancer(Box::new(hetdsl::balance::Static::nominal()))
            .watchdog(WatchdogConfig { factor: 2.0, min: Duration::from_millis(20) })
            .backups(false)
            .run()
    });
    let r = r.unwrap_or_else(|e| panic!("healthy long packages failed the run: {e}"));
    let shortest = r.trace.iter().filter_map(|t| t.kernel_seconds).fold(f64::INFINITY, f64::min);
    eprintln!(
        "long packages: {:.2} s in all, shortest kernel {shortest:.2} s",
        started.elapsed().as_secs_f64()
    );
    assert!(
        shortest > 0.04,
        "the packages must outlast the floor to test anything:\n{}",
        r.table()
    );
    assert!(r.devices.iter().all(|d| d.fault.is_none()), "{}", r.table());
    assert_eq!(out, spin_reference(&input, iters));
}

const HIST: &str =
    "__kernel void histogram(__global const uint* in, __global uint* bins, const uint nbins) {
    atomic_inc(&bins[in[get_global_id(0)] % nbins]);
}";
const BINS: usize = 29;

/// A histogram (merged by sum) over `N` items with `faults`, backups as asked; and the CPU's.
fn histogram_with(
    faults: Vec<Fault>,
    backups: bool,
    balancer: Box<dyn hetdsl::Balancer>,
    watchdog: WatchdogConfig,
) -> (hetdsl::Result<Report>, Vec<u32>, Vec<u32>) {
    let rt = hetdsl::Runtime::new().unwrap();
    let p = rt.program(&hetdsl::KernelSource::from_text("hist.cl", HIST)).unwrap();
    let input = lcg(61, N);
    let initial: Vec<u32> = (0..BINS as u32).collect();
    let mut expected = initial.clone();
    for &v in &input {
        expected[v as usize % BINS] += 1;
    }
    let mut bins = initial;
    let mut launch = p
        .launch("histogram")
        .global(&[N])
        .local(&[64])
        .input(&input, Pattern::ONE_TO_ONE)
        .reduce(&mut bins, hetdsl::Merge::Sum)
        .scalar(BINS as u32)
        .balancer(balancer)
        .watchdog(watchdog)
        .backups(backups);
    for f in faults {
        launch = launch.inject(f);
    }
    let r = launch.run();
    (r, bins, expected)
}

#[test]
fn a_device_failing_mid_run_loses_nothing_of_a_summed_output() {
    for seed in 1..=6u32 {
        let pick = lcg(seed + 100, 2);
        let (device, package) = ((pick[0] % 2) as usize, 1 + (pick[1] % 3) as usize);
        let (r, bins, expected) = within(Duration::from_secs(60), move || {
            histogram_with(
                vec![Fault::Fail { device, package }],
                false,
                round_robin(4),
                WatchdogConfig::default(),
            )
        });
        let r = r.unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        assert_eq!(bins, expected, "seed {seed}: device {device} failing at package {package}");
        assert_eq!(
            r.devices[device].packages,
            package,
            "it had completed packages:\n{}",
            r.table()
        );
        assert!(r.devices[device].fault.is_some());
        common::assert_coexecuted_once(&r);
    }
}

#[test]
fn a_hung_device_loses_nothing_of_a_summed_output() {
    let watchdog = WatchdogConfig { factor: 10.0, min: Duration::from_millis(300) };
    let (r, bins, expected) = within(Duration::from_secs(60), move || {
        histogram_with(vec![Fault::Hang { device: 1, package: 2 }], false, round_robin(4), watchdog)
    });
    let r = r.unwrap();
    assert_eq!(bins, expected);
    assert!(r.devices[1].fault.as_deref().unwrap_or("").starts_with("hung"), "{}", r.table());
}

#[test]
fn a_backed_up_package_is_counted_once_in_a_summed_output() {
    // Device 0 answers each package 200x late, so device 1 backs its packages up: both copies
    // run, and only one may count.
    for round in 0..2 {
        let (r, bins, expected) = within(Duration::from_secs(60), move || {
            histogram_with(
                vec![Fault::Slow { device: 0, factor: 200 }],
                true,
                round_robin(2),
                WatchdogConfig::default(),
            )
        });
        let r = r.unwrap();
        assert_eq!(bins, expected, "round {round}");
        assert!(!r.backups.is_empty(), "round {round}: no back-up ran:\n{}", r.table());
        common::assert_coexecuted_once(&r);
    }
}

#[test]
fn a_device_whose_set_up_never_ends_is_dropped_not_waited_for() {
    let watchdog = WatchdogConfig { factor: 10.0, min: Duration::from_millis(500) };
    let started = std::time::Instant::now();
    let (r, input, out) = within(Duration::from_secs(60), move || {
        run_with(vec![Fault::HangSetup { device: 1 }], watchdog)
    });
    let r = r.unwrap_or_else(|e| panic!("the run waited on or failed with the hung set-up: {e}"));
    assert_eq!(out, common::expand4_reference(&input));
    let hung = &r.devices[1];
    assert!(hung.fault.as_deref().unwrap_or("").contains("set-up did not finish"), "{}", r.table());
    assert_eq!(hung.packages, 0);
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[test]
fn a_read_back_that_never_completes_is_caught_by_the_watchdog() {
    // The transfer of device 1's last package's output back never completes: with no kernel
    // running there, the package is neither running nor merged, and must not stall the run.
    let watchdog = WatchdogConfig { factor: 10.0, min: Duration::from_millis(300) };
    let (r, input, out) = within(Duration::from_secs(60), move || {
        run_with(vec![Fault::HangReadBack { device: 1, package: 3 }], watchdog)
    });
    let r = r.unwrap_or_else(|e| panic!("the stuck read-back failed the run: {e}"));
    assert_eq!(out, common::expand4_reference(&input));
    let hung = &r.devices[1];
    assert!(hung.fault.as_deref().unwrap_or("").contains("read-back"), "{}", r.table());
    common::assert_coexecuted_once(&r);
}

/// When device `d` was first handed a package, in seconds since the run began.
fn first_package(r: &Report, d: usize) -> f64 {
    r.trace.iter().filter(|t| t.device == d).map(|t| t.host_start).fold(f64::INFINITY, f64::min)
}

#[test]
fn a_device_slow_to_set_up_joins_the_run_late_and_runs_its_share() {
    // Device 1's set-up takes 1.5 s more; the run starts with device 0 and device 1 takes its
    // four packages once it is ready.
    let (r, input, out) = within(Duration::from_secs(60), move || {
        run_with(vec![Fault::SlowSetup { device: 1, millis: 1500 }], WatchdogConfig::default())
    });
    let r = r.unwrap_or_else(|e| panic!("the run failed: {e}"));
    assert_eq!(out, common::expand4_reference(&input));
    assert_eq!(r.devices[1].packages, 4, "{}", r.table());
    assert!(r.devices.iter().all(|d| d.fault.is_none()), "{}", r.table());
    let (early, late) = (first_package(&r, 0), first_package(&r, 1));
    assert!(late - early > 0.5, "device 1 began at {late:.3} s, device 0 at {early:.3} s");
    common::assert_coexecuted_once(&r);
}

#[test]
fn a_run_does_not_wait_for_a_device_still_setting_up() {
    let p = program("engine.cl");
    let input = lcg(12, N);
    let mut out = vec![0u32; 4 * N];
    let started = std::time::Instant::now();
    // Device 1 would be ready after 6 s; device 0 asks for every package (dynamic) meanwhile.
    let r = expand4(&p, &input, &mut out)
        .balancer(Box::new(hetdsl::balance::Dynamic::packages(16)))
        .inject(Fault::SlowSetup { device: 1, millis: 6000 })
        .run()
        .expect("the run");
    let took = started.elapsed();
    assert_eq!(out, common::expand4_reference(&input));
    assert_eq!(r.devices[1].packages, 0, "{}", r.table());
    assert!(r.devices.iter().all(|d| d.fault.is_none()), "{}", r.table());
    assert!(took < Duration::from_secs(4), "the caller waited {took:?}");
    // The next run starts without device 1, whose new thread waits for the one still setting
    // up; the device then joins, and runs the packages the balancer keeps for it.
    let mut again = vec![0u32; 4 * N];
    let r = expand4(&p, &input, &mut again)
        .balancer(round_robin(4))
        .backups(false)
        .run()
        .expect("the next run");
    assert_eq!(again, common::expand4_reference(&input));
    assert_eq!(r.devices[1].packages, 4, "{}", r.table());
}

#[test]
fn a_late_device_runs_the_work_of_one_that_failed_before_it_joined() {
    // Device 0 fails its first package while device 1 is still setting up: the run waits for
    // device 1, which then runs every package.
    let faults =
        vec![Fault::Fail { device: 0, package: 0 }, Fault::SlowSetup { device: 1, millis: 800 }];
    let (r, input, out) =
        within(Duration::from_secs(60), move || run_with(faults, WatchdogConfig::default()));
    let r = r.unwrap_or_else(|e| panic!("the run failed: {e}"));
    assert_eq!(out, common::expand4_reference(&input));
    assert_eq!(r.devices[0].packages, 0, "{}", r.table());
    assert!(r.devices[0].fault.as_deref().unwrap_or("").contains("injected"), "{}", r.table());
    assert!(r.devices[1].fault.is_none(), "{}", r.table());
    common::assert_coexecuted_once(&r);
}

/// `x = 3x + (a ^ b) + c`, in place: a kernel applied twice to an element gives another value.
const BUMP: &str = r#"
__kernel void bump(__global const uint* a, __global const uint* b, __global const uint* c,
                   __global uint* x) {
    size_t i = get_global_id(0);
    x[i] = x[i] * 3u + (a[i] ^ b[i]) + c[i];
}
"#;

#[test]
fn a_device_lost_while_writing_back_an_inout_package_is_an_error_never_a_wrong_ok() {
    // The read-back of a package never completes after part of its output was already copied
    // into the caller's inout buffer (merged while the next package's inputs were written): a
    // re-run elsewhere would read its own outputs as inputs. The run either recovers (the
    // device failed before any of that package was written back) with every element right, or
    // says which work-groups it left half written.
    let n = 1 << 20;
    let (a, b, c, x0) = (lcg(1, n), lcg(2, n), lcg(3, n), lcg(4, n));
    let want: Vec<u32> = (0..n)
        .map(|i| x0[i].wrapping_mul(3).wrapping_add(a[i] ^ b[i]).wrapping_add(c[i]))
        .collect();
    let mut half_written = 0;
    for (device, package) in [(0usize, 0usize), (1, 0), (0, 1), (1, 2)] {
        let (a, b, c, mut x) = (a.clone(), b.clone(), c.clone(), x0.clone());
        let (r, x) = within(Duration::from_secs(60), move || {
            let rt = hetdsl::Runtime::new().unwrap();
            let p = rt.program(&hetdsl::KernelSource::from_text("bump.cl", BUMP)).unwrap();
            let r = p
                .launch("bump")
                .on_devices(&[0, 1])
                .global(&[n])
                .local(&[64])
                .input(&a, Pattern::ONE_TO_ONE)
                .input(&b, Pattern::ONE_TO_ONE)
                .input(&c, Pattern::ONE_TO_ONE)
                .inout(&mut x, Pattern::ONE_TO_ONE)
                .balancer(round_robin(4))
                .watchdog(WatchdogConfig { factor: 10.0, min: Duration::from_millis(300) })
                .inject(Fault::HangReadBack { device, package })
                .run()
                .map(|r| r.table());
            (r, x)
        });
        match r {
            Ok(table) => {
                let wrong = x.iter().zip(&want).filter(|(g, w)| g != w).count();
                assert_eq!(wrong, 0, "device {device}, package {package}: elements wrong\n{table}");
            }
            Err(hetdsl::Error::PartlyMerged { fault, groups }) => {
                assert_eq!(fault.device, device, "{groups:?}: {fault}");
                assert!(!groups.is_empty() && groups.end <= (n / 64) as u64, "{groups:?}");
                half_written += 1;
            }
            Err(e) => panic!("device {device} package {package}: {e}"),
        }
    }
    // Device 0's first package is written back in parts while the next one's inputs go out.
    assert!(half_written > 0, "no case reached a half-written package: the test tests nothing");
}
