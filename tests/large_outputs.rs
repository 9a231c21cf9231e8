//! Outputs larger than one transfer chunk (32 MiB) come back, and are merged, chunk by chunk:
//! each chunk is copied into the caller's memory while the next one still moves. Checked
//! against the CPU on the two PoCL devices, with each device's package spanning several chunks
//! and a chunk boundary that is not a package boundary, also where one device fails and the
//! other runs its package again.

mod common;

use common::{expand4, lcg, program, round_robin, within};
use hetdsl::{Fault, Report};
use std::time::Duration;

/// 5 Mi work-items of 4 outputs: 80 MiB of output, 40 MiB (one chunk and a quarter) per
/// device's package.
const N: usize = 5 << 20;

fn reference(input: &[u32]) -> Vec<u32> {
    input.iter().flat_map(|&v| [v, v.wrapping_mul(2), v.wrapping_mul(v), v ^ 0x5a5a5a5a]).collect()
}

fn run(fault: Option<Fault>) -> Report {
    within(Duration::from_secs(120), move || {
        let p = program("engine.cl");
        let input = lcg(5, N);
        let mut out = vec![0u32; 4 * N];
        let mut launch =
            expand4(&p, N, &input, &mut out).on_devices(&[0, 1]).balancer(round_robin(1));
        if let Some(f) = fault {
            launch = launch.inject(f).backups(false);
        }
        let r = launch.run().expect("the run");
        let want = reference(&input);
        let wrong = out.iter().zip(&want).filter(|(a, b)| a != b).count();
        assert_eq!(wrong, 0, "{wrong} of {} outputs differ from the CPU\n{}", out.len(), r.table());
        r
    })
}

#[test]
fn an_output_of_several_chunks_per_package_is_merged_whole() {
    let r = run(None);
    for d in &r.devices {
        assert_eq!(d.packages, 1, "device {} ran {} packages\n{}", d.index, d.packages, r.table());
    }
    // Every byte of output came back: 16 bytes per work-item, counted over the chunks' reads.
    let read: u64 = r.trace.iter().filter(|t| t.merged).map(|t| t.read.bytes).sum();
    assert_eq!(read, 16 * N as u64);
}

#[test]
fn a_device_lost_before_its_chunks_come_back_loses_nothing() {
    // Device 1's one package never finishes its read-back: device 0 runs it again, and its
    // chunks overwrite whatever device 1 left.
    let r = run(Some(Fault::HangReadBack { device: 1, package: 0 }));
    assert!(r.devices[1].fault.is_some(), "device 1 was not dropped\n{}", r.table());
    assert_eq!(
        r.devices[0].groups,
        (N / 64) as u64,
        "device 0 did not run everything\n{}",
        r.table()
    );
}
