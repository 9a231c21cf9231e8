// `y` is written by the kernel (`y[i] = ...`): as an input it would never be copied back.
hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/saxpy.cl", local = 64)]
    struct Saxpy {
        fn saxpy(a: f32, #[input(1:1)] x: &[f32], #[input(1:1)] y: &[f32], n: i32);
    }
}

fn main() {}
