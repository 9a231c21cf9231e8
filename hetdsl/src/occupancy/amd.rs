//! AMD GPUs (GCN, CDNA, RDNA): wavefront slots per SIMD, VGPR granules, LDS and the
//! work-group cap per compute unit.
//!
//! Rules from LLVM's AMDGPU backend (`AMDGPUBaseInfo.cpp`: total VGPRs and allocation granule
//! per generation and wave size, at most 16 work-groups with barriers per CU, 32 per WGP) and
//! from ROCm's own occupancy API (`ihipOccupancyMaxActiveBlocksPerMultiprocessor` in
//! ROCm/clr: at most 8 waves per SIMD on gfx9 and older, "limited by SPI 32 per CU", and 16 on
//! gfx10 and newer).

use super::{
    ceil_div, limit, local_mem_or_zero, registers_or_default, round_up, KernelResources, Limits,
    Occupancy,
};
use crate::device::DeviceInfo;

/// A `gfxMmnp` target: major `M` (decimal, one or two digits), minor `n` and stepping `p`
/// (hexadecimal digits), e.g. gfx90a = 9.0.10, gfx1030 = 10.3.0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gfx {
    pub major: u32,
    pub minor: u32,
    pub stepping: u32,
}

/// The first `gfx…` target named in `text` (ROCm names devices like `gfx90a:sramecc+:xnack-`).
pub fn parse_gfx(text: &str) -> Option<Gfx> {
    let lower = text.to_ascii_lowercase();
    lower.match_indices("gfx").find_map(|(at, _)| {
        let digits: String =
            lower[at + 3..].chars().take_while(|c| c.is_ascii_hexdigit()).collect();
        if !(3..=4).contains(&digits.len()) {
            return None;
        }
        let (major, rest) = digits.split_at(digits.len() - 2);
        let hex = |i: usize| rest[i..=i].chars().next().and_then(|c| c.to_digit(16));
        Some(Gfx { major: major.parse().ok()?, minor: hex(0)?, stepping: hex(1)? })
    })
}

/// Per-compute-unit resources of one AMD generation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arch {
    pub name: &'static str,
    /// SIMDs per CU (not per WGP).
    pub simds_per_cu: u32,
    /// Wavefront slots per SIMD (the HIP runtime's figure).
    pub max_waves_per_simd: u32,
    /// VGPRs per lane of one SIMD and their allocation granule, for wave32 and wave64.
    pub vgprs_wave32: (u32, u32),
    pub vgprs_wave64: (u32, u32),
    /// LDS per CU, bytes (a WGP has twice as much).
    pub lds_per_cu: u64,
    /// Work-groups with barriers per CU.
    pub max_groups_per_cu: u32,
    /// Native wave size when the driver does not report it.
    pub default_wave: u32,
    /// FP32 lanes per CU (SIMDs × SIMD width), without packed-FP32 or dual issue.
    pub fp32_lanes_per_cu: u32,
}

const fn arch(
    name: &'static str,
    max_waves_per_simd: u32,
    vgprs_wave32: (u32, u32),
    vgprs_wave64: (u32, u32),
    rdna: bool,
) -> Arch {
    Arch {
        name,
        simds_per_cu: if rdna { 2 } else { 4 },
        max_waves_per_simd,
        vgprs_wave32,
        vgprs_wave64,
        lds_per_cu: 64 * 1024,
        max_groups_per_cu: 16,
        default_wave: if rdna { 32 } else { 64 },
        fp32_lanes_per_cu: 64,
    }
}

/// GCN gfx6–gfx9 (and MI100, gfx908, whose AGPRs are a separate file): 256 VGPRs, granule 4.
pub const GCN: Arch = arch("GCN", 8, (256, 4), (256, 4), false);
/// CDNA2/3 (gfx90a, gfx94x, gfx95x): 512 unified VGPRs+AGPRs, granule 8.
pub const CDNA2: Arch = arch("CDNA2/3", 8, (512, 8), (512, 8), false);
/// RDNA1 (gfx101x).
pub const RDNA1: Arch = arch("RDNA1", 16, (1024, 8), (512, 4), true);
/// RDNA2 (gfx103x) and the RDNA3 parts without the larger register file (gfx1102/1103).
pub const RDNA2: Arch = arch("RDNA2", 16, (1024, 16), (512, 8), true);
/// RDNA3 with 1.5× VGPRs (gfx1100, gfx1101, gfx1151).
pub const RDNA3: Arch = arch("RDNA3", 16, (1536, 24), (768, 12), true);

/// The generation of `gfx`; `None` for targets these rules do not cover.
pub fn arch_of(gfx: Gfx) -> Option<Arch> {
    Some(match (gfx.major, gfx.minor, gfx.stepping) {
        (9, 0, 0xa) | (9, 4, _) | (9, 5, _) => CDNA2,
        (6..=9, _, _) => GCN,
        (10, 1, _) => RDNA1,
        (10, 3, _) => RDNA2,
        (11, 0, 0) | (11, 0, 1) | (11, 5, 1) => RDNA3,
        (11, _, _) => RDNA2,
        _ => return None,
    })
}

/// The architecture of `device`, from the `gfx` target in its name or board name; unknown
/// targets take GCN's limits (the fewest VGPRs and waves of any generation), stated.
pub fn arch_of_device(device: &DeviceInfo, assumptions: &mut Vec<String>) -> Arch {
    let board = device.amd.as_ref().map(|a| a.board_name.as_str()).unwrap_or("");
    let gfx = parse_gfx(&device.name).or_else(|| parse_gfx(board));
    match gfx.and_then(arch_of) {
        Some(a) => a,
        None => {
            assumptions.push(format!(
                "AMD target of `{}` not recognised: GCN limits (8 waves/SIMD, 256 VGPRs, \
                 64 KiB LDS per CU) assumed",
                device.name
            ));
            GCN
        }
    }
}

/// One AMD compute unit as the driver reports it: on gfx10 and newer ROCm reports WGPs (two
/// CUs) by default, which `cus_per_unit` = 2 records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unit {
    pub arch: Arch,
    pub wave_size: u32,
    pub cus_per_unit: u32,
    pub max_work_group_size: u32,
    /// Largest LDS one work-group may use (`CL_DEVICE_LOCAL_MEM_SIZE`).
    pub lds_per_group: u64,
}

impl Unit {
    /// A single CU of `arch` with its native wave size and 1024-work-item groups.
    pub fn cu(arch: Arch) -> Unit {
        Unit {
            arch,
            wave_size: arch.default_wave,
            cus_per_unit: 1,
            max_work_group_size: 1024,
            lds_per_group: arch.lds_per_cu,
        }
    }

    /// The unit `device` reports, from `cl_amd_device_attribute_query`: SIMDs per compute unit
    /// beyond the CU's own mean the unit is a WGP.
    pub fn of_device(device: &DeviceInfo, assumptions: &mut Vec<String>) -> Unit {
        let arch = arch_of_device(device, assumptions);
        let mut unit = Unit::cu(arch);
        match &device.amd {
            Some(amd) => {
                if amd.wavefront_width > 0 {
                    unit.wave_size = amd.wavefront_width;
                }
                unit.cus_per_unit = (amd.simd_per_compute_unit / arch.simds_per_cu).max(1);
            }
            None => assumptions.push(format!(
                "`{}` gives no AMD attributes: wave{} and one CU per compute unit assumed",
                device.name, unit.wave_size
            )),
        }
        if let Ok(n) = u32::try_from(device.max_work_group_size) {
            if n > 0 {
                unit.max_work_group_size = n;
            }
        }
        if device.local_mem_bytes > 0 {
            unit.lds_per_group = device.local_mem_bytes;
        }
        unit
    }
}

/// Work-groups of `threads` work-items resident on one `unit`, per resource, for a kernel with
/// `vgprs` VGPRs per work-item and `lds_bytes` of LDS per work-group.
pub fn active_groups_per_unit(unit: &Unit, threads: u32, vgprs: u32, lds_bytes: u64) -> Limits {
    let arch = &unit.arch;
    let simds = (arch.simds_per_cu * unit.cus_per_unit) as u64;
    let waves_per_group = ceil_div(threads as u64, unit.wave_size as u64);
    let (total_vgprs, granule) =
        if unit.wave_size <= 32 { arch.vgprs_wave32 } else { arch.vgprs_wave64 };
    let by_waves = if threads > unit.max_work_group_size {
        0
    } else {
        limit(arch.max_waves_per_simd as u64 * simds, waves_per_group)
    };
    let by_vgprs = (vgprs > 0).then(|| {
        let waves_per_simd = total_vgprs as u64 / round_up(vgprs as u64, granule as u64);
        limit(waves_per_simd * simds, waves_per_group)
    });
    let lds_per_unit = arch.lds_per_cu * unit.cus_per_unit as u64;
    let by_lds = match lds_bytes {
        0 => None,
        b if b > unit.lds_per_group => Some(0),
        b => Some(limit(lds_per_unit, b)),
    };
    // A single-wave work-group needs no hardware barrier and is not capped.
    let by_barriers = (waves_per_group > 1).then_some(arch.max_groups_per_cu * unit.cus_per_unit);
    Limits {
        warps: Some(by_waves),
        blocks: None,
        registers: by_vgprs,
        shared_memory: by_lds,
        barriers: by_barriers,
    }
}

/// The bound for `kernel` on the AMD GPU `device`.
pub(super) fn occupancy(
    device: &DeviceInfo,
    kernel: &KernelResources,
    mut assumptions: Vec<String>,
) -> Occupancy {
    let unit = Unit::of_device(device, &mut assumptions);
    let vgprs = registers_or_default(kernel, &mut assumptions);
    let lds = local_mem_or_zero(kernel, &mut assumptions);
    let limits = active_groups_per_unit(&unit, kernel.work_group_size, vgprs, lds);
    Occupancy::from_limits(limits, device.compute_units, assumptions)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::occupancy::{occupancy, KernelResources, Limiter};

    #[test]
    fn parses_gfx_targets() {
        let g = |s| parse_gfx(s).map(|g: Gfx| (g.major, g.minor, g.stepping));
        assert_eq!(g("gfx90a:sramecc+:xnack-"), Some((9, 0, 10)));
        assert_eq!(g("gfx1030"), Some((10, 3, 0)));
        assert_eq!(g("AMD Instinct MI300X gfx942"), Some((9, 4, 2)));
        assert_eq!(g("gfx906"), Some((9, 0, 6)));
        assert_eq!(g("Ellesmere"), None);
        assert_eq!(arch_of(parse_gfx("gfx942").unwrap()), Some(CDNA2));
        assert_eq!(arch_of(parse_gfx("gfx1100").unwrap()), Some(RDNA3));
        assert_eq!(arch_of(parse_gfx("gfx1102").unwrap()), Some(RDNA2));
    }

    /// An MI250X die (gfx90a, 110 CUs, wave64, 4 SIMDs), by hand:
    /// 256 work-items = 4 waves; 8 wave slots per SIMD = 32 per CU → 8 groups;
    /// VGPRs: ⌊512 / round_up(v, 8)⌋ waves per SIMD × 4 SIMDs / 4 waves.
    #[test]
    fn cdna2() {
        let mi250x = DeviceInfo::example_amd(0, "gfx90a:sramecc+:xnack-", 110, 64, 4);
        let run = |vgprs, lds| {
            occupancy(&mi250x, &KernelResources::new(256).with_registers(vgprs).with_local_mem(lds))
        };
        // 64 VGPRs: 8 waves/SIMD → 8 groups (tie with the wave slots) → 880.
        let o = run(64, 0);
        assert_eq!((o.groups_per_compute_unit, o.min_groups), (8, 880));
        assert!(o.assumptions.is_empty(), "{:?}", o.assumptions);
        // 128 VGPRs: 4 waves/SIMD → 16 waves → 4 groups.
        assert_eq!(
            (run(128, 0).groups_per_compute_unit, run(128, 0).limiter),
            (4, Limiter::Registers)
        );
        // 100 VGPRs → 104: ⌊512/104⌋ = 4 → 4 groups.
        assert_eq!(run(100, 0).groups_per_compute_unit, 4);
        // LDS 16 KiB: ⌊64 KiB / 16 KiB⌋ = 4; 20000 B: 3.
        assert_eq!(
            (run(32, 16384).groups_per_compute_unit, run(32, 16384).limiter),
            (4, Limiter::SharedMemory)
        );
        assert_eq!(run(32, 20000).groups_per_compute_unit, 3);
        // LDS beyond the per-group 64 KiB: cannot run.
        assert_eq!(run(32, 65537).groups_per_compute_unit, 0);
    }

    #[test]
    fn gcn_and_the_barrier_cap() {
        let unit = Unit::cu(GCN);
        // MI50 (gfx906), 100 VGPRs: ⌊256/100⌋ = 2 waves/SIMD → 8 waves → 2 groups of 4 waves.
        assert_eq!(active_groups_per_unit(&unit, 256, 100, 0).active(), 2);
        // 2-wave groups with 16 VGPRs: 32 slots / 2 = 16 = the 16-group barrier cap.
        assert_eq!(active_groups_per_unit(&unit, 128, 16, 0).active(), 16);
        // Single-wave groups need no barrier: 32 by wave slots.
        let l = active_groups_per_unit(&unit, 64, 16, 0);
        assert_eq!((l.active(), l.barriers), (32, None));
    }

    /// ROCm reports gfx10+ in WGP mode: a unit of 2 CUs (4 SIMD32, 128 KiB LDS, 32 groups).
    #[test]
    fn rdna_wgp_mode() {
        let rx6900 = DeviceInfo::example_amd(0, "gfx1030", 40, 32, 4);
        let run = |vgprs, lds| {
            occupancy(&rx6900, &KernelResources::new(256).with_registers(vgprs).with_local_mem(lds))
        };
        // 256 = 8 wave32; 64 VGPRs (granule 16): ⌊1024/64⌋ = 16 waves/SIMD = 64 per WGP → 8;
        // wave slots 16 × 4 = 64 → 8; barrier cap 32 → 8 × 40 WGPs = 320.
        assert_eq!(run(64, 0).min_groups, 320);
        // 96 VGPRs: ⌊1024/96⌋ = 10 → 40 waves → 5 groups.
        assert_eq!(run(96, 0).groups_per_compute_unit, 5);
        // LDS 32 KiB of 128 KiB per WGP → 4.
        assert_eq!(run(32, 32768).groups_per_compute_unit, 4);
        // RDNA3's larger file: 96 VGPRs (granule 24) → ⌊1536/96⌋ = 16 → 64 waves → 8.
        let rx7900 = DeviceInfo::example_amd(0, "gfx1100", 48, 32, 4);
        let k = KernelResources::new(256).with_registers(96).with_local_mem(0);
        assert_eq!(occupancy(&rx7900, &k).groups_per_compute_unit, 8);
    }

    #[test]
    fn unknown_target_is_stated() {
        let dev = DeviceInfo::example_amd(0, "Tahiti", 32, 64, 4);
        let o = occupancy(&dev, &KernelResources::new(256).with_registers(64).with_local_mem(0));
        // GCN: ⌊256/64⌋ = 4 waves/SIMD → 16 waves → 4 groups.
        assert_eq!(o.groups_per_compute_unit, 4);
        assert!(o.assumptions.iter().any(|a| a.contains("Tahiti")), "{:?}", o.assumptions);
    }
}
