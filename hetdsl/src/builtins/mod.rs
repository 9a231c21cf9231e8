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
//!   helper function that calls one, a kernel called by another, or a kernel defined by a
//!   macro is refused with a message saying so.
//!
//! A built-in named only inside a `#define` counts where the macro is used: the compiler's
//! own preprocessor expands the prelude's definitions inside the user's macros (`scan`).
//!
//! Conditionals count as the compiler reads them with the build options' `-D`s: a use the
//! compiler skips is neither rewritten nor refused. Where the branch depends on the device,
//! both count.
//!
//! Pure text in, text out; no OpenCL.

mod scan;
mod window;

use std::fmt;

use self::scan::{functions, matching_open, Function, Reach, Source, Token};
pub(crate) use self::window::window;

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

/// Rewrites `text` (a flattened source) so that the group and size built-ins answer for the
/// caller's whole NDRange, where they are called directly or through macros. Only what the
/// compiler reads with the build `options` counts. A source that uses none of them comes back
/// unchanged.
pub(crate) fn rewrite(text: &str, options: &str) -> Result<Rewritten, RewriteError> {
    let src = Source::new(text, options);
    let toks = &src.toks;
    // A macro that names a built-in brings the prelude in even if no code uses it: its
    // definitions are harmless unused, and the compiler expands them wherever it is used.
    let anywhere = |f: fn(Reach) -> bool| {
        toks.iter().any(|t| f(src.reach(t.text))) || src.macros.values().any(|&r| f(r))
    };
    let group = anywhere(|r| r.group);
    let sizes_named = anywhere(|r| r.sizes);
    if !group && !sizes_named {
        return Ok(Rewritten { text: text.to_string(), ndrange_param: Vec::new() });
    }
    let sizes_used = toks.iter().any(|t| src.reach(t.text).sizes);
    // Byte ranges of the source and what replaces them, in order.
    let mut edits: Vec<(std::ops::Range<usize>, &str)> = Vec::new();
    let mut ndrange_param = Vec::new();
    if sizes_used {
        let fns = functions(toks, |t| src.reach(t).kernel);
        check_sized_uses(&src, &fns)?;
        for f in fns.iter().filter(|f| f.kernel) {
            let close = toks[f.close_paren].at;
            let open = matching_open(toks, f.close_paren);
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
    if sizes_named {
        out += SIZES;
    }
    // Keep the user's line numbers in build logs when the source names no `#line` itself.
    if !body.trim_start().starts_with("#line") {
        out += "#line 1\n";
    }
    out += &body;
    Ok(Rewritten { text: out, ndrange_param })
}

/// Where the hidden NDRange parameter cannot reach a use of a built-in that reads it: a helper
/// function (only kernels take the parameter), a kernel called as a function by another (its
/// callers do not pass it), or code outside every function hetdsl can see (a kernel defined by
/// a macro).
fn check_sized_uses(src: &Source<'_>, fns: &[Function]) -> Result<(), RewriteError> {
    let toks = &src.toks;
    let sized = |t: &&Token<'_>| src.reach(t.text).sizes;
    for f in fns.iter().filter(|f| !f.kernel) {
        if let Some(t) = toks[f.body.clone()].iter().find(sized) {
            return Err(RewriteError {
                line: t.line,
                message: format!(
                    "{} is called in `{}`, which is not a kernel: under co-execution it answers \
                     for the whole NDRange only inside a kernel function; call it in the kernel \
                     and pass the value to `{}` as a parameter",
                    src.describe(t),
                    f.name,
                    f.name
                ),
            });
        }
    }
    let kernels: Vec<&str> = fns.iter().filter(|f| f.kernel).map(|f| f.name.as_str()).collect();
    for f in fns.iter().filter(|f| !f.body.is_empty()) {
        let body = &toks[f.body.clone()];
        let call = body.windows(2).find(|w| kernels.contains(&w[0].text) && w[1].text == "(");
        if let Some(w) = call {
            return Err(RewriteError {
                line: w[0].line,
                message: format!(
                    "`{}` calls the kernel `{}`: a source that reads the caller's NDRange \
                     (`get_global_size`, `get_num_groups`, `get_global_linear_id`) gives every \
                     kernel a hidden parameter, which such a call does not pass; move `{}`'s body \
                     into a helper function that both call",
                    f.name, w[0].text, w[0].text
                ),
            });
        }
    }
    // Tokens outside every function's parameters and body.
    let inside = |k: usize| {
        fns.iter().any(|f| {
            (matching_open(toks, f.close_paren)..f.body.end.max(f.close_paren)).contains(&k)
        })
    };
    if let Some((_, t)) = toks.iter().enumerate().find(|(k, t)| sized(t) && !inside(*k)) {
        return Err(RewriteError {
            line: t.line,
            message: format!(
                "{} reads the caller's NDRange outside any function hetdsl can see (a kernel \
                 defined by a macro?): hetdsl passes the NDRange to each kernel as a hidden \
                 parameter, which it can add only to a kernel written out in the source",
                src.describe(t)
            ),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_without_the_built_ins_is_unchanged() {
        let src = "__kernel void k(__global float* x) { x[get_global_id(0)] = 1.0f; }\n";
        let r = rewrite(src, "").unwrap();
        assert_eq!(r.text, src);
        assert!(r.ndrange_param.is_empty());
    }

    #[test]
    fn group_ids_need_no_hidden_parameter() {
        let src =
            "#line 1 \"a.cl\"\n__kernel void k(__global int* o) { o[get_group_id(0)] = 1; }\n";
        let r = rewrite(src, "").unwrap();
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
        let r = rewrite(src, "").unwrap();
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
        let r = rewrite(src, "").unwrap();
        assert_eq!(r.text.matches("ulong4 hetdsl_ndrange").count(), 2);
        assert_eq!(r.ndrange_param, ["a"]);
    }

    #[test]
    fn sizes_in_a_helper_function_are_refused_with_its_name_and_line() {
        let src = "int width(void) {\n  return get_global_size(0);\n}\n\
                   __kernel void k(__global int* o) { o[0] = width(); }\n";
        let e = rewrite(src, "").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.message.contains("`width`"), "{e}");
        assert!(e.message.contains("get_global_size"), "{e}");
    }

    #[test]
    fn strings_and_comments_do_not_count_as_uses() {
        let src = "// get_group_id(0)\n\
                   __kernel void k(__global char* o) { o[0] = 'g'; /* get_num_groups */ }\n";
        assert_eq!(rewrite(src, "").unwrap().text, src);
    }

    #[test]
    fn an_unused_macro_brings_the_prelude_but_no_parameter() {
        let src = "#define N get_global_size(0)\n__kernel void k(__global char* o) { o[0] = 1; }\n";
        let r = rewrite(src, "").unwrap();
        assert!(r.ndrange_param.is_empty());
        assert!(r.text.contains("#define get_global_size(d)"), "{}", r.text);
        assert!(r.text.ends_with(src));
    }

    #[test]
    fn built_ins_reached_through_macros_are_rewritten() {
        // A group id behind two macros: the prelude's definition expands inside them.
        let src = "#define GROUP(d) get_group_id(d)\n#define GID GROUP(0)\n\
                   __kernel void k(__global uint* o) { o[get_global_id(0)] = GID; }\n";
        let r = rewrite(src, "").unwrap();
        assert!(r.text.contains("#define get_group_id(d) hetdsl_group_id(d)"), "{}", r.text);
        assert!(r.ndrange_param.is_empty());
        // A size behind a macro needs the parameter on the kernel that uses it.
        let src = "#define GSIZE \\\n  get_global_size(0)\n\
                   __kernel void k(__global uint* o) { o[0] = GSIZE; }\n";
        let r = rewrite(src, "").unwrap();
        assert_eq!(r.ndrange_param, ["k"]);
        assert!(r.text.contains("__global uint* o, ulong4 hetdsl_ndrange)"), "{}", r.text);
    }

    #[test]
    fn a_macro_for_the_kernel_qualifier_still_makes_a_kernel() {
        let src = "#define KERNEL_FQ __kernel __attribute__((reqd_work_group_size(64, 1, 1)))\n\
                   KERNEL_FQ void k(__global uint* o) { o[0] = get_num_groups(0); }\n";
        let r = rewrite(src, "").unwrap();
        assert_eq!(r.ndrange_param, ["k"]);
    }

    #[test]
    fn sizes_the_parameter_cannot_reach_are_refused_with_the_place() {
        // Through a macro in a helper.
        let src = "#define GSIZE get_global_size(0)\nint width(void) {\n  return GSIZE;\n}\n\
                   __kernel void k(__global int* o) { o[0] = width() + get_global_size(0); }\n";
        let e = rewrite(src, "").unwrap_err();
        assert_eq!(e.line, 3);
        assert!(e.message.contains("the macro `GSIZE`") && e.message.contains("`width`"), "{e}");
        // A kernel called by another kernel.
        let src = "__kernel void b(__global int* o) { o[0] = get_global_size(0); }\n\
                   __kernel void a(__global int* o) {\n  b(o);\n}\n";
        let e = rewrite(src, "").unwrap_err();
        assert_eq!(e.line, 3);
        assert!(e.message.contains("`a` calls the kernel `b`"), "{e}");
        // A kernel defined by a macro.
        let src = "#define MAKE(T) __kernel void k(__global T* o) { o[0] = get_global_size(0); }\n\
                   MAKE(uint)\n";
        let e = rewrite(src, "").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.message.contains("the macro `MAKE`"), "{e}");
        // The same with a group id needs no parameter, so it is rewritten.
        let src = "#define MAKE(T) __kernel void k(__global T* o) { o[0] = get_group_id(0); }\n\
                   MAKE(uint)\n";
        assert!(rewrite(src, "").unwrap().text.contains("hetdsl_group_id"));
    }

    #[test]
    fn structs_and_initialisers_are_not_functions() {
        let src = "typedef struct { int a; } S;\nconstant int t[2] = { 1, 2 };\n\
                   __kernel void k(__global S* s) { s[get_group_id(0)].a = get_num_groups(0); }\n";
        let r = rewrite(src, "").unwrap();
        assert_eq!(r.ndrange_param, ["k"]);
        assert!(r.text.contains("__global S* s, ulong4 hetdsl_ndrange)"));
    }

    #[test]
    fn only_what_the_build_options_select_counts() {
        let src = "#if 0\nint width(void) { return get_global_size(0); }\n#endif\n\
                   #ifdef WIDTH\nint w2(void) {\n  return get_num_groups(0);\n}\n#endif\n\
                   __kernel void k(__global int* o) { o[0] = get_global_size(0); }\n";
        let r = rewrite(src, "").unwrap();
        assert_eq!(r.ndrange_param, ["k"]);
        let e = rewrite(src, "-D WIDTH=1").unwrap_err();
        assert_eq!(e.line, 6);
        assert!(e.message.contains("`w2`"), "{e}");
        // A device-dependent branch counts, as does every line of a source whose conditionals
        // hetdsl-decl cannot read.
        let e = rewrite(&src.replace("WIDTH", "__GPU__"), "").unwrap_err();
        assert!(e.message.contains("`w2`"), "{e}");
        assert!(rewrite(&format!("{src}#endif\n"), "").is_err());
    }

    #[test]
    fn a_macro_defined_in_two_branches_reaches_what_the_selected_one_names() {
        let src =
            "#ifdef WHOLE\n#define COUNT get_num_groups(0)\n#else\n#define COUNT 64\n#endif\n\
                   int count(void) { return COUNT; }\n\
                   __kernel void k(__global int* o) { o[0] = count(); }\n";
        let r = rewrite(src, "").unwrap();
        assert!(r.ndrange_param.is_empty());
        assert!(!r.text.contains("#define get_global_size"), "{}", r.text);
        let e = rewrite(src, "-DWHOLE").unwrap_err();
        assert!(e.message.contains("the macro `COUNT`") && e.message.contains("`count`"), "{e}");
    }
}
