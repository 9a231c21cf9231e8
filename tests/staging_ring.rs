//! A device stages its packages' transfers through two pinned slots of fixed size (32 MiB) each
//! way, whatever the buffers' sizes. Packages larger than the slots come and go in parts: an
//! input's parts each wait for their slot's last write, an output's parts are read into a slot
//! as soon as the part before in that slot is merged (also while the next package's inputs are
//! written). Checked against the CPU on the two PoCL devices: packages of 1.25 and 2.5 slots per
//! buffer (seven output parts through two slots), then smaller ones, two outputs and a buffer
//! read and written, a second call that reuses the parked slots, and a call with larger
//! buffers after one with small ones (the parked slots too small, made again).

mod common;

use common::{lcg, within};
use hetdsl::{KernelSource, Pattern, Runtime};
use std::time::Duration;

const SRC: &str = r#"
__kernel void blend(__global const uint* a, __global const uint* b, __global uint* sum,
                    __global uint* swapped, __global uint* acc) {
    size_t i = get_global_id(0);
    uint x = b[2 * i], y = b[2 * i + 1];
    sum[i] = a[i] + x * 3u + y;
    swapped[2 * i] = y ^ a[i];
    swapped[2 * i + 1] = x;
    acc[i] = acc[i] * 5u + a[i];
}
"#;

fn check(p: &hetdsl::Program, n: usize, packages_per_device: u64, what: &str) {
    let a = lcg(7, n);
    let b = lcg(11, 2 * n);
    let mut acc = lcg(13, n);
    let acc_before = acc.clone();
    let mut sum = vec![0u32; n];
    let mut swapped = vec![0u32; 2 * n];
    let r = p
        .launch("blend")
        .global(&[n])
        .local(&[64])
        .input(&a, Pattern::ONE_TO_ONE)
        .input(&b, "2:1".parse().expect("pattern"))
        .output(&mut sum, Pattern::ONE_TO_ONE)
        .output(&mut swapped, "2:1".parse().expect("pattern"))
        .inout(&mut acc, Pattern::ONE_TO_ONE)
        .on_devices(&[0, 1])
        .balancer(common::round_robin(packages_per_device))
        .run()
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let mut wrong = 0;
    for i in 0..n {
        let (x, y) = (b[2 * i], b[2 * i + 1]);
        wrong += usize::from(sum[i] != a[i].wrapping_add(x.wrapping_mul(3)).wrapping_add(y));
        wrong += usize::from(swapped[2 * i] != y ^ a[i] || swapped[2 * i + 1] != x);
        wrong += usize::from(acc[i] != acc_before[i].wrapping_mul(5).wrapping_add(a[i]));
    }
    assert_eq!(wrong, 0, "{what}: {wrong} wrong values\n{}", r.table());
    common::assert_coexecuted_once(&r);
    assert!(
        r.devices.iter().all(|d| d.packages > 0),
        "{what}: a device ran nothing\n{}",
        r.table()
    );
}

#[test]
fn packages_larger_than_the_staging_slots_move_in_parts() {
    within(Duration::from_secs(240), || {
        let rt = Runtime::new().expect("runtime");
        let p = rt.program(&KernelSource::from_text("ring.cl", SRC)).expect("program");
        // Small buffers first: slots of their size, parked, then too small for the next calls.
        check(&p, 1 << 16, 2, "small");
        // 20 Mi items: `a` is 80 MiB, `b` 160 MiB. One package per device: 40 MiB of `a`
        // (1.25 slots) and 80 MiB of `b` (2.5 slots) each way.
        check(&p, 20 << 20, 1, "one package per device");
        // The same sizes again, reusing the parked slots, in packages of a quarter of that.
        check(&p, 20 << 20, 4, "four packages per device");
    });
}
