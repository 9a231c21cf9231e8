// One compile reports every mismatch, each on its own token.
hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/saxpy.cl", local = 64)]
    struct Saxpy {
        fn saxpy(a: f64, #[input(1:1)] x: &[i32], y: &mut [f32], n: i64);
    }
}

hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/saxpy.cl", local = 64)]
    struct Saxpy2 {
        fn saxpy(a: f64, #[input(1:1)] x: &[i32], #[inout(1:1)] y: &mut [f32], n: i64);
    }
}

fn main() {}
