//! The token-level questions the reach of a pointer asks of a function's body: what a built-in
//! does with a pointer argument, which brackets pair, and what surrounds an expression.

use super::super::lex::{Kind, Tok};
use super::super::writes::opener;

/// What a built-in does with a pointer given as argument `arg`.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Builtin {
    Writes,
    Reads,
    /// Returns it (an address-space conversion).
    Keeps,
    Unknown,
}

pub(super) fn builtin(name: &str, arg: usize) -> Builtin {
    let by = |writes: bool| if writes { Builtin::Writes } else { Builtin::Reads };
    if name.starts_with("atomic_compare_exchange") {
        // The object, and `expected`, which receives the value found on failure.
        return by(arg <= 1);
    }
    if name.starts_with("atomic_load") || name == "atomic_flag_test" {
        return Builtin::Reads;
    }
    if name.starts_with("atomic_") || name.starts_with("atom_") {
        return by(arg == 0);
    }
    if name.starts_with("async_work_group") {
        return by(arg == 0);
    }
    if name.starts_with("vstore") {
        return by(arg == 2);
    }
    match name {
        // The result through the last argument.
        "fract" | "frexp" | "lgamma_r" | "modf" | "sincos" => by(arg == 1),
        "remquo" => by(arg == 2),
        "read_pipe" => by(arg >= 1),
        "to_global" | "to_local" | "to_private" => Builtin::Keeps,
        "prefetch" | "printf" | "wait_group_events" | "write_pipe" | "get_fence" => Builtin::Reads,
        n if n.starts_with("vload") => Builtin::Reads,
        _ => Builtin::Unknown,
    }
}

/// Whether a built-in that writes its first argument returns the value it found there: every
/// read-modify-write atomic, not a store.
pub(super) fn returns_old(name: &str) -> bool {
    let store = ["atomic_store", "atomic_init", "atomic_flag_clear"];
    (name.starts_with("atomic_") || name.starts_with("atom_"))
        && !store.iter().any(|s| name.starts_with(s))
}

/// Whether the value of the call named at `k`, whose `)` is at `close`, is used: anything but
/// a statement of its own (`atomic_inc(p);`, also after a condition, `else`, `do` or `(void)`)
/// or a compare-and-swap's retry (in a `while` condition, or an `if` that only breaks or
/// continues: a float `atomic_add` built on `atomic_cmpxchg`).
pub(super) fn value_used(t: &[Tok], pairs: &Pairs, k: usize, close: usize) -> bool {
    if let Some(open) = condition(t, pairs, k) {
        let keyword = t[open - 1].ident();
        let after = pairs.get(open).and_then(|c| t.get(c + 1)).and_then(Tok::ident);
        if keyword == Some("while") || matches!(after, Some("break" | "continue")) {
            return false;
        }
    }
    if !t.get(close + 1).is_some_and(|x| x.is_punct(';')) {
        return true;
    }
    let Some(b) = k.checked_sub(1) else { return false };
    match &t[b].kind {
        Kind::Punct(';' | '{' | '}') => false,
        Kind::Ident(w) => !matches!(w.as_str(), "else" | "do"),
        Kind::Punct(')') => !pairs.get(b).is_some_and(|o| {
            let control =
                o > 0 && t[o - 1].ident().is_some_and(|w| matches!(w, "if" | "while" | "for"));
            control || (o + 2 == b && t[o + 1].ident() == Some("void"))
        }),
        _ => true,
    }
}

/// The `(` of the `if` or `while` condition the token at `k` is in, if it is in one.
fn condition(t: &[Tok], pairs: &Pairs, k: usize) -> Option<usize> {
    let mut j = k;
    while j > 0 {
        j -= 1;
        match t[j].kind {
            Kind::Punct(')' | ']') => j = pairs.get(j)?,
            Kind::Punct('(') if j > 0 => {
                if matches!(t[j - 1].ident(), Some("if" | "while")) {
                    return Some(j);
                }
            }
            Kind::Punct(';' | '{' | '}') => return None,
            _ => {}
        }
    }
    None
}

/// C keywords that take a parenthesized expression without calling anything.
pub(super) fn is_keyword(name: &str) -> bool {
    matches!(
        name,
        "if" | "while"
            | "for"
            | "switch"
            | "sizeof"
            | "vec_step"
            | "__attribute__"
            | "_Alignof"
            | "__alignof__"
            | "defined"
    )
}

/// Does the token at `e`, after a pointer value, leave the value a pointer (`p + i`, `c ? p :
/// q`, the end of an argument or statement) rather than compare or test it?
pub(super) fn keeps_pointer_after(t: &[Tok], e: usize) -> bool {
    match t.get(e).map(|x| &x.kind) {
        None => true,
        Some(Kind::Punct(c)) => match c {
            '+' | '-' => !t.get(e + 1).is_some_and(|g| g.is_punct(*c) && g.glued),
            ':' | ')' | ']' | '}' | ',' | ';' => true,
            _ => false,
        },
        Some(_) => false,
    }
}

/// As [`keeps_pointer_after`], for the token before a value starting at `s`.
pub(super) fn keeps_pointer_before(t: &[Tok], s: usize) -> bool {
    let Some(b) = s.checked_sub(1) else { return true };
    match &t[b].kind {
        Kind::Ident(w) => w == "return",
        Kind::Punct('(' | '{' | ',' | '?' | ':' | '+' | '-' | ';' | '}') => true,
        // An assignment, not a comparison (`==`, `<=`, `!=`, `>=`).
        Kind::Punct('=') => {
            !(b >= 1 && t[b].glued && matches!(t[b - 1].kind, Kind::Punct('=' | '<' | '>' | '!')))
        }
        _ => false,
    }
}

/// Each bracket's partner in a body, found once: following a value out of calls nested in
/// calls looks up each closer rather than scanning for it.
pub(super) struct Pairs(Vec<usize>);

impl Pairs {
    pub(super) fn of(t: &[Tok]) -> Pairs {
        let mut pairs = vec![usize::MAX; t.len()];
        let mut open = Vec::new();
        for (k, tok) in t.iter().enumerate() {
            match tok.kind {
                Kind::Punct('(' | '[' | '{') => open.push(k),
                Kind::Punct(')' | ']' | '}') => {
                    if let Some(o) = open.pop() {
                        (pairs[o], pairs[k]) = (k, o);
                    }
                }
                _ => {}
            }
        }
        Pairs(pairs)
    }

    /// The partner of the bracket at `k`.
    pub(super) fn get(&self, k: usize) -> Option<usize> {
        self.0.get(k).copied().filter(|&p| p != usize::MAX)
    }
}

/// What takes the value starting at `s`: the index of the nearest `=` (an assignment), `(`,
/// `{` or `return` it is inside of, how many commas of that level separate it from the value
/// (its argument position), and the member a designator (`.p = `) puts it in. `None` at the
/// start of a statement, inside a subscript or after a compound assignment.
pub(super) fn context(
    t: &[Tok],
    pairs: &Pairs,
    s: usize,
) -> Option<(usize, usize, Option<String>)> {
    let (mut j, mut commas, mut designated) = (s, 0, None);
    while j > 0 {
        j -= 1;
        match &t[j].kind {
            Kind::Punct(')' | ']') => j = pairs.get(j)?,
            Kind::Punct('}') => {
                // An initializer before the value (`{ {1, 2}, p }`); a block ends the statement.
                let o = pairs.get(j)?;
                if (o + 1..j).any(|k| t[k].is_punct(';')) {
                    return None;
                }
                j = o;
            }
            Kind::Punct(';' | '[') => return None,
            Kind::Punct(',') => commas += 1,
            Kind::Punct('(' | '{') => return Some((j, commas, designated)),
            Kind::Punct('=') if designator(t, j).is_some() => {
                // `{ .p = out }`, `{ [1] = out }`: the initializer holds the value.
                let start = designator(t, j).expect("checked");
                if t[start].is_punct('.') && commas == 0 {
                    designated = t[start + 1].ident().map(str::to_string);
                }
                j = start;
            }
            Kind::Punct('=') => {
                let glued_before = t[j].glued && j >= 1;
                if glued_before && matches!(t[j - 1].kind, Kind::Punct('=' | '<' | '>' | '!')) {
                    continue; // A comparison.
                }
                if glued_before && matches!(t[j - 1].kind, Kind::Punct(_)) {
                    return None; // `+=` and the like: arithmetic on what is there.
                }
                if t.get(j + 1).is_some_and(|n| n.is_punct('=') && n.glued) {
                    continue;
                }
                return Some((j, commas, designated));
            }
            Kind::Ident(w) if w == "return" => return Some((j, commas, designated)),
            Kind::Ident(w) if w == "case" => return None,
            _ => {}
        }
    }
    None
}

/// The start of the designator (`.p`, `[1]`, `.a[2].b`) before the `=` at `eq`, when the
/// `=` is an initializer's and not an assignment.
fn designator(t: &[Tok], eq: usize) -> Option<usize> {
    let mut k = eq;
    loop {
        if k >= 1 && t[k - 1].is_punct(']') {
            k = opener(t, k - 1)?;
        } else if k >= 2 && t[k - 1].ident().is_some() && t[k - 2].is_punct('.') {
            k -= 2;
        } else {
            break;
        }
    }
    let opens = k >= 1 && (t[k - 1].is_punct('{') || t[k - 1].is_punct(','));
    (k < eq && opens && enclosing(t, k).is_some_and(|o| t[o].is_punct('{'))).then_some(k)
}

/// The unmatched opener before `at`.
fn enclosing(t: &[Tok], at: usize) -> Option<usize> {
    let mut j = at;
    while j > 0 {
        j -= 1;
        match t[j].kind {
            Kind::Punct(')' | ']' | '}') => j = opener(t, j)?,
            Kind::Punct('(' | '[' | '{') => return Some(j),
            _ => {}
        }
    }
    None
}
