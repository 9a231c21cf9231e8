//! OpenCL C types as the kernel signature checker sees them, with their sizes and alignments
//! (OpenCL C 1.2 §6.1: scalars have their size as alignment, a vector of n components is
//! aligned to its size, and a 3-component vector has the size and alignment of a 4-component
//! one).

use std::fmt;

/// A built-in scalar type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scalar {
    Char,
    UChar,
    Short,
    UShort,
    Int,
    UInt,
    Long,
    ULong,
    Half,
    Float,
    Double,
    /// `bool`, `size_t`, `ptrdiff_t`, `intptr_t`, `uintptr_t`: their size is the device's
    /// choice, so they cannot be kernel arguments (OpenCL C 1.2 §6.9.k) nor checked in structs.
    ImplementationDefined(&'static str),
}

impl Scalar {
    /// Size in bytes; `None` where the implementation decides.
    pub fn size(self) -> Option<u64> {
        Some(match self {
            Scalar::Char | Scalar::UChar => 1,
            Scalar::Short | Scalar::UShort | Scalar::Half => 2,
            Scalar::Int | Scalar::UInt | Scalar::Float => 4,
            Scalar::Long | Scalar::ULong | Scalar::Double => 8,
            Scalar::ImplementationDefined(_) => return None,
        })
    }

    /// The OpenCL spelling.
    pub fn name(self) -> &'static str {
        match self {
            Scalar::Char => "char",
            Scalar::UChar => "uchar",
            Scalar::Short => "short",
            Scalar::UShort => "ushort",
            Scalar::Int => "int",
            Scalar::UInt => "uint",
            Scalar::Long => "long",
            Scalar::ULong => "ulong",
            Scalar::Half => "half",
            Scalar::Float => "float",
            Scalar::Double => "double",
            Scalar::ImplementationDefined(name) => name,
        }
    }

    /// The Rust primitive of the same size, signedness and kind (`half` has none).
    pub fn rust(self) -> Option<&'static str> {
        Some(match self {
            Scalar::Char => "i8",
            Scalar::UChar => "u8",
            Scalar::Short => "i16",
            Scalar::UShort => "u16",
            Scalar::Int => "i32",
            Scalar::UInt => "u32",
            Scalar::Long => "i64",
            Scalar::ULong => "u64",
            Scalar::Float => "f32",
            Scalar::Double => "f64",
            Scalar::Half | Scalar::ImplementationDefined(_) => return None,
        })
    }

    /// The unsigned type of an integer's size (`unsigned short`, `unsigned`…).
    pub(super) fn unsigned(self) -> Scalar {
        match self {
            Scalar::Char => Scalar::UChar,
            Scalar::Short => Scalar::UShort,
            Scalar::Long => Scalar::ULong,
            _ => Scalar::UInt,
        }
    }

    /// The scalar a type keyword names (after `unsigned`/`signed` were folded in by the parser).
    pub fn from_name(name: &str) -> Option<Scalar> {
        Some(match name {
            "char" => Scalar::Char,
            "uchar" => Scalar::UChar,
            "short" => Scalar::Short,
            "ushort" => Scalar::UShort,
            "int" => Scalar::Int,
            "uint" => Scalar::UInt,
            "long" => Scalar::Long,
            "ulong" => Scalar::ULong,
            "half" => Scalar::Half,
            "float" => Scalar::Float,
            "double" => Scalar::Double,
            "bool" => Scalar::ImplementationDefined("bool"),
            "size_t" => Scalar::ImplementationDefined("size_t"),
            "ptrdiff_t" => Scalar::ImplementationDefined("ptrdiff_t"),
            "intptr_t" => Scalar::ImplementationDefined("intptr_t"),
            "uintptr_t" => Scalar::ImplementationDefined("uintptr_t"),
            _ => return None,
        })
    }
}

/// A vector type name such as `float4` or `uchar16`.
pub fn vector_from_name(name: &str) -> Option<(Scalar, u8)> {
    for width in [16u8, 8, 4, 3, 2] {
        if let Some(base) = name.strip_suffix(&width.to_string()) {
            if let Some(
                s @ (Scalar::Char
                | Scalar::UChar
                | Scalar::Short
                | Scalar::UShort
                | Scalar::Int
                | Scalar::UInt
                | Scalar::Long
                | Scalar::ULong
                | Scalar::Half
                | Scalar::Float
                | Scalar::Double),
            ) = Scalar::from_name(base)
            {
                return Some((s, width));
            }
        }
    }
    None
}

/// A resolved OpenCL C type (no pointer: pointers belong to parameters).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ty {
    Void,
    Scalar(Scalar),
    Vector(Scalar, u8),
    /// An index into [`super::Source::structs`].
    Struct(usize),
    Array(Box<Ty>, u64),
    /// A name the flattened source does not define (`image2d_t`, `sampler_t`, or a typo).
    Opaque(String),
}

/// Size and alignment in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    pub size: u64,
    pub align: u64,
}

/// A struct with its computed layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StructDef {
    /// The typedef name, or `struct tag`.
    pub name: String,
    pub fields: Vec<Field>,
    /// `None` when a field's layout is implementation-defined or unknown.
    pub layout: Option<Layout>,
    pub line: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    pub name: String,
    pub ty: Ty,
    pub offset: Option<u64>,
    pub line: usize,
}

impl Ty {
    /// An array of this type with the dimensions as declared, outermost first (`[2][3]`).
    pub(super) fn array_of(self, dims: &[u64]) -> Ty {
        dims.iter().rev().fold(self, |t, n| Ty::Array(Box::new(t), *n))
    }

    /// Size and alignment; `None` for void, opaque and implementation-defined types.
    pub fn layout(&self, structs: &[StructDef]) -> Option<Layout> {
        match self {
            Ty::Void | Ty::Opaque(_) => None,
            Ty::Scalar(s) => s.size().map(|size| Layout { size, align: size }),
            Ty::Vector(s, n) => {
                let lanes = if *n == 3 { 4 } else { u64::from(*n) };
                let size = s.size()? * lanes;
                Some(Layout { size, align: size })
            }
            Ty::Struct(i) => structs.get(*i)?.layout,
            Ty::Array(elem, n) => {
                let e = elem.layout(structs)?;
                Some(Layout { size: e.size.checked_mul(*n)?, align: e.align })
            }
        }
    }

    /// The OpenCL spelling, for messages.
    pub fn display<'a>(&'a self, structs: &'a [StructDef]) -> impl fmt::Display + 'a {
        TyDisplay(self, structs)
    }
}

struct TyDisplay<'a>(&'a Ty, &'a [StructDef]);

impl fmt::Display for TyDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Ty::Void => f.write_str("void"),
            Ty::Scalar(s) => f.write_str(s.name()),
            Ty::Vector(s, n) => write!(f, "{}{n}", s.name()),
            Ty::Struct(i) => match self.1.get(*i) {
                Some(def) => f.write_str(&def.name),
                None => f.write_str("struct"),
            },
            Ty::Array(elem, n) => write!(f, "{}[{n}]", TyDisplay(elem, self.1)),
            Ty::Opaque(name) => f.write_str(name),
        }
    }
}

/// Lays out `fields` by the C rules: each at the next multiple of its alignment, the struct
/// aligned to its most aligned field and padded to a multiple of that (`packed`: no padding).
pub fn lay_out(fields: &mut [Field], structs: &[StructDef], packed: bool) -> Option<Layout> {
    let mut offset = 0u64;
    let mut align = 1u64;
    let mut complete = true;
    for field in fields.iter_mut() {
        match field.ty.layout(structs) {
            Some(l) if complete => {
                let a = if packed { 1 } else { l.align.max(1) };
                offset = offset.checked_next_multiple_of(a)?;
                field.offset = Some(offset);
                offset = offset.checked_add(l.size)?;
                align = align.max(a);
            }
            _ => complete = false,
        }
    }
    complete.then_some(Layout { size: offset.checked_next_multiple_of(align)?, align })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(name: &str, ty: Ty) -> Field {
        Field { name: name.into(), ty, offset: None, line: 0 }
    }

    #[test]
    fn vectors_are_aligned_to_their_size_and_three_lanes_take_four() {
        let f4 = Ty::Vector(Scalar::Float, 4).layout(&[]).unwrap();
        assert_eq!((f4.size, f4.align), (16, 16));
        let f3 = Ty::Vector(Scalar::Float, 3).layout(&[]).unwrap();
        assert_eq!((f3.size, f3.align), (16, 16));
        let c2 = Ty::Vector(Scalar::UChar, 2).layout(&[]).unwrap();
        assert_eq!((c2.size, c2.align), (2, 2));
        assert_eq!(vector_from_name("double16"), Some((Scalar::Double, 16)));
        assert_eq!(vector_from_name("float5"), None);
        assert_eq!(vector_from_name("bool2"), None);
    }

    #[test]
    fn struct_padding_follows_c_rules() {
        // struct { float r; float4 c; char k; }: c at 16, k at 32, size 48.
        let mut fields = vec![
            field("r", Ty::Scalar(Scalar::Float)),
            field("c", Ty::Vector(Scalar::Float, 4)),
            field("k", Ty::Scalar(Scalar::Char)),
        ];
        let l = lay_out(&mut fields, &[], false).unwrap();
        let offsets: Vec<_> = fields.iter().map(|f| f.offset.unwrap()).collect();
        assert_eq!(offsets, [0, 16, 32]);
        assert_eq!((l.size, l.align), (48, 16));
        let l = lay_out(&mut fields, &[], true).unwrap();
        assert_eq!((l.size, l.align), (21, 1));
    }

    #[test]
    fn implementation_defined_fields_leave_the_layout_unknown() {
        let mut fields = vec![
            field("n", Ty::Scalar(Scalar::ImplementationDefined("size_t"))),
            field("x", Ty::Scalar(Scalar::Int)),
        ];
        assert_eq!(lay_out(&mut fields, &[], false), None);
    }
}
