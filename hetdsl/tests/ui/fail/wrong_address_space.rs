// `y` is a __global buffer, not a __local one.
hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/saxpy.cl", local = 64)]
    struct Saxpy {
        fn saxpy(a: f32, #[input(1:1)] x: &[f32], #[local] y: [f32; 64], n: i32);
    }
}

fn main() {}
