hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/saxpy.cl", local = 64, balancer = "sigmod")]
    struct Saxpy {
        fn saxpy(a: f32, #[input(1:1)] x: &[f32], #[inout(1:1)] y: &mut [f32], n: i32);
    }
}

#[hetdsl::coexec(file = "tests/ui/kernels/saxpy.cl", local = 64, balancer = "hguided:k=2,q=1")]
fn saxpy(a: f32, #[input(1:1)] x: &[f32], #[inout(1:1)] y: &mut [f32], n: i32);

fn main() {}
