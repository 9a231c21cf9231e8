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
        assumptions
            .push(format!("`{}` reports no clock: {DEFAULT_CLOCK_MHZ} MHz assumed", device.name));
        DEFAULT_CLOCK_MHZ
    };
    let units = device.compute_units.max(1);
    let gflops = units as f64 * lanes as f64 * 2.0 * clock_mhz as f64 / 1000.0;
    Nominal { gflops, compute_units: units, fp32_lanes_per_unit: lanes, clock_mhz, assumptions }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-6 * b.abs().max(1.0)
    }

    #[test]
    fn h200_and_its_host() {
        // 132 SMs × 128 lanes × 2 × 1.98 GHz = 66 908 GFLOP/s (NVIDIA's spec: 67 TFLOPS).
        let h200 = DeviceInfo::example_nvidia(0, "NVIDIA H200", (9, 0), 132, 1980);
        assert!(close(nominal_gflops(&h200), 66_908.16));
        // PoCL on the H200 host: 16 CUs × 16 lanes × 2 FMA units × 2 × 2.1 GHz = 2150.4.
        let host = DeviceInfo { clock_mhz: 2100, ..DeviceInfo::example_cpu(1, 16) };
        let n = nominal(&host);
        assert!(close(n.gflops, 2150.4), "{n:?}");
        assert_eq!(n.fp32_lanes_per_unit, 32);
    }

    #[test]
    fn other_vendors() {
        // A100 (8.0: 64 FP32 lanes/SM), 108 SMs at 1410 MHz: 19 491.84 (datasheet: 19.5 TF).
        let a100 = DeviceInfo::example_nvidia(0, "A100", (8, 0), 108, 1410);
        assert!(close(nominal_gflops(&a100), 19_491.84));
        // One MI250X die: 110 CUs × 64 lanes × 2 × 1.7 GHz = 23 936.
        let mi250x = DeviceInfo::example_amd(0, "gfx90a", 110, 64, 4);
        assert!(close(nominal_gflops(&mi250x), 23_936.0));
        // RDNA2 reported as 40 WGPs: 128 lanes per WGP × 2 × 1.7 GHz × 40 = 17 408.
        let rx6900 = DeviceInfo::example_amd(0, "gfx1030", 40, 32, 4);
        assert!(close(nominal_gflops(&rx6900), 17_408.0));
    }

    #[test]
    fn missing_figures_are_stated() {
        let mut dev = DeviceInfo::example_nvidia(0, "mystery", (0, 0), 10, 0);
        dev.clock_mhz = 0;
        let n = nominal(&dev);
        // Most restrictive lanes (64) at the assumed 1000 MHz: 10 × 64 × 2 × 1 = 1280.
        assert!(close(n.gflops, 1280.0), "{n:?}");
        assert_eq!(n.assumptions.len(), 2, "{:?}", n.assumptions);
    }
}
