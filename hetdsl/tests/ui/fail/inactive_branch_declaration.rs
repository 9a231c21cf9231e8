// The declaration matches the `#else` branch (REAL = float), which the compiler only reads
// with `-D USE_FLOAT`; without it REAL is double and `a: f32` would pass half the bytes.
hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/real_ifndef.cl", local = 64)]
    struct Scale {
        fn scale(#[inout(1:1)] x: &mut [f32], a: f32);
    }
}

// With the define, the same declaration is the right one.
hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/real_ifndef.cl", local = 64, defines = ["USE_FLOAT"])]
    struct ScaleFloat {
        fn scale(#[inout(1:1)] x: &mut [f32], a: f32);
    }
}

// The old signature under `#if 0` is not the kernel.
#[hetdsl::coexec(file = "tests/ui/kernels/old_signature.cl", local = 64)]
fn step(#[inout(1:1)] x: &mut [f32], dt: f32);

fn main() {}
