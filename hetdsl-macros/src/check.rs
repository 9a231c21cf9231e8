//! Checks a declaration against its kernel: reads the OpenCL source (includes resolved), finds
//! the kernel, and compares every parameter. Problems are collected, each on the span of the
//! Rust token at fault and saying what the kernel expects; what only the compiler can compare
//! (struct layouts) becomes `const` assertions for the expansion.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use proc_macro2::{Span, TokenStream};
use quote::{quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::Type;

use crate::clsig::{self, AddrSpace, Scalar, Ty};
use crate::errors::Errors;
use crate::parse::{Direction, Func, LocalSize, MergeOp, Options, Param, Pattern, Role};
use hetdsl_decl::argcheck::param_phrase;
use hetdsl_decl::balancer;
use hetdsl_decl::flatten::{flatten_named, Flattened};

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
}

pub fn check(options: &Options, func: &Func, errors: &mut Errors) -> Checked {
    let at = options.span.unwrap_or_else(|| func.ident.span());
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
    let mut checked = Checked {
        kernel_name,
        local,
        source_name: String::new(),
        source_text: String::new(),
        files: Vec::new(),
        asserts: TokenStream::new(),
        balancer: options.balancer.as_ref().map(|b| b.value()),
        build_options: options.build_options(),
        refused_merges: HashSet::new(),
    };
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

/// A flattened source and its line map.
struct Loaded {
    flat: Flattened,
    /// The flattened lines joined, as `clsig` reads them.
    text: String,
    manifest: PathBuf,
}

impl Loaded {
    /// `file:line` of a 0-based flattened line, relative to the manifest directory.
    fn at(&self, line: usize) -> String {
        match self.flat.lines.get(line) {
            Some((_, file, n)) => format!("{}:{n}", relative(file, &self.manifest)),
            None => "end of file".to_string(),
        }
    }
}

/// The directory of the `Cargo.toml` of the crate that holds the declaration: the nearest one
/// above the invoking source file, which is `CARGO_MANIFEST_DIR` for an ordinary crate and the
/// tested crate's for trybuild's generated one (whose manifest lies under `target/`).
fn manifest_dir() -> Option<PathBuf> {
    let cwd = std::env::current_dir().ok()?;
    let from_span = proc_macro::Span::call_site().local_file().and_then(|file| {
        let file = cwd.join(file);
        file.ancestors().skip(1).find(|d| d.join("Cargo.toml").is_file()).map(Path::to_path_buf)
    });
    from_span.or_else(|| std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from))
}

fn relative(path: &Path, base: &Path) -> String {
    path.strip_prefix(base).unwrap_or(path).display().to_string()
}

fn load(file: &syn::LitStr, include: &[syn::LitStr], errors: &mut Errors) -> Option<Loaded> {
    let Some(manifest) = manifest_dir() else {
        errors
            .push(syn::Error::new(file.span(), "CARGO_MANIFEST_DIR is not set: build with cargo"));
        return None;
    };
    let path = manifest.join(file.value());
    if !path.is_file() {
        let msg = format!(
            "kernel source `{}` not found (the path is relative to the directory of the crate's Cargo.toml)",
            file.value()
        );
        errors.push(syn::Error::new(file.span(), msg));
        return None;
    }
    let dirs: Vec<PathBuf> = include.iter().map(|d| manifest.join(d.value())).collect();
    for (dir, lit) in dirs.iter().zip(include) {
        if !dir.is_dir() {
            errors.push(syn::Error::new(
                lit.span(),
                format!("include directory `{}` not found", lit.value()),
            ));
            return None;
        }
    }
    match flatten_named(&path, &dirs, Some(&manifest)) {
        Ok(flat) => {
            let text = flat.lines.iter().map(|(l, _, _)| l.as_str()).collect::<Vec<_>>().join("\n");
            Some(Loaded { flat, text, manifest })
        }
        Err(e) => {
            // ocl-include appends "\nin file \"<absolute path>\" at line <its count>" for each
            // including file: keep the files, relative to the crate.
            let base = format!("{}/", manifest.display());
            let text = e.to_string().replace(&base, "");
            let mut parts = text.split("\nin file ");
            let mut why = parts.next().unwrap_or_default().to_string();
            for including in parts {
                let file = including.split(" at line ").next().unwrap_or(including);
                why += &format!(", included from {}", file.trim_matches('"'));
            }
            errors.push(syn::Error::new(
                file.span(),
                format!("cannot read `{}`: {why}", file.value()),
            ));
            None
        }
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
            (Some(ptr), role) => match (ptr.space, role) {
                (AddrSpace::Private, _) => {
                    let msg = format!("{what}: a pointer without `__global`, `__constant` or `__local` cannot be a kernel argument");
                    errors.push(syn::Error::new(name.span(), msg));
                }
                (AddrSpace::Local, Role::Local { elem, size, .. }) => {
                    if let Err(m) = self.match_type(&p.ty, elem) {
                        errors.push(mismatch(elem, &what, "the elements must be", m));
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
                        .is_some_and(|(op, m)| self.check_merge(op, &m.lit, p, &what, errors));
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
                        errors.push(mismatch(elem, &what, "the elements must be", m));
                    }
                    check_pattern(*pattern, *dir, merge.is_some(), items_per_group, attr, errors);
                }
                (space, role) => {
                    let not_local = if matches!(role, Role::Local { .. }) {
                        ", not a `__local` one"
                    } else {
                        ""
                    };
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
            },
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

    /// The name `want` (`u32`, `f32`, …) may be shadowed in the user's scope (`type u32 = char;`,
    /// a struct named `f32`): assert that it names the primitive.
    fn assert_primitive(&mut self, rust: &Type, want: &str) {
        if !self.asserted.insert(format!("{} as primitive", rust.to_token_stream())) {
            return;
        }
        let primitive = syn::Ident::new(want, rust.span());
        self.asserts.extend(quote_spanned! {rust.span()=>
            const _: fn() = ::hetdsl::__private::assert_primitive::<#rust, ::core::primitive::#primitive>;
        });
    }

    fn assert_newtype(&mut self, rust: &Type, size: u64, desc: &str) {
        // Keyed by the OpenCL type too: one Rust type may stand for two OpenCL ones.
        if !self.asserted.insert(format!("{} as {desc}", rust.to_token_stream())) {
            return;
        }
        let span = rust.span();
        let size = size as usize;
        let msg = format!("the kernel's {desc} and this Rust type differ in size");
        self.asserts.extend(quote_spanned! {span=>
            const _: () = ::core::assert!(::core::mem::size_of::<#rust>() == #size, #msg);
            // Plain data as a whole: `#[derive(Pod)]` checks every field (not only `.0`) and that
            // the fields cover every byte, so whatever the kernel writes is a valid value.
            const _: fn() = ::hetdsl::__private::assert_pod_type::<#rust>;
        });
    }

    /// `const` assertions that `rust` has the layout of OpenCL struct `index`, spanned on the
    /// Rust type so that a failure points at the declaration.
    fn assert_struct(&mut self, rust: &Type, index: usize, layout: clsig::Layout) {
        // Keyed by the OpenCL struct too: a Rust type given for two different OpenCL structs is
        // checked against both.
        if !self.asserted.insert(format!("{} as struct {index}", rust.to_token_stream())) {
            return;
        }
        let span = rust.span();
        let def = &self.cl.structs[index];
        let at = self.source.at(def.line);
        let name = &def.name;
        let (size, align) = (layout.size as usize, layout.align as usize);
        let size_msg = format!(
            "`{name}` is {size} bytes in OpenCL ({at}); the Rust type must be too: #[repr(C)], the same \
             fields in the same order"
        );
        let align_msg = format!(
            "`{name}` is aligned to {align} bytes in OpenCL ({at}); give the Rust type `#[repr(C, align({align}))]` \
             or fields so aligned"
        );
        // One `const` per assertion, so that every failing one is reported.
        let mut checks = quote_spanned! {span=>
            const _: () = ::core::assert!(::core::mem::size_of::<#rust>() == #size, #size_msg);
            const _: () = ::core::assert!(::core::mem::align_of::<#rust>() == #align, #align_msg);
        };
        for field in &def.fields {
            let (Some(offset), Some(l)) = (field.offset, field.ty.layout(&self.cl.structs)) else {
                continue;
            };
            let Some(ident) = field_ident(&field.name, span) else {
                let msg = format!(
                    "field `{}` of `{name}` ({}) has a name no Rust field can have; rename it in OpenCL",
                    field.name,
                    self.source.at(field.line)
                );
                checks.extend(quote_spanned! {span=> ::core::compile_error!(#msg); });
                continue;
            };
            let (offset, fsize) = (offset as usize, l.size as usize);
            let fat = self.source.at(field.line);
            let ty = field.ty.display(&self.cl.structs);
            let offset_msg = format!(
                "field `{}` of `{name}` is at byte {offset} in OpenCL ({fat}); the Rust struct must declare the \
                 same fields in the same order, #[repr(C)]",
                field.name
            );
            let size_msg = format!(
                "field `{}` of `{name}` is `{ty}`, {fsize} bytes, in OpenCL ({fat})",
                field.name
            );
            checks.extend(quote_spanned! {span=>
                const _: () = ::core::assert!(::core::mem::offset_of!(#rust, #ident) == #offset, #offset_msg);
                const _: () = ::core::assert!(
                    ::hetdsl::__private::size_of_field::<#rust, _>(|v| &v.#ident) == #fsize,
                    #size_msg
                );
            });
        }
        self.asserts.extend(quote_spanned! {span=>
            #checks
            // Plain data as a whole: `#[derive(Pod)]` proves every field `Pod` and no padding, so
            // the bytes the kernel writes, including those in the OpenCL struct's padding, all
            // land in fields whose every bit pattern is valid.
            const _: fn() = ::hetdsl::__private::assert_pod_type::<#rust>;
        });
    }
}

fn check_pattern(
    pattern: Pattern,
    dir: Direction,
    merged: bool,
    items_per_group: u64,
    attr: &syn::Attribute,
    errors: &mut Errors,
) {
    match pattern {
        Pattern::Whole if dir.writes() && !merged => errors.push(syn::Error::new_spanned(
            attr,
            "`whole` is for inputs every device reads in full; an output is split by a pattern `a:b` so that \
             each device writes its own part, or written whole by every device and reduced with \
             `merge = \"sum\"` (or \"max\", \"min\", \"or\", \"and\")",
        )),
        Pattern::Ratio(a, b) if (u128::from(a) * u128::from(items_per_group)) % u128::from(b) != 0 => {
            errors.push(syn::Error::new_spanned(
                attr,
                format!(
                    "pattern {a}:{b} does not fit the work-group size {items_per_group}: a work-group would own \
                     {a}·{items_per_group}/{b} elements; {a} × the work-group size must be a multiple of {b}"
                ),
            ))
        }
        _ => {}
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

/// A field name as a Rust identifier (`r#type` for keywords); `None` for the names no raw
/// identifier can spell (`self`, `super`, `crate`, `Self`, `_`).
fn field_ident(name: &str, span: Span) -> Option<syn::Ident> {
    if let Ok(mut id) = syn::parse_str::<syn::Ident>(name) {
        id.set_span(span);
        return Some(id);
    }
    let raw = format!("r#{name}");
    syn::parse_str::<syn::Ident>(&raw).ok().map(|_| syn::Ident::new_raw(name, span))
}
