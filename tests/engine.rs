//! The engine on real OpenCL devices (PoCL's `pthread` and `basic` CPU devices in CI): every
//! output pattern, whole inputs, 2-D ranges and build errors, each checked against a plain CPU
//! loop.

mod common;

use common::{assert_coexecuted, every_balancer, lcg, program, round_robin};
use hetdsl::balance::Static;
use hetdsl::{Error, KernelSource, Pattern, Runtime};
use std::path::Path;

#[test]
fn one_to_one_integer_output_is_exact() {
    let p = program("engine.cl");
    let n = 1 << 18;
    let a: Vec<i32> = lcg(1, n).iter().map(|v| (*v % 2000) as i32 - 1000).collect();
    let b: Vec<i32> = lcg(2, n).iter().map(|v| (*v % 2000) as i32 - 1000).collect();
    let mut out = vec![0i32; n];
    let r = p
        .launch("scale_add")
        .global(&[n])
        .local(&[64])
        .input(&a, Pattern::ONE_TO_ONE)
        .input(&b, Pattern::ONE_TO_ONE)
        .output(&mut out, Pattern::ONE_TO_ONE)
        .scalar(7i32)
        .balancer(round_robin(4))
        .run()
        .unwrap();
    let expected: Vec<i32> = a.iter().zip(&b).map(|(x, y)| x * 7 + y).collect();
    assert_eq!(out, expected);
    assert_coexecuted(&r);
}

#[test]
fn one_result_per_work_group() {
    let p = program("engine.cl");
    let (n, lws) = (1 << 18, 128);
    let input: Vec<u32> = lcg(3, n).iter().map(|v| v % 1000).collect();
    let mut sums = vec![0u32; n / lws];
    let r = p
        .launch("group_sum")
        .global(&[n])
        .local(&[lws])
        .input(&input, Pattern::ONE_TO_ONE)
        .output(&mut sums, Pattern::ratio(1, lws as u64).unwrap())
        .local_buffer::<u32>(lws)
        .balancer(round_robin(4))
        .run()
        .unwrap();
    let expected: Vec<u32> = input.chunks(lws).map(|c| c.iter().sum()).collect();
    assert_eq!(sums, expected);
    assert_coexecuted(&r);
}

#[test]
fn four_results_per_work_item() {
    let p = program("engine.cl");
    let n = 1 << 17;
    let input = lcg(4, n);
    let mut out = vec![0u32; 4 * n];
    let r = p
        .launch("expand4")
        .global(&[n])
        .local(&[32])
        .input(&input, Pattern::ONE_TO_ONE)
        .output(&mut out, Pattern::ratio(4, 1).unwrap())
        .balancer(round_robin(4))
        .run()
        .unwrap();
    let expected = common::expand4_reference(&input);
    assert_eq!(out, expected);
    assert_coexecuted(&r);
}

#[test]
fn whole_input_reaches_every_device() {
    let p = program("engine.cl");
    let n = 1 << 15;
    let table: Vec<u32> = lcg(5, 997);
    let keys = lcg(6, n);
    let mut out = vec![0u32; n];
    let r = p
        .launch("lookup")
        .global(&[n])
        .local(&[64])
        .input(&table, Pattern::Whole)
        .scalar(table.len() as u32)
        .input(&keys, Pattern::ONE_TO_ONE)
        .output(&mut out, Pattern::ONE_TO_ONE)
        .balancer(round_robin(4))
        .run()
        .unwrap();
    let expected: Vec<u32> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| table[(*k % 997) as usize].wrapping_add(i as u32))
        .collect();
    assert_eq!(out, expected);
    assert_coexecuted(&r);
}

#[test]
fn two_dimensional_ranges_split_into_row_bands() {
    let p = program("engine.cl");
    let (w, h) = (96, 64);
    let mut out = vec![0u32; w * h];
    let r = p
        .launch("coords")
        .global(&[w, h])
        .local(&[16, 4])
        .output(&mut out, Pattern::ONE_TO_ONE)
        .balancer(round_robin(4))
        .run()
        .unwrap();
    let expected: Vec<u32> =
        (0..h).flat_map(|y| (0..w).map(move |x| (y * 1000 + x) as u32)).collect();
    assert_eq!(out, expected);
    assert_coexecuted(&r);
}

#[test]
fn static_split_runs_one_package_per_device() {
    let p = program("engine.cl");
    let n = 1 << 14;
    let input = lcg(7, n);
    let mut out = vec![0u32; 4 * n];
    let r = common::expand4(&p, n, &input, &mut out)
        .balancer(Box::new(Static::with_weights(vec![1.0, 3.0]).reversed()))
        .on_devices(&[0, 1]) // two weights, two devices, on any machine
        // This test pins where Static puts each package: no speculative copies.
        .backups(false)
        .run()
        .unwrap();
    assert_eq!(
        out[4 * 5..4 * 6],
        [
            input[5],
            input[5].wrapping_mul(2),
            input[5].wrapping_mul(input[5]),
            input[5] ^ 0x5a5a5a5a
        ]
    );
    assert_eq!(r.devices.iter().map(|d| d.packages).collect::<Vec<_>>(), vec![1, 1]);
    // Reverse order: device 1 (weight 3) holds the first three quarters.
    let first = r.trace.iter().find(|t| t.package.offset == 0).unwrap();
    assert_eq!((first.device, first.package.len), (1, 192));
}

#[test]
fn build_errors_name_the_original_file_and_line() {
    let rt = Runtime::new().unwrap();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kernels/broken.cl");
    let source = KernelSource::from_file(&path, &[]).unwrap();
    match rt.program(&source) {
        Err(Error::Build { file, log }) => {
            assert!(file.ends_with("broken.cl"), "{file}");
            assert!(log.contains("broken.cl:5:"), "log should name broken.cl line 5:\n{log}");
            assert!(log.contains("undeclared_identifier"), "{log}");
        }
        Err(e) => panic!("expected a build error, got {e}"),
        Ok(_) => panic!("a broken kernel built"),
    }
}

#[test]
fn a_sub_range_of_work_groups_writes_only_its_outputs() {
    let p = program("engine.cl");
    let (n, lws) = (1 << 14, 64);
    let input = lcg(8, n);
    let sentinel = 0xdead_beef;
    let mut out = vec![sentinel; 4 * n];
    let r = p
        .launch("expand4")
        .global(&[n])
        .local(&[lws])
        .input(&input, Pattern::ONE_TO_ONE)
        .output(&mut out, Pattern::ratio(4, 1).unwrap())
        .groups(40..200)
        .balancer(round_robin(3))
        .run()
        .unwrap();
    assert_eq!((r.first_group, r.total_groups), (40, 160));
    for (i, &v) in input.iter().enumerate() {
        let got = &out[4 * i..4 * i + 4];
        if (40 * lws..200 * lws).contains(&i) {
            assert_eq!(got, [v, v.wrapping_mul(2), v.wrapping_mul(v), v ^ 0x5a5a5a5a], "item {i}");
        } else {
            assert_eq!(got, [sentinel; 4], "item {i} is outside the range and must be untouched");
        }
    }
    assert_coexecuted(&r);
    // A range outside the NDRange is refused.
    let mut out2 = vec![0u32; 4 * n];
    let bad = p
        .launch("expand4")
        .global(&[n])
        .local(&[lws])
        .input(&input, Pattern::ONE_TO_ONE)
        .output(&mut out2, Pattern::ratio(4, 1).unwrap())
        .groups(200..300)
        .run();
    assert!(matches!(bad, Err(Error::BadRange(_))), "{bad:?}");
}

#[test]
fn local_memory_sized_per_work_item_follows_the_work_group() {
    // Each work-item keeps two values in scratch at 2*lid and 2*lid+1, then reads its
    // neighbour's pair: the buffer must hold 2 × the work-group size, whatever that size is.
    const SRC: &str =
        "__kernel void pairs(__global const uint* in, __global uint* out, __local uint* scratch) {
        const size_t lid = get_local_id(0), n = get_local_size(0), i = get_global_id(0);
        scratch[2 * lid] = in[i];
        scratch[2 * lid + 1] = in[i] * 3u;
        barrier(CLK_LOCAL_MEM_FENCE);
        const size_t j = (lid + 1) % n;
        out[i] = scratch[2 * j] + scratch[2 * j + 1];
    }";
    let rt = Runtime::new().unwrap();
    let p = rt.program(&KernelSource::from_text("pairs.cl", SRC)).unwrap();
    let n = 1 << 14;
    let input: Vec<u32> = lcg(41, n).iter().map(|v| v % 100_000).collect();
    for lws in [32usize, 128] {
        let mut out = vec![0u32; n];
        let r = p
            .launch("pairs")
            .global(&[n])
            .local(&[lws])
            .input(&input, Pattern::ONE_TO_ONE)
            .output(&mut out, Pattern::ONE_TO_ONE)
            .local_buffer_per_item::<u32>(2)
            .balancer(round_robin(4))
            .run()
            .unwrap();
        let expected: Vec<u32> = (0..n)
            .map(|i| {
                let j = i - i % lws + (i % lws + 1) % lws;
                input[j] + input[j] * 3
            })
            .collect();
        assert_eq!(out, expected, "work-groups of {lws}");
        assert_coexecuted(&r);
    }
}

/// Kernels whose outputs no pattern describes: every work-item may write anywhere in them.
const REDUCE_SRC: &str = "
__kernel void histogram(__global const uint* in, __global uint* bins, const uint nbins,
                        __global uint* weighted) {
    const size_t i = get_global_id(0);
    atomic_inc(&bins[in[i] % nbins]);
    atomic_add(&weighted[in[i] % nbins], in[i] & 0xffu);
}
__kernel void find(__global const uint* in, const uint needle, __global uint* changed,
                   __global uint* copy) {
    const size_t i = get_global_id(0);
    if (in[i] == needle) changed[0] = 1u;
    copy[i] = in[i] + 1u;
}
__kernel void maximum(__global const int* in, __global int* best) {
    atomic_max(&best[0], in[get_global_id(0)]);
}
";

fn reduce_program() -> hetdsl::Program {
    let rt = Runtime::new().unwrap();
    assert!(
        rt.devices().len() >= 2,
        "two OpenCL devices expected (POCL_DEVICES=\"pthread basic\")"
    );
    rt.program(&KernelSource::from_text("reduce.cl", REDUCE_SRC)).unwrap()
}

const RN: usize = 1 << 14;
const NBINS: usize = 37;

/// The histogram of `REDUCE_SRC` with both its summed outputs.
fn histogram<'a>(
    p: &'a hetdsl::Program,
    input: &'a [u32],
    bins: &'a mut [u32],
    weighted: &'a mut [u32],
) -> hetdsl::Launch<'a> {
    p.launch("histogram")
        .global(&[RN])
        .local(&[64])
        .input(input, Pattern::ONE_TO_ONE)
        .reduce(bins, hetdsl::Merge::Sum)
        .scalar(NBINS as u32)
        .reduce(weighted, hetdsl::Merge::Sum)
}

#[test]
fn a_histogram_merged_by_sum_is_exact_with_every_balancer() {
    let p = reduce_program();
    let input = lcg(51, RN);
    // The caller's initial counts take part: the result is initial + every contribution.
    let initial: Vec<u32> = (0..NBINS as u32).map(|b| b * 1000).collect();
    let mut counts = initial.clone();
    let mut weights = initial.clone();
    for &v in &input {
        counts[v as usize % NBINS] += 1;
        weights[v as usize % NBINS] += v & 0xff;
    }
    for (name, balancer) in every_balancer() {
        let mut bins = initial.clone();
        let mut weighted = initial.clone();
        let r = histogram(&p, &input, &mut bins, &mut weighted)
            .balancer(balancer)
            .run()
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(bins, counts, "{name}");
        assert_eq!(weighted, weights, "{name}");
        common::assert_coexecuted_once(&r);
    }
    // And with both devices running several packages each, for certain.
    let (mut bins, mut weighted) = (initial.clone(), initial.clone());
    let r = histogram(&p, &input, &mut bins, &mut weighted).balancer(round_robin(4)).run().unwrap();
    assert_eq!((bins, weighted), (counts, weights));
    assert_coexecuted(&r);
}

#[test]
fn a_changed_flag_merged_by_or_is_set_exactly_when_a_work_item_sets_it() {
    use hetdsl::Merge;
    let p = reduce_program();
    let input = lcg(52, RN);
    let copy_expected: Vec<u32> = input.iter().map(|v| v + 1).collect();
    for (name, balancer) in every_balancer() {
        for (needle, expected) in [(input[RN - 3], 1u32), (u32::MAX, 0)] {
            assert_eq!(input.contains(&needle), expected == 1);
            let mut changed = [0u32];
            let mut copy = vec![0u32; RN];
            p.launch("find")
                .global(&[RN])
                .local(&[64])
                .input(&input, Pattern::ONE_TO_ONE)
                .scalar(needle)
                .reduce(&mut changed, Merge::Or)
                .output(&mut copy, Pattern::ONE_TO_ONE)
                .balancer(balancer_again(name))
                .run()
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(changed, [expected], "{name}, needle {needle}");
            assert_eq!(copy, copy_expected, "{name}: the sliced output beside it");
        }
        drop(balancer);
    }
}

fn balancer_again(name: &str) -> Box<dyn hetdsl::Balancer> {
    name.parse::<hetdsl::balance::BalancerSpec>().unwrap().build()
}

#[test]
fn a_maximum_merged_by_max_includes_the_callers_value() {
    use hetdsl::Merge;
    let p = reduce_program();
    let input: Vec<i32> = lcg(53, RN).iter().map(|v| (*v % 2_000_001) as i32 - 1_000_000).collect();
    let data_max = *input.iter().max().unwrap();
    for (name, balancer) in every_balancer() {
        for initial in [i32::MIN, data_max + 7] {
            let mut best = [initial];
            p.launch("maximum")
                .global(&[RN])
                .local(&[64])
                .input(&input, Pattern::ONE_TO_ONE)
                // The form the macros generate.
                .arg(hetdsl::Arg::reduce(&mut best, Merge::Max))
                .balancer(balancer_again(name))
                .run()
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(best, [initial.max(data_max)], "{name}");
        }
        drop(balancer);
    }
}

/// Inputs of a package larger than the write chunk are staged and written in several chunks
/// (across threads when large), and every byte still lands where it belongs.
#[test]
fn packages_larger_than_a_write_chunk_arrive_whole() {
    let p = program("session.cl");
    // 64 MiB and a little more per input, in one package per device.
    let n = (1 << 24) + 64 * 3;
    let x: Vec<f32> = (0..n).map(|i| (i % 1000) as f32).collect();
    let y: Vec<f32> = (0..n).map(|i| (i % 7) as f32 - 3.0).collect();
    let mut out = vec![0f32; n];
    p.launch("saxpy")
        .global(&[n])
        .local(&[64])
        .input(&x, Pattern::ONE_TO_ONE)
        .input(&y, Pattern::ONE_TO_ONE)
        .output(&mut out, Pattern::ONE_TO_ONE)
        .scalar(2.0f32)
        .balancer(Box::new(Static::nominal()))
        .run()
        .unwrap();
    for i in 0..n {
        assert_eq!(out[i], 2.0 * x[i] + y[i], "element {i}");
    }
}
