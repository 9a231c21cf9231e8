//! A parameter's role (`#[input(1:1)]`, `#[output(whole, merge = "sum")]`, `#[local]`, or a
//! plain value), read from its attribute and checked against the shape of its Rust type.

use proc_macro2::Span;
use quote::ToTokens;
use syn::parse::ParseStream;
use syn::{Attribute, Expr, Ident, LitInt, LitStr, Token, Type};

use crate::errors::Errors;
use crate::parse::{Direction, LocalSize, Merge, MergeOp, Pattern, Role, Side, MERGE_NAMES};

/// The parameter's role from its attribute, checked against the shape of its Rust type.
pub fn role(attrs: &[Attribute], ty: &Type, errors: &mut Errors) -> Option<Role> {
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
        let role = if let Some(dir) = dir {
            buffer_role(attr, dir, ty, errors)
        } else if path.is_ident("local") {
            local_role(attr, ty, errors)
        } else if path.is_ident("doc") || crate::parse::is_lint(attr) {
            // A doc comment says what the parameter is; a lint goes on the generated ones.
            None
        } else if path.is_ident("cfg") || path.is_ident("cfg_attr") {
            errors.push(syn::Error::new_spanned(
                attr,
                "a kernel takes every one of its parameters in every build, so `#[cfg]` cannot \
                 remove one: put `#[cfg(..)]` on whole declarations instead, one per variant \
                 of the kernel (each may name its own `file`, `name` or `defines`)",
            ));
            attempted = true;
            None
        } else {
            errors.push(syn::Error::new_spanned(
                attr,
                "unknown parameter attribute; buffers take `#[input(a:b)]`, `#[output(a:b)]` or \
                 `#[inout(a:b)]` (a:b a pattern such as `1:1`, or `whole`), __local buffers `#[local]`",
            ));
            None
        };
        if role.is_some() {
            found = role;
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

/// `#[input(..)]`, `#[output(..)]` or `#[inout(..)]` on a slice; `None` after an error.
fn buffer_role(attr: &Attribute, dir: Direction, ty: &Type, errors: &mut Errors) -> Option<Role> {
    let (pattern, merge) =
        match attr.parse_args_with(|i: ParseStream| parse_pattern_and_merge(i, dir)) {
            Ok(p) => p,
            Err(e) => {
                errors.push(e);
                return None;
            }
        };
    let merge = merge.map(|(key, m)| checked_merge(key, m, dir, &pattern, errors));
    let Some(elem) = slice_elem(ty, dir.writes()) else {
        let want = if dir.writes() { "&mut [T]" } else { "&[T]" };
        errors.push(syn::Error::new_spanned(
            ty,
            format!("an #[{}] buffer is a slice `{want}`", dir.attr_name()),
        ));
        return None;
    };
    Some(Role::Buffer { dir, pattern, elem, attr: attr.clone(), merge })
}

/// A buffer's `merge = "op"`, its errors reported. A refused merge keeps no reduction, so that
/// the expansion stays the plain buffer's.
fn checked_merge(
    key: Ident,
    mut m: Merge,
    dir: Direction,
    pattern: &Pattern,
    errors: &mut Errors,
) -> Merge {
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
    } else if *pattern != Pattern::Whole {
        errors.push(syn::Error::new(
            key.span(),
            "`merge` needs the pattern `whole`: every device writes the whole buffer and \
                 the copies are reduced element by element; a split buffer (`a:b`) has one \
                 writer per element and needs no merge",
        ));
        m.op = None;
    }
    m
}

/// `#[local]` or `#[local(..)]` on an array or slice; `None` after an error.
fn local_role(attr: &Attribute, ty: &Type, errors: &mut Errors) -> Option<Role> {
    let opts = match &attr.meta {
        syn::Meta::Path(_) => LocalOpts::default(),
        _ => match attr.parse_args_with(parse_local_opts) {
            Ok(o) => o,
            Err(e) => {
                errors.push(e);
                return None;
            }
        },
    };
    let attr = attr.clone();
    match (ty, opts.per_item) {
        (Type::Array(a), None) => {
            let size = LocalSize::Fixed { count: a.len.clone(), allow_smaller: opts.allow_smaller };
            return Some(Role::Local { elem: (*a.elem).clone(), size, attr });
        }
        (Type::Slice(s), Some((k, _))) => {
            return Some(Role::Local {
                elem: (*s.elem).clone(),
                size: LocalSize::PerItem(k),
                attr,
            });
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
    None
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

/// A pattern, then the buffer's options in any order, each at most once: `merge = "op"` and
/// `halo = r` (which turns `1:1` into a stencil's input, `Pattern::Halo`).
fn parse_pattern_and_merge(input: ParseStream, dir: Direction) -> syn::Result<PatternAndMerge> {
    let mut pattern = parse_pattern(input)?;
    let mut merge = None;
    let mut halo: Option<Ident> = None;
    while !input.is_empty() {
        input.parse::<Token![,]>()?;
        if input.is_empty() {
            break;
        }
        let key: Ident = input.parse()?;
        let again = if key == "merge" { merge.is_some() } else { halo.is_some() };
        if again {
            return Err(syn::Error::new(key.span(), format!("`{key}` is given twice")));
        }
        input.parse::<Token![=]>()?;
        if key == "merge" {
            let lit: LitStr = input.parse()?;
            let op = MergeOp::from_name(&lit.value());
            merge = Some((key, Merge { op, lit }));
        } else if key == "halo" {
            pattern = halo_pattern(input.parse()?, &key, &pattern, dir)?;
            halo = Some(key);
        } else {
            return Err(syn::Error::new(
                key.span(),
                format!(
                    "unknown buffer option `{key}`; after the pattern come `merge = \"op\"` \
                     (outputs) and `halo = r` (inputs)"
                ),
            ));
        }
    }
    Ok((pattern, merge))
}

/// `halo = r` after `pattern`: a read-only 1:1 input widened by `r` on each side.
fn halo_pattern(r: LitInt, key: &Ident, pattern: &Pattern, dir: Direction) -> syn::Result<Pattern> {
    if dir.writes() {
        return Err(syn::Error::new(
            key.span(),
            "a halo overlaps the neighbouring packages' elements, so it is read-only: `halo` is \
             for #[input] buffers; give the output its own `1:1`",
        ));
    }
    if pattern.literal() != Some((1, 1)) {
        return Err(syn::Error::new(
            key.span(),
            "a halo widens a one-element-per-work-item input: write `#[input(1:1, halo = r)]`",
        ));
    }
    match r.base10_parse::<u64>() {
        Ok(n) if n > 0 => Ok(Pattern::Halo(n)),
        _ => Err(syn::Error::new(
            r.span(),
            "a halo is a positive integer: the elements (1-D), rows (2-D) or planes (3-D) read \
             past each side",
        )),
    }
}

const PATTERN_FORMS: &str = "a pattern is `a:b` (such as `1:1`, `1:255`, `4:1`; a side may \
     name a `const` or an integer scalar parameter, as in `cols:1`) or `whole`";

/// `a:b` or `whole`; each side of `a:b` a literal or a name.
fn parse_pattern(input: ParseStream) -> syn::Result<Pattern> {
    if input.peek(Ident) && !input.peek2(Token![:]) {
        let id: Ident = input.parse()?;
        if id == "whole" {
            return Ok(Pattern::Whole);
        }
        return Err(syn::Error::new(id.span(), PATTERN_FORMS));
    }
    let a = parse_side(input)?;
    input.parse::<Token![:]>()?;
    let b = parse_side(input)?;
    Ok(Pattern::Ratio(a, b))
}

/// A positive integer literal or a name (checked against the declaration in `check`).
fn parse_side(input: ParseStream) -> syn::Result<Side> {
    if input.peek(Ident) {
        return Ok(Side::Name(input.parse()?));
    }
    if !input.peek(LitInt) {
        return Err(input.error(PATTERN_FORMS));
    }
    let lit: LitInt = input.parse()?;
    let value = lit.base10_parse::<u64>()?;
    match hetdsl_decl::pattern::side_error(&value.to_string(), i128::from(value)) {
        Some(why) => Err(syn::Error::new(lit.span(), why)),
        None => Ok(Side::Lit(value)),
    }
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
