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
use crate::role::role;

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
    /// Lint attributes written on it (`#[allow(non_snake_case)]`), kept on the generated
    /// functions' parameter.
    pub lints: Vec<Attribute>,
}

/// Partition pattern of a buffer, as declared (mirrors `hetdsl::Pattern`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pattern {
    Ratio(Side, Side),
    Whole,
    /// `1:1, halo = r`: a stencil's input, read `r` elements (1-D), rows (2-D) or planes (3-D)
    /// past each side of a package.
    Halo(u64),
}

/// One side of `a:b`: a positive literal, known now, or a name whose value is known only when
/// the kernel is called (a `const` in scope, or an integer scalar parameter of the kernel).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Side {
    Lit(u64),
    Name(Ident),
}

impl Pattern {
    /// `Some((a, b))` when both sides are literals.
    pub fn literal(&self) -> Option<(u64, u64)> {
        match self {
            Pattern::Ratio(Side::Lit(a), Side::Lit(b)) => Some((*a, *b)),
            // Its own elements are 1:1; the halo only widens what a device reads.
            Pattern::Halo(_) => Some((1, 1)),
            _ => None,
        }
    }
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
    pub fn from_name(name: &str) -> Option<MergeOp> {
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
    /// The same direction in the shared check's words.
    pub fn decl(self) -> hetdsl_decl::declcheck::Dir {
        use hetdsl_decl::declcheck::Dir;
        match self {
            Direction::In => Dir::In,
            Direction::Out => Dir::Out,
            Direction::InOut => Dir::InOut,
        }
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
        let mut errors = Errors::default();
        if input.peek(Token![<]) {
            let generics: syn::Generics = input.parse()?;
            errors.push(syn::Error::new_spanned(
                &generics,
                "a `kernel!` struct takes no generics: it holds the program built from one \
                 kernel, whose types the declaration names",
            ));
        }
        let body;
        syn::braced!(body in input);
        let item: ForeignItemFn = body.parse()?;
        if !body.is_empty() {
            return Err(body.error(
                "one kernel per `kernel!` struct: declare another struct for the next kernel",
            ));
        }
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
                    if !(1..=3).contains(&sizes.len()) {
                        errors.push(syn::Error::new(
                            span_start,
                            "`local` is `N` (a 1-D NDRange), `[X, Y]` (2-D) or `[X, Y, Z]` (3-D)",
                        ));
                    }
                    // The checks multiply the sizes: a product past 2^32 fits no device anyway.
                    let items = dims.iter().try_fold(1u64, |n, &d| n.checked_mul(d));
                    if items.is_none_or(|n| n > u64::from(u32::MAX)) {
                        errors.push(syn::Error::new(
                            span_start,
                            "a work-group of more than 2^32 work-items: no OpenCL device runs one",
                        ));
                        dims = vec![1];
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

/// A lint attribute (`#[allow(..)]`, `#[expect(..)]`, `#[warn(..)]`, `#[deny(..)]`,
/// `#[forbid(..)]`): Rust allows them on a parameter, and the generated ones keep them.
pub fn is_lint(attr: &Attribute) -> bool {
    ["allow", "expect", "warn", "deny", "forbid"].iter().any(|l| attr.path().is_ident(l))
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
                    let lints = pt.attrs.iter().filter(|a| is_lint(a)).cloned().collect();
                    if let Some(role) = role(&pt.attrs, &pt.ty, errors) {
                        params.push(Param { ident, ty: (*pt.ty).clone(), role, lints });
                    }
                }
            }
        }
        Func { ident: sig.ident.clone(), params, sig_tokens }
    }
}
