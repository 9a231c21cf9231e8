//! Kernels shaped by build options through the DSL: `-D BLOCK_SIZE` sizes a `__local` tile and
//! chooses the signature (`#if BLOCK_SIZE > 8`), `-D USE_DOUBLE` the element type. The macro
//! checks each declaration against the branch those options select and builds the program with
//! them; each run is co-executed on two devices and checked against a CPU loop.

mod common;

use common::{assert_coexecuted, round_robin};
use hetdsl::Runtime;

hetdsl::kernel! {
    /// 16 x 16 tiles of doubles, with an offset (the `BLOCK_SIZE > 8` signature).
    #[kernel(
        file = "kernels/test/tile_defines.cl",
        local = [16, 16],
        defines = ["BLOCK_SIZE=16", "USE_DOUBLE"],
        options = "-cl-mad-enable"
    )]
    struct TileBig {
        fn tile(#[input(1:1)] input: &[f64], #[output(1:1)] out: &mut [f64], scale: f64, offset: f64, width: u32);
    }
}

/// 4 x 4 tiles of floats, no offset, the define given inside `options`.
#[hetdsl::coexec(file = "kernels/test/tile_defines.cl", name = "tile", local = [4, 4], options = "-D BLOCK_SIZE=4")]
fn tile_small(#[input(1:1)] input: &[f32], #[output(1:1)] out: &mut [f32], scale: f32, width: u32);

/// The CPU reference: each `b` x `b` tile transposed in place, then `v * scale + offset`.
fn reference(
    input: &[f64],
    width: usize,
    height: usize,
    b: usize,
    scale: f64,
    offset: f64,
) -> Vec<f64> {
    let mut out = vec![0.0; width * height];
    for y in 0..height {
        for x in 0..width {
            let (ty, tx) = (y / b * b, x / b * b);
            let (ly, lx) = (y - ty, x - tx);
            out[y * width + x] = input[(ty + lx) * width + (tx + ly)] * scale + offset;
        }
    }
    out
}

fn inputs(n: usize) -> Vec<f64> {
    common::lcg(7, n).into_iter().map(|v| f64::from(v % 10_000) / 100.0).collect()
}

fn runtime() -> Runtime {
    let rt = Runtime::new().expect("an OpenCL runtime");
    assert!(rt.devices().len() >= 2, "run with POCL_DEVICES=\"pthread basic\"");
    rt
}

#[test]
fn block_16_doubles_with_offset_co_executes_and_matches_cpu() {
    let rt = runtime();
    let k = TileBig::new(&rt).expect("builds with -D BLOCK_SIZE=16 -D USE_DOUBLE");
    let (w, h) = (256usize, 128usize);
    let input = inputs(w * h);
    let mut out = vec![f64::NAN; w * h];
    let report = k
        .launch([w, h], &input, &mut out, 1.5, -2.0, w as u32)
        .expect("launch")
        .balancer(round_robin(4))
        .run()
        .expect("runs");
    assert_coexecuted(&report);
    let want = reference(&input, w, h, 16, 1.5, -2.0);
    for i in 0..w * h {
        assert!(
            (out[i] - want[i]).abs() <= 1e-9 * want[i].abs().max(1.0),
            "out[{i}] = {}, want {}",
            out[i],
            want[i]
        );
    }
}

#[test]
fn block_4_floats_via_options_co_executes_and_matches_cpu() {
    let rt = runtime();
    let (w, h) = (64usize, 96usize);
    let input64 = inputs(w * h);
    let input: Vec<f32> = input64.iter().map(|&v| v as f32).collect();
    let mut out = vec![f32::NAN; w * h];
    let report = tile_small::launch(&rt, [w, h], &input, &mut out, 0.5, w as u32)
        .expect("launch")
        .balancer(round_robin(4))
        .run()
        .expect("runs");
    assert_coexecuted(&report);
    let exact: Vec<f64> = input.iter().map(|&v| f64::from(v)).collect();
    let want = reference(&exact, w, h, 4, 0.5, 0.0);
    for i in 0..w * h {
        assert!(
            (f64::from(out[i]) - want[i]).abs() <= 1e-5 * want[i].abs().max(1.0),
            "out[{i}] = {}, want {}",
            out[i],
            want[i]
        );
    }
}
