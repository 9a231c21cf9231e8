//! The one error type of the crate. Every mistake a user can make, and every failure a device can
//! have, ends here as a value: nothing on a user-reachable path panics.

use std::fmt;

/// An OpenCL status code, displayed with its symbolic name (`CL_OUT_OF_RESOURCES`, …).
pub use opencl3::error_codes::ClError;

/// Where a failure happened, for messages that say what to fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceFault {
    /// Index of the device in the run's device list.
    pub device: usize,
    /// Its name as the driver reports it.
    pub name: String,
    /// What went wrong there.
    pub reason: String,
}

impl fmt::Display for DeviceFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "device {} ({}): {}", self.device, self.name, self.reason)
    }
}

/// Every error hetdsl returns.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No OpenCL runtime could be loaded, or it lists no platform.
    #[error("no OpenCL platform found ({0}); install an OpenCL driver, e.g. `apt-get install pocl-opencl-icd ocl-icd-libopencl1`")]
    NoPlatform(ClError),

    /// The device filter (code or `HETDSL_DEVICES`) selected nothing.
    #[error("no device matches `{filter}`; devices found: {found}")]
    NoDeviceMatches { filter: String, found: String },

    /// `HETDSL_DEVICES` or a filter string could not be read.
    #[error("invalid device filter `{0}`: expected `all`, `cpu`, `gpu`, `accelerator` or a comma-separated list of distinct device indices such as `0,2`")]
    BadDeviceFilter(String),

    /// The kernel source failed to compile on at least one device. `log` holds every failing
    /// device's build log; thanks to `#line` directives it names the original file and line.
    #[error("kernel source `{file}` failed to build:\n{log}")]
    Build { file: String, log: String },

    /// A kernel source file or include could not be read.
    #[error("cannot read kernel source `{path}`: {reason}")]
    Source { path: String, reason: String },

    /// A source given at run time to a `kernel!` declaration (its generated `with_source`) does
    /// not fit the declaration: every problem, in the words of the compile-time check.
    #[error("`{file}` does not fit the declaration of kernel `{kernel}`:\n{}", list_lines(.problems))]
    SourceMismatch { kernel: String, file: String, problems: Vec<String> },

    /// The kernel named is not in the program.
    #[error("kernel `{name}` is not defined in `{file}`; kernels there: {available}")]
    NoSuchKernel { name: String, file: String, available: String },

    /// The NDRange / work-group geometry is unusable.
    #[error("invalid NDRange: {0}")]
    BadRange(String),

    /// An argument does not fit the kernel or its pattern.
    #[error("argument {index}: {reason}")]
    BadArgument { index: usize, reason: String },

    /// An argument of a kernel declared with `kernel!` or `#[coexec]` does not fit the kernel or
    /// its pattern: a [`Error::BadArgument`] that also names the parameter as the declaration
    /// does (`index` counts every parameter of the kernel, `__local` ones included).
    #[error("argument {index} (`{name}`): {reason}")]
    BadDeclaredArgument { index: usize, name: String, reason: String },

    /// A resource limit of a device would be exceeded.
    #[error("device {device} ({name}) cannot run this: {reason}")]
    DeviceLimit { device: usize, name: String, reason: String },

    /// The balancer configuration is invalid.
    #[error("invalid balancer configuration: {0}")]
    BadBalancer(String),

    /// A launch setting that means nothing (a NaN or negative watchdog factor, a device given
    /// twice, a fault aimed at a device not in the run…); the message names the setting.
    #[error("invalid launch configuration: {0}")]
    BadConfig(String),

    /// A bug in hetdsl itself (its bookkeeping panicked mid-run). The run was ended rather than
    /// continued from state that may be half-updated: the output is incomplete.
    #[error("internal error in hetdsl, run ended, output incomplete (please report it): {0}")]
    Internal(String),

    /// Every device failed; the run's output is incomplete. Each device's fault is listed.
    #[error("every device failed, output incomplete:\n{}", list_faults(.0))]
    AllDevicesFailed(Vec<DeviceFault>),

    /// A device failed while writing a package's `inout` output back into the caller's memory:
    /// there, part of the package's elements hold the kernel's new values and the rest the old
    /// ones, and no device can run it again (its inputs are partly overwritten). The run's
    /// output is incomplete.
    #[error(
        "{fault}, while writing back work-groups {groups:?} of an inout output: those hold new \
         values in part and old in the rest, and cannot be run again; output incomplete"
    )]
    PartlyMerged { fault: DeviceFault, groups: std::ops::Range<u64> },

    /// An OpenCL call failed outside a package (context, queue, buffer creation…).
    #[error("OpenCL call `{call}` failed: {code}")]
    Cl { call: &'static str, code: ClError },

    /// A session buffer's only fresh copy of these element ranges was on a device that failed:
    /// its contents there are gone (never replaced by stale data). Writing the ranges again,
    /// from the host or by a kernel, makes the buffer whole; `Session::set_mirror` keeps a host
    /// copy to recover from.
    #[error(
        "session buffer {buffer} ({len} elements): element ranges {ranges:?} were lost: {reason}"
    )]
    Lost { buffer: usize, len: usize, ranges: Vec<std::ops::Range<u64>>, reason: String },

    /// The ranks of an MPI job (`hetdsl-mpi`) reached one collective step through different
    /// calls: one launching while another calls `all_agree`, or launching another kernel,
    /// NDRange or argument list. Every rank returns this at that step instead of waiting for
    /// the others; each entry of `calls` says what some of the ranks called.
    #[error(
        "the ranks made different collective calls at the same step (every rank must make the \
         same calls in the same order): {}",
        .calls.join("; ")
    )]
    CollectiveMismatch { calls: Vec<String> },

    /// Writing a report, plot or image failed.
    #[error("I/O error on `{path}`: {reason}")]
    Io { path: String, reason: String },
}

fn list_lines(lines: &[String]) -> String {
    lines.iter().map(|l| format!("  {l}")).collect::<Vec<_>>().join("\n")
}

fn list_faults(faults: &[DeviceFault]) -> String {
    faults.iter().map(|f| format!("  {f}")).collect::<Vec<_>>().join("\n")
}

impl Error {
    /// The position of the argument at fault, for [`Error::BadArgument`] and
    /// [`Error::BadDeclaredArgument`].
    pub fn argument_index(&self) -> Option<usize> {
        match self {
            Error::BadArgument { index, .. } | Error::BadDeclaredArgument { index, .. } => {
                Some(*index)
            }
            _ => None,
        }
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Attach the name of the OpenCL call to a status code.
pub(crate) trait ClContext<T> {
    fn call(self, call: &'static str) -> Result<T>;
}

impl<T> ClContext<T> for std::result::Result<T, ClError> {
    fn call(self, call: &'static str) -> Result<T> {
        self.map_err(|code| Error::Cl { call, code })
    }
}
