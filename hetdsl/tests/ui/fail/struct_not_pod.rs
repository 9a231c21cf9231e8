// Every named field matches OpenCL, but `flag` (a `bool`) lives in the OpenCL struct's trailing
// padding (bytes 24..32), which a kernel writing whole structs overwrites with any byte. The
// struct does not prove itself plain data (`#[derive(hetdsl::Pod)]`), so it is refused.
#[repr(C, align(16))]
#[derive(Clone, Copy)]
pub struct Sphere {
    pub center: [f32; 4],
    pub radius: f32,
    pub material: i32,
    pub flag: bool,
}

hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/shapes.cl", local = 32)]
    struct Shift {
        fn shift(#[inout(1:1)] spheres: &mut [Sphere], offset: [f32; 4]);
    }
}

fn main() {}
