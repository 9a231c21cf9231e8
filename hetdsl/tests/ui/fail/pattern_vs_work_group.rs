// One result per 255 work-items cannot be split into work-groups of 64.
#[repr(C, align(16))]
#[derive(Clone, Copy)]
pub struct Float4(pub [f32; 4]);

unsafe impl hetdsl::Pod for Float4 {}

hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/reduce.cl", local = 64)]
    struct GroupSum {
        fn group_sum(#[input(1:1)] input: &[Float4], #[output(1:255)] out: &mut [Float4], #[local] scratch: [Float4; 64]);
    }
}

fn main() {}
