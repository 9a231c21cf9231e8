//! What a kernel asks of its NDRange: the highest dimension it passes to a work-item built-in
//! (`get_global_id(1)`, `get_local_size(2)`, …) in its body or in a function of the source it
//! calls, and the work-group size its `reqd_work_group_size` attribute requires. A declaration
//! whose work-group size has fewer dimensions than the kernel reads runs it with those ids all 0
//! (and sizes all 1), so every work-item computes the wrong element with no error.

use std::collections::HashSet;

use super::expr;
use super::lex::Tok;
use super::reach::Func;
use super::writes::matching;

/// The work-item built-ins that take a dimension.
const BUILTINS: [&str; 8] = [
    "get_global_id",
    "get_local_id",
    "get_group_id",
    "get_global_size",
    "get_local_size",
    "get_num_groups",
    "get_global_offset",
    "get_enqueued_local_size",
];

/// The highest dimension a kernel reads, where it reads it first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DimUse {
    /// 0-based: `get_global_id(1)` reads dimension 1.
    pub dim: u64,
    /// The built-in, as called: `get_global_id`.
    pub builtin: String,
    /// The 0-based line of the call.
    pub line: usize,
}

/// A kernel's `__attribute__((reqd_work_group_size(X, Y, Z)))`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequiredLocal {
    pub sizes: Vec<u64>,
    /// The 0-based line of the attribute.
    pub line: usize,
}

/// The highest constant dimension function `root` of `funcs` (and every function of `funcs` it
/// calls, however deep) passes to a work-item built-in; `None` where it passes none above 0, or
/// where one of them asks `get_work_dim()` (a kernel written for any number of dimensions).
pub(super) fn highest_dim(funcs: &[Func], root: usize) -> Option<DimUse> {
    let mut seen = HashSet::from([root]);
    let mut todo = vec![root];
    let mut best: Option<DimUse> = None;
    while let Some(f) = todo.pop() {
        let body = &funcs[f].body;
        for (i, t) in body.iter().enumerate() {
            let Some(name) = t.ident() else { continue };
            if !body.get(i + 1).is_some_and(|t| t.is_punct('(')) {
                continue;
            }
            if name == "get_work_dim" {
                return None;
            }
            if BUILTINS.contains(&name) {
                let Some(close) = matching(body, i + 1) else { continue };
                let Ok(dim) = expr::eval(&body[i + 2..close]) else { continue };
                let Ok(dim) = u64::try_from(dim) else { continue };
                if dim > 0 && best.as_ref().is_none_or(|b| dim > b.dim) {
                    best = Some(DimUse { dim, builtin: name.to_string(), line: t.line });
                }
                continue;
            }
            for (g, callee) in funcs.iter().enumerate() {
                if callee.name == name && seen.insert(g) {
                    todo.push(g);
                }
            }
        }
    }
    best
}

/// The work-group size a `reqd_work_group_size(X, Y, Z)` among `toks` (a kernel's header, its
/// attributes included) requires, when its sizes are constants.
pub(super) fn required_local(toks: &[Tok]) -> Option<RequiredLocal> {
    let at = toks.iter().position(|t| {
        matches!(t.ident(), Some("reqd_work_group_size" | "__reqd_work_group_size__"))
    })?;
    if !toks.get(at + 1)?.is_punct('(') {
        return None;
    }
    let close = matching(toks, at + 1)?;
    let sizes = toks[at + 2..close]
        .split(|t| t.is_punct(','))
        .map(|part| expr::eval(part).ok().and_then(|n| u64::try_from(n).ok()))
        .collect::<Option<Vec<u64>>>()?;
    Some(RequiredLocal { sizes, line: toks[at].line })
}

/// Where the `__attribute__((..))` groups written just before token `at` start (a kernel may
/// carry its attributes in front of `__kernel`), or `at` where there are none.
pub(super) fn attributes_before(toks: &[Tok], mut at: usize) -> usize {
    while at > 0 && toks[at - 1].is_punct(')') {
        let (mut depth, mut i) = (0usize, at);
        let open = loop {
            let Some(before) = i.checked_sub(1) else { return at };
            i = before;
            if toks[i].is_punct(')') {
                depth += 1;
            } else if toks[i].is_punct('(') {
                depth -= 1;
                if depth == 0 {
                    break i;
                }
            }
        };
        if open == 0 || toks[open - 1].ident() != Some("__attribute__") {
            return at;
        }
        at = open - 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use crate::clsig;

    fn kernel(src: &str) -> clsig::Kernel {
        clsig::parse(src).unwrap().kernel("k").unwrap().clone()
    }

    #[test]
    fn the_highest_dimension_read_is_found_through_helpers_and_macros() {
        let k = kernel("__kernel void k(__global float* y) { y[get_global_id(0)] = 1; }");
        assert_eq!(k.dims, None);
        let src = "#define ROW get_global_id(1)\n\
                   int col(void) { return get_local_id(2 - 1) + get_group_id(2); }\n\
                   __kernel void k(__global float* y) {\n y[ROW * 8 + col()] = 1; }";
        let k = kernel(src);
        let d = k.dims.expect("a dimension above 0");
        assert_eq!((d.dim, d.builtin.as_str(), d.line), (2, "get_group_id", 1));
        // A kernel that asks how many dimensions it has adapts to them.
        let src = "__kernel void k(__global float* y) {\n\
                   size_t r = get_work_dim() > 1 ? get_global_id(1) : 0; y[r] = 1; }";
        assert_eq!(kernel(src).dims, None);
        // A dimension that is no constant says nothing.
        let src = "__kernel void k(__global float* y, int d) { y[get_global_id(d)] = 1; }";
        assert_eq!(kernel(src).dims, None);
    }

    #[test]
    fn a_required_work_group_size_is_read_wherever_the_attribute_stands() {
        for src in [
            "__kernel __attribute__((reqd_work_group_size(32, 1, 1))) void k(int n) {}",
            "#define WG 32\n__kernel void k(int n) __attribute__((reqd_work_group_size(WG,1,1))) {}",
            "__kernel void k(int n) __attribute__((reqd_work_group_size(16 * 2, 1, 1)));",
            // In front of the qualifier, as GNU attributes may stand before a declaration.
            "__attribute__((reqd_work_group_size(32, 1, 1))) __kernel void k(int n) {}",
            "int f(void);\n__attribute__((reqd_work_group_size(32,1,1)))\n\
             __attribute__((vec_type_hint(float4))) kernel void k(int n) {}",
        ] {
            let r = kernel(src).required_local.expect(src);
            assert_eq!(r.sizes, [32, 1, 1], "{src}");
        }
        assert_eq!(kernel("__kernel void k(int n) {}").required_local, None);
        // One that belongs to the declaration before stays there.
        let src = "void f(void) __attribute__((reqd_work_group_size(8, 1, 1)));\n\
                   __kernel void k(int n) {}";
        assert_eq!(kernel(src).required_local, None);
    }
}
