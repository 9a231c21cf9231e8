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

use opencl3::command_queue::CommandQueue;
use opencl3::event::Event;
use opencl3::kernel::Kernel;
use opencl3::memory::{Buffer, ClMem, CL_MEM_READ_ONLY, CL_MEM_READ_WRITE};
use opencl3::types::{CL_BLOCKING, CL_NON_BLOCKING};

use super::buffers::{DeviceBuffer, Reduction, Staging};
use super::job::{Device, Job};
use super::package::launch;
use super::parked::Parked;
use super::ring::{pieces, slot_for, Ring, Rings};
use crate::engine::geometry::Geometry;
use crate::engine::limits;
use crate::engine::plan::{ArgPlan, HostPtr};
use crate::engine::program::ProgramDevice;
use crate::engine::Fault;
use crate::error::{ClContext, Error, Result};
use crate::merge::{Merge, ReduceOps};
use crate::occupancy::{self, KernelResources};
use crate::pattern::{Direction, Pattern};
use crate::work::{DeviceProfile, Package};

/// Queues, kernel, its arguments, the limits, buffers and, if asked, the warm-up: a device
/// ready to run packages.
/// What the last clean run on this device parked is reused (see `parked`).
pub(super) fn set_up(job: &Job) -> Result<Device> {
    let began = std::time::Instant::now();
    let mut parked = job.device.park.take();
    let (compute, transfer, upload) = match parked.as_mut().and_then(|p| p.queues.take()) {
        Some(queues) => queues,
        None => new_queues(job)?,
    };
    let mut filled = true;
    let queues_at = began.elapsed();
    let mut buffers_at = queues_at;
    let made = (|| {
        let (kernel, warmed_for) = kernel_for(job, parked.as_mut())?;
        let local_bytes = set_values(job, &kernel)?;
        let local_total = check_limits(job, &kernel, local_bytes)?;
        job.device.remember_local_bytes(&job.kernel, local_total);
        // From here on the set-up may take long (allocation, the warm-up): the run may start
        // without this device, which then joins it late with this profile.
        job.shared.profile_known(job.me, profile(job, local_total));
        if let Some(ms) = job.faults.iter().find_map(|f| match *f {
            Fault::SlowSetup { millis, .. } => Some(millis),
            _ => None,
        }) {
            std::thread::sleep(std::time::Duration::from_millis(ms.into()));
        }
        buffers_at = began.elapsed();
        let (buffers, rings) = make_memory(job, &kernel, &transfer, parked.as_mut(), &mut filled)?;
        Ok((kernel, warmed_for, buffers, rings, local_total))
    })();
    // What was parked and not reused is freed now, with the queue that mapped its staging.
    let kernels = match parked.as_mut() {
        Some(p) => {
            p.free_buffers(&transfer);
            std::mem::take(&mut p.kernels)
        }
        None => Vec::new(),
    };
    let (kernel, warmed_for, buffers, rings, local_total) = made?;
    let profile = profile(job, local_total);
    let mut device = Device {
        compute,
        transfer,
        upload,
        kernel,
        warmed_for,
        kernels,
        buffers,
        rings,
        profile,
        per_unit: None,
    };
    // A kept kernel already warmed up with this work-group size is compiled for it: warming it
    // again would only cost time (on a CPU, a work-group of a heavy kernel can take a second).
    // Never on unfilled inputs: a kernel may index with what it reads.
    let warm_at = began.elapsed();
    // Only where the kernel is compiled at its first launch. A GPU's driver compiled it at
    // the build: on an H200 Binomial's two warm-up groups took 0.4 ms in all,
    // NBody's 348 ms at paper size (one work-group of a heavy kernel alone on a GPU is slow),
    // the largest part of its first call's time outside the ROI.
    let jit = job.device.info.compiles_at_first_launch();
    if job.warmup && jit && filled && device.warmed_for != job.geo.local {
        warm_up(job, &mut device)?;
        device.warmed_for = job.geo.local.clone();
    }
    // Where a call's time outside its ROI goes, phase by phase (milliseconds from the start
    // of the set-up): a first call's queues, kernel, buffers and warm-up.
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    let _ = std::panic::catch_unwind(|| {
        tracing::debug!(
            device = job.shared.labels[job.me],
            queues_ms = ms(queues_at),
            kernel_ms = ms(buffers_at),
            buffers_ms = ms(warm_at),
            warmed_ms = ms(began.elapsed()),
            "device set-up"
        )
    });
    Ok(device)
}

/// A device's own limit exceeded (memory, work-group size): the user's error, naming it.
fn limit(job: &Job, reason: String) -> Error {
    Error::DeviceLimit {
        device: job.shared.labels[job.me],
        name: job.device.info.name.clone(),
        reason,
    }
}

/// Three profiling queues: compute, transfer for read-backs, upload for packages' inputs.
fn new_queues(job: &Job) -> Result<(CommandQueue, CommandQueue, CommandQueue)> {
    super::prestage::new_queues(&job.device.shared.context, job.device.device)
}

/// The kernel (the parked one of that name, else a new one), whose argument count must match
/// the launch's, and the work-group size it was warmed up with.
fn kernel_for(job: &Job, parked: Option<&mut Parked>) -> Result<(Kernel, Vec<usize>)> {
    let (kernel, warmed_for) = match parked.and_then(|p| p.take_kernel(&job.kernel)) {
        Some(k) => (k.kernel, k.warmed_for),
        None => (
            Kernel::create(&job.device.shared.program, &job.kernel).call("clCreateKernel")?,
            Vec::new(),
        ),
    };
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
    Ok((kernel, warmed_for))
}

/// Set the scalar and `__local` arguments (buffers are set with their buffers). Returns the
/// `__local` bytes asked for.
fn set_values(job: &Job, kernel: &Kernel) -> Result<u64> {
    let mut local_bytes = 0u64;
    for arg in &job.args {
        match arg {
            ArgPlan::Scalar { index, bytes } => set_scalar(kernel, *index, bytes)?,
            ArgPlan::Local { index, bytes } => {
                // Saturated: a wrapped sum would pass the device's limit and crash the driver.
                local_bytes = local_bytes.saturating_add(*bytes as u64);
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
        required_local: kernel.get_compile_work_group_size(id).unwrap_or_default(),
        local_bytes: local_total,
        buffers: crate::engine::plan::buffer_sizes(&job.args),
    };
    limits::check(info, &needs).map_err(|r| limit(job, r))?;
    Ok(local_total)
}

/// The run's staging rings and device buffers, reusing what `parked` holds; the debug event
/// "device buffers" says how many were reused, allocated and freed.
fn make_memory(
    job: &Job,
    kernel: &Kernel,
    transfer: &CommandQueue,
    mut parked: Option<&mut Parked>,
    filled: &mut bool,
) -> Result<(Vec<DeviceBuffer>, Rings)> {
    let kept = parked.as_mut().map(|p| std::mem::take(&mut p.rings)).unwrap_or_default();
    let (input, output) = ring_slots(&job.args);
    let mut rings = Rings::fit(kept, input, output, transfer, &job.device.shared.context);
    let parked_before = parked.as_ref().map_or(0, |p| p.buffers.len());
    let buffers =
        match make_buffers(job, kernel, transfer, parked.as_deref_mut(), &mut rings, filled) {
            Ok(b) => b,
            Err(e) => {
                rings.unmap(transfer);
                return Err(e);
            }
        };
    let reused = parked_before - parked.as_ref().map_or(0, |p| p.buffers.len());
    let (allocated, freed) = (buffers.len() - reused, parked_before - reused);
    // A subscriber is foreign code: its panic loses the event, not the device.
    let _ = std::panic::catch_unwind(|| {
        tracing::debug!(
            device = job.shared.labels[job.me],
            reused,
            allocated,
            freed,
            rings_reused = rings.reused,
            "device buffers"
        )
    });
    Ok((buffers, rings))
}

/// The slot sizes of a run's two rings ([`Ring`]): inputs for its sliced inputs and large
/// whole inputs, outputs for its sliced outputs; `None` where nothing goes that way.
fn ring_slots(args: &[ArgPlan]) -> (Option<usize>, Option<usize>) {
    let (mut input, mut output) = (None, None);
    let need = |at: &mut Option<usize>, len: usize| *at = Some(at.unwrap_or(0).max(len));
    for arg in args {
        let ArgPlan::Buffer { host, pattern, dir, .. } = arg else { continue };
        let whole = *pattern == Pattern::Whole;
        if dir.reads() && (!whole || host.len >= FILL_STAGED_FROM) {
            need(&mut input, host.len);
        }
        if dir.writes() {
            need(&mut output, host.len);
        }
    }
    (input.map(slot_for), output.map(slot_for))
}

/// A device buffer per buffer argument, set as the kernel's argument; a reduced output with its
/// staging. A parked buffer of the same size and access is reused (filled as a new one would
/// be). `filled` turns false if a whole input could not be written: the run is over.
fn make_buffers(
    job: &Job,
    kernel: &Kernel,
    transfer: &CommandQueue,
    mut parked: Option<&mut Parked>,
    rings: &mut Rings,
    filled: &mut bool,
) -> Result<Vec<DeviceBuffer>> {
    let context = &job.device.shared.context;
    let mut buffers = Vec::new();
    for arg in &job.args {
        let (index, host, elem, pattern, dir, reduce) = match arg {
            ArgPlan::Reduce { index, host, elem, merge, ops } => {
                let start = reduction_start(job, *host, *merge, ops, *elem);
                debug_assert_eq!(start.len(), host.len);
                let reduce = Reduction { merge: *merge, ops: *ops, start };
                (*index, *host, *elem, Pattern::Whole, Direction::InOut, Some(reduce))
            }
            ArgPlan::Buffer { index, host, elem, pattern, dir } => {
                (*index, *host, *elem, *pattern, *dir, None)
            }
            _ => continue,
        };
        // A whole input is filled from the caller's memory at set-up: a large one through the
        // input ring (see `fill_through`), a small one directly.
        let whole_input = pattern == Pattern::Whole && reduce.is_none();
        let read_only = dir == Direction::In;
        let reused = parked.as_deref_mut().and_then(|p| p.take_buffer(host.len, read_only));
        let cannot = |e: String| limit(job, format!("argument {index}: {e}"));
        let (buffer, staging) = match reused {
            Some(b) => (b.buffer, b.staging),
            None => {
                let flags = if read_only { CL_MEM_READ_ONLY } else { CL_MEM_READ_WRITE };
                // SAFETY: no host pointer is given; `context` outlives the buffer.
                let b = unsafe { Buffer::<u8>::create(context, flags, host.len, ptr::null_mut()) }
                    .map_err(|e| cannot(format!("cannot allocate {} bytes: {e}", host.len)))?;
                (b, None)
            }
        };
        // Only a reduced output has staging of its own, its whole length: each package's
        // contribution is read back whole and folded in.
        let wanted = reduce.is_some().then_some(host.len);
        let staging = match (staging, wanted) {
            (Some(s), Some(n)) if s.len() == n => Some(s),
            (Some(mut s), _) => {
                s.unmap(transfer);
                wanted.map(|n| Staging::new(transfer, context, n))
            }
            (None, n) => n.map(|n| Staging::new(transfer, context, n)),
        };
        let mut buffer = buffer;
        if let (Some(byte), None, false) = (job.poison, &reduce, whole_input) {
            poison(transfer, &mut buffer, byte, host.len)
                .map_err(|e| cannot(format!("cannot fill with {byte:#04x}: {e}")))?;
        }
        if let Some(red) = &reduce {
            write_blocking(transfer, &buffer, red.start.as_ptr(), host.len)
                .map_err(|e| cannot(format!("cannot fill with the reduction's start: {e}")))?;
        } else if whole_input {
            let mut written = None;
            job.shared.with_caller_memory(|| {
                written = Some(match rings.input.as_mut() {
                    Some(ring) if host.len >= FILL_STAGED_FROM => {
                        fill_through(transfer, &buffer, ring, host)
                    }
                    _ => write_blocking(transfer, &buffer, host.ptr, host.len),
                });
            });
            // None: the run ended before this late device got here; the buffer stays unfilled
            // (a next run writes every whole input again) and the warm-up is skipped.
            match written {
                Some(w) => {
                    w.map_err(|e| cannot(format!("cannot write its {} bytes: {e}", host.len)))?
                }
                None => *filled = false,
            }
        }
        set_buffer_arg(kernel, index, &buffer)?;
        buffers.push(DeviceBuffer {
            arg: index,
            host,
            elem,
            pattern,
            dir,
            buffer,
            staging,
            reduce,
        });
    }
    Ok(buffers)
}

/// A whole input of at least this many bytes is filled through the input ring ([`fill_through`]).
const FILL_STAGED_FROM: usize = 8 << 20;

/// Fill `buffer` with the caller's `host` bytes through `ring`, slot by slot, waiting for the
/// last write to end. A blocking write from pageable memory goes at the driver's own one-thread
/// copy (the call waited about 40 ms for stencil3d's 256 MiB volume on an H100, outside a 13 ms
/// ROI); here each slot is copied by several threads while the one before it moves.
fn fill_through(
    queue: &CommandQueue,
    buffer: &Buffer<u8>,
    ring: &mut Ring,
    host: HostPtr,
) -> std::result::Result<(), opencl3::error_codes::ClError> {
    for piece in pieces(0..host.len, ring.slot_len()) {
        let (at, len) = (piece.start, piece.len());
        let k = ring.take()?;
        let slot = &mut ring.slot(k)[..len];
        // SAFETY: `at + len` lies within the caller's slice (checked by the plan), read under
        // the gate by the caller of this function.
        let src = unsafe { std::slice::from_raw_parts(host.ptr.add(at), len) };
        crate::engine::copy::copy(slot, src);
        // SAFETY: `slot` is owned by the ring and not written again before this write's event
        // completes (`Ring::take` waits for it); `at + len` lies within `buffer`.
        let ev = unsafe {
            opencl3::command_queue::enqueue_write_buffer(
                queue.get(),
                buffer.get(),
                CL_NON_BLOCKING,
                at,
                len,
                slot.as_ptr().cast(),
                0,
                ptr::null(),
            )
        }?;
        queue.flush()?;
        ring.hold(k, &Event::new(ev))?;
    }
    ring.settle()
}

/// Set the first `len` bytes of `buffer` to `byte`, waiting for the fill to end.
fn poison(
    queue: &CommandQueue,
    buffer: &mut Buffer<u8>,
    byte: u8,
    len: usize,
) -> std::result::Result<(), opencl3::error_codes::ClError> {
    if len == 0 {
        return Ok(());
    }
    // SAFETY: `buffer` holds at least `len` bytes; the fill is waited for before it returns.
    unsafe { queue.enqueue_fill_buffer(buffer, &[byte], 0, len, &[]) }?.wait()
}

/// Write `len` bytes at `src` into `buffer`, waiting for the copy to end.
fn write_blocking(
    queue: &CommandQueue,
    buffer: &Buffer<u8>,
    src: *const u8,
    len: usize,
) -> std::result::Result<(), opencl3::error_codes::ClError> {
    if len == 0 {
        return Ok(());
    }
    // SAFETY: the caller guarantees `src` is readable for `len` bytes across the call, which is
    // blocking; `buffer` holds at least `len` bytes.
    unsafe {
        opencl3::command_queue::enqueue_write_buffer(
            queue.get(),
            buffer.get(),
            CL_BLOCKING,
            0,
            len,
            src.cast(),
            0,
            ptr::null(),
        )
    }
    .map(|ev| drop(Event::new(ev)))
    .map_err(Into::into)
}

/// Run one work-group at each end of the range so the driver compiles the kernel before the
/// run's clock starts, then undo the warm-up's contributions to reduced outputs.
fn warm_up(job: &Job, device: &mut Device) -> Result<()> {
    // One work-group at offset 0 and one at the last unit: PoCL compiles a zero and a
    // non-zero global offset separately, and both kinds of package will come.
    let last = job.units - 1;
    for offset in if last > 0 { vec![0, last] } else { vec![0] } {
        let p = Package { offset, len: 1 };
        let launched = launch(job, device, p, None)
            .map_err(|e| Error::Cl { call: "warm-up launch", code: e })?;
        launched.kernel.wait().call("warm-up launch")?;
    }
    // The warm-up's contributions to reduced outputs are not part of the run.
    for b in device.buffers.iter().filter(|b| b.reduce.is_some()) {
        let Some(red) = &b.reduce else { continue };
        // SAFETY: a blocking write of `start`, which holds the buffer's whole length and
        // lives across the call.
        unsafe {
            opencl3::command_queue::enqueue_write_buffer(
                device.compute.get(),
                b.buffer.get(),
                CL_BLOCKING,
                0,
                red.start.len(),
                red.start.as_ptr().cast(),
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

/// What a device's copy of a reduced output starts from, and is reset to after each package.
/// A sum's identity; a merge that folds a value with itself into itself (max, min, or, and)
/// starts from the caller's buffer as it is, so that a kernel reading it (a relaxation reading
/// the distances it lowers) sees the caller's values, and folding back adds nothing unwritten.
fn reduction_start(
    job: &Job,
    host: HostPtr,
    merge: Merge,
    ops: &ReduceOps,
    elem: usize,
) -> Vec<u8> {
    let mut start = (ops.identity)(merge, host.len / elem);
    if merge != Merge::Sum {
        job.shared.with_caller_memory(|| {
            // Another device may be folding a package into it.
            let _fold =
                job.shared.fold.as_ref().map(|m| m.lock().unwrap_or_else(|e| e.into_inner()));
            // SAFETY: the caller's `host.len` bytes, under the run's gate and its fold lock.
            start.copy_from_slice(unsafe { std::slice::from_raw_parts(host.ptr, host.len) });
        });
    }
    start
}

/// What the balancer learns of this device before the run: its nominal speed, and the fewest
/// balancing units that fill it (the occupancy lower bound, from the kernel's registers where
/// NVIDIA's build log gives them and its real local memory use).
fn profile(job: &Job, local_bytes: u64) -> DeviceProfile {
    device_profile(&job.device, &job.geo, &job.kernel, local_bytes)
}

/// The profile a device waiting for its thread of an earlier run posts before it has a kernel:
/// the local memory its last set-up of this kernel found (none if it never set it up).
pub(super) fn provisional_profile(job: &Job) -> DeviceProfile {
    let local_bytes = job.device.local_bytes_seen(&job.kernel).unwrap_or(0);
    profile(job, local_bytes)
}

/// [`profile`]'s figures for `kernel` on `device` over `geo` (sessions use it too).
pub(in crate::engine) fn device_profile(
    device: &ProgramDevice,
    geo: &Geometry,
    kernel: &str,
    local_bytes: u64,
) -> DeviceProfile {
    DeviceProfile {
        kind: device.info.kind,
        nominal_gflops: occupancy::nominal_gflops(&device.info),
        min_groups: fill_units(device, geo, kernel, local_bytes),
    }
}

/// The balancing units of `geo` that fill `device` running `kernel` (its occupancy bound), at
/// least one.
pub(in crate::engine) fn fill_units(
    device: &ProgramDevice,
    geo: &Geometry,
    kernel: &str,
    local_bytes: u64,
) -> u64 {
    let mut resources =
        KernelResources::new(geo.items_per_group as u32).with_local_mem(local_bytes);
    if let Some(usage) = device.nv_usage.get(kernel) {
        resources = resources.with_nv_usage(usage);
    }
    let fill = occupancy::occupancy(&device.info, &resources);
    fill.min_groups.div_ceil(geo.groups_per_unit()).max(1)
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
