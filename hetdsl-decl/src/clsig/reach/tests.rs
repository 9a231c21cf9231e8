use super::super::lex;
use super::syntax::{builtin, Builtin};
use super::{body_write, Func, Reach};
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

/// Where the kernel uses the value an atomic on `p` returns, in `body` (helpers before it).
fn atomic_value(helpers: &[(&str, &str, &str)], body: &str) -> Option<(usize, String)> {
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
    Reach::new(&funcs).solve((k, 0, 0)).atomic_value
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
