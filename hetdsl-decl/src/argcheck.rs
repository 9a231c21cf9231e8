//! A host argument against a kernel parameter, for the runtime's check of every launch: what
//! the host passes (a buffer, a value or a `__local` size, and the Rust type as
//! `hetdsl::Pod` describes it) and whether it fits the parameter the reader found. The
//! messages use [`param_phrase`], as the macros' compile-time checks do.

use std::fmt;

use crate::clsig::{is_swap, AddrSpace, Param, Scalar, StructDef, Ty, Written};

/// A Rust primitive a kernel can take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prim {
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
    F32,
    F64,
}

impl Prim {
    pub const fn name(self) -> &'static str {
        match self {
            Prim::I8 => "i8",
            Prim::U8 => "u8",
            Prim::I16 => "i16",
            Prim::U16 => "u16",
            Prim::I32 => "i32",
            Prim::U32 => "u32",
            Prim::I64 => "i64",
            Prim::U64 => "u64",
            Prim::F32 => "f32",
            Prim::F64 => "f64",
        }
    }

    /// The primitive of a Rust name (`"f32"`).
    pub fn from_name(name: &str) -> Option<Prim> {
        let all = [
            Prim::I8,
            Prim::U8,
            Prim::I16,
            Prim::U16,
            Prim::I32,
            Prim::U32,
            Prim::I64,
            Prim::U64,
            Prim::F32,
            Prim::F64,
        ];
        all.into_iter().find(|p| p.name() == name)
    }

    pub const fn size(self) -> usize {
        match self {
            Prim::I8 | Prim::U8 => 1,
            Prim::I16 | Prim::U16 => 2,
            Prim::I32 | Prim::U32 | Prim::F32 => 4,
            Prim::I64 | Prim::U64 | Prim::F64 => 8,
        }
    }
}

/// A Rust type as `hetdsl::Pod` describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostType {
    Prim(Prim),
    /// `[T; N]` of a primitive: an OpenCL vector of `N` lanes (a 3-lane one takes 4).
    Array(Prim, usize),
    /// A user type (a struct, a newtype, an array of structs): its size and the primitives it
    /// is made of; `name` is empty when the type did not say.
    Opaque {
        size: usize,
        name: &'static str,
        lanes: Lanes,
    },
}

impl HostType {
    /// `[T; n]` of `elem`: made of what `elem` is made of.
    pub const fn array(elem: HostType, n: usize, size: usize) -> HostType {
        match elem {
            HostType::Prim(p) => HostType::Array(p, n),
            _ => HostType::Opaque { size, name: "", lanes: Lanes::of(elem) },
        }
    }

    pub const fn size(self) -> usize {
        match self {
            HostType::Prim(p) => p.size(),
            HostType::Array(p, n) => p.size() * n,
            HostType::Opaque { size, .. } => size,
        }
    }
}

impl fmt::Display for HostType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostType::Prim(p) => write!(f, "`{}`", p.name()),
            HostType::Array(p, n) => write!(f, "`[{}; {n}]`", p.name()),
            HostType::Opaque { size, name, lanes } => {
                match *name {
                    "" => write!(f, "a {size}-byte user type")?,
                    name => write!(f, "`{name}` ({size} bytes")?,
                }
                // What it is made of, where one primitive throughout: why it cannot be a vector
                // of another scalar.
                if let Lanes::Of(p) = lanes {
                    write!(f, " of `{}`", p.name())?;
                }
                if name.is_empty() {
                    Ok(())
                } else {
                    f.write_str(")")
                }
            }
        }
    }
}

/// Why a merged output cannot hand out what an atomic on it returns (`atomic`, its value used
/// at `line`), for the run-time check and the macros' alike.
pub fn counted_merge(atomic: &str, line: &str) -> String {
    format!(
        "the kernel uses the value `{atomic}` returns at {line}: each device counts in a copy of \
         its own, reset after every package, so two packages get the same values back (a \
         compaction's slots collide, a last-group test never passes): a merged output cannot be \
         such a counter; count per work-group into an output `1:N` (N the work-group size), scan \
         the counts, and write each group's elements from its offset in a second launch"
    )
}

/// Why a merged output cannot be reduced by `merge` (`"sum"`, `"max"`, …) for what the
/// kernel does with it, if it cannot: the end of a sentence naming the parameter, for the
/// run-time check and the macros' alike. Each device works on a copy of its own (a sum's
/// starting at zero, the others' at the caller's values), reset after every package, and the
/// copies are folded by the merge.
pub fn merge_misuse(merge: &str, param: &Param, at: &dyn Fn(usize) -> String) -> Option<String> {
    if let Some((line, atomic)) = &param.atomic_value_at {
        return Some(counted_merge(atomic, &at(*line)));
    }
    for (op, line) in &param.updates {
        let folds = update_merge(op);
        // A compare-and-swap adds, takes a maximum or sets bits as the loop around it computes
        // (its returned value used only to retry): every merge folds it.
        if folds != Some(merge) && !(folds.is_none() && is_swap(op)) {
            let instead = match folds {
                Some(m) => format!("declare the merge \"{m}\", which folds it"),
                None => "no merge folds it: give each element one writer and split the output \
                         by a pattern instead"
                    .to_string(),
            };
            return Some(format!(
                "the kernel updates its elements with `{op}` at {}, which a merge by \"{merge}\" \
                 does not fold: each device updates a copy of its own and the copies are \
                 combined by \"{merge}\", so the result is not what one device would leave; \
                 {instead}",
                at(*line)
            ));
        }
    }
    match &param.value_read_at {
        Some((line, what)) if merge == "sum" => Some(format!(
            "the kernel reads its elements at {} ({what}) other than to add to them: each device \
             adds into a copy of its own, starting at zero and reset after every package, so a \
             read sees one package's part of the sum, not the total (a capped count passes its \
             cap); a merge by \"sum\" takes `+=`, `-=`, `++`, `--`, an atomic add, sub, inc or \
             dec whose value is unused, and a compare-and-swap add; decide on the totals in a \
             second launch",
            at(*line)
        )),
        _ => None,
    }
}

/// The merge that folds an in-place update `op` (`+=`, `atomic_max`, `atom_or`, \
/// `atomic_fetch_add_explicit`) as one device applying them all would, if one does.
fn update_merge(op: &str) -> Option<&'static str> {
    let base = ["atomic_fetch_", "atomic_", "atom_"]
        .iter()
        .find_map(|p| op.strip_prefix(p))
        .map_or(op, |b| b.strip_suffix("_explicit").unwrap_or(b));
    match base {
        "+=" | "-=" | "++" | "--" | "add" | "sub" | "inc" | "dec" => Some("sum"),
        "max" => Some("max"),
        "min" => Some("min"),
        "|=" | "or" => Some("or"),
        "&=" | "and" => Some("and"),
        _ => None,
    }
}

/// What the host passes for one parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostArg {
    /// A buffer; `ty` is `None` when the launch did not say (arguments the macros built, whose
    /// types were checked at compile time); `merged`: the merge's name (`"sum"`) for an
    /// output every device writes whole, reduced across them.
    Buffer { ty: Option<HostType>, writes: bool, reads: bool, merged: Option<&'static str> },
    /// A value of `size` bytes.
    Scalar { ty: Option<HostType>, size: usize },
    /// A `__local` buffer of elements of `ty`, when the launch said.
    Local { ty: Option<HostType> },
}

impl HostArg {
    fn describe(&self) -> String {
        match self {
            HostArg::Buffer { ty, writes, reads, merged } => {
                let what = match (reads, writes) {
                    _ if merged.is_some() => "a merged output buffer",
                    (true, true) => "an inout buffer",
                    (false, true) => "an output buffer",
                    _ => "an input buffer",
                };
                match ty {
                    Some(t) => format!("{what} of {t}"),
                    None => what.to_string(),
                }
            }
            HostArg::Scalar { ty: Some(t), .. } => format!("a scalar {t}"),
            HostArg::Scalar { size, .. } => format!("a {size}-byte scalar"),
            HostArg::Local { ty: Some(t) } => format!("a `__local` buffer of {t}"),
            HostArg::Local { ty: None } => "a `__local` buffer".to_string(),
        }
    }
}

/// `parameter `y` is `__global float*` in kernels/saxpy.cl:2`: how every message about a
/// parameter begins, at compile time and at run time.
pub fn param_phrase(name: &str, text: &str, at: &str) -> String {
    format!("parameter `{name}` is `{text}` in {at}")
}

/// The Rust spelling of what fits an OpenCL type, for messages; `None` where only the reader's
/// name for it can be given.
fn rust_spelling(ty: &Ty, structs: &[StructDef]) -> String {
    match ty {
        Ty::Scalar(s) => s.rust().map_or(format!("`{}`", s.name()), |r| format!("`{r}`")),
        Ty::Vector(s, n) => {
            let lanes = if *n == 3 { 4 } else { *n };
            format!("`[{}; {lanes}]`", s.rust().unwrap_or(s.name()))
        }
        Ty::Struct(i) => {
            let def = &structs[*i];
            match def.layout {
                Some(l) => format!("a `#[repr(C)]` struct like `{}` ({} bytes)", def.name, l.size),
                None => format!("a `#[repr(C)]` struct like `{}`", def.name),
            }
        }
        other => format!("`{}`", other.display(structs)),
    }
}

/// Does a host value of `host` hold an OpenCL `ty`? `Ok` also where the reader cannot tell
/// (an unknown type, `size_t`): the kind and direction checks still apply.
fn type_fits(ty: &Ty, host: HostType, structs: &[StructDef]) -> bool {
    match (ty, host) {
        (Ty::Scalar(Scalar::Half), HostType::Prim(p)) => matches!(p, Prim::U16 | Prim::I16),
        (Ty::Scalar(s), HostType::Prim(p)) => s.rust().is_none_or(|r| r == p.name()),
        (Ty::Scalar(s), _) => s.rust().is_none(),
        (Ty::Vector(s, n), HostType::Array(p, len)) => {
            let lanes = if *n == 3 { 4 } else { usize::from(*n) };
            s.rust().is_none_or(|r| r == p.name()) && len == lanes
        }
        (Ty::Vector(s, n), HostType::Opaque { size, lanes: made_of, .. }) => {
            // The size alone lets a newtype of `[i32; 4]` through for a `float4`.
            let lanes = if *n == 3 { 4 } else { u64::from(*n) };
            let kind = s.rust().and_then(Prim::from_name).is_none_or(|p| made_of.hold(p, *n == 3));
            s.size().is_none_or(|b| b * lanes == size as u64) && kind
        }
        (Ty::Vector(..), HostType::Prim(_)) => false,
        (Ty::Struct(i), HostType::Opaque { size, .. }) => {
            structs[*i].layout.is_none_or(|l| l.size == size as u64)
        }
        (Ty::Struct(_), _) => false,
        // Unknown to the reader: the driver will have to do.
        _ => true,
    }
}

/// Checks one host argument against its parameter. `at` names a 0-based line of the read
/// source as `file:line`. The error is the message after `argument N: `.
pub fn check(
    param: &Param,
    host: &HostArg,
    at: &dyn Fn(usize) -> String,
    structs: &[StructDef],
) -> Result<(), String> {
    // The parameter's phrase names its file and line, found by scanning the source: only for
    // an error (every launch checks its arguments, and the scan was a third of a submit's
    // time).
    mismatch(param, host, at, structs).map_err(|rest| {
        format!("{}{rest}", param_phrase(&param.name, &param.text, &at(param.line)))
    })
}

/// What is wrong with `host` for `param`, as the end of a message that begins by naming the
/// parameter.
fn mismatch(
    param: &Param,
    host: &HostArg,
    at: &dyn Fn(usize) -> String,
    structs: &[StructDef],
) -> Result<(), String> {
    if let Some(why) = &param.unsupported {
        return Err(format!(": {why}"));
    }
    let found = host.describe();
    let want = rust_spelling(&param.ty, structs);
    match (param.pointer, host) {
        (None, HostArg::Scalar { ty, size }) => {
            let fits = match ty {
                Some(t) => type_fits(&param.ty, *t, structs),
                None => param.ty.layout(structs).is_none_or(|l| l.size == *size as u64),
            };
            if fits {
                Ok(())
            } else {
                Err(format!(", so the host argument must be a scalar {want}, found {found}"))
            }
        }
        (None, _) => Err(format!(", so the host argument must be a scalar {want}, found {found}")),
        (Some(ptr), HostArg::Local { ty }) => match ptr.space {
            AddrSpace::Local => match ty {
                Some(t) if !type_fits(&param.ty, *t, structs) => Err(format!(
                    ", so the host argument must be a `__local` buffer of {want}, found {found}"
                )),
                _ => Ok(()),
            },
            space => Err(format!(
                ", a buffer in `{}` memory, so the host argument must be a buffer of {want}, \
                 found {found}",
                space.name()
            )),
        },
        (Some(ptr), _) if ptr.space == AddrSpace::Local => Err(format!(
            ", so the host argument must be a `__local` buffer (`local_buffer::<{}>(n)`), \
             found {found}",
            want.trim_matches('`')
        )),
        (Some(_), HostArg::Scalar { .. }) => {
            Err(format!(", so the host argument must be a buffer of {want}, found {found}"))
        }
        (Some(ptr), HostArg::Buffer { ty, writes, merged, .. }) => {
            if ptr.space == AddrSpace::Private {
                return Err(": a pointer without `__global`, `__constant` or `__local` cannot be \
                            a kernel argument"
                    .into());
            }
            if let Some(t) = ty {
                if !type_fits(&param.ty, *t, structs) {
                    return Err(format!(
                        ", so the host argument must be a buffer of {want}, found {found}"
                    ));
                }
            }
            let read_only = ptr.const_pointee || ptr.space == AddrSpace::Constant;
            if *writes && read_only {
                let why = if ptr.space == AddrSpace::Constant {
                    "`__constant` memory"
                } else {
                    "its data is `const`"
                };
                return Err(format!(
                    ": {why}, so the kernel cannot write it; pass it as an input, found {found}"
                ));
            }
            if let Some(why) = merged.and_then(|m| merge_misuse(m, param, at)) {
                return Err(format!(", and {why}; found {found}"));
            }
            if !*writes && !read_only {
                match &param.written_at {
                    Some(Written::At(line)) => {
                        return Err(format!(
                            ", and the kernel writes through it at {}, so an input buffer \
                             would never receive what it writes; pass it as an output or \
                             inout, found {found}",
                            at(*line)
                        ))
                    }
                    Some(Written::Maybe { line, why }) => {
                        return Err(format!(
                            ", and the kernel may write through it: at {} {why}, so it counts \
                             as written and an input buffer would never receive what it \
                             writes; pass it as an inout (or an output), found {found}",
                            at(*line)
                        ))
                    }
                    None => {}
                }
            }
            Ok(())
        }
    }
}

/// What plain data is made of, lane by lane: one primitive throughout, several (the first of
/// them kept), or unknown (a hand-written `Pod`, or a field of one). A user type standing for
/// an OpenCL vector must be made of the vector's scalar, as a struct's fields must: a newtype
/// of `[i32; 4]` has the size of a `float4` but its bits mean integers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lanes {
    Unknown,
    Of(Prim),
    Mixed(Prim),
}

impl Lanes {
    /// The lanes of a primitive, an array of one, or a user type (as it says).
    pub const fn of(host: HostType) -> Lanes {
        match host {
            HostType::Prim(p) | HostType::Array(p, _) => Lanes::Of(p),
            HostType::Opaque { lanes, .. } => lanes,
        }
    }

    /// The lanes of a struct whose fields, in order, have `fields`.
    pub const fn all(fields: &[Lanes]) -> Lanes {
        if fields.is_empty() {
            return Lanes::Unknown;
        }
        let mut acc = fields[0];
        let mut i = 1;
        while i < fields.len() {
            acc = match (acc, fields[i]) {
                (Lanes::Unknown, _) | (_, Lanes::Unknown) => Lanes::Unknown,
                (Lanes::Of(a), Lanes::Of(b)) if a as u8 == b as u8 => Lanes::Of(a),
                (Lanes::Of(a) | Lanes::Mixed(a), _) => Lanes::Mixed(a),
            };
            i += 1;
        }
        acc
    }

    /// Can data of these lanes stand for scalars or a vector of `want`? A 3-lane vector takes
    /// the room of 4, so there the last lane may be padding of another type.
    pub const fn hold(self, want: Prim, three_lanes: bool) -> bool {
        match self {
            Lanes::Unknown => true,
            Lanes::Of(p) => p as u8 == want as u8,
            Lanes::Mixed(p) => three_lanes && p as u8 == want as u8,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clsig;

    const SRC: &str = "typedef struct { float x, y; int id; float pad; } P;\n\
        __kernel void k(__global const float* a, __global float* b, int n, float3 v,\n\
                        __local float* tmp, __constant int* c, __global P* ps, __global float* w) {\n\
            b[0] = a[0] + tmp[0] + c[0]; w[1] += 1.0f;\n\
        }\n";

    fn check_arg(index: usize, host: HostArg) -> Result<(), String> {
        let src = clsig::parse(SRC).unwrap();
        let params = src.kernel("k").unwrap().params.clone().unwrap();
        check(&params[index], &host, &|l| format!("k.cl:{}", l + 1), &src.structs)
    }

    fn buf(ty: HostType, writes: bool) -> HostArg {
        HostArg::Buffer { ty: Some(ty), writes, reads: !writes, merged: None }
    }

    #[test]
    fn the_right_arguments_pass() {
        let f32 = HostType::Prim(Prim::F32);
        assert_eq!(check_arg(0, buf(f32, false)), Ok(()));
        assert_eq!(check_arg(1, buf(f32, true)), Ok(()));
        assert_eq!(
            check_arg(2, HostArg::Scalar { ty: Some(HostType::Prim(Prim::I32)), size: 4 }),
            Ok(())
        );
        assert_eq!(
            check_arg(3, HostArg::Scalar { ty: Some(HostType::Array(Prim::F32, 4)), size: 16 }),
            Ok(())
        );
        assert_eq!(check_arg(4, HostArg::Local { ty: Some(f32) }), Ok(()));
        assert_eq!(check_arg(4, HostArg::Local { ty: None }), Ok(()));
        assert_eq!(check_arg(5, buf(HostType::Prim(Prim::I32), false)), Ok(()));
        let p = HostType::Opaque { size: 16, name: "P", lanes: Lanes::Unknown };
        assert_eq!(check_arg(6, buf(p, true)), Ok(()));
        // Untyped (built by the macros, checked at compile time): kinds only.
        let untyped = HostArg::Buffer { ty: None, writes: true, reads: true, merged: None };
        assert_eq!(check_arg(1, untyped), Ok(()));
        assert_eq!(check_arg(2, HostArg::Scalar { ty: None, size: 4 }), Ok(()));
    }

    #[test]
    fn mismatches_name_the_parameter_and_both_types() {
        let f32 = HostType::Prim(Prim::F32);
        let e = check_arg(1, HostArg::Scalar { ty: Some(HostType::Prim(Prim::U64)), size: 8 });
        assert_eq!(
            e.unwrap_err(),
            "parameter `b` is `__global float*` in k.cl:2, so the host argument must be a buffer \
             of `f32`, found a scalar `u64`"
        );
        let e = check_arg(2, HostArg::Scalar { ty: Some(f32), size: 4 }).unwrap_err();
        assert!(e.contains("scalar `i32`, found a scalar `f32`"), "{e}");
        let e = check_arg(3, HostArg::Scalar { ty: Some(HostType::Array(Prim::F32, 3)), size: 12 });
        assert!(e.unwrap_err().contains("`[f32; 4]`"));
        let e = check_arg(0, buf(HostType::Prim(Prim::I32), false)).unwrap_err();
        assert!(e.contains("buffer of `f32`, found an input buffer of `i32`"), "{e}");
        let e = check_arg(0, buf(f32, true)).unwrap_err();
        assert!(e.contains("its data is `const`"), "{e}");
        let e = check_arg(5, buf(HostType::Prim(Prim::I32), true)).unwrap_err();
        assert!(e.contains("`__constant` memory"), "{e}");
        let e = check_arg(7, buf(f32, false)).unwrap_err();
        assert!(e.contains("writes through it at k.cl:4"), "{e}");
        let e = check_arg(4, buf(f32, false)).unwrap_err();
        assert!(e.contains("`__local` buffer"), "{e}");
        let e = check_arg(
            6,
            buf(HostType::Opaque { size: 12, name: "Q", lanes: Lanes::Unknown }, true),
        )
        .unwrap_err();
        assert!(e.contains("like `P` (16 bytes), found an output buffer of `Q` (12 bytes)"), "{e}");
        let e = check_arg(4, HostArg::Local { ty: Some(HostType::Prim(Prim::I32)) }).unwrap_err();
        assert!(e.contains("`__local` buffer of `f32`, found a `__local` buffer of `i32`"), "{e}");
        let e = check_arg(2, HostArg::Local { ty: None }).unwrap_err();
        assert!(e.contains("found a `__local` buffer"), "{e}");
        assert!(check_arg(2, HostArg::Scalar { ty: None, size: 8 }).is_err());
    }

    /// A user type stands for a vector only when made of the vector's scalar; a 3-lane vector's
    /// fourth lane may be padding of another type; a hand-written `Pod` says nothing.
    #[test]
    fn lanes_of_user_types_against_a_vector_s_scalar() {
        let of = Lanes::of;
        let f4 = Lanes::all(&[of(HostType::Array(Prim::F32, 4))]);
        let i4 = Lanes::all(&[of(HostType::Array(Prim::I32, 4))]);
        let padded = Lanes::all(&[f4, of(HostType::Prim(Prim::U32))]);
        let unknown =
            Lanes::all(&[f4, of(HostType::Opaque { size: 4, name: "", lanes: Lanes::Unknown })]);
        assert!(f4.hold(Prim::F32, false) && !i4.hold(Prim::F32, false));
        assert!(!padded.hold(Prim::F32, false) && padded.hold(Prim::F32, true));
        assert!(!padded.hold(Prim::U32, true) && unknown.hold(Prim::I8, false));
        assert_eq!(Lanes::all(&[]), Lanes::Unknown);
    }
}
