//! The macro input: options (`file = "…", local = 64, …`) and a Rust function signature whose
//! parameters carry their role (`#[input(1:1)]`, `#[output(4:1)]`, `#[inout(whole)]`, `#[local]`).
//! Only the Rust side is read here; what the kernel expects is checked in `check`.

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{
    Attribute, Expr, FnArg, ForeignItemFn, Ident, LitInt, LitStr, Pat, Token, Type, Visibility,
};

use crate::errors::Errors;

/// `kernel! { #[kernel(options)] vis struct Name { fn kernel(params); } }`
pub struct KernelInput {
    pub attrs: Vec<Attribute>,
    pub options: Options,
    pub vis: Visibility,
    pub struct_name: Ident,
    pub func: Func,
}

/// `#[coexec(options)] vis fn kernel(params);`
pub struct CoexecInput {
    pub options: Options,
    pub attrs: Vec<Attribute>,
    pub vis: Visibility,
    pub func: Func,
}

/// The declared kernel function.
pub struct Func {
    pub ident: Ident,
    pub params: Vec<Param>,
    /// The whole signature, for spans.
    pub sig_tokens: TokenStream,
}

/// One Rust parameter and how the kernel receives it.
pub struct Param {
    pub ident: Ident,
    pub ty: Type,
    pub role: Role,
}

/// Partition pattern of a buffer, as declared (mirrors `hetdsl::Pattern`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    Ratio(u64, u64),
    Whole,
}

/// The reductions of `merge = "…"` (mirror `hetdsl::Merge`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MergeOp {
    Sum,
    Max,
    Min,
    Or,
    And,
}

pub const MERGE_NAMES: &str = "\"sum\", \"max\", \"min\", \"or\", \"and\"";

impl MergeOp {
    fn from_name(name: &str) -> Option<MergeOp> {
        Some(match name {
            "sum" => MergeOp::Sum,
            "max" => MergeOp::Max,
            "min" => MergeOp::Min,
            "or" => MergeOp::Or,
            "and" => MergeOp::And,
            _ => return None,
        })
    }
    /// The variant of `hetdsl::Merge`.
    pub fn variant(self) -> &'static str {
        match self {
            MergeOp::Sum => "Sum",
            MergeOp::Max => "Max",
            MergeOp::Min => "Min",
            MergeOp::Or => "Or",
            MergeOp::And => "And",
        }
    }
    /// Bitwise: integers only.
    pub fn bitwise(self) -> bool {
        matches!(self, MergeOp::Or | MergeOp::And)
    }
}

/// `merge = "sum"` as written; `op` is `None` when it was refused here (an error is reported
/// and the buffer expands as a plain one).
#[derive(Clone)]
pub struct Merge {
    pub op: Option<MergeOp>,
    pub lit: LitStr,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    In,
    Out,
    InOut,
}

impl Direction {
    pub fn attr_name(self) -> &'static str {
        match self {
            Direction::In => "input",
            Direction::Out => "output",
            Direction::InOut => "inout",
        }
    }
    pub fn writes(self) -> bool {
        self != Direction::In
    }
}

pub enum Role {
    /// Passed by copy.
    Value,
    /// A host slice split by `pattern`; `elem` is the slice's element type. `merge`: an output
    /// every device writes in full (`whole`), combined element-wise by a reduction.
    Buffer { dir: Direction, pattern: Pattern, elem: Type, attr: Attribute, merge: Option<Merge> },
    /// `#[local] s: [T; N]` (N elements of T per work-group) or `#[local(per_item = k)] s: [T]`.
    Local { elem: Type, size: LocalSize, attr: Attribute },
}

/// How many elements a `__local` buffer has per work-group.
pub enum LocalSize {
    /// `[T; N]`: N elements; `allow_smaller` (`#[local(allow_smaller)]`) accepts N below the
    /// work-group size, for kernels that index it by less than the local id.
    Fixed { count: Expr, allow_smaller: bool },
    /// `#[local(per_item = k)] s: [T]`: k elements per work-item of the group.
    PerItem(u64),
}

/// The declaration options, each with the span of its key for messages.
#[derive(Default)]
pub struct Options {
    pub file: Option<LitStr>,
    pub name: Option<LitStr>,
    pub local: Option<(Vec<u64>, Span)>,
    pub balancer: Option<LitStr>,
    pub include: Vec<LitStr>,
    /// `defines = ["BLOCK=16", "USE_DOUBLE"]`: each becomes a `-D` build option.
    pub defines: Vec<LitStr>,
    /// `options = "-cl-mad-enable"`: more build options, after the defines.
    pub options: Option<LitStr>,
    /// Where to point "missing option" errors.
    pub span: Option<Span>,
}

/// Parameter names the generated functions use themselves.
const RESERVED: [&str; 3] = ["global", "rt", "self"];

const OPTION_KEYS: &str = "`file`, `local`, `name`, `balancer`, `include`, `defines`, `options`";

impl Parse for KernelInput {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut attrs = input.call(Attribute::parse_outer)?;
        let vis: Visibility = input.parse()?;
        input.parse::<Token![struct]>()?;
        let struct_name: Ident = input.parse()?;
        let body;
        syn::braced!(body in input);
        let item: ForeignItemFn = body.parse()?;
        if !body.is_empty() {
            return Err(body.error(
                "one kernel per `kernel!` struct: declare another struct for the next kernel",
            ));
        }
        let mut errors = Errors::default();
        let options_at = attrs.iter().position(|a| a.path().is_ident("kernel"));
        let options = match options_at {
            Some(i) => {
                let attr = attrs.remove(i);
                let span = attr.span();
                let mut o = attr.parse_args_with(Options::parse).unwrap_or_else(|e| {
                    errors.push(e);
                    Options::default()
                });
                o.span = Some(span);
                if let Some(again) = attrs.iter().find(|a| a.path().is_ident("kernel")) {
                    errors.push(syn::Error::new_spanned(
                        again,
                        "duplicate `#[kernel(..)]`: put every option in one",
                    ));
                }
                o
            }
            None => {
                errors.push(syn::Error::new(
                    struct_name.span(),
                    "missing `#[kernel(file = \"…\", local = …)]` above the struct: it names the OpenCL \
                     source and the work-group size",
                ));
                Options::default()
            }
        };
        let func = Func::from_item(item, &mut errors);
        errors.finish()?;
        Ok(KernelInput { attrs, options, vis, struct_name, func })
    }
}

impl CoexecInput {
    pub fn parse(args: TokenStream, item: TokenStream) -> syn::Result<Self> {
        let mut errors = Errors::default();
        let span = args.span();
        let mut options = syn::parse::Parser::parse2(Options::parse, args).unwrap_or_else(|e| {
            errors.push(e);
            Options::default()
        });
        options.span = Some(span);
        let item: ForeignItemFn = syn::parse2(item).map_err(|e| {
            syn::Error::new(
                e.span(),
                format!("{e}; `#[coexec]` goes on a function signature without a body: `fn saxpy(a: f32, …);`"),
            )
        })?;
        let attrs = item.attrs.clone();
        let vis = item.vis.clone();
        let func = Func::from_item(item, &mut errors);
        errors.finish()?;
        Ok(CoexecInput { options, attrs, vis, func })
    }
}

impl Options {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut o = Options::default();
        let mut errors = Errors::default();
        let mut seen: Vec<String> = Vec::new();
        while !input.is_empty() {
            let key: Ident = input.call(syn::ext::IdentExt::parse_any)?;
            input.parse::<Token![=]>()?;
            let name = key.to_string();
            if seen.contains(&name) {
                errors.push(syn::Error::new(key.span(), format!("duplicate option `{name}`")));
            }
            seen.push(name.clone());
            match name.as_str() {
                "file" => o.file = Some(input.parse()?),
                "name" => o.name = Some(input.parse()?),
                "balancer" => o.balancer = Some(input.parse()?),
                "include" => o.include.extend(parse_one_or_list::<LitStr>(input)?),
                "defines" => {
                    for lit in parse_one_or_list::<LitStr>(input)? {
                        if let Err(why) = check_define(&lit.value()) {
                            errors.push(syn::Error::new(lit.span(), why));
                        }
                        o.defines.push(lit);
                    }
                }
                "options" => {
                    let lit: LitStr = input.parse()?;
                    if let Err(why) = hetdsl_decl::clsig::defines_from_options(&lit.value()) {
                        errors.push(syn::Error::new(lit.span(), why));
                    }
                    o.options = Some(lit);
                }
                "local" => {
                    let span_start = input.span();
                    let sizes = parse_one_or_list::<LitInt>(input)?;
                    let mut dims = Vec::new();
                    for lit in &sizes {
                        match lit.base10_parse::<u64>() {
                            Ok(0) | Err(_) => errors.push(syn::Error::new(
                                lit.span(),
                                "a work-group size is a positive integer",
                            )),
                            Ok(n) => dims.push(n),
                        }
                    }
                    if !(1..=2).contains(&sizes.len()) {
                        errors.push(syn::Error::new(
                            span_start,
                            "`local` is `N` (a 1-D NDRange) or `[X, Y]` (2-D)",
                        ));
                    }
                    o.local = Some((dims, key.span()));
                }
                _ => {
                    // Keep going so the rest of the options are still checked.
                    let _: Expr = input.parse()?;
                    errors.push(syn::Error::new(
                        key.span(),
                        format!("unknown option `{name}`; the options are {OPTION_KEYS}"),
                    ));
                }
            }
            if !input.is_empty() {
                input.parse::<Token![,]>()?;
            }
        }
        errors.finish()?;
        Ok(o)
    }
}

/// One entry of `defines`: `NAME` or `NAME=VALUE`, with no space (it becomes one `-D` word).
fn check_define(def: &str) -> Result<(), String> {
    let (name, _) = def.split_once('=').unwrap_or((def, ""));
    if !hetdsl_decl::clsig::is_identifier(name) {
        return Err(format!(
            "`{def}` is not a define: write `NAME` or `NAME=VALUE`, NAME a C identifier"
        ));
    }
    if def.chars().any(char::is_whitespace) {
        return Err(format!("`{def}`: a define cannot hold spaces (write `NAME=VALUE`)"));
    }
    Ok(())
}

impl Options {
    /// The build options: each define as `-D NAME[=VALUE]`, then `options`.
    pub fn build_options(&self) -> String {
        let mut words: Vec<String> =
            self.defines.iter().map(|d| format!("-D {}", d.value())).collect();
        words.extend(self.options.as_ref().map(LitStr::value));
        words.join(" ")
    }
}

/// `x` or `[x, y, …]`.
fn parse_one_or_list<T: Parse>(input: ParseStream) -> syn::Result<Vec<T>> {
    if input.peek(syn::token::Bracket) {
        let inner;
        syn::bracketed!(inner in input);
        Ok(Punctuated::<T, Token![,]>::parse_terminated(&inner)?.into_iter().collect())
    } else {
        Ok(vec![input.parse()?])
    }
}

impl Func {
    fn from_item(item: ForeignItemFn, errors: &mut Errors) -> Func {
        let sig = &item.sig;
        let sig_tokens = sig.to_token_stream();
        if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
            errors.push(syn::Error::new_spanned(
                &sig.generics,
                "a kernel declaration takes no generics",
            ));
        }
        if let syn::ReturnType::Type(..) = sig.output {
            errors.push(syn::Error::new_spanned(
                &sig.output,
                "a kernel returns nothing: the generated function returns the run's `hetdsl::Report`",
            ));
        }
        if sig.asyncness.is_some()
            || sig.constness.is_some()
            || sig.abi.is_some()
            || sig.variadic.is_some()
        {
            errors.push(syn::Error::new_spanned(
                &sig_tokens,
                "a kernel declaration is a plain `fn name(params);`",
            ));
        }
        let mut params = Vec::new();
        for arg in &sig.inputs {
            match arg {
                FnArg::Receiver(r) => {
                    errors.push(syn::Error::new_spanned(r, "a kernel declaration takes no `self`"))
                }
                FnArg::Typed(pt) => {
                    let ident = match &*pt.pat {
                        Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => {
                            p.ident.clone()
                        }
                        other => {
                            errors.push(syn::Error::new_spanned(
                                other,
                                "a parameter is a plain name",
                            ));
                            continue;
                        }
                    };
                    if RESERVED.contains(&ident.to_string().as_str()) {
                        errors.push(syn::Error::new(
                            ident.span(),
                            format!("`{ident}` is a parameter of the generated functions; rename this one"),
                        ));
                    }
                    if let Some(role) = role(&pt.attrs, &pt.ty, errors) {
                        params.push(Param { ident, ty: (*pt.ty).clone(), role });
                    }
                }
            }
        }
        Func { ident: sig.ident.clone(), params, sig_tokens }
    }
}

/// The parameter's role from its attribute, checked against the shape of its Rust type.
fn role(attrs: &[Attribute], ty: &Type, errors: &mut Errors) -> Option<Role> {
    let mut found: Option<Role> = None;
    // A role attribute was written, even if it was wrong (then no "missing attribute" error).
    let mut attempted = false;
    for attr in attrs {
        let path = attr.path();
        let dir = if path.is_ident("input") {
            Some(Direction::In)
        } else if path.is_ident("output") {
            Some(Direction::Out)
        } else if path.is_ident("inout") {
            Some(Direction::InOut)
        } else {
            None
        };
        if dir.is_some() || path.is_ident("local") {
            if attempted {
                errors.push(syn::Error::new_spanned(attr, "one role per parameter"));
                continue;
            }
            attempted = true;
        }
        if let Some(dir) = dir {
            let (pattern, merge) = match attr.parse_args_with(parse_pattern_and_merge) {
                Ok(p) => p,
                Err(e) => {
                    errors.push(e);
                    continue;
                }
            };
            // A refused merge keeps no reduction, so that the expansion stays the plain buffer's.
            let merge = merge.map(|(key, mut m)| {
                if m.op.is_none() {
                    errors.push(syn::Error::new(
                        m.lit.span(),
                        format!("unknown merge `{}`; the merges are {MERGE_NAMES}", m.lit.value()),
                    ));
                } else if !dir.writes() {
                    errors.push(syn::Error::new(
                        key.span(),
                        "`merge` combines what several devices wrote: it is for #[output] and #[inout] \
                         buffers, not inputs",
                    ));
                    m.op = None;
                } else if pattern != Pattern::Whole {
                    errors.push(syn::Error::new(
                        key.span(),
                        "`merge` needs the pattern `whole`: every device writes the whole buffer and \
                         the copies are reduced element by element; a split buffer (`a:b`) has one \
                         writer per element and needs no merge",
                    ));
                    m.op = None;
                }
                m
            });
            let Some(elem) = slice_elem(ty, dir.writes()) else {
                let want = if dir.writes() { "&mut [T]" } else { "&[T]" };
                errors.push(syn::Error::new_spanned(
                    ty,
                    format!("an #[{}] buffer is a slice `{want}`", dir.attr_name()),
                ));
                continue;
            };
            found = Some(Role::Buffer { dir, pattern, elem, attr: attr.clone(), merge });
        } else if path.is_ident("local") {
            let opts = match &attr.meta {
                syn::Meta::Path(_) => LocalOpts::default(),
                _ => match attr.parse_args_with(parse_local_opts) {
                    Ok(o) => o,
                    Err(e) => {
                        errors.push(e);
                        continue;
                    }
                },
            };
            let attr = attr.clone();
            match (ty, opts.per_item) {
                (Type::Array(a), None) => {
                    let size = LocalSize::Fixed { count: a.len.clone(), allow_smaller: opts.allow_smaller };
                    found = Some(Role::Local { elem: (*a.elem).clone(), size, attr })
                }
                (Type::Slice(s), Some((k, _))) => {
                    found = Some(Role::Local { elem: (*s.elem).clone(), size: LocalSize::PerItem(k), attr })
                }
                (Type::Array(a), Some((_, at))) => errors.push(syn::Error::new(
                    at,
                    format!(
                        "`per_item` sizes the buffer by the work-group size: declare it as a slice, \
                         `[{}]`, not an array",
                        a.elem.to_token_stream()
                    ),
                )),
                (Type::Slice(s), None) => errors.push(syn::Error::new_spanned(
                    ty,
                    format!(
                        "a `__local` slice needs its size: `#[local(per_item = k)] name: [{0}]` for k \
                         elements per work-item, or `#[local] name: [{0}; N]` for N per work-group",
                        s.elem.to_token_stream()
                    ),
                )),
                _ => errors.push(syn::Error::new_spanned(
                    ty,
                    "a `__local` buffer lives on the device, one per work-group, and cannot be given as a \
                     reference: declare it `#[local] name: [T; N]` for N elements of T per work-group, or \
                     `#[local(per_item = k)] name: [T]` for k per work-item",
                )),
            }
        } else {
            errors.push(syn::Error::new_spanned(
                attr,
                "unknown parameter attribute; buffers take `#[input(a:b)]`, `#[output(a:b)]` or \
                 `#[inout(a:b)]` (a:b a pattern such as `1:1`, or `whole`), __local buffers `#[local]`",
            ));
        }
    }
    if found.is_none() {
        if attempted {
            return None;
        }
        if let Type::Reference(_) = ty {
            errors.push(syn::Error::new_spanned(
                ty,
                "a buffer needs its direction and partition pattern, e.g. `#[input(1:1)] x: &[f32]` or \
                 `#[output(1:1)] y: &mut [f32]`",
            ));
            return None;
        }
        return Some(Role::Value);
    }
    found
}

/// The options of `#[local(..)]`.
#[derive(Default)]
struct LocalOpts {
    /// `per_item = k`, with the span of `k`'s key.
    per_item: Option<(u64, Span)>,
    allow_smaller: bool,
}

/// `per_item = k` or `allow_smaller`.
fn parse_local_opts(input: ParseStream) -> syn::Result<LocalOpts> {
    let mut o = LocalOpts::default();
    let mut errors = Errors::default();
    while !input.is_empty() {
        let key: Ident = input.parse()?;
        if key == "per_item" {
            input.parse::<Token![=]>()?;
            let k: LitInt = input.parse()?;
            match k.base10_parse::<u64>() {
                Ok(n) if n > 0 => o.per_item = Some((n, key.span())),
                _ => errors.push(syn::Error::new(k.span(), "`per_item` is a positive integer")),
            }
        } else if key == "allow_smaller" {
            o.allow_smaller = true;
        } else {
            // Skip a value so that the rest is still read.
            if input.parse::<Option<Token![=]>>()?.is_some() {
                let _: Expr = input.parse()?;
            }
            errors.push(syn::Error::new(
                key.span(),
                "`#[local]` takes `per_item = k` (k elements per work-item, on a slice `[T]`) or \
                 `allow_smaller` (a fixed `[T; N]` with N below the work-group size)",
            ));
        }
        if !input.is_empty() {
            input.parse::<Token![,]>()?;
        }
    }
    if let (Some((_, at)), true) = (o.per_item, o.allow_smaller) {
        errors.push(syn::Error::new(
            at,
            "`allow_smaller` is for fixed `[T; N]` buffers; a `per_item` one grows with the work-group",
        ));
    }
    errors.finish()?;
    Ok(o)
}

/// A pattern, then optionally `, merge = "op"`: the `merge` key and the reduction.
type PatternAndMerge = (Pattern, Option<(Ident, Merge)>);

fn parse_pattern_and_merge(input: ParseStream) -> syn::Result<PatternAndMerge> {
    let pattern = parse_pattern(input)?;
    if input.is_empty() {
        return Ok((pattern, None));
    }
    input.parse::<Token![,]>()?;
    let key: Ident = input.parse()?;
    if key != "merge" {
        return Err(syn::Error::new(
            key.span(),
            format!("unknown buffer option `{key}`; after the pattern comes only `merge = \"op\"`"),
        ));
    }
    input.parse::<Token![=]>()?;
    let lit: LitStr = input.parse()?;
    if !input.is_empty() {
        input.parse::<Token![,]>()?;
    }
    if !input.is_empty() {
        return Err(input.error("nothing follows `merge = \"op\"`"));
    }
    let op = MergeOp::from_name(&lit.value());
    Ok((pattern, Some((key, Merge { op, lit }))))
}

/// `a:b` or `whole`.
fn parse_pattern(input: ParseStream) -> syn::Result<Pattern> {
    if input.peek(Ident) {
        let id: Ident = input.parse()?;
        if id == "whole" {
            return Ok(Pattern::Whole);
        }
        return Err(syn::Error::new(
            id.span(),
            "a pattern is `a:b` (such as `1:1`, `1:255`, `4:1`) or `whole`",
        ));
    }
    let a: LitInt = input.parse()?;
    input.parse::<Token![:]>()?;
    let b: LitInt = input.parse()?;
    let (x, y) = (a.base10_parse::<u64>()?, b.base10_parse::<u64>()?);
    if x == 0 || y == 0 {
        return Err(syn::Error::new(a.span(), "both sides of a pattern `a:b` are positive"));
    }
    Ok(Pattern::Ratio(x, y))
}

/// `T` of `&[T]` (or of `&mut [T]` when `mutable`).
fn slice_elem(ty: &Type, mutable: bool) -> Option<Type> {
    match ty {
        Type::Reference(r) if r.mutability.is_some() == mutable => match &*r.elem {
            Type::Slice(s) => Some((*s.elem).clone()),
            _ => None,
        },
        _ => None,
    }
}
