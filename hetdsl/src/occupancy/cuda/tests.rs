//! The equations against occupancies measured on an H200 and worked by hand.

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
    for cc in [(3, 5), (5, 0), (6, 0), (7, 0), (7, 5), (8, 0), (8, 6), (8, 9), (9, 0), (12, 0)] {
        assert!(Arch::exact(cc).is_some(), "{cc:?}");
    }
    // Carve-out steps ascend and end at the SM's shared memory.
    for a in ARCHS.iter().filter(|a| !a.carveout_kib.is_empty()) {
        assert!(a.carveout_kib.windows(2).all(|w| w[0] < w[1]), "{:?}", a.cc);
        assert_eq!(*a.carveout_kib.last().unwrap() as u64 * 1024, a.smem_per_sm, "{:?}", a.cc);
    }
}
