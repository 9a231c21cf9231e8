//! The co-execution engine: the only part of hetdsl that touches OpenCL.
//!
//! ```text
//! Runtime::new()            every device of every platform (filter: code or HETDSL_DEVICES)
//!   .program(&source)       built once per platform, every device's log kept
//!   .launch("kernel")       a Launch: NDRange, arguments with patterns, balancer
//!   .run()                  one host thread per device; returns a Report
//! ```

mod coordinator;
// The companion MPI crate copies ranges between ranks' buffers with it (internals only).
#[cfg(feature = "internals")]
pub mod copy;
#[cfg(not(feature = "internals"))]
mod copy;
mod discover;
mod geometry;
mod limits;
mod lock;
mod plan;
mod program;
mod quarantine;
mod region;
mod repeat;
mod run;
mod session;
mod setup_phase;
mod shared;
mod signature;
mod source;
mod verify;
mod worker;

pub(crate) use lock::{opencl_lock, opencl_lock_held_here};

use std::time::Duration;

use crate::balance::Balancer;
use crate::device::{DeviceFilter, DeviceInfo};
use crate::error::{Error, Result};
use crate::merge::{Merge, ReduceOps, Reducible};
use crate::pattern::{Direction, Pattern};
use crate::pod::{bytes_of, bytes_of_mut, HostType, Pod};
use crate::report::Report;

pub use program::Program;
pub use region::HostRegion;
pub use run::quarantined_devices;
pub use session::{Buffer, Session, SessionLaunch};
pub use source::KernelSource;
pub use verify::{Difference, Verification};

/// The devices hetdsl will use, discovered over every OpenCL platform.
pub struct Runtime {
    found: Vec<discover::Found>,
    all: Vec<DeviceInfo>,
}

impl Runtime {
    /// Every device found, or those `HETDSL_DEVICES` selects.
    pub fn new() -> Result<Self> {
        Self::with_filter(DeviceFilter::All)
    }

    /// The devices `filter` selects; `HETDSL_DEVICES`, when set, overrides it.
    pub fn with_filter(filter: DeviceFilter) -> Result<Self> {
        let filter = DeviceFilter::from_env()?.unwrap_or(filter);
        let found = discover::discover()?;
        let all: Vec<DeviceInfo> = found.iter().map(|f| f.info.clone()).collect();
        let keep: Vec<usize> = filter.select(&all)?.iter().map(|d| d.index).collect();
        let found: Vec<_> = found.into_iter().filter(|f| keep.contains(&f.info.index)).collect();
        Ok(Runtime { found, all })
    }

    /// The selected devices. Their `index` is their place in the unified list of every device.
    pub fn devices(&self) -> Vec<DeviceInfo> {
        self.found.iter().map(|f| f.info.clone()).collect()
    }

    /// Every device of the machine, selected or not.
    pub fn all_devices(&self) -> &[DeviceInfo] {
        &self.all
    }

    /// Build `source` for the selected devices (once per platform).
    pub fn program(&self, source: &KernelSource) -> Result<Program> {
        Program::build(&self.found, source, "")
    }

    /// Build with extra compiler options (e.g. `-D N=4`).
    pub fn program_with_options(&self, source: &KernelSource, options: &str) -> Result<Program> {
        Program::build(&self.found, source, options)
    }
}

/// One kernel argument, in the kernel's argument order.
pub enum Arg<'a> {
    /// A buffer read by the kernel.
    In { bytes: &'a [u8], elem: usize, pattern: Pattern },
    /// A buffer written (`Out`) or read and written (`InOut`) by the kernel.
    Out { bytes: &'a mut [u8], elem: usize, pattern: Pattern, dir: Direction },
    /// A value passed by copy.
    Scalar(Vec<u8>),
    /// A `__local` buffer of this many bytes per work-group.
    Local(usize),
    /// A `__local` buffer of this many bytes per work-item: the bytes per work-group are this
    /// times the work-group's size, known when the launch runs.
    LocalPerItem(usize),
    /// An output merged by reduction (see [`Launch::reduce`]).
    Reduce { bytes: &'a mut [u8], elem: usize, merge: Merge, ops: ReduceOps },
    /// A buffer given by address ([`HostRegion`]), read (`In`), written (`Out`) or both.
    Region { region: HostRegion<'a>, elem: usize, pattern: Pattern, dir: Direction },
}

impl<'a> Arg<'a> {
    /// An output merged by reduction (see [`Launch::reduce`]).
    pub fn reduce<T: Reducible>(data: &'a mut [T], merge: Merge) -> Arg<'a> {
        Arg::Reduce {
            bytes: bytes_of_mut(data),
            elem: size_of::<T>(),
            merge,
            ops: ReduceOps::of::<T>(),
        }
    }
}

impl std::fmt::Debug for Arg<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Arg::In { bytes, elem, pattern } => {
                write!(f, "In({} B, elem {elem}, {pattern})", bytes.len())
            }
            Arg::Out { bytes, elem, pattern, dir } => {
                write!(f, "{dir:?}({} B, elem {elem}, {pattern})", bytes.len())
            }
            Arg::Region { region, elem, pattern, dir } => {
                write!(f, "{dir:?}({region:?}, elem {elem}, {pattern})")
            }
            Arg::Scalar(b) => write!(f, "Scalar({} B)", b.len()),
            Arg::Local(n) => write!(f, "Local({n} B)"),
            Arg::LocalPerItem(n) => write!(f, "LocalPerItem({n} B per work-item)"),
            Arg::Reduce { bytes, merge, ops, .. } => {
                write!(f, "Reduce({} B of {ops:?}, {merge})", bytes.len())
            }
        }
    }
}

/// Faults injected on purpose, to test recovery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Device `device` fails its `package`-th package (0-based) with an OpenCL error.
    Fail { device: usize, package: usize },
    /// Device `device` never completes its `package`-th package.
    Hang { device: usize, package: usize },
    /// Device `device` runs every package `factor` times slower (sleeps after each).
    Slow { device: usize, factor: u32 },
    /// Device `device` stops for `millis` milliseconds after each package, however fast it
    /// ran it: a device held up for a known time (a test of what happens while it is out).
    Stall { device: usize, millis: u32 },
    /// The host thread of device `device` panics at its `package`-th package (a bug in the
    /// engine or a driver wrapper): the device is dropped and its work re-run, never a hang.
    Panic { device: usize, package: usize },
    /// Device `device` never finishes setting up (a driver that never answers while the
    /// queues, buffers or the warm-up's compilation are made), until dropped from the run.
    HangSetup { device: usize },
    /// Device `device`'s set-up takes `millis` milliseconds longer, after its kernel and limits
    /// are known (a long warm-up, as a CPU's on a heavy kernel): the run need not wait for it.
    SlowSetup { device: usize, millis: u32 },
    /// The read-back of device `device`'s `package`-th package never completes.
    HangReadBack { device: usize, package: usize },
}

impl Fault {
    /// How long a device sleeps after a package whose kernel took `kernel_seconds`, under its
    /// injected faults `faults` (`Slow`, `Stall`); `None` where none slows it.
    pub(crate) fn sleep_after(faults: &[Fault], kernel_seconds: Option<f64>) -> Option<Duration> {
        faults.iter().find_map(|f| match *f {
            Fault::Slow { factor, .. } => Some(Duration::from_secs_f64(
                kernel_seconds.unwrap_or(1e-3) * f64::from(factor.saturating_sub(1)),
            )),
            Fault::Stall { millis, .. } => Some(Duration::from_millis(millis.into())),
            _ => None,
        })
    }
}

/// A kernel launch over every device of a [`Program`]; build it, then [`Launch::run`].
pub struct Launch<'a> {
    pub(crate) program: &'a Program,
    pub(crate) kernel: String,
    pub(crate) global: Vec<usize>,
    pub(crate) local: Vec<usize>,
    pub(crate) args: Vec<Arg<'a>>,
    /// The Rust type of each argument, `None` for those given to [`Launch::arg`].
    pub(crate) arg_types: Vec<Option<HostType>>,
    pub(crate) balancer: Option<Box<dyn Balancer>>,
    pub(crate) devices: Option<Vec<usize>>,
    pub(crate) faults: Vec<Fault>,
    pub(crate) watchdog: WatchdogConfig,
    pub(crate) warmup: bool,
    /// `verify` only: every device buffer a package does not fill from the caller is set to
    /// this byte first, so a kernel reading or leaving what it did not declare shows.
    pub(crate) poison: Option<u8>,
    pub(crate) groups: Option<std::ops::Range<u64>>,
    pub(crate) backups: bool,
    pub(crate) wait: WaitMode,
    pub(crate) pipeline: bool,
    /// `HETDSL_WAIT` / `HETDSL_BACKUPS` / `HETDSL_PIPELINE` set to a value that means nothing
    /// (refused at `run` unless the launch sets the same thing itself).
    pub(crate) env_wait: Option<String>,
    pub(crate) env_backups: Option<String>,
    pub(crate) env_pipeline: Option<String>,
    /// For [`Launch::verify`]: float outputs compared within (absolute, relative).
    pub(crate) tolerance: Option<(f64, f64)>,
    /// For [`Launch::verify`]: the random split's seed.
    pub(crate) seed: Option<u64>,
    /// The parameters' names as a `kernel!`/`#[coexec]` declaration spells them, for argument
    /// errors.
    pub(crate) arg_names: Option<&'static [&'static str]>,
}

/// How a device's host thread waits for each kernel (see [`Launch::wait`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitMode {
    /// Sleep in `clWaitForEvents` until the driver wakes the thread.
    Block,
    /// Sleep until shortly before the kernel is expected to end (from the device's previous
    /// package), then poll its status; block after all if it runs much longer than expected.
    Poll,
}

impl WaitMode {
    /// `HETDSL_WAIT=poll|block`; block when unset or unrecognised.
    pub fn from_env() -> WaitMode {
        match std::env::var("HETDSL_WAIT").as_deref() {
            Ok("poll") => WaitMode::Poll,
            _ => WaitMode::Block,
        }
    }
}

/// When a device is declared hung: its package has run longer than `factor` times the time
/// its measured speed predicts (for a device not measured yet, 10 × `factor` times what the
/// fastest measured device predicts scaled by nominal speeds), and at least `min`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WatchdogConfig {
    pub factor: f64,
    pub min: Duration,
}

impl Default for WatchdogConfig {
    fn default() -> Self {
        WatchdogConfig { factor: 20.0, min: Duration::from_secs(10) }
    }
}

/// The message for an environment variable set to none of `accepted`, if it is.
fn unreadable_env(name: &str, accepted: &[&str]) -> Option<String> {
    let value = std::env::var_os(name)?;
    let value = value.to_string_lossy();
    (!accepted.contains(&value.as_ref()))
        .then(|| format!("{name}=`{value}` means nothing: expected {}", accepted.join(" or ")))
}

impl<'a> Launch<'a> {
    pub(crate) fn new(program: &'a Program, kernel: &str) -> Self {
        Launch {
            program,
            kernel: kernel.to_string(),
            global: Vec::new(),
            local: Vec::new(),
            args: Vec::new(),
            arg_types: Vec::new(),
            balancer: None,
            devices: None,
            faults: Vec::new(),
            watchdog: WatchdogConfig::default(),
            warmup: true,
            poison: None,
            groups: None,
            backups: std::env::var_os("HETDSL_BACKUPS").is_none_or(|v| v != "0"),
            wait: WaitMode::from_env(),
            pipeline: std::env::var_os("HETDSL_PIPELINE").is_none_or(|v| v != "0"),
            env_wait: unreadable_env("HETDSL_WAIT", &["poll", "block"]),
            env_backups: unreadable_env("HETDSL_BACKUPS", &["0", "1"]),
            env_pipeline: unreadable_env("HETDSL_PIPELINE", &["0", "1"]),
            tolerance: None,
            seed: None,
            arg_names: None,
        }
    }

    /// The global NDRange: `[n]` or `[width, height]`.
    pub fn global(mut self, sizes: &[usize]) -> Self {
        self.global = sizes.to_vec();
        self
    }

    /// The work-group size, with as many dimensions as the NDRange.
    pub fn local(mut self, sizes: &[usize]) -> Self {
        self.local = sizes.to_vec();
        self
    }

    /// A buffer the kernel reads, split by `pattern` (or [`Pattern::Whole`]).
    pub fn input<T: Pod>(mut self, data: &'a [T], pattern: Pattern) -> Self {
        self.args.push(Arg::In { bytes: bytes_of(data), elem: size_of::<T>(), pattern });
        self.arg_types.push(Some(T::HOST_TYPE));
        self
    }

    /// A buffer the kernel writes, split by `pattern`: every element of each package's range,
    /// since none is sent to the device. An element the kernel does not write comes back
    /// undefined (what the device's memory held); use [`Launch::inout`] for a kernel that leaves
    /// some as they were. [`Launch::verify`] tells the two apart.
    pub fn output<T: Pod>(mut self, data: &'a mut [T], pattern: Pattern) -> Self {
        let elem = size_of::<T>();
        self.args.push(Arg::Out { bytes: bytes_of_mut(data), elem, pattern, dir: Direction::Out });
        self.arg_types.push(Some(T::HOST_TYPE));
        self
    }

    /// A buffer the kernel reads and writes, split by `pattern`.
    pub fn inout<T: Pod>(mut self, data: &'a mut [T], pattern: Pattern) -> Self {
        let elem = size_of::<T>();
        self.args.push(Arg::Out {
            bytes: bytes_of_mut(data),
            elem,
            pattern,
            dir: Direction::InOut,
        });
        self.arg_types.push(Some(T::HOST_TYPE));
        self
    }

    /// An output merged by reduction: a histogram built with atomics, a flag any work-item may
    /// set, a maximum — what no `a:b` pattern describes. The kernel sees the whole buffer on
    /// every device: under `Merge::Sum` set to 0 (-0.0 for floats), not to the caller's values;
    /// under max, min, or and and set to the caller's values (with what this device has
    /// written), so a kernel may read what it lowers, as a shortest-path relaxation reads the
    /// distances it lowers with `atomic_min`. When the run returns `Ok` the caller's buffer is
    /// `initial ⊕ every work-group's contribution`.
    ///
    /// Each package's contribution is read back and folded into the caller's buffer once, with
    /// the device's copy reset to its start before its next package. So a package run twice
    /// (a speculative back-up, or a re-run of a failed device's work) is counted once — the copy
    /// that loses is discarded whole — and a device failing mid-run loses only contributions not
    /// folded yet, whose packages are re-run elsewhere: never a silently wrong sum. The price is
    /// one read-back of the whole buffer per package, so keep reduced outputs small.
    ///
    /// `Merge::Or` and `Merge::And` apply to integers only; on a float the run fails with
    /// `BadArgument`. Float sums are folded in package order, which the balancer decides, so
    /// they may differ from a sequential sum in the last bits.
    pub fn reduce<T: Reducible>(mut self, data: &'a mut [T], merge: Merge) -> Self {
        self.args.push(Arg::reduce(data, merge));
        self.arg_types.push(Some(T::HOST_TYPE));
        self
    }

    /// A value passed by copy.
    pub fn scalar<T: Pod>(mut self, value: T) -> Self {
        self.args.push(Arg::Scalar(bytes_of(std::slice::from_ref(&value)).to_vec()));
        self.arg_types.push(Some(T::HOST_TYPE));
        self
    }

    /// A `__local` buffer of `count` elements of `T` per work-group.
    pub fn local_buffer<T: Pod>(mut self, count: usize) -> Self {
        // Saturated: an overflowing size is refused at launch as over the device's limit.
        self.args.push(Arg::Local(count.saturating_mul(size_of::<T>())));
        self.arg_types.push(Some(T::HOST_TYPE));
        self
    }

    /// A `__local` buffer of `count_per_item` elements of `T` for each work-item of a group:
    /// `count_per_item` × the work-group size, computed when the launch runs, so the buffer
    /// follows [`Launch::local`] (a kernel indexing its scratch by `get_local_id`).
    pub fn local_buffer_per_item<T: Pod>(mut self, count_per_item: usize) -> Self {
        self.args.push(Arg::LocalPerItem(count_per_item.saturating_mul(size_of::<T>())));
        self.arg_types.push(Some(T::HOST_TYPE));
        self
    }

    /// Any argument (what the macros generate).
    pub fn arg(mut self, arg: Arg<'a>) -> Self {
        self.args.push(arg);
        self.arg_types.push(None);
        self
    }

    /// The balancer. Without one, the first run of a launch uses [`crate::balance::default_balancer`],
    /// and a later run of the same launch (kernel, range, work-group size, devices) on the same
    /// program starts from what the last clean run measured: for a regular kernel, one package
    /// per device, sized so that all end together (`balance::relaunch`); see
    /// [`Program::forget_runs`].
    pub fn balancer(mut self, balancer: Box<dyn Balancer>) -> Self {
        self.balancer = Some(balancer);
        self
    }

    /// Run on these devices only (positions in [`Program::devices`]).
    pub fn on_devices(mut self, devices: &[usize]) -> Self {
        self.devices = Some(devices.to_vec());
        self
    }

    /// Inject a fault (testing).
    pub fn inject(mut self, fault: Fault) -> Self {
        self.faults.push(fault);
        self
    }

    /// How long a package may run before its device is declared hung.
    pub fn watchdog(mut self, config: WatchdogConfig) -> Self {
        self.watchdog = config;
        self
    }

    /// Whether to launch a work-group at each end of the range before timing (default: yes) on
    /// each device that compiles a kernel at its first launch (PoCL, CPUs), so that the
    /// compilation does not skew balancing. GPUs' drivers compile at the build and are not
    /// warmed up.
    pub fn warmup(mut self, on: bool) -> Self {
        self.warmup = on;
        self
    }

    /// Run only the balancing units `range` of the NDRange (work-groups in 1-D, rows of
    /// work-groups in 2-D, slabs in 3-D); the outputs outside it are left as they are. Useful to
    /// time a slow device on a sample of a large problem, or to process a problem in pieces.
    pub fn groups(mut self, range: std::ops::Range<u64>) -> Self {
        self.groups = Some(range);
        self
    }

    /// Speculative back-ups of stragglers (on by default; off with `false` or
    /// `HETDSL_BACKUPS=0`): a device with nothing left to do runs a copy of a package another
    /// device is still running when, at the measured speeds, it would finish it in well under
    /// that package's predicted remaining time; the first copy merged wins. This bounds the
    /// damage of a device hundreds of times slower whose first package outlasts the others'
    /// whole run (one H200 + 16-core CPU, Sigmoid: Aho 1.24 s against 1.47 s for the H200 alone,
    /// where a CPU probe had taken 10 s), at the price of computing such packages twice.
    /// Outputs merged by reduction ([`Launch::reduce`]) stay exact: the losing copy's
    /// contribution is discarded with the rest of its output.
    pub fn backups(mut self, on: bool) -> Self {
        self.backups = on;
        self.env_backups = None;
        self
    }

    /// How each device's thread waits for its kernels (default: `HETDSL_WAIT`, else
    /// [`WaitMode::Block`]). Polling cuts the wake-up after each kernel, which is per-package
    /// overhead, at the price of a core yielding in a loop near each kernel's end.
    pub fn wait(mut self, mode: WaitMode) -> Self {
        self.wait = mode;
        self.env_wait = None;
        self
    }

    /// Whether a device may have its next package queued behind the one it runs (default:
    /// on, unless `HETDSL_PIPELINE=0`), when the balancer offers one
    /// ([`Balancer::next_ahead`]): its inputs are written and its kernel queued while the
    /// current kernel runs, so the host's wake-up, bookkeeping and input copies hide behind
    /// it. Launches with reduced outputs never queue ahead (one staging holds a package's
    /// partial result).
    pub fn pipeline(mut self, on: bool) -> Self {
        self.pipeline = on;
        self.env_pipeline = None;
        self
    }

    /// Co-execute. Outputs are complete and correct when this returns `Ok`.
    pub fn run(mut self) -> Result<Report> {
        let names = self.arg_names;
        self.check_arguments().map_err(|e| declared(e, names))?;
        let balancer = self.balancer.take();
        let (program, kernel) = (self.program, self.kernel.clone());
        // The engine's own argument errors (lengths, patterns) name the parameter too.
        run::execute(self, balancer)
            .map_err(|e| declared(program.signatures.name_argument(&kernel, e), names))
    }

    /// The parameters' names as declared (what `kernel!` and `#[coexec]` set), so that every
    /// argument error of [`Launch::run`] and [`Launch::verify`] names the argument as the user
    /// wrote it.
    #[doc(hidden)]
    pub fn arg_names(mut self, names: &'static [&'static str]) -> Self {
        self.arg_names = Some(names);
        self
    }

    /// Checks the kernel under co-execution: runs it once on the launch's first device alone
    /// (one package) and once co-executed over all its devices with a deliberately uneven,
    /// randomised split (see [`crate::balance::RandomSplit`]), and compares every output
    /// element, bit for bit (or within [`Launch::verify_within`] for float outputs). Inout
    /// buffers start from the same contents in both runs. The caller's buffers end with the
    /// co-executed result when the two agree, and with the one device's result when they do
    /// not (the difference says where co-execution went wrong). Before each run every device
    /// buffer is set to a fill byte (a different one per run) before the patterns' data goes
    /// in, so a kernel that reads beyond what its pattern gives a package, or leaves an output
    /// element unwritten, differs whatever earlier launches left on the devices. Run it once for
    /// each new kernel: a pattern that does not say what the kernel writes or reads shows here.
    pub fn verify(self) -> Result<Verification> {
        let names = self.arg_names;
        verify::verify(self).map_err(|e| declared(e, names))
    }

    /// For [`Launch::verify`]: float and double outputs may differ by `abs + rel × |value|`
    /// (devices may round differently, e.g. with fused multiply-adds).
    pub fn verify_within(mut self, abs: f64, rel: f64) -> Self {
        self.tolerance = Some((abs, rel));
        self
    }

    /// For [`Launch::verify`]: the seed of the random split (a fixed default otherwise).
    pub fn verify_seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Every argument against the kernel's parameter, before anything is enqueued; then the
    /// hidden NDRange argument of a kernel whose built-ins need it (the caller's global sizes,
    /// 1 for missing dimensions).
    fn check_arguments(&mut self) -> Result<()> {
        let host: Vec<_> =
            self.args.iter().zip(&self.arg_types).map(|(a, t)| host_arg(a, *t)).collect();
        self.program.signatures.check(&self.kernel, &host)?;
        if self.program.ndrange_param.contains(&self.kernel) {
            let mut sizes = [1u64; 4];
            for (s, g) in sizes.iter_mut().zip(&self.global) {
                *s = *g as u64;
            }
            self.args.push(Arg::Scalar(bytes_of(&sizes).to_vec()));
            self.arg_types.push(None);
        }
        Ok(())
    }
}

/// What an argument is, for the check against the kernel's parameter.
fn host_arg(arg: &Arg<'_>, ty: Option<HostType>) -> hetdsl_decl::argcheck::HostArg {
    use hetdsl_decl::argcheck::HostArg;
    match arg {
        Arg::In { .. } => HostArg::Buffer { ty, writes: false, reads: true, merged: None },
        Arg::Out { dir, .. } => {
            HostArg::Buffer { ty, writes: true, reads: *dir == Direction::InOut, merged: None }
        }
        Arg::Region { dir, .. } => {
            HostArg::Buffer { ty, writes: dir.writes(), reads: dir.reads(), merged: None }
        }
        Arg::Scalar(bytes) => HostArg::Scalar { ty, size: bytes.len() },
        Arg::Local(_) | Arg::LocalPerItem(_) => HostArg::Local { ty },
        // Every device writes the whole buffer, from its own start (`setup::reduction_start`).
        Arg::Reduce { merge, .. } => {
            HostArg::Buffer { ty, writes: true, reads: false, merged: Some(merge.name()) }
        }
    }
}

/// An argument error named as declared, where the launch knows the declared names.
fn declared(error: Error, names: Option<&'static [&'static str]>) -> Error {
    match names {
        Some(names) => crate::__private::name_argument(error, names),
        None => error,
    }
}
