//! A device that hangs for good while the back-up of its package wins: the run succeeds, and the
//! hung host thread must never block the process afterwards (a later launch, a later build, the
//! program's drop). The device is quarantined for the rest of the process, so this test has a
//! process of its own.

mod common;

use common::{lcg, program, within};
use hetdsl::balance::Static;
use hetdsl::{Fault, WatchdogConfig};
use std::time::Duration;

const N: usize = 1 << 14;

#[test]
fn a_device_hung_for_good_is_quarantined_and_blocks_nothing() {
    let outcome = within(Duration::from_secs(45), || {
        let p = program("engine.cl");
        let input = lcg(31, N);
        let expand4 = |out: &mut Vec<u32>, hang: bool| {
            let mut l = common::expand4(&p, N, &input, out)
                // One package per device, so the hung one holds a single package.
                .balancer(Box::new(Static::nominal()))
                .backups(true)
                .watchdog(WatchdogConfig { factor: 20.0, min: Duration::from_secs(1) });
            if hang {
                l = l.inject(Fault::Hang { device: 0, package: 0 });
            }
            l.run()
        };
        let mut first = vec![0u32; 4 * N];
        let r1 = expand4(&mut first, true).expect("the back-up wins");
        assert!(
            r1.backups.iter().any(|b| b.0 == 0),
            "device 0's package was backed up:\n{}",
            r1.table()
        );
        // The next launch in the process does not wait for the hung thread for ever: the device
        // is left out, and the report says why.
        let mut second = vec![0u32; 4 * N];
        let r2 = expand4(&mut second, false).expect("a later launch runs");
        let q = r2.devices[0].fault.clone().unwrap_or_default();
        assert!(q.contains("quarantined"), "device 0 should be quarantined:\n{}", r2.table());
        assert_eq!(r2.devices[0].packages, 0);
        // And a third launch does not wait again.
        let t = std::time::Instant::now();
        let mut third = vec![0u32; 4 * N];
        expand4(&mut third, false).expect("a third launch runs");
        assert!(t.elapsed() < Duration::from_millis(900), "waited again: {:?}", t.elapsed());
        // A new build in the same process does not block on the process-wide OpenCL lock.
        let p2 = program("engine.cl");
        drop(p2);
        drop(p);
        (first, second, third, input)
    });
    let (first, second, third, input) = outcome;
    let expected = common::expand4_reference(&input);
    assert_eq!(first, expected);
    assert_eq!(second, expected);
    assert_eq!(third, expected);
}
