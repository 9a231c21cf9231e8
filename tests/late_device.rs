//! A planned launch whose device joins late, its thread still waiting for one of an earlier run
//! (the losing copy of a backed-up package): the other device takes its share once idle,
//! instead of the run waiting for it. Threads left behind are the whole process's, so this
//! test has a process of its own.

mod common;

use common::{expand4, expand4_reference, lcg, program};
use hetdsl::balance::{DeviceHistory, History, Replay, Static};
use hetdsl::Fault;
use std::time::{Duration, Instant};

const N: usize = 1 << 16;
const STALL: Duration = Duration::from_secs(4);

#[test]
fn a_plan_does_not_wait_for_a_device_still_out_from_an_earlier_run() {
    let p = program("engine.cl");
    let input = lcg(81, N);
    let want = expand4_reference(&input);
    // Device 1's package stalls: device 0 backs it up, the run ends, and device 1's thread
    // stays out until the stall ends.
    let mut out = vec![0u32; 4 * N];
    let first = expand4(&p, N, &input, &mut out)
        .on_devices(&[0, 1])
        .balancer(Box::new(Static::nominal()))
        .backups(true)
        .inject(Fault::Stall { device: 1, millis: STALL.as_millis() as u32 })
        .run()
        .expect("the stalled run");
    assert_eq!(out, want, "{}", first.table());

    // A plan giving each device half: device 1 joins late, and device 0 runs its half too.
    let total = first.total_groups;
    let half = |owned| DeviceHistory { speed: 1.0, owned: vec![owned] };
    let plan =
        History { total_groups: total, devices: vec![half(0..total / 2), half(total / 2..total)] };
    let mut out = vec![0u32; 4 * N];
    let start = Instant::now();
    let second = expand4(&p, N, &input, &mut out)
        .on_devices(&[0, 1])
        .balancer(Box::new(Replay::planned(plan)))
        .run()
        .expect("the planned run");
    let waited = start.elapsed();
    assert_eq!(out, want, "{}", second.table());
    assert!(waited < STALL / 2, "the plan waited {waited:?} for device 1:\n{}", second.table());
    assert_eq!(second.devices[0].groups, total, "{}", second.table());
}
