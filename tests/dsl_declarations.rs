//! Declarations written in less common but valid Rust, of kernels whose signatures are spelled
//! in less common but valid OpenCL C: each compiles, co-executes on two devices (PoCL's
//! `pthread` and `basic` in CI) and matches a plain CPU loop.

mod common;

use common::round_robin;
use hetdsl::Runtime;

fn runtime() -> Runtime {
    common::two_devices()
}

fn inputs(n: usize, seed: u32) -> Vec<f32> {
    common::unit_floats(n, seed)
}

/// Both devices ran part of the launch (each gets its packages from `round_robin`).
fn assert_both_ran(report: &hetdsl::Report) {
    assert!(report.devices.iter().filter(|d| d.packages > 0).count() >= 2, "{}", report.table());
}

hetdsl::kernel! {
    /// Buffers whose OpenCL types are typedefs of pointers (`typedef __global float* out_floats;`).
    #[kernel(file = "kernels/test/declarations.cl", local = 64, balancer = "dynamic:8")]
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
    assert_both_ran(&launch.balancer(round_robin(4)).backups(false).run().expect("runs"));
    for i in 0..n {
        assert_eq!(y[i], 3.0 * x[i], "y[{i}]");
        assert_eq!(z[i], x[i] + 3.0, "z[{i}]");
    }
    // On a session whose devices hold a quarter of a buffer at a time, the buffers live in
    // windows: the rewritten kernel takes each typedef'd pointer relative to its window.
    let mut session = kernel.session().expect("a session");
    session.set_max_alloc((n * 4 / 4) as u64);
    let on = kernel.on(&session).expect("bound");
    let bx = session.buffer_from(&x).unwrap();
    let (mut by, mut bz) = (session.buffer::<f32>(n).unwrap(), session.buffer::<f32>(n).unwrap());
    let launch = on.launch(n, &bx, &mut by, &mut bz, 3.0).expect("a launch");
    assert_both_ran(&launch.balancer(round_robin(4)).run().expect("runs in windows"));
    let (y, z) = (by.to_vec().unwrap(), bz.to_vec().unwrap());
    for i in 0..n {
        assert_eq!(y[i], 3.0 * x[i], "y[{i}] in windows");
        assert_eq!(z[i], x[i] + 3.0, "z[{i}] in windows");
    }
}

hetdsl::kernel! {
    /// Types spelled through their module, lifetimes on the buffers, a doc comment and lints on
    /// parameters, a raw identifier.
    #[kernel(file = "kernels/test/declarations.cl", local = 64, balancer = "dynamic:8")]
    pub(crate) struct MixWidths {
        fn mix_widths(
            /// One byte per work-item.
            #[input(1:1)] bytes: &'a [core::primitive::u8],
            #[input(1:1)] wide: &[::core::primitive::i64],
            #[output(1:1)] r#type: &'a mut [std::primitive::u64],
            #[allow(non_snake_case)] K: std::primitive::u32,
            bias: i64,
        );
    }
}

/// The same through `#[coexec]`.
#[hetdsl::coexec(file = "kernels/test/declarations.cl", local = 64, balancer = "dynamic:8")]
pub(crate) fn mix_widths(
    /// One byte per work-item.
    #[input(1:1)]
    bytes: &'a [core::primitive::u8],
    #[input(1:1)] wide: &[::core::primitive::i64],
    #[output(1:1)] r#type: &'a mut [std::primitive::u64],
    #[allow(non_snake_case)] K: std::primitive::u32,
    bias: i64,
);

#[test]
fn primitives_through_their_module_lifetimes_docs_and_lints_are_accepted() {
    let rt = runtime();
    let n = 64 * 256;
    let bytes: Vec<u8> = (0..n).map(|i| (i * 7 % 251) as u8).collect();
    let wide: Vec<i64> = (0..n as i64).map(|i| i * 1_000_003 - 5_000_000_000).collect();
    let want: Vec<u64> = (0..n).map(|i| (wide[i] * 3 + i64::from(bytes[i]) + 11) as u64).collect();
    let kernel = MixWidths::new(&rt).expect("builds");
    let mut out = vec![0u64; n];
    let launch = kernel.launch(n, &bytes, &wide, &mut out, 3, 11).expect("a launch");
    assert_both_ran(&launch.balancer(round_robin(4)).backups(false).run().expect("runs"));
    assert_eq!(out, want);
    let mut out = vec![0u64; n];
    mix_widths(&rt, n, &bytes, &wide, &mut out, 3, 11).expect("runs");
    assert_eq!(out, want);
}

hetdsl::kernel! {
    /// Buffers whose OpenCL parameters are written as arrays (`__global float y[]`).
    #[kernel(file = "kernels/test/declarations.cl", local = 64, balancer = "dynamic:8")]
    struct ScaleArrays {
        fn scale_arrays(
            #[input(1:1)] x: &[f32],
            #[output(1:1)] y: &mut [f32],
            #[input(whole)] w: &[f32],
            a: f32,
        );
    }
}

#[test]
fn array_parameters_are_buffers() {
    let rt = runtime();
    let kernel = ScaleArrays::new(&rt).expect("builds");
    let n = 64 * 256;
    let x = inputs(n, 2);
    let w = [0.5f32, -1.0, 2.0, 4.0];
    let mut y = vec![f32::NAN; n];
    let launch = kernel.launch(n, &x, &mut y, &w, 3.0).expect("a launch");
    assert_both_ran(&launch.balancer(round_robin(4)).backups(false).run().expect("runs"));
    let want: Vec<f32> = (0..n).map(|i| 3.0 * x[i] + w[i % 4]).collect();
    common::close(&y, &want, "y");
    // On a session whose devices hold a quarter of a buffer at a time, `x` and `y` live in
    // windows: the rewritten kernel takes them relative to each window's offset.
    let mut session = kernel.session().expect("a session");
    session.set_max_alloc((n * 4 / 4) as u64);
    let on = kernel.on(&session).expect("bound");
    let (bx, bw) = (session.buffer_from(&x).unwrap(), session.buffer_from(&w).unwrap());
    let mut by = session.buffer::<f32>(n).unwrap();
    let launch = on.launch(n, &bx, &mut by, &bw, 3.0).expect("a launch");
    assert_both_ran(&launch.balancer(round_robin(4)).run().expect("runs in windows"));
    common::close(&by.to_vec().unwrap(), &want, "y in windows");
}

/// Rust type aliases of the primitives the kernel's typedefs stand for.
type Real = f32;
type Index = i32;

hetdsl::kernel! {
    /// Types through aliases on both sides: OpenCL typedefs (`real`, `real4`, `index_t`) and
    /// Rust type aliases (`Real`, `Index`), in buffers, values, a vector and a pattern's side.
    #[kernel(file = "kernels/test/declarations.cl", local = 64, balancer = "dynamic:8")]
    struct ScaleReals {
        fn scale_reals(
            #[input(cols:1)] x: &[Real],
            #[output(cols:1)] y: &mut [Real],
            a: Real,
            c: [Real; 4],
            cols: Index,
        );
    }
}

/// The same through `#[coexec]`, the aliases reached through a module path.
#[hetdsl::coexec(file = "kernels/test/declarations.cl", local = 64, balancer = "dynamic:8")]
fn scale_reals(
    #[input(cols:1)] x: &[self::Real],
    #[output(cols:1)] y: &mut [self::Real],
    a: self::Real,
    c: [self::Real; 4],
    cols: self::Index,
);

#[test]
fn type_aliases_on_either_side_are_the_types_they_name() {
    let rt = runtime();
    let (n, cols) = (64 * 64, 3usize);
    let x = inputs(n * cols, 3);
    let c: [Real; 4] = [0.25, 0.0, 0.0, -1.5];
    let want: Vec<f32> =
        (0..n * cols).map(|j| 2.0 * x[j] + c[0] * (j % cols) as f32 + c[3]).collect();
    let kernel = ScaleReals::new(&rt).expect("builds");
    let mut y = vec![f32::NAN; n * cols];
    let launch = kernel.launch(n, &x, &mut y, 2.0, c, cols as Index).expect("a launch");
    assert_both_ran(&launch.balancer(round_robin(4)).backups(false).run().expect("runs"));
    common::close(&y, &want, "y");
    let mut y = vec![f32::NAN; n * cols];
    scale_reals(&rt, n, &x, &mut y, 2.0, c, cols as Index).expect("runs");
    common::close(&y, &want, "y through #[coexec]");
    // A source read at run time sees no alias: `Real` is the `f32` the compiler proved it is,
    // so a `real` that became `double` is refused as it would be for `f32`.
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/kernels/test/declarations.cl"
    ))
    .unwrap();
    let source = hetdsl::KernelSource::from_text("declarations.cl", text.clone());
    assert!(ScaleReals::with_source(&rt, &source).is_ok());
    let doubled = text.replace("typedef float real;", "typedef double real;");
    let source = hetdsl::KernelSource::from_text("declarations.cl", doubled);
    let e = ScaleReals::with_source(&rt, &source).err().expect("refused").to_string();
    assert!(
        e.contains("parameter `a` is `real` in declarations.cl:34, so the Rust type must be `f64`, found `Real`"),
        "{e}"
    );
}
