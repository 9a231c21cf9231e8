// `merge` reduces outputs every device writes whole: not on an input, not with a split pattern.
hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/merge.cl", local = 64)]
    struct OnInput {
        fn histogram(#[input(1:1, merge = "sum")] values: &[u32], #[output(1:1)] bins: &mut [u32], nbins: u32);
    }
}

hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/merge.cl", local = 64)]
    struct Split {
        fn histogram(#[input(1:1)] values: &[u32], #[inout(1:1, merge = "sum")] bins: &mut [u32], nbins: u32);
    }
}

fn main() {}
