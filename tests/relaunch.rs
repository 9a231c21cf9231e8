//! A program's one-shot runs learn from each other: a launch given no balancer and run again
//! over the same range starts from the last clean run's split (`balance::relaunch`, whose plan
//! is unit-tested on measured traces); a launch with its own balancer keeps it, and
//! `Program::forget_runs` starts afresh. On the two PoCL devices every run is checked against
//! the CPU, whichever balancer ran it.

mod common;

use common::lcg;
use hetdsl::{Balancer, KernelSource, Pattern, Report, Runtime};

/// The same work for every work-item: a regular kernel.
const SRC: &str = r#"
__kernel void spin(__global const uint* in, __global uint* out, const uint rounds) {
    size_t i = get_global_id(0);
    uint x = in[i];
    for (uint r = 0; r < rounds; r++) { x = x * 1664525u + 1013904223u; }
    out[i] = x;
}
"#;

const N: usize = 1 << 16;
const ROUNDS: u32 = 4000;

fn reference(input: &[u32]) -> Vec<u32> {
    input
        .iter()
        .map(|&v| (0..ROUNDS).fold(v, |x, _| x.wrapping_mul(1664525).wrapping_add(1013904223)))
        .collect()
}

fn run(p: &hetdsl::Program, input: &[u32], balancer: Option<Box<dyn Balancer>>) -> Report {
    run_with(p, input, balancer, None)
}

/// `spin` over `input` on devices 0 and 1, checked against the CPU.
fn run_with(
    p: &hetdsl::Program,
    input: &[u32],
    balancer: Option<Box<dyn Balancer>>,
    fault: Option<hetdsl::Fault>,
) -> Report {
    let mut out = vec![0u32; N];
    let mut launch = p
        .launch("spin")
        .global(&[N])
        .local(&[64])
        .input(input, Pattern::ONE_TO_ONE)
        .output(&mut out, Pattern::ONE_TO_ONE)
        .scalar(ROUNDS)
        .on_devices(&[0, 1]);
    if let Some(b) = balancer {
        launch = launch.balancer(b);
    }
    if let Some(f) = fault {
        launch = launch.inject(f);
    }
    let report = launch.run().expect("the run");
    assert_eq!(out, reference(input), "balancer {}", report.balancer);
    report
}

#[test]
fn repeated_runs_start_from_the_last_split_and_stay_correct() {
    let rt = Runtime::new().unwrap();
    let p = rt.program(&KernelSource::from_text("spin.cl", SRC)).unwrap();
    let input = lcg(71, N);
    let first = run(&p, &input, None);
    if let Ok(path) = std::env::var("RELAUNCH_DUMP") {
        std::fs::write(path, first.to_json()).unwrap();
    }
    assert_eq!(first.balancer, "sigmoid", "a first run uses the default balancer");
    let mut replayed = 0;
    for _ in 0..4 {
        let r = run(&p, &input, None);
        match r.balancer.as_str() {
            // One package per device that takes part (besides a back-up copy of a straggler's,
            // on these shared cores), the blocks tiling the range.
            // In pieces: at most `PIECES` consecutive packages per device.
            name @ ("relaunch" | "relaunch-pieces") => {
                replayed += 1;
                let most = if name == "relaunch" { 1 } else { hetdsl::balance::PIECES as usize };
                for d in 0..2 {
                    let ran = r.trace.iter().filter(|t| t.device == d).count();
                    let copies = r.backups.iter().filter(|b| b.1 == d).count();
                    assert!(ran - copies.min(ran) <= most, "device {d}: {}", r.table());
                }
                // The merged copies tile the range once (a back-up's groups count on both
                // devices in `groups`).
                let mut merged: Vec<_> =
                    r.trace.iter().filter(|t| t.merged).map(|t| t.package).collect();
                merged.sort_by_key(|p| p.offset);
                let mut next = 0;
                for p in &merged {
                    assert_eq!(p.offset, next, "{}", r.table());
                    next = p.offset + p.len;
                }
                assert_eq!(next, (N / 64) as u64, "{}", r.table());
            }
            // One device ran most of the last run (on these shared cores, one thread can starve
            // the other): it is tried alone, and the other sits out.
            name if name.starts_with("relaunch-alone") => {
                let ran: Vec<_> = r.devices.iter().filter(|d| d.packages > 0).collect();
                assert_eq!(ran.len(), 1, "{}", r.table());
                assert_eq!(ran[0].groups, (N / 64) as u64);
            }
            // The last run did not qualify (its packages' costs varied on the busy cores).
            "sigmoid" => {}
            other => panic!("unexpected balancer {other}"),
        }
    }
    eprintln!("{replayed} of 4 repeated runs replayed a split");
    // A launch's own balancer is always the one that runs.
    let own = run(&p, &input, Some(Box::new(hetdsl::balance::Static::nominal())));
    assert_eq!(own.balancer, hetdsl::balance::Static::nominal().name());
    // Forgotten: the next run is a first run again.
    p.forget_runs();
    assert_eq!(run(&p, &input, None).balancer, "sigmoid");
}

#[test]
fn a_different_range_is_a_different_launch() {
    let rt = Runtime::new().unwrap();
    let p = rt.program(&KernelSource::from_text("spin.cl", SRC)).unwrap();
    let input = lcg(72, N);
    run(&p, &input, None);
    let mut out = vec![0u32; N / 2];
    let r = p
        .launch("spin")
        .global(&[N / 2])
        .local(&[64])
        .input(&input[..N / 2], Pattern::ONE_TO_ONE)
        .output(&mut out, Pattern::ONE_TO_ONE)
        .scalar(ROUNDS)
        .on_devices(&[0, 1])
        .run()
        .unwrap();
    assert_eq!(r.balancer, "sigmoid", "no run of this range before");
    assert_eq!(out, reference(&input[..N / 2]));
}

#[test]
fn a_device_that_adds_little_sits_out_the_repeated_runs() {
    let rt = Runtime::new().unwrap();
    let p = rt.program(&KernelSource::from_text("spin.cl", SRC)).unwrap();
    let input = lcg(73, N);
    let slow = |p: &hetdsl::Program| {
        run_with(p, &input, None, Some(hetdsl::Fault::Slow { device: 0, factor: 400 }))
    };
    // Device 0 runs 400 times slower: the first run gives it a probe and little more.
    let first = slow(&p);
    assert_eq!(first.balancer, "sigmoid");
    let share = first.devices[0].groups as f64 / first.total_groups as f64;
    assert!(share < hetdsl::balance::relaunch::MIN_SHARE, "{}", first.table());
    for _ in 0..3 {
        let r = slow(&p);
        assert!(r.balancer.starts_with("relaunch"), "{}", r.table());
        // It sat out: listed, with nothing run, and every package was device 1's.
        assert_eq!(r.devices.len(), 2);
        assert_eq!((r.devices[0].packages, r.devices[0].groups), (0, 0), "{}", r.table());
        assert_eq!(r.devices[1].groups, r.total_groups);
        assert!(r.trace.iter().all(|t| t.device == 1), "{}", r.table());
    }
}

#[test]
fn a_device_hung_alone_where_the_others_sat_out_is_dropped_not_waited_for() {
    // Device 0 runs 400 times slower, so repeated runs leave device 1 alone. When device 1
    // then hangs, the run must end (an error, or the right output), as it would have with both
    // devices taking part: the last device standing used to be waited for without end.
    let input = lcg(74, N);
    let (r, out) = common::within(std::time::Duration::from_secs(60), move || {
        let rt = Runtime::new().unwrap();
        let p = rt.program(&KernelSource::from_text("spin.cl", SRC)).unwrap();
        let slow = Some(hetdsl::Fault::Slow { device: 0, factor: 400 });
        for _ in 0..3 {
            run_with(&p, &input, None, slow);
        }
        let mut out = vec![0u32; N];
        let r = p
            .launch("spin")
            .global(&[N])
            .local(&[64])
            .input(&input, Pattern::ONE_TO_ONE)
            .output(&mut out, Pattern::ONE_TO_ONE)
            .scalar(ROUNDS)
            .on_devices(&[0, 1])
            .watchdog(hetdsl::WatchdogConfig {
                factor: 10.0,
                min: std::time::Duration::from_millis(300),
            })
            .inject(hetdsl::Fault::Slow { device: 0, factor: 400 })
            .inject(hetdsl::Fault::Hang { device: 1, package: 0 })
            .run();
        (r.map(|r| r.table()), (out, input))
    });
    match r {
        Ok(table) => assert_eq!(out.0, reference(&out.1), "{table}"),
        Err(e) => assert!(matches!(e, hetdsl::Error::AllDevicesFailed(_)), "{e}"),
    }
}
