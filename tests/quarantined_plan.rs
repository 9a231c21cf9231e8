//! A repeated launch whose learned form chose only devices that are quarantined now (a thread
//! of theirs out past its watchdog limit) runs on the other devices instead of failing: before
//! devices could sit a launch out, those others would have run it. Quarantine is the whole
//! process's, so this test has a process of its own.

mod common;

use common::{expand4, lcg, program};
use hetdsl::balance::Static;
use hetdsl::{Fault, Program, Report, WatchdogConfig};
use std::time::Duration;

const N: usize = 1 << 16;

/// expand4 on devices 0 and 1 under `balancer` (the program's choice if `None`), with `fault`
/// and `watchdog`, checked against the CPU.
fn run(
    p: &Program,
    input: &[u32],
    balancer: Option<Box<dyn hetdsl::Balancer>>,
    fault: Option<Fault>,
    watchdog: WatchdogConfig,
) -> Report {
    let mut out = vec![0u32; 4 * N];
    let mut launch = expand4(p, N, input, &mut out).on_devices(&[0, 1]).watchdog(watchdog);
    if let Some(b) = balancer {
        launch = launch.balancer(b).backups(true);
    }
    if let Some(f) = fault {
        launch = launch.inject(f);
    }
    let r = launch.run().expect("the run");
    assert_eq!(out, common::expand4_reference(input), "{}", r.table());
    r
}

#[test]
fn a_learned_form_on_quarantined_devices_runs_on_the_others() {
    let input = lcg(79, N);
    let calm = WatchdogConfig::default();
    // This program learns that device 0 (400 times slower) adds nothing: its next launch runs
    // on device 1 alone.
    let learner = program("engine.cl");
    let slow0 = Some(Fault::Slow { device: 0, factor: 400 });
    assert_eq!(run(&learner, &input, None, slow0, calm).balancer, "sigmoid");
    let narrowed = run(&learner, &input, None, slow0, calm);
    assert!(narrowed.balancer.starts_with("relaunch"), "{}", narrowed.table());
    assert_eq!(narrowed.devices[0].packages, 0, "{}", narrowed.table());

    // Another program of the same kernel stalls device 1's package for seconds under a short
    // watchdog: device 0 backs it up (or re-runs it, device 1 declared hung), the run ends,
    // and device 1's thread stays out past its limit, which quarantines device 1.
    let other = program("engine.cl");
    // Its first use first, then a stall long enough (20 s) that the thread is still out when
    // the learner runs; nothing waits for it.
    run(&other, &input, Some(Box::new(Static::nominal())), None, calm);
    let short = WatchdogConfig { factor: 1.0, min: Duration::from_millis(200) };
    let stalled = Some(Fault::Stall { device: 1, millis: 20_000 });
    run(&other, &input, Some(Box::new(Static::nominal())), stalled, short);
    std::thread::sleep(Duration::from_millis(400));

    // The learner's plan names device 1 alone; device 1 is quarantined: device 0 runs it.
    let r = run(&learner, &input, None, None, calm);
    assert_eq!(r.balancer, "sigmoid", "{}", r.table());
    assert_eq!(r.devices[0].groups, r.total_groups, "{}", r.table());
    let fault = r.devices[1].fault.clone().unwrap_or_default();
    assert!(fault.contains("quarantined"), "device 1 should be quarantined:\n{}", r.table());
}
