//! The engine on real OpenCL devices (PoCL's `pthread` and `basic` CPU devices in CI): every
//! output pattern, whole inputs, 2-D ranges and build errors, each checked against a plain CPU
//! loop.

mod common;

use common::{assert_coexecuted, lcg, program, round_robin};
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
    let expected: Vec<u32> = input
        .iter()
        .flat_map(|&v| [v, v.wrapping_mul(2), v.wrapping_mul(v), v ^ 0x5a5a5a5a])
        .collect();
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
    let r = p
        .launch("expand4")
        .global(&[n])
        .local(&[64])
        .input(&input, Pattern::ONE_TO_ONE)
        .output(&mut out, Pattern::ratio(4, 1).unwrap())
        .balancer(Box::new(Static::with_weights(vec![1.0, 3.0]).reversed()))
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
