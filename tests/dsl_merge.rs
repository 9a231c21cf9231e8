//! Outputs merged by reduction, declared with `merge = "…"` and co-executed on two devices with
//! every device running several packages, checked against plain CPU loops.

mod common;

use common::{assert_coexecuted, round_robin};
use hetdsl::Runtime;

const BINS: usize = 97;

hetdsl::kernel! {
    /// Counts of each value modulo BINS: every device counts into a whole copy, summed.
    #[kernel(file = "kernels/test/histogram.cl", local = 64)]
    struct Histogram {
        fn histogram(
            #[input(1:1)] values: &[u32],
            #[output(whole, merge = "sum")] bins: &mut [u32],
            nbins: u32,
        );
    }
}

hetdsl::kernel! {
    /// The largest value per bin: every device keeps its own maxima, merged by max.
    #[kernel(file = "kernels/test/histogram.cl", local = 64)]
    struct BinMax {
        fn bin_max(
            #[input(1:1)] values: &[i32],
            #[output(whole, merge = "max")] best: &mut [i32],
            nbins: u32,
        );
    }
}

fn runtime() -> Runtime {
    let rt = Runtime::new().expect("an OpenCL runtime (install pocl-opencl-icd)");
    assert!(rt.devices().len() >= 2, "these tests co-execute on two devices");
    rt
}

/// Deterministic values (a 32-bit LCG), different per seed.
fn values(n: usize, seed: u32) -> Vec<u32> {
    let mut state = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
    (0..n)
        .map(|_| {
            state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            state >> 8
        })
        .collect()
}

#[test]
fn histogram_merged_by_sum_matches_cpu_count() {
    let rt = runtime();
    let kernel = Histogram::new(&rt).expect("histogram builds");
    let n = 64 * 2000;
    let v = values(n, 11);
    let mut bins = vec![0u32; BINS];
    let report = kernel
        .launch(n, &v, &mut bins, BINS as u32)
        .expect("launch")
        .balancer(round_robin(6))
        .run()
        .expect("histogram runs");
    assert_coexecuted(&report);
    let mut want = vec![0u32; BINS];
    for x in &v {
        want[(*x as usize) % BINS] += 1;
    }
    assert_eq!(bins, want);
    assert_eq!(bins.iter().map(|&c| c as usize).sum::<usize>(), n, "every value counted once");
}

#[test]
fn bin_maxima_merged_by_max_match_cpu_loop() {
    let rt = runtime();
    let kernel = BinMax::new(&rt).expect("bin_max builds");
    let n = 64 * 1500;
    let v: Vec<i32> = values(n, 12).into_iter().map(|x| (x >> 1) as i32).collect();
    let mut best = vec![i32::MIN; BINS];
    let report = kernel
        .launch(n, &v, &mut best, BINS as u32)
        .expect("launch")
        .balancer(round_robin(6))
        .run()
        .expect("bin_max runs");
    assert_coexecuted(&report);
    let mut want = vec![i32::MIN; BINS];
    for &x in &v {
        let b = (x as u32 as usize) % BINS;
        want[b] = want[b].max(x);
    }
    assert_eq!(best, want);
}
