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
mod tests {
    use super::*;
    use crate::occupancy::{occupancy, KernelResources, Limiter};

    /// One calculator case: compute capability, work-group size, registers per work-item,
    /// local memory per work-group (static + dynamic, bytes), barriers, expected resident
    /// work-groups per SM and, where a single resource binds, the limiter.
    struct Case {
        cc: (u32, u32),
        threads: u32,
        regs: u32,
        smem: u64,
        barriers: u32,
        expected: u32,
        limiter: Option<Limiter>,
    }

    const fn case(
        cc: (u32, u32),
        threads: u32,
        regs: u32,
        smem: u64,
        expected: u32,
        limiter: Option<Limiter>,
    ) -> Case {
        Case { cc, threads, regs, smem, barriers: 1, expected, limiter }
    }

    use Limiter::{Barriers, Blocks, Registers, SharedMemory, Warps};

    fn check(cases: &[Case]) {
        for c in cases {
            let sm = Sm::for_cc(c.cc).expect("compute capability in the table");
            let limits = active_blocks_per_sm(&sm, c.threads, c.regs, c.smem, c.barriers);
            let (active, limiter) = limits.binding();
            let what = format!(
                "CC {}.{}, {} threads, {} regs, {} B, {} barriers: {limits:?}",
                c.cc.0, c.cc.1, c.threads, c.regs, c.smem, c.barriers
            );
            assert_eq!(active, c.expected, "{what}");
            if let Some(l) = c.limiter {
                assert_eq!(limiter, l, "{what}");
            }
        }
    }

    /// Resident OpenCL work-groups measured on an H200 (NVIDIA OpenCL, driver 580, a kernel of
    /// 12 registers; local memory as CL_KERNEL_LOCAL_MEM_SIZE reported it).
    #[test]
    fn h200_opencl_measurements() {
        check(&[
            // 64 work-items = 2 warps: 32 by warps and by the 32-block cap (a tie).
            case((9, 0), 64, 12, 260, 32, None),
            case((9, 0), 128, 12, 516, 16, Some(Warps)),
            case((9, 0), 256, 12, 1028, 8, Some(Warps)),
            case((9, 0), 512, 12, 2052, 4, Some(Warps)),
            case((9, 0), 1024, 12, 4100, 2, Some(Warps)),
            // 21028 + 1024 reserved → 22144 B allocated → ⌊233472 / 22144⌋ = 10 > 8 warps.
            case((9, 0), 256, 12, 21028, 8, Some(Warps)),
            // 41028 + 1024 → 42112 B → ⌊233472 / 42112⌋ = 5.
            case((9, 0), 256, 12, 41028, 5, Some(SharedMemory)),
            // 47028 + 1024 → 48128 B (≤ 48 KiB + 1 KiB) → 4.
            case((9, 0), 256, 12, 47028, 4, Some(SharedMemory)),
        ]);
    }

    /// The CUDA header's sweep on an H200 at 256 threads without local memory,
    /// and a worked example of a 20-register kernel.
    #[test]
    fn h200_register_sweep() {
        check(&[
            case((9, 0), 256, 16, 0, 8, Some(Warps)),
            case((9, 0), 256, 32, 0, 8, None),
            // 40 × 32 = 1280 regs/warp; ⌊16384 / 1280⌋ = 12 warps per sub-partition × 4 = 48
            // warps → 6 blocks of 8 warps.
            case((9, 0), 256, 40, 0, 6, Some(Registers)),
            case((9, 0), 256, 64, 0, 4, Some(Registers)),
            case((9, 0), 256, 72, 0, 3, Some(Registers)),
            case((9, 0), 256, 96, 0, 2, Some(Registers)),
            case((9, 0), 256, 128, 0, 2, Some(Registers)),
            case((9, 0), 256, 168, 0, 1, Some(Registers)),
            // 255 × 32 = 8160 → 8192 regs/warp → 2 warps per sub-partition → 8 → 1 block.
            case((9, 0), 256, 255, 0, 1, Some(Registers)),
            // 1024 threads at 72 registers: 2304 × 32 warps = 73728 > 65536 regs per block.
            case((9, 0), 1024, 72, 0, 0, Some(Registers)),
            // 20 registers, 1028 B, 256 threads: 768 regs/warp → 21 × 4 = 84 warps → 10 by
            // registers, 8 by warps (× 132 SMs = 1056 work-groups).
            case((9, 0), 256, 20, 1028, 8, Some(Warps)),
            // Same kernel at 1024 threads: 84 / 32 = 2 by registers, 64 / 32 = 2 by warps.
            case((9, 0), 1024, 20, 1028, 2, None),
        ]);
    }

    /// The 20 combinations compared on the H200 between the CUDA runtime's occupancy API and
    /// the header (a kernel of 14 registers and 1024 B static shared memory; they all
    /// agreed). Expected values by hand:
    /// 14 × 32 = 448 → 512 regs/warp → 32 warps per sub-partition → 128 warps by registers.
    /// Shared memory allocated = round_up(1024 static + 1024 reserved + dynamic, 128):
    /// dynamic 0 → 2048 → ⌊233472/2048⌋ = 114; 4096 → 6144 → 38; 20000 → 22144 → 10;
    /// 46000 → 48128 → 4. Warps: 64 / ⌈B/32⌉; blocks: 32.
    #[test]
    fn h200_runtime_api_grid() {
        let dynamic = [0u64, 4096, 20000, 46000];
        let expected: [(u32, [u32; 4]); 5] = [
            (64, [32, 32, 10, 4]),  // warps 32, registers 64, cap 32
            (128, [16, 16, 10, 4]), // warps 16, registers 32
            (256, [8, 8, 8, 4]),    // warps 8, registers 16
            (512, [4, 4, 4, 4]),    // warps 4, registers 8
            (1024, [2, 2, 2, 2]),   // warps 2, registers 4
        ];
        let mut cases = Vec::new();
        for (threads, per_dynamic) in expected {
            for (d, e) in dynamic.iter().zip(per_dynamic) {
                cases.push(case((9, 0), threads, 14, 1024 + d, e, None));
            }
        }
        assert_eq!(cases.len(), 20);
        check(&cases);
    }

    /// CUDA C++ Best Practices Guide, "Calculating Occupancy": on compute capability 7.0, 37
    /// registers per thread allow 12 resident blocks of 128 threads but only 4 of 320, and
    /// 100% occupancy needs at most 32 registers per thread.
    #[test]
    fn best_practices_guide_volta() {
        check(&[
            case((7, 0), 128, 37, 0, 12, Some(Registers)),
            case((7, 0), 320, 37, 0, 4, Some(Registers)),
            // 32 registers: 16 warps per sub-partition = all 64 warps, 8 blocks of 256.
            case((7, 0), 256, 32, 0, 8, None),
            // 33 registers → 1056 → 1280 regs/warp → 12 × 4 = 48 warps = 6 blocks (75%).
            case((7, 0), 256, 33, 0, 6, Some(Registers)),
        ]);
    }

    /// Other compute capabilities, by hand from the header's formulas.
    #[test]
    fn other_compute_capabilities() {
        check(&[
            // 3.5: 2 Ki threads, 16 blocks; 32 regs → 64 warps → 16 blocks of 4 warps; all tie.
            case((3, 5), 128, 32, 0, 16, None),
            // 3.5: 12000 B → 12032 (256-B unit, no reserve); ⌊49152 / 12032⌋ = 4.
            case((3, 5), 128, 32, 12000, 4, Some(SharedMemory)),
            // 3.5 vs 3.7 (twice the registers per SM), 64 regs, 256 threads: 2048 regs/warp →
            // 8 resp. 16 warps per sub-partition → 4 resp. 8 blocks.
            case((3, 5), 256, 64, 0, 4, Some(Registers)),
            case((3, 7), 256, 64, 0, 8, None),
            // 5.3 has 32 Ki registers per block: 1024 threads × 32 regs = 32768 fits (2 blocks
            // by warps), 33 regs → 1280 × 32 = 40960 does not.
            case((5, 3), 1024, 32, 0, 2, None),
            case((5, 3), 1024, 33, 0, 0, Some(Registers)),
            // 5.2 (64 Ki per block): 33 regs at 1024 threads → 12 × 4 = 48 warps → 1 block.
            case((5, 2), 1024, 33, 0, 1, Some(Registers)),
            // 6.0 (2 sub-partitions) vs 6.1 (4), 104 regs = 3328 regs/warp, 64 threads:
            // ⌊32768/3328⌋ × 2 = 18 warps → 9 blocks; ⌊16384/3328⌋ × 4 = 16 warps → 8.
            case((6, 0), 64, 104, 0, 9, Some(Registers)),
            case((6, 1), 64, 104, 0, 8, Some(Registers)),
            // 6.0, 704 threads (22 warps), 88 regs = 2816/warp: fits GP100 (22 × 2816 = 61952)
            // but not GP10x's check (24 × 2816 = 67584 > 65536): the header refuses it.
            case((6, 0), 704, 88, 0, 0, Some(Registers)),
            // 7.5: 32 warps, 16 blocks; 256 threads → 4 by warps.
            case((7, 5), 256, 32, 0, 4, Some(Warps)),
            case((7, 5), 64, 16, 0, 16, None),
            // 7.5: 32768 B → ⌊65536 / 32768⌋ = 2 (default carve-out 64 KiB).
            case((7, 5), 64, 16, 32768, 2, Some(SharedMemory)),
            // 8.0: 20000 B + 1024 → 21120 B; ⌊167936 / 21120⌋ = 7; 128 threads → 16 by warps.
            case((8, 0), 128, 16, 20000, 7, Some(SharedMemory)),
            // 8.6: 48 warps, 16 blocks, 100 KiB: 256 threads → 6 by warps.
            case((8, 6), 256, 32, 0, 6, Some(Warps)),
            // 8.6: 128 threads, 20000 B → 21120 B → ⌊102400 / 21120⌋ = 4.
            case((8, 6), 128, 16, 20000, 4, Some(SharedMemory)),
            // 8.9: 24 blocks; one-warp groups → 48 by warps, 24 by the cap.
            case((8, 9), 32, 16, 0, 24, Some(Blocks)),
            // 10.0 behaves as 9.0 for the 20-register example.
            case((10, 0), 256, 20, 1028, 8, Some(Warps)),
            // 11.0: 48 warps, 24 blocks: 128 threads → 12.
            case((11, 0), 128, 16, 0, 12, Some(Warps)),
            // 12.0: 41028 B → 42112 B → ⌊102400 / 42112⌋ = 2 (6 by warps).
            case((12, 0), 256, 32, 41028, 2, Some(SharedMemory)),
        ]);
    }

    /// The barrier limit applies from 9.0 on: barriers available = blocks × 2 (9.0) or × 1
    /// (12.0), divided by the barriers a block uses.
    #[test]
    fn barrier_limit() {
        let with_barriers = |cc, threads, barriers, expected, limiter| Case {
            barriers,
            ..case(cc, threads, 16, 0, expected, limiter)
        };
        check(&[
            // 9.0: 64 / 3 = 21 below the 32 allowed by warps and blocks.
            with_barriers((9, 0), 64, 3, 21, Some(Barriers)),
            // 8.0 has no barrier limit in the calculator: 32.
            with_barriers((8, 0), 64, 3, 32, None),
            // 12.0: 24 / 2 = 12 below 24 by warps and blocks.
            with_barriers((12, 0), 64, 2, 12, Some(Barriers)),
            // No barrier at all: no limit.
            with_barriers((9, 0), 64, 0, 32, None),
        ]);
    }

    /// A carve-out preference smaller than the default: used when one block fits, else the
    /// smallest carve-out step that holds a block.
    #[test]
    fn carveout_preference() {
        let mut h200 = Sm::for_cc((9, 0)).unwrap();
        // 41028 B → 42112 B. Preference 100 KiB: ⌊102400 / 42112⌋ = 2.
        h200.smem_preference = Some(100 * 1024);
        assert_eq!(active_blocks_per_sm(&h200, 256, 12, 41028, 1).active(), 2);
        // Preference 32 KiB holds none: the next step up, 64 KiB, holds 1.
        h200.smem_preference = Some(32 * 1024);
        assert_eq!(active_blocks_per_sm(&h200, 256, 12, 41028, 1).active(), 1);
        // Turing, preference 32 KiB, 40000 B → 40192 B: the 64 KiB step holds 1.
        let mut turing = Sm::for_cc((7, 5)).unwrap();
        turing.smem_preference = Some(32 * 1024);
        assert_eq!(active_blocks_per_sm(&turing, 64, 16, 40000, 1).active(), 1);
        // Above the 48 KiB per-block limit (+1 KiB reserve on 9.0): cannot run.
        assert_eq!(active_blocks_per_sm(&h200, 64, 16, 49 * 1024 + 1, 1).shared_memory, Some(0));
    }

    fn h200() -> DeviceInfo {
        DeviceInfo::example_nvidia(0, "NVIDIA H200", (9, 0), 132, 1980)
    }

    #[test]
    fn h200_device_bound() {
        let k = KernelResources::new(256).with_registers(20).with_local_mem(1028);
        let o = occupancy(&h200(), &k);
        assert_eq!((o.groups_per_compute_unit, o.compute_units, o.min_groups), (8, 132, 1056));
        assert_eq!(o.limiter, Limiter::Warps);
        assert!(o.assumptions.is_empty(), "{:?}", o.assumptions);
        let k = KernelResources::new(256).with_registers(12).with_local_mem(41028);
        assert_eq!(occupancy(&h200(), &k).min_groups, 5 * 132);
    }

    #[test]
    fn unknown_registers_use_the_stated_default() {
        // 64 registers: 2048/warp → 8 per sub-partition → 32 warps → 4 blocks of 256.
        let o = occupancy(&h200(), &KernelResources::new(256).with_local_mem(0));
        assert_eq!((o.groups_per_compute_unit, o.min_groups), (4, 4 * 132));
        assert!(o.assumptions.iter().any(|a| a.contains("registers")), "{:?}", o.assumptions);
    }

    #[test]
    fn unknown_compute_capability_is_conservative_and_stated() {
        // 13.0 takes the most restrictive row: 32 warps, 16 blocks, 256-B unit, 1 KiB reserve.
        // 256 threads → 4 by warps (registers: 10, shared memory: ⌊49152/2304⌋ = 21).
        let dev = DeviceInfo::example_nvidia(0, "future", (13, 0), 100, 2000);
        let k = KernelResources::new(256).with_registers(20).with_local_mem(1028);
        let o = occupancy(&dev, &k);
        assert_eq!((o.groups_per_compute_unit, o.limiter), (4, Limiter::Warps));
        assert!(o.assumptions.iter().any(|a| a.contains("13.0")), "{:?}", o.assumptions);
        // 7.2 is not listed: 7.0's limits, said so.
        let dev = DeviceInfo::example_nvidia(0, "Xavier", (7, 2), 8, 1377);
        let o = occupancy(&dev, &KernelResources::new(128).with_registers(37).with_local_mem(0));
        assert_eq!(o.groups_per_compute_unit, 12);
        assert!(o.assumptions.iter().any(|a| a.contains("7.0")), "{:?}", o.assumptions);
        // Every row's bound is at least the fallback's.
        let fallback = Sm::with_arch(Arch::most_restrictive());
        for a in ARCHS {
            let sm = Sm::with_arch(*a);
            for (t, r, s) in [(256, 20, 1028), (64, 40, 8000), (1024, 32, 0)] {
                assert!(
                    active_blocks_per_sm(&sm, t, r, s, 1).active()
                        >= active_blocks_per_sm(&fallback, t, r, s, 1).active(),
                    "CC {:?}",
                    a.cc
                );
            }
        }
    }

    #[test]
    fn too_large_a_group_cannot_run() {
        let o = occupancy(&h200(), &KernelResources::new(2048).with_registers(8).with_local_mem(0));
        assert_eq!((o.groups_per_compute_unit, o.min_groups), (0, 1));
        assert_eq!(o.limiter, Limiter::Warps);
        assert!(o.assumptions.iter().any(|a| a.contains("will fail")));
    }

    #[test]
    fn table_covers_3_5_to_12_0() {
        for cc in [(3, 5), (5, 0), (6, 0), (7, 0), (7, 5), (8, 0), (8, 6), (8, 9), (9, 0), (12, 0)]
        {
            assert!(Arch::exact(cc).is_some(), "{cc:?}");
        }
        // Carve-out steps ascend and end at the SM's shared memory.
        for a in ARCHS.iter().filter(|a| !a.carveout_kib.is_empty()) {
            assert!(a.carveout_kib.windows(2).all(|w| w[0] < w[1]), "{:?}", a.cc);
            assert_eq!(*a.carveout_kib.last().unwrap() as u64 * 1024, a.smem_per_sm, "{:?}", a.cc);
        }
    }
}
