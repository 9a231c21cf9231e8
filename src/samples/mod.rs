//! The ported samples: the AMD APP SDK ones (Binomial, Mandelbrot, NBody) and the rest of the
//! papers' suite (Gaussian, Taylor, Aho, Ray, RAP, BM3D). Each module holds the sample's
//! deterministic input generator, its launch, its independent CPU reference and its tolerance
//! rule; the examples, the suite runner and the CI test all use them from here.

pub mod aho;
pub mod binomial;
pub mod bm3d;
pub mod gaussian;
pub mod mandelbrot;
pub mod nbody;
pub mod rap;
pub mod raytrace;
pub mod taylor;

use std::path::PathBuf;

use hetdsl::{Balancer, KernelSource, Launch, Program, Report};

use crate::check::Verdict;

/// Problem sizes: `Small` runs in well under a second per kernel on PoCL with two cores (CI);
/// `Paper` keeps the fastest GPU of the test machine (an H200) busy for about 1–2 s.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Size {
    Small,
    Paper,
}

impl std::str::FromStr for Size {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "small" => Ok(Size::Small),
            "paper" => Ok(Size::Paper),
            other => Err(format!("unknown size `{other}`: expected `small` or `paper`")),
        }
    }
}

/// A ported sample with its inputs generated, ready to run any number of times.
pub trait Sample {
    /// The name used on the suite's command line (`mandelbrot`, `ray1`, …).
    fn name(&self) -> &str;
    /// The problem in words (sizes, parameters), for tables and reports.
    fn describe(&self) -> String;
    /// The OpenCL source of the kernel.
    fn source(&self) -> hetdsl::Result<KernelSource>;
    /// Extra OpenCL build options the kernel needs (none by default).
    fn build_options(&self) -> &'static str {
        ""
    }
    /// Co-execute the kernel once on `devices` (positions in `program.devices()`, all if
    /// `None`) with `balancer`. The outputs are poisoned first, so a work-item that was never
    /// run shows up in [`Sample::verify`].
    fn run(
        &mut self,
        program: &Program,
        devices: Option<&[usize]>,
        balancer: Box<dyn Balancer>,
    ) -> hetdsl::Result<Report>;
    /// Compare the last run's output with the CPU reference (computed once, then cached).
    fn verify(&mut self) -> Verdict;
    /// The output as an RGBA image (width, height, pixels), for samples that make one.
    fn image(&self) -> Option<(usize, usize, Vec<[u8; 4]>)> {
        None
    }
}

/// Every sample the suite knows, in the papers' order (Ray has two scenes).
pub const NAMES: &[&str] = &[
    "binomial",
    "gaussian",
    "mandelbrot",
    "nbody",
    "taylor",
    "aho",
    "bm3d",
    "rap",
    "ray1",
    "ray2",
];

/// The sample called `name`, with its inputs for `size`.
pub fn create(name: &str, size: Size) -> Option<Box<dyn Sample>> {
    Some(match name {
        "binomial" => Box::new(binomial::Binomial::new(size)),
        "mandelbrot" => Box::new(mandelbrot::Mandelbrot::new(size)),
        "nbody" => Box::new(nbody::NBody::new(size)),
        "gaussian" => Box::new(gaussian::Gaussian::new(size)),
        "taylor" => Box::new(taylor::Taylor::new(size)),
        "aho" => Box::new(aho::Aho::new(size)),
        "bm3d" => Box::new(bm3d::Bm3d::new(size)),
        "rap" => Box::new(rap::Rap::new(size)),
        "ray1" => Box::new(raytrace::RayTrace::new(size, raytrace::Scene::Clustered)),
        "ray2" => Box::new(raytrace::RayTrace::new(size, raytrace::Scene::Spread)),
        _ => return None,
    })
}

/// A kernel file of `kernels/`. The directory can be moved with `HETDSL_SAMPLES_KERNELS`
/// (binaries built here and run on another machine).
pub fn kernel_source(file: &str) -> hetdsl::Result<KernelSource> {
    let dir = std::env::var_os("HETDSL_SAMPLES_KERNELS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/kernels")));
    // The include resolver wants absolute paths.
    let dir = dir.canonicalize().unwrap_or(dir);
    KernelSource::from_file(dir.join(file), std::slice::from_ref(&dir))
}

/// Build `sample`'s kernel for the runtime's devices, with the options it asks for.
pub fn build(runtime: &hetdsl::Runtime, sample: &dyn Sample) -> hetdsl::Result<Program> {
    runtime.program_with_options(&sample.source()?, sample.build_options())
}

/// Apply the device selection and the balancer to a launch.
pub(crate) fn place<'a>(
    launch: Launch<'a>,
    devices: Option<&[usize]>,
    balancer: Box<dyn Balancer>,
) -> Launch<'a> {
    let launch = launch.balancer(balancer);
    match devices {
        Some(d) => launch.on_devices(d),
        None => launch,
    }
}

/// How many work-items a paper-sized check compares (the CPU reference of all of them would
/// take far longer than the run).
pub(crate) const PAPER_CHECK_BUDGET: usize = 20_000;

/// The work-items to check for a problem of `total` work-items.
pub(crate) fn check_indices(total: usize, size: Size, seed: u64) -> Vec<usize> {
    match size {
        Size::Small => (0..total).collect(),
        Size::Paper => crate::check::sample_indices(total, PAPER_CHECK_BUDGET, seed),
    }
}
