//! Shared helpers for the ported samples (examples/) and the integration tests (tests/).

use hetdsl::{Program, Result, Runtime};

/// Path of a file under the repository's `kernels/` directory.
pub fn kernel_path(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels").join(name)
}

/// The runtime and a program built from `kernels/<name>`.
pub fn build(name: &str) -> Result<(Runtime, Program)> {
    let rt = Runtime::new()?;
    let source = hetdsl::KernelSource::from_file(kernel_path(name), &[kernel_path("include")])?;
    let program = rt.program(&source)?;
    Ok((rt, program))
}
