//! Checks a declaration against its kernel: reads the OpenCL source (includes resolved), finds
//! the kernel, and compares every parameter. Problems are collected, each on the span of the
//! Rust token at fault and saying what the kernel expects; what only the compiler can compare
//! (struct layouts) becomes `const` assertions for the expansion.

mod layout;
mod pattern;
mod source;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use proc_macro2::{Span, TokenStream};
use quote::{quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::Type;

use crate::clsig::{self, AddrSpace};
use crate::errors::Errors;
use crate::parse::{Func, LocalSize, Options, Param, Role};
use hetdsl_decl::balancer;
use hetdsl_decl::declcheck::{self, DeclParam, DeclRole, Fit, KernelSpot, RustTy, Spot};
use source::{load, Loaded};

/// What the expansion needs besides the declaration.
#[derive(Default)]
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
    /// Parameters whose Rust type stands for an OpenCL vector (a newtype), already proved plain
    /// data: their lanes go to the check of a source loaded at run time.
    pub newtypes: HashSet<String>,
    /// The primitive each scalar's type (or each array's element) is proved to be, by name:
    /// the check of a source loaded at run time reads a type alias as that primitive.
    pub primitives: HashMap<String, &'static str>,
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
            let msg = declcheck::unreadable_source(&source.at(e.line), &e);
            errors.push(syn::Error::new(file.span(), msg));
            return checked;
        }
    };
    let at = |line: usize| source.at(line);
    let found = declcheck::kernel_params(
        &cl,
        &checked.kernel_name,
        &checked.source_name,
        func.params.len(),
        &at,
    );
    let params = match found {
        Ok(params) => params,
        Err((spot, msg)) => {
            errors.push(match spot {
                KernelSpot::Name => {
                    let span =
                        options.name.as_ref().map_or_else(|| func.ident.span(), |n| n.span());
                    syn::Error::new(span, msg)
                }
                KernelSpot::Signature => syn::Error::new_spanned(&func.sig_tokens, msg),
            });
            return checked;
        }
    };
    if let (Some(k), Some((_, span))) = (cl.kernel(&checked.kernel_name), &options.local) {
        for msg in declcheck::ndrange_problems(k, &checked.local, &at) {
            errors.push(syn::Error::new(*span, msg));
        }
    }
    let items_per_group: u64 = checked.local.iter().product();
    let mut ctx = Ctx {
        cl: &cl,
        source: &source,
        asserts: TokenStream::new(),
        asserted: HashSet::new(),
        refused_merges: HashSet::new(),
        newtypes: HashSet::new(),
        primitives: HashMap::new(),
    };
    for (rust, p) in func.params.iter().zip(params) {
        ctx.param(rust, p, items_per_group, errors);
    }
    checked.asserts = ctx.asserts;
    checked.refused_merges = ctx.refused_merges;
    checked.newtypes = ctx.newtypes;
    checked.primitives = ctx.primitives;
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
        newtypes: HashSet::new(),
        primitives: HashMap::new(),
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
    /// Parameters whose type stands for an OpenCL vector.
    newtypes: HashSet<String>,
    /// The primitive each scalar or array element is proved to be.
    primitives: HashMap<String, &'static str>,
}

impl Ctx<'_> {
    /// One parameter through the shared check (`hetdsl_decl::declcheck`), each problem put on
    /// its token; then what only the macro checks: `__local` sizes and patterns against the
    /// work-group, and the layouts the compiler must compare.
    fn param(&mut self, rust: &Param, p: &clsig::Param, items_per_group: u64, errors: &mut Errors) {
        let (decl, elem) = decl_param(rust);
        let at = |line: usize| self.source.at(line);
        let out = declcheck::check_param(&decl, p, self.cl, &at);
        for problem in &out.problems {
            errors.push(self.problem_error(rust, elem, problem));
        }
        if let Some(fit) = &out.fit {
            self.prove(fit, elem);
            match fit {
                Fit::Newtype { .. } => {
                    self.newtypes.insert(rust.ident.to_string());
                }
                Fit::Primitive(want) | Fit::ArrayOf(want) => {
                    self.primitives.insert(rust.ident.to_string(), want);
                }
                Fit::Struct(_) => {}
            }
        }
        let merge_unknown =
            matches!(&rust.role, Role::Buffer { merge: Some(m), .. } if m.op.is_none());
        if out.merge_refused || merge_unknown {
            self.refused_merges.insert(rust.ident.to_string());
        }
        let space = p
            .pointer
            .filter(|_| p.unsupported.is_none())
            .filter(|_| p.value_space.is_none_or(|s| s == AddrSpace::Private))
            .map(|ptr| ptr.space);
        match (space, &rust.role) {
            (Some(AddrSpace::Local), Role::Local { size, .. }) => {
                self.check_local_size(&rust.ident, elem, size, items_per_group, errors)
            }
            (
                Some(AddrSpace::Global | AddrSpace::Constant),
                Role::Buffer { dir, pattern, attr, merge, .. },
            ) => pattern::check_pattern(
                pattern,
                *dir,
                merge.is_some(),
                items_per_group,
                attr,
                errors,
            ),
            _ => {}
        }
    }

    /// A problem of the shared check as an error on the token it names.
    fn problem_error(&self, rust: &Param, elem: &Type, problem: &declcheck::Problem) -> syn::Error {
        let msg = &problem.message;
        match (problem.spot, &rust.role) {
            (Spot::Attr, Role::Buffer { attr, .. } | Role::Local { attr, .. }) => {
                syn::Error::new_spanned(attr, msg)
            }
            (Spot::Merge, Role::Buffer { merge: Some(m), .. }) => {
                syn::Error::new(m.lit.span(), msg)
            }
            (Spot::Type, _) => syn::Error::new_spanned(&rust.ty, msg),
            (Spot::Elem, _) => syn::Error::new_spanned(elem, msg),
            _ => syn::Error::new(rust.ident.span(), msg),
        }
    }

    /// The `const` assertions a fit needs: a primitive's name not shadowed, a user type's layout.
    fn prove(&mut self, fit: &Fit, elem: &Type) {
        match fit {
            Fit::Primitive(want) => self.assert_primitive(elem, want),
            Fit::ArrayOf(want) => {
                if let Type::Array(a) = elem {
                    self.assert_primitive(&a.elem, want);
                }
            }
            Fit::Newtype { .. } => self.assert_newtype(elem, fit),
            Fit::Struct(i) => {
                if let Some(layout) = self.cl.structs[*i].layout {
                    self.assert_struct(elem, *i, layout);
                }
            }
        }
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
}

/// The declaration's parameter as the shared check reads it, and the Rust type its type
/// problems belong on (the value's type, or the elements').
pub(crate) fn decl_param(rust: &Param) -> (DeclParam, &Type) {
    let (role, elem) = match &rust.role {
        Role::Value => (DeclRole::Value, &rust.ty),
        Role::Buffer { dir, elem, merge, .. } => {
            let merge = merge.as_ref().and_then(|m| m.op.map(|op| (m.lit.value(), op.bitwise())));
            (DeclRole::Buffer { dir: dir.decl(), merge }, elem)
        }
        Role::Local { elem, .. } => (DeclRole::Local, elem),
    };
    let decl = DeclParam {
        name: rust.ident.to_string(),
        role,
        ty: rust_ty(elem),
        ty_text: tidy(&elem.to_token_stream().to_string()),
        full_text: tidy(&rust.ty.to_token_stream().to_string()),
    };
    (decl, elem)
}

/// A Rust type as far as its spelling tells.
fn rust_ty(ty: &Type) -> RustTy {
    match ty {
        Type::Path(_) => RustTy::Path(path_ident(ty)),
        Type::Array(a) => {
            let len = match &a.len {
                syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) => {
                    i.base10_parse::<u64>().ok()
                }
                _ => None,
            };
            RustTy::Array { elem: path_ident(&a.elem), len }
        }
        _ => RustTy::Other,
    }
}

/// The name of a single-name path, or of a primitive through its module
/// (`std::primitive::f32`, `::core::primitive::u8`), which is the primitive itself: its
/// assertion (`assert_primitive`) compares it with `::core::primitive::f32`.
fn path_ident(ty: &Type) -> Option<String> {
    let Type::Path(p) = ty else { return None };
    if p.qself.is_some() {
        return None;
    }
    if let Some(id) = p.path.get_ident() {
        return Some(id.to_string());
    }
    let segs: Vec<String> = p
        .path
        .segments
        .iter()
        .filter(|s| s.arguments.is_none())
        .map(|s| s.ident.to_string())
        .collect();
    match segs.as_slice() {
        [root, module, name]
            if p.path.segments.len() == 3
                && matches!(root.as_str(), "std" | "core")
                && module == "primitive" =>
        {
            Some(name.clone())
        }
        _ => None,
    }
}

/// `[f32 ; 4]` → `[f32; 4]`: token spacing made readable.
fn tidy(tokens: &str) -> String {
    let tidy =
        tokens.replace(" ;", ";").replace("& ", "&").replace(" ,", ",").replace(" :: ", "::");
    tidy.strip_prefix(":: ").map_or_else(|| tidy.clone(), |rest| format!("::{rest}"))
}
