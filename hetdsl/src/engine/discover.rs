//! Device discovery over every OpenCL platform at once: one unified device list.

use opencl3::device::{
    Device, CL_DEVICE_TYPE_ACCELERATOR, CL_DEVICE_TYPE_ALL, CL_DEVICE_TYPE_CPU, CL_DEVICE_TYPE_GPU,
};
use std::sync::OnceLock;

use opencl3::platform::get_platforms;

use crate::device::{AmdInfo, DeviceInfo, NvidiaInfo};
use crate::error::{ClContext, ClError, Error, Result};
use crate::work::DeviceKind;

/// A discovered device: its description and its OpenCL handle.
#[derive(Debug, Clone)]
pub(crate) struct Found {
    pub(crate) info: DeviceInfo,
    pub(crate) device: Device,
    /// Index of its platform in `get_platforms()`.
    pub(crate) platform: usize,
}

/// Every device of every platform, in platform order. Discovered once per process: some ICDs
/// (PoCL among them) crash or report nothing when first initialised from several threads at
/// once, and the device list does not change while a process runs.
pub(crate) fn discover() -> Result<Vec<Found>> {
    // The failure is kept as its OpenCL status so every call returns the same error.
    type Failure = (Option<&'static str>, ClError);
    static FOUND: OnceLock<std::result::Result<Vec<Found>, Failure>> = OnceLock::new();
    let found = FOUND.get_or_init(|| {
        discover_now().map_err(|e| match e {
            Error::Cl { call, code } => (Some(call), code),
            Error::NoPlatform(code) => (None, code),
            other => unreachable!("discovery fails only with OpenCL statuses, not {other}"),
        })
    });
    match found {
        Ok(found) => Ok(found.clone()),
        Err((Some(call), code)) => Err(Error::Cl { call, code: ClError(code.0) }),
        Err((None, code)) => Err(Error::NoPlatform(ClError(code.0))),
    }
}

fn discover_now() -> Result<Vec<Found>> {
    // NVIDIA's JIT cache drops the `-cl-nv-verbose` register lines on a cache hit, and the
    // occupancy bound needs them. The driver reads this when it loads, i.e. on the first
    // platform query below. A value the user set is left alone.
    if std::env::var_os("CUDA_CACHE_DISABLE").is_none() {
        std::env::set_var("CUDA_CACHE_DISABLE", "1");
    }
    let platforms = get_platforms().map_err(Error::NoPlatform)?;
    if platforms.is_empty() {
        return Err(Error::NoPlatform(opencl3::error_codes::ClError(-1001)));
    }
    let mut found = Vec::new();
    for (p, platform) in platforms.iter().enumerate() {
        let pname = platform.name().unwrap_or_else(|_| format!("platform {p}"));
        // A platform that fails to list its devices (a broken ICD) is skipped, not fatal.
        let Ok(ids) = platform.get_devices(CL_DEVICE_TYPE_ALL) else { continue };
        for id in ids {
            let device = Device::new(id);
            let info = describe(&device, found.len(), &pname)?;
            found.push(Found { info, device, platform: p });
        }
    }
    if found.is_empty() {
        return Err(Error::NoPlatform(opencl3::error_codes::ClError(-1)));
    }
    Ok(found)
}

fn describe(d: &Device, index: usize, platform: &str) -> Result<DeviceInfo> {
    let ty = d.dev_type().call("clGetDeviceInfo(TYPE)")?;
    let kind = if ty & CL_DEVICE_TYPE_GPU != 0 {
        DeviceKind::Gpu
    } else if ty & CL_DEVICE_TYPE_CPU != 0 {
        DeviceKind::Cpu
    } else if ty & CL_DEVICE_TYPE_ACCELERATOR != 0 {
        DeviceKind::Accelerator
    } else {
        DeviceKind::Other
    };
    let extensions = d.extensions().unwrap_or_default();
    let nvidia = extensions.contains("cl_nv_device_attribute_query").then(|| NvidiaInfo {
        compute_capability: (
            d.compute_capability_major_nv().unwrap_or(0),
            d.compute_capability_minor_nv().unwrap_or(0),
        ),
        registers_per_block: d.registers_per_block_nv().unwrap_or(0),
        warp_size: d.wrap_size_nv().unwrap_or(32),
        pci_bus_id: d.pci_bus_id_nv().ok(),
        pci_slot_id: d.pci_slot_id_nv().ok(),
    });
    let amd = extensions.contains("cl_amd_device_attribute_query").then(|| AmdInfo {
        wavefront_width: d.wavefront_width_amd().unwrap_or(64),
        simd_per_compute_unit: d.simd_per_compute_unit_amd().unwrap_or(4),
        board_name: d.board_name_amd().unwrap_or_default(),
    });
    Ok(DeviceInfo {
        index,
        platform: platform.to_string(),
        name: d.name().call("clGetDeviceInfo(NAME)")?.trim().to_string(),
        vendor: d.vendor().unwrap_or_default(),
        version: d.version().unwrap_or_default(),
        kind,
        compute_units: d.max_compute_units().call("clGetDeviceInfo(MAX_COMPUTE_UNITS)")?,
        clock_mhz: d.max_clock_frequency().unwrap_or(0),
        global_mem_bytes: d.global_mem_size().unwrap_or(0),
        local_mem_bytes: d.local_mem_size().unwrap_or(0),
        max_alloc_bytes: d.max_mem_alloc_size().unwrap_or(u64::MAX),
        max_work_group_size: d.max_work_group_size().unwrap_or(1),
        max_work_item_sizes: d.max_work_item_sizes().unwrap_or_default(),
        host_unified_memory: d.host_unified_memory().unwrap_or(kind == DeviceKind::Cpu),
        native_float_width: d.native_vector_width_float().unwrap_or(1),
        mem_base_addr_align_bits: d.mem_base_addr_align().unwrap_or(1024),
        nvidia,
        amd,
    })
}
