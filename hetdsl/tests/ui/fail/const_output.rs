// `x` is `__global const float*`: the kernel cannot write it.
hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/saxpy.cl", local = 64)]
    struct Saxpy {
        fn saxpy(a: f32, #[output(1:1)] x: &mut [f32], #[inout(1:1)] y: &mut [f32], n: i32);
    }
}

fn main() {}
