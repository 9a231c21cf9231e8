//! Nominal peak FP32 GFLOP/s: the balancers' first speed estimates.
//!
//! `compute units × FP32 lanes per unit × 2 (a fused multiply-add is two operations) × clock`.
//! GPUs: lanes per SM/CU/EU by vendor and generation. CPUs: native float vector width × 2 FMA
//! units per core (not queryable; two on server x86 cores since Skylake-SP). The figures are
//! peaks at the maximum clock the driver reports; only their ratios matter to the balancers.

use super::{amd, cuda, family, intel, Family};
use crate::device::DeviceInfo;

/// FMA units per CPU core assumed (not queryable through OpenCL).
pub const CPU_FMA_UNITS: u32 = 2;

/// Clock assumed when the driver reports 0 MHz.
pub const DEFAULT_CLOCK_MHZ: u32 = 1000;

/// A device's nominal speed and how it was reckoned.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Nominal {
    pub gflops: f64,
    pub compute_units: u32,
    pub fp32_lanes_per_unit: u32,
    pub clock_mhz: u32,
    /// Each default used, stated.
    pub assumptions: Vec<String>,
}

/// Nominal peak FP32 GFLOP/s of `device`.
pub fn nominal_gflops(device: &DeviceInfo) -> f64 {
    nominal(device).gflops
}

/// Nominal peak FP32 GFLOP/s of `device`, with its factors and assumptions.
pub fn nominal(device: &DeviceInfo) -> Nominal {
    let mut assumptions = Vec::new();
    let lanes = match family(device) {
        Family::Cpu => device.native_float_width.max(1) * CPU_FMA_UNITS,
        Family::Nvidia => {
            let cc = device.nvidia.as_ref().map(|n| n.compute_capability).unwrap_or((0, 0));
            cuda::Arch::lookup(cc, &mut assumptions).fp32_lanes_per_sm
        }
        Family::Amd => {
            let unit = amd::Unit::of_device(device, &mut assumptions);
            unit.arch.fp32_lanes_per_cu * unit.cus_per_unit
        }
        Family::Intel => intel::core_of_device(device, &mut assumptions).fp32_lanes_per_eu,
        Family::Unknown => {
            assumptions.push(format!(
                "no FP32 lane count known for `{}`: its native float vector width ({}) per \
                 compute unit assumed",
                device.name, device.native_float_width
            ));
            device.native_float_width.max(1)
        }
    };
    let clock_mhz = if device.clock_mhz > 0 {
        device.clock_mhz
    } else {
        assumptions.push(format!("`{}` reports no clock: {DEFAULT_CLOCK_MHZ} MHz assumed", device.name));
        DEFAULT_CLOCK_MHZ
    };
    let units = device.compute_units.max(1);
    let gflops = units as f64 * lanes as f64 * 2.0 * clock_mhz as f64 / 1000.0;
    Nominal { gflops, compute_units: units, fp32_lanes_per_unit: lanes, clock_mhz, assumptions }
}
