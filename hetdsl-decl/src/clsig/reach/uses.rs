//! How a kernel uses one element it reaches through a pointer: stores into it, updates it in
//! place (`+=`, `++`, an atomic), or reads its value. A merged output needs the difference:
//! each device works on a copy of its own, so an update the merge does not fold, or a read of
//! a copy that holds one package's part of a sum, gives wrong numbers.

use super::super::lex::{Kind, Tok};
use super::super::writes::{assignment, pre_increment};
use super::super::{is_swap, Written};
use super::syntax::{is_keyword, Pairs};
use super::Body;

impl Body<'_> {
    /// The element `toks[s..e]`, with a `++` or `--` on it already seen (`inc`): a write when
    /// stored into or updated, and what merged outputs need to know of it.
    pub(super) fn element(
        &mut self,
        (mut s, mut e): (usize, usize),
        mut inc: Option<char>,
        line: usize,
    ) {
        let t = self.toks;
        // A group around it (`(*p)++`, `(p[i]) = v`) is the element still.
        while s > 0 && t[s - 1].is_punct('(') && self.pairs.get(s - 1) == Some(e) {
            if s >= 2 && t[s - 2].ident().is_some_and(|w| w != "return") {
                break; // A call's only argument.
            }
            (s, e) = (s - 1, e + 1);
            if inc.is_some() {
                continue;
            }
            let post = t.get(e).zip(t.get(e + 1)).filter(|(a, b)| {
                (a.is_punct('+') || a.is_punct('-')) && b.kind == a.kind && b.glued
            });
            if pre_increment(t, s) {
                inc = t[s - 1].text().chars().next();
                s -= 2;
            } else if let Some((a, _)) = post {
                inc = a.text().chars().next();
                e += 2;
            }
        }
        match access(t, &self.pairs, (s, e), inc) {
            Access::Store => self.found(Written::At(line), true),
            Access::Update { op, value_used } => {
                self.found(Written::At(line), true);
                self.updates.entry(op).or_insert(line);
                if value_used {
                    self.read_value(s, (s, e), line);
                }
            }
            Access::Read => {
                if !unevaluated(t, &self.pairs, s) {
                    self.read_value(s, (s, e), line);
                }
            }
        }
    }

    /// A read of an element's value (the expression `toks[s..e]`, at token `at`), unless it
    /// is a compare-and-swap loop's.
    pub(super) fn read_value(&mut self, at: usize, span: (usize, usize), line: usize) {
        if self.read.is_none() && !in_swap_loop(self.toks, &self.pairs, at) {
            self.read = Some((line, format!("`{}`", text(self.toks, span))));
        }
    }
}

/// What an element access does, and where its own expression ends.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Access {
    /// `p[i] = v`: the old value is not read.
    Store,
    /// `p[i] += v`, `p[i]++`, `++p[i]`: the operator, and whether the expression's value (the
    /// element as it was or became) is used.
    Update { op: String, value_used: bool },
    /// Anything else takes the element's value.
    Read,
}

/// The access to the element `t[s..e]`; `incremented` when a `++` or `--` (the operator's
/// first character) was found on it, before or after.
pub(super) fn access(
    t: &[Tok],
    pairs: &Pairs,
    (s, e): (usize, usize),
    inc: Option<char>,
) -> Access {
    if let Some(c) = inc {
        let value_used = !stands_alone(t, pairs, s, e);
        return Access::Update { op: format!("{c}{c}"), value_used };
    }
    let Some(len) = assignment(t, e) else { return Access::Read };
    if len == 1 {
        return Access::Store;
    }
    let op: String = t[e..e + len].iter().map(Tok::text).collect();
    // A postfix `++` is the whole expression; `op=` takes the value after it.
    let end = match op.ends_with('=') {
        true => expression_end(t, pairs, e + len),
        false => e + len,
    };
    Access::Update { value_used: !stands_alone(t, pairs, s, end), op }
}

/// Is `t[s..end]` a statement of its own (`p[i] += v;`, also the last clause of a `for`
/// header), whose value nobody takes?
fn stands_alone(t: &[Tok], pairs: &Pairs, s: usize, end: usize) -> bool {
    let after = match t.get(end).map(|x| &x.kind) {
        Some(Kind::Punct(';')) => true,
        Some(Kind::Punct(')')) => pairs.get(end).is_some_and(|o| follows(t, o, &["for"])),
        _ => false,
    };
    let Some(b) = s.checked_sub(1) else { return after };
    let before = match &t[b].kind {
        Kind::Punct(';' | '{' | '}') => true,
        Kind::Ident(w) => matches!(w.as_str(), "else" | "do"),
        Kind::Punct(')') => pairs.get(b).is_some_and(|o| {
            follows(t, o, &["if", "while", "for"])
                || (o + 2 == b && t[o + 1].ident() == Some("void"))
        }),
        _ => false,
    };
    before && after
}

/// Whether the token before `at` is one of `words`.
fn follows(t: &[Tok], at: usize, words: &[&str]) -> bool {
    at > 0 && t[at - 1].ident().is_some_and(|w| words.contains(&w))
}

/// Where the expression starting at `from` ends: the first `;` or `,`, or the closer of a
/// bracket opened before it.
fn expression_end(t: &[Tok], pairs: &Pairs, from: usize) -> usize {
    let mut k = from;
    while let Some(x) = t.get(k) {
        match x.kind {
            Kind::Punct('(' | '[' | '{') => match pairs.get(k) {
                Some(close) => k = close,
                None => return t.len(),
            },
            Kind::Punct(';' | ',' | ')' | ']' | '}') => return k,
            _ => {}
        }
        k += 1;
    }
    t.len()
}

/// The expression `t[s..e]` as text, for messages.
pub(super) fn text(t: &[Tok], (s, e): (usize, usize)) -> String {
    let mut out = String::new();
    for (k, x) in t[s..e].iter().enumerate() {
        let word = |x: &Tok| matches!(x.kind, Kind::Ident(_) | Kind::Number(_));
        if k > 0 && word(x) && word(&t[s + k - 1]) {
            out.push(' ');
        }
        out.push_str(&x.text());
    }
    out
}

/// Is the token at `at` the operand of `sizeof` or `vec_step`, which reads no value?
pub(super) fn unevaluated(t: &[Tok], pairs: &Pairs, at: usize) -> bool {
    let mut j = at;
    while j > 0 {
        j -= 1;
        match t[j].kind {
            Kind::Punct(')' | ']') => match pairs.get(j) {
                Some(o) => j = o,
                None => return false,
            },
            Kind::Punct('(') if follows(t, j, &["sizeof", "vec_step"]) => return true,
            Kind::Punct(';' | '{' | '}') => return false,
            _ => {}
        }
    }
    false
}

/// Is the token at `at` inside the body of a compare-and-swap retry loop that only computes
/// the value to swap in: `do { old = *p; new = old + v; } while (atomic_cmpxchg(p, old, new)
/// != old);`, or `for (;;) { …; if (atomic_cmpxchg(…) == old) break; }`? Its read of the
/// element sees a device's own copy, and the swap adds to that copy what the loop adds, as an
/// atomic add would: the body must make no decision (no branch, comparison or call but a
/// conversion), store nothing but private variables, and leave none of them read after the
/// loop.
pub(super) fn in_swap_loop(t: &[Tok], pairs: &Pairs, at: usize) -> bool {
    let Some(open) = enclosing_brace(t, pairs, at) else { return false };
    let Some(close) = pairs.get(open) else { return false };
    let has_swap = |from: usize, to: usize| {
        (from..to).any(|k| {
            t[k].ident().is_some_and(is_swap) && t.get(k + 1).is_some_and(|x| x.is_punct('('))
        })
    };
    // The loop's end, and the body's statement that only retries, left out of the check.
    let (end, retry) = if follows(t, open, &["do"]) {
        let cond = close + 2;
        if t.get(close + 1).and_then(Tok::ident) != Some("while")
            || !t.get(cond).is_some_and(|x| x.is_punct('('))
        {
            return false;
        }
        let Some(cond_close) = pairs.get(cond) else { return false };
        if !has_swap(cond, cond_close) {
            return false;
        }
        (cond_close + 1, None)
    } else if open > 0
        && t[open - 1].is_punct(')')
        && pairs.get(open - 1).is_some_and(|o| follows(t, o, &["for", "while"]))
    {
        let Some(retry) = retry_statement(t, pairs, (open + 1, close), &has_swap) else {
            return false;
        };
        (close, Some(retry))
    } else {
        return false;
    };
    let mut assigned = Vec::new();
    let mut k = open + 1;
    while k < close {
        if let Some((_, skip_to)) = retry.filter(|(from, _)| *from == k) {
            k = skip_to;
            continue;
        }
        if decides(t, k) {
            return false;
        }
        if t[k].is_punct('=') && !t.get(k + 1).is_some_and(|x| x.is_punct('=') && x.glued) {
            match private_target(t, k) {
                Some(name) => assigned.push(name),
                None => return false,
            }
        }
        k += 1;
    }
    !t[end.min(t.len())..]
        .iter()
        .any(|x| x.ident().is_some_and(|w| assigned.iter().any(|a| a == w)))
}

/// The unmatched `{` before `at`.
fn enclosing_brace(t: &[Tok], pairs: &Pairs, at: usize) -> Option<usize> {
    let mut j = at;
    while j > 0 {
        j -= 1;
        match t[j].kind {
            Kind::Punct(')' | ']' | '}') => j = pairs.get(j)?,
            Kind::Punct('{') => return Some(j),
            _ => {}
        }
    }
    None
}

/// `if (<a swap>) break;` or `continue;` at the top level of the body `t[from..to]`: its first
/// token and the one after it.
fn retry_statement(
    t: &[Tok],
    pairs: &Pairs,
    (from, to): (usize, usize),
    has_swap: &dyn Fn(usize, usize) -> bool,
) -> Option<(usize, usize)> {
    let mut k = from;
    while k < to {
        if t[k].ident() == Some("if") && t.get(k + 1).is_some_and(|x| x.is_punct('(')) {
            let close = pairs.get(k + 1)?;
            let exits = matches!(t.get(close + 1).and_then(Tok::ident), Some("break" | "continue"));
            if has_swap(k + 1, close) && exits && t.get(close + 2).is_some_and(|x| x.is_punct(';'))
            {
                return Some((k, close + 3));
            }
        }
        k = match t[k].kind {
            Kind::Punct('(' | '[' | '{') => pairs.get(k)? + 1,
            _ => k + 1,
        };
    }
    None
}

/// Does the token at `k` decide something: a branch or jump, a comparison or logical operator,
/// or a call other than a conversion (`min(old + 1, cap)` caps what a sum adds)?
fn decides(t: &[Tok], k: usize) -> bool {
    let glued = |j: usize, c: char| t.get(j).is_some_and(|x| x.is_punct(c) && x.glued);
    match &t[k].kind {
        Kind::Ident(w) => {
            let jump = [
                "if", "else", "for", "while", "do", "switch", "case", "default", "return", "break",
                "continue", "goto",
            ];
            let call = t.get(k + 1).is_some_and(|x| x.is_punct('('))
                && !is_keyword(w)
                && !w.starts_with("as_")
                && !w.starts_with("convert_");
            jump.contains(&w.as_str()) || call
        }
        Kind::Punct('?' | '!') => true,
        // `<` and `>`, not in `->`, `<<` or `>>`.
        Kind::Punct(c @ ('<' | '>')) => {
            let arrow = *c == '>' && k > 0 && t[k - 1].is_punct('-') && t[k].glued;
            let shift = glued(k + 1, *c) || (k > 0 && t[k - 1].is_punct(*c) && t[k].glued);
            !arrow && !shift
        }
        Kind::Punct('=') => glued(k + 1, '='),
        Kind::Punct(c @ ('&' | '|')) => glued(k + 1, *c),
        _ => false,
    }
}

/// The private variable an assignment at `eq` stores into (`old`, `seen.f`), or `None` for a
/// store through a pointer or into an array, which could carry the value out.
fn private_target(t: &[Tok], eq: usize) -> Option<String> {
    let mut k = eq;
    while k >= 2 && t[k - 1].ident().is_some() && t[k - 2].is_punct('.') {
        k -= 2;
    }
    let name = t.get(k.checked_sub(1)?)?.ident()?;
    let deref = k >= 2 && (t[k - 2].is_punct('*') || t[k - 2].is_punct('>'));
    (!deref).then(|| name.to_string())
}
