// `x` is `__global cfloat*` with `typedef const float cfloat`: its data is `const`, so the
// kernel cannot write it, and an output would come back with whatever the device held.
hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/const_typedef.cl", local = 64)]
    struct Scale {
        fn scale(#[output(1:1)] x: &mut [f32], #[output(1:1)] y: &mut [f32], a: f32);
    }
}

fn main() {}
