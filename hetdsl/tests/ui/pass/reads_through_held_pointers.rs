// A kernel that reads its input through a struct holding it, a function returning a pointer
// into it and a conditional, and writes only its output: `src` is rightly an input.
hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/held_writes.cl", local = 64)]
    struct ReadsOnly {
        fn reads_only(#[input(1:1)] src: &[f32], #[output(1:1)] out: &mut [f32]);
    }
}

fn main() {
    assert_eq!(ReadsOnly::KERNEL, "reads_only");
}
