// A merged output cannot hand the kernel the values its atomics return: each device counts in
// its own copy.
hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/counted.cl", local = 64)]
    struct Compact {
        fn compact(
            #[input(1:1)] x: &[f32],
            #[output(whole, merge = "sum")] out: &mut [f32],
            #[inout(whole, merge = "sum")] count: &mut [u32],
            t: f32,
        );
    }
}

// The same atomics with their values unused merge.
hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/counted.cl", local = 64)]
    struct Histogram {
        fn histogram(#[input(1:1)] values: &[u32], #[inout(whole, merge = "sum")] bins: &mut [u32], nbins: u32);
    }
}

fn main() {}
