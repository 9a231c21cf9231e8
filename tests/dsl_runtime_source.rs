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
