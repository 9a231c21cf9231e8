//! The words of a declaration: qualifiers, handle types, a parameter's type as written, what
//! a `typedef` of a pointer stands for, and what a struct's `__attribute__`s say.

use super::super::attrs::StructAttrs;
use super::super::expr;
use super::super::lex::Tok;
use super::super::{AddrSpace, ParseError, Ty};
use super::Parser;

/// A `typedef` of a pointer (`typedef __global const float* cfptr;`): a parameter of that
/// type is a pointer into `space`, to `pointee`.
#[derive(Debug, Clone)]
pub(super) struct PtrTypedef {
    pub(super) pointee: Ty,
    pub(super) space: Option<AddrSpace>,
    pub(super) const_pointee: bool,
    /// How many `*`s the typedef holds (through typedefs of typedefs).
    pub(super) pointers: usize,
}

/// OpenCL's image, sampler and other opaque handle types.
pub(super) fn is_image_or_sampler(t: &str) -> bool {
    (t.starts_with("image") && t.ends_with("_t"))
        || matches!(
            t,
            "sampler_t" | "event_t" | "clk_event_t" | "queue_t" | "reserve_id_t" | "pipe"
        )
}

pub(super) fn is_qualifier(w: &str) -> bool {
    matches!(w, "const" | "volatile" | "restrict" | "__restrict" | "__restrict__")
}

/// The parameter's type as written, without its name: `__global const float*`.
pub(super) fn type_text(toks: &[Tok], name: &str) -> String {
    let mut out = String::new();
    let mut brackets = 0usize;
    for t in toks {
        if t.ident() == Some(name) {
            continue;
        }
        let s = t.text();
        // `float*`, `float[N * 2]`: no space before a declarator's punctuation nor inside the
        // brackets' ends.
        let tight = match &*s {
            "[" | "]" => true,
            "*" => brackets == 0,
            _ => out.ends_with('['),
        };
        if !out.is_empty() && !tight {
            out.push(' ');
        }
        match &*s {
            "[" => brackets += 1,
            "]" => brackets = brackets.saturating_sub(1),
            _ => {}
        }
        out += &s;
    }
    out
}

impl Parser {
    /// Skips `__attribute__((..))` groups, telling what they say of a struct's layout.
    pub(super) fn attributes(&mut self) -> Result<StructAttrs, ParseError> {
        let mut attrs = StructAttrs::default();
        while self.peek_ident() == Some("__attribute__") {
            self.pos += 1;
            let inner = self.skip_group()?;
            for (i, t) in inner.iter().enumerate() {
                match t.ident() {
                    Some("packed" | "__packed__") => attrs.packed = true,
                    Some("aligned" | "__aligned__") => {
                        // `aligned(N)`; a bare `aligned` means the target's largest alignment,
                        // which this reader does not know: the layout is then unknown.
                        let n = match (inner.get(i + 1), inner.get(i + 2)) {
                            (Some(p), Some(n)) if p.is_punct('(') => expr::int_literal(&n.text()),
                            _ => None,
                        };
                        attrs = attrs.and(StructAttrs { packed: false, aligned: Some(n) });
                    }
                    _ => {}
                }
            }
        }
        Ok(attrs)
    }
}
