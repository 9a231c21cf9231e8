//! Kernels written the way real OpenCL applications write them, unmodified for co-execution
//! (`tests/kernels/real_kernels.cl`): indexed by group and local ids, reading the global offset
//! and size, tiled through `__local` memory behind barriers, one result per work-group,
//! scattered by data, `vload4`/`vstore4`, a 2-D stencil with a halo, a scan in two passes, a
//! graph relaxation reading the distances it lowers. Each runs one-shot under several balancers,
//! through `verify`, and in a session over several launches; every output element is compared
//! with a plain CPU loop. Where such a kernel cannot be co-executed as declared, the error must
//! say why.

mod common;

use common::{lcg, unit_floats};
use hetdsl::{Fault, Pattern, Program};

fn program() -> Program {
    common::program("real_kernels.cl")
}

/// The inclusive prefix sum of `x`, wrapping.
fn prefix_sum(x: &[u32]) -> Vec<u32> {
    x.iter()
        .scan(0u32, |acc, v| {
            *acc = acc.wrapping_add(*v);
            Some(*acc)
        })
        .collect()
}

/// A two-pass scan's second pass is the first launch of its kernel in the session and adds in
/// place (`inout`) to what the first pass left on the devices; one device is held up after its
/// first package, so the other, idle, backs that package up. The copy needs the range the
/// held-up device is overwriting and that no other place holds: the launch once returned
/// `Lost` ("fresh on no working device", no device having failed) and the range was gone.
#[test]
fn an_in_place_pass_over_device_results_is_not_backed_up_into_a_loss() {
    let p = program();
    let groups = 64;
    let n = groups * 64;
    let x: Vec<u32> = lcg(3, n).iter().map(|v| v % 10).collect();
    let s = p.session().unwrap();
    let input = s.buffer_from(&x).unwrap();
    let mut out = s.buffer::<u32>(n).unwrap();
    let mut totals = s.buffer::<u32>(groups).unwrap();
    s.launch("block_scan")
        .global(&[n])
        .local(&[64])
        .input(&input, Pattern::ONE_TO_ONE)
        .output(&mut out, Pattern::ONE_TO_ONE)
        .output(&mut totals, Pattern::ratio(1, 64).unwrap())
        .local_buffer::<u32>(64)
        .run()
        .unwrap();
    let offsets = s.buffer_from(&prefix_sum(&totals.to_vec().unwrap())).unwrap();
    let report = s
        .launch("add_block_offsets")
        .global(&[n])
        .local(&[64])
        .inout(&mut out, Pattern::ONE_TO_ONE)
        .input(&offsets, Pattern::Whole)
        .inject(Fault::Stall { device: 0, millis: 300 })
        .run()
        .expect("no device failed, so nothing is lost");
    assert!(report.backups.is_empty(), "{:?}", report.backups);
    assert_eq!(out.to_vec().unwrap(), prefix_sum(&x));
}
