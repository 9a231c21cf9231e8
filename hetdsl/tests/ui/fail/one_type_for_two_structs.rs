// `Pair` matches the kernel's `Pair`, and is given again for its `Quad` (16 bytes, not 8): the
// kernel would write 16 bytes per element into a buffer of 8-byte elements. Each OpenCL struct
// a Rust type stands for is checked, not only the first.
#[repr(C)]
#[derive(Clone, Copy, hetdsl::Pod)]
pub struct Pair {
    pub x: f32,
    pub y: f32,
}

hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/pairs.cl", local = 64)]
    struct Widen {
        fn widen(#[input(1:1)] pairs: &[Pair], #[output(1:1)] quads: &mut [Pair]);
    }
}

fn main() {}
