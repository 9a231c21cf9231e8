// `#[derive(Pod)]` wants a struct with a stable layout and no type parameters.
#[derive(Clone, Copy, hetdsl::Pod)]
pub struct NoRepr {
    pub x: f32,
}

#[repr(C)]
#[derive(Clone, Copy, hetdsl::Pod)]
pub struct Generic<T: Copy> {
    pub x: T,
}

#[repr(u8)]
#[derive(Clone, Copy, hetdsl::Pod)]
pub enum Mode {
    On,
    Off,
}

fn main() {}
