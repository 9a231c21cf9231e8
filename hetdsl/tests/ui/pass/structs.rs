// A user struct matched against the OpenCL typedef, used by two kernels (no duplicate impls),
// and a float4 passed as `[f32; 4]`, by value and in a buffer.
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, hetdsl::Pod)]
pub struct Sphere {
    pub center: [f32; 4],
    pub radius: f32,
    pub material: i32,
    // OpenCL pads the struct to 32 bytes: the gap is a field, so a kernel's bytes land in one.
    pub _pad: [u32; 2],
}

hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/shapes.cl", local = 32)]
    pub struct Nearest {
        fn nearest(#[input(whole)] spheres: &[Sphere], count: i32, #[input(1:1)] points: &[[f32; 4]], #[output(1:1)] dist: &mut [f32]);
    }
}

hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/shapes.cl", local = 32, balancer = "static")]
    pub struct Shift {
        fn shift(#[inout(1:1)] spheres: &mut [Sphere], offset: [f32; 4]);
    }
}

fn main() {
    let _ = (Nearest::run, Shift::run);
    assert_eq!(std::mem::size_of::<Sphere>(), 32);
}
