// A kernel that reads its input through a function-like macro, a helper function and a copy of
// the pointer, and writes only its output: `src` is rightly an input.
hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/hidden_writes.cl", local = 64)]
    struct ReadsOnly {
        fn reads_only(#[input(1:1)] src: &[f32], #[output(1:1)] out: &mut [f32]);
    }
}

fn main() {
    assert_eq!(ReadsOnly::KERNEL, "reads_only");
}
