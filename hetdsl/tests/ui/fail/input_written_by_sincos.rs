// `sincos(x, &out[i])` stores the cosine through its second argument: as an input `out` would
// never be copied back.
hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/held_writes.cl", local = 64)]
    struct Held {
        fn by_sincos(#[inout(1:1)] src: &mut [f32], #[input(1:1)] out: &[f32]);
    }
}

fn main() {}
