//! Intel GPUs (Xe): hardware threads, shared local memory and the work-group cap per Xe-core.
//!
//! Rules of Intel's GPU Occupancy Calculator (oneAPI-samples,
//! `Tools/GPU-Occupancy-Calculator`): a work-group of `n` work-items
//! compiled for SIMD width `s` takes `⌈n/s⌉` hardware threads of one Xe-core (sub-slice);
//! an Xe-core holds EUs × threads-per-EU threads, a fixed amount of SLM and at most a fixed
//! number of work-groups (fewer when they use barriers). Intel's OpenCL reports EUs as compute
//! units, so the bound is counted in Xe-cores = compute units / EUs per Xe-core.

use super::{ceil_div, limit, local_mem_or_zero, KernelResources, Limits, Occupancy};
use crate::device::DeviceInfo;

/// One Xe-core of a generation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct XeCore {
    pub name: &'static str,
    pub eus: u32,
    /// Hardware threads per EU in the default (128-GRF) mode; large-GRF kernels get half.
    pub threads_per_eu: u32,
    pub slm_bytes: u64,
    pub max_groups: u32,
    /// Barrier registers: the work-group cap for kernels that use barriers.
    pub barrier_groups: u32,
    /// The narrowest SIMD width the compiler picks; the most threads per work-group.
    pub min_simd: u32,
    /// FP32 lanes per EU.
    pub fp32_lanes_per_eu: u32,
}

/// Xe-HPC (Data Center GPU Max): figures of the occupancy calculator's PVC entry.
pub const XE_HPC: XeCore = XeCore {
    name: "Xe-HPC",
    eus: 8,
    threads_per_eu: 8,
    slm_bytes: 128 * 1024,
    max_groups: 64,
    barrier_groups: 32,
    min_simd: 16,
    fp32_lanes_per_eu: 16,
};

/// Xe2 (Arc B-series, Lunar Lake): 8 XVEs of 8 threads, 128 KiB SLM, 64 work-groups. The
/// calculator gives no separate barrier figure; Xe-HPC's 32 is taken.
pub const XE2: XeCore = XeCore { name: "Xe2", ..XE_HPC };

/// Xe-HPG (Arc A-series): 16 EUs of 8 threads, SIMD8 lanes. SLM and the caps were not found
/// published: the smaller figures of the other generations (64 KiB is the per-group
/// maximum `CL_DEVICE_LOCAL_MEM_SIZE` these parts report) are taken.
pub const XE_HPG: XeCore = XeCore {
    name: "Xe-HPG",
    eus: 16,
    threads_per_eu: 8,
    slm_bytes: 64 * 1024,
    max_groups: 64,
    barrier_groups: 32,
    min_simd: 8,
    fp32_lanes_per_eu: 8,
};

/// Everything else (Gen9–Xe-LP integrated GPUs, unknown parts): Xe-HPG's Xe-core with 7
/// threads per EU (Gen9–Gen12LP), the most restrictive figures here.
pub const XE_UNKNOWN: XeCore =
    XeCore { name: "Intel GPU (assumed Gen9–Xe-LP)", threads_per_eu: 7, ..XE_HPG };

/// The Xe-core of `device`, recognised by its marketing name; unknown parts are stated.
pub fn core_of_device(device: &DeviceInfo, assumptions: &mut Vec<String>) -> XeCore {
    let name = device.name.to_ascii_lowercase();
    if name.contains("data center gpu max") {
        XE_HPC
    } else if name.contains("arc(tm) b") || name.contains("arc b") || name.contains("lunar lake") {
        XE2
    } else if name.contains("arc(tm) a") || name.contains("arc a") {
        XE_HPG
    } else {
        assumptions.push(format!(
            "Intel GPU `{}` not recognised: Xe-cores of 16 EUs × 7 threads, 64 KiB SLM assumed",
            device.name
        ));
        XE_UNKNOWN
    }
}

/// SLM is allocated in a few fixed sizes; rounding up to a power of two (at least 1 KiB)
/// never allocates less than the hardware does for the sizes the calculator lists.
fn slm_allocation(bytes: u64) -> u64 {
    bytes.max(1024).checked_next_power_of_two().unwrap_or(u64::MAX)
}

/// Work-groups of `threads` work-items resident on one Xe-core, per resource, compiled for
/// SIMD width `simd`, with `slm_bytes` of SLM per work-group, using barriers or not.
pub fn active_groups_per_xe_core(
    core: &XeCore,
    threads: u32,
    simd: u32,
    slm_bytes: u64,
    uses_barriers: bool,
) -> Limits {
    let threads_per_group = ceil_div(threads as u64, simd.max(1) as u64);
    let hw_threads = (core.eus * core.threads_per_eu) as u64;
    Limits {
        warps: Some(limit(hw_threads, threads_per_group)),
        blocks: Some(core.max_groups),
        registers: None,
        shared_memory: (slm_bytes > 0).then(|| limit(core.slm_bytes, slm_allocation(slm_bytes))),
        barriers: uses_barriers.then_some(core.barrier_groups),
    }
}

/// The bound for `kernel` on the Intel GPU `device`.
pub(super) fn occupancy(
    device: &DeviceInfo,
    kernel: &KernelResources,
    mut assumptions: Vec<String>,
) -> Occupancy {
    let core = core_of_device(device, &mut assumptions);
    assumptions.push(format!(
        "Intel: SIMD{} sub-groups and the default 128-GRF mode assumed (the compiler's choice \
         is not queried)",
        core.min_simd
    ));
    let slm = local_mem_or_zero(kernel, &mut assumptions);
    let mut limits = active_groups_per_xe_core(
        &core,
        kernel.work_group_size,
        core.min_simd,
        slm,
        kernel.barriers > 0,
    );
    if let Ok(max) = u32::try_from(device.max_work_group_size) {
        if max > 0 && kernel.work_group_size > max {
            limits.warps = Some(0);
        }
    }
    let xe_cores = (device.compute_units / core.eus).max(1);
    Occupancy::from_limits(limits, xe_cores, assumptions)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::occupancy::{occupancy, KernelResources, Limiter};
    use crate::work::DeviceKind;

    fn intel_gpu(name: &str, eus: u32) -> DeviceInfo {
        DeviceInfo {
            name: name.into(),
            vendor: "Intel(R) Corporation".into(),
            kind: DeviceKind::Gpu,
            max_work_group_size: 1024,
            ..DeviceInfo::example_cpu(0, eus)
        }
    }

    #[test]
    fn xe_hpc() {
        // Max 1550: 1024 EUs = 128 Xe-cores of 64 threads; 256 work-items at SIMD16 = 16
        // threads → 4 groups per Xe-core → 512.
        let dev = intel_gpu("Intel(R) Data Center GPU Max 1550", 1024);
        let o = occupancy(&dev, &KernelResources::new(256).with_local_mem(0));
        assert_eq!((o.compute_units, o.groups_per_compute_unit, o.min_groups), (128, 4, 512));
        assert_eq!(o.limiter, Limiter::Warps);
        // 40000 B of SLM → 64 KiB allocation → 2 per 128 KiB.
        let o = occupancy(&dev, &KernelResources::new(256).with_local_mem(40000));
        assert_eq!((o.groups_per_compute_unit, o.limiter), (2, Limiter::SharedMemory));
        // 16 work-items = 1 thread: 64 by threads, 64 by the cap, 32 with barriers.
        let l = active_groups_per_xe_core(&XE_HPC, 16, 16, 0, true);
        assert_eq!(l.binding(), (32, Limiter::Barriers));
    }

    #[test]
    fn unknown_intel_gpu_is_stated() {
        // 32 EUs = 2 assumed Xe-cores of 16 × 7 = 112 threads; 256 at SIMD8 = 32 → 3 each.
        let dev = intel_gpu("Intel(R) UHD Graphics 770", 32);
        let o = occupancy(&dev, &KernelResources::new(256).with_local_mem(0));
        assert_eq!((o.compute_units, o.groups_per_compute_unit, o.min_groups), (2, 3, 6));
        assert!(o.assumptions.iter().any(|a| a.contains("UHD")), "{:?}", o.assumptions);
    }
}
