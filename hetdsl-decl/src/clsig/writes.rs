//! The pieces of C expressions the reach module reads pointers with: members, brackets,
//! assignment and increment operators, unary `*` and `&` told from binary ones, casts and
//! declarators. The tests here are single statements about one pointer `p`: what counts as a
//! write through it, and what is only a read. What is found is certain enough to refuse an
//! input buffer the kernel would write into and never return.

use super::lex::{Kind, Tok};

/// Is the identifier at `at` a member name (after `.` or `->`)?
pub(super) fn member(toks: &[Tok], at: usize) -> bool {
    at >= 1
        && (toks[at - 1].is_punct('.')
            || (at >= 2
                && toks[at - 1].is_punct('>')
                && toks[at - 2].is_punct('-')
                && toks[at - 1].glued))
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

fn glued_punct(toks: &[Tok], at: usize, c: char) -> bool {
    toks.get(at).is_some_and(|t| t.is_punct(c) && t.glued)
}

/// An assignment operator at `at`: `=` (not `==`), `op=` for `+ - * / % & | ^`, `<<=`, `>>=`,
/// or a postfix `++`/`--`.
pub(super) fn assigns(toks: &[Tok], at: usize) -> bool {
    assignment(toks, at).is_some()
}

/// The number of tokens of the assignment operator at `at` (see [`assigns`]), if there is one.
pub(super) fn assignment(toks: &[Tok], at: usize) -> Option<usize> {
    let Some(Kind::Punct(c)) = toks.get(at).map(|t| &t.kind) else {
        return None;
    };
    let op_assign = || glued_punct(toks, at + 1, '=') && !glued_punct(toks, at + 2, '=');
    match c {
        '=' if !glued_punct(toks, at + 1, '=') => Some(1),
        '+' | '-' if glued_punct(toks, at + 1, *c) => Some(2),
        '+' | '-' | '*' | '/' | '%' | '&' | '|' | '^' if op_assign() => Some(2),
        '<' | '>' if glued_punct(toks, at + 1, *c) && glued_punct(toks, at + 2, '=') => Some(3),
        _ => None,
    }
}

/// `++` or `--` just before `at`.
pub(super) fn pre_increment(toks: &[Tok], at: usize) -> bool {
    at >= 2
        && ((toks[at - 1].is_punct('+') && toks[at - 2].is_punct('+'))
            || (toks[at - 1].is_punct('-') && toks[at - 2].is_punct('-')))
        && toks[at - 1].glued
}

/// Is the `*` or `&` at `at` a dereference or an address (no operand before it)? After a
/// `)` it is when the parentheses are a condition's (`if (c) *p = 0`) or a cast's.
pub(super) fn is_unary(toks: &[Tok], at: usize) -> bool {
    match at.checked_sub(1).map(|k| &toks[k]) {
        None => true,
        Some(t) => match &t.kind {
            Kind::Ident(w) => matches!(w.as_str(), "return" | "case" | "else" | "do"),
            Kind::Number(_) => false,
            Kind::Punct(')') => opener(toks, at - 1).is_some_and(|o| {
                is_cast(toks, o, at - 1)
                    || o.checked_sub(1)
                        .and_then(|k| toks[k].ident())
                        .is_some_and(|w| matches!(w, "if" | "while" | "for" | "switch"))
            }),
            Kind::Punct(c) => *c != ']',
        },
    }
}

/// The index of the opener matching the closer at `close`.
pub(super) fn opener(toks: &[Tok], close: usize) -> Option<usize> {
    let mut depth = 0usize;
    for k in (0..=close).rev() {
        match toks[k].kind {
            Kind::Punct(')' | ']' | '}') => depth += 1,
            Kind::Punct('(' | '[' | '{') => {
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

/// A word that can only begin or qualify a type: OpenCL C's scalar and vector types, address
/// spaces and qualifiers.
fn type_word(w: &str) -> bool {
    let scalar = w.trim_end_matches(|c: char| c.is_ascii_digit());
    let vector =
        scalar.len() < w.len() && matches!(&w[scalar.len()..], "2" | "3" | "4" | "8" | "16");
    let scalars = [
        "char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "float", "double",
        "half",
    ];
    (vector && scalars.contains(&scalar))
        || scalars.contains(&w)
        || matches!(
            w,
            "void"
                | "bool"
                | "size_t"
                | "ptrdiff_t"
                | "intptr_t"
                | "uintptr_t"
                | "unsigned"
                | "signed"
                | "struct"
                | "union"
                | "enum"
                | "const"
                | "volatile"
                | "restrict"
                | "__global"
                | "global"
                | "__local"
                | "local"
                | "__constant"
                | "constant"
                | "__private"
                | "private"
                | "__generic"
                | "generic"
        )
}

/// Are the parentheses `open..=close` a cast: only names and `*`, a type word among them or a
/// `*` last (`(__global int*)`, `(float4)`, `(T*)`)?
pub(super) fn is_cast(toks: &[Tok], open: usize, close: usize) -> bool {
    let inside = &toks[open + 1..close];
    let names_and_stars = inside.iter().all(|t| t.ident().is_some() || t.is_punct('*'));
    let callee = open
        .checked_sub(1)
        .and_then(|k| toks[k].ident())
        .is_some_and(|w| !matches!(w, "return" | "case" | "else" | "do"));
    !inside.is_empty()
        && names_and_stars
        && !callee
        && (inside.iter().any(|t| t.ident().is_some_and(type_word))
            || inside.last().is_some_and(|t| t.is_punct('*')))
}

/// Is the `*` at `at` part of a declarator after a comma (`float *a, *q = p;`), not a
/// dereference? It is when its statement begins as a declaration does: with a type word, or a
/// name followed by a name or `*` (a typedef'd type).
pub(super) fn is_declaration_star(toks: &[Tok], at: usize) -> bool {
    if !(at >= 1 && toks[at - 1].is_punct(',')) {
        return false;
    }
    let mut j = at - 1;
    let mut depth = 0usize;
    while j > 0 {
        match toks[j - 1].kind {
            Kind::Punct(')' | ']' | '}') => depth += 1,
            Kind::Punct('(' | '[' | '{') if depth > 0 => depth -= 1,
            // A comma inside parentheses is an argument's, not a declarator's.
            Kind::Punct('(' | '[') => return false,
            Kind::Punct(';' | '{') => break,
            _ => {}
        }
        j -= 1;
    }
    let first = toks.get(j).and_then(Tok::ident);
    let second = toks.get(j + 1);
    first.is_some_and(type_word)
        || (first.is_some() && second.is_some_and(|t| t.ident().is_some() || t.is_punct('*')))
}

#[cfg(test)]
mod tests {
    use super::super::lex;
    use super::super::reach::body_write;

    fn writes(body: &str, name: &str) -> bool {
        let toks = lex::tokens(body, &[]).expect("lexes");
        body_write(&toks, name).is_some()
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
        let written: Vec<_> =
            params.iter().map(|p| p.written_at.as_ref().map(|w| w.line())).collect();
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
        let written: Vec<_> = k
            .params
            .as_ref()
            .expect("params")
            .iter()
            .map(|p| p.written_at.as_ref().map(|w| w.line()))
            .collect();
        assert_eq!(written, [None, Some(3)]);
    }
}
