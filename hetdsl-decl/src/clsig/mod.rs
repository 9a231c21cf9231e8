//! A reader of OpenCL C declarations: kernel signatures, the `typedef`s and structs they use,
//! and the `#define`s in front of them. It reads a flattened source (includes
//! already resolved) and skips everything else, function bodies included; it is not a C
//! compiler, only enough of one to check a Rust declaration against a kernel.
//!
//! The preprocessor's conditionals are evaluated as the compiler evaluates them, with the
//! defines of the build options ([`parse_with_defines`], [`defines_from_options`]), so the
//! reader sees the branch the compiler builds. A condition it cannot decide is an error.
//!
//! Pure (text in, declarations out) and total: every input gives `Ok` or a [`ParseError`],
//! never a panic; the fuzz target in `hetdsl-decl/fuzz` holds it to that.

mod attrs;
mod decl;
mod expr;
mod lex;
mod macros;
mod ndrange;
mod preproc;
mod reach;
mod types;
mod writes;

use std::collections::HashMap;
use std::fmt;

pub use ndrange::{DimUse, RequiredLocal};
pub use preproc::LineState;
pub use types::{Field, Layout, Scalar, StructDef, Ty};

/// A declaration the reader could not understand, at a 0-based line of the flattened source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub line: usize,
    pub message: String,
}

impl ParseError {
    fn new(line: usize, message: impl Into<String>) -> Self {
        ParseError { line, message: message.into() }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// An OpenCL address space.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddrSpace {
    Global,
    Constant,
    Local,
    Private,
}

impl AddrSpace {
    fn from_name(name: &str) -> Option<AddrSpace> {
        Some(match name {
            "__global" | "global" => AddrSpace::Global,
            "__constant" | "constant" => AddrSpace::Constant,
            "__local" | "local" => AddrSpace::Local,
            "__private" | "private" => AddrSpace::Private,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            AddrSpace::Global => "__global",
            AddrSpace::Constant => "__constant",
            AddrSpace::Local => "__local",
            AddrSpace::Private => "__private",
        }
    }
}

/// What a pointer parameter points into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pointer {
    /// `__private` when no address space is written.
    pub space: AddrSpace,
    /// The pointee is `const` (the kernel promises not to write it).
    pub const_pointee: bool,
}

/// One kernel parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    pub name: String,
    /// The value's type, or the pointee's for a pointer.
    pub ty: Ty,
    pub pointer: Option<Pointer>,
    /// An address space written on a non-pointer parameter (invalid for a kernel argument).
    pub value_space: Option<AddrSpace>,
    /// Pointer to pointer, image, sampler and the like: why it cannot be a hetdsl kernel
    /// argument, as a sentence.
    pub unsupported: Option<String>,
    /// The parameter's type as written (macros expanded), e.g. `__global const float*`.
    pub text: String,
    pub line: usize,
    /// Whether the kernel writes through this pointer, and where: a write seen (an assignment
    /// through `p[..]`, `*p` or `p->`, an atomic on it, a `vstoreN` into it), in the kernel's
    /// body, through a copy of the pointer (a local, a struct or an array holding it, a
    /// function returning it), or inside a function of the source the pointer is passed to
    /// (the line is then that function's); or a place the pointer goes where the reader cannot
    /// follow it, where it counts as written.
    pub written_at: Option<Written>,
    /// Where the kernel uses the value an atomic on this pointer returns (its old value: a
    /// counter handing out slots, a compare-and-swap's claim), and the atomic's name; in the
    /// kernel's body or in a function of the source the pointer is passed to.
    pub atomic_value_at: Option<(usize, String)>,
    /// Each way the kernel updates an element in place (`+=`, `++`, `atomic_max`, a
    /// compare-and-swap), with the first line it does so: what a merge must fold.
    pub updates: Vec<(String, usize)>,
    /// Where the kernel first reads an element's value other than in an update or a
    /// compare-and-swap loop, and what it reads (`` `bins[b]` ``): a merged sum's copies hold
    /// one package's part.
    pub value_read_at: Option<(usize, String)>,
}

/// Why the reader takes a pointer parameter to be written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Written {
    /// A write through the pointer at this 0-based line.
    At(usize),
    /// At this 0-based line the pointer goes where the reader cannot follow it; `why` says
    /// where, as a phrase ("a pointer into it is passed to `f`, …"). The kernel may write
    /// through it there.
    Maybe { line: usize, why: String },
}

impl Written {
    pub fn line(&self) -> usize {
        match self {
            Written::At(line) | Written::Maybe { line, .. } => *line,
        }
    }
}

/// A `__kernel` function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kernel {
    pub name: String,
    pub line: usize,
    /// The parameters, or why they could not be read.
    pub params: Result<Vec<Param>, ParseError>,
    /// A definition (with a body, whose writes were looked for), not a prototype.
    pub defined: bool,
    /// The highest dimension the kernel passes to a work-item built-in, where it does (`None`
    /// for dimension 0 alone, or a kernel that asks `get_work_dim()`).
    pub dims: Option<DimUse>,
    /// Its `reqd_work_group_size`, where it has one.
    pub required_local: Option<RequiredLocal>,
}

/// The declarations of a source.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Source {
    pub kernels: Vec<Kernel>,
    pub structs: Vec<StructDef>,
    /// `typedef` names and what they stand for.
    pub typedefs: HashMap<String, Ty>,
    /// Typedef names and `struct Tag`s whose declaration the reader could not follow, and why:
    /// a kernel using one sees an unknown type, and the message can say why.
    pub unread: HashMap<String, ParseError>,
}

impl Source {
    pub fn kernel(&self, name: &str) -> Option<&Kernel> {
        // A prototype may come before the definition: prefer one whose parameters were read,
        // then the definition, whose body says which parameters the kernel writes.
        let rank = |k: &Kernel| (k.params.is_ok(), k.defined);
        let found = self.kernels.iter().filter(|k| k.name == name);
        found.fold(None, |best: Option<&Kernel>, k| match best {
            Some(b) if rank(b) >= rank(k) => Some(b),
            _ => Some(k),
        })
    }

    /// The struct a typedef or a struct tag of that name stands for (an index into `structs`).
    pub fn struct_named(&self, name: &str) -> Option<usize> {
        match self.typedefs.get(name) {
            Some(Ty::Struct(i)) => Some(*i),
            _ => self.structs.iter().position(|s| s.name == format!("struct {name}")),
        }
    }
}

impl Source {
    /// Checks what any result of [`parse`] of `text` must satisfy: struct layouts that are C
    /// layouts (power-of-two alignment, size a multiple of it, fields in order without overlap)
    /// and lines inside the text. For the fuzz target and the corpus test.
    pub fn self_check(&self, text: &str) -> Result<(), String> {
        let lines = text.split('\n').count();
        for def in &self.structs {
            let Some(layout) = def.layout else { continue };
            if !layout.align.is_power_of_two() || layout.size % layout.align != 0 {
                return Err(format!(
                    "`{}` has size {} and alignment {}",
                    def.name, layout.size, layout.align
                ));
            }
            let mut end = 0;
            for field in &def.fields {
                let offset = field
                    .offset
                    .ok_or(format!("`{}` is laid out but `{}` is not", def.name, field.name))?;
                if offset < end {
                    return Err(format!(
                        "field `{}` of `{}` overlaps the one before",
                        field.name, def.name
                    ));
                }
                end = offset + field.ty.layout(&self.structs).map_or(0, |l| l.size);
            }
            if end > layout.size {
                return Err(format!("the fields of `{}` run past its size", def.name));
            }
        }
        for kernel in &self.kernels {
            if kernel.line >= lines {
                return Err(format!("kernel `{}` at line {} of {lines}", kernel.name, kernel.line));
            }
            for p in kernel.params.iter().flatten() {
                if p.name.is_empty() || p.line >= lines {
                    return Err(format!("parameter `{}` at line {} of {lines}", p.name, p.line));
                }
                // Display must terminate for every type the reader returns.
                let _ = p.ty.display(&self.structs).to_string();
            }
        }
        Ok(())
    }
}

/// Reads the declarations of a flattened OpenCL C source, built with no `-D` options.
pub fn parse(text: &str) -> Result<Source, ParseError> {
    parse_with_defines(text, &[])
}

/// Reads the declarations of a flattened OpenCL C source as the compiler sees it when built
/// with `defines` (name, value) given as `-D name=value` (see [`defines_from_options`]).
pub fn parse_with_defines(text: &str, defines: &[(String, String)]) -> Result<Source, ParseError> {
    decl::read(lex::tokens(text, defines)?)
}

/// Which lines of a flattened source the compiler reads when built with `defines` (as
/// [`parse_with_defines`] takes them): one state per line, 0-based, as `text.split('\n')`
/// numbers them. The lines of a conditional the reader cannot decide (device-dependent, or a
/// condition it cannot evaluate) are [`LineState::Undecided`], never guessed. Malformed
/// conditionals (an `#endif` too many or too few) are an error.
pub fn line_states(text: &str, defines: &[(String, String)]) -> Result<Vec<LineState>, ParseError> {
    let predefined = lex::predefined(defines)?;
    preproc::line_states(lex::scan(text)?, predefined, text.split('\n').count())
}

/// Reads the declarations of a flattened source as the compiler sees it when built with the
/// build-options string `options` (`"-D BLOCK=16 -DUSE_DOUBLE -cl-mad-enable"`): the `-D`s
/// are read by [`defines_from_options`]; a malformed one is an error at line 0.
///
/// A kernel's parameters: `read_with_options(&text, opts)?.kernel("saxpy")` then `.params`.
pub fn read_with_options(text: &str, options: &str) -> Result<Source, ParseError> {
    let defines = defines_from_options(options).map_err(|why| ParseError::new(0, why))?;
    parse_with_defines(text, &defines)
}

/// The macros that build options define: `-D NAME`, `-DNAME`, `-D NAME=VALUE`, `-DNAME=VALUE`
/// (`NAME` alone is `1`, as the compiler has it), and `__FAST_RELAXED_MATH__` for
/// `-cl-fast-relaxed-math`. Later definitions of a name win. A `-D` without a valid name is an
/// error.
pub fn defines_from_options(options: &str) -> Result<Vec<(String, String)>, String> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut words = options.split_whitespace();
    while let Some(word) = words.next() {
        let def = match word.strip_prefix("-D") {
            Some("") => words.next().ok_or("`-D` at the end of the options, without a name")?,
            Some(def) => def,
            None => {
                if word == "-cl-fast-relaxed-math" {
                    out.push(("__FAST_RELAXED_MATH__".into(), "1".into()));
                }
                continue;
            }
        };
        let (name, value) = def.split_once('=').unwrap_or((def, "1"));
        if !is_identifier(name) {
            return Err(format!("`-D {def}`: `{name}` is not a macro name"));
        }
        out.retain(|(n, _)| n != name);
        out.push((name.to_string(), value.to_string()));
    }
    Ok(out)
}

/// A C identifier: a letter or `_`, then letters, digits and `_`.
pub fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests;

/// Is the built-in `name` a compare-and-swap (`atomic_cmpxchg`, `atom_cmpxchg`,
/// `atomic_compare_exchange_*`)? The reader exempts its retry loops, and every merge folds it.
pub(crate) fn is_swap(name: &str) -> bool {
    ["atomic_cmpxchg", "atom_cmpxchg", "atomic_compare_exchange"]
        .iter()
        .any(|s| name.starts_with(s))
}
