//! A parameter as a `kernel!` or `#[coexec]` declaration gives it, against the kernel's
//! parameter: the checks and the words of the macros' compile-time check, shared with the check
//! of a source loaded at run time (`with_source`), so that both refuse the same declarations
//! with the same messages. The macros turn each [`Problem`] into an error on the token its
//! [`Spot`] names, and each [`Fit`] into `const` assertions; the runtime compares sizes.

use crate::argcheck::{merge_misuse, param_phrase};
use crate::clsig::{AddrSpace, Param, Pointer, Scalar, Source, Ty, Written};

mod ndrange;
pub use ndrange::ndrange_problems;

/// A buffer's direction, as its attribute says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    In,
    Out,
    InOut,
}

impl Dir {
    pub fn attr_name(self) -> &'static str {
        match self {
            Dir::In => "input",
            Dir::Out => "output",
            Dir::InOut => "inout",
        }
    }
    pub fn writes(self) -> bool {
        self != Dir::In
    }
}

/// What the declaration makes of a parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeclRole {
    Value,
    /// `merge`: the reduction's name and whether it is bitwise (`or`, `and`), for a merge
    /// the macro accepted as written.
    Buffer {
        dir: Dir,
        merge: Option<(String, bool)>,
    },
    Local,
}

/// The declared Rust type (of a value, or of a buffer's elements), as far as its spelling tells.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RustTy {
    /// A path: a primitive (`f32`) or a user type (`Sphere`, `geom::Sphere`); the name when
    /// the path is a single one.
    Path(Option<String>),
    /// `[T; N]`: `elem` is T when it is a single name, `len` N when it is a literal.
    Array { elem: Option<String>, len: Option<u64> },
    /// Anything else (a reference, a tuple, a path with `::`).
    Other,
}

/// A parameter of the declaration: its name, role, type and the type as written (for messages).
#[derive(Debug, Clone)]
pub struct DeclParam {
    pub name: String,
    pub role: DeclRole,
    /// The value's type, or the buffer's (or `__local` buffer's) element type.
    pub ty: RustTy,
    /// The same as written, tidied (`[f32; 4]`).
    pub ty_text: String,
    /// The whole parameter type as written (`&[f32]`), for suggestions.
    pub full_text: String,
}

/// The token a problem belongs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spot {
    /// The parameter's name.
    Name,
    /// The role attribute (`#[input(1:1)]`).
    Attr,
    /// The whole parameter type.
    Type,
    /// The value's or the elements' type.
    Elem,
    /// The merge's name (`"or"`).
    Merge,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub spot: Spot,
    pub message: String,
}

/// What a type's fit still needs proved beyond its spelling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fit {
    /// The name is the primitive `want` (unless shadowed: the macro asserts it).
    Primitive(&'static str),
    /// `[want; N]`, its element the primitive `want`.
    ArrayOf(&'static str),
    /// A user type standing for an OpenCL vector: it must be `size` bytes and made of the
    /// primitive `elem` (the last lane may be padding when `three_lanes`), `desc` in messages.
    Newtype { size: u64, desc: String, elem: &'static str, three_lanes: bool },
    /// A user type standing for OpenCL struct `index` of the source.
    Struct(usize),
}

/// The outcome of one parameter's check.
#[derive(Debug, Default)]
pub struct Checked {
    pub problems: Vec<Problem>,
    /// The fits to prove (at most one per parameter).
    pub fit: Option<Fit>,
    /// A merge was declared but cannot be used (the expansion then treats the buffer as plain).
    pub merge_refused: bool,
}

impl Checked {
    fn push(&mut self, spot: Spot, message: String) {
        self.problems.push(Problem { spot, message });
    }
}

/// Why a Rust type does not fit an OpenCL one.
enum Mismatch {
    /// The Rust type that would fit.
    Expected(String),
    /// No Rust type fits: the OpenCL side must change.
    Unsupported(String),
}

const PRIMITIVES: [&str; 15] = [
    "i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "i128", "u128", "isize", "usize", "f32",
    "f64", "bool",
];

/// `rust` against the kernel's parameter `p`; `at` names a 0-based line of the read source.
pub fn check_param(
    rust: &DeclParam,
    p: &Param,
    cl: &Source,
    at: &dyn Fn(usize) -> String,
) -> Checked {
    let mut out = Checked::default();
    let name = &rust.name;
    let what = param_phrase(name, &p.text, &at(p.line));
    if let Some(why) = &p.unsupported {
        out.push(Spot::Name, format!("{what}: {why}"));
        return out;
    }
    if let Some(space) = p.value_space.filter(|s| *s != AddrSpace::Private) {
        let msg = format!(
            "{what}: a `{}` value is not a valid kernel argument (a pointer is)",
            space.name()
        );
        out.push(Spot::Name, msg);
        return out;
    }
    let elem_name = rust_name(&p.ty, cl);
    match (p.pointer, &rust.role) {
        (None, DeclRole::Value) => match match_type(&p.ty, &rust.ty, cl, at) {
            Ok(fit) => out.fit = Some(fit),
            Err(m) => out.push(Spot::Elem, mismatch(rust, &what, "the Rust type must be", m)),
        },
        (None, DeclRole::Buffer { .. } | DeclRole::Local) => {
            let msg =
                format!("{what}, a value: drop the attribute and write `{name}: {elem_name}`");
            out.push(Spot::Attr, msg);
        }
        (Some(ptr), _) => pointer_param(rust, p, ptr, &what, cl, at, &mut out),
    }
    out
}

/// [`check_param`] for a declaration whose names the compiler resolved when it compiled (the
/// check of a source loaded at run time): a type alias of a primitive comes as that primitive,
/// so a name a fit still asks to be a primitive is another type, refused as a mismatch.
pub fn check_param_resolved(
    rust: &DeclParam,
    p: &Param,
    cl: &Source,
    at: &dyn Fn(usize) -> String,
) -> Checked {
    let mut out = check_param(rust, p, cl, at);
    let unproved = match (&out.fit, &rust.ty) {
        (Some(Fit::Primitive(w)), RustTy::Path(n)) => {
            (n.as_deref() != Some(*w)).then(|| format!("`{w}`"))
        }
        (Some(Fit::ArrayOf(w)), RustTy::Array { elem, len }) => {
            (elem.as_deref() != Some(*w)).then(|| format!("`[{w}; {}]`", len.unwrap_or_default()))
        }
        _ => None,
    };
    if let Some(want) = unproved {
        let what = param_phrase(&rust.name, &p.text, &at(p.line));
        let so = match rust.role {
            DeclRole::Value => "the Rust type must be",
            _ => "the elements must be",
        };
        out.push(Spot::Elem, mismatch(rust, &what, so, Mismatch::Expected(want)));
        out.fit = None;
    }
    out
}

/// A pointer parameter: its address space decides the declaration it needs (a `#[local]`
/// buffer for `__local`, a buffer with a direction and pattern for `__global`/`__constant`).
fn pointer_param(
    rust: &DeclParam,
    p: &Param,
    ptr: Pointer,
    what: &str,
    cl: &Source,
    at: &dyn Fn(usize) -> String,
    out: &mut Checked,
) {
    let name = &rust.name;
    let elem_name = rust_name(&p.ty, cl);
    match (ptr.space, &rust.role) {
        (AddrSpace::Private, _) => out.push(
            Spot::Name,
            format!("{what}: a pointer without `__global`, `__constant` or `__local` cannot be a kernel argument"),
        ),
        (AddrSpace::Local, DeclRole::Local) => match match_type(&p.ty, &rust.ty, cl, at) {
            Ok(fit) => out.fit = Some(fit),
            Err(m) => out.push(Spot::Elem, mismatch(rust, what, "the elements must be", m)),
        },
        (AddrSpace::Local, _) => out.push(
            Spot::Type,
            format!(
                "{what}: a `__local` buffer is allocated on the device, one per work-group; declare \
                 it `#[local] {name}: [{elem_name}; N]` for N elements per work-group"
            ),
        ),
        (space, DeclRole::Buffer { dir, merge }) => {
            if let Some((op, bitwise)) = merge {
                if let Some(why) = merge_problem(op, *bitwise, &p.ty, cl) {
                    out.push(Spot::Merge, format!("{what}: {why}"));
                    out.merge_refused = true;
                }
                if let Some(why) = merge_misuse(op, p, at) {
                    out.push(Spot::Merge, format!("{what}, and {why}"));
                    out.merge_refused = true;
                }
            }
            if dir.writes() && (ptr.const_pointee || space == AddrSpace::Constant) {
                out.merge_refused = true;
                let why = if space == AddrSpace::Constant {
                    "`__constant` memory"
                } else {
                    "its data is `const`"
                };
                let msg = format!(
                    "{what}: {why}, so the kernel cannot write it; an #[{}] buffer must be a \
                     non-const `__global` pointer (or declare it #[input])",
                    dir.attr_name()
                );
                out.push(Spot::Attr, msg);
            }
            if let (Dir::In, false, AddrSpace::Global, Some(written)) =
                (dir, ptr.const_pointee, space, &p.written_at)
            {
                // An input is never copied back: what the kernel writes would be lost.
                let msg = match written {
                    Written::At(line) => format!(
                        "{what}, and the kernel writes through it at {}, so an #[input] buffer \
                         would never receive what it writes; declare it #[output(..)] or \
                         #[inout(..)] (or make its data `const` if the kernel only reads it)",
                        at(*line)
                    ),
                    Written::Maybe { line, why } => format!(
                        "{what}, and the kernel may write through it: at {} {why}, so it counts \
                         as written and an #[input] buffer would never receive what it writes; \
                         declare it #[inout(..)] (or #[output(..)]), or make its data `const` \
                         if the kernel only reads it",
                        at(*line)
                    ),
                };
                out.push(Spot::Attr, msg);
            }
            match match_type(&p.ty, &rust.ty, cl, at) {
                Ok(fit) => out.fit = Some(fit),
                Err(m) => out.push(Spot::Elem, mismatch(rust, what, "the elements must be", m)),
            }
        }
        (space, role) => {
            let not_local = if *role == DeclRole::Local { ", not a `__local` one" } else { "" };
            let how = if space == AddrSpace::Constant || ptr.const_pointee {
                format!("#[input(1:1)] {name}: &[{elem_name}]")
            } else {
                format!("#[output(1:1)] {name}: &mut [{elem_name}]")
            };
            let msg = format!(
                "{what}, a buffer in {} memory{not_local}: declare it with its direction and pattern, e.g. `{how}`",
                &space.name()[2..]
            );
            out.push(Spot::Type, msg);
        }
    }
}

/// Why the kernel's elements cannot be reduced by the merge `op`, if they cannot: scalars only
/// (the runtime reduces `i8`..`u64`, `f32`, `f64`), and bitwise merges only integers.
fn merge_problem(op: &str, bitwise: bool, ty: &Ty, cl: &Source) -> Option<String> {
    match ty {
        Ty::Scalar(Scalar::Float | Scalar::Double) if bitwise => Some(format!(
            "`{op}` is bitwise, for integers; floating-point elements merge by \"sum\", \"max\" or \"min\""
        )),
        Ty::Scalar(
            Scalar::Char
            | Scalar::UChar
            | Scalar::Short
            | Scalar::UShort
            | Scalar::Int
            | Scalar::UInt
            | Scalar::Long
            | Scalar::ULong
            | Scalar::Float
            | Scalar::Double,
        ) => None,
        other => Some(format!(
            "a merge reduces scalar elements (integers, `float`, `double`), not `{}`; merge each \
             component in a buffer of its own, or split the output by a pattern `a:b`",
            other.display(&cl.structs)
        )),
    }
}

/// The Rust spelling of a type, for suggestions.
pub fn rust_name(ty: &Ty, cl: &Source) -> String {
    match ty {
        Ty::Scalar(s) => s.rust().unwrap_or("?").to_string(),
        Ty::Vector(s, n) => {
            format!("[{}; {}]", s.rust().unwrap_or("?"), if *n == 3 { 4 } else { *n })
        }
        other => other.display(&cl.structs).to_string(),
    }
}

/// A Rust primitive's name (`f32`, `u8`, `bool`, …).
pub fn is_primitive(name: &str) -> bool {
    PRIMITIVES.contains(&name)
}

/// Does `rust` hold an OpenCL `ty` value? What is left to prove comes back as a [`Fit`].
fn match_type(
    ty: &Ty,
    rust: &RustTy,
    cl: &Source,
    at: &dyn Fn(usize) -> String,
) -> Result<Fit, Mismatch> {
    let structs = &cl.structs;
    match ty {
        Ty::Scalar(s) => {
            let want = s.rust().ok_or_else(|| Mismatch::Unsupported(unsupported_scalar(*s)))?;
            match rust {
                RustTy::Path(Some(n)) if n == want => Ok(Fit::Primitive(want)),
                // Another name may be a type alias of `want` (`type Real = f32;`): the macro
                // cannot see through it, so the compiler proves it is `want`.
                RustTy::Path(n) if !is_primitive(n.as_deref().unwrap_or("")) => {
                    Ok(Fit::Primitive(want))
                }
                _ => Err(Mismatch::Expected(format!("`{want}`"))),
            }
        }
        Ty::Vector(s, n) => {
            let want = s.rust().ok_or_else(|| Mismatch::Unsupported(unsupported_scalar(*s)))?;
            let lanes = if *n == 3 { 4 } else { u64::from(*n) };
            let note = if *n == 3 { ", as a 3-component vector takes the room of 4" } else { "" };
            let expected = Mismatch::Expected(format!(
                "`[{want}; {lanes}]` or a `#[repr(C)]` newtype of it{note}"
            ));
            // An element named otherwise may be an alias of `want`, proved by the compiler.
            let elem_fits =
                |e: &Option<String>| e.as_deref().is_none_or(|e| e == want || !is_primitive(e));
            match rust {
                RustTy::Array { elem, len: Some(l) } if elem_fits(elem) && *l == lanes => {
                    Ok(Fit::ArrayOf(want))
                }
                RustTy::Path(name) if !is_primitive(name.as_deref().unwrap_or("")) => {
                    let size = s.size().unwrap_or(0) * lanes;
                    Ok(Fit::Newtype {
                        size,
                        desc: format!("`{}` ({size} bytes)", ty.display(structs)),
                        elem: want,
                        three_lanes: *n == 3,
                    })
                }
                _ => Err(expected),
            }
        }
        Ty::Struct(i) => {
            let def = &structs[*i];
            if !matches!(rust, RustTy::Path(n) if !is_primitive(n.as_deref().unwrap_or(""))) {
                return Err(Mismatch::Expected(format!(
                    "a `#[repr(C)]` struct with the fields of `{}` ({})",
                    def.name,
                    at(def.line)
                )));
            }
            if def.layout.is_none() {
                return Err(Mismatch::Unsupported(format!(
                    "the layout of `{}` ({}) depends on the device (a field is `bool`, `size_t`, a pointer or unknown)",
                    def.name,
                    at(def.line)
                )));
            }
            Ok(Fit::Struct(*i))
        }
        Ty::Opaque(name) => Err(Mismatch::Unsupported(match cl.unread.get(name) {
            Some(why) => format!(
                "`{name}` is declared at {} but its declaration could not be read: {why}",
                at(why.line)
            ),
            None => format!(
                "`{name}` is neither an OpenCL scalar or vector type nor defined in the source"
            ),
        })),
        Ty::Array(..) | Ty::Void => {
            Err(Mismatch::Unsupported(format!("`{}` cannot be passed", ty.display(structs))))
        }
    }
}

fn mismatch(rust: &DeclParam, what: &str, so: &str, m: Mismatch) -> String {
    match m {
        Mismatch::Expected(want) => format!("{what}, so {so} {want}, found `{}`", rust.ty_text),
        Mismatch::Unsupported(why) => format!("{what}: {why}"),
    }
}

fn unsupported_scalar(s: Scalar) -> String {
    match s {
        Scalar::Half => "`half` has no Rust type; pass `float` or `ushort` bits instead".to_string(),
        other => format!(
            "the size of `{}` is the device's choice, so the host cannot pass one; use `uint` or `ulong`",
            other.name()
        ),
    }
}

/// The message when a user type's size differs from OpenCL struct `name`'s (`at`: its line).
pub fn struct_size_message(name: &str, size: u64, at: &str) -> String {
    format!(
        "`{name}` is {size} bytes in OpenCL ({at}); the Rust type must be too: #[repr(C)], the same \
         fields in the same order"
    )
}

/// The message when a user type's alignment differs from OpenCL struct `name`'s.
pub fn struct_align_message(name: &str, align: u64, at: &str) -> String {
    format!(
        "`{name}` is aligned to {align} bytes in OpenCL ({at}); give the Rust type `#[repr(C, align({align}))]` \
         or fields so aligned"
    )
}

/// The message when a user type standing for a vector (`desc`) differs from it in size.
pub fn newtype_size_message(desc: &str) -> String {
    format!("the kernel's {desc} and this Rust type differ in size")
}

/// The message when a user type standing for a vector (`desc`) is made of another primitive
/// than the vector's `elem`.
pub fn newtype_kind_message(desc: &str, elem: &str) -> String {
    format!(
        "the kernel's {desc} is made of `{elem}`: the Rust type must hold `{elem}` lanes (`[{elem}; N]` \
         or `{elem}` fields), or the kernel reads its bits as another type"
    )
}

/// The message when the declarations of a source cannot be read (`at`: where it stopped).
pub fn unreadable_source(at: &str, why: &dyn std::fmt::Display) -> String {
    format!("cannot read the declarations of {at}: {why}")
}

/// Which token a problem with the kernel as a whole belongs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelSpot {
    /// The kernel's name (`name = "…"` or the function's).
    Name,
    /// The whole signature.
    Signature,
}

/// The parameters of `kernel` in `cl` (read from `source_name`), when it is there, can be read
/// and has as many parameters as the declaration (`declared`).
pub fn kernel_params<'a>(
    cl: &'a Source,
    kernel: &str,
    source_name: &str,
    declared: usize,
    at: &dyn Fn(usize) -> String,
) -> Result<&'a [Param], (KernelSpot, String)> {
    let Some(k) = cl.kernel(kernel) else {
        let names: Vec<&str> = cl.kernels.iter().map(|k| k.name.as_str()).collect();
        let there = if names.is_empty() { "none".to_string() } else { names.join(", ") };
        let msg = format!("no kernel `{kernel}` in `{source_name}`; kernels there: {there}");
        return Err((KernelSpot::Name, msg));
    };
    let params = k.params.as_ref().map_err(|e| {
        let msg =
            format!("cannot read the parameters of kernel `{}` at {}: {e}", k.name, at(e.line));
        (KernelSpot::Name, msg)
    })?;
    if params.len() != declared {
        let names: Vec<&str> = params.iter().map(|p| p.name.as_str()).collect();
        let msg = format!(
            "kernel `{}` ({}) takes {} parameters ({}), the declaration has {declared}",
            k.name,
            at(k.line),
            params.len(),
            names.join(", "),
        );
        return Err((KernelSpot::Signature, msg));
    }
    Ok(params)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clsig;

    const SRC: &str = "__kernel void k(__global const float* a, __global float* y, int n,\n\
                       __local int* tmp) { y[0] = a[0]; }\n";

    fn check(index: usize, role: DeclRole, ty: RustTy, text: &str) -> Checked {
        let cl = clsig::parse(SRC).unwrap();
        let params = cl.kernel("k").unwrap().params.clone().unwrap();
        let decl =
            DeclParam { name: "p".into(), role, ty, ty_text: text.into(), full_text: text.into() };
        check_param(&decl, &params[index], &cl, &|l| format!("k.cl:{}", l + 1))
    }

    fn path(name: &str) -> RustTy {
        RustTy::Path(Some(name.into()))
    }

    #[test]
    fn fitting_parameters_leave_only_what_the_compiler_proves() {
        let input = DeclRole::Buffer { dir: Dir::In, merge: None };
        let out = check(0, input, path("f32"), "f32");
        assert!(out.problems.is_empty(), "{:?}", out.problems);
        assert_eq!(out.fit, Some(Fit::Primitive("f32")));
        let out = check(2, DeclRole::Value, path("i32"), "i32");
        assert!(out.problems.is_empty() && !out.merge_refused);
    }

    #[test]
    fn another_name_may_be_an_alias_until_the_compiler_resolved_it() {
        let value = DeclParam {
            name: "p".into(),
            role: DeclRole::Value,
            ty: path("Count"),
            ty_text: "Count".into(),
            full_text: "Count".into(),
        };
        let cl = clsig::parse(SRC).unwrap();
        let params = cl.kernel("k").unwrap().params.clone().unwrap();
        let at = |l: usize| format!("k.cl:{}", l + 1);
        // At compile time `Count` may be `type Count = i32;`: the compiler proves it.
        let out = check_param(&value, &params[2], &cl, &at);
        assert!(out.problems.is_empty(), "{:?}", out.problems);
        assert_eq!(out.fit, Some(Fit::Primitive("i32")));
        // At run time an alias comes as its primitive, so `Count` is another type.
        let out = check_param_resolved(&value, &params[2], &cl, &at);
        assert_eq!(out.fit, None);
        assert_eq!(
            out.problems[0].message,
            "parameter `p` is `int` in k.cl:1, so the Rust type must be `i32`, found `Count`"
        );
        let primitive = DeclParam { ty: path("i32"), ty_text: "i32".into(), ..value };
        assert!(check_param_resolved(&primitive, &params[2], &cl, &at).problems.is_empty());
    }

    #[test]
    fn each_problem_says_which_token_it_belongs_on() {
        let write = DeclRole::Buffer { dir: Dir::Out, merge: Some(("or".into(), true)) };
        let out = check(0, write, path("f32"), "f32");
        let spots: Vec<Spot> = out.problems.iter().map(|p| p.spot).collect();
        // `or` on floats (the merge's name), and an output for `const` data (the attribute).
        assert_eq!(spots, [Spot::Merge, Spot::Attr], "{:?}", out.problems);
        assert!(out.merge_refused);
        let out = check(2, DeclRole::Value, path("u32"), "u32");
        assert_eq!(out.problems[0].spot, Spot::Elem);
        assert_eq!(
            out.problems[0].message,
            "parameter `p` is `int` in k.cl:1, so the Rust type must be `i32`, found `u32`"
        );
        let out = check(3, DeclRole::Value, path("i32"), "i32");
        assert_eq!(out.problems[0].spot, Spot::Type);
        assert!(out.problems[0].message.contains("`#[local] p: [i32; N]`"));
    }
}
