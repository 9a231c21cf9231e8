// A function-like macro in `#if`: the reader does not expand those, so it refuses to guess.
hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/undecidable.cl", local = 64)]
    struct K {
        fn k(#[output(1:1)] x: &mut [f32]);
    }
}

fn main() {}
