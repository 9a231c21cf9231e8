//! What hetdsl knows about a device: plain data, filled in by the engine's discovery
//! (`engine::discover`) and read by the pure parts (occupancy, nominal speeds, balancers).

use crate::error::{Error, Result};
use crate::work::DeviceKind;

/// NVIDIA attributes (`cl_nv_device_attribute_query`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NvidiaInfo {
    pub compute_capability: (u32, u32),
    pub registers_per_block: u32,
    pub warp_size: u32,
    /// PCI bus and slot, to match NVML devices.
    pub pci_bus_id: Option<u32>,
    pub pci_slot_id: Option<u32>,
}

/// AMD attributes (`cl_amd_device_attribute_query`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AmdInfo {
    pub wavefront_width: u32,
    pub simd_per_compute_unit: u32,
    pub board_name: String,
}

/// One OpenCL device of the unified device list (every platform at once).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DeviceInfo {
    /// Position in the unified list.
    pub index: usize,
    pub platform: String,
    pub name: String,
    pub vendor: String,
    pub version: String,
    pub kind: DeviceKind,
    pub compute_units: u32,
    /// Maximum clock in MHz.
    pub clock_mhz: u32,
    pub global_mem_bytes: u64,
    pub local_mem_bytes: u64,
    pub max_alloc_bytes: u64,
    pub max_work_group_size: usize,
    pub max_work_item_sizes: Vec<usize>,
    /// The device shares memory with the host (CPUs, integrated GPUs).
    pub host_unified_memory: bool,
    /// `CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT`.
    pub native_float_width: u32,
    /// Sub-buffer alignment in bits (`CL_DEVICE_MEM_BASE_ADDR_ALIGN`).
    pub mem_base_addr_align_bits: u32,
    pub nvidia: Option<NvidiaInfo>,
    pub amd: Option<AmdInfo>,
}

impl DeviceInfo {
    /// Whether the device compiles a kernel at its first launch (PoCL and CPU devices) rather
    /// than at the program's build, as GPU drivers do: only such a device is warmed up before a
    /// run is timed.
    pub fn compiles_at_first_launch(&self) -> bool {
        self.kind == DeviceKind::Cpu || self.platform.contains("Portable Computing")
    }

    /// A device that looks like a PoCL CPU device; for tests and the simulator.
    pub fn example_cpu(index: usize, compute_units: u32) -> Self {
        DeviceInfo {
            index,
            platform: "example".into(),
            name: format!("example CPU {index}"),
            vendor: "example".into(),
            version: "OpenCL 3.0".into(),
            kind: DeviceKind::Cpu,
            compute_units,
            clock_mhz: 2000,
            global_mem_bytes: 16 << 30,
            local_mem_bytes: 4 << 20,
            max_alloc_bytes: 4 << 30,
            max_work_group_size: 4096,
            max_work_item_sizes: vec![4096, 4096, 4096],
            host_unified_memory: true,
            native_float_width: 16,
            mem_base_addr_align_bits: 1024,
            nvidia: None,
            amd: None,
        }
    }

    /// A device that looks like an NVIDIA GPU of compute capability `cc` as NVIDIA's OpenCL
    /// reports it (48 KiB local memory, 1024-work-item groups, warp 32, 64 Ki registers per
    /// block); e.g. an H200 is `example_nvidia(0, "NVIDIA H200", (9, 0), 132, 1980)`.
    pub fn example_nvidia(
        index: usize,
        name: &str,
        cc: (u32, u32),
        compute_units: u32,
        clock_mhz: u32,
    ) -> Self {
        DeviceInfo {
            platform: "NVIDIA CUDA".into(),
            name: name.into(),
            vendor: "NVIDIA Corporation".into(),
            kind: DeviceKind::Gpu,
            compute_units,
            clock_mhz,
            local_mem_bytes: 48 << 10,
            max_work_group_size: 1024,
            max_work_item_sizes: vec![1024, 1024, 64],
            host_unified_memory: false,
            native_float_width: 1,
            nvidia: Some(NvidiaInfo {
                compute_capability: cc,
                registers_per_block: 65536,
                warp_size: 32,
                pci_bus_id: None,
                pci_slot_id: None,
            }),
            ..DeviceInfo::example_cpu(index, compute_units)
        }
    }

    /// A device that looks like an AMD GPU under ROCm OpenCL (`name` is its gfx target, e.g.
    /// `gfx90a:sramecc+:xnack-`), reporting `simd_per_compute_unit` SIMDs per compute unit.
    pub fn example_amd(
        index: usize,
        name: &str,
        compute_units: u32,
        wavefront_width: u32,
        simd_per_compute_unit: u32,
    ) -> Self {
        DeviceInfo {
            platform: "AMD Accelerated Parallel Processing".into(),
            name: name.into(),
            vendor: "Advanced Micro Devices, Inc.".into(),
            kind: DeviceKind::Gpu,
            clock_mhz: 1700,
            local_mem_bytes: 64 << 10,
            max_work_group_size: 1024,
            max_work_item_sizes: vec![1024, 1024, 1024],
            host_unified_memory: false,
            native_float_width: 1,
            amd: Some(AmdInfo {
                wavefront_width,
                simd_per_compute_unit,
                board_name: String::new(),
            }),
            ..DeviceInfo::example_cpu(index, compute_units)
        }
    }
}

/// Which devices a run uses: from code, or from `HETDSL_DEVICES` (`all`, `cpu`, `gpu`,
/// `accelerator`, or indices into the unified list such as `0,2`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum DeviceFilter {
    #[default]
    All,
    Kind(DeviceKind),
    Indices(Vec<usize>),
}

impl DeviceFilter {
    /// The environment variable that overrides the filter given in code.
    pub const ENV: &'static str = "HETDSL_DEVICES";

    /// The filter from `HETDSL_DEVICES`, if set.
    pub fn from_env() -> Result<Option<DeviceFilter>> {
        match std::env::var(Self::ENV) {
            Ok(v) if !v.trim().is_empty() => v.parse().map(Some),
            _ => Ok(None),
        }
    }

    pub fn matches(&self, d: &DeviceInfo) -> bool {
        match self {
            DeviceFilter::All => true,
            DeviceFilter::Kind(k) => d.kind == *k,
            DeviceFilter::Indices(ix) => ix.contains(&d.index),
        }
    }

    /// The devices this filter keeps, or an error naming what was there.
    pub fn select(&self, all: &[DeviceInfo]) -> Result<Vec<DeviceInfo>> {
        let kept: Vec<DeviceInfo> = all.iter().filter(|d| self.matches(d)).cloned().collect();
        if let DeviceFilter::Indices(ix) = self {
            if let Some(bad) = ix.iter().find(|i| **i >= all.len()) {
                return Err(Error::NoDeviceMatches {
                    filter: format!("{self} (index {bad} out of range)"),
                    found: describe(all),
                });
            }
        }
        if kept.is_empty() {
            return Err(Error::NoDeviceMatches { filter: self.to_string(), found: describe(all) });
        }
        Ok(kept)
    }
}

fn describe(all: &[DeviceInfo]) -> String {
    if all.is_empty() {
        return "none".into();
    }
    all.iter()
        .map(|d| format!("{}: {} [{:?}]", d.index, d.name, d.kind))
        .collect::<Vec<_>>()
        .join(", ")
}

impl std::fmt::Display for DeviceFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeviceFilter::All => f.write_str("all"),
            DeviceFilter::Kind(k) => write!(f, "{}", format!("{k:?}").to_lowercase()),
            DeviceFilter::Indices(ix) => {
                let s: Vec<String> = ix.iter().map(|i| i.to_string()).collect();
                f.write_str(&s.join(","))
            }
        }
    }
}

impl std::str::FromStr for DeviceFilter {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        let t = s.trim().to_ascii_lowercase();
        Ok(match t.as_str() {
            "all" => DeviceFilter::All,
            "cpu" => DeviceFilter::Kind(DeviceKind::Cpu),
            "gpu" => DeviceFilter::Kind(DeviceKind::Gpu),
            "accelerator" => DeviceFilter::Kind(DeviceKind::Accelerator),
            _ => {
                let ix: std::result::Result<Vec<usize>, _> =
                    t.split(',').map(|p| p.trim().parse::<usize>()).collect();
                // A repeated index (`0,0`) is most likely a typo for another device: a filter
                // selects each device once, so it would silently run on fewer than named.
                let distinct = |v: &[usize]| v.iter().enumerate().all(|(i, d)| !v[..i].contains(d));
                match ix {
                    Ok(v) if !v.is_empty() && distinct(&v) => DeviceFilter::Indices(v),
                    _ => return Err(Error::BadDeviceFilter(s.to_string())),
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_parse_and_select() {
        let all = vec![DeviceInfo::example_cpu(0, 1), DeviceInfo::example_cpu(1, 2)];
        assert_eq!("all".parse::<DeviceFilter>().unwrap().select(&all).unwrap().len(), 2);
        assert_eq!("1".parse::<DeviceFilter>().unwrap().select(&all).unwrap()[0].index, 1);
        assert!(matches!(
            "gpu".parse::<DeviceFilter>().unwrap().select(&all),
            Err(Error::NoDeviceMatches { .. })
        ));
        assert!(matches!(
            "0,5".parse::<DeviceFilter>().unwrap().select(&all),
            Err(Error::NoDeviceMatches { .. })
        ));
        assert!(matches!("fast".parse::<DeviceFilter>(), Err(Error::BadDeviceFilter(_))));
        assert!(matches!("0,1,0".parse::<DeviceFilter>(), Err(Error::BadDeviceFilter(_))));
    }

    #[test]
    fn cpus_and_pocl_compile_at_the_first_launch_gpus_at_the_build() {
        assert!(DeviceInfo::example_cpu(0, 16).compiles_at_first_launch());
        let mut gpu = DeviceInfo::example_nvidia(1, "NVIDIA H200", (9, 0), 132, 1980);
        assert!(!gpu.compiles_at_first_launch());
        gpu.platform = "Portable Computing Language".into();
        assert!(gpu.compiles_at_first_launch());
    }
}
