// broken_include.cl includes a header that does not exist.
hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/broken_include.cl", local = 64)]
    struct K {
        fn k(#[output(1:1)] x: &mut [f32]);
    }
}

fn main() {}
