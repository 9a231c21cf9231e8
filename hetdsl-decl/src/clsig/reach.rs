//! Where a pointer parameter goes, and whether anything writes through it on the way: the
//! kernel's own statements (`out[i] = x`, `*(out + i) += x`, `(c ? out : tmp)[i] = x`,
//! `((__global int*)out)[i] = 1`, `vstore4(v, i, out)`, `atomic_add(&out[i], 1)`), and
//! every value that comes to hold a pointer into the buffer: a local copy (`q = out + 4`), a
//! struct or an array holding it (`struct View v = { out }; v.p[i] = x`,
//! `ptrs[0] = out; ptrs[0][i] = x`), a function of the source it is passed to (by argument
//! position, however deep the calls go; a kernel called from another kernel counts) and what
//! such a function returns (`*at(out, i) = x`).
//!
//! Each value is followed outwards through the expression around it: subscripts, `->`, `*`
//! and `&` count how many dereferences separate it from the pointer (its depth: a copy of the
//! pointer is at depth 0, an array of such pointers at depth 1), casts, parentheses, `+`, `-`,
//! `?:` and initializer braces keep it. A write is an assignment, compound assignment, `++` or
//! `--` on something at a greater depth, or a pointer built-in that writes the argument.
//!
//! Where the pointer goes somewhere the reader cannot follow (a function neither defined in
//! the source nor a built-in it knows, a store through another pointer, deeper than
//! [`MAX_DEPTH`]), it counts as written: an input that a kernel may write would be lost.
//! Reading is flow-insensitive: a name that ever holds a pointer into the buffer holds it
//! throughout the function.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::lex::Tok;
use super::writes::{
    assigns, is_cast, is_declaration_star, is_unary, member, opener, pre_increment,
};
use super::{Kernel, Written};

mod funcs;
mod syntax;
mod uses;
pub(super) use funcs::{definition, Func};
use syntax::{
    builtin, context, is_keyword, keeps_pointer_after, keeps_pointer_before, returns_old,
    value_used, Builtin, Pairs,
};

/// The deepest holder followed: a pointer in an array of arrays of arrays of pointers. One
/// stored deeper counts as written.
pub(super) const MAX_DEPTH: i64 = 4;

/// Sets each kernel's `written_at` (the kernels at their indices in `funcs`, given as pairs),
/// following the pointers through every function of the source.
pub(super) fn mark_writes(kernels: &mut [Kernel], funcs: &[Func], kernel_funcs: &[(usize, usize)]) {
    let mut reach = Reach::new(funcs);
    for &(k, f) in kernel_funcs {
        let Some(Ok(params)) = kernels.get_mut(k).map(|k| k.params.as_mut()) else { continue };
        for (i, p) in params.iter_mut().enumerate() {
            if p.pointer.is_some() && i < funcs[f].params.len() {
                let facts = reach.solve((f, i, 0));
                (p.written_at, p.atomic_value_at) = (facts.written, facts.atomic_value);
                (p.updates, p.value_read_at) = (facts.updates.into_iter().collect(), facts.read);
            }
        }
    }
}

/// The write the reader finds through `name` in `body` alone (a function of one parameter),
/// for the tests of single statements.
#[cfg(test)]
pub(super) fn body_write(body: &[Tok], name: &str) -> Option<Written> {
    let func = Func { name: String::new(), params: vec![name.to_string()], body: body.to_vec() };
    let funcs = [func];
    Reach::new(&funcs).solve((0, 0, 0)).written
}

/// A function, one of its parameters, and the depth at which that parameter holds a pointer
/// into the buffer followed.
type State = (usize, usize, i64);

/// What a function does with a pointer given to one of its parameters at some depth.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Facts {
    /// A write through it, in the function or in one it passes the pointer to.
    written: Option<Written>,
    /// The depths (bits 0..=MAX_DEPTH) at which the function returns a pointer into it.
    returns: u32,
    /// Where the value an atomic on it returns is used, and the atomic's name.
    atomic_value: Option<(usize, String)>,
    /// Each way an element is updated in place (`+=`, `++`, `atomic_max`), at its first line.
    updates: BTreeMap<String, usize>,
    /// The first read of an element's value outside an update, and the expression read.
    read: Option<(usize, String)>,
}

/// How sure and how near a write is, best first: a write seen before a place the pointer
/// could not be followed, one in the function itself before one in a function it calls, then
/// the earlier line.
fn rank(w: &Written, own: bool) -> (u8, u8, usize) {
    (u8::from(matches!(w, Written::Maybe { .. })), u8::from(!own), w.line())
}

/// The facts of every (function, parameter, depth) reached, found by a worklist: a function
/// whose callee learns more is read again, until nothing changes (recursion included).
struct Reach<'a> {
    funcs: &'a [Func],
    by_name: HashMap<&'a str, Vec<usize>>,
    facts: HashMap<State, Facts>,
    /// The states whose reading used a state's facts.
    readers: HashMap<State, HashSet<State>>,
    queue: Vec<State>,
}

impl<'a> Reach<'a> {
    fn new(funcs: &'a [Func]) -> Self {
        let mut by_name: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, f) in funcs.iter().enumerate() {
            by_name.entry(f.name.as_str()).or_default().push(i);
        }
        Reach { funcs, by_name, facts: HashMap::new(), readers: HashMap::new(), queue: Vec::new() }
    }

    fn solve(&mut self, root: State) -> Facts {
        self.known(root);
        while let Some(state) = self.queue.pop() {
            let found = self.read(state);
            let old = &self.facts[&state];
            let mut merged = old.clone();
            merged.returns |= found.returns;
            merged.atomic_value = merged.atomic_value.or(found.atomic_value);
            merged.read = merged.read.or(found.read);
            for (op, line) in found.updates {
                merged.updates.entry(op).or_insert(line);
            }
            if let Some(w) = found.written {
                let better = match &old.written {
                    None => true,
                    Some(o) => rank(&w, true).0 < rank(o, true).0,
                };
                if better {
                    merged.written = Some(w);
                }
            }
            if merged != *old {
                self.facts.insert(state, merged);
                let readers = self.readers.get(&state).into_iter().flatten();
                self.queue.extend(readers.copied());
            }
        }
        self.facts[&root].clone()
    }

    /// The facts known so far of `state`, queueing it when it is new.
    fn known(&mut self, state: State) -> &Facts {
        let queue = &mut self.queue;
        self.facts.entry(state).or_insert_with(|| {
            queue.push(state);
            Facts::default()
        })
    }

    /// Reads function `f` with parameter `k` holding a pointer at depth `depth`.
    fn read(&mut self, (f, k, depth): State) -> Facts {
        let funcs = self.funcs;
        let func = &funcs[f];
        let mut body = Body {
            toks: &func.body,
            pairs: Pairs::of(&func.body),
            params: &func.params,
            state: (f, k, depth),
            holders: HashMap::new(),
            best: None,
            returns: 0,
            atomic_value: None,
            updates: BTreeMap::new(),
            read: None,
        };
        match func.params.get(k) {
            Some(name) if !name.is_empty() => body.hold(name, Held { depth, member: None }),
            _ => return Facts::default(),
        };
        // Every occurrence of every holder, again whenever a new holder appears.
        let mut seen = 0;
        while body.holders.values().map(HashSet::len).sum::<usize>() != seen {
            seen = body.holders.values().map(HashSet::len).sum();
            for i in 0..func.body.len() {
                let Some(name) = func.body[i].ident() else { continue };
                if member(&func.body, i) {
                    continue;
                }
                let held: Vec<Held> =
                    body.holders.get(name).into_iter().flatten().cloned().collect();
                for h in held {
                    body.follow(self, (i, i + 1), 0, h, func.body[i].line);
                }
            }
        }
        let written = body.best.map(|(w, _)| w);
        let (returns, atomic_value) = (body.returns, body.atomic_value);
        Facts { written, returns, atomic_value, updates: body.updates, read: body.read }
    }
}

/// How a name holds a pointer into the buffer: `depth` dereferences away, and for a struct
/// whose member is known to hold it (`v.p = out`, `{ .p = out }`), that member; other members
/// of the struct are other values.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Held {
    depth: i64,
    member: Option<String>,
}

/// One function's body as it is read for one state: the names holding a pointer into the
/// buffer (and at which depths), and what was found.
struct Body<'t> {
    toks: &'t [Tok],
    pairs: Pairs,
    params: &'t [String],
    state: State,
    holders: HashMap<String, HashSet<Held>>,
    /// The best write found and whether it is the function's own.
    best: Option<(Written, bool)>,
    returns: u32,
    atomic_value: Option<(usize, String)>,
    updates: BTreeMap<String, usize>,
    read: Option<(usize, String)>,
}

impl Body<'_> {
    fn hold(&mut self, name: &str, held: Held) {
        self.holders.entry(name.to_string()).or_default().insert(held);
    }

    fn found(&mut self, w: Written, own: bool) {
        if self.best.as_ref().is_none_or(|(b, o)| rank(&w, own) < rank(b, *o)) {
            self.best = Some((w, own));
        }
    }

    fn maybe(&mut self, line: usize, why: String) {
        self.found(Written::Maybe { line, why }, true);
    }

    /// Follows the value `toks[s..e]` held as `held`, and the values of the calls returning
    /// it, one after the other (calls nested in calls need no stack of their own).
    fn follow(
        &mut self,
        reach: &mut Reach<'_>,
        span: (usize, usize),
        level: i64,
        held: Held,
        line: usize,
    ) {
        let mut work = vec![(span, level, held)];
        while let Some((span, level, held)) = work.pop() {
            self.follow_one(reach, span, level, held, line, &mut work);
        }
    }

    /// Follows the value `toks[s..e]`, which holds a pointer into the buffer `depth - level`
    /// dereferences away (a negative difference: the value is an element), in its `member`
    /// when that is known, outwards through the expression around it; a call returning it
    /// leaves its own value in `work`.
    fn follow_one(
        &mut self,
        reach: &mut Reach<'_>,
        (mut s, mut e): (usize, usize),
        mut level: i64,
        Held { depth, mut member }: Held,
        line: usize,
        work: &mut Vec<((usize, usize), i64, Held)>,
    ) {
        let t = self.toks;
        // A `++` or `--` on an element, before or after it.
        let mut inc = None;
        // The first member named after the value must be the one holding the pointer.
        let other_member = |member: &mut Option<String>, name: Option<&str>| match member.take() {
            Some(m) => Some(m.as_str()) != name,
            None => false,
        };
        loop {
            // Subscripts, members and increments after the value.
            loop {
                match t.get(e) {
                    Some(x) if x.is_punct('[') => {
                        let Some(close) = self.pairs.get(e) else { return };
                        e = close + 1;
                        level += 1;
                    }
                    Some(x)
                        if x.is_punct('-')
                            && t.get(e + 1).is_some_and(|g| g.is_punct('>') && g.glued)
                            && t.get(e + 2).is_some_and(|n| n.ident().is_some()) =>
                    {
                        if other_member(&mut member, t[e + 2].ident()) {
                            return;
                        }
                        e += 3;
                        level += 1;
                    }
                    Some(x)
                        if x.is_punct('.') && t.get(e + 1).is_some_and(|n| n.ident().is_some()) =>
                    {
                        if other_member(&mut member, t[e + 1].ident()) {
                            return;
                        }
                        e += 2;
                    }
                    Some(x)
                        if (x.is_punct('+') || x.is_punct('-'))
                            && t.get(e + 1).is_some_and(|g| g.kind == x.kind && g.glued) =>
                    {
                        e += 2;
                        if level > depth {
                            inc = t[e - 1].text().chars().next();
                            break;
                        }
                        // The pointer itself moves on: `*p++ = v` still writes through it.
                    }
                    _ => break,
                }
            }
            // Dereferences, addresses, casts and increments before it.
            while s > 0 {
                let b = s - 1;
                if t[b].is_punct('*') && is_unary(t, b) && !is_declaration_star(t, b) {
                    level += 1;
                } else if t[b].is_punct('&')
                    && is_unary(t, b)
                    && !(b > 0 && t[b - 1].is_punct('&') && t[b].glued)
                {
                    level -= 1;
                } else if t[b].is_punct(')') && self.pairs.get(b).is_some_and(|o| is_cast(t, o, b))
                {
                    s = self.pairs.get(b).expect("checked");
                    continue;
                } else if pre_increment(t, s) {
                    s -= 2;
                    if level > depth {
                        inc = t[s].text().chars().next();
                        break;
                    }
                    continue;
                } else {
                    break;
                }
                s = b;
            }
            if level > depth {
                return self.element((s, e), inc, line);
            }
            // A pointer into the buffer, or something holding one: what takes it?
            if assigns(t, e) || !keeps_pointer_after(t, e) || !keeps_pointer_before(t, s) {
                return;
            }
            let Some((at, commas, designated)) = context(t, &self.pairs, s) else { return };
            if designated.is_some() {
                member = designated;
            }
            let c = &t[at];
            if c.is_punct('=') {
                return self.stored(at, Held { depth: depth - level, member }, line);
            }
            if c.ident() == Some("return") {
                if commas == 0 {
                    self.returned(depth - level, line);
                }
                return;
            }
            let Some(close) = self.pairs.get(at) else { return };
            if c.is_punct('{') {
                if (at + 1..close).any(|k| t[k].is_punct(';')) {
                    return; // A block: the value was a statement of its own.
                }
                // An initializer or a compound literal holds it as the value itself does.
                (s, e) = (at, close + 1);
                continue;
            }
            // `(`: a group, or a call's argument list.
            let callee = at.checked_sub(1).and_then(|k| t[k].ident().map(|n| (k, n)));
            match callee {
                Some((_, "return" | "case" | "else" | "do")) | None => {
                    if at > 0 && t[at - 1].is_punct(']') {
                        return;
                    }
                    (s, e) = (at, close + 1);
                }
                Some((_, n)) if is_keyword(n) => return,
                Some((k, name)) => {
                    let used = value_used(t, &self.pairs, k, close);
                    match self.called(reach, (name, used, k), commas, depth - level, line) {
                        Call::Done => return,
                        // The call's value is the pointer itself, or what the callee returns.
                        Call::Keeps => (s, e) = (k, close + 1),
                        Call::Returns(depths) => {
                            for depth in depths {
                                work.push(((k, close + 1), 0, Held { depth, member: None }));
                            }
                            return;
                        }
                    }
                }
            }
        }
    }

    /// `lhs = <value holding the pointer as held>` with the `=` at `at`: the name the left
    /// side starts from holds it, deeper by the left side's own dereferences, in the left
    /// side's first member if it names one.
    fn stored(&mut self, at: usize, held: Held, line: usize) {
        let t = self.toks;
        let (mut k, mut level) = (at, 0);
        let mut member = held.member;
        let (mut through, mut subscripted) = (None, false);
        loop {
            if k >= 1 && t[k - 1].is_punct(']') {
                let Some(o) = opener(t, k - 1) else { return };
                k = o;
                level += 1;
                subscripted = true;
            } else if k >= 2 && t[k - 1].ident().is_some() && t[k - 2].is_punct('.') {
                member = t[k - 1].ident().map(str::to_string);
                k -= 2;
            } else if k >= 3
                && t[k - 1].ident().is_some()
                && t[k - 2].is_punct('>')
                && t[k - 2].glued
                && t[k - 3].is_punct('-')
            {
                k -= 3;
                level += 1;
                through = Some("->");
            } else {
                break;
            }
        }
        let lhs = || (k.saturating_sub(1)..at).map(|j| t[j].text()).collect::<String>();
        let Some(base) = k.checked_sub(1).and_then(|b| t[b].ident()) else {
            let why = "a pointer into it is stored through an expression the reader does not \
                       follow";
            return self.maybe(line, why.to_string());
        };
        let mut b = k - 1;
        while b >= 1 && t[b - 1].is_punct('*') && is_unary(t, b - 1) {
            if is_declaration_star(t, b - 1) {
                break;
            }
            level += 1;
            through = Some("*");
            b -= 1;
        }
        if through.is_some() || (subscripted && self.params.iter().any(|p| p == base)) {
            let text = format!("{}{}", "*".repeat(k - 1 - b), lhs());
            let why = format!(
                "a pointer into it is stored through `{text}`, into memory the reader does not \
                 follow"
            );
            return self.maybe(line, why);
        }
        let depth = level + held.depth;
        if depth > MAX_DEPTH {
            let why = format!(
                "a pointer into it is stored in `{base}`, more than {MAX_DEPTH} dereferences \
                 deep, further than the reader follows"
            );
            return self.maybe(line, why);
        }
        self.hold(base, Held { depth, member });
    }

    fn returned(&mut self, depth: i64, line: usize) {
        if (0..=MAX_DEPTH).contains(&depth) {
            self.returns |= 1 << depth;
        } else if depth > MAX_DEPTH {
            let why = "a pointer into it is returned deeper than the reader follows".to_string();
            self.maybe(line, why);
        }
    }

    /// A pointer at `depth` given as argument `arg` of a call to `name` (at token `k`), whose
    /// value is `used` or not.
    fn called(
        &mut self,
        reach: &mut Reach<'_>,
        (name, used, k): (&str, bool, usize),
        arg: usize,
        depth: i64,
        line: usize,
    ) -> Call {
        let funcs = reach.funcs;
        if let Some(defs) = reach.by_name.get(name).cloned() {
            let mut returns = 0u32;
            for g in defs {
                if funcs[g].params.get(arg).is_none_or(|p| p.is_empty()) {
                    continue;
                }
                if depth > MAX_DEPTH {
                    let why = format!(
                        "a pointer into it is passed to `{name}` deeper than the reader follows"
                    );
                    self.maybe(line, why);
                    continue;
                }
                let callee = (g, arg, depth);
                reach.readers.entry(callee).or_default().insert(self.state);
                let facts = reach.known(callee).clone();
                if let Some(w) = facts.written {
                    self.found(w, false);
                }
                self.atomic_value = self.atomic_value.take().or(facts.atomic_value);
                self.read = self.read.take().or(facts.read);
                for (op, line) in facts.updates {
                    self.updates.entry(op).or_insert(line);
                }
                returns |= facts.returns;
            }
            let depths = (0..=MAX_DEPTH).filter(|d| returns & (1 << d) != 0).collect::<Vec<_>>();
            return if depths.is_empty() { Call::Done } else { Call::Returns(depths) };
        }
        match builtin(name, arg) {
            Builtin::Writes if depth == 0 => {
                self.found(Written::At(line), true);
                if arg == 0 && returns_old(name) {
                    self.updates.entry(name.to_string()).or_insert(line);
                    if used && self.atomic_value.is_none() {
                        self.atomic_value = Some((line, name.to_string()));
                    }
                }
            }
            Builtin::Reads
                if depth == 0 && (name.starts_with("vload") || name.starts_with("atomic_load")) =>
            {
                let end = self.pairs.get(k + 1).map_or(k + 1, |c| c + 1);
                self.read_value(k, (k, end), line);
            }
            Builtin::Reads => {}
            Builtin::Keeps => return Call::Keeps,
            _ => {
                let why = format!(
                    "a pointer into it is passed to `{name}`, which is neither defined in the \
                     source nor a built-in the reader knows"
                );
                self.maybe(line, why);
                if self.read.is_none() {
                    self.read =
                        Some((line, format!("`{name}(…)`, which the reader cannot follow")));
                }
            }
        }
        Call::Done
    }
}

/// What a call does with a pointer argument, for the value the call is.
enum Call {
    /// Nothing more to follow.
    Done,
    /// The call's value is the argument (`to_global(p)`).
    Keeps,
    /// The callee returns a pointer into the buffer at these depths.
    Returns(Vec<i64>),
}

#[cfg(test)]
mod tests;
