//! Macro expansion as the compiler does it: object-like and function-like `#define`s, with
//! arguments expanded before they are substituted, `#` (stringizing), `##` (pasting), variadic
//! macros, and the result rescanned, each token remembering which macros made it (a "hide
//! set", as Prosser's algorithm has it) so that a macro never expands inside itself.
//!
//! Function-like macros matter beyond declarations: `#define STORE(p, i, v) p[i] = v` writes
//! the buffer passed to it, and only its expansion shows the kernel's writes as the compiler
//! sees them.

use std::collections::HashMap;
use std::rc::Rc;

use super::lex::{self, Kind, Raw, Tok};
use super::ParseError;

/// Macro expansion stops with an error past this many expansion steps, so a self-multiplying
/// set of `#define`s (`#define A B B`, `#define B C C`, …) cannot exhaust time or memory.
const MAX_STEPS: usize = 1 << 20;

/// Macros nested deeper than this are refused (a chain of `#define A1 A0`, `#define A2 A1`, …
/// or arguments nested in arguments), so hostile input cannot exhaust the stack.
const MAX_DEPTH: usize = 200;

/// A function-like macro: its parameters (the variadic one last, named `__VA_ARGS__` unless
/// the GNU `name...` spelling named it) and its replacement list.
pub(super) struct FnMacro {
    params: Vec<String>,
    variadic: bool,
    body: Vec<Tok>,
}

/// The macros in force.
#[derive(Default)]
pub(super) struct Macros {
    pub object: HashMap<String, Vec<Tok>>,
    pub function: HashMap<String, FnMacro>,
}

impl Macros {
    pub fn defined(&self, name: &str) -> bool {
        self.object.contains_key(name) || self.function.contains_key(name)
    }

    /// Applies `#define NAME …` or `#undef NAME` (`args`: the tokens after the keyword). A
    /// function-like macro is `NAME(` with no space before the parenthesis.
    pub fn apply(&mut self, kw: &str, args: &[Tok], line: usize) -> Result<(), ParseError> {
        let Some(name) = args.first().and_then(Tok::ident).map(str::to_string) else {
            return Ok(());
        };
        self.object.remove(&name);
        self.function.remove(&name);
        if kw != "define" {
            return Ok(());
        }
        let body = &args[1..];
        if !body.first().is_some_and(|t| t.is_punct('(') && t.glued) {
            self.object.insert(name, body.to_vec());
            return Ok(());
        }
        let (params, variadic, used) = parameters(body)
            .map_err(|why| ParseError::new(line, format!("`#define {name}(…)`: {why}")))?;
        self.function.insert(name, FnMacro { params, variadic, body: body[used..].to_vec() });
        Ok(())
    }
}

/// The parameter list at the start of `toks` (its `(` first): the names, whether the last one
/// takes the variable arguments, and how many tokens the list spans.
fn parameters(toks: &[Tok]) -> Result<(Vec<String>, bool, usize), String> {
    let ellipsis = |at: usize| (0..3).all(|k| toks.get(at + k).is_some_and(|t| t.is_punct('.')));
    let mut params = Vec::new();
    if toks.get(1).is_some_and(|t| t.is_punct(')')) {
        return Ok((params, false, 2));
    }
    let mut i = 1;
    loop {
        let variadic = if ellipsis(i) {
            params.push("__VA_ARGS__".to_string());
            i += 3;
            true
        } else if let Some(name) = toks.get(i).and_then(Tok::ident) {
            params.push(name.to_string());
            i += 1;
            ellipsis(i) && {
                i += 3;
                true
            }
        } else {
            return Err("expected a parameter name".into());
        };
        match toks.get(i) {
            Some(t) if t.is_punct(')') => return Ok((params, variadic, i + 1)),
            Some(t) if t.is_punct(',') && !variadic => i += 1,
            _ => return Err("expected `,` or `)` in the parameter list".into()),
        }
    }
}

/// The names of the macros a token came out of, innermost first: a persistent list, shared by
/// every token of one expansion.
#[derive(Clone, Default)]
struct Hide(Option<Rc<HideNode>>);

struct HideNode {
    name: Rc<str>,
    next: Hide,
    len: usize,
}

impl Hide {
    fn contains(&self, name: &str) -> bool {
        let mut at = &self.0;
        while let Some(node) = at {
            if &*node.name == name {
                return true;
            }
            at = &node.next.0;
        }
        false
    }

    fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |n| n.len)
    }

    fn with(&self, name: &Rc<str>, line: usize) -> Result<Hide, ParseError> {
        if self.len() >= MAX_DEPTH {
            return Err(ParseError::new(line, "macros nested too deeply"));
        }
        let node = HideNode { name: name.clone(), next: self.clone(), len: self.len() + 1 };
        Ok(Hide(Some(Rc::new(node))))
    }
}

#[derive(Clone)]
struct HTok {
    tok: Tok,
    hide: Hide,
}

/// Expands the macros in `input` (with the function-like ones only when `functions`), adding
/// the result to `out`. `steps` counts the work done across calls, for [`MAX_STEPS`].
pub(super) fn expand(
    input: Vec<Tok>,
    macros: &Macros,
    functions: bool,
    steps: &mut usize,
    out: &mut Vec<Tok>,
) -> Result<(), ParseError> {
    let input = input.into_iter().map(|tok| HTok { tok, hide: Hide::default() }).collect();
    let mut ex = Expander { macros, functions, steps };
    out.extend(ex.run(input, 0)?.into_iter().map(|t| t.tok));
    Ok(())
}

struct Expander<'a> {
    macros: &'a Macros,
    functions: bool,
    steps: &'a mut usize,
}

/// One piece of a replacement list.
enum Piece<'a> {
    Tok(&'a Tok),
    /// The argument of the parameter at this index.
    Arg(usize),
    /// `#param`: the argument spelled as a string literal.
    Str(usize),
    /// `##`: the tokens on either side become one.
    Paste,
}

impl Expander<'_> {
    fn step(&mut self, n: usize, line: usize) -> Result<(), ParseError> {
        *self.steps += n;
        if *self.steps > MAX_STEPS {
            return Err(ParseError::new(line, "macro expansion takes too many steps"));
        }
        Ok(())
    }

    /// `input` fully expanded: what a macro produces is read again, before what follows it.
    fn run(&mut self, input: Vec<HTok>, depth: usize) -> Result<Vec<HTok>, ParseError> {
        let mut stack = input;
        stack.reverse();
        let mut out = Vec::new();
        while let Some(t) = stack.pop() {
            let line = t.tok.line;
            self.step(1, line)?;
            let name = match t.tok.ident() {
                Some(name) if !t.hide.contains(name) => name,
                _ => {
                    out.push(t);
                    continue;
                }
            };
            let rc: Rc<str> = name.into();
            let hide = t.hide.with(&rc, line)?;
            let produced = if let Some(body) = self.macros.object.get(name) {
                let pieces = pieces(body, &[], false);
                self.substitute(&pieces, &[], &[], &hide, &rc, line)?
            } else if let Some(m) = self.macros.function.get(name).filter(|_| self.functions) {
                if !stack.last().is_some_and(|n| n.tok.is_punct('(')) {
                    // A function-like macro's name without arguments is no invocation.
                    out.push(t);
                    continue;
                }
                if depth >= MAX_DEPTH {
                    return Err(ParseError::new(line, "macros nested too deeply"));
                }
                let raw = self.arguments(&mut stack, m, name, line)?;
                let pieces = pieces(&m.body, &m.params, true);
                let mut expanded = Vec::with_capacity(raw.len());
                for (k, arg) in raw.iter().enumerate() {
                    // Only an argument used beside neither `#` nor `##` is expanded first.
                    let plain = (0..pieces.len()).any(|i| {
                        matches!(pieces[i], Piece::Arg(a) if a == k)
                            && !(i > 0 && matches!(pieces[i - 1], Piece::Paste))
                            && !matches!(pieces.get(i + 1), Some(Piece::Paste))
                    });
                    expanded.push(if plain { self.run(arg.clone(), depth + 1)? } else { vec![] });
                }
                self.substitute(&pieces, &raw, &expanded, &hide, &rc, line)?
            } else {
                out.push(t);
                continue;
            };
            // The expansion stands apart from what follows it: `M(x)-1` never reads as `--`.
            if let Some(next) = stack.last_mut() {
                next.tok.glued = false;
            }
            stack.extend(produced.into_iter().rev());
        }
        Ok(out)
    }

    /// Takes the arguments of an invocation of `m` (its `(` next on `stack`), split at the
    /// top-level commas, the variable ones joined into the last.
    fn arguments(
        &mut self,
        stack: &mut Vec<HTok>,
        m: &FnMacro,
        name: &str,
        line: usize,
    ) -> Result<Vec<Vec<HTok>>, ParseError> {
        stack.pop();
        let mut args: Vec<Vec<HTok>> = vec![Vec::new()];
        let mut depth = 0usize;
        loop {
            let Some(t) = stack.pop() else {
                return Err(ParseError::new(
                    line,
                    format!(
                        "the arguments of the macro `{name}` have no `)` before the end of the \
                         file or the next `#define`"
                    ),
                ));
            };
            self.step(1, line)?;
            match t.tok.kind {
                Kind::Punct('(') => depth += 1,
                Kind::Punct(')') if depth == 0 => break,
                Kind::Punct(')') => depth -= 1,
                Kind::Punct(',') if depth == 0 && !(m.variadic && args.len() >= m.params.len()) => {
                    args.push(Vec::new());
                    continue;
                }
                _ => {}
            }
            args.last_mut().expect("one argument at least").push(t);
        }
        let n = m.params.len();
        if n == 0 && args.len() == 1 && args[0].is_empty() {
            args.clear();
        }
        if m.variadic && args.len() + 1 == n {
            args.push(Vec::new());
        }
        if args.len() != n {
            return Err(ParseError::new(
                line,
                format!("the macro `{name}` takes {n} arguments, {} given", args.len()),
            ));
        }
        Ok(args)
    }

    /// The replacement list `pieces` with the arguments in place (`raw` beside `#` and `##`,
    /// `expanded` elsewhere), every token at the invocation's `line`.
    fn substitute(
        &mut self,
        pieces: &[Piece],
        raw: &[Vec<HTok>],
        expanded: &[Vec<HTok>],
        hide: &Hide,
        name: &Rc<str>,
        line: usize,
    ) -> Result<Vec<HTok>, ParseError> {
        let mut out: Vec<HTok> = Vec::new();
        // `##` waits for its right operand; an empty left operand pastes nothing.
        let (mut paste, mut left_full) = (false, false);
        let mut after_arg = true;
        for (i, piece) in pieces.iter().enumerate() {
            let pasted = (i > 0 && matches!(pieces[i - 1], Piece::Paste))
                || matches!(pieces.get(i + 1), Some(Piece::Paste));
            let mut toks: Vec<HTok> = match piece {
                Piece::Paste => {
                    paste = left_full;
                    continue;
                }
                Piece::Tok(t) => {
                    let tok = Tok { kind: t.kind.clone(), line, glued: t.glued && !after_arg };
                    vec![HTok { tok, hide: hide.clone() }]
                }
                Piece::Arg(a) => {
                    let from = if pasted { &raw[*a] } else { &expanded[*a] };
                    let mut toks = Vec::with_capacity(from.len());
                    for t in from {
                        let tok = Tok { line, ..t.tok.clone() };
                        toks.push(HTok { tok, hide: t.hide.with(name, line)? });
                    }
                    toks
                }
                Piece::Str(a) => {
                    let tok = Tok { kind: Kind::Number(stringize(&raw[*a])), line, glued: false };
                    vec![HTok { tok, hide: hide.clone() }]
                }
            };
            self.step(toks.len(), line)?;
            after_arg = !matches!(piece, Piece::Tok(_));
            if let Some(first) = toks.first_mut().filter(|_| after_arg) {
                first.tok.glued = false;
            }
            if toks.is_empty() {
                left_full &= paste;
                paste = false;
                continue;
            }
            if std::mem::take(&mut paste) {
                let left = out.pop().expect("a left operand");
                let right = toks.remove(0);
                out.extend(paste_pair(left, &right)?);
            }
            out.extend(toks);
            left_full = true;
        }
        if let Some(first) = out.first_mut() {
            first.tok.glued = false;
        }
        Ok(out)
    }
}

/// A replacement list cut into pieces; `#` stringizes only in a function-like macro.
fn pieces<'a>(body: &'a [Tok], params: &[String], function: bool) -> Vec<Piece<'a>> {
    let param =
        |t: Option<&Tok>| t.and_then(Tok::ident).and_then(|n| params.iter().position(|p| p == n));
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(t) = body.get(i) {
        let next = body.get(i + 1);
        if t.is_punct('#') && next.is_some_and(|n| n.is_punct('#') && n.glued) {
            out.push(Piece::Paste);
            i += 2;
            continue;
        }
        match (t.is_punct('#') && function, param(Some(t)), param(next)) {
            (true, _, Some(k)) => {
                out.push(Piece::Str(k));
                i += 2;
                continue;
            }
            (_, Some(k), _) => out.push(Piece::Arg(k)),
            _ => out.push(Piece::Tok(t)),
        }
        i += 1;
    }
    out
}

/// `left ## right`: the spelling of both, read again as tokens.
fn paste_pair(left: HTok, right: &HTok) -> Result<Vec<HTok>, ParseError> {
    let line = left.tok.line;
    let text = left.tok.text() + &right.tok.text();
    let mut toks = Vec::new();
    for raw in lex::scan(&text)? {
        match raw {
            Raw::Tok(t) => toks.push(t),
            Raw::Directive(d, _) => {
                toks.push(Tok { kind: Kind::Punct('#'), line, glued: false });
                toks.extend(d);
            }
        }
    }
    let mut out: Vec<HTok> = toks
        .into_iter()
        .map(|t| HTok { tok: Tok { line, ..t }, hide: left.hide.clone() })
        .collect();
    if let Some(first) = out.first_mut() {
        first.tok.glued = left.tok.glued;
    }
    Ok(out)
}

/// `#arg`: the argument's spelling as a string literal, quotes and backslashes escaped.
fn stringize(arg: &[HTok]) -> String {
    let mut s = String::from("\"");
    for (i, t) in arg.iter().enumerate() {
        if i > 0 && !t.tok.glued {
            s.push(' ');
        }
        for c in t.tok.text().chars() {
            if matches!(c, '"' | '\\') {
                s.push('\\');
            }
            s.push(c);
        }
    }
    s.push('"');
    s
}

#[cfg(test)]
mod tests {
    use super::super::lex::{tokens, Tok};

    fn words(text: &str) -> Vec<String> {
        tokens(text, &[]).unwrap().iter().map(Tok::text).collect()
    }

    fn spelled(text: &str) -> String {
        words(text).concat()
    }

    #[test]
    fn function_like_macros_substitute_their_arguments() {
        let src = "#define STORE(p, i, v) p[i] = v\nSTORE(out, gid, (float2)(a, b).x);";
        assert_eq!(spelled(src), "out[gid]=(float2)(a,b).x;");
        // Arguments are expanded first; the result is read again for more macros.
        let src =
            "#define N 4\n#define SQ(x) ((x) * (x))\n#define TWICE(f, x) f(f(x))\nTWICE(SQ, N)";
        assert_eq!(spelled(src), "((((4)*(4)))*(((4)*(4))))");
        // Without `(` the name is no invocation; with no parameters `()` is one.
        assert_eq!(words("#define F(x) x\n#define G() g\nF + G()"), ["F", "+", "g"]);
    }

    #[test]
    fn stringizing_pasting_and_variable_arguments() {
        assert_eq!(words("#define S(x) #x\nS(a  +\"q\")"), ["\"a +\\\"q\\\"\""]);
        assert_eq!(words("#define CAT(a, b) a ## b\nCAT(get_, global_id)(0)")[0], "get_global_id");
        assert_eq!(words("#define CAT(a, b) a ## b\nCAT(, x) CAT(y, )"), ["x", "y"]);
        let src = "#define CALL(f, ...) f(__VA_ARGS__)\n#define G(args...) g(args)\nCALL(h, 1, 2) G(3, 4)";
        assert_eq!(spelled(src), "h(1,2)g(3,4)");
    }

    #[test]
    fn expansions_stand_apart_from_their_neighbours() {
        // `-NEG(1)` is `- -1`, never a decrement; `P++` keeps its `++`.
        let toks = tokens("#define NEG(x) -x\n-NEG(-1)", &[]).unwrap();
        let glued: Vec<bool> = toks.iter().map(|t| t.glued).collect();
        assert_eq!(glued, [false, false, false, true], "{toks:?}");
        let toks = tokens("#define P p[0]\nP++", &[]).unwrap();
        assert!(!toks[4].glued && toks[5].glued);
    }

    #[test]
    fn macros_never_expand_inside_themselves() {
        assert_eq!(words("#define f(x) f(x + 1)\nf(2)"), ["f", "(", "2", "+", "1", ")"]);
        let src = "#define F(x) G(x)\n#define G(x) F(x)\nF(1)";
        assert_eq!(words(src), ["F", "(", "1", ")"]);
    }

    #[test]
    fn malformed_invocations_are_errors_at_their_line() {
        let err = tokens("#define F(a, b) a\n\nF(1)", &[]).unwrap_err();
        assert_eq!(err.line, 2);
        assert!(err.message.contains("takes 2 arguments, 1 given"), "{err}");
        let err = tokens("#define F(a) a\nF(1\n", &[]).unwrap_err();
        assert!(err.message.contains("no `)`"), "{err}");
        assert!(tokens("#define F(a b) a\n", &[]).is_err());
        // Arguments nested without end, or multiplying, stop with an error.
        let deep = format!("#define F(x) x\n{}1{}", "F(".repeat(500), ")".repeat(500));
        assert!(tokens(&deep, &[]).is_err());
        let mut text = String::from("#define D0(x) x x\n");
        for i in 1..40 {
            text += &format!("#define D{i}(x) D{}(x) D{}(x)\n", i - 1, i - 1);
        }
        assert!(tokens(&(text + "D39(1)"), &[]).is_err());
    }

    #[test]
    fn arguments_may_span_lines_and_take_the_invocation_s_line() {
        let toks =
            tokens("#define F(p, v) p[0] = v\n\nF(out,\n#if 1\n  2)\n#endif\n", &[]).unwrap();
        let words: Vec<String> = toks.iter().map(Tok::text).collect();
        assert_eq!(words, ["out", "[", "0", "]", "=", "2"]);
        assert!(toks.iter().all(|t| t.line == 2));
    }
}
