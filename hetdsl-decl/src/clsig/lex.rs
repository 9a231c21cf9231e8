//! Tokens of OpenCL C, enough to read declarations: identifiers, numbers, punctuation, and the
//! preprocessor's object-like `#define`s expanded in place. Comments, string and character
//! literals are dropped; every other directive (`#include` is already resolved, `#if` is not
//! evaluated) is ignored.

use std::collections::{HashMap, HashSet};

use super::ParseError;

/// One token and the 0-based line of the flattened source it came from (for a macro's
/// expansion, the line where the macro was used).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tok {
    pub kind: Kind,
    pub line: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    Ident(String),
    Number(String),
    Punct(char),
}

impl Tok {
    pub fn ident(&self) -> Option<&str> {
        match &self.kind {
            Kind::Ident(s) => Some(s),
            _ => None,
        }
    }
    pub fn is_punct(&self, c: char) -> bool {
        self.kind == Kind::Punct(c)
    }
    pub fn text(&self) -> String {
        match &self.kind {
            Kind::Ident(s) | Kind::Number(s) => s.clone(),
            Kind::Punct(c) => c.to_string(),
        }
    }
}

/// Macro expansion stops with an error past this many expansion steps, so a self-multiplying
/// set of `#define`s (`#define A B B`, `#define B C C`, …) cannot exhaust time or memory.
const MAX_STEPS: usize = 1 << 20;

/// Macros nested deeper than this are refused (a chain of `#define A1 A0`, `#define A2 A1`, …
/// would otherwise overflow the stack of the recursive expansion).
const MAX_DEPTH: usize = 200;

/// Tokenize `text` and expand object-like macros, in source order (a macro applies from its
/// `#define` to its `#undef`).
pub fn tokens(text: &str) -> Result<Vec<Tok>, ParseError> {
    let raw = scan(text)?;
    expand(raw)
}

/// A token or a directive (its tokens after the `#`).
enum Raw {
    Tok(Tok),
    Directive(Vec<Tok>),
}

fn scan(text: &str) -> Result<Vec<Raw>, ParseError> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut directive: Option<Vec<Tok>> = None;
    let mut line = 0usize;
    let mut at_line_start = true;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        // A backslash-newline joins lines (inside directives, mostly).
        if c == '\\' && chars.get(i + 1) == Some(&'\n') {
            line += 1;
            i += 2;
            continue;
        }
        if c == '\n' {
            if let Some(d) = directive.take() {
                out.push(Raw::Directive(d));
            }
            line += 1;
            at_line_start = true;
            i += 1;
            continue;
        }
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        if c == '/' && chars.get(i + 1) == Some(&'/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
            continue;
        }
        if c == '/' && chars.get(i + 1) == Some(&'*') {
            let start = line;
            i += 2;
            loop {
                match chars.get(i) {
                    None => return Err(ParseError::new(start, "unterminated `/*` comment")),
                    Some('*') if chars.get(i + 1) == Some(&'/') => {
                        i += 2;
                        break;
                    }
                    Some('\n') => line += 1,
                    _ => {}
                }
                i += 1;
            }
            continue;
        }
        let first_on_line = at_line_start;
        at_line_start = false;
        if c == '#' && first_on_line && directive.is_none() {
            directive = Some(Vec::new());
            i += 1;
            continue;
        }
        let kind;
        if c == '"' || c == '\'' {
            // Literals matter to no declaration: skip them whole.
            let start = line;
            i += 1;
            loop {
                match chars.get(i) {
                    None | Some('\n') => {
                        return Err(ParseError::new(start, "unterminated literal"));
                    }
                    Some('\\') => i += 2,
                    Some(&q) if q == c => {
                        i += 1;
                        break;
                    }
                    _ => i += 1,
                }
            }
            kind = Kind::Number(String::from("0"));
        } else if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            kind = Kind::Ident(chars[start..i].iter().collect());
        } else if c.is_ascii_digit()
            || (c == '.' && chars.get(i + 1).is_some_and(|d| d.is_ascii_digit()))
        {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                i += 1;
            }
            kind = Kind::Number(chars[start..i].iter().collect());
        } else {
            i += 1;
            kind = Kind::Punct(c);
        }
        let tok = Tok { kind, line };
        match directive.as_mut() {
            Some(d) => d.push(tok),
            None => out.push(Raw::Tok(tok)),
        }
    }
    if let Some(d) = directive.take() {
        out.push(Raw::Directive(d));
    }
    Ok(out)
}

/// An object-like macro's replacement list.
type Macros = HashMap<String, Vec<Tok>>;

fn expand(raw: Vec<Raw>) -> Result<Vec<Tok>, ParseError> {
    let mut macros = Macros::new();
    let mut out = Vec::new();
    let mut steps = 0;
    for item in raw {
        match item {
            Raw::Directive(d) => directive(&d, &mut macros),
            Raw::Tok(t) => {
                let line = t.line;
                let mut active = HashSet::new();
                push_expanded(t, line, &macros, &mut active, &mut steps, &mut out)?;
            }
        }
    }
    Ok(out)
}

/// Applies `#define NAME body` and `#undef NAME`; a function-like macro (`NAME(` with no space)
/// is remembered as not expandable by removing any object-like definition of the name.
fn directive(d: &[Tok], macros: &mut Macros) {
    let (Some(kw), Some(name)) = (d.first().and_then(Tok::ident), d.get(1).and_then(Tok::ident))
    else {
        return;
    };
    match kw {
        "define" => {
            let body = &d[2..];
            // The scanner drops spaces, so `F(x)` and `F (x)` look alike; a function-like macro
            // has a parameter list of identifiers and commas closed by `)`, which an
            // object-like body starting with `(` rarely has. Either way it is not a type name.
            let function_like = body.first().is_some_and(|t| t.is_punct('('))
                && body
                    .iter()
                    .skip(1)
                    .take_while(|t| !t.is_punct(')'))
                    .all(|t| t.ident().is_some() || t.is_punct(',') || t.is_punct('.'));
            if function_like {
                macros.remove(name);
            } else {
                macros.insert(name.to_string(), body.to_vec());
            }
        }
        "undef" => {
            macros.remove(name);
        }
        _ => {}
    }
}

fn push_expanded(
    tok: Tok,
    line: usize,
    macros: &Macros,
    active: &mut HashSet<String>,
    steps: &mut usize,
    out: &mut Vec<Tok>,
) -> Result<(), ParseError> {
    *steps += 1;
    if *steps > MAX_STEPS {
        return Err(ParseError::new(line, "macro expansion takes too many steps"));
    }
    if active.len() > MAX_DEPTH {
        return Err(ParseError::new(line, "macros nested too deeply"));
    }
    if let Some(name) = tok.ident() {
        if let Some(body) = macros.get(name).filter(|_| !active.contains(name)) {
            let name = name.to_string();
            active.insert(name.clone());
            for t in body {
                let tok = Tok { kind: t.kind.clone(), line };
                push_expanded(tok, line, macros, active, steps, out)?;
            }
            active.remove(&name);
            return Ok(());
        }
    }
    out.push(Tok { kind: tok.kind, line });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        tokens(text).unwrap().iter().map(Tok::text).collect()
    }

    #[test]
    fn comments_and_literals_vanish() {
        assert_eq!(words("a /* x \n y */ b // c\n \"s;{\" d"), ["a", "b", "0", "d"]);
    }

    #[test]
    fn defines_expand_from_definition_until_undef() {
        let text = "REAL\n#define REAL float\nREAL x;\n#undef REAL\nREAL";
        assert_eq!(words(text), ["REAL", "float", "x", ";", "REAL"]);
    }

    #[test]
    fn nested_and_self_referencing_defines_terminate() {
        assert_eq!(words("#define A B A\n#define B int\nA"), ["int", "A"]);
    }

    #[test]
    fn continued_directive_lines_and_function_macros() {
        let text = "#define T \\\n unsigned int\n#define F(x) x\nT F(y)";
        assert_eq!(words(text), ["unsigned", "int", "F", "(", "y", ")"]);
    }

    #[test]
    fn lines_are_kept_for_expansions() {
        let t = tokens("#define T float\n\nT").unwrap();
        assert_eq!(t[0].line, 2);
    }

    #[test]
    fn exponential_expansion_is_refused() {
        let mut text = String::from("#define A0 x x\n");
        for i in 1..40 {
            text += &format!("#define A{i} A{} A{}\n", i - 1, i - 1);
        }
        text += "A39";
        assert!(tokens(&text).is_err());
    }

    #[test]
    fn exponential_empty_expansion_and_deep_chains_are_refused() {
        let mut text = String::from("#define A0\n");
        for i in 1..40 {
            text += &format!("#define A{i} A{} A{}\n", i - 1, i - 1);
        }
        assert!(tokens(&(text + "A39")).is_err());
        let mut chain = String::from("#define B0 int\n");
        for i in 1..1000 {
            chain += &format!("#define B{i} B{}\n", i - 1);
        }
        assert!(tokens(&(chain + "B999")).is_err());
    }

    #[test]
    fn unterminated_comment_is_an_error() {
        assert!(tokens("a /* b").is_err());
    }
}
