//! Procedural macros of hetdsl: `kernel!` and `#[coexec]`. Filled in by issue 5.
