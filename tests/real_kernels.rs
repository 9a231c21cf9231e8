//! Kernels written the way real OpenCL applications write them, unmodified for co-execution
//! (`tests/kernels/real_kernels.cl`): indexed by group and local ids, reading the global offset
//! and size, tiled through `__local` memory behind barriers, one result per work-group,
//! scattered by data, `vload4`/`vstore4`, a 2-D stencil with a halo, a scan in two passes, a
//! graph relaxation reading the distances it lowers. Each runs one-shot under several balancers,
//! through `verify`, and in a session over several launches; every output element is compared
//! with a plain CPU loop. Where such a kernel cannot be co-executed as declared, the error must
//! say why.

mod common;

use common::{close, lcg, unit_floats};
use hetdsl::balance::{Balancer, BalancerSpec};
use hetdsl::{Fault, Launch, Merge, Pattern, Program};

hetdsl::kernel! {
    /// C = A·B in 16 × 16 tiles: A split by rows (`k` elements per `n` work-items), B whole.
    #[kernel(file = "tests/kernels/real_kernels.cl", local = [16, 16])]
    struct MatMul {
        fn matmul_tiled(
            #[input(k:n)] a: &[f32],
            #[input(whole)] b: &[f32],
            #[output(1:1)] c: &mut [f32],
            m: i32,
            n: i32,
            k: i32,
        );
    }
}

hetdsl::kernel! {
    /// Bins counted per work-group in `__local` memory over a grid-stride loop, merged by sum.
    #[kernel(file = "tests/kernels/real_kernels.cl", local = 64)]
    struct Histogram {
        fn histogram_local(
            #[input(whole)] data: &[u32],
            n: u32,
            #[output(whole, merge = "sum")] bins: &mut [u32],
            #[local(per_item = 1)] local_bins: [u32],
            nbins: u32,
        );
    }
}

hetdsl::kernel! {
    /// A tiled transpose: each element is written by one package, outside its own rows.
    #[kernel(file = "tests/kernels/real_kernels.cl", local = [16, 16])]
    struct Transpose {
        fn transpose_tiled(
            #[input(1:1)] x: &[f32],
            #[output(whole, merge = "sum")] out: &mut [f32],
            w: u32,
            h: u32,
        );
    }
}

hetdsl::kernel! {
    /// A 5-point stencil reading one row past each side of its package.
    #[kernel(file = "tests/kernels/real_kernels.cl", local = [16, 4])]
    struct Stencil {
        fn stencil5(#[input(1:1, halo = 1)] x: &[f32], #[output(1:1)] y: &mut [f32], w: u32, h: u32);
    }
}

hetdsl::kernel! {
    /// Two inputs per work-item, one partial sum per work-group of 64.
    #[kernel(file = "tests/kernels/real_kernels.cl", local = 64)]
    struct Partial {
        fn reduce_partial(#[input(2:1)] x: &[f32], #[output(1:64)] p: &mut [f32], #[local] s: [f32; 64]);
    }
}

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

/// Kernels that write outside their own range, declared `1:1` as a row-wise kernel's output is:
/// a transpose, a permutation, and a shift by one element. Each package's writes outside its
/// range were lost: `Ok`, with wrong elements wherever packages met (the whole transpose). A
/// device's first package is now checked, and the run ends with `BadArgument` naming the
/// buffer, the element and the package; the launch as it should be declared still runs.
#[test]
fn outputs_written_outside_their_packages_are_refused_naming_the_element() {
    let p = program();
    let refused = |e: hetdsl::Error, index: usize| {
        let hetdsl::Error::BadArgument { index: i, reason } = &e else { panic!("{e:?}") };
        assert_eq!(*i, index, "{reason}");
        assert!(
            reason.starts_with("parameter `")
                && reason.contains(": the kernel wrote element ")
                && reason.contains("which pattern 1:1 gives the package of work-groups")
                && reason.contains("declare the buffer `whole` merged by \"sum\""),
            "{reason}"
        );
    };
    let (w, h) = (64usize, 64usize);
    let x = unit_floats(w * h, 15);
    let mut out = vec![0f32; w * h];
    let balancer = || common::round_robin(3);
    let e = transpose(&p, &x, &mut out, [w, h], false).balancer(balancer()).run();
    refused(e.expect_err("a transpose writes outside its rows"), 1);
    let n = 64 * 40;
    let perm: Vec<u32> = (0..n as u32).rev().collect();
    let xs = unit_floats(n, 7);
    let mut out = vec![0f32; n];
    let e = scatter(&p, &perm, &xs, &mut out, false).balancer(balancer()).run();
    refused(e.expect_err("a permutation writes outside its rows"), 2);
    let mut y = vec![0f32; n];
    let shift = |y: &mut [f32]| {
        p.launch("shift_right")
            .global(&[n])
            .local(&[64])
            .input(&xs, Pattern::ONE_TO_ONE)
            .output(y, Pattern::ONE_TO_ONE)
            .scalar(n as u32)
            .balancer(balancer())
            .run()
    };
    refused(shift(&mut y).expect_err("one element past each package"), 1);
    // Declared as it writes (whole, merged over zeros), the transpose runs and is right.
    let mut out = vec![0f32; w * h];
    transpose(&p, &x, &mut out, [w, h], true).balancer(balancer()).run().unwrap();
    assert_eq!(out, transpose_cpu(&x, w, h));
}

/// A histogram capped at 3 per bin, `if (bins[b] < cap) atomic_inc(&bins[b])`, with `bins`
/// merged by sum. Each device counts in a copy that starts at zero and is reset after every
/// package, so each package saw its own count only and counted every bin to the cap again:
/// `Ok`, the bins past the cap the CPU stops at. Refused now, naming the read.
#[test]
fn a_histogram_deciding_on_a_count_merged_by_sum_is_refused_naming_the_read() {
    let p = program();
    let n = 64 * 100;
    let data: Vec<u32> = lcg(8, n).iter().map(|v| v % 10).collect();
    let mut bins = vec![0u32; 10];
    let e = p
        .launch("capped_histogram")
        .global(&[n])
        .local(&[64])
        .input(&data, Pattern::ONE_TO_ONE)
        .reduce(&mut bins, Merge::Sum)
        .scalar(3u32)
        .balancer(common::round_robin(3))
        .run()
        .expect_err("each package would count to the cap");
    let hetdsl::Error::BadArgument { index: 1, reason } = &e else { panic!("{e:?}") };
    assert!(
        reason
            .starts_with("parameter `bins` is `__global uint*` in tests/kernels/real_kernels.cl:")
            && reason.contains("the kernel reads its elements at tests/kernels/real_kernels.cl:")
            && reason.contains("(`bins[b]`) other than to add to them")
            && reason.contains("a capped count passes its cap"),
        "{reason}"
    );
    assert_eq!(bins, [0; 10], "nothing ran");
}

/// `atomic_max` into bins: merged by sum, the packages' maxima were added (`Ok`, the bins above
/// any value in them); refused now, with the merge that folds it. Merged by max, the bins
/// equal the CPU's.
#[test]
fn an_update_the_merge_does_not_fold_is_refused_and_the_merge_that_folds_it_runs() {
    let p = program();
    let n = 64 * 100;
    let x: Vec<u32> = lcg(9, n).iter().map(|v| v % 100_000).collect();
    let bin: Vec<u32> = lcg(10, n).iter().map(|v| v % 10).collect();
    let launch = |maxes: &mut [u32], merge| {
        p.launch("max_by_bin")
            .global(&[n])
            .local(&[64])
            .input(&x, Pattern::ONE_TO_ONE)
            .input(&bin, Pattern::ONE_TO_ONE)
            .reduce(maxes, merge)
            .balancer(common::round_robin(3))
            .run()
    };
    let mut maxes = vec![7u32; 10];
    let e = launch(&mut maxes, Merge::Sum).expect_err("maxima added");
    let hetdsl::Error::BadArgument { index: 2, reason } = &e else { panic!("{e:?}") };
    assert!(
        reason.contains("the kernel updates its elements with `atomic_max` at tests/kernels/")
            && reason.contains("declare the merge \"max\""),
        "{reason}"
    );
    let mut want = vec![7u32; 10];
    for (v, b) in x.iter().zip(&bin) {
        want[*b as usize] = want[*b as usize].max(*v);
    }
    launch(&mut maxes, Merge::Max).unwrap();
    assert_eq!(maxes, want);
}

/// The usual launch of a kernel that checks its index: 1000 elements over an NDRange rounded
/// up to 1024. Refused for the buffers' length, the message once gave the counts alone; it now
/// says how to pad them, and padded, the kernel leaves the padding as it was.
/// A 100 × 50 image doubled over a 112 × 64 NDRange (16 × 16 work-groups), its kernel
/// checking each index: refused with the padding that makes it run, one-shot and in a session;
/// padded so, it runs and equals the CPU.
#[test]
fn a_bounds_checked_2d_kernel_over_a_rounded_up_range_is_told_to_pad_its_rows() {
    let p = program();
    let (w, h, gx, gy) = (100usize, 50usize, 112usize, 64usize);
    fn scale<'a>(p: &'a Program, x: &'a [f32], out: &'a mut [f32], pitch: usize) -> Launch<'a> {
        p.launch("bounded_scale2d")
            .global(&[112, 64])
            .local(&[16, 16])
            .input(x, Pattern::ONE_TO_ONE)
            .output(out, Pattern::ONE_TO_ONE)
            .scalar(100u32)
            .scalar(50u32)
            .scalar(pitch as u32)
    }
    let x = unit_floats(w * h, 21);
    let mut out = vec![0f32; w * h];
    let hint = "; if these are the elements of a 100 × 50 range, rounded up to the work-group \
                size to the 112 × 64 NDRange launched (its kernel checking each index against \
                the sizes), every buffer is laid out over the launched range: pad each row to \
                112 elements and the buffer to 64 rows (7168 elements)";
    let e = scale(&p, &x, &mut out, w).run().unwrap_err().to_string();
    assert!(e.contains("buffer has 5000 elements but pattern 1:1 over 7168 work-items"), "{e}");
    assert!(e.contains(hint), "{e}");
    let s = p.session().unwrap();
    let (xs, mut outs) = (s.buffer_from(&x).unwrap(), s.buffer::<f32>(w * h).unwrap());
    let l = s.launch("bounded_scale2d").global(&[gx, gy]).local(&[16, 16]);
    let l = l.input(&xs, Pattern::ONE_TO_ONE).output(&mut outs, Pattern::ONE_TO_ONE);
    let e = l.scalar(w as u32).scalar(h as u32).scalar(w as u32).run().unwrap_err().to_string();
    assert!(e.contains(hint), "{e}");
    // Short by a work-group's rows or more: no rounding explains it.
    let mut short = vec![0f32; w * 40];
    let e = scale(&p, &x[..w * 40], &mut short, w).run().unwrap_err().to_string();
    assert!(!e.contains("rounded"), "{e}");
    // Padded as the message says.
    let mut xp = vec![-7.0f32; gx * gy];
    for r in 0..h {
        xp[r * gx..r * gx + w].copy_from_slice(&x[r * w..(r + 1) * w]);
    }
    let mut outp = vec![0f32; gx * gy];
    scale(&p, &xp, &mut outp, gx).balancer(common::round_robin(3)).run().unwrap();
    for r in 0..h {
        let want: Vec<f32> = x[r * w..(r + 1) * w].iter().map(|v| 2.0 * v).collect();
        assert_eq!(&outp[r * gx..r * gx + w], &want[..], "row {r}");
    }
}

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

/// The balancers each one-shot kernel runs under: the default, named ones, and one that gives
/// every device several packages whatever its speed.
/// The one-shot launches of the tiled and scattering kernels, as the tests below declare them.
fn matmul<'a>(
    p: &'a Program,
    a: &'a [f32],
    b: &'a [f32],
    c: &'a mut [f32],
    mnk: [usize; 3],
) -> Launch<'a> {
    let [m, n, k] = mnk;
    p.launch("matmul_tiled")
        .global(&[n, m])
        .local(&[16, 16])
        .input(a, Pattern::ratio(k as u64, n as u64).unwrap())
        .input(b, Pattern::Whole)
        .output(c, Pattern::ONE_TO_ONE)
        .scalar(m as i32)
        .scalar(n as i32)
        .scalar(k as i32)
}

fn tile_sums<'a>(
    p: &'a Program,
    x: &'a [f32],
    sums: &'a mut [f32],
    w: usize,
    h: usize,
) -> Launch<'a> {
    p.launch("tile_sums")
        .global(&[w, h])
        .local(&[16, 8])
        .input(x, Pattern::ONE_TO_ONE)
        .output(sums, Pattern::ratio(1, 128).unwrap())
        .local_buffer::<f32>(128)
}

fn stencil5<'a>(p: &'a Program, x: &'a [f32], y: &'a mut [f32], w: usize, h: usize) -> Launch<'a> {
    p.launch("stencil5")
        .global(&[w, h])
        .local(&[16, 4])
        .input(x, Pattern::halo(1))
        .output(y, Pattern::ONE_TO_ONE)
        .scalar(w as u32)
        .scalar(h as u32)
}

/// `merged`: the output merged by sum over zeros (right); otherwise declared `1:1` (wrong, as a
/// row-wise kernel's would be).
fn transpose<'a>(
    p: &'a Program,
    x: &'a [f32],
    out: &'a mut [f32],
    wh: [usize; 2],
    merged: bool,
) -> Launch<'a> {
    let [w, h] = wh;
    let l =
        p.launch("transpose_tiled").global(&[w, h]).local(&[16, 16]).input(x, Pattern::ONE_TO_ONE);
    let l = if merged { l.reduce(out, Merge::Sum) } else { l.output(out, Pattern::ONE_TO_ONE) };
    l.scalar(w as u32).scalar(h as u32)
}

fn scatter<'a>(
    p: &'a Program,
    perm: &'a [u32],
    x: &'a [f32],
    out: &'a mut [f32],
    merged: bool,
) -> Launch<'a> {
    let l = p.launch("scatter").global(&[x.len()]).local(&[64]);
    let l = l.input(perm, Pattern::ONE_TO_ONE).input(x, Pattern::ONE_TO_ONE);
    if merged {
        l.reduce(out, Merge::Sum)
    } else {
        l.output(out, Pattern::ONE_TO_ONE)
    }
}

fn balancers() -> Vec<(&'static str, Option<Box<dyn Balancer>>)> {
    let mut all: Vec<(&'static str, Option<Box<dyn Balancer>>)> = vec![("default", None)];
    for name in ["static", "dynamic:7", "hguided"] {
        all.push((name, Some(name.parse::<BalancerSpec>().unwrap().build())));
    }
    all.push(("round-robin", Some(common::round_robin(3))));
    all
}

fn under(launch: Launch<'_>, balancer: Option<Box<dyn Balancer>>) -> Launch<'_> {
    match balancer {
        Some(b) => launch.balancer(b),
        None => launch,
    }
}

/// Small integers as floats: sums of them are exact in any order.
fn small(n: usize, seed: u32) -> Vec<f32> {
    lcg(seed, n).iter().map(|v| (v % 100) as f32).collect()
}

fn matmul_cpu(a: &[f32], b: &[f32], m: usize, n: usize, k: usize) -> Vec<f32> {
    let cell = |r: usize, c: usize| (0..k).map(|t| a[r * k + t] * b[t * n + c]).sum();
    (0..m * n).map(|i| cell(i / n, i % n)).collect()
}

fn transpose_cpu(x: &[f32], w: usize, h: usize) -> Vec<f32> {
    (0..w * h).map(|i| x[(i % h) * w + i / h]).collect()
}

/// `stencil5`'s sweep on the CPU: borders copied.
fn stencil_cpu(x: &[f32], w: usize, h: usize) -> Vec<f32> {
    let mut y = x.to_vec();
    for r in 1..h - 1 {
        for c in 1..w - 1 {
            let i = r * w + c;
            y[i] = 0.5 * x[i] + 0.125 * (x[i - 1] + x[i + 1] + x[i - w] + x[i + w]);
        }
    }
    y
}

/// The inclusive prefix sum of `x` (exact for small integers).
fn running_sum(x: &[f32]) -> Vec<f32> {
    let mut acc = 0.0;
    x.iter()
        .map(|v| {
            acc += v;
            acc
        })
        .collect()
}

/// The sums of consecutive runs of `run` elements.
fn run_sums(x: &[f32], run: usize) -> Vec<f32> {
    x.chunks(run).map(|c| c.iter().sum()).collect()
}

/// Kernels indexed by group id times group size plus local id, by the global id less the
/// global offset, and over a grid-stride loop bounded by the global size, each under every
/// balancer, at one work-group and more.
#[test]
fn kernels_indexed_by_group_offset_and_global_size_match_the_cpu_under_every_balancer() {
    let p = program();
    for n in [64usize, 64 * 3, 64 * 1000] {
        let (x, y0) = (unit_floats(n, 1), unit_floats(n, 2));
        let want: Vec<f32> = (0..n).map(|i| 2.0 * x[i] + y0[i]).collect();
        for (name, b) in balancers() {
            let mut y = y0.clone();
            let launch = p
                .launch("group_saxpy")
                .global(&[n])
                .local(&[64])
                .scalar(2.0f32)
                .input(&x, Pattern::ONE_TO_ONE)
                .inout(&mut y, Pattern::ONE_TO_ONE);
            under(launch, b).run().unwrap();
            close(&y, &want, &format!("group_saxpy over {n}, {name}"));
        }
        let want: Vec<f32> = (0..n).map(|i| 3.0 * x[i] + (i / 64) as f32).collect();
        for (name, b) in balancers() {
            let mut y = vec![0f32; n];
            let launch = p
                .launch("offset_scale")
                .global(&[n])
                .local(&[64])
                .input(&x, Pattern::ONE_TO_ONE)
                .output(&mut y, Pattern::ONE_TO_ONE)
                .scalar(3.0f32);
            under(launch, b).run().unwrap();
            close(&y, &want, &format!("offset_scale over {n}, {name}"));
        }
    }
    let nbins = 37u32;
    for (n, global) in [(10_000usize, 64 * 40usize), (100, 64), (6400, 6400)] {
        let data = lcg(9, n);
        let mut want = vec![3u32; nbins as usize];
        for v in &data {
            want[(v % nbins) as usize] += 1;
        }
        for (name, b) in balancers() {
            let mut bins = vec![3u32; nbins as usize];
            let launch = p
                .launch("histogram_local")
                .global(&[global])
                .local(&[64])
                .input(&data, Pattern::Whole)
                .scalar(n as u32)
                .reduce(&mut bins, Merge::Sum)
                .local_buffer::<u32>(nbins as usize)
                .scalar(nbins);
            under(launch, b).run().unwrap();
            assert_eq!(bins, want, "histogram of {n} over {global}, {name}");
        }
    }
}

/// 2-D kernels tiled through `__local` memory behind barriers: a matrix product (one tile
/// alone too), one sum per 16 × 8 work-group at its row-major group index, a transpose; and a
/// permutation writing where an index array says. The last two write outside their own
/// package's rows, into an output merged by sum over zeros.
#[test]
fn tiled_and_scattering_kernels_match_the_cpu_under_every_balancer() {
    let p = program();
    for (m, n, k) in [(256usize, 128usize, 64usize), (16, 16, 16), (128, 64, 192)] {
        let (a, b) = (unit_floats(m * k, 5), unit_floats(k * n, 6));
        let want = matmul_cpu(&a, &b, m, n, k);
        for (name, bal) in balancers() {
            let mut c = vec![0f32; m * n];
            under(matmul(&p, &a, &b, &mut c, [m, n, k]), bal).run().unwrap();
            close(&c, &want, &format!("matmul {m}x{n}x{k}, {name}"));
        }
    }
    for (w, h) in [(64usize, 64usize), (16, 8), (128, 96)] {
        let x = small(w * h, 5);
        let (gx, gy) = (w / 16, h / 8);
        let want: Vec<f32> = (0..gx * gy)
            .map(|g| {
                let (r0, c0) = ((g / gx) * 8, (g % gx) * 16);
                (r0..r0 + 8).map(|r| x[r * w + c0..r * w + c0 + 16].iter().sum::<f32>()).sum()
            })
            .collect();
        for (name, bal) in balancers() {
            let mut sums = vec![0f32; gx * gy];
            under(tile_sums(&p, &x, &mut sums, w, h), bal).run().unwrap();
            assert_eq!(sums, want, "tile_sums {w}x{h}, {name}");
        }
    }
    for (w, h) in [(64usize, 32usize), (16, 16), (48, 80)] {
        let x = unit_floats(w * h, 8);
        for (name, bal) in balancers() {
            let mut out = vec![0f32; w * h];
            under(transpose(&p, &x, &mut out, [w, h], true), bal).run().unwrap();
            assert_eq!(out, transpose_cpu(&x, w, h), "transpose {w}x{h}, {name}");
        }
    }
    let n = 64 * 300;
    let (r, x) = (lcg(11, n), unit_floats(n, 7));
    let mut perm: Vec<u32> = (0..n as u32).collect();
    for i in (1..n).rev() {
        perm.swap(i, r[i] as usize % (i + 1));
    }
    let mut want = vec![0f32; n];
    for i in 0..n {
        want[perm[i] as usize] = x[i];
    }
    for (name, bal) in balancers() {
        let mut out = vec![0f32; n];
        under(scatter(&p, &perm, &x, &mut out, true), bal).run().unwrap();
        assert_eq!(out, want, "scatter, {name}");
    }
}

/// One partial sum per work-group (work-groups of 64 up to 4096, one group alone), four
/// floats per work-item through `vload4`/`vstore4`, a two-pass scan, and a kernel that writes
/// only where a condition holds (`inout`: the others keep their values).
#[test]
fn per_group_results_vectors_scans_and_conditional_writes_match_the_cpu() {
    let p = program();
    for (groups, local) in [(1usize, 64usize), (3, 64), (500, 64), (3, 1024), (2, 4096)] {
        let x = small(groups * local * 2, 4);
        let want = run_sums(&x, 2 * local);
        for (name, b) in balancers() {
            let mut partial = vec![0f32; groups];
            let launch = p
                .launch("reduce_partial")
                .global(&[groups * local])
                .local(&[local])
                .input(&x, Pattern::ratio(2, 1).unwrap())
                .output(&mut partial, Pattern::ratio(1, local as u64).unwrap())
                .local_buffer::<f32>(local);
            under(launch, b).run().unwrap();
            assert_eq!(partial, want, "{groups} group(s) of {local}, {name}");
        }
    }
    for n in [64usize, 64 * 77] {
        let x = unit_floats(4 * n, 12);
        let want: Vec<f32> = (0..4 * n).map(|i| 2.0 * x[i] + (i % 4) as f32).collect();
        for (name, b) in balancers() {
            let mut y = vec![0f32; 4 * n];
            let launch = p
                .launch("scale4")
                .global(&[n])
                .local(&[64])
                .input(&x, Pattern::ratio(4, 1).unwrap())
                .output(&mut y, Pattern::ratio(4, 1).unwrap())
                .scalar(2.0f32);
            under(launch, b).run().unwrap();
            close(&y, &want, &format!("scale4 over {n}, {name}"));
        }
    }
    for groups in [1usize, 5, 300] {
        let n = groups * 64;
        let x: Vec<u32> = lcg(3, n).iter().map(|v| v % 10).collect();
        for (name, b) in balancers() {
            let (mut out, mut totals) = (vec![0u32; n], vec![0u32; groups]);
            let launch = p
                .launch("block_scan")
                .global(&[n])
                .local(&[64])
                .input(&x, Pattern::ONE_TO_ONE)
                .output(&mut out, Pattern::ONE_TO_ONE)
                .output(&mut totals, Pattern::ratio(1, 64).unwrap())
                .local_buffer::<u32>(64);
            under(launch, b).run().unwrap();
            let offsets = prefix_sum(&totals);
            p.launch("add_block_offsets")
                .global(&[n])
                .local(&[64])
                .inout(&mut out, Pattern::ONE_TO_ONE)
                .input(&offsets, Pattern::Whole)
                .run()
                .unwrap();
            assert_eq!(out, prefix_sum(&x), "scan of {groups} group(s), {name}");
        }
    }
    let n = 64 * 200;
    let (x, y0) = (unit_floats(n, 9), unit_floats(n, 10));
    let want: Vec<f32> = (0..n).map(|i| if x[i] > 0.5 { x[i] } else { y0[i] }).collect();
    for (name, b) in balancers() {
        let mut y = y0.clone();
        let launch = p
            .launch("keep_above")
            .global(&[n])
            .local(&[64])
            .input(&x, Pattern::ONE_TO_ONE)
            .inout(&mut y, Pattern::ONE_TO_ONE)
            .scalar(0.5f32);
        under(launch, b).run().unwrap();
        assert_eq!(y, want, "keep_above, {name}");
    }
}

/// A 2-D stencil reading a row past its package (a halo of one row) and the steps of a
/// Hillis-Steele scan reading the element `off` places back (its input whole).
#[test]
fn kernels_reading_their_neighbours_match_the_cpu_under_every_balancer() {
    let p = program();
    for (w, h) in [(64usize, 64usize), (32, 8), (128, 40)] {
        let x = unit_floats(w * h, 15);
        let want = stencil_cpu(&x, w, h);
        for (name, b) in balancers() {
            let mut y = vec![0f32; w * h];
            under(stencil5(&p, &x, &mut y, w, h), b).run().unwrap();
            close(&y, &want, &format!("stencil {w}x{h}, {name}"));
        }
    }
    let n = 64 * 64;
    let x = small(n, 3);
    let want = running_sum(&x);
    for (name, b) in balancers() {
        // The balancer splits the first step; the others run as a repeated launch does.
        let (mut a, mut b, mut off) = (x.clone(), Some(b), 1u32);
        while (off as usize) < n {
            let mut out = vec![0f32; n];
            let launch = p
                .launch("scan_step")
                .global(&[n])
                .local(&[64])
                .input(&a, Pattern::Whole)
                .output(&mut out, Pattern::ONE_TO_ONE)
                .scalar(off);
            under(launch, b.take().flatten()).run().unwrap();
            (a, off) = (out, 2 * off);
        }
        assert_eq!(a, want, "scan, {name}");
    }
}

/// `verify` (one device alone against a random uneven split) passes on each kernel as it is
/// declared above.
#[test]
fn verify_passes_on_the_real_kernels_as_declared() {
    let p = program();
    let (m, n, k) = (64usize, 32usize, 48usize);
    let (a, b) = (unit_floats(m * k, 5), unit_floats(k * n, 6));
    let mut c = vec![0f32; m * n];
    let v = matmul(&p, &a, &b, &mut c, [m, n, k]).verify().unwrap();
    assert!(v.passed(), "{:?}", v.difference);
    close(&c, &matmul_cpu(&a, &b, m, n, k), "verified matmul");
    let x = small(64 * 64, 5);
    let mut sums = vec![0f32; 8 * 4];
    let v = tile_sums(&p, &x, &mut sums, 64, 64).verify().unwrap();
    assert!(v.passed(), "{:?}", v.difference);
    let (w, h) = (48usize, 32usize);
    let x = unit_floats(w * h, 15);
    let mut y = vec![0f32; w * h];
    let v = stencil5(&p, &x, &mut y, w, h).verify().unwrap();
    assert!(v.passed(), "{:?}", v.difference);
    let mut out = vec![0f32; w * h];
    let v = transpose(&p, &x, &mut out, [w, h], true).verify().unwrap();
    assert!(v.passed(), "{:?}", v.difference);
    assert_eq!(out, transpose_cpu(&x, w, h));
    // The same transpose declared the way a row-wise kernel is: verify names the output.
    let mut out = vec![0f32; w * h];
    let v = transpose(&p, &x, &mut out, [w, h], false).verify().unwrap();
    let d = v.difference.expect("a transpose writes outside its rows");
    assert_eq!((d.argument, d.parameter.as_deref()), (1, Some("out")));
    // A permutation declared `1:1` likewise.
    let n = 64 * 40;
    let perm: Vec<u32> = (0..n as u32).rev().collect();
    let x = unit_floats(n, 7);
    let mut out = vec![0f32; n];
    let v = scatter(&p, &perm, &x, &mut out, false).verify().unwrap();
    let d = v.difference.expect("a permutation writes outside its rows");
    assert_eq!((d.argument, d.parameter.as_deref()), (2, Some("out")));
}

/// The kernels on session buffers, launch after launch (run and submit in turn), with buffers
/// whole on each device and held in windows of a few KiB: a chain reading one kernel's `4:1`
/// output `1:1`, a matrix product, per-group sums in 1-D and 2-D, a stencil ping-pong, scan
/// steps reading their input whole, a conditional write in place.
#[test]
fn real_kernels_in_a_session_match_the_cpu_launch_after_launch() {
    let p = program();
    let go = |launch: hetdsl::SessionLaunch<'_>, step: usize| {
        if step % 2 == 1 {
            launch.submit().unwrap();
        } else {
            launch.run().unwrap();
        }
    };
    for cap in [None, Some(64 * 1024u64)] {
        let mut s = p.session().unwrap();
        if let Some(c) = cap {
            s.set_max_alloc(c);
        }
        let n = 64 * 100;
        let x0 = unit_floats(4 * n, 3);
        let x = s.buffer_from(&x0).unwrap();
        let (mut y, mut z) = (s.buffer::<f32>(4 * n).unwrap(), s.buffer::<f32>(4 * n).unwrap());
        let (m, cols, k) = (256usize, 64usize, 32usize);
        let (a0, b0) = (unit_floats(m * k, 5), unit_floats(k * cols, 6));
        let (a, b) = (s.buffer_from(&a0).unwrap(), s.buffer_from(&b0).unwrap());
        let mut c = s.buffer::<f32>(m * cols).unwrap();
        let groups = 200;
        let sx0 = small(groups * 128, 4);
        let sx = s.buffer_from(&sx0).unwrap();
        let mut partial = s.buffer::<f32>(groups).unwrap();
        let mut tiles = s.buffer::<f32>(groups).unwrap();
        for step in 0..4 {
            let launch = s
                .launch("scale4")
                .global(&[n])
                .local(&[64])
                .input(&x, Pattern::ratio(4, 1).unwrap())
                .output(&mut y, Pattern::ratio(4, 1).unwrap())
                .scalar(2.0f32);
            go(launch, step);
            let launch = s
                .launch("offset_scale")
                .global(&[4 * n])
                .local(&[64])
                .input(&y, Pattern::ONE_TO_ONE)
                .output(&mut z, Pattern::ONE_TO_ONE)
                .scalar(3.0f32);
            go(launch, step);
            let launch = s
                .launch("matmul_tiled")
                .global(&[cols, m])
                .local(&[16, 16])
                .input(&a, Pattern::ratio(k as u64, cols as u64).unwrap())
                .input(&b, Pattern::Whole)
                .output(&mut c, Pattern::ONE_TO_ONE)
                .scalar(m as i32)
                .scalar(cols as i32)
                .scalar(k as i32);
            go(launch, step);
            let launch = s
                .launch("reduce_partial")
                .global(&[groups * 64])
                .local(&[64])
                .input(&sx, Pattern::ratio(2, 1).unwrap())
                .output(&mut partial, Pattern::ratio(1, 64).unwrap())
                .local_buffer::<f32>(64);
            go(launch, step);
            // 2-D: 160 columns in work-groups of 16 × 8, 160 rows, one sum per work-group.
            let launch = s
                .launch("tile_sums")
                .global(&[160, 160])
                .local(&[16, 8])
                .input(&sx, Pattern::ONE_TO_ONE)
                .output(&mut tiles, Pattern::ratio(1, 128).unwrap())
                .local_buffer::<f32>(128);
            go(launch, step);
        }
        let what = format!("cap {cap:?}");
        let want: Vec<f32> =
            (0..4 * n).map(|i| 3.0 * (2.0 * x0[i] + (i % 4) as f32) + (i / 64) as f32).collect();
        close(&z.to_vec().unwrap(), &want, &format!("scale4 then offset_scale, {what}"));
        close(&c.to_vec().unwrap(), &matmul_cpu(&a0, &b0, m, cols, k), &what);
        assert_eq!(partial.to_vec().unwrap(), run_sums(&sx0, 128), "{what}");
        let tile = |g: usize| -> f32 {
            let (r0, c0) = ((g / 10) * 8, (g % 10) * 16);
            (r0..r0 + 8).map(|r| sx0[r * 160 + c0..r * 160 + c0 + 16].iter().sum::<f32>()).sum()
        };
        assert_eq!(tiles.to_vec().unwrap(), (0..groups).map(tile).collect::<Vec<_>>(), "{what}");
    }
}

/// A stencil ping-pong, the steps of a scan reading their input whole, and a conditional
/// write in place, on session buffers launch after launch.
#[test]
fn neighbours_and_conditional_writes_in_a_session_match_the_cpu() {
    let p = program();
    for cap in [None, Some(4096u64)] {
        let mut s = p.session().unwrap();
        if let Some(c) = cap {
            s.set_max_alloc(c);
        }
        let (w, h) = (64usize, 96usize);
        let g0 = unit_floats(w * h, 15);
        let (mut a, mut b) = (s.buffer_from(&g0).unwrap(), s.buffer::<f32>(w * h).unwrap());
        let mut want = g0.clone();
        for step in 0..6 {
            let (src, dst) = if step % 2 == 0 { (&a, &mut b) } else { (&b, &mut a) };
            let launch = s
                .launch("stencil5")
                .global(&[w, h])
                .local(&[16, 4])
                .input(src, Pattern::halo(1))
                .output(dst, Pattern::ONE_TO_ONE)
                .scalar(w as u32)
                .scalar(h as u32);
            if step >= 3 {
                launch.submit().unwrap();
            } else {
                launch.run().unwrap();
            }
            want = stencil_cpu(&want, w, h);
        }
        close(&a.to_vec().unwrap(), &want, &format!("stencil, cap {cap:?}"));
        let n = 64 * 100;
        let (x0, y0) = (unit_floats(n, 9), unit_floats(n, 10));
        let (x, mut y) = (s.buffer_from(&x0).unwrap(), s.buffer_from(&y0).unwrap());
        for step in 0..4 {
            let launch = s
                .launch("keep_above")
                .global(&[n])
                .local(&[64])
                .input(&x, Pattern::ONE_TO_ONE)
                .inout(&mut y, Pattern::ONE_TO_ONE)
                .scalar(0.5f32 + step as f32 / 10.0);
            if step % 2 == 1 {
                launch.submit().unwrap();
            } else {
                launch.run().unwrap();
            }
        }
        let want: Vec<f32> = (0..n).map(|i| if x0[i] > 0.5 { x0[i] } else { y0[i] }).collect();
        assert_eq!(y.to_vec().unwrap(), want, "keep_above, cap {cap:?}");
    }
    // A whole input must fit a device: the scan runs with the buffers whole.
    let s = p.session().unwrap();
    let n = 64 * 32;
    let x0 = small(n, 3);
    let (mut a, mut b) = (s.buffer_from(&x0).unwrap(), s.buffer::<f32>(n).unwrap());
    let mut off = 1u32;
    while (off as usize) < n {
        s.launch("scan_step")
            .global(&[n])
            .local(&[64])
            .input(&a, Pattern::Whole)
            .output(&mut b, Pattern::ONE_TO_ONE)
            .scalar(off)
            .run()
            .unwrap();
        std::mem::swap(&mut a, &mut b);
        off *= 2;
    }
    assert_eq!(a.to_vec().unwrap(), running_sum(&x0));
}

/// The declarations at the top of this file, one-shot and, where a session form exists, on
/// session buffers: named pattern sides (`k:n`), a `__local` buffer per work-item, merged
/// outputs, a halo.
#[test]
fn declared_real_kernels_match_the_cpu_one_shot_and_on_session_buffers() {
    let rt = common::two_devices();
    let (m, n, k) = (128usize, 64usize, 32usize);
    let (a, b) = (unit_floats(m * k, 1), unit_floats(k * n, 2));
    let want = matmul_cpu(&a, &b, m, n, k);
    let mm = MatMul::new(&rt).unwrap();
    let mut c = vec![0f32; m * n];
    mm.run([n, m], &a, &b, &mut c, m as i32, n as i32, k as i32).unwrap();
    close(&c, &want, "declared matmul");
    let s = mm.session().unwrap();
    let on = mm.on(&s).unwrap();
    let (ab, bb) = (s.buffer_from(&a).unwrap(), s.buffer_from(&b).unwrap());
    let mut cb = s.buffer::<f32>(m * n).unwrap();
    for _ in 0..3 {
        on.run([n, m], &ab, &bb, &mut cb, m as i32, n as i32, k as i32).unwrap();
    }
    close(&cb.to_vec().unwrap(), &want, "declared matmul on session buffers");

    let data = lcg(5, 10_000);
    let mut bins = vec![0u32; 37];
    Histogram::new(&rt).unwrap().run(64 * 20, &data, 10_000, &mut bins, 37).unwrap();
    let mut want = vec![0u32; 37];
    for d in &data {
        want[(d % 37) as usize] += 1;
    }
    assert_eq!(bins, want);

    let (w, h) = (48usize, 32usize);
    let x = unit_floats(w * h, 4);
    let mut out = vec![0f32; w * h];
    Transpose::new(&rt).unwrap().run([w, h], &x, &mut out, w as u32, h as u32).unwrap();
    assert_eq!(out, transpose_cpu(&x, w, h));

    let x = small(128 * 30, 4);
    let mut partial = vec![0f32; 30];
    Partial::new(&rt).unwrap().run(64 * 30, &x, &mut partial).unwrap();
    assert_eq!(partial, run_sums(&x, 128));

    let (w, h) = (64usize, 48usize);
    let g = unit_floats(w * h, 6);
    let stencil = Stencil::new(&rt).unwrap();
    let mut once = vec![0f32; w * h];
    stencil.run([w, h], &g, &mut once, w as u32, h as u32).unwrap();
    close(&once, &stencil_cpu(&g, w, h), "declared stencil");
    let s = stencil.session().unwrap();
    let on = stencil.on(&s).unwrap();
    let (mut ga, mut gb) = (s.buffer_from(&g).unwrap(), s.buffer::<f32>(w * h).unwrap());
    let mut want = g.clone();
    for step in 0..4 {
        if step % 2 == 0 {
            on.run([w, h], &ga, &mut gb, w as u32, h as u32).unwrap();
        } else {
            on.submit([w, h], &gb, &mut ga, w as u32, h as u32).unwrap();
        }
        want = stencil_cpu(&want, w, h);
    }
    close(&ga.to_vec().unwrap(), &want, "declared stencil on session buffers");
}

/// A single work-group, 1-D and 2-D, one-shot under every balancer and in a session; and what
/// a launch refuses at the edges: empty buffers, a `__local` buffer of 0 bytes, a pattern that
/// splits a work-group.
#[test]
fn one_work_group_runs_everywhere_and_the_edges_are_refused_by_name() {
    let p = program();
    let (x, y0) = (unit_floats(64, 1), unit_floats(64, 2));
    let want: Vec<f32> = (0..64).map(|i| 2.0 * x[i] + y0[i]).collect();
    let (a, b) = (unit_floats(256, 5), unit_floats(256, 6));
    for (name, bal) in balancers() {
        let mut y = y0.clone();
        let launch = p
            .launch("group_saxpy")
            .global(&[64])
            .local(&[64])
            .scalar(2.0f32)
            .input(&x, Pattern::ONE_TO_ONE)
            .inout(&mut y, Pattern::ONE_TO_ONE);
        under(launch, bal).run().unwrap();
        close(&y, &want, &format!("one group, {name}"));
    }
    let s = p.session().unwrap();
    let (xs, mut ys) = (s.buffer_from(&x).unwrap(), s.buffer_from(&y0).unwrap());
    let (as_, bs) = (s.buffer_from(&a).unwrap(), s.buffer_from(&b).unwrap());
    let mut cs = s.buffer::<f32>(256).unwrap();
    for step in 0..4 {
        let launch = s
            .launch("group_saxpy")
            .global(&[64])
            .local(&[64])
            .scalar(1.0f32)
            .input(&xs, Pattern::ONE_TO_ONE)
            .inout(&mut ys, Pattern::ONE_TO_ONE);
        let tile = s
            .launch("matmul_tiled")
            .global(&[16, 16])
            .local(&[16, 16])
            .input(&as_, Pattern::ONE_TO_ONE)
            .input(&bs, Pattern::Whole)
            .output(&mut cs, Pattern::ONE_TO_ONE)
            .scalar(16i32)
            .scalar(16i32)
            .scalar(16i32);
        if step % 2 == 1 {
            launch.submit().unwrap();
            tile.submit().unwrap();
        } else {
            launch.run().unwrap();
            tile.run().unwrap();
        }
    }
    let want: Vec<f32> = (0..64).map(|i| 4.0 * x[i] + y0[i]).collect();
    close(&ys.to_vec().unwrap(), &want, "one group in a session");
    close(&cs.to_vec().unwrap(), &matmul_cpu(&a, &b, 16, 16, 16), "one tile in a session");
    let empty = p
        .launch("group_saxpy")
        .global(&[64])
        .local(&[64])
        .scalar(2.0f32)
        .input(&[] as &[f32], Pattern::ONE_TO_ONE)
        .inout(&mut [] as &mut [f32], Pattern::ONE_TO_ONE)
        .run()
        .unwrap_err()
        .to_string();
    assert!(empty.contains("parameter `x`") && empty.contains("an empty buffer"), "{empty}");
    // `reduce_partial` over `items` work-items, one partial per `per` of them, with `scratch`
    // floats of `__local` memory: the error it ends with.
    let refused = |items: usize, per: u64, scratch: usize| {
        p.launch("reduce_partial")
            .global(&[items])
            .local(&[64])
            .input(&vec![0f32; 2 * items], Pattern::ratio(2, 1).unwrap())
            .output(&mut [0f32; 2], Pattern::ratio(1, per).unwrap())
            .local_buffer::<f32>(scratch)
            .run()
            .unwrap_err()
            .to_string()
    };
    let zero = refused(128, 64, 0);
    assert!(zero.contains("parameter `scratch`") && zero.contains("0 bytes"), "{zero}");
    let split = refused(192, 96, 64);
    assert!(split.contains("parameter `partial`") && split.contains("pattern 1:96"), "{split}");
    assert!(s.buffer::<f32>(0).unwrap_err().to_string().contains("empty session buffer"));
}
