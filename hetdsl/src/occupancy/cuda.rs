//! NVIDIA: the CUDA occupancy calculator's equations (`cudaOccMaxActiveBlocksPerMultiprocessor`
//! in CUDA's `cuda_occupancy.h`), per compute capability 3.5 to 12.0.
//!
//! NVIDIA's OpenCL runs work-groups as CUDA blocks, and on an H200 the resident work-groups
//! measured from OpenCL matched these equations in every case tried. What OpenCL does not report
//! (threads, blocks and registers per SM, allocation granularities, reserved shared memory,
//! carve-out steps) comes from [`ARCHS`].

use super::{
    ceil_div, limit, local_mem_or_zero, registers_or_default, round_up, KernelResources, Limits,
    Occupancy,
};
use crate::device::DeviceInfo;

/// Registers are allocated to warps in units of 256 on every compute capability since 2.0.
pub const REGISTER_ALLOCATION_UNIT: u64 = 256;

/// Architectural constants of one compute capability that no OpenCL query returns.
///
/// Sources: `cuda_occupancy.h` (CUDA 12.6 and 13.x) for blocks/SM, sub-partitions, allocation
/// units, registers per thread, carve-out steps and barriers; the CUDA Programming Guide's
/// per-compute-capability table (as reproduced in Nsight Compute's "GPU Data") for the
/// device properties. The 9.0 row was read back from an H200.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arch {
    pub cc: (u32, u32),
    pub max_threads_per_sm: u32,
    pub max_blocks_per_sm: u32,
    pub regs_per_sm: u32,
    /// Registers one block may hold (the device property; `CL_DEVICE_REGISTERS_PER_BLOCK_NV`
    /// overrides it when the driver reports it).
    pub regs_per_block: u32,
    pub max_regs_per_thread: u32,
    /// Register-file sub-partitions (warp schedulers) per SM.
    pub sub_partitions: u32,
    /// Shared memory per SM at the largest carve-out, bytes.
    pub smem_per_sm: u64,
    /// Default per-block shared-memory limit (OpenCL has no opt-in), bytes.
    pub smem_per_block: u64,
    pub smem_alloc_unit: u64,
    /// Shared memory the driver reserves for every block (CC >= 8.0), bytes.
    pub reserved_smem_per_block: u64,
    /// Shared-memory carve-out sizes in KiB, ascending (CC >= 7.0); empty before Volta, where
    /// the size is fixed or set by the cache configuration (OpenCL: the largest).
    pub carveout_kib: &'static [u32],
    /// Hardware barriers per block slot: barriers available = this × `max_blocks_per_sm`.
    pub barriers_per_block_slot: u32,
    /// FP32 lanes per SM (`_ConvertSMVer2Cores` in NVIDIA's cuda-samples), for nominal GFLOP/s.
    pub fp32_lanes_per_sm: u32,
}

const VOLTA_STEPS: &[u32] = &[0, 8, 16, 32, 64, 96];
const TURING_STEPS: &[u32] = &[32, 64];
const GA100_STEPS: &[u32] = &[0, 8, 16, 32, 64, 100, 132, 164];
const GA10X_STEPS: &[u32] = &[0, 8, 16, 32, 64, 100];
const HOPPER_STEPS: &[u32] = &[0, 8, 16, 32, 64, 100, 132, 164, 196, 228];

/// Builds a table row; the argument order is the field order of [`Arch`].
#[allow(clippy::too_many_arguments)]
const fn row(
    cc: (u32, u32),
    max_threads_per_sm: u32,
    max_blocks_per_sm: u32,
    regs_per_sm: u32,
    regs_per_block: u32,
    max_regs_per_thread: u32,
    sub_partitions: u32,
    smem_per_sm: u64,
    smem_alloc_unit: u64,
    reserved_smem_per_block: u64,
    carveout_kib: &'static [u32],
    barriers_per_block_slot: u32,
    fp32_lanes_per_sm: u32,
) -> Arch {
    Arch {
        cc,
        max_threads_per_sm,
        max_blocks_per_sm,
        regs_per_sm,
        regs_per_block,
        max_regs_per_thread,
        sub_partitions,
        smem_per_sm,
        smem_per_block: 48 * 1024,
        smem_alloc_unit,
        reserved_smem_per_block,
        carveout_kib,
        barriers_per_block_slot,
        fp32_lanes_per_sm,
    }
}

/// The known compute capabilities. Barrier slots: 2 per block on 5.x–7.x, 8.0, 9.0 and 10.0,
/// 1 on the other 8.x, 11.0 and 12.x (`cudaOccMaxBlocksPerSMBlockBarrierLimit`); the limit is
/// applied from 9.0 on, as the header does.
#[rustfmt::skip]
pub const ARCHS: &[Arch] = &[
    //   cc       thr/SM blk/SM regs/SM regs/blk r/thr subP smem/SM  unit resv carve-out bar lanes
    row((3, 5),  2048, 16,  65536, 65536, 255, 4,  49152, 256, 0,    &[],          2, 192),
    row((3, 7),  2048, 16, 131072, 65536, 255, 4, 114688, 256, 0,    &[],          2, 192),
    row((5, 0),  2048, 32,  65536, 65536, 255, 4,  65536, 256, 0,    &[],          2, 128),
    row((5, 2),  2048, 32,  65536, 65536, 255, 4,  98304, 256, 0,    &[],          2, 128),
    row((5, 3),  2048, 32,  65536, 32768, 255, 4,  65536, 256, 0,    &[],          2, 128),
    row((6, 0),  2048, 32,  65536, 65536, 255, 2,  65536, 256, 0,    &[],          2,  64),
    row((6, 1),  2048, 32,  65536, 65536, 255, 4,  98304, 256, 0,    &[],          2, 128),
    row((6, 2),  2048, 32,  65536, 32768, 255, 4,  65536, 256, 0,    &[],          2, 128),
    row((7, 0),  2048, 32,  65536, 65536, 256, 4,  98304, 256, 0,    VOLTA_STEPS,  2,  64),
    row((7, 5),  1024, 16,  65536, 65536, 256, 4,  65536, 256, 0,    TURING_STEPS, 2,  64),
    row((8, 0),  2048, 32,  65536, 65536, 256, 4, 167936, 128, 1024, GA100_STEPS,  2,  64),
    row((8, 6),  1536, 16,  65536, 65536, 256, 4, 102400, 128, 1024, GA10X_STEPS,  1, 128),
    row((8, 7),  1536, 16,  65536, 65536, 256, 4, 167936, 128, 1024, GA100_STEPS,  1, 128),
    row((8, 9),  1536, 24,  65536, 65536, 256, 4, 102400, 128, 1024, GA10X_STEPS,  1, 128),
    row((9, 0),  2048, 32,  65536, 65536, 256, 4, 233472, 128, 1024, HOPPER_STEPS, 2, 128),
    row((10, 0), 2048, 32,  65536, 65536, 256, 4, 233472, 128, 1024, HOPPER_STEPS, 2, 128),
    row((11, 0), 1536, 24,  65536, 65536, 256, 4, 233472, 128, 1024, HOPPER_STEPS, 1, 128),
    row((12, 0), 1536, 24,  65536, 65536, 256, 4, 102400, 128, 1024, GA10X_STEPS,  1, 128),
];

impl Arch {
    /// The row of exactly `cc`.
    pub fn exact(cc: (u32, u32)) -> Option<Arch> {
        ARCHS.iter().find(|a| a.cc == cc).copied()
    }

    /// The row for `cc`: the exact one; else the nearest lower minor version of the same major
    /// (7.2 → 7.0, 12.1 → 12.0); else [`Arch::most_restrictive`]. Each fallback is stated in
    /// `assumptions`.
    pub fn lookup(cc: (u32, u32), assumptions: &mut Vec<String>) -> Arch {
        if let Some(a) = Arch::exact(cc) {
            return a;
        }
        let lower = ARCHS.iter().filter(|a| a.cc.0 == cc.0 && a.cc.1 < cc.1).max_by_key(|a| a.cc.1);
        if let Some(a) = lower {
            assumptions.push(format!(
                "compute capability {}.{} not in the table: the limits of {}.{} assumed",
                cc.0, cc.1, a.cc.0, a.cc.1
            ));
            return Arch { cc, ..*a };
        }
        assumptions.push(format!(
            "compute capability {}.{} unknown: the most restrictive limits of 3.5–12.0 assumed",
            cc.0, cc.1
        ));
        Arch { cc, ..Arch::most_restrictive() }
    }

    /// Every limit at its most restrictive value over the table (fewest threads, blocks,
    /// registers and shared memory, coarsest allocation, fixed carve-out), so that the bound
    /// it gives is below that of any listed GPU.
    pub fn most_restrictive() -> Arch {
        let min = |f: fn(&Arch) -> u64| ARCHS.iter().map(f).min().unwrap_or(0);
        let max = |f: fn(&Arch) -> u64| ARCHS.iter().map(f).max().unwrap_or(0);
        Arch {
            cc: (0, 0),
            max_threads_per_sm: min(|a| a.max_threads_per_sm as u64) as u32,
            max_blocks_per_sm: min(|a| a.max_blocks_per_sm as u64) as u32,
            regs_per_sm: min(|a| a.regs_per_sm as u64) as u32,
            regs_per_block: min(|a| a.regs_per_block as u64) as u32,
            max_regs_per_thread: min(|a| a.max_regs_per_thread as u64) as u32,
            sub_partitions: max(|a| a.sub_partitions as u64) as u32,
            smem_per_sm: min(|a| a.smem_per_sm),
            smem_per_block: min(|a| a.smem_per_block),
            smem_alloc_unit: max(|a| a.smem_alloc_unit),
            reserved_smem_per_block: max(|a| a.reserved_smem_per_block),
            carveout_kib: &[],
            barriers_per_block_slot: min(|a| a.barriers_per_block_slot as u64) as u32,
            fp32_lanes_per_sm: min(|a| a.fp32_lanes_per_sm as u64) as u32,
        }
    }

    /// The smallest carve-out that holds `bytes` (`cudaOccAlignUpShmemSizeVoltaPlus`); the
    /// largest carve-out when none does (the header rejects such a request as invalid).
    pub fn align_up_to_carveout(&self, bytes: u64) -> u64 {
        let mut steps = self.carveout_kib.iter().map(|k| *k as u64 * 1024);
        let largest = steps.clone().next_back();
        steps.find(|s| *s >= bytes).or(largest).unwrap_or(self.smem_per_sm)
    }
}

/// One SM of a device: its architecture plus the properties the driver reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sm {
    pub arch: Arch,
    pub warp_size: u32,
    pub max_threads_per_block: u32,
    pub regs_per_block: u32,
    /// Per-block local-memory limit (`CL_DEVICE_LOCAL_MEM_SIZE`).
    pub smem_per_block: u64,
    /// Carve-out preference in bytes (CUDA's `carveoutConfig`); `None`, the default, prefers
    /// the largest, which is what NVIDIA's OpenCL used in every H200 measurement.
    pub smem_preference: Option<u64>,
}

impl Sm {
    /// An SM of compute capability `cc` with the table's properties, warp 32 and 1024 threads
    /// per block; `None` if `cc` is not in the table.
    pub fn for_cc(cc: (u32, u32)) -> Option<Sm> {
        Arch::exact(cc).map(Sm::with_arch)
    }

    fn with_arch(arch: Arch) -> Sm {
        Sm {
            arch,
            warp_size: 32,
            max_threads_per_block: 1024,
            regs_per_block: arch.regs_per_block,
            smem_per_block: arch.smem_per_block,
            smem_preference: None,
        }
    }

    /// The SM of `device`: the table row of its compute capability, overridden by what the
    /// driver reports (warp size, registers per block, local memory, work-group size).
    pub fn of_device(device: &DeviceInfo, assumptions: &mut Vec<String>) -> Sm {
        let Some(nv) = &device.nvidia else {
            assumptions.push(format!(
                "`{}` gives no NVIDIA attributes (cl_nv_device_attribute_query): compute \
                 capability unknown",
                device.name
            ));
            let mut sm = Sm::with_arch(Arch::lookup((0, 0), &mut Vec::new()));
            sm.max_threads_per_block = max_work_group_size(device, sm.max_threads_per_block);
            return sm;
        };
        let mut sm = Sm::with_arch(Arch::lookup(nv.compute_capability, assumptions));
        if nv.warp_size > 0 {
            sm.warp_size = nv.warp_size;
        }
        if nv.registers_per_block > 0 {
            sm.regs_per_block = nv.registers_per_block;
        }
        if device.local_mem_bytes > 0 {
            sm.smem_per_block = device.local_mem_bytes;
        }
        sm.max_threads_per_block = max_work_group_size(device, sm.max_threads_per_block);
        sm
    }
}

fn max_work_group_size(device: &DeviceInfo, fallback: u32) -> u32 {
    match u32::try_from(device.max_work_group_size) {
        Ok(n) if n > 0 => n,
        _ => fallback,
    }
}

/// Work-groups (blocks) of `threads` work-items resident on one SM, per resource, for a kernel
/// with `registers` per work-item, `shared_bytes` of local memory per work-group (static +
/// dynamic) and `barriers` hardware barriers. A limit of `Some(0)` means the launch cannot run.
pub fn active_blocks_per_sm(
    sm: &Sm,
    threads: u32,
    registers: u32,
    shared_bytes: u64,
    barriers: u32,
) -> Limits {
    let warps_per_block = ceil_div(threads as u64, sm.warp_size as u64);
    let blocks = sm.arch.max_blocks_per_sm;
    let barrier_limit = (sm.arch.cc.0 >= 9 && barriers > 0)
        .then(|| limit(blocks as u64 * sm.arch.barriers_per_block_slot as u64, barriers as u64));
    let mut by_registers = registers_limit(sm, sm.arch.sub_partitions, warps_per_block, registers);
    // GP100 (6.0) has 2 sub-partitions, GP10x 4. The header refuses on 6.0 what GP10x cannot
    // run, for compatibility within Pascal.
    if sm.arch.cc == (6, 0)
        && by_registers != Some(0)
        && registers_limit(sm, 4, warps_per_block, registers) == Some(0)
    {
        by_registers = Some(0);
    }
    Limits {
        warps: Some(warps_limit(sm, threads, warps_per_block)),
        blocks: Some(blocks),
        registers: by_registers,
        shared_memory: shared_memory_limit(sm, shared_bytes),
        barriers: barrier_limit,
    }
}

/// Warp slots: `(threads per SM / warp) / warps per block`; 0 if the block is too large.
/// (Partitioned global caching, an opt-in of 5.2/5.3/6.x, is off as in CUDA's default.)
fn warps_limit(sm: &Sm, threads: u32, warps_per_block: u64) -> u32 {
    if threads > sm.max_threads_per_block {
        return 0;
    }
    let warps_per_sm = (sm.arch.max_threads_per_sm / sm.warp_size) as u64;
    limit(warps_per_sm, warps_per_block)
}

/// Registers: each warp gets `registers × warp` rounded up to 256; the register file is split
/// between the sub-partitions, each holding whole warps. The block must also fit the per-block
/// limit, checked with its warps rounded up to a multiple of the sub-partitions (the
/// hardware's check). `None` for a kernel that uses no register.
fn registers_limit(
    sm: &Sm,
    sub_partitions: u32,
    warps_per_block: u64,
    registers: u32,
) -> Option<u32> {
    let per_warp = round_up(registers as u64 * sm.warp_size as u64, REGISTER_ALLOCATION_UNIT);
    let per_block = per_warp.saturating_mul(warps_per_block);
    let assumed_per_block =
        per_warp.saturating_mul(round_up(warps_per_block, sub_partitions as u64));
    let regs_per_block = sm.regs_per_block as u64;
    if regs_per_block < assumed_per_block
        || regs_per_block < per_block
        || registers > sm.arch.max_regs_per_thread
    {
        return Some(0);
    }
    if per_warp == 0 {
        return None;
    }
    let warps_per_sub_partition = (sm.arch.regs_per_sm / sub_partitions) as u64 / per_warp;
    Some(limit(warps_per_sub_partition * sub_partitions as u64, warps_per_block))
}

/// Local memory: the block's bytes plus the driver's reserve, rounded up to the allocation
/// unit, must fit the per-block limit (which grows by the reserve); the SM holds as many as
/// its carve-out allows. The carve-out is the preference (default: the largest), or, where
/// the preference is too small for one block, the smallest step that holds one (Volta on).
fn shared_memory_limit(sm: &Sm, shared_bytes: u64) -> Option<u32> {
    let arch = &sm.arch;
    let per_block =
        round_up(shared_bytes.saturating_add(arch.reserved_smem_per_block), arch.smem_alloc_unit);
    if per_block > sm.smem_per_block.saturating_add(arch.reserved_smem_per_block) {
        return Some(0);
    }
    let volta_on = arch.cc.0 >= 7 && !arch.carveout_kib.is_empty();
    let preference = if volta_on {
        arch.align_up_to_carveout(sm.smem_preference.unwrap_or(arch.smem_per_sm))
    } else {
        arch.smem_per_sm
    };
    let per_sm = if preference >= per_block {
        preference
    } else if volta_on {
        arch.align_up_to_carveout(per_block)
    } else {
        arch.smem_per_sm
    };
    (per_block > 0).then(|| limit(per_sm, per_block))
}

/// The bound for `kernel` on the NVIDIA GPU `device`.
pub(super) fn occupancy(
    device: &DeviceInfo,
    kernel: &KernelResources,
    mut assumptions: Vec<String>,
) -> Occupancy {
    let sm = Sm::of_device(device, &mut assumptions);
    let registers = registers_or_default(kernel, &mut assumptions);
    let shared = local_mem_or_zero(kernel, &mut assumptions);
    let limits =
        active_blocks_per_sm(&sm, kernel.work_group_size, registers, shared, kernel.barriers);
    Occupancy::from_limits(limits, device.compute_units, assumptions)
}

#[cfg(test)]
mod tests;
