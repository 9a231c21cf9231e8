// `avg` is not a merge: the five are listed.
hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/merge.cl", local = 64)]
    struct Histogram {
        fn histogram(#[input(1:1)] values: &[u32], #[output(whole, merge = "avg")] bins: &mut [u32], nbins: u32);
    }
}

fn main() {}
