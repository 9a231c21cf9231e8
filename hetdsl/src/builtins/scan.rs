//! The source as the rewrites see it: its tokens, its macros and what each reaches, and the
//! functions at file scope. Comments, strings and directives are not code; a `#define`'s body
//! is kept, so that a built-in named in a macro counts where the macro is used. Lines that the
//! build options' conditionals skip are left out: the compiler never reads them.

/// One identifier or punctuation character of the source, with its byte position.
#[derive(Debug)]
pub(super) struct Token<'a> {
    pub(super) text: &'a str,
    pub(super) at: usize,
    pub(super) line: usize,
}

/// A `#define` of the source: its name, whether it takes arguments, and its body's tokens.
#[derive(Debug)]
struct Macro<'a> {
    name: &'a str,
    function_like: bool,
    body: Vec<Token<'a>>,
}

/// The source's code tokens (directives left out) and its macros.
struct Scanned<'a> {
    toks: Vec<Token<'a>>,
    macros: Vec<Macro<'a>>,
}

/// A scanned source and what each of its macros reaches.
pub(super) struct Source<'a> {
    pub(super) toks: Vec<Token<'a>>,
    pub(super) macros: std::collections::HashMap<&'a str, Reach>,
}

impl<'a> Source<'a> {
    /// The source as the compiler reads it when built with `options` (its `-D`s decide the
    /// conditionals); a conditional that depends on the device keeps both branches.
    pub(super) fn new(text: &'a str, options: &str) -> Self {
        let Scanned { toks, macros } = scan(text, &read_lines(text, options));
        Source { toks, macros: macro_reach(&macros) }
    }

    /// What a name reaches, itself or through the macro it names.
    pub(super) fn reach(&self, name: &str) -> Reach {
        direct_reach(name).or(self.macros.get(name).copied().unwrap_or_default())
    }

    /// How a token that reaches a built-in reads in a message: the built-in, or the macro.
    pub(super) fn describe(&self, t: &Token<'_>) -> String {
        if self.macros.contains_key(t.text) {
            format!("the macro `{}`", t.text)
        } else {
            format!("`{}`", t.text)
        }
    }
}

/// What a name stands for once macros are expanded: the built-ins it reaches and whether it
/// is the kernel qualifier.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) struct Reach {
    /// `get_group_id` or `get_global_offset`: the prelude alone makes these true.
    pub(super) group: bool,
    /// A built-in of [`SIZED`], which reads the hidden NDRange parameter.
    pub(super) sizes: bool,
    /// `__kernel` or `kernel`.
    pub(super) kernel: bool,
    /// `__global` or `global`.
    pub(super) global: bool,
}

/// The built-ins that read the caller's NDRange from the hidden parameter.
pub(super) const SIZED: [&str; 3] = ["get_global_size", "get_num_groups", "get_global_linear_id"];

fn direct_reach(name: &str) -> Reach {
    Reach {
        group: matches!(name, "get_group_id" | "get_global_offset"),
        sizes: SIZED.contains(&name),
        kernel: matches!(name, "__kernel" | "kernel"),
        global: matches!(name, "__global" | "global"),
    }
}

impl Reach {
    fn or(self, o: Reach) -> Reach {
        Reach {
            group: self.group || o.group,
            sizes: self.sizes || o.sizes,
            kernel: self.kernel || o.kernel,
            global: self.global || o.global,
        }
    }
}

/// What every macro reaches, through the macros its body names (to a fixed point).
fn macro_reach<'a>(macros: &[Macro<'a>]) -> std::collections::HashMap<&'a str, Reach> {
    let mut reach: std::collections::HashMap<&str, Reach> =
        macros.iter().map(|m| (m.name, Reach::default())).collect();
    loop {
        let mut changed = false;
        for m in macros {
            let mut r = Reach::default();
            for t in &m.body {
                r = r.or(direct_reach(t.text));
                if let Some(&o) = reach.get(t.text) {
                    r = r.or(o);
                }
            }
            // A function-like macro that holds `__kernel` defines a kernel (or more); it does
            // not stand for a qualifier.
            r.kernel &= !m.function_like;
            r.global &= !m.function_like;
            let now = reach.get(m.name).copied().unwrap_or_default().or(r);
            if reach.insert(m.name, now) != Some(now) {
                changed = true;
            }
        }
        if !changed {
            return reach;
        }
    }
}

/// Which lines (0-based) the compiler may read: all but those a conditional skips with these
/// build options. Where hetdsl-decl cannot read the conditionals at all (an unbalanced
/// `#endif`, a malformed `-D`), every line counts, and the compiler reports what is wrong.
fn read_lines(text: &str, options: &str) -> Vec<bool> {
    use hetdsl_decl::clsig::{self, LineState};
    let states = clsig::defines_from_options(options)
        .ok()
        .and_then(|defines| clsig::line_states(text, &defines).ok());
    states.map_or_else(Vec::new, |s| s.into_iter().map(|s| s != LineState::Skipped).collect())
}

/// Identifiers and single punctuation characters, skipping comments, string and character
/// literals; preprocessor lines are left out of the tokens, and each `#define` is kept with
/// its body's tokens (a built-in reached through a macro counts where the macro is used).
/// Tokens and `#define`s on a line that `read[line - 1]` says the compiler skips are left out;
/// lines past its end are read.
fn scan<'a>(text: &'a str, read: &[bool]) -> Scanned<'a> {
    let read = |line: usize| read.get(line - 1).copied().unwrap_or(true);
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut macros = Vec::new();
    let (mut i, mut line, mut line_start) = (0, 1, true);
    while i < bytes.len() {
        let c = bytes[i];
        match c {
            b'\n' => {
                line += 1;
                line_start = true;
                i += 1;
                continue;
            }
            b' ' | b'\t' | b'\r' => {
                i += 1;
                continue;
            }
            b'#' if line_start => {
                // A directive runs to the end of the line, backslash-newlines included.
                let (start, first_line) = (i, line);
                while i < bytes.len() && bytes[i] != b'\n' {
                    if bytes[i] == b'\\' && bytes.get(i + 1) == Some(&b'\n') {
                        line += 1;
                        i += 1;
                    }
                    i += 1;
                }
                if read(first_line) {
                    macros.extend(define(text, start, i, first_line));
                }
                continue;
            }
            _ => {}
        }
        line_start = false;
        if text[i..].starts_with("//") {
            i = text[i..].find('\n').map_or(bytes.len(), |n| i + n);
        } else if text[i..].starts_with("/*") {
            let end = text[i + 2..].find("*/").map_or(bytes.len(), |n| i + 2 + n + 2);
            line += text[i..end].matches('\n').count();
            i = end;
        } else if c == b'"' || c == b'\'' {
            i += 1;
            while i < bytes.len() && bytes[i] != c && bytes[i] != b'\n' {
                i += if bytes[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
        } else if c.is_ascii_alphanumeric() || c == b'_' {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            if read(line) {
                out.push(Token { text: &text[start..i], at: start, line });
            }
        } else {
            let len = text[i..].chars().next().map_or(1, char::len_utf8);
            if read(line) {
                out.push(Token { text: &text[i..i + len], at: i, line });
            }
            i += len;
        }
    }
    Scanned { toks: out, macros }
}

/// The macro a directive at `text[start..end]` defines, if it is a `#define`.
fn define(text: &str, start: usize, end: usize, line: usize) -> Option<Macro<'_>> {
    let rest = text[start + 1..end].trim_start_matches([' ', '\t']);
    let rest = rest.strip_prefix("define")?;
    let rest = rest.trim_start_matches([' ', '\t']);
    let name_len = rest.bytes().take_while(|b| b.is_ascii_alphanumeric() || *b == b'_').count();
    if name_len == 0 {
        return None;
    }
    let name_at = end - rest.len();
    let name = &text[name_at..name_at + name_len];
    let after = name_at + name_len;
    // `#define F(x) ...` takes arguments only with no space before the parenthesis.
    let function_like = text[after..end].starts_with('(');
    let body_at = if function_like {
        text[after..end].find(')').map_or(end, |k| after + k + 1)
    } else {
        after
    };
    let body = scan(&text[body_at..end], &[])
        .toks
        .into_iter()
        .map(|t| Token { text: t.text, at: body_at + t.at, line: line + t.line - 1 })
        .collect();
    Some(Macro { name, function_like, body })
}

/// A function found at file scope: its name, whether it is a kernel, where its parameter
/// list closes, and the token range of its body (empty for a prototype).
pub(super) struct Function {
    pub(super) name: String,
    pub(super) kernel: bool,
    pub(super) close_paren: usize,
    pub(super) body: std::ops::Range<usize>,
}

/// The functions defined or declared at file scope. A function is an identifier followed by a
/// parenthesised list at brace depth 0, then `{` (a definition) or `;` (a prototype).
pub(super) fn functions(
    toks: &[Token<'_>],
    is_kernel_word: impl Fn(&str) -> bool,
) -> Vec<Function> {
    let mut found = Vec::new();
    let (mut i, mut kernel_seen) = (0, false);
    while i < toks.len() {
        let t = toks[i].text;
        if is_kernel_word(t) {
            kernel_seen = true;
        } else if t == ";" || t == "}" {
            kernel_seen = false;
        } else if t == "{" {
            // A struct, union or enum body, or an initialiser: skip it whole.
            i = matching(toks, i);
            kernel_seen = false;
        } else if t == "(" && i > 0 && is_ident(toks[i - 1].text) {
            let name = toks[i - 1].text;
            let close = matching(toks, i);
            if name == "__attribute__" {
                i = close + 1;
                continue;
            }
            // Attributes may also follow the parameter list.
            let mut next = close + 1;
            while toks.get(next).is_some_and(|t| t.text == "__attribute__") {
                next = matching(toks, next + 1) + 1;
            }
            match toks.get(next).map(|t| t.text) {
                Some("{") => {
                    let end = matching(toks, next);
                    found.push(Function {
                        name: name.to_string(),
                        kernel: kernel_seen,
                        close_paren: close,
                        body: next + 1..end,
                    });
                    i = end + 1;
                    kernel_seen = false;
                    continue;
                }
                Some(";") => found.push(Function {
                    name: name.to_string(),
                    kernel: kernel_seen,
                    close_paren: close,
                    body: 0..0,
                }),
                _ => {}
            }
            i = close + 1;
            continue;
        }
        i += 1;
    }
    found
}

pub(super) fn is_ident(s: &str) -> bool {
    s.bytes().next().is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
}

/// The index of the token closing the bracket at `open` (or the last token if unbalanced).
pub(super) fn matching(toks: &[Token<'_>], open: usize) -> usize {
    let (o, c) = match toks[open].text {
        "(" => ("(", ")"),
        "[" => ("[", "]"),
        _ => ("{", "}"),
    };
    let mut depth = 0usize;
    for (k, t) in toks.iter().enumerate().skip(open) {
        if t.text == o {
            depth += 1;
        } else if t.text == c {
            depth -= 1;
            if depth == 0 {
                return k;
            }
        }
    }
    toks.len().saturating_sub(1)
}

/// The index of the `(` matched by the `)` at `close`.
pub(super) fn matching_open(toks: &[Token<'_>], close: usize) -> usize {
    let mut depth = 0usize;
    for k in (0..=close).rev() {
        match toks[k].text {
            ")" => depth += 1,
            "(" => {
                depth -= 1;
                if depth == 0 {
                    return k;
                }
            }
            _ => {}
        }
    }
    0
}
