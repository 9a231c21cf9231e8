//! Patterns whose sides name a `const` or a scalar parameter of the kernel (`cols:1`), checked
//! when the kernel is called, and run-time errors that name the argument as it was declared.
//! On PoCL's two CPU devices, every result against a CPU loop.

mod common;

use common::{assert_coexecuted, round_robin};
use hetdsl::{Error, Runtime};
use hetdsl_samples::samples::matvec::{reference_row, tolerance, MatVec, MatVecKernel};
use hetdsl_samples::samples::{Sample, Size};

/// Work-items per group of the declarations below.
const GROUP: usize = 64;

hetdsl::kernel! {
    /// The sample's kernel under other Rust names than the OpenCL ones (`y` is `out` here).
    #[kernel(file = "kernels/matvec.cl", name = "matvec", local = 64)]
    struct Renamed {
        fn product(
            #[input(width:1)] matrix: &[f32],
            #[input(whole)] vector: &[f32],
            #[output(1:1)] out: &mut [f32],
            width: i32,
        );
    }
}

hetdsl::kernel! {
    /// A wrong pattern on purpose: one element of `y` per `cols` work-items, which splits a
    /// work-group of 64 unless `cols` divides 64. Refused at call time for other `cols`.
    #[kernel(file = "kernels/matvec.cl", local = 64)]
    struct SparseRows {
        fn matvec(
            #[input(cols:1)] a: &[f32],
            #[input(whole)] x: &[f32],
            #[output(1:cols)] y: &mut [f32],
            cols: i32,
        );
    }
}

/// A group's sum and maximum per work-group, its pattern `1:GROUP` naming a `const`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, hetdsl::Pod)]
struct GroupStats {
    sum: f32,
    max: f32,
    count: u32,
}

#[hetdsl::coexec(file = "kernels/test/group_stats.cl", local = 64)]
fn group_stats(
    #[input(1:1)] x: &[f32],
    #[output(1:GROUP)] stats: &mut [GroupStats],
    #[local] sums: [f32; GROUP],
    #[local] maxes: [f32; GROUP],
);

fn runtime() -> Runtime {
    let rt = Runtime::new().expect("an OpenCL runtime (install pocl-opencl-icd)");
    assert!(rt.devices().len() >= 2, "run with POCL_DEVICES=\"pthread basic\"");
    rt
}

/// The message of `BadDeclaredArgument` at `index` named `name`, or a panic saying what came.
fn declared_error<T>(r: hetdsl::Result<T>, index: usize, name: &str) -> String {
    match r {
        Err(e @ Error::BadDeclaredArgument { .. }) => {
            assert_eq!(e.argument_index(), Some(index), "{e}");
            let Error::BadDeclaredArgument { name: got, .. } = &e else { unreachable!() };
            assert_eq!(got, name, "{e}");
            e.to_string()
        }
        Err(other) => panic!("expected argument {index} (`{name}`) refused, got {other:?}"),
        Ok(_) => panic!("expected argument {index} (`{name}`) refused, got Ok"),
    }
}

#[test]
fn matvec_with_a_pattern_from_its_cols_parameter_matches_cpu_at_several_widths() {
    let rt = runtime();
    for cols in [1usize, 7, 64, 200, 333] {
        let kernel = MatVecKernel::new(&rt).expect("matvec builds");
        let mut sample = MatVec::with_shape(GROUP * 40, cols, Size::Small, kernel).unwrap();
        let report = sample.run(Some(&[0, 1]), Some(round_robin(3)), None).expect("matvec runs");
        assert_coexecuted(&report);
        let verdict = sample.verify();
        assert!(verdict.correct, "cols {cols}: {verdict}");
    }
}

#[test]
fn a_pattern_from_a_renamed_parameter_runs_and_matches_cpu() {
    let rt = runtime();
    let kernel = Renamed::new(&rt).expect("builds");
    let (rows, cols) = (GROUP * 24, 45usize);
    let matrix: Vec<f32> =
        (0..rows * cols).map(|i| ((i * 7919) % 61) as f32 / 61.0 - 0.5).collect();
    let vector: Vec<f32> = (0..cols).map(|j| (j % 5) as f32 - 2.0).collect();
    let mut out = vec![f32::NAN; rows];
    let report = kernel
        .launch(rows, &matrix, &vector, &mut out, cols as i32)
        .expect("launch")
        .on_devices(&[0, 1])
        .balancer(round_robin(3))
        .run()
        .expect("runs");
    assert_coexecuted(&report);
    for (row, got) in out.iter().enumerate() {
        let (want, magnitude) = reference_row(&matrix, &vector, cols, row);
        let diff = (f64::from(*got) - want).abs();
        assert!(diff <= tolerance(cols, magnitude), "row {row}: got {got}, want {want}");
    }
}

#[test]
fn a_pattern_from_a_const_splits_one_struct_per_work_group() {
    let rt = runtime();
    let groups = 96;
    let x: Vec<f32> = (0..groups * GROUP).map(|i| ((i * 31) % 101) as f32 / 101.0).collect();
    let mut stats = vec![GroupStats::default(); groups];
    let report = group_stats::launch(&rt, groups * GROUP, &x, &mut stats)
        .expect("launch")
        .on_devices(&[0, 1])
        .balancer(round_robin(3))
        .run()
        .expect("runs");
    assert_coexecuted(&report);
    for (g, s) in stats.iter().enumerate() {
        let chunk = &x[g * GROUP..(g + 1) * GROUP];
        let max = chunk.iter().copied().fold(f32::MIN, f32::max);
        let sum: f32 = chunk.iter().sum();
        assert!((s.sum - sum).abs() <= 1e-4 * sum.max(1.0), "group {g}: {} vs {sum}", s.sum);
        assert_eq!((s.max, s.count), (max, GROUP as u32), "group {g}");
    }
}

#[test]
fn a_named_side_that_is_not_positive_is_refused_naming_the_argument() {
    let rt = runtime();
    let kernel = MatVecKernel::new(&rt).expect("builds");
    let (a, x, mut y) = (vec![1.0f32; 64], vec![1.0f32; 1], vec![0.0f32; 64]);
    for cols in [0, -3] {
        let msg = declared_error(kernel.run(64, &a, &x, &mut y, cols), 0, "a");
        assert_eq!(
            msg,
            format!(
                "argument 0 (`a`): pattern `cols:1`: both sides of a pattern `a:b` are positive \
                 (`cols` is {cols})"
            )
        );
    }
    // The launch itself refuses it too, before anything is built or enqueued.
    let msg = declared_error(kernel.launch(64, &a, &x, &mut y, 0), 0, "a");
    assert!(msg.contains("`cols` is 0"), "{msg}");
}

#[test]
fn a_named_side_that_splits_a_work_group_is_refused_with_the_compile_time_words() {
    let rt = runtime();
    let kernel = SparseRows::new(&rt).expect("builds");
    let cols = 48;
    let (a, x, mut y) = (vec![1.0f32; 64 * cols], vec![1.0f32; cols], vec![0.0f32; 64]);
    let msg = declared_error(kernel.run(64, &a, &x, &mut y, cols as i32), 2, "y");
    assert_eq!(
        msg,
        "argument 2 (`y`): pattern `1:cols`: pattern 1:48 does not fit the work-group size 64: a \
         work-group would own 1·64/48 elements; 1 × the work-group size must be a multiple of 48"
    );
    // 1:64 and 1:32 fit: one element per group, two per group.
    for cols in [64usize, 32] {
        let (a, x) = (vec![1.0f32; 128 * cols], vec![0.5f32; cols]);
        let mut y = vec![0.0f32; 128 / cols];
        // The kernel writes y[row] for every row, far past this y: only the check is tested.
        let launch = kernel.launch(128, &a, &x, &mut y, cols as i32);
        assert!(launch.is_ok(), "cols {cols}: {:?}", launch.err());
    }
}

#[test]
fn run_time_errors_name_the_argument_as_declared() {
    let rt = runtime();
    let kernel = Renamed::new(&rt).expect("builds");
    assert_eq!(Renamed::PARAMETERS, ["matrix", "vector", "out", "width"]);
    let cols = 3;
    let (matrix, vector) = (vec![1.0f32; 128 * cols], vec![1.0f32; cols]);
    let mut out = vec![0.0f32; 127];
    let msg = declared_error(kernel.run(128, &matrix, &vector, &mut out, cols as i32), 2, "out");
    assert!(
        msg.starts_with(
            "argument 2 (`out`): parameter `y` is `__global float*` in kernels/matvec.cl:5"
        ),
        "{msg}"
    );
    assert!(
        msg.contains("buffer has 127 elements but pattern 1:1 over 128 work-items needs 128"),
        "{msg}"
    );
    // The matrix one row short: its pattern `width:1` asks for 128 × 3.
    let short = vec![1.0f32; 127 * cols];
    let mut out = vec![0.0f32; 128];
    let msg =
        declared_error(kernel.verify(128, &short, &vector, &mut out, cols as i32), 0, "matrix");
    assert!(
        msg.contains("buffer has 381 elements but pattern 3:1 over 128 work-items needs 384"),
        "{msg}"
    );
}

#[test]
fn a_coexec_function_names_the_argument_as_declared() {
    let rt = runtime();
    let x = vec![1.0f32; 2 * GROUP];
    let mut stats = vec![GroupStats::default(); 3];
    let msg = declared_error(group_stats(&rt, 2 * GROUP, &x, &mut stats), 1, "stats");
    assert!(
        msg.contains("buffer has 3 elements but pattern 1:64 over 128 work-items needs 2"),
        "{msg}"
    );
    assert_eq!(group_stats::PARAMETERS, ["x", "stats", "sums", "maxes"]);
}
