// The kernel's `bins` is `const`: it cannot be written, so there is nothing to merge.
hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/merge.cl", local = 64)]
    struct Frozen {
        fn frozen(#[input(1:1)] values: &[u32], #[output(whole, merge = "sum")] bins: &mut [u32]);
    }
}

fn main() {}
