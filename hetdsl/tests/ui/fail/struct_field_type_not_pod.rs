// `material` has the right size and offset but is a `char`: a kernel could write a value that
// is not a valid `char`, so it is refused as not plain data.
#[repr(C, align(16))]
#[derive(Clone, Copy, hetdsl::Pod)]
pub struct Sphere {
    pub center: [f32; 4],
    pub radius: f32,
    pub material: char,
    pub _pad: [u32; 2],
}

hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/shapes.cl", local = 32)]
    struct Shift {
        fn shift(#[inout(1:1)] spheres: &mut [Sphere], offset: [f32; 4]);
    }
}

fn main() {}
