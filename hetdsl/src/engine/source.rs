//! A kernel's source as the compiler gets it: flattened, with `#line` directives naming the
//! user's files and lines.

use std::path::{Path, PathBuf};

use hetdsl_decl::flatten;

use crate::error::{Error, Result};

/// An OpenCL C source, flattened (includes resolved) and carrying `#line` directives so that
/// build logs name the original file and line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelSource {
    /// The root file's name, for messages.
    pub name: String,
    /// The flattened text handed to the compiler.
    pub text: String,
}

impl KernelSource {
    /// Read `path` and its `#include`s (searched beside each file, then in `include_dirs`).
    pub fn from_file(path: impl AsRef<Path>, include_dirs: &[PathBuf]) -> Result<Self> {
        let path = path.as_ref();
        let flat = flatten::flatten(path, include_dirs).map_err(|e| Error::Source {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
        Ok(KernelSource { name: path.display().to_string(), text: flat.text })
    }

    /// A source held in memory (already flattened); `name` is used in messages and `#line`.
    pub fn from_text(name: impl Into<String>, text: impl Into<String>) -> Self {
        let name = name.into();
        // Escaped as a C string literal: a raw `\` is an escape (`kernels\one.cl` failed to
        // build on `\o`), a raw line break ends the directive.
        let quoted = name
            .replace('\\', "\\\\")
            .replace('"', "\\\"")
            .replace('\n', "\\n")
            .replace('\r', "\\r");
        let text = format!("#line 1 \"{quoted}\"\n{}", text.into());
        KernelSource { name, text }
    }

    /// A source the `kernel!` macro embedded at compile time (already carries `#line`).
    #[doc(hidden)]
    pub fn embedded(name: &str, text: &str) -> Self {
        KernelSource { name: name.to_string(), text: text.to_string() }
    }
}
