//! The functions of a source, as the reach of a pointer reads them: names, parameters, bodies.

use super::super::lex::{Kind, Tok};
use super::super::writes::matching;

/// A function defined in the source (a kernel included): its parameters' names by position
/// (empty for one without a name) and its body.
pub(in crate::clsig) struct Func {
    pub name: String,
    pub params: Vec<String>,
    pub body: Vec<Tok>,
}

/// A function definition at `at` (`name (params) [__attribute__((..))] { body }`) and the
/// index just past it.
pub(in crate::clsig) fn definition(toks: &[Tok], at: usize) -> Option<(Func, usize)> {
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
