//! Shared code of the hetdsl samples: inputs, CPU references, tolerance rules and runners of
//! the ported kernels ([`samples`]), plus the small utilities they need (a seeded RNG, a PNG
//! writer, SVG plots of a run, balancer names for the command line), and helpers for the
//! integration tests.

pub mod balancers;
pub mod check;
pub mod cli;
pub mod energy_ratio;
pub mod example;
pub mod measure;
pub mod png;
pub mod rng;
pub mod samples;
pub mod svg;

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
