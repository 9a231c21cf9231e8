//! Checks a declaration against its kernel: reads the OpenCL source (includes resolved), finds
//! the kernel, and compares every parameter. Problems are collected, each on the span of the
//! Rust token at fault and saying what the kernel expects; what only the compiler can compare
//! (struct layouts) becomes `const` assertions for the expansion.

mod layout;
mod pattern;
mod source;

use std::collections::HashSet;
use std::path::PathBuf;

use proc_macro2::{Span, TokenStream};
use quote::{quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::Type;

use crate::clsig::{self, AddrSpace, Scalar, Ty};
use crate::errors::Errors;
use crate::parse::{Direction, Func, LocalSize, MergeOp, Options, Param, Role};
use hetdsl_decl::argcheck::param_phrase;
use hetdsl_decl::balancer;
use source::{load, Loaded};

/// What the expansion needs besides the declaration.
pub struct Checked {
    pub kernel_name: String,
    /// Work-group size; `[1]` stands in when the option is missing (an error is reported).
    pub local: Vec<u64>,
    /// The source's name for messages (relative to the manifest directory).
    pub source_name: String,
    /// The flattened source to embed (empty when it could not be read).
    pub source_text: String,
    /// Every file read, to make the crate rebuild when one changes.
    pub files: Vec<PathBuf>,
    /// `const` layout assertions for user types.
    pub asserts: TokenStream,
    pub balancer: Option<String>,
    /// The build options (`defines` as `-D` flags, then `options`), for the checker's
    /// preprocessor and the program build alike.
    pub build_options: String,
    /// Parameters whose `merge` was refused: they expand as plain buffers, so that only the
    /// reported errors show.
    pub refused_merges: HashSet<String>,
    /// Buffers whose pattern names something that cannot be a side: they expand with `1:1`.
    pub refused_patterns: HashSet<String>,
}

pub fn check(options: &Options, func: &Func, errors: &mut Errors) -> Checked {
    let at = options.span.unwrap_or_else(|| func.ident.span());
    let mut checked = from_options(options, func, at, errors);
    checked.refused_patterns = pattern::check_names(func, errors);
    let Some(file) = &options.file else {
        errors.push(syn::Error::new(
            at,
            "missing option `file`: the OpenCL source, e.g. `file = \"kernels/saxpy.cl\"`",
        ));
        return checked;
    };
    checked.source_name = file.value();
    let Some(source) = load(file, &options.include, errors) else {
        return checked;
    };
    checked.source_text = source.flat.text.clone();
    checked.files = source.flat.files.clone();
    // Malformed options were reported where they were parsed.
    let defines = clsig::defines_from_options(&checked.build_options).unwrap_or_default();
    let cl = match clsig::parse_with_defines(&source.text, &defines) {
        Ok(cl) => cl,
        Err(e) => {
            let msg = format!("cannot read the declarations of {}: {e}", source.at(e.line));
            errors.push(syn::Error::new(file.span(), msg));
            return checked;
        }
    };
    let name_span = options.name.as_ref().map_or_else(|| func.ident.span(), |n| n.span());
    let Some(kernel) = cl.kernel(&checked.kernel_name) else {
        let names: Vec<&str> = cl.kernels.iter().map(|k| k.name.as_str()).collect();
        let there = if names.is_empty() { "none".to_string() } else { names.join(", ") };
        let msg = format!(
            "no kernel `{}` in `{}`; kernels there: {there}",
            checked.kernel_name, checked.source_name
        );
        errors.push(syn::Error::new(name_span, msg));
        return checked;
    };
    let params = match &kernel.params {
        Ok(p) => p,
        Err(e) => {
            let msg = format!(
                "cannot read the parameters of kernel `{}` at {}: {e}",
                kernel.name,
                source.at(e.line)
            );
            errors.push(syn::Error::new(name_span, msg));
            return checked;
        }
    };
    if params.len() != func.params.len() {
        let names: Vec<&str> = params.iter().map(|p| p.name.as_str()).collect();
        let msg = format!(
            "kernel `{}` ({}) takes {} parameters ({}), the declaration has {}",
            kernel.name,
            source.at(kernel.line),
            params.len(),
            names.join(", "),
            func.params.len()
        );
        errors.push(syn::Error::new_spanned(&func.sig_tokens, msg));
        return checked;
    }
    let items_per_group: u64 = checked.local.iter().product();
    let mut ctx = Ctx {
        cl: &cl,
        source: &source,
        asserts: TokenStream::new(),
        asserted: HashSet::new(),
        refused_merges: HashSet::new(),
    };
    for (rust, p) in func.params.iter().zip(params) {
        ctx.param(rust, p, items_per_group, errors);
    }
    checked.asserts = ctx.asserts;
    checked.refused_merges = ctx.refused_merges;
    checked
}

/// What the options alone decide: the work-group size, the kernel's name, the balancer and the
/// build options (a missing `local` or an unknown balancer reported).
fn from_options(options: &Options, func: &Func, at: Span, errors: &mut Errors) -> Checked {
    let local = match &options.local {
        Some((dims, _)) if !dims.is_empty() => dims.clone(),
        Some(_) => vec![1],
        None => {
            errors.push(syn::Error::new(
                at,
                "missing option `local`: the work-group size, `local = 64` for a 1-D NDRange or \
                 `local = [16, 16]` for 2-D",
            ));
            vec![1]
        }
    };
    if let Some(b) = &options.balancer {
        if let Err(why) = balancer::validate(&b.value()) {
            errors.push(syn::Error::new(b.span(), why));
        }
    }
    let kernel_name = options.name.as_ref().map_or_else(|| func.ident.to_string(), |n| n.value());
    Checked {
        kernel_name,
        local,
        source_name: String::new(),
        source_text: String::new(),
        files: Vec::new(),
        asserts: TokenStream::new(),
        balancer: options.balancer.as_ref().map(|b| b.value()),
        build_options: options.build_options(),
        refused_merges: HashSet::new(),
        refused_patterns: HashSet::new(),
    }
}

struct Ctx<'a> {
    cl: &'a clsig::Source,
    source: &'a Loaded,
    asserts: TokenStream,
    /// Types already given layout assertions (one set per type is enough).
    asserted: HashSet<String>,
    /// Parameters whose `merge` was refused.
    refused_merges: HashSet<String>,
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

impl Ctx<'_> {
    fn param(&mut self, rust: &Param, p: &clsig::Param, items_per_group: u64, errors: &mut Errors) {
        let name = &rust.ident;
        let what = param_phrase(&name.to_string(), &p.text, &self.source.at(p.line));
        if let Some(why) = &p.unsupported {
            errors.push(syn::Error::new(name.span(), format!("{what}: {why}")));
            return;
        }
        if let Some(space) = p.value_space.filter(|s| *s != AddrSpace::Private) {
            let msg = format!(
                "{what}: a `{}` value is not a valid kernel argument (a pointer is)",
                space.name()
            );
            errors.push(syn::Error::new(name.span(), msg));
            return;
        }
        let elem_name = self.rust_name(&p.ty);
        match (p.pointer, &rust.role) {
            (None, Role::Value) => {
                if let Err(m) = self.match_type(&p.ty, &rust.ty) {
                    errors.push(mismatch(&rust.ty, &what, "the Rust type must be", m));
                }
            }
            (None, Role::Buffer { attr, .. } | Role::Local { attr, .. }) => {
                let msg =
                    format!("{what}, a value: drop the attribute and write `{name}: {elem_name}`");
                errors.push(syn::Error::new_spanned(attr, msg));
            }
            (Some(ptr), _) => self.pointer_param(rust, p, ptr, &what, items_per_group, errors),
        }
    }

    /// A pointer parameter: its address space decides the declaration it needs (a `#[local]`
    /// array for `__local`, a buffer with a direction and pattern for `__global`/`__constant`).
    fn pointer_param(
        &mut self,
        rust: &Param,
        p: &clsig::Param,
        ptr: clsig::Pointer,
        what: &str,
        items_per_group: u64,
        errors: &mut Errors,
    ) {
        let name = &rust.ident;
        let elem_name = self.rust_name(&p.ty);
        match (ptr.space, &rust.role) {
            (AddrSpace::Private, _) => {
                let msg = format!("{what}: a pointer without `__global`, `__constant` or `__local` cannot be a kernel argument");
                errors.push(syn::Error::new(name.span(), msg));
            }
            (AddrSpace::Local, Role::Local { elem, size, .. }) => {
                if let Err(m) = self.match_type(&p.ty, elem) {
                    errors.push(mismatch(elem, what, "the elements must be", m));
                }
                self.check_local_size(name, elem, size, items_per_group, errors);
            }
            (AddrSpace::Local, _) => {
                let msg = format!(
                    "{what}: a `__local` buffer is allocated on the device, one per work-group; declare \
                     it `#[local] {name}: [{elem_name}; N]` for N elements per work-group"
                );
                errors.push(syn::Error::new_spanned(&rust.ty, msg));
            }
            (space, Role::Buffer { dir, pattern, elem, attr, merge }) => {
                let merge_ok = merge
                    .as_ref()
                    .and_then(|m| m.op.map(|op| (op, m)))
                    .is_some_and(|(op, m)| self.check_merge(op, &m.lit, p, what, errors));
                if merge.is_some() && !merge_ok {
                    self.refused_merges.insert(name.to_string());
                }
                if dir.writes() && (ptr.const_pointee || space == AddrSpace::Constant) {
                    self.refused_merges.insert(name.to_string());
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
                    errors.push(syn::Error::new_spanned(attr, msg));
                }
                if let (Direction::In, false, AddrSpace::Global, Some(line)) =
                    (dir, ptr.const_pointee, space, p.written_at)
                {
                    // An input is never copied back: what the kernel writes would be lost.
                    let msg = format!(
                        "{what}, and the kernel writes through it at {}, so an #[input] buffer \
                         would never receive what it writes; declare it #[output(..)] or \
                         #[inout(..)] (or make its data `const` if the kernel only reads it)",
                        self.source.at(line)
                    );
                    errors.push(syn::Error::new_spanned(attr, msg));
                }
                if let Err(m) = self.match_type(&p.ty, elem) {
                    errors.push(mismatch(elem, what, "the elements must be", m));
                }
                pattern::check_pattern(
                    pattern,
                    *dir,
                    merge.is_some(),
                    items_per_group,
                    attr,
                    errors,
                );
            }
            (space, role) => {
                let not_local =
                    if matches!(role, Role::Local { .. }) { ", not a `__local` one" } else { "" };
                let how = if space == AddrSpace::Constant || ptr.const_pointee {
                    format!("#[input(1:1)] {name}: &[{elem_name}]")
                } else {
                    format!("#[output(1:1)] {name}: &mut [{elem_name}]")
                };
                let msg = format!(
                    "{what}, a buffer in {} memory{not_local}: declare it with its direction and pattern, e.g. `{how}`",
                    &space.name()[2..]
                );
                errors.push(syn::Error::new_spanned(&rust.ty, msg));
            }
        }
    }

    /// Can the kernel's elements be reduced by `merge`? Scalars only (the runtime reduces
    /// `i8`..`u64`, `f32`, `f64`), and `or`/`and` only integers. Reports and returns `false` if not.
    fn check_merge(
        &self,
        op: MergeOp,
        lit: &syn::LitStr,
        p: &clsig::Param,
        what: &str,
        errors: &mut Errors,
    ) -> bool {
        let name = lit.value();
        let why = match &p.ty {
            Ty::Scalar(Scalar::Float | Scalar::Double) if op.bitwise() => format!(
                "`{name}` is bitwise, for integers; floating-point elements merge by \"sum\", \"max\" or \"min\""
            ),
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
            ) => return true,
            other => format!(
                "a merge reduces scalar elements (integers, `float`, `double`), not `{}`; merge each \
                 component in a buffer of its own, or split the output by a pattern `a:b`",
                other.display(&self.cl.structs)
            ),
        };
        errors.push(syn::Error::new(lit.span(), format!("{what}: {why}")));
        false
    }

    /// A `__local` buffer must hold one element per work-item, since kernels index it by the
    /// local id: a smaller one lets the kernel write past it, into whatever the device keeps
    /// beside it (PoCL's heap on a CPU). Fewer are accepted only under `allow_smaller`.
    fn check_local_size(
        &mut self,
        name: &syn::Ident,
        elem: &Type,
        size: &LocalSize,
        items_per_group: u64,
        errors: &mut Errors,
    ) {
        let elem_name = tidy(&elem.to_token_stream().to_string());
        match size {
            LocalSize::PerItem(k) => {
                if k.checked_mul(items_per_group).is_none_or(|n| n > u64::from(u32::MAX)) {
                    errors.push(syn::Error::new(
                        name.span(),
                        format!(
                            "`per_item = {k}` × {items_per_group} work-items is too many elements"
                        ),
                    ));
                }
            }
            LocalSize::Fixed { allow_smaller: true, .. } => {}
            LocalSize::Fixed { count, allow_smaller: false } => {
                let why = |n: &str| {
                    format!(
                        "`__local` buffer `{name}` has {n} elements but a work-group has {items_per_group} \
                         work-items: a kernel that indexes it by the local id writes past its end. Size it \
                         by the work-group with `#[local(per_item = 1)] {name}: [{elem_name}]`, or write \
                         `#[local(allow_smaller)]` if the kernel really uses fewer"
                    )
                };
                let literal = match count {
                    syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) => {
                        i.base10_parse::<u64>().ok()
                    }
                    _ => None,
                };
                match literal {
                    Some(n) if n < items_per_group => {
                        errors.push(syn::Error::new_spanned(count, why(&n.to_string())))
                    }
                    Some(_) => {}
                    // A constant the macro cannot evaluate: the compiler compares it.
                    None => {
                        let msg = why(&format!("`{}`", tidy(&count.to_token_stream().to_string())));
                        let items = items_per_group as usize;
                        self.asserts.extend(quote_spanned! {count.span()=>
                            const _: () = ::core::assert!((#count) >= #items, #msg);
                        });
                    }
                }
            }
        }
    }

    /// The Rust spelling of a type, for suggestions.
    fn rust_name(&self, ty: &Ty) -> String {
        match ty {
            Ty::Scalar(s) => s.rust().unwrap_or("?").to_string(),
            Ty::Vector(s, n) => {
                format!("[{}; {}]", s.rust().unwrap_or("?"), if *n == 3 { 4 } else { *n })
            }
            other => other.display(&self.cl.structs).to_string(),
        }
    }

    /// Does `rust` hold an OpenCL `cl` value? User types get layout assertions.
    fn match_type(&mut self, cl: &Ty, rust: &Type) -> Result<(), Mismatch> {
        let structs = &self.cl.structs;
        match cl {
            Ty::Scalar(s) => {
                let Some(want) = s.rust() else {
                    return Err(Mismatch::Unsupported(unsupported_scalar(*s)));
                };
                if path_ident(rust).as_deref() == Some(want) {
                    self.assert_primitive(rust, want);
                    Ok(())
                } else {
                    Err(Mismatch::Expected(format!("`{want}`")))
                }
            }
            Ty::Vector(s, n) => {
                let Some(want) = s.rust() else {
                    return Err(Mismatch::Unsupported(unsupported_scalar(*s)));
                };
                let lanes = if *n == 3 { 4 } else { u64::from(*n) };
                let expected = || {
                    let note =
                        if *n == 3 { ", as a 3-component vector takes the room of 4" } else { "" };
                    Mismatch::Expected(format!(
                        "`[{want}; {lanes}]` or a `#[repr(C)]` newtype of it{note}"
                    ))
                };
                match rust {
                    Type::Array(a) => {
                        let len = match &a.len {
                            syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) => {
                                i.base10_parse::<u64>().ok()
                            }
                            _ => None,
                        };
                        if path_ident(&a.elem).as_deref() == Some(want) && len == Some(lanes) {
                            self.assert_primitive(&a.elem, want);
                            Ok(())
                        } else {
                            Err(expected())
                        }
                    }
                    Type::Path(_) if !is_primitive(rust) => {
                        let size = s.size().unwrap_or(0) * lanes;
                        let desc = format!("`{}` ({size} bytes)", cl.display(structs));
                        self.assert_newtype(rust, size, &desc);
                        Ok(())
                    }
                    _ => Err(expected()),
                }
            }
            Ty::Struct(i) => {
                let def = &structs[*i];
                if !matches!(rust, Type::Path(_)) || is_primitive(rust) {
                    return Err(Mismatch::Expected(format!(
                        "a `#[repr(C)]` struct with the fields of `{}` ({})",
                        def.name,
                        self.source.at(def.line)
                    )));
                }
                let layout = def.layout.ok_or_else(|| {
                    Mismatch::Unsupported(format!(
                        "the layout of `{}` ({}) depends on the device (a field is `bool`, `size_t`, a pointer or unknown)",
                        def.name,
                        self.source.at(def.line)
                    ))
                })?;
                self.assert_struct(rust, *i, layout);
                Ok(())
            }
            Ty::Opaque(name) => Err(Mismatch::Unsupported(match self.cl.unread.get(name) {
                Some(why) => format!(
                    "`{name}` is declared at {} but its declaration could not be read: {why}",
                    self.source.at(why.line)
                ),
                None => format!(
                    "`{name}` is neither an OpenCL scalar or vector type nor defined in the source"
                ),
            })),
            Ty::Array(..) | Ty::Void => {
                Err(Mismatch::Unsupported(format!("`{}` cannot be passed", cl.display(structs))))
            }
        }
    }
}

fn mismatch(ty: &Type, what: &str, so: &str, m: Mismatch) -> syn::Error {
    let found = ty.to_token_stream().to_string();
    let msg = match m {
        Mismatch::Expected(want) => format!("{what}, so {so} {want}, found `{}`", tidy(&found)),
        Mismatch::Unsupported(why) => format!("{what}: {why}"),
    };
    syn::Error::new_spanned(ty, msg)
}

/// `[f32 ; 4]` → `[f32; 4]`: token spacing made readable.
fn tidy(tokens: &str) -> String {
    tokens.replace(" ;", ";").replace("& ", "&").replace(" ,", ",")
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

fn path_ident(ty: &Type) -> Option<String> {
    match ty {
        Type::Path(p) if p.qself.is_none() => p.path.get_ident().map(ToString::to_string),
        _ => None,
    }
}

fn is_primitive(ty: &Type) -> bool {
    path_ident(ty).is_some_and(|i| PRIMITIVES.contains(&i.as_str()))
}
