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
