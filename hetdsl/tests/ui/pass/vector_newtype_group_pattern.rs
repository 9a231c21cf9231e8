// float4 elements as a `#[repr(C)]` newtype, and a 1:255 output (one result per work-group of
// 255 work-items).
#[repr(C, align(16))]
#[derive(Clone, Copy, Default, hetdsl::Pod)]
pub struct Float4(pub [f32; 4]);

hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/reduce.cl", local = 255, balancer = "hguided:k=2,m=1")]
    pub struct GroupSum {
        fn group_sum(#[input(1:1)] input: &[Float4], #[output(1:255)] out: &mut [Float4], #[local] scratch: [Float4; 255]);
    }
}

fn main() {
    let _: fn(&GroupSum, usize, &[Float4], &mut [Float4]) -> hetdsl::Result<hetdsl::Report> = GroupSum::run;
}
