// `out` is written through its copy `q = out + 4`: as an input it would never be copied back.
hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/hidden_writes.cl", local = 64)]
    struct Hidden {
        fn through_copy(#[input(1:1)] src: &[f32], #[input(1:1)] out: &[f32]);
    }
}

fn main() {}
