//! The words every part of the crate shares: a package of work-groups, the kind of a device,
//! what a balancer knows before a run ([`Setup`], [`DeviceProfile`]), what it learns during one
//! ([`Completion`]) and what it answers ([`Next`]).
//!
//! They sit below the balancers so that the engine, the report and the device descriptions can
//! name them without depending on the balancers' module; `hetdsl::balance` re-exports them for
//! balancer authors.

/// A contiguous range of work-groups `[offset, offset + len)` run by one device in one launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Package {
    pub offset: u64,
    pub len: u64,
}

impl Package {
    pub fn end(&self) -> u64 {
        self.offset + self.len
    }
}

/// The broad class of a device; some balancers treat CPUs and GPUs differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum DeviceKind {
    Cpu,
    Gpu,
    Accelerator,
    Other,
}

/// What a balancer knows about one device before the run starts.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DeviceProfile {
    pub kind: DeviceKind,
    /// Nominal peak GFLOP/s (from the device's clock and compute units); the initial speed estimate.
    pub nominal_gflops: f64,
    /// Fewest work-groups that fill the device: the occupancy lower bound, at least 1.
    pub min_groups: u64,
}

/// The problem a balancer splits.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Setup {
    /// G: total work-groups of the NDRange.
    pub total_groups: u64,
    /// One profile per device, indexed like the devices of the run.
    pub devices: Vec<DeviceProfile>,
}

/// A finished package, as the balancer learns of it.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Completion {
    pub device: usize,
    pub package: Package,
    /// Seconds the device spent computing the package (profiling), or the host-side span when
    /// the device gives no profile.
    pub kernel_seconds: f64,
    /// Seconds since the run began at which the package was handed out.
    pub host_start: f64,
    /// Seconds since the run began at which its completion was seen.
    pub host_end: f64,
}

impl Completion {
    /// What the package cost its device: the kernel time where the device gave one, else the
    /// host-side span from hand-out to completion.
    pub fn seconds(&self) -> f64 {
        if self.kernel_seconds > 0.0 {
            self.kernel_seconds
        } else {
            self.host_end - self.host_start
        }
    }
}

/// The answer to "what should device j do now?".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    Run(Package),
    Wait,
    Done,
}
