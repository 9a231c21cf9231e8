//! Which parameters a kernel body visibly writes through: an assignment, compound assignment,
//! `++` or `--` on `p[..]`, `*p`, `*(p ..)` or `p->..`, an `atomic_*`/`atom_*` call whose first
//! argument names `p`, a `vstoreN`/`vstore_half*` whose last argument names it, or an
//! `async_work_group_copy`/`async_work_group_strided_copy` into it (first argument). This is
//! one body's own statements about one name; the reach module applies it to the copies of a
//! pointer and to the functions the pointer is passed to. What is found is certain enough to
//! refuse an input buffer the kernel would write into and never return.

use super::lex::{Kind, Tok};

/// The 0-based line of the first write through `name` in the statements of `body`, if any.
pub(crate) fn first_write(body: &[Tok], name: &str) -> Option<usize> {
    for (i, t) in body.iter().enumerate() {
        match t.ident() {
            // `s.name` and `q->name` are members, not the parameter.
            Some(n) if n == name && !member(body, i) => {
                // `p[..] = `, `p->x += `, `p[i].y++`; and `++p[i]`.
                if let Some(end) = postfix_deref(body, i + 1) {
                    if assigns(body, end) || pre_increment(body, i) {
                        return Some(t.line);
                    }
                }
                // `*p = ` (unary `*`).
                if i >= 1 && body[i - 1].is_punct('*') && is_unary(body, i - 1) {
                    let end = members(body, i + 1);
                    if assigns(body, end) || pre_increment(body, i - 1) {
                        return Some(t.line);
                    }
                }
            }
            Some(f)
                if (f.starts_with("atomic_") && f != "atomic_load")
                    || f.starts_with("atom_")
                    || f.starts_with("async_work_group") =>
            {
                if let Some(args) = call_args(body, i) {
                    if args.first().is_some_and(|a| names(a, name)) {
                        return Some(t.line);
                    }
                }
            }
            Some(f) if f.starts_with("vstore") => {
                if let Some(args) = call_args(body, i) {
                    if args.last().is_some_and(|a| names(a, name)) {
                        return Some(t.line);
                    }
                }
            }
            _ => {
                // `*(p + i) = `
                if t.is_punct('*')
                    && is_unary(body, i)
                    && body.get(i + 1).is_some_and(|t| t.is_punct('('))
                {
                    if let Some(close) = matching(body, i + 1) {
                        let end = members(body, close + 1);
                        if names(&body[i + 2..close], name)
                            && (assigns(body, end) || pre_increment(body, i))
                        {
                            return Some(t.line);
                        }
                    }
                }
            }
        }
    }
    None
}

/// Is the identifier at `at` a member name (after `.` or `->`)?
pub(super) fn member(toks: &[Tok], at: usize) -> bool {
    at >= 1
        && (toks[at - 1].is_punct('.')
            || (at >= 2
                && toks[at - 1].is_punct('>')
                && toks[at - 2].is_punct('-')
                && toks[at - 1].glued))
}

fn names(toks: &[Tok], name: &str) -> bool {
    (0..toks.len()).any(|i| toks[i].ident() == Some(name) && !member(toks, i))
}

/// The index of the closer matching the opener at `open`.
pub(super) fn matching(toks: &[Tok], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (k, t) in toks.iter().enumerate().skip(open) {
        match t.kind {
            Kind::Punct('(' | '[' | '{') => depth += 1,
            Kind::Punct(')' | ']' | '}') => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(k);
                }
            }
            _ => {}
        }
    }
    None
}

/// After `p` at `from - 1`: `[..]`, `->x`, `.x` in any order. The end index when at least one
/// dereference (`[..]` or `->`) was seen.
fn postfix_deref(toks: &[Tok], from: usize) -> Option<usize> {
    let mut j = from;
    let mut deref = false;
    loop {
        match toks.get(j) {
            Some(t) if t.is_punct('[') => {
                j = matching(toks, j)? + 1;
                deref = true;
            }
            Some(t)
                if t.is_punct('-')
                    && toks.get(j + 1).is_some_and(|g| g.is_punct('>') && g.glued)
                    && toks.get(j + 2).is_some_and(|n| n.ident().is_some()) =>
            {
                j += 3;
                deref = true;
            }
            Some(t) if t.is_punct('.') && toks.get(j + 1).is_some_and(|n| n.ident().is_some()) => {
                j += 2;
            }
            _ => return deref.then_some(j),
        }
    }
}

/// Member accesses and subscripts after an lvalue (`(*p).x`, `*p` then `.x`).
fn members(toks: &[Tok], from: usize) -> usize {
    postfix_deref(toks, from).unwrap_or_else(|| {
        let mut j = from;
        while toks.get(j).is_some_and(|t| t.is_punct('.'))
            && toks.get(j + 1).is_some_and(|n| n.ident().is_some())
        {
            j += 2;
        }
        j
    })
}

fn glued_punct(toks: &[Tok], at: usize, c: char) -> bool {
    toks.get(at).is_some_and(|t| t.is_punct(c) && t.glued)
}

/// An assignment operator at `at`: `=` (not `==`), `op=` for `+ - * / % & | ^`, `<<=`, `>>=`,
/// or a postfix `++`/`--`.
fn assigns(toks: &[Tok], at: usize) -> bool {
    let Some(Kind::Punct(c)) = toks.get(at).map(|t| &t.kind) else {
        return false;
    };
    match c {
        '=' => !glued_punct(toks, at + 1, '='),
        '+' | '-' => {
            glued_punct(toks, at + 1, *c)
                || (glued_punct(toks, at + 1, '=') && !glued_punct(toks, at + 2, '='))
        }
        '*' | '/' | '%' | '&' | '|' | '^' => {
            glued_punct(toks, at + 1, '=') && !glued_punct(toks, at + 2, '=')
        }
        '<' | '>' => glued_punct(toks, at + 1, *c) && glued_punct(toks, at + 2, '='),
        _ => false,
    }
}

/// `++` or `--` just before `at`.
fn pre_increment(toks: &[Tok], at: usize) -> bool {
    at >= 2
        && ((toks[at - 1].is_punct('+') && toks[at - 2].is_punct('+'))
            || (toks[at - 1].is_punct('-') && toks[at - 2].is_punct('-')))
        && toks[at - 1].glued
}

/// Is the `*` at `at` a dereference (no operand before it)?
pub(super) fn is_unary(toks: &[Tok], at: usize) -> bool {
    match at.checked_sub(1).map(|k| &toks[k]) {
        None => true,
        Some(t) => match &t.kind {
            Kind::Ident(w) => matches!(w.as_str(), "return" | "case" | "else" | "do"),
            Kind::Number(_) => false,
            Kind::Punct(c) => !matches!(c, ')' | ']'),
        },
    }
}

/// The top-level comma-separated arguments of a call whose name is at `at`.
pub(super) fn call_args(toks: &[Tok], at: usize) -> Option<Vec<&[Tok]>> {
    if !toks.get(at + 1)?.is_punct('(') {
        return None;
    }
    let close = matching(toks, at + 1)?;
    let mut out = Vec::new();
    let (mut start, mut depth) = (at + 2, 0usize);
    for k in at + 2..close {
        match toks[k].kind {
            Kind::Punct('(' | '[' | '{') => depth += 1,
            Kind::Punct(')' | ']' | '}') => depth = depth.saturating_sub(1),
            Kind::Punct(',') if depth == 0 => {
                out.push(&toks[start..k]);
                start = k + 1;
            }
            _ => {}
        }
    }
    out.push(&toks[start..close]);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::super::lex;
    use super::first_write;

    fn writes(body: &str, name: &str) -> bool {
        let toks = lex::tokens(body, &[]).expect("lexes");
        first_write(&toks, name).is_some()
    }

    #[test]
    fn assignments_through_the_pointer_are_writes() {
        for body in [
            "p[i] = 1;",
            "p[i] += x;",
            "p[i] <<= 2;",
            "p[i]++;",
            "++p[i];",
            "p[i].x = 3;",
            "p->x = 3;",
            "p->v[2] -= 1;",
            "*p = 0;",
            "x = 1; *p += 2;",
            "*(p + i) = v;",
            "(void)0; --*p;",
            "atomic_add(&p[i], 1);",
            "atomic_inc(p);",
            "atom_max(p + 3, v);",
            "vstore4(v, i, p);",
            "vstore_half(f, 0, p + 4);",
            "if (i) p[i] |= m;",
            "e = async_work_group_copy(p + g * 64, t, 64, 0);",
            "e = async_work_group_strided_copy(p, t, 64, 4, 0);",
        ] {
            assert!(writes(body, "p"), "{body} writes p");
        }
    }

    #[test]
    fn reads_are_not_writes() {
        for body in [
            "x = p[i];",
            "if (p[i] == 3) y = 1;",
            "if (p[i] <= 3) y = 1;",
            "if (p[i] >= 3) y = 1;",
            "if (p[i] != 3) y = 1;",
            "y = a * p[i];",
            "y = *p;",
            "y = p->x + 1;",
            "q[i] = p[i];",
            "atomic_add(&q[i], p[i]);",
            "atomic_load(p);",
            "vstore4(vload4(i, p), i, q);",
            "e = async_work_group_copy(t, p + g * 64, 64, 0);",
            "y = x * (p[i]);",
            "p = p + 1;",
            "s.p[i] = 1;",
            "q->p[0] += 2;",
            "atomic_add(&s.p[0], 1);",
        ] {
            assert!(!writes(body, "p"), "{body} does not write p");
        }
    }
}

#[cfg(test)]
mod read {
    #[test]
    fn the_reader_marks_written_pointer_parameters() {
        let src = "__kernel void k(__global float* x, __global float* y, float a)\n\
                   {\n  int i = get_global_id(0);\n  y[i] = a * x[i];\n}\n";
        let cl = super::super::parse(src).expect("reads");
        let params = cl.kernel("k").expect("a kernel").params.as_ref().expect("params");
        let written: Vec<_> = params.iter().map(|p| p.written_at).collect();
        assert_eq!(written, [None, Some(3), None]);
    }

    #[test]
    fn a_prototype_before_the_definition_does_not_hide_the_writes() {
        let src = "__kernel void k(__global float* x, __global float* y);
                   __kernel void k(__global float* x, __global float* y)
                   {
  y[0] = x[0];
}
";
        let cl = super::super::parse(src).expect("reads");
        let k = cl.kernel("k").expect("a kernel");
        assert!(k.defined);
        let written: Vec<_> =
            k.params.as_ref().expect("params").iter().map(|p| p.written_at).collect();
        assert_eq!(written, [None, Some(3)]);
    }
}
