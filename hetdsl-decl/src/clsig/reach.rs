//! Writes a kernel makes away from its own statements about a parameter: through a local copy
//! of the pointer (`__global float* q = out + 4; q[i] = v;`) and inside the functions of the
//! source it passes the pointer to (`put(out + off, i, v)` with `put` writing its first
//! parameter), however deep the calls go. A kernel called from another kernel counts as such
//! a function.
//!
//! Each function's parameters are read once: written in its body (directly or through a copy),
//! or passed on to a parameter of another function. A parameter that reaches a written one is
//! written; recursion only stops the walk. What is not followed: a pointer stored in a struct
//! or returned by a function, and copies made by means other than `q = <expression naming p>`.

use std::collections::HashMap;

use super::lex::{Kind, Tok};
use super::writes::{self, call_args, is_unary, matching, member};
use super::Kernel;

/// A function defined in the source (a kernel included): its parameters' names by position
/// (empty for one without a name) and its body.
pub(super) struct Func {
    pub name: String,
    pub params: Vec<String>,
    pub body: Vec<Tok>,
}

/// A function definition at `at` (`name (params) [__attribute__((..))] { body }`) and the
/// index just past it.
pub(super) fn definition(toks: &[Tok], at: usize) -> Option<(Func, usize)> {
    let name = toks.get(at)?.ident()?;
    if matches!(name, "__attribute__" | "sizeof" | "typedef") || !toks.get(at + 1)?.is_punct('(') {
        return None;
    }
    let close = matching(toks, at + 1)?;
    let mut open = close + 1;
    while toks.get(open)?.ident() == Some("__attribute__") {
        open = matching(toks, open + 1)? + 1;
    }
    if !toks.get(open)?.is_punct('{') {
        return None;
    }
    let end = matching(toks, open)?;
    let params = param_names(&toks[at + 2..close]);
    let func = Func { name: name.to_string(), params, body: toks[open + 1..end].to_vec() };
    Some((func, end + 1))
}

/// The name of each parameter in a parameter list: the last identifier outside brackets.
fn param_names(list: &[Tok]) -> Vec<String> {
    if list.len() == 1 && list[0].ident() == Some("void") {
        return Vec::new();
    }
    let mut names = vec![String::new()];
    let mut depth = 0usize;
    for t in list {
        match &t.kind {
            Kind::Punct('(' | '[' | '{') => depth += 1,
            Kind::Punct(')' | ']' | '}') => depth = depth.saturating_sub(1),
            Kind::Punct(',') if depth == 0 => names.push(String::new()),
            Kind::Ident(w) if depth == 0 => *names.last_mut().expect("one name") = w.clone(),
            _ => {}
        }
    }
    if list.is_empty() {
        names.clear();
    }
    names
}

/// Sets each kernel's `written_at` (the kernels at their indices in `funcs`, given as pairs),
/// following copies and calls through every function of the source.
pub(super) fn mark_writes(kernels: &mut [Kernel], funcs: &[Func], kernel_funcs: &[(usize, usize)]) {
    let written = written_params(funcs);
    for &(k, f) in kernel_funcs {
        let Some(Ok(params)) = kernels.get_mut(k).map(|k| k.params.as_mut()) else { continue };
        for (i, p) in params.iter_mut().enumerate() {
            if p.pointer.is_some() {
                p.written_at = written[f].get(i).copied().flatten();
            }
        }
    }
}

/// For every function and parameter, the line of a write through it, if there is one.
fn written_params(funcs: &[Func]) -> Vec<Vec<Option<usize>>> {
    let mut by_name: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, f) in funcs.iter().enumerate() {
        by_name.entry(f.name.as_str()).or_default().push(i);
    }
    let mut written: Vec<Vec<Option<usize>>> = Vec::with_capacity(funcs.len());
    // `callers[g][j]`: the (function, parameter) pairs passed on to parameter j of g.
    let mut callers: Vec<Vec<Vec<(usize, usize)>>> =
        funcs.iter().map(|f| vec![Vec::new(); f.params.len()]).collect();
    for (fi, f) in funcs.iter().enumerate() {
        let mut lines = Vec::with_capacity(f.params.len());
        for (k, param) in f.params.iter().enumerate() {
            if param.is_empty() {
                lines.push(None);
                continue;
            }
            let names = copies(&f.body, param);
            lines.push(names.iter().filter_map(|n| writes::first_write(&f.body, n)).min());
            for (g, j) in passed_to(&f.body, &names, &by_name, funcs) {
                callers[g][j].push((fi, k));
            }
        }
        written.push(lines);
    }
    // Propagate each write back to the parameters that reach it.
    let mut work: Vec<(usize, usize)> = (0..funcs.len())
        .flat_map(|f| (0..written[f].len()).map(move |k| (f, k)))
        .filter(|&(f, k)| written[f][k].is_some())
        .collect();
    while let Some((g, j)) = work.pop() {
        for &(f, k) in &callers[g][j] {
            if written[f][k].is_none() {
                written[f][k] = written[g][j];
                work.push((f, k));
            }
        }
    }
    written
}

/// The (function, parameter) pairs of the calls in `body` that are given a pointer into one
/// of `names`.
fn passed_to(
    body: &[Tok],
    names: &[String],
    by_name: &HashMap<&str, Vec<usize>>,
    funcs: &[Func],
) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for (i, t) in body.iter().enumerate() {
        let Some(defs) = t.ident().filter(|_| !member(body, i)).and_then(|n| by_name.get(n)) else {
            continue;
        };
        let Some(args) = call_args(body, i) else { continue };
        for (j, arg) in args.iter().enumerate() {
            if names.iter().any(|n| points_into(arg, n)) {
                let takes = defs.iter().filter(|&&g| j < funcs[g].params.len());
                out.extend(takes.map(|&g| (g, j)));
            }
        }
    }
    out
}

/// `name` and the locals that copy it, directly or through another copy: `q = <expression>`
/// where the expression points into one of them (`out`, `out + 4`, `(T*)out`, `&out[i]`).
fn copies(body: &[Tok], name: &str) -> Vec<String> {
    let mut names = vec![name.to_string()];
    let mut grown = true;
    while grown {
        grown = false;
        for i in 0..body.len() {
            let Some(q) = body[i].ident() else { continue };
            let assigned = body.get(i + 1).is_some_and(|t| t.is_punct('='))
                && !body.get(i + 2).is_some_and(|t| t.is_punct('=') && t.glued);
            if !assigned || member(body, i) || names.iter().any(|n| n == q) {
                continue;
            }
            let rhs = &body[i + 2..expression_end(body, i + 2)];
            if names.iter().any(|n| points_into(rhs, n)) {
                names.push(q.to_string());
                grown = true;
            }
        }
    }
    names
}

/// Where the expression from `from` ends: its `;`, or a `,` or closer outside its brackets.
fn expression_end(toks: &[Tok], from: usize) -> usize {
    let mut depth = 0usize;
    for (k, t) in toks.iter().enumerate().skip(from) {
        match t.kind {
            Kind::Punct('(' | '[' | '{') => depth += 1,
            Kind::Punct(')' | ']' | '}') if depth == 0 => return k,
            Kind::Punct(')' | ']' | '}') => depth -= 1,
            Kind::Punct(';') => return k,
            Kind::Punct(',') if depth == 0 => return k,
            _ => {}
        }
    }
    toks.len()
}

/// Does `expr` hold a pointer into `name`: the name itself or arithmetic on it (`name + i`,
/// a cast of it), or the address of an element (`&name[i]`), rather than a value read
/// through it (`name[i]`, `*name`, `name->x`)?
fn points_into(expr: &[Tok], name: &str) -> bool {
    (0..expr.len()).any(|i| {
        if expr[i].ident() != Some(name) || member(expr, i) {
            return false;
        }
        let deref = expr.get(i + 1).is_some_and(|t| {
            t.is_punct('[')
                || (t.is_punct('-') && expr.get(i + 2).is_some_and(|g| g.is_punct('>') && g.glued))
        });
        let before = i.checked_sub(1).map(|b| &expr[b]);
        let address = before.is_some_and(|b| b.is_punct('&') && is_unary(expr, i - 1));
        let star = before.is_some_and(|b| b.is_punct('*') && is_unary(expr, i - 1));
        if deref {
            address
        } else {
            !star
        }
    })
}

#[cfg(test)]
mod tests {
    use super::super::lex;
    use super::{copies, points_into};

    fn toks(text: &str) -> Vec<lex::Tok> {
        lex::tokens(text, &[]).expect("lexes")
    }

    #[test]
    fn pointers_into_a_buffer_are_told_from_values_read_through_it() {
        for yes in ["p", "p + 4", "(__global float4*)p", "&p[i]", "x ? p : q", "&p->v"] {
            assert!(points_into(&toks(yes), "p"), "{yes}");
        }
        for no in ["p[i]", "*p", "p->x", "s.p", "q", "f(p[0])", "a * p[1]"] {
            assert!(!points_into(&toks(no), "p"), "{no}");
        }
    }

    #[test]
    fn copies_of_copies_are_followed() {
        let body = toks("__global float* q = p + 4, *r; r = q; float v = p[0]; v = *r;");
        assert_eq!(copies(&body, "p"), ["p", "q", "r"]);
    }
}
