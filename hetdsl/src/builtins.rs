//! Work-item built-ins that tell the truth under co-execution.
//!
//! Each package is launched as an NDRange of its own, with a global work offset. OpenCL then
//! answers `get_group_id`, `get_num_groups`, `get_global_size`, `get_global_offset` and
//! `get_global_linear_id` for the package, not for the NDRange the kernel was written for, and
//! a kernel that indexes by group writes the wrong elements. Before a program is built, its
//! flattened source is rewritten so that these answer for the caller's whole NDRange:
//!
//! - `get_group_id(d)` becomes `(get_global_id(d) - get_local_id(d)) / get_local_size(d)`: the
//!   global id already includes the package's offset, and the caller's NDRange starts at 0;
//! - `get_global_offset(d)` becomes 0;
//! - `get_global_size(d)`, `get_num_groups(d)` and `get_global_linear_id()` (OpenCL C 2.0,
//!   defined here for every device) read the caller's NDRange from a hidden last kernel
//!   parameter, `ulong4 hetdsl_ndrange`, that the engine sets on every launch. The parameter is
//!   added only when the source uses one of them, and only kernel functions can see it: a
//!   helper function that calls one is refused with a message saying so.
//!
//! Pure text in, text out; no OpenCL.

use std::fmt;

/// The hidden parameter's name: the engine sets it, the rewritten built-ins read it.
pub(crate) const NDRANGE_PARAM: &str = "hetdsl_ndrange";

const GROUP_AND_OFFSET: &str = "\
size_t hetdsl_group_id(uint d) { return (get_global_id(d) - get_local_id(d)) / get_local_size(d); }
#define get_group_id(d) hetdsl_group_id(d)
#define get_global_offset(d) ((size_t)0)
";

const SIZES: &str = "\
#define get_global_size(d) ((size_t)((d) == 0 ? hetdsl_ndrange.s0 : (d) == 1 ? hetdsl_ndrange.s1 : (d) == 2 ? hetdsl_ndrange.s2 : 1))
#define get_num_groups(d) (get_global_size(d) / get_local_size(d))
#define get_global_linear_id() ((get_global_id(2) * get_global_size(1) + get_global_id(1)) * get_global_size(0) + get_global_id(0))
";

/// A source ready to build for co-execution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rewritten {
    pub(crate) text: String,
    /// Kernels that take the hidden `ulong4` NDRange as their last argument.
    pub(crate) ndrange_param: Vec<String>,
}

/// A use of a built-in that the rewrite cannot make true.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RewriteError {
    /// 1-based line of the flattened source.
    pub(crate) line: usize,
    pub(crate) message: String,
}

impl fmt::Display for RewriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.message)
    }
}

/// One identifier or punctuation character of the source, with its byte position.
#[derive(Debug)]
struct Token<'a> {
    text: &'a str,
    at: usize,
    line: usize,
}

/// Identifiers and single punctuation characters, skipping comments, string and character
/// literals and preprocessor lines (a built-in named inside a `#define` is rewritten where
/// the macro is used, by the compiler's own preprocessor).
fn scan(text: &str) -> Vec<Token<'_>> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
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
                while i < bytes.len() && bytes[i] != b'\n' {
                    if bytes[i] == b'\\' && bytes.get(i + 1) == Some(&b'\n') {
                        line += 1;
                        i += 1;
                    }
                    i += 1;
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
            out.push(Token { text: &text[start..i], at: start, line });
        } else {
            let len = text[i..].chars().next().map_or(1, char::len_utf8);
            out.push(Token { text: &text[i..i + len], at: i, line });
            i += len;
        }
    }
    out
}

/// A function found at file scope: its name, whether it is a kernel, where its parameter
/// list closes, and the token range of its body (empty for a prototype).
struct Function {
    name: String,
    kernel: bool,
    close_paren: usize,
    body: std::ops::Range<usize>,
}

/// The functions defined or declared at file scope. A function is an identifier followed by a
/// parenthesised list at brace depth 0, then `{` (a definition) or `;` (a prototype).
fn functions(toks: &[Token<'_>]) -> Vec<Function> {
    let mut found = Vec::new();
    let (mut i, mut kernel_seen) = (0, false);
    while i < toks.len() {
        let t = toks[i].text;
        if t == "__kernel" || t == "kernel" {
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

fn is_ident(s: &str) -> bool {
    s.bytes().next().is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
}

/// The index of the token closing the bracket at `open` (or the last token if unbalanced).
fn matching(toks: &[Token<'_>], open: usize) -> usize {
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

/// Rewrites `text` (a flattened source) so that the group and size built-ins answer for the
/// caller's whole NDRange. A source that uses none of them comes back unchanged.
pub(crate) fn rewrite(text: &str) -> Result<Rewritten, RewriteError> {
    let toks = scan(text);
    let uses = |names: &[&str]| toks.iter().any(|t| names.contains(&t.text));
    let group = uses(&["get_group_id", "get_global_offset"]);
    const SIZED: [&str; 3] = ["get_global_size", "get_num_groups", "get_global_linear_id"];
    let sizes = uses(&SIZED);
    if !group && !sizes {
        return Ok(Rewritten { text: text.to_string(), ndrange_param: Vec::new() });
    }
    // Byte ranges of the source and what replaces them, in order.
    let mut edits: Vec<(std::ops::Range<usize>, &str)> = Vec::new();
    let mut ndrange_param = Vec::new();
    if sizes {
        let fns = functions(&toks);
        for f in fns.iter().filter(|f| !f.kernel) {
            if let Some(t) = toks[f.body.clone()].iter().find(|t| SIZED.contains(&t.text)) {
                return Err(RewriteError {
                    line: t.line,
                    message: format!(
                        "`{}` is called in `{}`, which is not a kernel: under co-execution it \
                         answers for the whole NDRange only inside a kernel function; call it \
                         in the kernel and pass the value to `{}` as a parameter",
                        t.text, f.name, f.name
                    ),
                });
            }
        }
        for f in fns.iter().filter(|f| f.kernel) {
            let close = toks[f.close_paren].at;
            let open = matching_open(&toks, f.close_paren);
            let inner = &toks[open + 1..f.close_paren];
            if inner.is_empty() {
                edits.push((close..close, "ulong4 hetdsl_ndrange"));
            } else if inner.len() == 1 && inner[0].text == "void" {
                // `f(void)`: the hidden parameter becomes the only one.
                edits.push((inner[0].at..inner[0].at + 4, "ulong4 hetdsl_ndrange"));
            } else {
                edits.push((close..close, ", ulong4 hetdsl_ndrange"));
            }
            if !ndrange_param.contains(&f.name) {
                ndrange_param.push(f.name.clone());
            }
        }
    }
    let mut body = String::with_capacity(text.len() + 32 * edits.len());
    let mut last = 0;
    for (range, piece) in edits {
        body.push_str(&text[last..range.start]);
        body.push_str(piece);
        last = range.end;
    }
    body.push_str(&text[last..]);
    let mut out =
        String::from("/* hetdsl: work-item built-ins for the caller's whole NDRange */\n");
    out += GROUP_AND_OFFSET;
    if sizes {
        out += SIZES;
    }
    // Keep the user's line numbers in build logs when the source names no `#line` itself.
    if !body.trim_start().starts_with("#line") {
        out += "#line 1\n";
    }
    out += &body;
    Ok(Rewritten { text: out, ndrange_param })
}

/// A source whose kernels take each `__global` pointer relative to a window of its buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Windowed {
    pub(crate) text: String,
    /// Per kernel: the positions of its `__global` pointer parameters, each of which takes a
    /// hidden `ulong` offset after every other parameter, in this order.
    pub(crate) pointers: std::collections::HashMap<String, Vec<usize>>,
}

/// Rewrites every kernel so that a device may hold only a window `[lo, hi)` of a buffer: each
/// `__global T* p` parameter becomes `p__hetdsl`, a hidden `ulong p__hetdsl_off` parameter is
/// appended, and the body starts with `__global T* p = p__hetdsl - p__hetdsl_off;`, so the
/// kernel's own indexing (by global id) is unchanged. Line numbers are kept.
pub(crate) fn window(text: &str) -> Windowed {
    let toks = scan(text);
    let mut edits: Vec<(std::ops::Range<usize>, String)> = Vec::new();
    let mut pointers = std::collections::HashMap::new();
    for f in functions(&toks).iter().filter(|f| f.kernel && !f.body.is_empty()) {
        let open = matching_open(&toks, f.close_paren);
        let mut params: Vec<&[Token<'_>]> = Vec::new();
        let (mut depth, mut start) = (0usize, open + 1);
        for k in open + 1..f.close_paren {
            match toks[k].text {
                "(" | "[" => depth += 1,
                ")" | "]" => depth = depth.saturating_sub(1),
                "," if depth == 0 => {
                    params.push(&toks[start..k]);
                    start = k + 1;
                }
                _ => {}
            }
        }
        params.push(&toks[start..f.close_paren]);
        let mut found = Vec::new();
        let mut hidden = String::new();
        let mut prologue = String::new();
        for (i, p) in params.iter().enumerate() {
            let global = p.iter().any(|t| t.text == "__global" || t.text == "global");
            let Some(name_at) = p.iter().rposition(|t| is_ident(t.text)) else { continue };
            if !global || !p.iter().any(|t| t.text == "*") {
                continue;
            }
            let name = p[name_at].text;
            let ty: Vec<&str> = p[..name_at]
                .iter()
                .map(|t| t.text)
                .filter(|t| !matches!(*t, "restrict" | "__restrict"))
                .collect();
            let at = p[name_at].at;
            edits.push((at..at + name.len(), format!("{name}__hetdsl")));
            hidden += &format!(", ulong {name}__hetdsl_off");
            prologue += &format!(" {} {name} = {name}__hetdsl - {name}__hetdsl_off;", ty.join(" "));
            found.push(i);
        }
        if found.is_empty() {
            continue;
        }
        let close = toks[f.close_paren].at;
        edits.push((close..close, hidden));
        let brace = toks[f.body.start - 1].at + 1;
        edits.push((brace..brace, prologue));
        pointers.insert(f.name.clone(), found);
    }
    edits.sort_by_key(|(r, _)| r.start);
    let mut out = String::with_capacity(text.len() + 64 * edits.len());
    let mut last = 0;
    for (range, piece) in edits {
        out.push_str(&text[last..range.start]);
        out.push_str(&piece);
        last = range.end;
    }
    out.push_str(&text[last..]);
    Windowed { text: out, pointers }
}

/// The index of the `(` matched by the `)` at `close`.
fn matching_open(toks: &[Token<'_>], close: usize) -> usize {
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

#[cfg(test)]
mod tests {

    #[test]
    fn windowed_kernels_take_each_global_pointer_relative_to_an_offset() {
        let src = "__kernel void k(__global const float* restrict x, float a,\n  __global float *y) {\n  y[get_global_id(0)] = a * x[0];\n}\nvoid h(__global float* z) { }\n";
        let w = window(src);
        assert_eq!(w.pointers.get("k"), Some(&vec![0, 2]));
        assert!(!w.pointers.contains_key("h"), "helpers keep their parameters");
        assert!(w.text.contains("__global const float* restrict x__hetdsl, float a"), "{}", w.text);
        assert!(
            w.text.contains("__global float *y__hetdsl, ulong x__hetdsl_off, ulong y__hetdsl_off)"),
            "{}",
            w.text
        );
        assert!(w.text.contains("{ __global const float * x = x__hetdsl - x__hetdsl_off; __global float * y = y__hetdsl - y__hetdsl_off;\n"), "{}", w.text);
        // Lines are kept: the body's statement is still on line 3.
        assert_eq!(w.text.lines().nth(2), Some("  y[get_global_id(0)] = a * x[0];"));
        assert!(w.text.contains("void h(__global float* z) { }"));
    }

    use super::*;

    #[test]
    fn a_source_without_the_built_ins_is_unchanged() {
        let src = "__kernel void k(__global float* x) { x[get_global_id(0)] = 1.0f; }\n";
        let r = rewrite(src).unwrap();
        assert_eq!(r.text, src);
        assert!(r.ndrange_param.is_empty());
    }

    #[test]
    fn group_ids_need_no_hidden_parameter() {
        let src =
            "#line 1 \"a.cl\"\n__kernel void k(__global int* o) { o[get_group_id(0)] = 1; }\n";
        let r = rewrite(src).unwrap();
        assert!(r.ndrange_param.is_empty());
        assert!(r.text.contains("#define get_group_id(d) hetdsl_group_id(d)"));
        assert!(r.text.ends_with(src), "the user's text follows the prelude untouched");
    }

    #[test]
    fn sizes_add_the_hidden_parameter_to_every_kernel() {
        let src = "__kernel __attribute__((reqd_work_group_size(64,1,1))) void a(__global int* o, int n)\n\
                   { o[get_global_id(0)] = get_global_size(0) + n; }\n\
                   /* get_num_groups in a comment */\n\
                   kernel void b() { }\n\
                   __kernel void c(void) { int g = get_num_groups(1); }\n";
        let r = rewrite(src).unwrap();
        assert_eq!(r.ndrange_param, ["a", "b", "c"]);
        assert!(r.text.contains("void a(__global int* o, int n, ulong4 hetdsl_ndrange)"));
        assert!(r.text.contains("void b(ulong4 hetdsl_ndrange)"));
        assert!(r.text.contains("void c(ulong4 hetdsl_ndrange)"));
        assert!(r.text.contains("#line 1\n__kernel"), "line numbers kept without a #line");
    }

    #[test]
    fn a_prototype_gets_the_parameter_too() {
        let src = "__kernel void a(__global int* o);\n\
                   __kernel void a(__global int* o) { o[0] = get_global_size(0); }\n";
        let r = rewrite(src).unwrap();
        assert_eq!(r.text.matches("ulong4 hetdsl_ndrange").count(), 2);
        assert_eq!(r.ndrange_param, ["a"]);
    }

    #[test]
    fn sizes_in_a_helper_function_are_refused_with_its_name_and_line() {
        let src = "int width(void) {\n  return get_global_size(0);\n}\n\
                   __kernel void k(__global int* o) { o[0] = width(); }\n";
        let e = rewrite(src).unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.message.contains("`width`"), "{e}");
        assert!(e.message.contains("get_global_size"), "{e}");
    }

    #[test]
    fn strings_comments_and_directives_do_not_count_as_uses() {
        let src = "#define N get_global_size(0)\n// get_group_id(0)\n\
                   __kernel void k(__global char* o) { o[0] = 'g'; /* get_num_groups */ }\n";
        assert_eq!(rewrite(src).unwrap().text, src);
    }

    #[test]
    fn structs_and_initialisers_are_not_functions() {
        let src = "typedef struct { int a; } S;\nconstant int t[2] = { 1, 2 };\n\
                   __kernel void k(__global S* s) { s[get_group_id(0)].a = get_num_groups(0); }\n";
        let r = rewrite(src).unwrap();
        assert_eq!(r.ndrange_param, ["k"]);
        assert!(r.text.contains("__global S* s, ulong4 hetdsl_ndrange)"));
    }
}
