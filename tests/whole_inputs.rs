//! A large input read whole by every work-item is written to each device at set-up through two
//! chunks of staging used in turn (a chunk's host copy overlapping the last one's transfer).
//! Checked against the CPU on the two PoCL devices: an 80 MiB input (two chunks and a half, so
//! each slot is reused and the last chunk is partial), a repeated call that reuses the parked
//! buffer and its staging, and the same buffer then sliced by another launch, whose staging
//! must be the buffer's whole length again.

mod common;

use common::{lcg, within};
use hetdsl::{KernelSource, Pattern, Runtime};
use std::time::Duration;

const SRC: &str = r#"
__kernel void gather(__global const uint* table, __global uint* out, const uint n) {
    size_t i = get_global_id(0);
    out[i] = table[(i * 7919u + 13u) % n] ^ table[n - 1u - (i % n)];
}
__kernel void triple(__global const uint* in, __global uint* out) {
    size_t i = get_global_id(0);
    out[i] = in[i] * 3u;
}
"#;

/// 20 Mi entries: 80 MiB.
const TABLE: usize = 20 << 20;
const OUT: usize = 1 << 16;

#[test]
fn a_large_whole_input_reaches_every_device_whole() {
    within(Duration::from_secs(180), || {
        let rt = Runtime::new().expect("runtime");
        let p = rt.program(&KernelSource::from_text("whole.cl", SRC)).expect("program");
        let table = lcg(3, TABLE);
        let n = TABLE as u32;
        let want: Vec<u32> = (0..OUT)
            .map(|i| table[(i * 7919 + 13) % TABLE] ^ table[TABLE - 1 - (i % TABLE)])
            .collect();
        for call in 0..2 {
            let mut out = vec![0u32; OUT];
            let r = p
                .launch("gather")
                .global(&[OUT])
                .local(&[64])
                .input(&table, Pattern::Whole)
                .output(&mut out, Pattern::ONE_TO_ONE)
                .scalar(n)
                .on_devices(&[0, 1])
                .balancer(common::round_robin(2))
                .run()
                .expect("the run");
            let wrong = out.iter().zip(&want).filter(|(a, b)| a != b).count();
            assert_eq!(wrong, 0, "call {call}: {wrong} of {OUT} outputs wrong\n{}", r.table());
            for d in &r.devices {
                assert!(
                    d.packages > 0,
                    "call {call}: device {} ran nothing\n{}",
                    d.index,
                    r.table()
                );
            }
        }
        // The same 80 MiB, now sliced 1:1: a parked buffer of that size may come back with the
        // whole input's two-chunk staging, which a sliced buffer cannot use.
        let mut out = vec![0u32; TABLE];
        let r = p
            .launch("triple")
            .global(&[TABLE])
            .local(&[64])
            .input(&table, Pattern::ONE_TO_ONE)
            .output(&mut out, Pattern::ONE_TO_ONE)
            .on_devices(&[0, 1])
            .balancer(common::round_robin(2))
            .run()
            .expect("the sliced run");
        let wrong = out.iter().zip(&table).filter(|(o, t)| **o != t.wrapping_mul(3)).count();
        assert_eq!(wrong, 0, "{wrong} of {TABLE} outputs wrong\n{}", r.table());
    });
}
