//! A device whose host thread an earlier run left behind (its package backed up, or declared
//! hung, while the thread was still in its kernel): the next run must not make the caller wait
//! for that thread, and the device must take part again once the thread is back, even after it
//! was quarantined for staying out past its watchdog limit. Left-behind threads affect every
//! later run on their device, so this test has a process of its own.

mod common;

use common::{expand4, lcg, program};
use hetdsl::balance::{Dynamic, Static};
use hetdsl::{Fault, Program, Report, WatchdogConfig};
use std::time::{Duration, Instant};

const N: usize = 1 << 16;

/// One package per device; device 0 stopped for `stall` after its package if given.
fn one_each(
    p: &Program,
    input: &[u32],
    stall: Option<Duration>,
    watchdog: WatchdogConfig,
) -> Report {
    let mut out = vec![0u32; 4 * N];
    let mut launch = expand4(p, N, input, &mut out)
        .balancer(Box::new(Static::nominal()))
        .backups(true)
        .watchdog(watchdog);
    if let Some(t) = stall {
        launch = launch.inject(Fault::Stall { device: 0, millis: t.as_millis() as u32 });
    }
    let r = launch.run().expect("the run");
    assert_eq!(out, common::expand4_reference(input), "{}", r.table());
    r
}

/// Runs (work any device may take) until device 0 runs packages again without a fault, and
/// returns how long that took; fails if it never does within `limit`, or if any run made the
/// caller wait while device 0 sat out.
fn until_device_0_is_back(p: &Program, input: &[u32], limit: Duration) -> Duration {
    let began = Instant::now();
    loop {
        let mut out = vec![0u32; 4 * N];
        let t = Instant::now();
        let r = expand4(p, N, input, &mut out)
            .balancer(Box::new(Dynamic::packages(16)))
            .run()
            .expect("a run while device 0 is out");
        assert_eq!(out, common::expand4_reference(input), "{}", r.table());
        if r.devices[0].packages > 0 && r.devices[0].fault.is_none() {
            return began.elapsed();
        }
        assert!(
            t.elapsed() < Duration::from_millis(800),
            "waited {:?}:\n{}",
            t.elapsed(),
            r.table()
        );
        assert!(began.elapsed() < limit, "device 0 never came back:\n{}", r.table());
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_device_left_behind_delays_no_run_and_comes_back() {
    let p = program("engine.cl");
    let input = lcg(77, N);
    // Device 0's package is followed by a stall of three seconds. (A stall of its kernel time
    // times a factor varied tenfold with that time on CI's two busy cores: device 0 came back
    // within 155 ms, or stayed out past the 30 s this test waits.)
    one_each(&p, &input, None, WatchdogConfig::default());
    let stall = Some(Duration::from_secs(3));

    // A generous watchdog: device 1 backs the stalled package up and the run ends while
    // device 0's thread is still out, well within its limit.
    let patient = WatchdogConfig { factor: 1000.0, min: Duration::from_secs(20) };
    let r = one_each(&p, &input, stall, patient);
    assert!(r.backups.iter().any(|b| b.0 == 0), "no back-up:\n{}", r.table());
    // The next runs do not wait for that thread (before, each waited until it was back).
    let took = until_device_0_is_back(&p, &input, Duration::from_secs(30));
    assert!(took > Duration::from_millis(300), "device 0 was never out ({took:?})");
    eprintln!("device 0 was out for {took:?} after its run");

    // A short watchdog: the thread stays out past its limit and the device is quarantined,
    // until the thread comes back.
    let short = WatchdogConfig { factor: 1.0, min: Duration::from_millis(200) };
    one_each(&p, &input, stall, short);
    std::thread::sleep(Duration::from_millis(400));
    let mut out = vec![0u32; 4 * N];
    let t = Instant::now();
    let r = expand4(&p, N, &input, &mut out)
        .balancer(Box::new(Dynamic::packages(16)))
        .run()
        .expect("a run beside the quarantined device");
    assert!(t.elapsed() < Duration::from_millis(800), "waited {:?}", t.elapsed());
    assert_eq!(out, common::expand4_reference(&input));
    let fault = r.devices[0].fault.clone().unwrap_or_default();
    assert!(fault.contains("quarantined"), "device 0 should be quarantined:\n{}", r.table());
    // Before, a quarantine lasted for the rest of the process.
    until_device_0_is_back(&p, &input, Duration::from_secs(30));
}
