//! The preprocessor, run as the OpenCL compiler runs it over the scanned tokens: conditionals
//! (`#if`, `#ifdef`, `#ifndef`, `#elif`, `#else`, `#endif`) decide which lines exist, and
//! `#define`s (from the source and from the build options' `-D`) expand in place (the macros
//! module expands them).
//! A condition the reader cannot decide is an error, never a guess: reading the wrong branch
//! would check the Rust declaration against a kernel the compiler never sees.

use std::collections::{HashMap, HashSet};

use super::expr;
use super::lex::{Kind, Raw, Tok};
use super::macros::{self, Macros};
use super::ParseError;

/// Whether a line exists for the compiler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineState {
    Active,
    Skipped,
    /// Inside a conditional whose outcome depends on the device (`#ifdef cl_khr_fp64`), or,
    /// for [`super::line_states`], one the reader cannot evaluate.
    Undecided,
}

use LineState as State;

/// One `#if` … `#endif` chain.
struct Group {
    /// The state around the chain.
    outer: State,
    /// The state of the branch being read.
    branch: State,
    /// A branch of the chain was taken, so the rest are skipped.
    taken: bool,
    /// The chain depends on the device from this branch on: its line and why.
    undecided: Option<(usize, String)>,
    seen_else: bool,
    line: usize,
}

/// Why a condition has no value.
enum Cond {
    /// It depends on the device the compiler builds for.
    Device(String),
    /// The reader cannot evaluate it (function-like macro, malformed expression…).
    Unreadable(String),
}

/// Names the OpenCL compiler defines (or not) by device, version and options: their value is
/// unknown when reading a source that is built for several devices.
fn device_macro(name: &str) -> bool {
    ["__OPENCL_", "__opencl_c_", "cl_khr_", "cl_amd_", "cl_intel_", "cl_nv_", "cl_ext_", "cl_arm_"]
        .iter()
        .any(|p| name.starts_with(p))
        || name.starts_with("CL_VERSION_")
        || matches!(
            name,
            "__IMAGE_SUPPORT__"
                | "__ENDIAN_LITTLE__"
                | "__EMBEDDED_PROFILE__"
                | "__FAST_RELAXED_MATH__"
                | "__ROUNDING_MODE__"
                | "FP_FAST_FMA"
                | "FP_FAST_FMAF"
                | "FP_FAST_FMA_HALF"
                | "__SPIR__"
                | "__SPIR32__"
                | "__SPIR64__"
                | "__SPIRV__"
                | "__clang__"
                | "__llvm__"
                | "__GNUC__"
                | "__NV_CL_C_VERSION"
                | "__AMD__"
                | "__GPU__"
                | "__CPU__"
                | "__APPLE__"
                | "__x86_64__"
                | "__i386__"
                | "__aarch64__"
                | "__LP64__"
                | "__PTX__"
                | "__NVPTX__"
                | "__AMDGCN__"
        )
}

fn joined(toks: &[Tok]) -> String {
    let mut out = String::new();
    for t in toks {
        if !out.is_empty() && !t.glued {
            out.push(' ');
        }
        out += &t.text();
    }
    out
}

/// The conditionals open at a point of the source, innermost last.
#[derive(Default)]
struct Conditionals {
    groups: Vec<Group>,
    /// Macros defined or undefined inside a device-dependent branch: whether and how they are
    /// defined after it depends on the device too.
    uncertain: HashSet<String>,
    /// A condition the reader cannot evaluate counts as device-dependent, not as an error:
    /// for callers that keep both branches of such a conditional rather than refuse.
    lenient: bool,
}

impl Conditionals {
    fn state(&self) -> State {
        self.groups.last().map_or(State::Active, |g| g.branch)
    }

    /// Runs `#kw args` if it is a conditional directive; `Ok(false)` if it is none.
    fn directive(
        &mut self,
        kw: &str,
        args: &[Tok],
        line: usize,
        macros: &Macros,
        steps: &mut usize,
    ) -> Result<bool, ParseError> {
        let stray = || ParseError::new(line, format!("`#{kw}` without an `#if` before it"));
        match kw {
            "if" | "ifdef" | "ifndef" => {
                let state = self.state();
                let mut g = Group {
                    outer: state,
                    branch: state,
                    taken: false,
                    undecided: None,
                    seen_else: false,
                    line,
                };
                if state == State::Active {
                    let verdict = self.verdict(kw, args, line, macros, steps)?;
                    take(&mut g, verdict, line);
                }
                self.groups.push(g);
            }
            "elif" => {
                let g = self.groups.last().ok_or_else(stray)?;
                if g.seen_else {
                    return Err(ParseError::new(line, "`#elif` after `#else`"));
                }
                let open = g.outer == State::Active && g.undecided.is_none() && !g.taken;
                let verdict =
                    if open { Some(self.verdict(kw, args, line, macros, steps)?) } else { None };
                let g = self.groups.last_mut().ok_or_else(stray)?;
                match verdict {
                    Some(v) => take(g, v, line),
                    None if g.outer != State::Active => {}
                    None if g.undecided.is_some() => g.branch = State::Undecided,
                    None => g.branch = State::Skipped,
                }
            }
            "else" => {
                let g = self.groups.last_mut().ok_or_else(stray)?;
                if std::mem::replace(&mut g.seen_else, true) {
                    return Err(ParseError::new(line, "a second `#else` in one `#if`"));
                }
                if g.outer == State::Active {
                    g.branch = if g.undecided.is_some() {
                        State::Undecided
                    } else if g.taken {
                        State::Skipped
                    } else {
                        g.taken = true;
                        State::Active
                    };
                }
            }
            "endif" => {
                self.groups.pop().ok_or_else(stray)?;
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The value of the condition of `#if`/`#elif`/`#ifdef`/`#ifndef`.
    fn verdict(
        &self,
        kw: &str,
        args: &[Tok],
        line: usize,
        macros: &Macros,
        steps: &mut usize,
    ) -> Result<Result<bool, String>, ParseError> {
        let by_device = |name: &str| device_macro(name) || self.uncertain.contains(name);
        let verdict = match kw {
            "ifdef" | "ifndef" => match args {
                [t] if t.ident().is_some() => {
                    let name = t.ident().unwrap_or_default();
                    if !macros.defined(name) && by_device(name) {
                        Err(Cond::Device(format!("the compiler defines `{name}` for some devices")))
                    } else {
                        Ok(macros.defined(name) == (kw == "ifdef"))
                    }
                }
                _ => Err(Cond::Unreadable(format!("`#{kw}` takes one macro name"))),
            },
            _ => condition(args, macros, &by_device, steps),
        };
        match verdict {
            Ok(v) => Ok(Ok(v)),
            Err(Cond::Device(why)) => Ok(Err(why)),
            Err(Cond::Unreadable(why)) if self.lenient => Ok(Err(why)),
            Err(Cond::Unreadable(why)) => Err(ParseError::new(
                line,
                format!(
                    "cannot evaluate `#{kw} {}`: {why}; the reader refuses to guess which \
                     branch the compiler takes",
                    joined(args)
                ),
            )),
        }
    }

    fn finish(&self) -> Result<(), ParseError> {
        match self.groups.last() {
            Some(g) => Err(ParseError::new(g.line, "an `#if` without its `#endif`")),
            None => Ok(()),
        }
    }
}

/// Sets a group's branch by its condition's value, or why it has none.
fn take(g: &mut Group, verdict: Result<bool, String>, line: usize) {
    match verdict {
        Ok(true) => {
            g.branch = State::Active;
            g.taken = true;
        }
        Ok(false) => g.branch = State::Skipped,
        Err(why) => {
            g.branch = State::Undecided;
            g.undecided = Some((line, why));
        }
    }
}

/// Runs the directives of `raw` in source order (a macro applies from its `#define` to its
/// `#undef`), with the object-like macros `predefined` in force from the start, and returns
/// the tokens the compiler reads, expanded.
pub(super) fn expand(
    raw: Vec<Raw>,
    predefined: HashMap<String, Vec<Tok>>,
) -> Result<Vec<Tok>, ParseError> {
    let mut macros = Macros { object: predefined, ..Macros::default() };
    let mut conds = Conditionals::default();
    let mut out = Vec::new();
    // The active tokens since the last `#define`/`#undef`, expanded together so that a
    // function-like macro's arguments may span lines and conditionals.
    let mut pending = Vec::new();
    let mut steps = 0;
    for item in raw {
        let state = conds.state();
        match item {
            Raw::Directive(d, line) => {
                let kw = d.first().and_then(Tok::ident).unwrap_or("");
                let args = d.get(1..).unwrap_or(&[]);
                if conds.directive(kw, args, line, &macros, &mut steps)? {
                    continue;
                }
                match kw {
                    _ if state == State::Skipped => {}
                    // What cannot change a declaration may sit in a device-dependent branch:
                    // `#pragma OPENCL EXTENSION` and `#error` are the usual contents.
                    "pragma" | "line" | "error" | "warning" | "" if state == State::Undecided => {}
                    _ if state == State::Undecided => return Err(undecided(&conds.groups)),
                    "define" | "undef" => {
                        let run = std::mem::take(&mut pending);
                        macros::expand(run, &macros, true, &mut steps, &mut out)?;
                        macros.apply(kw, args, line)?;
                    }
                    "error" => return Err(stop(args, line)),
                    _ => {}
                }
            }
            Raw::Tok(t) => match state {
                State::Active => pending.push(t),
                State::Skipped => {}
                State::Undecided => return Err(undecided(&conds.groups)),
            },
        }
    }
    conds.finish()?;
    macros::expand(pending, &macros, true, &mut steps, &mut out)?;
    Ok(out)
}

/// The state of each of the first `lines` lines of `raw` (0-based): whether the compiler
/// reads it, skips it, or reads it on some devices only. A condition the reader cannot
/// evaluate, or one naming a macro defined in a device-dependent branch, is undecided too.
pub(super) fn line_states(
    raw: Vec<Raw>,
    predefined: HashMap<String, Vec<Tok>>,
    lines: usize,
) -> Result<Vec<State>, ParseError> {
    let mut macros = Macros { object: predefined, ..Macros::default() };
    let mut conds = Conditionals { lenient: true, ..Conditionals::default() };
    let mut out = Vec::with_capacity(lines);
    let mut steps = 0;
    for item in raw {
        let state = conds.state();
        let (d, line) = match item {
            Raw::Directive(d, line) => (d, line),
            Raw::Tok(t) => (Vec::new(), t.line),
        };
        // The lines up to this item's are read in the state before it.
        if out.len() <= line {
            out.resize(line + 1, state);
        }
        let kw = d.first().and_then(Tok::ident).unwrap_or("");
        let args = d.get(1..).unwrap_or(&[]);
        if conds.directive(kw, args, line, &macros, &mut steps)?
            || !matches!(kw, "define" | "undef")
        {
            continue;
        }
        let name = args.first().and_then(Tok::ident).unwrap_or_default();
        match state {
            State::Active => {
                conds.uncertain.remove(name);
                macros.apply(kw, args, line)?;
            }
            State::Skipped => {}
            State::Undecided => {
                macros.object.remove(name);
                macros.function.remove(name);
                conds.uncertain.insert(name.to_string());
            }
        }
    }
    conds.finish()?;
    out.resize(lines, conds.state());
    Ok(out)
}

/// The error for an active `#error`.
fn stop(args: &[Tok], line: usize) -> ParseError {
    let msg = format!("`#error {}`: with these defines the compiler stops here", joined(args));
    ParseError::new(line, msg)
}

/// The error for code inside a device-dependent conditional, at the conditional's line.
fn undecided(groups: &[Group]) -> ParseError {
    let (line, why) = groups
        .iter()
        .rev()
        .find_map(|g| g.undecided.clone())
        .unwrap_or((0, "it depends on the device".into()));
    ParseError::new(
        line,
        format!(
            "cannot tell which branch of this conditional the OpenCL compiler reads: {why}, and \
             the branches hold code or `#define`s. Keep kernel signatures, the types they use \
             and their `#define`s outside device-dependent conditionals"
        ),
    )
}

/// The value of an `#if` condition: `defined` resolved, macros expanded, other names 0.
fn condition(
    args: &[Tok],
    macros: &Macros,
    by_device: &dyn Fn(&str) -> bool,
    steps: &mut usize,
) -> Result<bool, Cond> {
    let mut resolved = Vec::new();
    let mut i = 0;
    while let Some(t) = args.get(i) {
        if t.ident() != Some("defined") {
            resolved.push(t.clone());
            i += 1;
            continue;
        }
        let (name, len) = match (args.get(i + 1), args.get(i + 2), args.get(i + 3)) {
            (Some(n), ..) if n.ident().is_some() => (n, 2),
            (Some(o), Some(n), Some(c))
                if o.is_punct('(') && n.ident().is_some() && c.is_punct(')') =>
            {
                (n, 4)
            }
            _ => {
                return Err(Cond::Unreadable(
                    "`defined` takes a macro name, bare or in parentheses".into(),
                ))
            }
        };
        let name = name.ident().unwrap_or_default();
        if !macros.defined(name) && by_device(name) {
            return Err(Cond::Device(format!("the compiler defines `{name}` for some devices")));
        }
        let value = if macros.defined(name) { "1" } else { "0" };
        resolved.push(Tok { kind: Kind::Number(value.into()), ..t.clone() });
        i += len;
    }
    // Function-like macros are left for the refusal below.
    let mut expanded = Vec::new();
    macros::expand(resolved, macros, false, steps, &mut expanded)
        .map_err(|e| Cond::Unreadable(e.message))?;
    for t in &mut expanded {
        let Some(name) = t.ident() else { continue };
        if name == "defined" {
            return Err(Cond::Unreadable("`defined` produced by a macro".into()));
        }
        if macros.function.contains_key(name) {
            return Err(Cond::Unreadable(format!(
                "`{name}` is a function-like macro, which this reader does not expand"
            )));
        }
        if by_device(name) {
            return Err(Cond::Device(format!("the compiler sets `{name}` by device")));
        }
        if matches!(name, "true" | "false") {
            return Err(Cond::Unreadable(format!(
                "C reads `{name}` in a condition as 0 and C++ as its value; write 1 or 0"
            )));
        }
        // C: a name that is no macro is 0 in a condition.
        t.kind = Kind::Number("0".into());
    }
    expr::eval(&expanded).map(|v| v != 0).map_err(Cond::Unreadable)
}

#[cfg(test)]
mod tests {
    use super::super::line_states;
    use super::LineState::{self, Active, Skipped, Undecided};

    fn states(text: &str, defines: &[(&str, &str)]) -> Vec<LineState> {
        let defines: Vec<(String, String)> =
            defines.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect();
        line_states(text, &defines).unwrap()
    }

    #[test]
    fn lines_follow_the_branch_the_defines_select() {
        let src = "a\n#if 0\nb\n#endif\n#ifdef USE_GROUPS\n#define GID 1\n#else\n#define GID 2\n#endif\nc";
        let off = states(src, &[]);
        assert_eq!(off.len(), 10);
        assert_eq!(
            (off[0], off[2], off[5], off[7], off[9]),
            (Active, Skipped, Skipped, Active, Active)
        );
        let on = states(src, &[("USE_GROUPS", "1")]);
        assert_eq!((on[2], on[5], on[7], on[9]), (Skipped, Active, Skipped, Active));
        // A source `#define` decides a later condition, `#elif` chains included.
        let src = "#define V 2\n#if V == 1\nx\n#elif V == 2\ny\n#else\nz\n#endif\n";
        let s = states(src, &[]);
        assert_eq!((s[2], s[4], s[6]), (Skipped, Active, Skipped));
    }

    #[test]
    fn conditions_the_reader_cannot_decide_keep_both_branches() {
        // Device-dependent, nested conditionals inside it included.
        let src = "#ifdef cl_khr_fp64\nx\n#if 1\ny\n#endif\n#else\nz\n#endif\nw";
        let s = states(src, &[]);
        assert_eq!((s[1], s[3], s[6], s[8]), (Undecided, Undecided, Undecided, Active));
        // Unreadable (a function-like macro in the condition): undecided, not an error.
        let src = "#define F(x) x\n#if F(1)\nx\n#else\ny\n#endif\n";
        let s = states(src, &[]);
        assert_eq!((s[2], s[4]), (Undecided, Undecided));
        // A macro (un)defined in a device-dependent branch makes what tests it undecided too.
        let src = "#define A 1\n#ifdef __GPU__\n#define B 1\n#undef A\n#endif\n\
                   #ifdef B\nx\n#endif\n#if A\ny\n#endif\n#define B 0\n#if B\nz\n#endif\n";
        let s = states(src, &[]);
        assert_eq!((s[6], s[9], s[13]), (Undecided, Undecided, Skipped));
    }

    #[test]
    fn malformed_conditionals_are_errors() {
        assert!(line_states("#if 1\nx\n", &[]).is_err());
        assert!(line_states("x\n#endif\n", &[]).is_err());
        assert!(line_states("#if 1\n#else\n#else\n#endif\n", &[]).is_err());
    }
}
