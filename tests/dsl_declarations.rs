//! Declarations written in less common but valid Rust, of kernels whose signatures are spelled
//! in less common but valid OpenCL C: each compiles, co-executes on two devices (PoCL's
//! `pthread` and `basic` in CI) and matches a plain CPU loop.

use hetdsl::Runtime;

fn runtime() -> Runtime {
    let rt = Runtime::new().expect("an OpenCL runtime (install pocl-opencl-icd)");
    assert!(
        rt.devices().len() >= 2,
        "these tests co-execute on two devices; run with POCL_DEVICES=\"pthread basic\" (found {:?})",
        rt.devices().iter().map(|d| &d.name).collect::<Vec<_>>()
    );
    rt
}

/// Deterministic inputs in [0, 1) (a 32-bit LCG).
fn inputs(n: usize, seed: u32) -> Vec<f32> {
    let mut state = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
    (0..n)
        .map(|_| {
            state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (state >> 8) as f32 / (1u32 << 24) as f32
        })
        .collect()
}

/// Both devices ran part of the launch.
fn assert_both_ran(report: &hetdsl::Report) {
    assert!(report.devices.iter().filter(|d| d.packages > 0).count() >= 2, "{}", report.table());
}

hetdsl::kernel! {
    /// Buffers whose OpenCL types are typedefs of pointers (`typedef __global float* out_floats;`).
    #[kernel(file = "kernels/test/declarations.cl", local = 64, balancer = "dynamic:16")]
    struct ScaleByTypedefs {
        fn scale_by_typedefs(
            #[input(1:1)] x: &[f32],
            #[output(1:1)] y: &mut [f32],
            #[output(1:1)] z: &mut [f32],
            a: f32,
        );
    }
}

#[test]
fn pointer_typedef_parameters_are_buffers() {
    let rt = runtime();
    let kernel = ScaleByTypedefs::new(&rt).expect("builds");
    let n = 64 * 256;
    let x = inputs(n, 1);
    let (mut y, mut z) = (vec![0.0f32; n], vec![0.0f32; n]);
    let launch = kernel.launch(n, &x, &mut y, &mut z, 3.0).expect("a launch");
    assert_both_ran(&launch.backups(false).run().expect("runs"));
    for i in 0..n {
        assert_eq!(y[i], 3.0 * x[i], "y[{i}]");
        assert_eq!(z[i], x[i] + 3.0, "z[{i}]");
    }
}
