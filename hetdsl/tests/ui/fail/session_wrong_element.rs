// On a session, a buffer's element type is the declaration's: `__global const float* x` takes a
// `&Buffer<f32>`, not a buffer of another type or a host slice.
hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/saxpy.cl", local = 64)]
    struct Saxpy {
        fn saxpy(a: f32, #[input(1:1)] x: &[f32], #[inout(1:1)] y: &mut [f32], n: i32);
    }
}

fn step(k: SaxpyOn<'_>, ints: &hetdsl::Buffer<u32>, y: &mut hetdsl::Buffer<f32>, xs: &[f32]) {
    let _ = k.run(1024, 2.0, ints, y, 1024);
    let _ = k.run(1024, 2.0, xs, y, 1024);
}

fn main() {}
