//! Setting a device up for a run, on its own host thread: its queues and kernel, the kernel's
//! arguments, a check of the launch against the device's limits, its buffers and staging, and
//! the warm-up. A mistake of the user's found here (an argument the kernel rejects, a limit
//! exceeded) is an error naming it; a failure of the device's own drops it from the run.
//!
//! The caller's memory is read once here, for whole inputs copied at buffer creation, and only
//! inside the run's gate ([`Shared::with_caller_memory`]).
//!
//! [`Shared::with_caller_memory`]: crate::engine::shared::Shared::with_caller_memory

use std::ptr;

use opencl3::command_queue::{CommandQueue, CL_QUEUE_PROFILING_ENABLE};
use opencl3::event::Event;
use opencl3::kernel::Kernel;
use opencl3::memory::{Buffer, ClMem, CL_MEM_COPY_HOST_PTR, CL_MEM_READ_ONLY, CL_MEM_READ_WRITE};
use opencl3::types::CL_BLOCKING;

use super::buffers::{DeviceBuffer, Reduction, Staging};
use super::job::{Device, Job};
use super::package::launch;
use crate::engine::geometry::Geometry;
use crate::engine::limits;
use crate::engine::plan::ArgPlan;
use crate::engine::program::ProgramDevice;
use crate::error::{ClContext, Error, Result};
use crate::occupancy::{self, KernelResources};
use crate::pattern::{Direction, Pattern};
use crate::work::{DeviceProfile, Package};

/// Queues, kernel, its arguments, the limits, buffers and, if asked, the warm-up: a device
/// ready to run packages.
pub(super) fn set_up(job: &Job) -> Result<Device> {
    let (compute, transfer, kernel) = queues_and_kernel(job)?;
    let local_bytes = set_values(job, &kernel)?;
    let local_total = check_limits(job, &kernel, local_bytes)?;
    let buffers = make_buffers(job, &kernel, &transfer)?;
    let profile = profile(job, local_total);
    let mut device = Device { compute, transfer, kernel, buffers, profile, per_unit: None };
    if job.warmup {
        warm_up(job, &mut device)?;
    }
    Ok(device)
}

/// A device's own limit exceeded (memory, work-group size): the user's error, naming it.
fn limit(job: &Job, reason: String) -> Error {
    Error::DeviceLimit { device: job.me, name: job.device.info.name.clone(), reason }
}

/// Two profiling queues (compute, and transfer for read-backs) and the kernel, whose argument
/// count must match the launch's.
fn queues_and_kernel(job: &Job) -> Result<(CommandQueue, CommandQueue, Kernel)> {
    let dev = &job.device;
    let context = &dev.platform.context;
    let id = dev.device.id();

    // SAFETY: `id` is a device of `context`; the properties are a valid bit set.
    let queue = || unsafe {
        CommandQueue::create_with_properties(context, id, CL_QUEUE_PROFILING_ENABLE, 0)
    };
    let compute = queue().call("clCreateCommandQueueWithProperties")?;
    let transfer = queue().call("clCreateCommandQueueWithProperties")?;
    let kernel = Kernel::create(&dev.platform.program, &job.kernel).call("clCreateKernel")?;

    let num_args = kernel.num_args().call("clGetKernelInfo(NUM_ARGS)")? as usize;
    if num_args != job.args.len() {
        return Err(Error::BadArgument {
            index: job.args.len().min(num_args),
            reason: format!(
                "kernel `{}` takes {num_args} arguments, {} given",
                job.kernel,
                job.args.len()
            ),
        });
    }
    Ok((compute, transfer, kernel))
}

/// Set the scalar and `__local` arguments (buffers are set with their buffers). Returns the
/// `__local` bytes asked for.
fn set_values(job: &Job, kernel: &Kernel) -> Result<u64> {
    let mut local_bytes = 0u64;
    for arg in &job.args {
        match arg {
            ArgPlan::Scalar { index, bytes } => set_scalar(kernel, *index, bytes)?,
            ArgPlan::Local { index, bytes } => {
                local_bytes += *bytes as u64;
                set_local(kernel, *index, *bytes)?
            }
            ArgPlan::Buffer { .. } | ArgPlan::Reduce { .. } => {}
        }
    }
    Ok(local_bytes)
}

/// Set scalar argument `index` to `bytes` (one-shot launches and sessions alike).
pub(crate) fn set_scalar(kernel: &Kernel, index: usize, bytes: &[u8]) -> Result<()> {
    // SAFETY: `bytes` lives across the call, which copies `bytes.len()` bytes from it;
    // OpenCL checks the size against the argument's and the error is returned.
    unsafe {
        opencl3::kernel::set_kernel_arg(
            kernel.get(),
            index as u32,
            bytes.len(),
            bytes.as_ptr().cast(),
        )
    }
    .map_err(|e| Error::BadArgument {
        index,
        reason: format!("the kernel rejected a {}-byte scalar here: {e}", bytes.len()),
    })
}

/// Set `__local` argument `index` to `bytes` bytes per work-group.
pub(crate) fn set_local(kernel: &Kernel, index: usize, bytes: usize) -> Result<()> {
    // SAFETY: a size only, no pointer; OpenCL checks it against the argument.
    unsafe { kernel.set_arg_local_buffer(index as u32, bytes) }.map_err(|e| Error::BadArgument {
        index,
        reason: format!("the kernel rejected a __local buffer of {bytes} bytes here: {e}"),
    })
}

/// Check the launch against the device: work-group size, local memory, buffer sizes. Returns
/// the kernel's local memory use.
fn check_limits(job: &Job, kernel: &Kernel, local_bytes: u64) -> Result<u64> {
    let info = &job.device.info;
    let id = job.device.device.id();
    // Read after the __local arguments are set: some drivers count them only then.
    let local_total = kernel.get_local_mem_size(id).unwrap_or(0).max(local_bytes);
    let needs = limits::Needs {
        total_items: job.geo.total_items(),
        local: &job.geo.local,
        kernel_max_work_group: kernel.get_work_group_size(id).unwrap_or(info.max_work_group_size),
        local_bytes: local_total,
        buffers: job
            .args
            .iter()
            .filter_map(|a| match a {
                ArgPlan::Buffer { index, host, .. } | ArgPlan::Reduce { index, host, .. } => {
                    Some((*index, host.len as u64))
                }
                _ => None,
            })
            .collect(),
    };
    limits::check(info, &needs).map_err(|r| limit(job, r))?;
    Ok(local_total)
}

/// A device buffer per buffer argument, set as the kernel's argument, with its staging.
fn make_buffers(job: &Job, kernel: &Kernel, transfer: &CommandQueue) -> Result<Vec<DeviceBuffer>> {
    let context = &job.device.platform.context;
    let mut buffers = Vec::new();
    for arg in &job.args {
        if let ArgPlan::Reduce { index, host, elem, merge, ops } = arg {
            let identity = (ops.identity)(*merge, host.len / elem);
            debug_assert_eq!(identity.len(), host.len);
            // SAFETY: `identity` holds `host.len` bytes and outlives the call, which copies
            // them (COPY_HOST_PTR) and keeps no pointer to them.
            let buffer = unsafe {
                Buffer::<u8>::create(
                    context,
                    CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                    host.len,
                    identity.as_ptr() as *mut std::ffi::c_void,
                )
            }
            .map_err(|e| {
                limit(job, format!("argument {index}: cannot allocate {} bytes: {e}", host.len))
            })?;
            set_buffer_arg(kernel, *index, &buffer)?;
            buffers.push(DeviceBuffer {
                host: *host,
                elem: *elem,
                pattern: Pattern::Whole,
                dir: Direction::InOut,
                buffer,
                staging: Some(Staging::new(transfer, context, host.len)),
                reduce: Some(Reduction { merge: *merge, ops: *ops, identity }),
            });
            continue;
        }
        let ArgPlan::Buffer { index, host, elem, pattern, dir } = arg else { continue };
        let whole_input = *pattern == Pattern::Whole;
        let buffer = if whole_input {
            // Copied by the driver during creation: the caller's memory is not used after.
            let mut made = None;
            job.shared.with_caller_memory(|| {
                // SAFETY: inside the gate, so the caller's slice of `host.len` bytes is alive;
                // COPY_HOST_PTR copies it during the call and keeps no pointer to it.
                made = Some(unsafe {
                    Buffer::<u8>::create(
                        context,
                        CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                        host.len,
                        host.ptr.cast(),
                    )
                });
            });
            made.ok_or_else(|| Error::BadArgument { index: *index, reason: "run closed".into() })?
        } else {
            let flags = if *dir == Direction::In { CL_MEM_READ_ONLY } else { CL_MEM_READ_WRITE };
            // SAFETY: no host pointer is given; `context` outlives the buffer.
            unsafe { Buffer::<u8>::create(context, flags, host.len, ptr::null_mut()) }
        }
        .map_err(|e| {
            limit(job, format!("argument {index}: cannot allocate {} bytes: {e}", host.len))
        })?;
        set_buffer_arg(kernel, *index, &buffer)?;
        let staging = (!whole_input).then(|| Staging::new(transfer, context, host.len));
        buffers.push(DeviceBuffer {
            host: *host,
            elem: *elem,
            pattern: *pattern,
            dir: *dir,
            buffer,
            staging,
            reduce: None,
        });
    }
    Ok(buffers)
}

/// Run one work-group at each end of the range so the driver compiles the kernel before the
/// run's clock starts, then undo the warm-up's contributions to reduced outputs.
fn warm_up(job: &Job, device: &mut Device) -> Result<()> {
    // One work-group at offset 0 and one at the last unit: PoCL compiles a zero and a
    // non-zero global offset separately, and both kinds of package will come.
    let last = job.units - 1;
    for offset in if last > 0 { vec![0, last] } else { vec![0] } {
        let p = Package { offset, len: 1 };
        let launched =
            launch(job, device, p).map_err(|e| Error::Cl { call: "warm-up launch", code: e })?;
        launched.kernel.wait().call("warm-up launch")?;
    }
    // The warm-up's contributions to reduced outputs are not part of the run.
    for b in device.buffers.iter().filter(|b| b.reduce.is_some()) {
        let Some(red) = &b.reduce else { continue };
        // SAFETY: a blocking write of `identity`, which holds the buffer's whole length and
        // lives across the call.
        unsafe {
            opencl3::command_queue::enqueue_write_buffer(
                device.compute.get(),
                b.buffer.get(),
                CL_BLOCKING,
                0,
                red.identity.len(),
                red.identity.as_ptr().cast(),
                0,
                ptr::null(),
            )
        }
        .map(|ev| drop(Event::new(ev)))
        .map_err(|e| Error::Cl {
            call: "clEnqueueWriteBuffer (reset of a reduced output)",
            code: e.into(),
        })?;
    }
    Ok(())
}

/// What the balancer learns of this device before the run: its nominal speed, and the fewest
/// balancing units that fill it (the occupancy lower bound, from the kernel's registers where
/// NVIDIA's build log gives them and its real local memory use).
fn profile(job: &Job, local_bytes: u64) -> DeviceProfile {
    device_profile(&job.device, &job.geo, &job.kernel, local_bytes)
}

/// [`profile`]'s figures for `kernel` on `device` over `geo` (sessions use it too).
pub(in crate::engine) fn device_profile(
    device: &ProgramDevice,
    geo: &Geometry,
    kernel: &str,
    local_bytes: u64,
) -> DeviceProfile {
    let info = &device.info;
    let mut resources =
        KernelResources::new(geo.items_per_group as u32).with_local_mem(local_bytes);
    if let Some(usage) = device.nv_usage.get(kernel) {
        resources = resources.with_nv_usage(usage);
    }
    let fill = occupancy::occupancy(info, &resources);
    DeviceProfile {
        kind: info.kind,
        nominal_gflops: occupancy::nominal_gflops(info),
        min_groups: fill.min_groups.div_ceil(geo.groups_per_unit()).max(1),
    }
}

/// Binds a device buffer to argument `index`; a driver that refuses it says the argument is not
/// a pointer.
fn set_buffer_arg(kernel: &Kernel, index: usize, buffer: &Buffer<u8>) -> Result<()> {
    // SAFETY: a `cl_mem` handle of a buffer this device keeps alive as long as the kernel.
    unsafe { kernel.set_arg(index as u32, &buffer.get()) }.map_err(|e| Error::BadArgument {
        index,
        reason: format!("the kernel rejected a buffer here ({e}); is this argument a pointer?"),
    })
}
