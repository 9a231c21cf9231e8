//! Plain data that may be copied byte for byte to and from a device.

/// A type whose values are plain bytes with no padding, no pointers and no invalid bit patterns,
/// so a kernel may read and write them.
///
/// Derive it for a struct with `#[derive(hetdsl::Pod)]`, which proves the struct `#[repr(C)]`,
/// made of `Pod` fields and free of padding. `kernel!` and `#[coexec]` require it of every user
/// type they pass (structs and vector newtypes) and check its layout against the OpenCL one.
///
/// # Safety
/// Implement only for `#[repr(C)]` (or primitive) types made of `Pod` fields that cover every
/// byte (no padding), every bit pattern of which is a valid value. Not `bool`, `char`,
/// references, pointers, `NonZero*` or enums: a kernel could write an invalid value into them.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not plain data (`hetdsl::Pod`), so a kernel may not write it",
    label = "not `hetdsl::Pod`",
    note = "a user struct needs `#[derive(hetdsl::Pod)]` (with `#[repr(C)]`, `Pod` fields and no padding); \
            `bool`, `char`, references, pointers, `NonZero*` and enums have invalid bit patterns and are never `Pod`"
)]
pub unsafe trait Pod: Copy + Send + Sync + 'static {
    /// What the type is, for the run-time check of a launch's arguments against the kernel's
    /// parameters: a primitive, an array of one (an OpenCL vector), or a user type of its size
    /// (`#[derive(Pod)]` adds its name).
    #[doc(hidden)]
    const HOST_TYPE: HostType =
        HostType::Opaque { size: std::mem::size_of::<Self>(), name: "", lanes: Lanes::Unknown };

    /// The primitives the type is made of, for the compile-time check that a user type
    /// standing for an OpenCL vector holds the vector's scalar (`#[derive(Pod)]` gathers its
    /// fields').
    #[doc(hidden)]
    const LANES: Lanes = Lanes::of(Self::HOST_TYPE);
}

pub use hetdsl_decl::argcheck::{HostType, Lanes, Prim};

// SAFETY: the primitive integers and floats have no padding and every bit pattern is a value.
macro_rules! pod {
    ($($t:ty => $p:ident),*) => {
        $(unsafe impl Pod for $t {
            const HOST_TYPE: HostType = HostType::Prim(Prim::$p);
        })*
    };
}
pod!(u8 => U8, i8 => I8, u16 => U16, i16 => I16, u32 => U32, i32 => I32, u64 => U64, i64 => I64,
     f32 => F32, f64 => F64);
// SAFETY: an array of `Pod` elements has no padding between them and no invalid bit pattern.
unsafe impl<T: Pod, const N: usize> Pod for [T; N] {
    const HOST_TYPE: HostType = HostType::array(T::HOST_TYPE, N, std::mem::size_of::<[T; N]>());
    const LANES: Lanes = T::LANES;
}

/// The bytes of a slice of plain data.
pub(crate) fn bytes_of<T: Pod>(s: &[T]) -> &[u8] {
    // SAFETY: T is Pod, so every byte of the slice is initialised plain data.
    unsafe { std::slice::from_raw_parts(s.as_ptr().cast::<u8>(), std::mem::size_of_val(s)) }
}

/// The bytes of a mutable slice of plain data.
pub(crate) fn bytes_of_mut<T: Pod>(s: &mut [T]) -> &mut [u8] {
    // SAFETY: T is Pod: any bytes written are a valid T.
    unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr().cast::<u8>(), std::mem::size_of_val(s)) }
}
