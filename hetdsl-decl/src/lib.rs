//! Declarations shared by hetdsl's macros (at compile time) and its runtime (at run time), so
//! that both read kernels and balancer specs with one and the same code:
//!
//! - [`clsig`]: a reader of OpenCL C declarations (kernel signatures, structs, typedefs) that
//!   evaluates the preprocessor's conditionals with the build options' `-D` defines;
//! - [`flatten`]: resolves a source's `#include`s into one text with `#line` directives;
//! - [`balancer`]: the registry of balancer names and the grammar of their options;
//! - [`declcheck`]: a declared parameter against the kernel's, for the macros and for sources
//!   loaded at run time;
//! - [`pattern`]: the rules of a partition pattern `a:b`, checked at compile or at run time.

pub mod argcheck;
pub mod balancer;
pub mod clsig;
pub mod declcheck;
pub mod flatten;
pub mod pattern;
