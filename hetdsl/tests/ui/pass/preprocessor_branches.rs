// The reader takes the branch the build options select.
hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/real_ifndef.cl", local = 64)]
    struct ScaleDouble {
        fn scale(#[inout(1:1)] x: &mut [f64], a: f64);
    }
}

hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/real_ifndef.cl", local = 64, options = "-DUSE_FLOAT -cl-mad-enable")]
    struct ScaleFloat {
        fn scale(#[inout(1:1)] x: &mut [f32], a: f32);
    }
}

#[hetdsl::coexec(file = "tests/ui/kernels/old_signature.cl", local = 64)]
fn step(#[inout(1:1)] x: &mut [f32], dt: f32, n: i32);

fn main() {}
