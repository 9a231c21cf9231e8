//! The hetdsl samples and the benchmark harness that measures them, in two rooms:
//!
//! - [`samples`]: the ported kernels, each its `kernel!` declaration, deterministic inputs,
//!   launch, independent CPU reference and tolerance rule (with the seeded RNG and the
//!   comparison rules they share);
//! - [`harness`]: what runs and measures them (repeated timed runs, energy sampling and energy
//!   ratios, SVG plots, a PNG writer, command-line plumbing, the body of each sample's example).
//!
//! Plus two helpers for the integration tests: where the kernels live and how to build one.

pub mod harness;
pub mod iterate;
pub mod samples;

use hetdsl::{Program, Result, Runtime};

/// Path of a file under the repository's `kernels/` directory: `HETDSL_KERNELS` if set, else
/// the checkout the binary was built from, else `./kernels` (a binary copied to another machine
/// and run from a copy of the repository).
pub fn kernel_path(name: &str) -> std::path::PathBuf {
    let built = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels");
    let dir = match std::env::var_os("HETDSL_KERNELS") {
        Some(d) => d.into(),
        None if built.is_dir() => built,
        None => std::path::PathBuf::from("kernels"),
    };
    dir.join(name)
}

/// The runtime and a program built from `kernels/<name>`.
pub fn build(name: &str) -> Result<(Runtime, Program)> {
    let rt = Runtime::new()?;
    let source = hetdsl::KernelSource::from_file(kernel_path(name), &[kernel_path("include")])?;
    let program = rt.program(&source)?;
    Ok((rt, program))
}
