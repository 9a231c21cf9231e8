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
use hetdsl::{Fault, Merge, Pattern, Program};

hetdsl::kernel! {
    /// One Bellman-Ford sweep: each reached vertex lowers its neighbours' distances with
    /// `atomic_min`, reading its own; every device may lower any distance.
    #[kernel(file = "tests/kernels/real_kernels.cl", local = 64)]
    struct Relax {
        fn relax(
            #[input(whole)] row_start: &[u32],
            #[input(whole)] cols: &[u32],
            #[input(whole)] weights: &[u32],
            #[inout(whole, merge = "min")] dist: &mut [u32],
            n: u32,
        );
    }
}

hetdsl::kernel! {
    /// Sums per bin through a float atomic add built on `atomic_cmpxchg`, merged by sum.
    #[kernel(file = "tests/kernels/real_kernels.cl", local = 64)]
    struct SumByBin {
        fn sum_by_bin(
            #[input(1:1)] x: &[f32],
            #[input(1:1)] bin: &[u32],
            #[output(whole, merge = "sum")] sums: &mut [f32],
        );
    }
}

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

/// A random graph of `n` vertices with `degree` edges each, in CSR form: (row_start, cols,
/// weights), weights in 1..=100.
fn graph(n: usize, degree: usize, seed: u32) -> (Vec<u32>, Vec<u32>, Vec<u32>) {
    let r = lcg(seed, 2 * n * degree);
    let cols = (0..n * degree).map(|e| r[2 * e] % n as u32).collect();
    let weights = (0..n * degree).map(|e| 1 + r[2 * e + 1] % 100).collect();
    ((0..=n).map(|u| (u * degree) as u32).collect(), cols, weights)
}

/// The shortest distances from vertex 0 (`u32::MAX`: unreached), by Bellman-Ford on the CPU.
fn distances(row_start: &[u32], cols: &[u32], weights: &[u32]) -> Vec<u32> {
    let n = row_start.len() - 1;
    let mut d = vec![u32::MAX; n];
    d[0] = 0;
    let mut changed = true;
    while changed {
        changed = false;
        for u in 0..n {
            if d[u] == u32::MAX {
                continue;
            }
            for e in row_start[u] as usize..row_start[u + 1] as usize {
                let (v, via) = (cols[e] as usize, d[u] + weights[e]);
                if via < d[v] {
                    d[v] = via;
                    changed = true;
                }
            }
        }
    }
    d
}

/// Single-source shortest paths by sweeps of `relax` until none lowers a distance, with
/// `dist` merged by `min`, declared `#[inout(whole, merge = "min")]` and given to
/// `Launch::reduce`. Every device's copy of `dist` started at the merge's identity
/// (`u32::MAX`), so every vertex but those a device had lowered itself read as unreached: the
/// first sweep changed nothing and every call returned `Ok` with 2509 of 2560 distances
/// `u32::MAX` (also on one device alone, so `verify` agreed).
#[test]
fn a_relaxation_reading_the_distances_it_lowers_by_min_reaches_every_vertex() {
    let rt = common::two_devices();
    let relax = Relax::new(&rt).unwrap();
    let p = program();
    let n = 64 * 40;
    let (row_start, cols, weights) = graph(n, 4, 17);
    let want = distances(&row_start, &cols, &weights);
    assert!(want.iter().filter(|d| **d == u32::MAX).count() < n / 10, "a connected graph");
    for declared in [true, false] {
        let mut dist = vec![u32::MAX; n];
        dist[0] = 0;
        for sweep in 0.. {
            assert!(sweep <= n, "sweeps until no distance changes");
            let before = dist.clone();
            if declared {
                let launch = relax.launch(n, &row_start, &cols, &weights, &mut dist, n as u32);
                launch.unwrap().balancer(common::round_robin(3)).run().unwrap();
            } else {
                p.launch("relax")
                    .global(&[n])
                    .local(&[64])
                    .input(&row_start, Pattern::Whole)
                    .input(&cols, Pattern::Whole)
                    .input(&weights, Pattern::Whole)
                    .reduce(&mut dist, Merge::Min)
                    .scalar(n as u32)
                    .run()
                    .unwrap();
            }
            if dist == before {
                break;
            }
        }
        let wrong = dist.iter().zip(&want).filter(|(d, w)| d != w).count();
        assert_eq!(wrong, 0, "declared: {declared}: {wrong} of {n} distances differ");
    }
}

/// Stream compaction: each value above a threshold goes to the slot `atomic_inc(count)`
/// returns, `out` and `count` merged by sum (as a scatter and a counter are declared). Each
/// device counted in its own copy, reset after every package, so packages took the same slots
/// and their values were summed into each other: `Ok`, the count right, the elements wrong.
#[test]
fn a_compaction_counting_its_slots_in_a_merged_output_is_refused_naming_the_atomic() {
    let p = program();
    let n = 64 * 100;
    let x = unit_floats(n, 21);
    let mut out = vec![0f32; n];
    let mut count = vec![0u32; 1];
    let e = p
        .launch("compact")
        .global(&[n])
        .local(&[64])
        .input(&x, Pattern::ONE_TO_ONE)
        .reduce(&mut out, Merge::Sum)
        .reduce(&mut count, Merge::Sum)
        .scalar(0.5f32)
        .run()
        .expect_err("the slots would collide");
    let hetdsl::Error::BadArgument { index: 2, reason } = &e else { panic!("{e:?}") };
    assert!(
        reason
            .starts_with("parameter `count` is `__global uint*` in tests/kernels/real_kernels.cl:")
            && reason.contains("the kernel uses the value `atomic_inc` returns at")
            && reason.contains("count per work-group into an output `1:N`"),
        "{reason}"
    );
    assert!(out.iter().all(|v| *v == 0.0) && count == [0], "nothing ran");
}

/// A float sum per bin through the usual compare-and-swap loop: the value `atomic_cmpxchg`
/// returns only decides whether to retry, so the merge by sum is accepted and exact.
#[test]
fn a_float_atomic_add_built_on_compare_and_swap_merges_by_sum() {
    let rt = common::two_devices();
    let n = 64 * 200;
    let x: Vec<f32> = lcg(5, n).iter().map(|v| (v % 16) as f32).collect();
    let bin: Vec<u32> = lcg(6, n).iter().map(|v| v % 10).collect();
    let mut want = vec![1.5f32; 10];
    for i in 0..n {
        want[bin[i] as usize] += x[i];
    }
    let mut sums = vec![1.5f32; 10];
    let sum = SumByBin::new(&rt).unwrap();
    sum.launch(n, &x, &bin, &mut sums).unwrap().balancer(common::round_robin(3)).run().unwrap();
    assert_eq!(sums, want);
}

/// The usual launch of a kernel that checks its index: 1000 elements over an NDRange rounded
/// up to 1024. Refused for the buffers' length, the message once gave the counts alone; it now
/// says how to pad them, and padded, the kernel leaves the padding as it was.
#[test]
fn a_bounds_checked_kernel_over_a_rounded_up_range_is_told_to_pad_its_buffers() {
    let p = program();
    let n = 1000usize;
    let global = n.div_ceil(64) * 64;
    let x = unit_floats(n, 13);
    let y0 = unit_floats(n, 14);
    let mut y = y0.clone();
    fn axpy<'a>(p: &'a Program, x: &'a [f32], y: &'a mut [f32], n: usize) -> hetdsl::Launch<'a> {
        p.launch("bounded_axpy")
            .global(&[n.div_ceil(64) * 64])
            .local(&[64])
            .input(x, Pattern::ONE_TO_ONE)
            .inout(y, Pattern::ONE_TO_ONE)
            .scalar(2.0f32)
            .scalar(n as u32)
    }
    let e = axpy(&p, &x, &mut y, n).run().unwrap_err().to_string();
    let hint = "over a 1-D NDRange rounded up to a multiple of the work-group size (its kernel \
                checking each index against the length), every buffer has the rounded length: \
                pad this one to 1024 elements";
    assert!(
        e.contains("buffer has 1000 elements but pattern 1:1 over 1024 work-items needs 1024; "),
        "{e}"
    );
    assert!(e.contains(hint), "{e}");
    let s = p.session().unwrap();
    let (xs, mut ys) = (s.buffer_from(&x).unwrap(), s.buffer_from(&y0).unwrap());
    let e = s
        .launch("bounded_axpy")
        .global(&[global])
        .local(&[64])
        .input(&xs, Pattern::ONE_TO_ONE)
        .inout(&mut ys, Pattern::ONE_TO_ONE)
        .scalar(2.0f32)
        .scalar(n as u32)
        .run()
        .unwrap_err()
        .to_string();
    assert!(e.contains(hint), "{e}");
    // Short by a work-group or more: no NDRange rounding explains it.
    let e = axpy(&p, &x[..900], &mut y, n).run().unwrap_err().to_string();
    assert!(!e.contains("rounded"), "{e}");
    // Padded, as the message says.
    let pad = |v: &[f32]| [v, &vec![-7.0; global - n][..]].concat();
    let (xp, mut yp) = (pad(&x), pad(&y0));
    axpy(&p, &xp, &mut yp, n).balancer(common::round_robin(3)).run().unwrap();
    let want: Vec<f32> = (0..n).map(|i| 2.0 * x[i] + y0[i]).collect();
    common::close(&yp[..n], &want, "bounded_axpy");
    assert!(yp[n..].iter().all(|v| *v == -7.0), "the padding is left alone");
}
