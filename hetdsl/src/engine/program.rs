//! A program built for every selected device: one context and one `cl_program` per device (or
//! per platform, see `CONTEXTS_VARIABLE`).

use std::collections::HashMap;
use std::sync::Arc;

use opencl3::context::Context;
use opencl3::program::Program as ClProgram;

use super::discover::Found;
use super::signature::{DriverArg, DriverInfo, Signatures};
use super::worker;
use super::{KernelSource, Launch};
use crate::builtins;
use crate::device::DeviceInfo;
use crate::error::{ClContext, Error, Result};
use crate::occupancy::{parse_nv_verbose, NvKernelUsage};

/// A context and the program built in it, shared by the devices of that context.
pub(crate) struct ContextProgram {
    pub(crate) context: Context,
    pub(crate) program: ClProgram,
}

/// A device of a program: its description, handle and the context and program it shares.
#[derive(Clone)]
pub(crate) struct ProgramDevice {
    /// Queues, kernels and buffers a clean one-shot run left for the next one on this device
    /// (first, so that they are released before the context and program they belong to).
    pub(crate) park: super::worker::Park,
    pub(crate) info: DeviceInfo,
    pub(crate) device: opencl3::device::Device,
    pub(crate) shared: Arc<ContextProgram>,
    /// The device's build log (warnings, `-cl-nv-verbose` resource lines).
    pub(crate) build_log: String,
    /// Registers and shared memory per kernel, parsed from an NVIDIA build log.
    pub(crate) nv_usage: Arc<HashMap<String, NvKernelUsage>>,
    /// The local memory per work-group each kernel's last set-up found: the profile of a device
    /// that must post one before it can make its kernel (see `worker::setup`).
    local_bytes: Arc<std::sync::Mutex<HashMap<String, u64>>>,
}

impl ProgramDevice {
    pub(crate) fn remember_local_bytes(&self, kernel: &str, bytes: u64) {
        let mut seen = self.local_bytes.lock().unwrap_or_else(|e| e.into_inner());
        seen.insert(kernel.to_string(), bytes);
    }

    pub(crate) fn local_bytes_seen(&self, kernel: &str) -> Option<u64> {
        self.local_bytes.lock().unwrap_or_else(|e| e.into_inner()).get(kernel).copied()
    }
}

/// A kernel source compiled for every selected device.
pub struct Program {
    pub(crate) source_name: String,
    pub(crate) devices: Vec<ProgramDevice>,
    pub(crate) kernel_names: Vec<String>,
    /// Every kernel's parameters, to check a launch's arguments against.
    pub(crate) signatures: Arc<Signatures>,
    /// Kernels that take the built-ins' hidden NDRange as their last argument.
    pub(crate) ndrange_param: Vec<String>,
    /// The text built (after the built-ins' rewrite) and the build options: sessions build
    /// their windowed variant from them.
    pub(crate) built_text: String,
    pub(crate) built_options: String,
    /// The last clean one-shot run of each launch, for the next run of the same launch.
    pub(crate) last_runs: super::repeat::LastRuns,
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

/// Builds `program` for `members`, each GPU's queues and pinned staging made meanwhile on a
/// thread of its own, to be parked for its first run (`worker::prestage`).
fn build_staging(
    program: &mut ClProgram,
    context: &Context,
    members: &[&Found],
    opts: &str,
) -> (std::result::Result<(), opencl3::error_codes::ClError>, Vec<Option<worker::Parked>>) {
    let ids: Vec<_> = members.iter().map(|f| f.device.id()).collect();
    let wanted: Vec<bool> = members.iter().map(|f| worker::stage_wanted(&f.info)).collect();
    let stage = |i: usize| worker::stage(context, members[i].device);
    worker::beside_build(&wanted, stage, || program.build(&ids, opts))
}

/// `HETDSL_CONTEXTS=device|platform`: one OpenCL context per device (the default) or one per
/// platform. NVIDIA's driver runs the enqueues of one context's GPUs one after the other: with
/// two H100s in one, a queued Black-Scholes step's kernel was enqueued 19-30 us after its
/// device thread woke on one GPU and 43-63 us on the other; with a context each, 21-31 us on
/// both.
const CONTEXTS_VARIABLE: &str = "HETDSL_CONTEXTS";
const CONTEXTS_VALUES: [&str; 2] = ["device", "platform"];

/// The message for an environment variable set to anything but a whole number in `1..=most`,
/// if it is (the measurement knobs `HETDSL_COPY_THREADS`, `HETDSL_STAGING_SLOT_MIB`).
fn unreadable_count(name: &str, most: u64) -> Option<String> {
    let value = std::env::var_os(name)?;
    let value = value.to_string_lossy();
    let fine = value.parse::<u64>().is_ok_and(|n| (1..=most).contains(&n));
    (!fine).then(|| {
        format!("{name}=`{value}` means nothing: expected a whole number from 1 to {most}")
    })
}

fn contexts_per_device() -> bool {
    std::env::var(CONTEXTS_VARIABLE).map_or(true, |v| v != "platform")
}

/// The devices that share a context, in the order found (`platform` of each): those of one
/// platform, or each alone.
fn context_groups<T>(
    found: &[T],
    platform: impl Fn(&T) -> usize,
    per_device: bool,
) -> Vec<Vec<&T>> {
    let mut groups: Vec<Vec<&T>> = Vec::new();
    for f in found {
        match groups.iter_mut().find(|g| !per_device && platform(g[0]) == platform(f)) {
            Some(group) => group.push(f),
            None => groups.push(vec![f]),
        }
    }
    groups
}

impl Program {
    pub(crate) fn build(found: &[Found], source: &KernelSource, options: &str) -> Result<Program> {
        // The work-item built-ins answer for the caller's whole NDRange (see `builtins`).
        let rewritten = builtins::rewrite(&source.text, options).map_err(|e| {
            let (file, line) =
                hetdsl_decl::flatten::origin(&source.text, e.line.saturating_sub(1), &source.name);
            Error::Source { path: source.name.clone(), reason: format!("{file}:{line}: {e}") }
        })?;
        if let Some(why) = super::unreadable_env(worker::STAGE_VARIABLE, &worker::STAGE_VALUES) {
            return Err(Error::BadConfig(why));
        }
        if let Some(why) = super::unreadable_env(CONTEXTS_VARIABLE, &CONTEXTS_VALUES) {
            return Err(Error::BadConfig(why));
        }
        // Read once, where a copy or a ring needs them: a value that means nothing must not
        // silently become the default.
        let counts = [
            (super::copy::THREADS_VARIABLE, super::copy::MOST_THREADS_ASKED),
            (worker::SLOT_VARIABLE, worker::MAX_SLOT_MIB),
        ];
        if let Some(why) = counts.iter().find_map(|&(name, most)| unreadable_count(name, most)) {
            return Err(Error::BadConfig(why));
        }
        let _one_at_a_time = super::opencl_lock();
        let mut driver: HashMap<String, DriverInfo> = HashMap::new();
        let mut devices = Vec::new();
        let mut failures = Vec::new();
        let mut kernel_names = Vec::new();
        for members in context_groups(found, |f| f.platform, contexts_per_device()) {
            let ids: Vec<_> = members.iter().map(|f| f.device.id()).collect();
            let context = Context::from_devices(&ids, &[], None, std::ptr::null_mut())
                .call("clCreateContext")?;
            let mut program = ClProgram::create_from_source(&context, &rewritten.text)
                .call("clCreateProgramWithSource")?;
            // Argument info, to check each launch's arguments against the kernel's.
            let mut opts = String::from("-cl-std=CL1.2 -cl-kernel-arg-info ");
            opts += options;
            if members.iter().any(|f| f.info.nvidia.is_some()) {
                // Registers and shared memory per kernel, for the occupancy bound.
                opts += " -cl-nv-verbose";
            }
            let (built, mut staged) = build_staging(&mut program, &context, &members, &opts);
            let logs: Vec<String> =
                ids.iter().map(|id| program.get_build_log(*id).unwrap_or_default()).collect();
            if built.is_err() {
                for (f, log) in members.iter().zip(&logs) {
                    let log = hetdsl_decl::flatten::name_locations(
                        log.trim(),
                        &rewritten.text,
                        &source.name,
                    );
                    failures.push(format!("--- {} ({}):\n{log}", f.info.name, f.info.platform));
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
                for name in &kernel_names {
                    let hidden = rewritten.ndrange_param.contains(name);
                    driver.insert(name.clone(), driver_args(&program, name, hidden));
                }
            }
            let shared = Arc::new(ContextProgram { context, program });
            for ((f, log), staged) in members.into_iter().zip(logs).zip(staged.drain(..)) {
                let park = worker::Park::default();
                if let Some(parked) = staged {
                    park.put(parked);
                }
                devices.push(ProgramDevice {
                    park,
                    info: f.info.clone(),
                    device: f.device,
                    shared: shared.clone(),
                    nv_usage: Arc::new(parse_nv_verbose(&log)),
                    local_bytes: Default::default(),
                    build_log: log,
                });
            }
        }
        if !failures.is_empty() {
            return Err(Error::Build { file: source.name.clone(), log: failures.join("\n") });
        }
        let signatures =
            Signatures::read(&source.name, &source.text, options, &kernel_names, &driver);
        Ok(Program {
            source_name: source.name.clone(),
            devices,
            kernel_names,
            signatures: Arc::new(signatures),
            ndrange_param: rewritten.ndrange_param,
            built_text: rewritten.text,
            built_options: format!("-cl-std=CL1.2 {options}"),
            last_runs: Default::default(),
        })
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

    /// Whether each device keeps its queues, kernels, device buffers and pinned staging from
    /// one `run` to the next (on by default). A run reuses every kept buffer whose size and
    /// access match one of its arguments, so repeated calls of the same sizes allocate and pin
    /// nothing; between calls the memory of the last run stays held. `false` frees what is kept
    /// now and after every run.
    pub fn keep_buffers(&self, keep: bool) {
        let _one_at_a_time = super::opencl_lock();
        for d in &self.devices {
            d.park.keep(keep);
        }
    }

    /// Forget what earlier runs measured: the next run of each launch given no balancer starts
    /// with the default balancer, as a first run does (say, once the inputs' contents changed
    /// enough to move the cost along the range).
    pub fn forget_runs(&self) {
        self.last_runs.clear();
    }
}

/// The driver's description of `kernel`'s arguments (the hidden NDRange one dropped), or
/// `None` when it gives none.
fn driver_args(program: &ClProgram, kernel: &str, hidden: bool) -> DriverInfo {
    use hetdsl_decl::clsig::AddrSpace;
    use opencl3::kernel::{
        Kernel, CL_KERNEL_ARG_ADDRESS_CONSTANT, CL_KERNEL_ARG_ADDRESS_GLOBAL,
        CL_KERNEL_ARG_ADDRESS_LOCAL, CL_KERNEL_ARG_TYPE_CONST,
    };
    let k = Kernel::create(program, kernel).ok()?;
    let mut n = k.num_args().ok()?;
    if hidden {
        n = n.checked_sub(1)?;
        // The hidden parameter is the last one; a driver that says otherwise is not believed.
        if k.get_arg_name(n).ok()? != builtins::NDRANGE_PARAM {
            return None;
        }
    }
    (0..n)
        .map(|i| {
            let space = match k.get_arg_address_qualifier(i).ok()? {
                CL_KERNEL_ARG_ADDRESS_GLOBAL => AddrSpace::Global,
                CL_KERNEL_ARG_ADDRESS_LOCAL => AddrSpace::Local,
                CL_KERNEL_ARG_ADDRESS_CONSTANT => AddrSpace::Constant,
                _ => AddrSpace::Private,
            };
            let qualifier = k.get_arg_type_qualifier(i).ok()?;
            Some(DriverArg {
                name: k.get_arg_name(i).ok()?,
                space,
                type_name: k.get_arg_type_name(i).ok()?,
                is_const: qualifier & u64::from(CL_KERNEL_ARG_TYPE_CONST) != 0,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::context_groups;

    #[test]
    fn devices_share_a_context_only_by_platform_and_only_when_asked() {
        // Devices of platforms 0, 1, 0, 1, 2 (found out of platform order, as an ICD may list).
        let platforms = [0usize, 1, 0, 1, 2];
        let grouped = |per_device| -> Vec<Vec<usize>> {
            context_groups(&platforms, |p| *p, per_device)
                .into_iter()
                .map(|g| g.into_iter().copied().collect())
                .collect()
        };
        assert_eq!(grouped(false), [vec![0, 0], vec![1, 1], vec![2]]);
        assert_eq!(grouped(true), [vec![0], vec![1], vec![0], vec![1], vec![2]]);
    }
}
