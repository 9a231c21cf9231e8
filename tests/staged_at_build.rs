//! Staging made while a program builds (`HETDSL_STAGE_AT_BUILD`): with `all`, each PoCL
//! device's queues and two pinned rings are made during the build and the first run reuses
//! both, its outputs right; with `0`, the first run makes its own. (By default only GPUs stage
//! at build, which CI has none of.) Any other value is an error of the build. One test in its
//! own process: it sets the variable before any device is used.

mod common;

use common::events::events_of;
use common::{expand4, lcg};
use hetdsl::{KernelSource, Runtime};

const N: usize = 1 << 16;

/// Per device of the first run, how many of its rings it reused.
fn first_run_rings(setting: &str) -> Vec<(u64, u64)> {
    std::env::set_var("HETDSL_STAGE_AT_BUILD", setting);
    let p = common::program("engine.cl");
    let input = lcg(5, N);
    let mut out = vec![0u32; 4 * N];
    let events = events_of(|| {
        let launch = expand4(&p, N, &input, &mut out).on_devices(&[0, 1]);
        launch.balancer(common::round_robin(2)).run().expect("the run");
    });
    assert_eq!(out, common::expand4_reference(&input), "{setting}: the output is right");
    let mut rings: Vec<(u64, u64)> = events
        .iter()
        .filter(|e| e.message == "device buffers")
        .map(|e| (e.number("device"), e.number("rings_reused")))
        .collect();
    rings.sort_unstable();
    rings
}

#[test]
fn staging_made_at_build_is_reused_by_the_first_run() {
    assert_eq!(first_run_rings("all"), [(0, 2), (1, 2)], "both rings of both devices reused");
    assert_eq!(first_run_rings("0"), [(0, 0), (1, 0)], "nothing made at build");
    // A value that means nothing is an error of the build, naming the variable and the value.
    std::env::set_var("HETDSL_STAGE_AT_BUILD", "sometimes");
    let rt = Runtime::new().expect("an OpenCL runtime");
    match rt.program(&KernelSource::from_text("k.cl", "__kernel void k() {}")) {
        Err(hetdsl::Error::BadConfig(m)) => {
            assert!(m.contains("HETDSL_STAGE_AT_BUILD") && m.contains("sometimes"), "{m}")
        }
        other => panic!("expected BadConfig, got {:?}", other.map(|_| "a program")),
    }
}
