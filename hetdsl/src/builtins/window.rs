//! Kernels rewritten to take each `__global` buffer as a window of it (see [`window`]).

use super::scan::{functions, is_ident, matching_open, Source, Token};

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
/// kernel's own indexing (by global id) is unchanged. A kernel's prototype takes the same
/// hidden parameters, unnamed. Line numbers are kept. Only what the compiler reads with the
/// build `options` counts. `global_pointer(kernel, parameter)` tells, as the declaration reader
/// read the program, whether a parameter is a `__global` pointer: one typed by a typedef of
/// such a pointer (`typedef __global float* fp;`) shows neither `*` nor `__global` here.
pub(crate) fn window(
    text: &str,
    options: &str,
    global_pointer: &dyn Fn(&str, &str) -> bool,
) -> Windowed {
    let src = Source::new(text, options);
    let toks = &src.toks;
    let mut edits: Vec<(std::ops::Range<usize>, String)> = Vec::new();
    let mut pointers = std::collections::HashMap::new();
    let kernels = functions(toks, |t| src.reach(t).kernel);
    for f in kernels.iter().filter(|f| f.kernel) {
        let open = matching_open(toks, f.close_paren);
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
        let prototype = f.body.is_empty();
        for (i, p) in params.iter().enumerate() {
            let global = p.iter().any(|t| src.reach(t.text).global);
            let star = p.iter().any(|t| t.text == "*");
            // `__global float x[]` (or `x[4]`) is a pointer, as C reads a parameter declared as
            // an array; one of arrays (`m[][3]`) steps by rows, not elements, and is not held.
            let open = p.iter().position(|t| t.text == "[");
            let array = !star
                && open.is_some()
                && p.iter().filter(|t| t.text == "[").count() == 1
                && p.last().is_some_and(|t| t.text == "]");
            let named = |t: &Token<'_>| is_ident(t.text) && !src.macros.contains_key(t.text);
            let typedef = !star
                && open.is_none()
                && p.iter().rposition(named).is_some_and(|n| global_pointer(&f.name, p[n].text));
            if !typedef && (!global || !(star || array)) {
                continue;
            }
            if prototype {
                hidden += ", ulong";
                found.push(i);
                continue;
            }
            // The name is the last identifier that is not a macro (`__global T* y ARGS`, where
            // `ARGS` may stand for more parameters).
            let before = if array { open.unwrap_or(p.len()) } else { p.len() };
            let Some(name_at) = p[..before].iter().rposition(named) else { continue };
            let name = p[name_at].text;
            let ty: Vec<&str> = p[..name_at]
                .iter()
                .map(|t| t.text)
                .filter(|t| !matches!(*t, "restrict" | "__restrict"))
                .collect();
            let at = p[name_at].at;
            edits.push((at..at + name.len(), format!("{name}__hetdsl")));
            hidden += &format!(", ulong {name}__hetdsl_off");
            let ty = if array { format!("{} *", ty.join(" ")) } else { ty.join(" ") };
            prologue += &format!(" {ty} {name} = {name}__hetdsl - {name}__hetdsl_off;");
            found.push(i);
        }
        if found.is_empty() {
            continue;
        }
        let close = toks[f.close_paren].at;
        edits.push((close..close, hidden));
        if !prototype {
            let brace = toks[f.body.start - 1].at + 1;
            edits.push((brace..brace, prologue));
            pointers.insert(f.name.clone(), found);
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use hetdsl_decl::clsig::{self, AddrSpace};

    /// `window` over `text`, its pointers told by the declaration reader as a program reads them.
    fn window(text: &str, options: &str) -> Windowed {
        let read = clsig::read_with_options(text, options).ok();
        super::window(text, options, &|kernel, name| {
            let k = read.as_ref().and_then(|cl| cl.kernel(kernel));
            let p = k.and_then(|k| k.params.as_ref().ok()?.iter().find(|p| p.name == name));
            p.and_then(|p| p.pointer).is_some_and(|ptr| ptr.space == AddrSpace::Global)
        })
    }

    #[test]
    fn a_macro_for_the_global_qualifier_is_held_in_windows_too() {
        let src = "#define GLOBAL __global\n\
                   __kernel void k(GLOBAL const float* x, GLOBAL float* y) { y[0] = x[0]; }\n";
        let w = window(src, "");
        assert_eq!(w.pointers.get("k"), Some(&vec![0, 1]));
        assert!(
            w.text.contains("GLOBAL const float * x = x__hetdsl - x__hetdsl_off;"),
            "{}",
            w.text
        );
    }

    #[test]
    fn a_prototype_and_a_macro_after_the_last_parameter_are_kept_consistent() {
        let src = "#define ARGS , int off\n\
                   __kernel void k(__global const float* x, __global float* y ARGS);\n\
                   __kernel void k(__global const float* x, __global float* y ARGS) { y[off] = x[0]; }\n";
        let w = window(src, "");
        assert_eq!(w.pointers.get("k"), Some(&vec![0, 1]));
        assert!(w.text.contains("__global float* y ARGS, ulong, ulong);"), "{}", w.text);
        assert!(
            w.text.contains(
                "__global float* y__hetdsl ARGS, ulong x__hetdsl_off, ulong y__hetdsl_off)"
            ),
            "{}",
            w.text
        );
    }

    #[test]
    fn windowed_kernels_take_each_global_pointer_relative_to_an_offset() {
        let src = "__kernel void k(__global const float* restrict x, float a,\n  __global float *y) {\n  y[get_global_id(0)] = a * x[0];\n}\nvoid h(__global float* z) { }\n";
        let w = window(src, "");
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

    #[test]
    fn array_parameters_are_held_in_windows_as_the_pointers_they_are() {
        let src = "#define N 4\n__kernel void k(__global const float x[], __global float y[N],\n\
                   __global float m[][3], float w[2]) { y[0] = x[0] + m[0][0] + w[0]; }\n";
        let w = window(src, "");
        assert_eq!(w.pointers.get("k"), Some(&vec![0, 1]));
        assert!(w
            .text
            .contains("k(__global const float x__hetdsl[], __global float y__hetdsl[N],"));
        assert!(
            w.text.contains(
                "__global float m[][3], float w[2], ulong x__hetdsl_off, ulong y__hetdsl_off)"
            ),
            "{}",
            w.text
        );
        assert!(
            w.text.contains("{ __global const float * x = x__hetdsl - x__hetdsl_off; __global float * y = y__hetdsl - y__hetdsl_off; y[0]"),
            "{}",
            w.text
        );
    }

    #[test]
    fn typedefs_of_global_pointers_are_held_in_windows_too() {
        let src = "typedef __global const float* in_floats;\ntypedef __local float* scratch;\n\
                   __kernel void k(in_floats x, scratch s, float a) { s[0] = a * x[0]; }\n";
        let w = window(src, "");
        assert_eq!(w.pointers.get("k"), Some(&vec![0]));
        assert!(w.text.contains("k(in_floats x__hetdsl, scratch s, float a, ulong x__hetdsl_off)"));
        assert!(w.text.contains("{ in_floats x = x__hetdsl - x__hetdsl_off; s[0]"), "{}", w.text);
    }

    #[test]
    fn only_the_header_the_build_options_select_is_windowed() {
        let src = "#ifdef WIDE\n__kernel void k(__global float* x, __global float* y) {\n#else\n\
                   __kernel void k(__global float* y) {\n#endif\n  y[0] = 1.0f;\n}\n";
        let wide = window(src, "-D WIDE");
        assert_eq!(wide.pointers.get("k"), Some(&vec![0, 1]));
        assert!(
            wide.text.contains("__kernel void k(__global float* y) {\n#endif"),
            "{}",
            wide.text
        );
        let narrow = window(src, "");
        assert_eq!(narrow.pointers.get("k"), Some(&vec![0]));
        assert!(narrow.text.contains("__global float* y__hetdsl, ulong y__hetdsl_off) {"));
    }
}
