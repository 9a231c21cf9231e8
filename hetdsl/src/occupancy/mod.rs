//! The occupancy lower bound and nominal device speeds.
//!
//! Sigmoid never hands a device a package smaller than the device can fill at once: on a GPU
//! that is the number of work-groups resident per multiprocessor (the CUDA occupancy
//! calculator's equations, or the vendor's equivalent) times the multiprocessors; on a CPU one
//! work-group per compute unit. Its first speed estimates are nominal GFLOP/s.
//!
//! Everything here is pure: numbers in ([`DeviceInfo`], [`KernelResources`]), numbers out. Where
//! a figure is unknown (an unlisted compute capability, registers that the driver did not
//! report), a stated conservative default is used and the statement is returned in
//! [`Occupancy::assumptions`], so callers can log it. "Conservative" means: never claim that
//! more work-groups fit at once than really do, so the bound stays a lower bound.
//!
//! Per vendor: [`cuda`] (NVIDIA), [`amd`] (GCN, CDNA, RDNA), [`intel`] (Xe), [`cpu`]; the
//! NVIDIA build-log parser is [`nvlog`], the nominal speeds [`nominal`](mod@nominal).

pub mod amd;
pub mod cpu;
pub mod cuda;
pub mod intel;
pub mod nominal;
pub mod nvlog;

pub use nominal::{nominal, nominal_gflops, Nominal};
pub use nvlog::{parse_nv_verbose, NvKernelUsage};

use crate::device::DeviceInfo;
use crate::work::DeviceKind;

/// Registers per work-item assumed when the driver did not report them (NVIDIA: the build
/// log had no ptxas lines; other vendors: no query). 64 registers leave room for half the warps
/// of a 64-warp SM; simple data-parallel kernels use fewer (12 and 20 registers in kernels
/// measured on an H200), so the assumption errs toward a smaller bound, not a larger one.
pub const DEFAULT_REGISTERS_PER_ITEM: u32 = 64;

/// What one kernel launch needs from a multiprocessor, per work-group.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct KernelResources {
    /// Work-items per work-group (the product of the local sizes).
    pub work_group_size: u32,
    /// Registers per work-item (NVIDIA: ptxas `Used N registers`; AMD: VGPRs); `None` if unknown.
    pub registers_per_item: Option<u32>,
    /// Local memory per work-group: static `__local` plus dynamic `__local` arguments, i.e.
    /// `CL_KERNEL_LOCAL_MEM_SIZE` read after the `__local` arguments are set; `None` if unknown.
    pub local_mem_bytes: Option<u64>,
    /// Work-group barriers the kernel uses (ptxas `used N barriers`); 1 unless known.
    pub barriers: u32,
}

impl KernelResources {
    /// A kernel of which only the work-group size is known (one barrier, as CUDA assumes).
    pub fn new(work_group_size: u32) -> Self {
        KernelResources {
            work_group_size,
            registers_per_item: None,
            local_mem_bytes: None,
            barriers: 1,
        }
    }

    /// Registers, static shared memory and barriers from NVIDIA's build log. The log's static
    /// shared memory is used only while no local-memory figure is set: the driver's
    /// `CL_KERNEL_LOCAL_MEM_SIZE` (static + dynamic) is the better figure.
    pub fn with_nv_usage(mut self, usage: &NvKernelUsage) -> Self {
        self.registers_per_item = Some(usage.registers);
        if self.local_mem_bytes.is_none() {
            self.local_mem_bytes = Some(usage.shared_bytes);
        }
        if let Some(b) = usage.barriers {
            self.barriers = b;
        }
        self
    }

    /// Local memory per work-group (static + dynamic `__local`).
    pub fn with_local_mem(mut self, bytes: u64) -> Self {
        self.local_mem_bytes = Some(bytes);
        self
    }

    /// Registers per work-item.
    pub fn with_registers(mut self, registers: u32) -> Self {
        self.registers_per_item = Some(registers);
        self
    }
}

/// Which resource stops one more work-group from becoming resident.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Limiter {
    /// Warp / wavefront / hardware-thread slots of the multiprocessor.
    Warps,
    /// The cap on resident work-groups per multiprocessor.
    Blocks,
    /// The register file.
    Registers,
    /// Local memory (shared memory, LDS, SLM).
    SharedMemory,
    /// Hardware barriers.
    Barriers,
    /// The CPU rule (or the default for an unknown device): one work-group per compute unit.
    ComputeUnits,
}

/// Work-groups per multiprocessor allowed by each resource; `None` where the resource does not
/// limit (the CUDA calculator's `INT_MAX`), e.g. a kernel with no local memory.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Limits {
    pub warps: Option<u32>,
    pub blocks: Option<u32>,
    pub registers: Option<u32>,
    pub shared_memory: Option<u32>,
    pub barriers: Option<u32>,
}

impl Limits {
    /// Resident work-groups per multiprocessor (the least of the limits) and the resource that
    /// sets it. Ties go to the first of warps, registers, shared memory, blocks, barriers (the
    /// order of the CUDA calculator's limiting-factor bits). No limit at all reads as
    /// `(u32::MAX, Blocks)`; every vendor rule here sets a block cap, so that does not occur.
    pub fn binding(&self) -> (u32, Limiter) {
        let order = [
            (self.warps, Limiter::Warps),
            (self.registers, Limiter::Registers),
            (self.shared_memory, Limiter::SharedMemory),
            (self.blocks, Limiter::Blocks),
            (self.barriers, Limiter::Barriers),
        ];
        let mut best = (u32::MAX, Limiter::Blocks);
        for (limit, which) in order {
            if let Some(l) = limit {
                if l < best.0 {
                    best = (l, which);
                }
            }
        }
        best
    }

    /// Resident work-groups per multiprocessor.
    pub fn active(&self) -> u32 {
        self.binding().0
    }
}

/// The occupancy bound of one kernel on one device.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Occupancy {
    /// Work-groups resident at once on one compute unit (SM, CU/WGP, Xe-core, CPU core).
    /// 0 means the kernel cannot run with these resources (the launch would fail).
    pub groups_per_compute_unit: u32,
    /// The compute units `groups_per_compute_unit` refers to (Intel: Xe-cores, not EUs).
    pub compute_units: u32,
    /// Fewest work-groups that fill the device: `groups_per_compute_unit × compute_units`,
    /// at least 1.
    pub min_groups: u64,
    /// The resource that sets `groups_per_compute_unit`.
    pub limiter: Limiter,
    /// Every limit, for reports (all `None` for the CPU rule).
    pub limits: Limits,
    /// Each conservative default used, stated in words.
    pub assumptions: Vec<String>,
}

impl Occupancy {
    /// The bound from per-unit limits.
    fn from_limits(limits: Limits, compute_units: u32, mut assumptions: Vec<String>) -> Self {
        let (per_unit, limiter) = limits.binding();
        if per_unit == 0 {
            assumptions.push(format!(
                "no work-group fits on a compute unit ({limiter:?} limit): the launch will fail; \
                 bound set to 1 work-group"
            ));
        }
        Occupancy {
            groups_per_compute_unit: per_unit,
            compute_units,
            min_groups: (per_unit as u64 * compute_units as u64).max(1),
            limiter,
            limits,
            assumptions,
        }
    }

    /// One work-group per compute unit: CPUs, and the stated default for unknown devices.
    fn one_per_unit(compute_units: u32, assumptions: Vec<String>) -> Self {
        Occupancy {
            groups_per_compute_unit: 1,
            compute_units,
            min_groups: (compute_units as u64).max(1),
            limiter: Limiter::ComputeUnits,
            limits: Limits::default(),
            assumptions,
        }
    }
}

/// Which rule set a device follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    Cpu,
    Nvidia,
    Amd,
    Intel,
    Unknown,
}

/// The rule set for `device`: CPUs by kind (whatever their vendor), GPUs by the vendor
/// extension they expose, else by the vendor string.
pub fn family(device: &DeviceInfo) -> Family {
    if device.kind == DeviceKind::Cpu {
        return Family::Cpu;
    }
    let vendor = device.vendor.to_ascii_lowercase();
    if device.nvidia.is_some() || vendor.contains("nvidia") {
        Family::Nvidia
    } else if device.amd.is_some() || vendor.contains("advanced micro devices") || vendor == "amd" {
        Family::Amd
    } else if vendor.contains("intel") && device.kind == DeviceKind::Gpu {
        Family::Intel
    } else {
        Family::Unknown
    }
}

/// The occupancy bound of `kernel` on `device`, by the device's vendor rules.
pub fn occupancy(device: &DeviceInfo, kernel: &KernelResources) -> Occupancy {
    let mut assumptions = Vec::new();
    let mut kernel = kernel.clone();
    if kernel.work_group_size == 0 {
        assumptions.push("work-group size 0 is not a launch; 1 work-item assumed".to_string());
        kernel.work_group_size = 1;
    }
    match family(device) {
        Family::Cpu => cpu::occupancy(device, assumptions),
        Family::Nvidia => cuda::occupancy(device, &kernel, assumptions),
        Family::Amd => amd::occupancy(device, &kernel, assumptions),
        Family::Intel => intel::occupancy(device, &kernel, assumptions),
        Family::Unknown => {
            assumptions.push(format!(
                "no occupancy rules for `{}` ({}, {:?}): one work-group per compute unit assumed",
                device.name, device.vendor, device.kind
            ));
            Occupancy::one_per_unit(device.compute_units, assumptions)
        }
    }
}

/// Registers per work-item, or the stated default.
fn registers_or_default(kernel: &KernelResources, assumptions: &mut Vec<String>) -> u32 {
    kernel.registers_per_item.unwrap_or_else(|| {
        assumptions
            .push(format!("registers per work-item unknown: {DEFAULT_REGISTERS_PER_ITEM} assumed"));
        DEFAULT_REGISTERS_PER_ITEM
    })
}

/// Local memory per work-group, or 0 (stated). Unknown local memory cannot be bounded from
/// above short of the device maximum, which would halve the bound of the many kernels that
/// use none; the engine always knows the figure (`CL_KERNEL_LOCAL_MEM_SIZE`).
fn local_mem_or_zero(kernel: &KernelResources, assumptions: &mut Vec<String>) -> u64 {
    kernel.local_mem_bytes.unwrap_or_else(|| {
        assumptions.push("local memory per work-group unknown: 0 assumed".to_string());
        0
    })
}

fn ceil_div(x: u64, y: u64) -> u64 {
    x.div_ceil(y)
}

/// `x` rounded up to a multiple of `unit`, saturating: absurd inputs (a kernel claiming 2^64
/// bytes) must give "does not fit", not an overflow.
fn round_up(x: u64, unit: u64) -> u64 {
    ceil_div(x, unit).saturating_mul(unit)
}

/// `x / y` for a limit, saturating into `u32` (the limits are small counts); nothing to
/// allocate (`y` = 0) does not limit.
fn limit(x: u64, y: u64) -> u32 {
    x.checked_div(y).map_or(u32::MAX, |q| u32::try_from(q).unwrap_or(u32::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_one_group_per_compute_unit() {
        let cpu = DeviceInfo::example_cpu(0, 16);
        // Whatever the kernel uses, a CPU is full with one work-group per core.
        for k in [KernelResources::new(1), KernelResources::new(4096).with_registers(255)] {
            let o = occupancy(&cpu, &k);
            assert_eq!((o.groups_per_compute_unit, o.compute_units, o.min_groups), (1, 16, 16));
            assert_eq!(o.limiter, Limiter::ComputeUnits);
            assert!(o.assumptions.is_empty(), "{:?}", o.assumptions);
        }
        let o = occupancy(&DeviceInfo::example_cpu(0, 0), &KernelResources::new(64));
        assert_eq!(o.min_groups, 1);
        assert_eq!(o.assumptions.len(), 1);
    }

    #[test]
    fn dispatch_by_vendor() {
        assert_eq!(family(&DeviceInfo::example_cpu(0, 4)), Family::Cpu);
        let h200 = DeviceInfo::example_nvidia(0, "NVIDIA H200", (9, 0), 132, 1980);
        assert_eq!(family(&h200), Family::Nvidia);
        assert_eq!(family(&DeviceInfo::example_amd(0, "gfx90a", 110, 64, 4)), Family::Amd);
        // An AMD CPU on AMD's platform is still a CPU.
        let amd_cpu = DeviceInfo { vendor: "AuthenticAMD".into(), ..DeviceInfo::example_cpu(0, 8) };
        assert_eq!(family(&amd_cpu), Family::Cpu);
        // An unknown GPU: one work-group per compute unit, stated.
        let other = DeviceInfo {
            vendor: "ARM".into(),
            kind: DeviceKind::Gpu,
            ..DeviceInfo::example_cpu(0, 12)
        };
        let o = occupancy(&other, &KernelResources::new(64));
        assert_eq!((o.min_groups, o.limiter), (12, Limiter::ComputeUnits));
        assert_eq!(o.assumptions.len(), 1);
    }

    #[test]
    fn nv_usage_fills_what_is_unknown() {
        let usage = NvKernelUsage {
            registers: 20,
            shared_bytes: 1028,
            barriers: Some(0),
            ..Default::default()
        };
        let k = KernelResources::new(256).with_nv_usage(&usage);
        assert_eq!(
            (k.registers_per_item, k.local_mem_bytes, k.barriers),
            (Some(20), Some(1028), 0)
        );
        // The driver's local-memory figure (static + dynamic) wins over ptxas' static one.
        let k = KernelResources::new(256).with_local_mem(5124).with_nv_usage(&usage);
        assert_eq!(k.local_mem_bytes, Some(5124));
    }

    #[test]
    fn zero_work_group_size_is_stated_not_a_panic() {
        let h200 = DeviceInfo::example_nvidia(0, "NVIDIA H200", (9, 0), 132, 1980);
        let o = occupancy(&h200, &KernelResources::new(0).with_registers(16).with_local_mem(0));
        // 1 work-item = 1 warp: 64 by warps, capped at 32 blocks.
        assert_eq!(o.groups_per_compute_unit, 32);
        assert!(o.assumptions.iter().any(|a| a.contains("size 0")));
    }

    #[test]
    fn absurd_inputs_do_not_panic() {
        let intel = DeviceInfo {
            vendor: "Intel(R) Corporation".into(),
            kind: DeviceKind::Gpu,
            ..DeviceInfo::example_cpu(0, 0)
        };
        let devices = [
            DeviceInfo::example_cpu(0, 4),
            DeviceInfo::example_nvidia(0, "H200", (9, 0), 132, 1980),
            DeviceInfo::example_nvidia(0, "odd", (99, 99), 0, 0),
            DeviceInfo::example_amd(0, "gfx90a", 110, 64, 4),
            DeviceInfo::example_amd(0, "gfx1030", 40, 0, 0),
            intel,
        ];
        for d in &devices {
            for k in [
                KernelResources::new(u32::MAX).with_registers(u32::MAX).with_local_mem(u64::MAX),
                KernelResources { barriers: u32::MAX, ..KernelResources::new(1).with_registers(0) },
            ] {
                let o = occupancy(d, &k);
                assert!(o.min_groups >= 1, "{}: {o:?}", d.name);
            }
            assert!(nominal_gflops(d).is_finite());
        }
    }

    #[test]
    fn ties_go_to_the_first_limit() {
        let l =
            Limits { warps: Some(8), registers: Some(8), blocks: Some(32), ..Default::default() };
        assert_eq!(l.binding(), (8, Limiter::Warps));
        let l = Limits {
            warps: Some(9),
            shared_memory: Some(4),
            barriers: Some(4),
            ..Default::default()
        };
        assert_eq!(l.binding(), (4, Limiter::SharedMemory));
    }
}
