//! A buffer's partition pattern: literal sides checked against the work-group size now, named
//! sides resolved against the declaration (an integer scalar parameter, or else a `const` in
//! scope, whose type the compiler checks) and checked by the generated code at each call.

use std::collections::HashSet;

use quote::ToTokens;

use super::tidy;
use crate::errors::Errors;
use crate::parse::{Direction, Func, Param, Pattern, Role, Side};
use hetdsl_decl::declcheck::is_primitive;
use hetdsl_decl::pattern::fit_error;

/// Integer types a pattern side may name a scalar parameter of.
const INTEGERS: [&str; 10] =
    ["i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "isize", "usize"];

/// Every named side of every buffer's pattern, against the declaration's parameters. Returns
/// the buffers whose pattern was refused (they expand with a stand-in pattern, so that only the
/// reported errors show).
pub(super) fn check_names(func: &Func, errors: &mut Errors) -> HashSet<String> {
    let mut refused = HashSet::new();
    for p in &func.params {
        let Role::Buffer { pattern: Pattern::Ratio(a, b), .. } = &p.role else { continue };
        for side in [a, b] {
            if let Side::Name(name) = side {
                if let Some(why) = named_side(name, &func.params) {
                    errors.push(syn::Error::new(name.span(), why));
                    refused.insert(p.ident.to_string());
                }
            }
        }
    }
    refused
}

/// Why `name` cannot be a side of a pattern, if it is a parameter that is not an integer value.
/// A name that is no parameter is left to the compiler: a `const` of an integer type passes,
/// anything else fails on the name (see `hetdsl::__private::pattern_side`).
fn named_side(name: &syn::Ident, params: &[Param]) -> Option<String> {
    let p = params.iter().find(|p| p.ident == *name)?;
    let ty = tidy(&p.ty.to_token_stream().to_string());
    let name_of_ty = super::path_ident(&p.ty).unwrap_or_default();
    let advice =
        "a side of a pattern is a positive integer literal, a `const` of an integer type, \
                  or a scalar parameter of an integer type (`i32`, `u32`, `usize`, …)";
    match &p.role {
        Role::Value if INTEGERS.contains(&name_of_ty.as_str()) => None,
        // Another name may be an alias of an integer (`type Index = i32;`): the compiler says.
        Role::Value if matches!(p.ty, syn::Type::Path(_)) && !is_primitive(&name_of_ty) => None,
        Role::Value if ty == "f32" || ty == "f64" => {
            Some(format!("`{name}` is a `{ty}` parameter: a pattern counts elements, so {advice}"))
        }
        Role::Value => Some(format!("`{name}` is a `{ty}` parameter, not an integer: {advice}")),
        Role::Buffer { .. } => {
            Some(format!("`{name}` is a buffer, not a scalar parameter: {advice}"))
        }
        Role::Local { .. } => {
            Some(format!("`{name}` is a `__local` buffer, not a scalar parameter: {advice}"))
        }
    }
}

/// `whole` on an output that is not merged, and a literal `a:b` that splits a work-group.
pub(super) fn check_pattern(
    pattern: &Pattern,
    dir: Direction,
    merged: bool,
    items_per_group: u64,
    attr: &syn::Attribute,
    errors: &mut Errors,
) {
    if *pattern == Pattern::Whole && dir.writes() && !merged {
        errors.push(syn::Error::new_spanned(
            attr,
            "`whole` is for inputs every device reads in full; an output is split by a pattern `a:b` so that \
             each device writes its own part, or written whole by every device and reduced with \
             `merge = \"sum\"` (or \"max\", \"min\", \"or\", \"and\")",
        ));
    }
    if let Some(why) = pattern.literal().and_then(|(a, b)| fit_error(a, b, items_per_group)) {
        errors.push(syn::Error::new_spanned(attr, why));
    }
}
