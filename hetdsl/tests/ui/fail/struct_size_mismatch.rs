// The fields match, but without `align(16)` the Rust struct is 24 bytes aligned to 4, where
// OpenCL pads it to 32 bytes aligned to 16 (its float4 field).
#[repr(C)]
#[derive(Clone, Copy, hetdsl::Pod)]
pub struct Sphere {
    pub center: [f32; 4],
    pub radius: f32,
    pub material: i32,
}

hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/shapes.cl", local = 32)]
    struct Shift {
        fn shift(#[inout(1:1)] spheres: &mut [Sphere], offset: [f32; 4]);
    }
}

fn main() {}
