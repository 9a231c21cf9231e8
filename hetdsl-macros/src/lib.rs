//! Procedural macros of hetdsl: `kernel!` and `#[coexec]`.

mod clsig;
mod flatten;
