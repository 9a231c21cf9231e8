// None of these field types is plain data: each has bit patterns that are no valid value. Every
// one is reported, on its field.
use std::num::NonZeroU32;

#[derive(Clone, Copy)]
#[repr(u32)]
pub enum Kind {
    A = 0,
    B = 1,
}

#[repr(C)]
#[derive(Clone, Copy, hetdsl::Pod)]
pub struct Everything {
    pub flag: bool,
    pub _pad: [u8; 3],
    pub letter: char,
    pub count: NonZeroU32,
    pub kind: Kind,
    pub name: &'static u8,
    pub raw: *const u8,
    pub fine: [u32; 2],
}

fn main() {}
