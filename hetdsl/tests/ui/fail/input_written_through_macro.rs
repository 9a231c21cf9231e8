// `out` is written by the function-like macro `STORE(out, i, …)`: as an input it would never
// be copied back.
hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/hidden_writes.cl", local = 64)]
    struct Hidden {
        fn through_macro(#[input(1:1)] src: &[f32], #[input(1:1)] out: &[f32]);
    }
}

fn main() {}
