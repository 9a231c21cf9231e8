// Same size, alignment and offsets as the OpenCL struct, but `material` (an OpenCL `int`) is a
// float here: the kernel's integer bits would read as a float.
#[repr(C, align(16))]
#[derive(Clone, Copy, hetdsl::Pod)]
pub struct Sphere {
    pub center: [f32; 4],
    pub radius: f32,
    pub material: f32,
    pub _pad: [u32; 2],
}

hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/shapes.cl", local = 32)]
    struct Shift {
        fn shift(#[inout(1:1)] spheres: &mut [Sphere], offset: [f32; 4]);
    }
}

fn main() {}
