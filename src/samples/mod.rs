//! The ported samples: the AMD APP SDK ones (Binomial, Mandelbrot, NBody) and the rest of the
//! papers' suite (Gaussian, Taylor, Aho, Ray, RAP, BM3D), and the SDK's Reduction, which indexes
//! by `get_group_id`, a matrix-vector product whose pattern names a scalar parameter, and a
//! 7-point stencil over a 3-D NDRange, and two memory-bound kernels (saxpy, an element-wise
//! sum and product). Each module holds the sample's deterministic input
//! generator, its launch, its independent CPU reference and its tolerance
//! rule; the examples, the suite runner and the CI test all use them from here.

use std::ops::Range;

pub mod aho;
pub mod binomial;
pub mod bm3d;
pub mod check;
pub mod gaussian;
pub mod iterative;
pub mod mandelbrot;
pub mod matvec;
pub mod nbody;
pub mod rap;
pub mod raytrace;
pub mod reduction;
pub mod rng;
pub mod stencil3d;
pub mod stream;
pub mod taylor;

use hetdsl::{Balancer, DeviceInfo, Launch, Program, Report, Runtime};

use check::Verdict;

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

/// A ported sample: its kernel declared with `hetdsl::kernel!` (checked against the OpenCL
/// source at compile time) and built for a runtime's devices, its inputs generated, ready to
/// run any number of times.
///
/// A new sample writes its name, [`Sample::describe`], [`Sample::program`],
/// [`Sample::launch`] (poison the outputs, then the kernel's typed launch over the whole
/// problem) and [`Sample::verify`]; device selection, balancer and work-group range come from
/// the provided [`Sample::run`].
pub trait Sample {
    /// The name used on the suite's command line (`mandelbrot`, `ray1`, …).
    fn name(&self) -> &str;
    /// The problem in words (sizes, parameters), for tables and reports.
    fn describe(&self) -> String;
    /// The program the kernel was built into (`kernel.program()`).
    fn program(&self) -> &Program;
    /// Poison the outputs, so that a work-item that was never run shows up in
    /// [`Sample::verify`], and prepare the launch of the whole problem with the declared
    /// balancer on every device.
    fn launch(&mut self) -> hetdsl::Result<Launch<'_>>;
    /// Compare the last run's output with the CPU reference (computed once, then cached).
    fn verify(&mut self) -> Verdict;
    /// The output as an RGBA image (width, height, pixels), for samples that make one.
    fn image(&self) -> Option<(usize, usize, Vec<[u8; 4]>)> {
        None
    }

    /// The devices the kernel was built for; `run`'s device positions index this list.
    fn devices(&self) -> Vec<DeviceInfo> {
        self.program().devices()
    }

    /// Co-execute the kernel once on `devices` (positions in [`Sample::devices`], all if `None`)
    /// with `balancer` (the declared one if `None`), over the balancing units `groups` (all if
    /// `None`; see `Launch::groups`), the outputs poisoned first by [`Sample::launch`].
    fn run(
        &mut self,
        devices: Option<&[usize]>,
        balancer: Option<Box<dyn Balancer>>,
        groups: Option<Range<u64>>,
    ) -> hetdsl::Result<Report> {
        place(self.launch()?, devices, balancer, groups).run()
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
    "reduction",
    "matvec",
    "stencil3d",
    "saxpy",
    "elementwise",
];

/// The sample called `name`, with its inputs for `size` and its kernel built for `runtime`'s
/// devices.
pub fn create(name: &str, size: Size, runtime: &Runtime) -> Result<Box<dyn Sample>, String> {
    fn boxed<S: Sample + 'static>(s: hetdsl::Result<S>) -> Result<Box<dyn Sample>, String> {
        s.map(|s| Box::new(s) as Box<dyn Sample>).map_err(|e| e.to_string())
    }
    match name {
        "binomial" => boxed(binomial::Binomial::new(size, runtime)),
        "mandelbrot" => boxed(mandelbrot::Mandelbrot::new(size, runtime)),
        "nbody" => boxed(nbody::NBody::new(size, runtime)),
        "gaussian" => boxed(gaussian::Gaussian::new(size, runtime)),
        "taylor" => boxed(taylor::Taylor::new(size, runtime)),
        "aho" => boxed(aho::Aho::new(size, runtime)),
        "bm3d" => boxed(bm3d::Bm3d::new(size, runtime)),
        "rap" => boxed(rap::Rap::new(size, runtime)),
        "ray1" => boxed(raytrace::RayTrace::new(size, raytrace::Scene::Clustered, runtime)),
        "ray2" => boxed(raytrace::RayTrace::new(size, raytrace::Scene::Spread, runtime)),
        "reduction" => boxed(reduction::Reduction::new(size, runtime)),
        "matvec" => boxed(matvec::MatVec::new(size, runtime)),
        "stencil3d" => boxed(stencil3d::Stencil3d::new(size, runtime)),
        "saxpy" => boxed(stream::Saxpy::new(size, runtime)),
        "elementwise" => boxed(stream::SumProd::new(size, runtime)),
        other => Err(format!("no sample called `{other}`; samples: {}", NAMES.join(", "))),
    }
}

/// Apply the device selection, the balancer and the work-group range (when given) to a launch.
pub(crate) fn place<'a>(
    launch: Launch<'a>,
    devices: Option<&[usize]>,
    balancer: Option<Box<dyn Balancer>>,
    groups: Option<Range<u64>>,
) -> Launch<'a> {
    let launch = match balancer {
        Some(b) => launch.balancer(b),
        None => launch,
    };
    let launch = match groups {
        Some(r) => launch.groups(r),
        None => launch,
    };
    match devices {
        Some(d) => launch.on_devices(d),
        None => launch,
    }
}

/// How many work-items a paper-sized check compares (the CPU reference of all of them would
/// take far longer than the run).
pub const PAPER_CHECK_BUDGET: usize = 20_000;

/// Which work-groups a paper-sized check must reach beyond the even sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cover {
    /// The sample only: one reference per work-group would cost far more than the run.
    Sample,
    /// At least one element of every `tile` (a work-group's outputs) of a row-major grid
    /// `width` wide; a 1 x 1 tile checks every element.
    Tiles { width: usize, tile: [usize; 2] },
}

impl Cover {
    /// Work-groups of `group` consecutive outputs.
    pub fn groups(total: usize, group: usize) -> Cover {
        Cover::Tiles { width: total.max(1), tile: [group, 1] }
    }

    /// Every element.
    pub fn every(total: usize) -> Cover {
        Cover::groups(total, 1)
    }
}

/// The work-items to check for a problem of `total` work-items.
pub fn check_indices(total: usize, size: Size, seed: u64, cover: Cover) -> Vec<usize> {
    match (size, cover) {
        (Size::Small, _) => (0..total).collect(),
        (Size::Paper, Cover::Sample) => check::sample_indices(total, PAPER_CHECK_BUDGET, seed),
        (Size::Paper, Cover::Tiles { width, tile }) => check::cover_tiles(
            check::sample_indices(total, PAPER_CHECK_BUDGET, seed),
            [width, total / width],
            tile,
            seed ^ 0xC0_7E25,
        ),
    }
}

/// The work-items a check compares afresh on every run: all of them at small size; at paper
/// size one drawn at random from every work-group of `group` consecutive outputs (the smallest
/// package a balancer makes), so one wrong group always has an element compared.
pub fn group_picks(total: usize, size: Size, group: usize, seed: u64) -> Vec<usize> {
    match size {
        Size::Small => (0..total).collect(),
        Size::Paper => check::one_per_group(total, group, seed),
    }
}

/// The seed of a sample's `run`-th check: a new draw of elements every run.
pub(crate) fn run_seed(base: u64, run: u64) -> u64 {
    base ^ run.wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// A sample's CPU reference at the indices [`check_indices`] picks, computed once (in parallel,
/// with `f` for each index) and kept in `cache` for later runs.
pub(crate) fn cached_reference<T: Send>(
    cache: &mut Option<(Vec<usize>, Vec<T>)>,
    (total, cover): (usize, Cover),
    size: Size,
    seed: u64,
    f: impl Fn(usize) -> T + Sync,
) -> &(Vec<usize>, Vec<T>) {
    cache.get_or_insert_with(|| {
        let indices = check_indices(total, size, seed, cover);
        let values = check::par_map(&indices, f);
        (indices, values)
    })
}
