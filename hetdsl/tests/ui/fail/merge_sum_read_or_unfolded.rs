// A merge by sum gives each device a copy starting at zero: the kernel may add to it, not
// decide on what it reads there, nor update it in a way a sum does not fold.
hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/counted.cl", local = 64)]
    struct Capped {
        fn capped(#[input(1:1)] values: &[u32], #[output(whole, merge = "sum")] bins: &mut [u32], cap: u32);
    }
}

hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/counted.cl", local = 64)]
    struct Largest {
        fn largest(
            #[input(1:1)] values: &[u32],
            #[input(1:1)] bin: &[u32],
            #[output(whole, merge = "sum")] maxes: &mut [u32],
        );
    }
}

// Merged by the maximum, the same update folds.
hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/counted.cl", local = 64)]
    struct LargestByMax {
        fn largest(
            #[input(1:1)] values: &[u32],
            #[input(1:1)] bin: &[u32],
            #[output(whole, merge = "max")] maxes: &mut [u32],
        );
    }
}

fn main() {}
