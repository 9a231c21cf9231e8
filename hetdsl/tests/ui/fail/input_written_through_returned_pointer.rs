// `at(out, i)` returns a pointer into `out`, written through (`*at(out, i) = ..`): as an input it
// would never be copied back.
hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/held_writes.cl", local = 64)]
    struct Held {
        fn returned(#[input(1:1)] src: &[f32], #[input(1:1)] out: &[f32]);
    }
}

fn main() {}
