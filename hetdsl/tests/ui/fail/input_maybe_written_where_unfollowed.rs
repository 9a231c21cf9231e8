// `keep(&v, out)` stores `out` through a pointer to `v`, which the reader does not follow back to
// the kernel: the kernel may write `out`, so it counts as written and cannot be an input.
hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/held_writes.cl", local = 64)]
    struct Held {
        fn stored_away(#[input(1:1)] src: &[f32], #[input(1:1)] out: &[f32]);
    }
}

fn main() {}
