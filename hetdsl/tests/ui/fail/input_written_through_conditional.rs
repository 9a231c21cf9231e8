// `(c ? out : tmp)[i] = ..` writes `out` (on odd items): as an input it would never be copied back.
hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/held_writes.cl", local = 64)]
    struct Held {
        fn conditional(#[input(1:1)] src: &[f32], #[input(1:1)] out: &[f32], #[output(1:1)] tmp: &mut [f32]);
    }
}

fn main() {}
