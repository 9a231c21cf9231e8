// 32 __local elements for a work-group of 64 work-items: a kernel indexing the buffer by the
// local id writes past its end.

hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/scratch.cl", local = 64)]
    struct Literal {
        fn stage(#[inout(1:1)] x: &mut [f32], #[local] scratch: [f32; 32]);
    }
}

hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/scratch.cl", local = [8, 8])]
    struct TwoD {
        fn stage(#[inout(1:1)] x: &mut [f32], #[local] scratch: [f32; 8]);
    }
}

fn main() {}
