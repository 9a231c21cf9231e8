//! A program built for every selected device: one context and one `cl_program` per platform.

use std::collections::HashMap;
use std::sync::Arc;

use opencl3::context::Context;
use opencl3::program::Program as ClProgram;

use super::discover::Found;
use super::{KernelSource, Launch};
use crate::device::DeviceInfo;
use crate::error::{ClContext, Error, Result};
use crate::occupancy::{parse_nv_verbose, NvKernelUsage};

/// One platform's share of a program.
pub(crate) struct PlatformProgram {
    pub context: Context,
    pub program: ClProgram,
}

/// A device of a program: its description, handle and the platform program it uses.
#[derive(Clone)]
pub(crate) struct ProgramDevice {
    pub info: DeviceInfo,
    pub device: opencl3::device::Device,
    pub platform: Arc<PlatformProgram>,
    /// The device's build log (warnings, `-cl-nv-verbose` resource lines).
    pub build_log: String,
    /// Registers and shared memory per kernel, parsed from an NVIDIA build log.
    pub nv_usage: Arc<HashMap<String, NvKernelUsage>>,
}

/// A kernel source compiled for every selected device.
pub struct Program {
    pub(crate) source_name: String,
    pub(crate) devices: Vec<ProgramDevice>,
    pub(crate) kernel_names: Vec<String>,
}

impl Drop for Program {
    fn drop(&mut self) {
        // Its contexts and programs are released one build or run at a time. A host thread of
        // an earlier run still out in its driver holds its own references and releases them
        // when (if ever) it comes back; nothing here waits for it.
        let _one_at_a_time = super::opencl_lock();
        self.devices.clear();
    }
}

impl Program {
    pub(crate) fn build(found: &[Found], source: &KernelSource, options: &str) -> Result<Program> {
        let _one_at_a_time = super::opencl_lock();
        let mut platforms: Vec<usize> = found.iter().map(|f| f.platform).collect();
        platforms.dedup();
        let mut devices = Vec::new();
        let mut failures = Vec::new();
        let mut kernel_names = Vec::new();
        for p in platforms {
            let members: Vec<&Found> = found.iter().filter(|f| f.platform == p).collect();
            let ids: Vec<_> = members.iter().map(|f| f.device.id()).collect();
            let context = Context::from_devices(&ids, &[], None, std::ptr::null_mut())
                .call("clCreateContext")?;
            let mut program = ClProgram::create_from_source(&context, &source.text)
                .call("clCreateProgramWithSource")?;
            let mut opts = String::from("-cl-std=CL1.2 ");
            opts += options;
            if members.iter().any(|f| f.info.nvidia.is_some()) {
                // Registers and shared memory per kernel, for the occupancy bound.
                opts += " -cl-nv-verbose";
            }
            let built = program.build(&ids, &opts);
            let logs: Vec<String> =
                ids.iter().map(|id| program.get_build_log(*id).unwrap_or_default()).collect();
            if built.is_err() {
                for (f, log) in members.iter().zip(&logs) {
                    failures.push(format!(
                        "--- {} ({}):\n{}",
                        f.info.name,
                        f.info.platform,
                        log.trim()
                    ));
                }
                continue;
            }
            if kernel_names.is_empty() {
                kernel_names = program
                    .kernel_names()
                    .split(';')
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect();
            }
            let platform = Arc::new(PlatformProgram { context, program });
            for (f, log) in members.into_iter().zip(logs) {
                devices.push(ProgramDevice {
                    info: f.info.clone(),
                    device: f.device,
                    platform: platform.clone(),
                    nv_usage: Arc::new(parse_nv_verbose(&log)),
                    build_log: log,
                });
            }
        }
        if !failures.is_empty() {
            return Err(Error::Build { file: source.name.clone(), log: failures.join("\n") });
        }
        Ok(Program { source_name: source.name.clone(), devices, kernel_names })
    }

    /// The devices this program was built for, in run order.
    pub fn devices(&self) -> Vec<DeviceInfo> {
        self.devices.iter().map(|d| d.info.clone()).collect()
    }

    /// The kernels defined in the program.
    pub fn kernel_names(&self) -> &[String] {
        &self.kernel_names
    }

    /// Each device's build log, in run order.
    pub fn build_logs(&self) -> Vec<(DeviceInfo, String)> {
        self.devices.iter().map(|d| (d.info.clone(), d.build_log.clone())).collect()
    }

    /// Start describing a launch of `kernel`.
    pub fn launch(&self, kernel: &str) -> Launch<'_> {
        Launch::new(self, kernel)
    }
}
