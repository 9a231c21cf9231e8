// `float4 offset` needs four lanes, and the buffer's float4 elements too.
#[repr(C, align(16))]
#[derive(Clone, Copy, hetdsl::Pod)]
pub struct Sphere {
    pub center: [f32; 4],
    pub radius: f32,
    pub material: i32,
    pub _pad: [u32; 2],
}

#[hetdsl::coexec(file = "tests/ui/kernels/shapes.cl", local = 32)]
fn shift(#[inout(1:1)] spheres: &mut [Sphere], offset: [f32; 3]);

hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/shapes.cl", local = 32)]
    struct Nearest {
        fn nearest(#[input(whole)] spheres: &[Sphere], count: i32, #[input(1:1)] points: &[[f32; 2]], #[output(1:1)] dist: &mut [f32]);
    }
}

fn main() {}
