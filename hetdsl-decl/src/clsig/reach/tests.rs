use super::super::lex;
use super::syntax::{builtin, Builtin};
use super::{body_write, Facts, Func, Reach};
use crate::clsig::Written;

fn toks(text: &str) -> Vec<lex::Tok> {
    lex::tokens(text, &[]).expect("lexes")
}

fn seen(body: &str) -> Option<Written> {
    body_write(&toks(body), "p")
}

#[test]
fn copies_of_copies_are_followed() {
    let body = "__global float* q = p + 4, *r; r = q; float v = p[0]; v = *r; r[1] = v;";
    assert_eq!(seen(body), Some(Written::At(0)));
    let body = "__global float* q = p + 4, *r; r = q; float v = p[0]; v = *r;";
    assert_eq!(seen(body), None);
}

/// A pointer returned through calls nested far deeper than the stack could recurse is
/// followed out of every one of them, each closer found once.
#[test]
fn calls_nested_deep_are_followed_without_recursion() {
    let n = 50_000;
    let body = format!("{}p{}[0] = 1;", "at(".repeat(n), ")".repeat(n));
    let funcs = [
        Func { name: "at".into(), params: vec!["b".into()], body: toks("return b;") },
        Func { name: "k".into(), params: vec!["p".into()], body: toks(&body) },
    ];
    assert_eq!(Reach::new(&funcs).solve((1, 0, 0)).written, Some(Written::At(0)));
}

#[test]
fn pointer_built_ins_write_the_arguments_they_store_into() {
    assert_eq!(builtin("vstore4", 2), Builtin::Writes);
    assert_eq!(builtin("vstore4", 0), Builtin::Reads);
    assert_eq!(builtin("vstore_half_rte", 2), Builtin::Writes);
    assert_eq!(builtin("atomic_compare_exchange_strong", 1), Builtin::Writes);
    assert_eq!(builtin("atomic_compare_exchange_strong", 2), Builtin::Reads);
    assert_eq!(builtin("sincos", 1), Builtin::Writes);
    assert_eq!(builtin("remquo", 2), Builtin::Writes);
    assert_eq!(builtin("vload4", 1), Builtin::Reads);
    assert_eq!(builtin("frobnicate", 0), Builtin::Unknown);
}

/// What the kernel `body` does with `p` (helpers before it).
fn facts(helpers: &[(&str, &str, &str)], body: &str) -> Facts {
    let mut funcs: Vec<Func> = helpers
        .iter()
        .map(|(name, param, b)| Func {
            name: (*name).into(),
            params: vec![(*param).into()],
            body: toks(b),
        })
        .collect();
    funcs.push(Func { name: "k".into(), params: vec!["p".into()], body: toks(body) });
    let k = funcs.len() - 1;
    Reach::new(&funcs).solve((k, 0, 0))
}

/// Where the kernel uses the value an atomic on `p` returns, in `body` (helpers before it).
fn atomic_value(helpers: &[(&str, &str, &str)], body: &str) -> Option<(usize, String)> {
    facts(helpers, body).atomic_value
}

/// The updates found on `p`'s elements, and the first read of one's value.
fn uses(body: &str) -> (Vec<String>, Option<String>) {
    let f = facts(&[], body);
    (f.updates.into_keys().collect(), f.read.map(|(_, what)| what))
}

#[test]
fn element_updates_are_told_from_reads_of_their_value() {
    for (body, updates) in [
        ("p[b] += x;", vec!["+="]),
        ("if (x > 0) p[x % 4]++;", vec!["++"]),
        ("for (i = 0; i < n; p[i]--) { }", vec!["--"]),
        ("(*p)++; --p[1];", vec!["++", "--"]),
        ("atomic_inc(&p[b]); atomic_max(p + 1, v); p[2] |= 4;", vec!["atomic_inc", "atomic_max", "|="]),
        ("p[i] = v; p[i] <<= 1;", vec!["<<="]),
        ("p[i] = sizeof(p[0]);", vec![]),
        // A float add built on compare-and-swap reads a value only to swap it.
        ("do { o.f = *p; n.f = o.f + v; } while (atomic_cmpxchg((volatile __global uint*)p, o.u, n.u) != o.u);", vec!["atomic_cmpxchg"]),
        ("for (;;) { o = p[0]; if (atomic_cmpxchg(p, o, o + 1) == o) break; }", vec!["atomic_cmpxchg"]),
        ("do { o = as_uint(p[0]); } while (atomic_cmpxchg(p, o, as_uint(as_float(o) + v)) != o);", vec!["atomic_cmpxchg"]),
    ] {
        let (found, read) = uses(body);
        assert_eq!((found, read), (updates.iter().map(|s| s.to_string()).collect(), None), "{body}");
    }
    for (body, read) in [
        ("if (p[b] < cap) atomic_inc(&p[b]);", "`p[b]`"),
        ("uint c = (*p)++;", "`(*p)++`"),
        ("out[i] = (p[b] += 1);", "`p[b]`"),
        ("__global uint* q = p + b; if (*q < 10) *q += 1;", "`*q`"),
        ("float4 v = vload4(0, p);", "`vload4(0,p)`"),
        ("y[i] = p[i] * 2;", "`p[i]`"),
        ("mystery(p);", "`mystery(…)`, which the reader cannot follow"),
        // Decisions inside a swap loop, or its values carried out of it, are reads.
        (
            "do { o = p[0]; if (o >= cap) return; } while (atomic_cmpxchg(p, o, o + 1) != o);",
            "`p[0]`",
        ),
        ("do { o = p[0]; n = min(o + 1, cap); } while (atomic_cmpxchg(p, o, n) != o);", "`p[0]`"),
        ("do { o = p[0]; } while (atomic_cmpxchg(p, o, o + 1) != o); slot[i] = o;", "`p[0]`"),
        ("do { o = p[0]; seen[i] = o; } while (atomic_cmpxchg(p, o, o + 1) != o);", "`p[0]`"),
        ("while (x) { o = p[0]; }", "`p[0]`"),
    ] {
        assert_eq!(uses(body).1.as_deref(), Some(read), "{body}");
    }
    // An element in parentheses is written as it is bare (before: not seen at all).
    assert_eq!(seen("(*p)++;"), Some(Written::At(0)));
    assert_eq!(seen("(p[1]) = 2;"), Some(Written::At(0)));
    assert_eq!(seen("x = (p[1]);"), None);
    // Through a helper the pointer is passed to.
    let helper = [("bump", "c", "if (c[0] < 3) c[0] += 1;")];
    let f = facts(&helper, "bump(p + i);");
    assert_eq!(f.updates.into_keys().collect::<Vec<_>>(), ["+="]);
    assert_eq!(f.read, Some((0, "`c[0]`".into())));
}

#[test]
fn the_value_an_atomic_returns_is_found_where_it_is_used() {
    for unused in [
        "atomic_inc(p);",
        "if (x > 0) atomic_add(&p[x % 4], 1u);",
        "for (;;) atomic_max(p + 1, v);",
        "(void)atomic_inc(p); else atomic_dec(p);",
        "{ atom_add(p, 2); }",
        "atomic_store(p, 1); uint v = p[0];",
        // A float add built on compare-and-swap retries until its swap takes.
        "do { o.f = *p; n.f = o.f + v; } while (atomic_cmpxchg((volatile __global uint*)p, o.u, n.u) != o.u);",
        "for (;;) { o = p[0]; if (atomic_cmpxchg(p, o, o + 1) == o) break; }",
        "while (!atomic_compare_exchange_weak(p, &e, e + 1)) { }",
    ] {
        assert_eq!(atomic_value(&[], unused), None, "{unused}");
    }
    for (used, name) in [
        ("out[atomic_inc(p)] = v;", "atomic_inc"),
        ("uint slot = atomic_add(&p[0], 1u);", "atomic_add"),
        ("if (atomic_cmpxchg(p, 0u, 1u) == 0u) won = 1;", "atomic_cmpxchg"),
        ("x = 1;\nif (atomic_inc(p + 2) == last) done();", "atomic_inc"),
        ("if (atomic_cmpxchg(p, 0u, 1u) == 0u) { won = 1; break; }", "atomic_cmpxchg"),
    ] {
        let found = atomic_value(&[], used).map(|(_, n)| n);
        assert_eq!(found.as_deref(), Some(name), "{used}");
    }
    assert_eq!(
        atomic_value(&[], "x = 1;\nreturn atomic_xchg(p, 3);"),
        Some((1, "atomic_xchg".into()))
    );
    // In a helper the pointer is passed to, at the helper's line.
    let claim = ("claim", "c", "\n\nreturn atomic_inc(c);");
    assert_eq!(atomic_value(&[claim], "out[claim(p)] = v;"), Some((2, "atomic_inc".into())));
    let count = ("count", "c", "atomic_inc(c);");
    assert_eq!(atomic_value(&[count], "count(p); count(p + 1);"), None);
}
