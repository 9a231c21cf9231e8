//! One host thread per device: it owns the device's queues, its own `Kernel` (opencl3's `Kernel`
//! is not `Sync`), its buffers and their host staging, and runs packages until the coordinator
//! has nothing left for it.
//!
//! Per package: copy the package's slice of each sliced input into host staging, write it to the
//! device, launch the kernel over the package with a global work offset, and read the output
//! slices back into staging on a second queue; the next package is launched before that
//! read-back is waited for, so the device computes while the previous output returns. Outputs
//! reach the caller's memory only through [`Shared::merge`].
//!
//! Staging is pinned host memory where the driver gives it (`CL_MEM_ALLOC_HOST_PTR`, mapped once),
//! which is what makes GPU read-back run at link speed rather than through pageable copies.

use std::ops::Range;
use std::ptr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use opencl3::command_queue::{CommandQueue, CL_QUEUE_PROFILING_ENABLE};
use opencl3::event::Event;
use opencl3::kernel::Kernel;
use opencl3::memory::{
    Buffer, ClMem, CL_MAP_READ, CL_MAP_WRITE, CL_MEM_ALLOC_HOST_PTR, CL_MEM_COPY_HOST_PTR,
    CL_MEM_READ_ONLY, CL_MEM_READ_WRITE,
};
use opencl3::types::{cl_event, CL_BLOCKING, CL_NON_BLOCKING};

use super::geometry::Geometry;
use super::limits;
use super::program::ProgramDevice;
use super::run::{Ask, Release, Shared};
use super::Fault;
use super::WaitMode;
use crate::balance::{DeviceProfile, Package};
use crate::error::{ClContext, ClError, Error, Result};
use crate::merge::{Merge, ReduceOps};
use crate::occupancy::{self, KernelResources};
use crate::pattern::{Direction, Pattern};
use crate::report::Transfer;

/// The caller's memory for one buffer argument. Only dereferenced under the run's gate.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HostPtr {
    pub ptr: *mut u8,
    pub len: usize,
}
// SAFETY: the pointer is only dereferenced by device threads under `Shared::gate`, while the
// `Launch` that borrowed the caller's slices is still inside `run`; packages touch disjoint
// ranges of outputs, and inputs are only read.
unsafe impl Send for HostPtr {}
// SAFETY: as for `Send`: shared use is reads of inputs and writes of disjoint output ranges,
// each under the gate, which shuts on every way out of `run` before the borrow ends.
unsafe impl Sync for HostPtr {}

/// One kernel argument, ready for a device.
#[derive(Debug, Clone)]
pub(crate) enum ArgPlan {
    Buffer {
        index: usize,
        host: HostPtr,
        elem: usize,
        pattern: Pattern,
        dir: Direction,
    },
    Scalar {
        index: usize,
        bytes: Vec<u8>,
    },
    Local {
        index: usize,
        bytes: usize,
    },
    /// An output merged by reduction: whole on every device.
    Reduce {
        index: usize,
        host: HostPtr,
        elem: usize,
        merge: Merge,
        ops: ReduceOps,
    },
}

/// What a device thread is given.
pub(crate) struct Job {
    pub me: usize,
    pub device: ProgramDevice,
    pub kernel: String,
    pub geo: Geometry,
    pub args: Vec<ArgPlan>,
    pub faults: Vec<Fault>,
    pub warmup: bool,
    pub wait: WaitMode,
    /// The run covers balancing units `first_unit..first_unit + units`; packages from the
    /// coordinator count from `first_unit`.
    pub first_unit: u64,
    pub units: u64,
    pub shared: Arc<Shared>,
}

impl Job {
    /// A package in the NDRange's own coordinates.
    fn absolute(&self, p: Package) -> Package {
        Package { offset: p.offset + self.first_unit, len: p.len }
    }
}

/// Host memory the device transfers from and to.
enum Staging {
    /// Pinned: a mapped `CL_MEM_ALLOC_HOST_PTR` buffer.
    Pinned { buffer: Buffer<u8>, ptr: *mut u8, len: usize },
    /// Ordinary heap memory when the driver offers no pinned memory.
    Heap(Vec<u8>),
}

impl Staging {
    fn new(queue: &CommandQueue, context: &opencl3::context::Context, len: usize) -> Staging {
        // SAFETY: a fresh buffer of `len` bytes with no host pointer; `context` outlives it.
        let pinned = unsafe {
            Buffer::<u8>::create(
                context,
                CL_MEM_ALLOC_HOST_PTR | CL_MEM_READ_WRITE,
                len,
                ptr::null_mut(),
            )
        }
        .and_then(|buffer| {
            let mut mapped = ptr::null_mut();
            // SAFETY: a blocking map of the whole buffer just made; `mapped` is a valid
            // out-pointer, and the mapping is released by `unmap` before the buffer.
            unsafe {
                queue.enqueue_map_buffer(
                    &buffer,
                    CL_BLOCKING,
                    CL_MAP_READ | CL_MAP_WRITE,
                    0,
                    len,
                    &mut mapped,
                    &[],
                )
            }
            .map(|_| Staging::Pinned { buffer, ptr: mapped as *mut u8, len })
        });
        pinned.unwrap_or_else(|_| Staging::Heap(vec![0; len]))
    }

    fn bytes(&mut self) -> &mut [u8] {
        match self {
            // SAFETY: the mapping stays valid until `unmap` and covers `len` bytes.
            Staging::Pinned { ptr, len, .. } => unsafe {
                std::slice::from_raw_parts_mut(*ptr, *len)
            },
            Staging::Heap(v) => v,
        }
    }

    fn unmap(&mut self, queue: &CommandQueue) {
        if let Staging::Pinned { buffer, ptr, .. } = self {
            let mapped = *ptr as *mut std::ffi::c_void;
            // SAFETY: `mapped` is the pointer the map of this very buffer returned, unmapped once.
            if unsafe { queue.enqueue_unmap_mem_object(buffer.get(), mapped, &[]) }.is_ok() {
                let _ = queue.finish();
            }
        }
    }
}

/// A buffer argument on one device.
struct DeviceBuffer {
    host: HostPtr,
    elem: usize,
    pattern: Pattern,
    dir: Direction,
    buffer: Buffer<u8>,
    /// Staging for sliced buffers and reduced outputs; whole inputs are copied at creation
    /// and need none.
    staging: Option<Staging>,
    /// For a reduced output: how it merges, and its identity image, which the device's copy is
    /// reset to after each package's contribution is read back.
    reduce: Option<Reduction>,
}

struct Reduction {
    merge: Merge,
    ops: ReduceOps,
    identity: Vec<u8>,
}

impl DeviceBuffer {
    /// Byte range of this buffer that a package touches.
    fn bytes(&self, geo: &Geometry, p: Package) -> Range<usize> {
        let (first, items) = geo.items(p);
        let elems = self.pattern.elements(first, items, (self.host.len / self.elem) as u64);
        elems.start as usize * self.elem..elems.end as usize * self.elem
    }
}

/// A package in flight on this device.
struct InFlight {
    package: Package,
    /// Its place among this device's packages (for injected faults).
    index: usize,
    reads: Vec<Event>,
    read_bytes: u64,
}

/// A launched package: its kernel and the input writes it waits for.
struct Launched {
    kernel: Event,
    writes: Vec<Event>,
    write_bytes: u64,
}

/// Bytes moved by `events` and the device time they took (profiling), if the device says.
fn transfer(events: &[Event], bytes: u64) -> Transfer {
    let seconds: Option<f64> = events.iter().map(device_seconds).sum();
    Transfer { bytes, seconds: if events.is_empty() { Some(0.0) } else { seconds } }
}

struct Device {
    profile: DeviceProfile,
    compute: CommandQueue,
    transfer: CommandQueue,
    kernel: Kernel,
    buffers: Vec<DeviceBuffer>,
    /// Device seconds per balancing unit of its last package: when to expect the next kernel.
    per_unit: Option<f64>,
}

/// The thread's body. A panic in it (a bug) is caught and turned into this device's failure,
/// so the run never waits for a thread that is gone.
pub(crate) fn run(job: Job) {
    let me = job.me;
    let shared = job.shared.clone();
    let device = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(&job))) {
        Ok(device) => device,
        Err(payload) => {
            shared.thread_panicked(me, super::run::panic_message(&*payload));
            None
        }
    };
    // Its device has no command left: release its objects, under the OpenCL lock unless the
    // caller's thread, which holds it, is joining this one.
    match shared.release_turn(me) {
        Release::LeftBehind => {
            let _one_at_a_time = super::opencl_lock();
            drop(device);
            drop(job);
        }
        _ => {
            drop(device);
            drop(job);
        }
    }
}

/// Set up, run packages, then let every queued command complete. Returns the device, whose
/// objects the caller releases.
fn body(job: &Job) -> Option<Device> {
    let me = job.me;
    let shared = &job.shared;
    if job.faults.iter().any(|f| matches!(f, Fault::HangSetup { .. })) {
        // Behave like a driver that never answers, until the run goes on without this device.
        while shared.alive(me) && !shared.run_over() {
            std::thread::sleep(Duration::from_millis(5));
        }
        shared.setup_done(me, Err(Error::Cl { call: "injected set-up hang", code: ClError(-5) }));
        return None;
    }
    let mut device = match set_up(job) {
        Ok(d) => d,
        Err(e) => {
            shared.setup_done(me, Err(e));
            return None;
        }
    };
    if shared.setup_done(me, Ok(device.profile.clone())) {
        if let Err(reason) = work(job, &mut device) {
            shared.device_failed(me, reason);
        }
    }
    // Let every command this device queued complete before anything is released: releasing a
    // kernel or buffer with commands in flight trips PoCL (`pocl_release_dlhandle_cache`
    // assertion). A device truly hung in its driver never gets past here, and is never joined.
    let _ = device.compute.finish();
    let _ = device.transfer.finish();
    for b in &mut device.buffers {
        if let Some(s) = &mut b.staging {
            s.unmap(&device.transfer);
        }
    }
    Some(device)
}

/// What the balancer learns of this device before the run: its nominal speed, and the fewest
/// balancing units that fill it (the occupancy lower bound, from the kernel's registers where
/// NVIDIA's build log gives them and its real local memory use).
fn profile(job: &Job, local_bytes: u64) -> DeviceProfile {
    let info = &job.device.info;
    let mut resources =
        KernelResources::new(job.geo.items_per_group as u32).with_local_mem(local_bytes);
    if let Some(usage) = job.device.nv_usage.get(&job.kernel) {
        resources = resources.with_nv_usage(usage);
    }
    let fill = occupancy::occupancy(info, &resources);
    DeviceProfile {
        kind: info.kind,
        nominal_gflops: occupancy::nominal_gflops(info),
        min_groups: fill.min_groups.div_ceil(job.geo.groups_per_unit()).max(1),
    }
}

fn set_up(job: &Job) -> Result<Device> {
    let dev = &job.device;
    let info = &dev.info;
    let limit =
        |reason: String| Error::DeviceLimit { device: job.me, name: info.name.clone(), reason };
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

    let mut local_bytes = 0u64;
    for arg in &job.args {
        match arg {
            // SAFETY: `bytes` lives across the call, which copies `bytes.len()` bytes from it;
            // OpenCL checks the size against the argument's and the error is returned.
            ArgPlan::Scalar { index, bytes } => unsafe {
                opencl3::kernel::set_kernel_arg(
                    kernel.get(),
                    *index as u32,
                    bytes.len(),
                    bytes.as_ptr().cast(),
                )
            }
            .map_err(|e| Error::BadArgument {
                index: *index,
                reason: format!("the kernel rejected a {}-byte scalar here: {e}", bytes.len()),
            })?,
            ArgPlan::Local { index, bytes } => {
                local_bytes += *bytes as u64;
                // SAFETY: a size only, no pointer; OpenCL checks it against the argument.
                unsafe { kernel.set_arg_local_buffer(*index as u32, *bytes) }.map_err(|e| {
                    Error::BadArgument {
                        index: *index,
                        reason: format!(
                            "the kernel rejected a __local buffer of {bytes} bytes here: {e}"
                        ),
                    }
                })?
            }
            ArgPlan::Buffer { .. } | ArgPlan::Reduce { .. } => {}
        }
    }
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
    limits::check(info, &needs).map_err(limit)?;

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
                limit(format!("argument {index}: cannot allocate {} bytes: {e}", host.len))
            })?;
            // SAFETY: a `cl_mem` handle of a buffer this device keeps alive as long as the kernel.
            unsafe { kernel.set_arg(*index as u32, &buffer.get()) }.map_err(|e| {
                Error::BadArgument {
                    index: *index,
                    reason: format!(
                        "the kernel rejected a buffer here ({e}); is this argument a pointer?"
                    ),
                }
            })?;
            buffers.push(DeviceBuffer {
                host: *host,
                elem: *elem,
                pattern: Pattern::Whole,
                dir: Direction::InOut,
                buffer,
                staging: Some(Staging::new(&transfer, context, host.len)),
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
        .map_err(|e| limit(format!("argument {index}: cannot allocate {} bytes: {e}", host.len)))?;
        // SAFETY: a `cl_mem` handle of a buffer this device keeps alive as long as the kernel.
        unsafe { kernel.set_arg(*index as u32, &buffer.get()) }.map_err(|e| {
            Error::BadArgument {
                index: *index,
                reason: format!(
                    "the kernel rejected a buffer here ({e}); is this argument a pointer?"
                ),
            }
        })?;
        let staging = (!whole_input).then(|| Staging::new(&transfer, context, host.len));
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
    let profile = profile(job, local_total);
    let mut device = Device { compute, transfer, kernel, buffers, profile, per_unit: None };
    if job.warmup {
        // One work-group at offset 0 and one at the last unit: PoCL compiles a zero and a
        // non-zero global offset separately, and both kinds of package will come.
        let last = job.units - 1;
        for offset in if last > 0 { vec![0, last] } else { vec![0] } {
            let p = Package { offset, len: 1 };
            let launched = launch(job, &mut device, p)
                .map_err(|e| Error::Cl { call: "warm-up launch", code: e })?;
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
    }
    Ok(device)
}

/// Write a package's inputs and launch its kernel.
fn launch(
    job: &Job,
    d: &mut Device,
    p: Package,
) -> std::result::Result<Launched, opencl3::error_codes::ClError> {
    let p = job.absolute(p);
    let mut writes: Vec<Event> = Vec::new();
    let mut write_bytes = 0;
    for b in d.buffers.iter_mut().filter(|b| b.dir.reads() && b.pattern != Pattern::Whole) {
        let range = b.bytes(&job.geo, p);
        if range.is_empty() {
            continue;
        }
        let Some(staging) = b.staging.as_mut() else { continue };
        let host = b.host;
        let dst = &mut staging.bytes()[range.clone()];
        let copied = job.shared.with_caller_memory(|| {
            // SAFETY: inside the gate; `range` lies within the caller's slice (checked by the plan).
            let src = unsafe { std::slice::from_raw_parts(host.ptr.add(range.start), range.len()) };
            dst.copy_from_slice(src);
        });
        if !copied {
            return Err(opencl3::error_codes::ClError(opencl3::error_codes::CL_INVALID_OPERATION));
        }
        // SAFETY: `dst` is this package's range of the buffer's staging, owned by the device;
        // packages are disjoint and a device runs a package once, so nothing else writes that
        // range while the write is in flight; `range` lies within staging and device buffer.
        let ev = unsafe {
            opencl3::command_queue::enqueue_write_buffer(
                d.compute.get(),
                b.buffer.get(),
                CL_NON_BLOCKING,
                range.start,
                range.len(),
                dst.as_ptr().cast(),
                0,
                ptr::null(),
            )
        }?;
        writes.push(Event::new(ev));
        write_bytes += range.len() as u64;
    }
    let (offset, size) = job.geo.launch(p);
    let wait: Vec<cl_event> = writes.iter().map(|e| e.get()).collect();
    // SAFETY: offset and size have the kernel's dimension count, as does the work-group size;
    // every event in `wait` is alive (held by `writes`) for the call.
    let ev = unsafe {
        d.compute.enqueue_nd_range_kernel(
            d.kernel.get(),
            offset.len() as u32,
            offset.as_ptr(),
            size.as_ptr(),
            job.geo.local.as_ptr(),
            &wait,
        )
    }?;
    d.compute.flush()?;
    Ok(Launched { kernel: ev, writes, write_bytes })
}

/// Queue the read-back of a package's outputs after its kernel.
fn read_back(
    job: &Job,
    d: &mut Device,
    p: Package,
    index: usize,
    kernel: &Event,
) -> std::result::Result<InFlight, opencl3::error_codes::ClError> {
    let package = p;
    let p = job.absolute(p);
    let mut reads = Vec::new();
    let mut read_bytes = 0;
    let wait = [kernel.get()];
    for b in d.buffers.iter_mut().filter(|b| b.reduce.is_some()) {
        let (Some(red), Some(staging)) = (&b.reduce, b.staging.as_mut()) else { continue };
        // The whole copy, on the compute queue after the kernel, then reset to the identity
        // before the next package's kernel (the queue is in order): each read holds exactly
        // this package's contribution.
        let dst = staging.bytes();
        // SAFETY: `dst` is the whole staging of this buffer, owned by the device and read only
        // after this read's event completes (`finish`), which is before the next read into it.
        let ev = unsafe {
            opencl3::command_queue::enqueue_read_buffer(
                d.compute.get(),
                b.buffer.get(),
                CL_NON_BLOCKING,
                0,
                dst.len(),
                dst.as_mut_ptr().cast(),
                0,
                ptr::null(),
            )
        }?;
        reads.push(Event::new(ev));
        read_bytes += dst.len() as u64;
        // SAFETY: `identity` holds the buffer's whole length and lives as long as the device,
        // whose queues are finished before anything is released.
        let reset = unsafe {
            opencl3::command_queue::enqueue_write_buffer(
                d.compute.get(),
                b.buffer.get(),
                CL_NON_BLOCKING,
                0,
                red.identity.len(),
                red.identity.as_ptr().cast(),
                0,
                ptr::null(),
            )
        }?;
        drop(Event::new(reset));
    }
    d.compute.flush()?;
    for b in d.buffers.iter_mut().filter(|b| b.dir.writes() && b.reduce.is_none()) {
        let range = b.bytes(&job.geo, p);
        if range.is_empty() {
            continue;
        }
        let Some(staging) = b.staging.as_mut() else { continue };
        let dst = &mut staging.bytes()[range.clone()];
        // SAFETY: `dst` is this package's range of the buffer's staging, owned by the device and
        // read only after the read's event completes (`finish`); `range` lies within both;
        // `wait` holds a live event.
        let ev = unsafe {
            opencl3::command_queue::enqueue_read_buffer(
                d.transfer.get(),
                b.buffer.get(),
                CL_NON_BLOCKING,
                range.start,
                range.len(),
                dst.as_mut_ptr().cast(),
                1,
                wait.as_ptr(),
            )
        }?;
        reads.push(Event::new(ev));
        read_bytes += range.len() as u64;
    }
    d.transfer.flush()?;
    Ok(InFlight { package, index, reads, read_bytes })
}

/// Wait for a package's read-back and merge it into the caller's memory.
fn finish(job: &Job, d: &mut Device, f: InFlight) -> std::result::Result<(), String> {
    let index = f.index;
    let hang = |x: &Fault| matches!(*x, Fault::HangReadBack { package, .. } if package == index);
    if job.faults.iter().any(hang) {
        // Behave like a transfer that never completes: block until dropped from the run.
        while job.shared.alive(job.me) && !job.shared.run_over() {
            std::thread::sleep(Duration::from_millis(5));
        }
        return Err(format!("read-back of package {:?} never completed (injected)", f.package));
    }
    for r in &f.reads {
        r.wait().map_err(|e| format!("read-back of package {:?} failed: {e}", f.package))?;
    }
    let p = f.package;
    let abs = job.absolute(p);
    let geo = &job.geo;
    let buffers = &mut d.buffers;
    job.shared.merge(job.me, p, transfer(&f.reads, f.read_bytes), || {
        for b in buffers.iter_mut().filter(|b| b.dir.writes()) {
            if let (Some(red), Some(staging)) = (&b.reduce, b.staging.as_mut()) {
                let host = b.host;
                // SAFETY: under the gate and this device's commit lock, and under the run's
                // fold lock, so no other device folds into this buffer at the same time.
                let dst = unsafe { std::slice::from_raw_parts_mut(host.ptr, host.len) };
                (red.ops.combine)(red.merge, dst, staging.bytes());
                continue;
            }
            let range = b.bytes(geo, abs);
            let host = b.host;
            if let Some(staging) = b.staging.as_mut() {
                let src = &staging.bytes()[range.clone()];
                // SAFETY: under the gate and this device's commit lock; packages are disjoint.
                let dst = unsafe {
                    std::slice::from_raw_parts_mut(host.ptr.add(range.start), range.len())
                };
                dst.copy_from_slice(src);
            }
        }
    });
    Ok(())
}

/// Wait for a kernel to complete. [`WaitMode::Block`] sleeps in `clWaitForEvents`, whose
/// wake-up after the kernel ends costs tens of microseconds on NVIDIA's driver, every package.
/// [`WaitMode::Poll`] sleeps until shortly before the kernel is expected to end (from the
/// device's last package), then polls its status, yielding the core between polls; a kernel
/// still running at twice its expected time plus a millisecond is waited for by blocking,
/// so an irregular kernel never keeps a core spinning for long.
fn wait_kernel(
    ev: &Event,
    expected: Option<f64>,
    mode: WaitMode,
) -> std::result::Result<(), opencl3::error_codes::ClError> {
    let Some(expected) = expected.filter(|_| mode == WaitMode::Poll) else {
        return ev.wait();
    };
    let start = Instant::now();
    // Sleeping overshoots by up to ~0.1 ms; stop 0.3 ms early.
    let nap = expected * 0.9 - 3e-4;
    if nap > 0.0 {
        std::thread::sleep(Duration::from_secs_f64(nap));
    }
    let give_up = Duration::from_secs_f64(2.0 * expected + 1e-3);
    loop {
        let status = ev.command_execution_status()?.0;
        if status == opencl3::event::CL_COMPLETE {
            return Ok(());
        }
        if status < 0 {
            return Err(opencl3::error_codes::ClError(status));
        }
        if start.elapsed() > give_up {
            return ev.wait();
        }
        std::thread::yield_now();
    }
}

/// Device time of a command, from its profiling timestamps.
fn device_seconds(ev: &Event) -> Option<f64> {
    let start = ev.profiling_command_start().ok()?;
    let end = ev.profiling_command_end().ok()?;
    (end >= start && start > 0).then(|| (end - start) as f64 * 1e-9)
}

/// The package loop. `Err` carries the reason this device must leave the run.
fn work(job: &Job, d: &mut Device) -> std::result::Result<(), String> {
    let me = job.me;
    let mut previous: Option<InFlight> = None;
    let mut count = 0usize;
    loop {
        let p = match job.shared.next_package(me, previous.is_none()) {
            Ask::Run(p) => p,
            Ask::Stop => break,
            Ask::Later => {
                if let Some(f) = previous.take() {
                    finish(job, d, f)?;
                }
                continue;
            }
        };
        let index = count;
        count += 1;
        if job.faults.iter().any(|f| matches!(*f, Fault::Panic { package, .. } if package == index))
        {
            panic!("injected panic at package {index}");
        }
        if let Some(reason) = injected_failure(job, index) {
            if let Some(f) = previous.take() {
                finish(job, d, f)?;
            }
            return Err(reason);
        }
        let launched =
            launch(job, d, p).map_err(|e| format!("launch of package {p:?} failed: {e}"))?;
        if let Some(f) = previous.take() {
            finish(job, d, f)?;
        }
        if injected_hang(job, index) {
            // Behave like a device that never answers: block until dropped from the run.
            while job.shared.alive(me) {
                std::thread::sleep(Duration::from_millis(5));
            }
            return Ok(());
        }
        let expected = d.per_unit.map(|s| s * p.len as f64);
        wait_kernel(&launched.kernel, expected, job.wait)
            .map_err(|e| format!("kernel on package {p:?} failed: {e}"))?;
        let seconds = device_seconds(&launched.kernel);
        if let Some(s) = seconds {
            d.per_unit = Some(s / p.len.max(1) as f64);
        }
        if let Some(factor) = injected_slowdown(job) {
            let t = seconds.unwrap_or(1e-3) * (factor.saturating_sub(1)) as f64;
            std::thread::sleep(Duration::from_secs_f64(t));
        }
        let written = transfer(&launched.writes, launched.write_bytes);
        if !job.shared.kernel_done(me, p, seconds, written) {
            return Ok(());
        }
        let in_flight = read_back(job, d, p, index, &launched.kernel)
            .map_err(|e| format!("read-back of package {p:?} failed: {e}"))?;
        previous = Some(in_flight);
    }
    if let Some(f) = previous.take() {
        finish(job, d, f)?;
    }
    Ok(())
}

fn injected_failure(job: &Job, index: usize) -> Option<String> {
    job.faults.iter().find_map(|f| match *f {
        Fault::Fail { package, .. } if package == index => {
            Some(format!("injected failure at its package {index} (CL_OUT_OF_RESOURCES)"))
        }
        _ => None,
    })
}

fn injected_hang(job: &Job, index: usize) -> bool {
    job.faults.iter().any(|f| matches!(*f, Fault::Hang { package, .. } if package == index))
}

fn injected_slowdown(job: &Job) -> Option<u32> {
    job.faults.iter().find_map(|f| match *f {
        Fault::Slow { factor, .. } => Some(factor),
        _ => None,
    })
}
