// A float4 as a tuple struct: `.0` is an `f32` and the size is 16, but the last lane is a
// `char`, which a kernel can fill with an invalid value. Every field counts, not only `.0`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Float4(pub f32, pub f32, pub f32, pub char);

// Derived, the same tuple struct is refused on the field at fault.
#[repr(C)]
#[derive(Clone, Copy, hetdsl::Pod)]
pub struct Lanes(pub f32, pub f32, pub f32, pub char);

#[repr(C, align(16))]
#[derive(Clone, Copy)]
pub struct Sphere {
    pub center: [f32; 4],
    pub radius: f32,
    pub material: i32,
    pub _pad: [u32; 2],
}

// SAFETY: #[repr(C)], f32/i32/u32 fields that cover all 32 bytes.
unsafe impl hetdsl::Pod for Sphere {}

hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/shapes.cl", local = 32)]
    struct Shift {
        fn shift(#[inout(1:1)] spheres: &mut [Sphere], offset: Float4);
    }
}

fn main() {}
