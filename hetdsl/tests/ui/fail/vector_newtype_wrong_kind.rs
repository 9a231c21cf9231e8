// A `float4` as a newtype of `[i32; 4]`: the size is 16 bytes as the kernel's, but the kernel
// would read the integers' bits as floats. The same newtype for a struct's `float4` field, and
// a tuple struct of mixed lanes for a `float4`, are refused alike.
#[repr(C, align(16))]
#[derive(Clone, Copy, hetdsl::Pod)]
pub struct Int4(pub [i32; 4]);

#[repr(C, align(16))]
#[derive(Clone, Copy, hetdsl::Pod)]
pub struct Mixed(pub f32, pub f32, pub f32, pub u32);

#[repr(C, align(16))]
#[derive(Clone, Copy, hetdsl::Pod)]
pub struct Sphere {
    pub center: Int4,
    pub radius: f32,
    pub material: i32,
    pub _pad: [u32; 2],
}

hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/shapes.cl", local = 32)]
    struct Shift {
        fn shift(#[inout(1:1)] spheres: &mut [Sphere], offset: Int4);
    }
}

hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/shapes.cl", local = 32)]
    struct Nearest {
        fn nearest(#[input(1:1)] spheres: &[Sphere], count: i32, #[input(1:1)] points: &[Mixed], #[output(1:1)] dist: &mut [f32]);
    }
}

fn main() {}
