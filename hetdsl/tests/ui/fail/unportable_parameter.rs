// `size_t` has the device's width: the host cannot pass it.
hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/reduce.cl", local = 64)]
    struct Sized {
        fn sized(#[output(1:1)] x: &mut [f32], n: usize);
    }
}

fn main() {}
