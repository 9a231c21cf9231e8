// OpenCL forbids `bool` kernel arguments (its size is the device's), and `half` has no Rust
// type: neither can be passed, whatever the Rust side says.
hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/pairs.cl", local = 64)]
    struct Flags {
        fn flags(#[output(1:1)] out: &mut [u8], on: bool);
    }
}

hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/pairs.cl", local = 64)]
    struct Halves {
        fn halves(#[output(1:1)] out: &mut [u16], scale: f32);
    }
}

fn main() {}
