//! Sources loaded at run time for a `kernel!` or `#[coexec]` declaration (`with_source`):
//! checked against the declaration before they are built, with the compile-time check's words,
//! and run when they fit. (`hetdsl/tests/runtime_source.rs` compares the words with the
//! compile-fail snapshot of the same mistake.)

mod common;

use std::path::Path;

use common::{assert_coexecuted, round_robin};
use hetdsl::{KernelSource, Runtime};
use hetdsl_samples::samples::matvec::{reference_row, tolerance, MatVecKernel};

/// One per work-group, as `kernels/test/group_stats.cl` declares it.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, hetdsl::Pod)]
struct GroupStats {
    sum: f32,
    max: f32,
    count: u32,
}

hetdsl::kernel! {
    #[kernel(file = "kernels/test/group_stats.cl", local = 64)]
    struct Stats {
        fn group_stats(
            #[input(1:1)] x: &[f32],
            #[output(1:64)] stats: &mut [GroupStats],
            #[local] sums: [f32; 64],
            #[local] maxes: [f32; 64],
        );
    }
}

/// The same kernel through `#[coexec]`.
#[hetdsl::coexec(file = "kernels/matvec.cl", local = 64)]
fn matvec(
    #[input(cols:1)] a: &[f32],
    #[input(whole)] x: &[f32],
    #[output(1:1)] y: &mut [f32],
    cols: i32,
);

fn runtime() -> Runtime {
    let rt = Runtime::new().expect("an OpenCL runtime (install pocl-opencl-icd)");
    assert!(rt.devices().len() >= 2, "run with POCL_DEVICES=\"pthread basic\"");
    rt
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn the_same_source_loaded_at_run_time_builds_and_runs() {
    let rt = runtime();
    let source = KernelSource::from_file(root().join("kernels/matvec.cl"), &[]).unwrap();
    let kernel = MatVecKernel::with_source(&rt, &source).expect("the source fits");
    let (rows, cols) = (64 * 16, 19usize);
    let a: Vec<f32> = (0..rows * cols).map(|i| ((i * 13) % 29) as f32 / 29.0 - 0.5).collect();
    let x: Vec<f32> = (0..cols).map(|j| j as f32 / cols as f32).collect();
    let mut y = vec![f32::NAN; rows];
    let report = kernel
        .launch(rows, &a, &x, &mut y, cols as i32)
        .unwrap()
        .on_devices(&[0, 1])
        .balancer(round_robin(3))
        .run()
        .expect("runs");
    assert_coexecuted(&report);
    for (row, got) in y.iter().enumerate() {
        let (want, magnitude) = reference_row(&a, &x, cols, row);
        assert!((f64::from(*got) - want).abs() <= tolerance(cols, magnitude), "row {row}");
    }
}

#[test]
fn a_struct_that_grew_in_a_source_loaded_at_run_time_is_refused_by_its_size() {
    let rt = runtime();
    let path = root().join("kernels/test/group_stats.cl");
    let text = std::fs::read_to_string(path)
        .unwrap()
        .replace("uint count;", "uint count;\n    uint flags;");
    let source = KernelSource::from_text("group_stats.cl", text);
    let e = Stats::with_source(&rt, &source).err().expect("refused").to_string();
    assert!(
        e.contains(
            "`stats`: `GroupStats` is 16 bytes in OpenCL (group_stats.cl:3); the Rust type must be \
             too: #[repr(C)], the same fields in the same order"
        ),
        "{e}"
    );
    // Unchanged, it fits.
    let source = KernelSource::from_file(root().join("kernels/test/group_stats.cl"), &[]).unwrap();
    assert!(Stats::with_source(&rt, &source).is_ok());
}

#[test]
fn a_coexec_function_takes_a_source_loaded_at_run_time_too() {
    let rt = runtime();
    let text = std::fs::read_to_string(root().join("kernels/matvec.cl")).unwrap();
    let changed =
        KernelSource::from_text("matvec.cl", text.replace("const int cols", "const uint cols"));
    let e = matvec::with_source(&rt, &changed).err().expect("refused").to_string();
    assert!(
        e.contains("parameter `cols` is `const uint` in matvec.cl:6, so the Rust type must be `u32`, found `i32`"),
        "{e}"
    );
    let program = matvec::with_source(&rt, &KernelSource::from_text("matvec.cl", text)).unwrap();
    let (rows, cols) = (64 * 8, 5usize);
    let a: Vec<f32> = (0..rows * cols).map(|i| (i % 7) as f32 - 3.0).collect();
    let x = vec![0.5f32; cols];
    let mut y = vec![f32::NAN; rows];
    let report = matvec::launch_on(&program, rows, &a, &x, &mut y, cols as i32)
        .unwrap()
        .on_devices(&[0, 1])
        .balancer(round_robin(2))
        // A back-up copy of a straggler's package that wins would leave that device one
        // package to its name (seen on a loaded machine); this test is about the source.
        .backups(false)
        .run()
        .expect("runs");
    assert_coexecuted(&report);
    for (row, got) in y.iter().enumerate() {
        let (want, magnitude) = reference_row(&a, &x, cols, row);
        assert!((f64::from(*got) - want).abs() <= tolerance(cols, magnitude), "row {row}");
    }
}

hetdsl::kernel! {
    /// A transpose over a 1-D NDRange, for sources loaded at run time that ask another one.
    #[kernel(file = "kernels/test/transpose_rows.cl", local = 64)]
    struct TransposeRows {
        fn transpose_rows(#[input(whole)] input: &[f32], #[output(1:1)] out: &mut [f32], width: i32, height: i32);
    }
}

/// The same through `#[coexec]`.
#[hetdsl::coexec(file = "kernels/test/transpose_rows.cl", local = 64)]
fn transpose_rows(
    #[input(whole)] input: &[f32],
    #[output(1:1)] out: &mut [f32],
    width: i32,
    height: i32,
);

/// `transpose_rows` written for a 2-D NDRange: run over a 1-D one, every work-item's row would
/// be 0 and it would read past the input.
const TRANSPOSE_2D: &str =
    "__kernel void transpose_rows(__global const float* in, __global float* out,\n\
                            int width, int height) {\n\
                            int x = get_global_id(0);\n\
                            int y = get_global_id(1);\n\
                            out[y * width + x] = in[x * height + y];\n\
                            }\n";

/// `kernels/test/transpose_rows.cl` requiring work-groups of `size` × 1 × 1.
fn transpose_requiring(size: u32) -> KernelSource {
    let text = std::fs::read_to_string(root().join("kernels/test/transpose_rows.cl")).unwrap();
    let attr = format!("__kernel __attribute__((reqd_work_group_size({size}, 1, 1))) void");
    KernelSource::from_text("transpose_rows.cl", text.replace("__kernel void", &attr))
}

/// The problems of a source refused by `with_source`.
fn problems<T>(built: hetdsl::Result<T>) -> Vec<String> {
    match built {
        Err(hetdsl::Error::SourceMismatch { problems, .. }) => problems,
        Err(other) => panic!("expected SourceMismatch, got {other}"),
        Ok(_) => panic!("the source was accepted"),
    }
}

const READS_DIMENSION_1: &str = "kernel `transpose_rows` calls `get_global_id(1)` at \
    transpose_2d.cl:4, but `local = 64` declares a 1-D NDRange, in which that call answers 0 for \
    every work-item: a kernel written for more dimensions computes the wrong elements. Declare \
    `local = [X, Y]` for a 2-D NDRange (`[64, 1]` over one row)";

const REQUIRES_32: &str = "kernel `transpose_rows` requires work-groups of [32, 1, 1] (its \
    `reqd_work_group_size` at transpose_rows.cl:3), but `local = 64` declares [64, 1, 1]: every \
    launch would be refused. Declare the size the kernel requires";

/// A `width` × `height` output of the transposed `input` (height-wide), as `transpose_rows`.
fn transpose_cpu(input: &[f32], width: usize, height: usize) -> Vec<f32> {
    (0..width * height).map(|i| input[(i % width) * height + i / width]).collect()
}

#[test]
fn a_source_loaded_at_run_time_is_held_to_the_declared_local_as_at_compile_time() {
    let rt = runtime();
    let two_d = KernelSource::from_text("transpose_2d.cl", TRANSPOSE_2D);
    assert_eq!(problems(TransposeRows::with_source(&rt, &two_d)), [READS_DIMENSION_1]);
    assert_eq!(problems(TransposeRows::with_source(&rt, &transpose_requiring(32))), [REQUIRES_32]);
    // A source requiring the declared size fits, and runs as the CPU does.
    let kernel = TransposeRows::with_source(&rt, &transpose_requiring(64)).expect("fits");
    let (width, height) = (48usize, 64usize);
    let input = common::unit_floats(width * height, 7);
    let mut out = vec![f32::NAN; width * height];
    let report = kernel
        .launch(width * height, &input, &mut out, width as i32, height as i32)
        .unwrap()
        .on_devices(&[0, 1])
        .balancer(round_robin(3))
        .backups(false)
        .run()
        .expect("runs");
    assert_coexecuted(&report);
    assert_eq!(out, transpose_cpu(&input, width, height));
}

#[test]
fn a_coexec_function_holds_a_source_loaded_at_run_time_to_its_local_too() {
    let rt = runtime();
    let two_d = KernelSource::from_text("transpose_2d.cl", TRANSPOSE_2D);
    assert_eq!(problems(transpose_rows::with_source(&rt, &two_d)), [READS_DIMENSION_1]);
    assert_eq!(problems(transpose_rows::with_source(&rt, &transpose_requiring(32))), [REQUIRES_32]);
    let program = transpose_rows::with_source(&rt, &transpose_requiring(64)).expect("fits");
    let (width, height) = (64usize, 40usize);
    let input = common::unit_floats(width * height, 8);
    let mut out = vec![f32::NAN; width * height];
    let report = transpose_rows::launch_on(
        &program,
        width * height,
        &input,
        &mut out,
        width as i32,
        height as i32,
    )
    .unwrap()
    .on_devices(&[0, 1])
    .balancer(round_robin(3))
    .backups(false)
    .run()
    .expect("runs");
    assert_coexecuted(&report);
    assert_eq!(out, transpose_cpu(&input, width, height));
}
