// OpenCL pads `Sphere` to 32 bytes; the Rust struct is padded the same way, so its layout
// matches, but its padding bytes belong to no field: refused until a field covers them.
#[repr(C, align(16))]
#[derive(Clone, Copy, hetdsl::Pod)]
pub struct Sphere {
    pub center: [f32; 4],
    pub radius: f32,
    pub material: i32,
}

// A gap between fields is padding too.
#[repr(C)]
#[derive(Clone, Copy, hetdsl::Pod)]
pub struct Gap {
    pub small: u8,
    pub big: u32,
}

fn main() {}
