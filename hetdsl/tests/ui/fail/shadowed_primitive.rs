// `u32` here is not the primitive but a `char` under that name: the kernel would write `uint`s
// into `char`s. A primitive's name must mean the primitive.
mod shadow {
    #[allow(non_camel_case_types)]
    pub type u32 = char;
}
use shadow::u32;

hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/pairs.cl", local = 64)]
    struct Count {
        fn count(#[inout(1:1)] counts: &mut [u32], step: u32);
    }
}

fn main() {}
