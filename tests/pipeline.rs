//! Packages queued ahead: a device has its next package written and its kernel queued while the
//! current one runs. Checked against the CPU on the two PoCL devices, with two sliced inputs
//! (one read 4:1), small packages and a kernel that computes far longer than its transfers
//! take (a package whose span is mostly transfers gets nothing queued), so that each device
//! stages and writes a queued package's inputs while the one before still computes; with and
//! without a device failing at a queued package, and with pipelining turned off.

mod common;

use common::{lcg, within};
use hetdsl::balance::Dynamic;
use hetdsl::{Fault, KernelSource, Pattern, Report, Runtime};
use std::time::Duration;

const SRC: &str = r#"
__kernel void blend(__global const uint* a, __global const uint* b, __global uint* out) {
    size_t i = get_global_id(0);
    uint x = a[i];
    for (int k = 0; k < 2000; k++) {
        x = x * 1664525u + 1013904223u;
    }
    out[i] = x + (b[4 * i] ^ b[4 * i + 3]);
}
"#;

const N: usize = 1 << 16;
/// The kernel's loop count (its source spells it out).
const ROUNDS: u32 = 2000;
const LOCAL: usize = 64;

fn reference(a: &[u32], b: &[u32]) -> Vec<u32> {
    let mix = |mut x: u32| {
        for _ in 0..ROUNDS {
            x = x.wrapping_mul(1664525).wrapping_add(1013904223);
        }
        x
    };
    (0..N).map(|i| mix(a[i]).wrapping_add(b[4 * i] ^ b[4 * i + 3])).collect()
}

fn run(pipeline: bool, faults: &[Fault]) -> (Vec<u32>, Vec<u32>, Report) {
    let rt = Runtime::new().expect("runtime");
    let p = rt.program(&KernelSource::from_text("blend.cl", SRC)).expect("program");
    let a = lcg(11, N);
    let b = lcg(12, 4 * N);
    let mut out = vec![0u32; N];
    let mut launch = p
        .launch("blend")
        .global(&[N])
        .local(&[LOCAL])
        .input(&a, Pattern::ONE_TO_ONE)
        .input(&b, Pattern::ratio(4, 1).expect("4:1"))
        .output(&mut out, Pattern::ONE_TO_ONE)
        .on_devices(&[0, 1])
        .balancer(Box::new(Dynamic::chunk(16)))
        .pipeline(pipeline);
    for f in faults {
        launch = launch.inject(*f);
    }
    let r = launch.run().expect("the run");
    (out, reference(&a, &b), r)
}

/// Packages that ran queued behind another on their device: the dispatcher starts a queued
/// package's span at the instant its predecessor's completion was seen, the very instant that
/// ends the predecessor's span; a package asked for afterwards starts later.
fn queued_packages(r: &Report) -> usize {
    let mut n = 0;
    for d in &r.devices {
        let mine: Vec<_> = r.trace.iter().filter(|t| t.device == d.index).collect();
        n += mine.windows(2).filter(|w| w[1].host_start == w[0].host_end).count();
    }
    n
}

fn wrong(got: &[u32], want: &[u32]) -> usize {
    got.iter().zip(want).filter(|(a, b)| a != b).count()
}

#[test]
fn queued_packages_give_the_cpu_s_answer() {
    within(Duration::from_secs(120), || {
        let (out, want, r) = run(true, &[]);
        assert_eq!(wrong(&out, &want), 0, "outputs wrong\n{}", r.table());
        let queued = queued_packages(&r);
        assert!(queued > 0, "no package was queued ahead\n{}", r.table());
        // Every package's device idle time is measured after the device's first.
        let idle = r.device_idle_gaps();
        assert_eq!(idle.len(), r.trace.len() - r.devices.iter().filter(|d| d.packages > 0).count());
        assert!(idle.iter().all(|g| g.is_finite() && *g >= 0.0), "{idle:?}");
    });
}

#[test]
fn without_pipelining_nothing_is_queued() {
    within(Duration::from_secs(120), || {
        let (out, want, r) = run(false, &[]);
        assert_eq!(wrong(&out, &want), 0, "outputs wrong\n{}", r.table());
        assert_eq!(queued_packages(&r), 0, "{}", r.table());
    });
}

#[test]
fn a_device_failing_at_a_queued_package_loses_no_output() {
    within(Duration::from_secs(120), || {
        // Device 0's packages from its third on are queued behind the one before: a launch
        // failing there fails while that one still runs; both, and anything kept but not
        // merged, are re-run on device 1.
        for package in [1, 2, 5] {
            let (out, want, r) = run(true, &[Fault::Fail { device: 0, package }]);
            assert_eq!(wrong(&out, &want), 0, "fault at {package}: outputs wrong\n{}", r.table());
            let d0 = &r.devices[0];
            assert!(
                d0.fault.as_deref().unwrap_or("").contains("injected"),
                "fault at {package}: device 0 did not fail\n{}",
                r.table()
            );
        }
    });
}
