//! What a session device's persistent host thread (see `thread`) keeps and does: it owns the
//! device's compute queue, one kernel per kernel name (made on first use and kept), and the
//! staging its moves go through. Each launch hands it a [`Task`]; it sets the kernel's
//! arguments, then runs the packages the dispatcher gives it, first making each package's
//! inputs fresh on its device.
//!
//! A package's outputs stay on the device. They are committed (the residency says this device
//! holds the only fresh copy) through the run's `merge` when the device would otherwise wait,
//! or, with the session's mirror on, only once the balancer has nothing more for it: then a
//! device failing before its share is done has committed nothing, and every package it ran
//! goes back to the pool to be re-run elsewhere from copies still fresh (the host's).

use std::collections::HashMap;
use std::ops::Range;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use opencl3::command_queue::CommandQueue;
use opencl3::kernel::Kernel;
use opencl3::program::Program as ClProgram;
use opencl3::types::cl_event;

use super::buffer::BufferCore;
use super::residency::{Loc, RangeSet};
use super::transfer::{self, EnsureError, Receiver as To};
use super::window::{self, bind, cover};
use super::Devices;
use crate::engine::geometry::Geometry;
use crate::engine::program::ProgramDevice;
use crate::engine::shared::{Ask, Phase, Shared};
use crate::engine::worker::{
    device_profile, device_seconds, set_local, set_scalar, wait_kernel, Staging,
};
use crate::engine::{limits, Fault, WaitMode, WatchdogConfig};
use crate::error::{ClContext, Error, Result};
use crate::pattern::{Direction, Pattern};
use crate::report::{Moved, Transfer};
use crate::work::{DeviceProfile, Package};

/// One argument of a session launch, checked.
pub(crate) enum SArg {
    Buffer { index: usize, core: Arc<BufferCore>, pattern: Pattern, dir: Direction },
    Scalar { index: usize, bytes: Vec<u8> },
    Local { index: usize, bytes: usize },
}

/// A launch as every device thread sees it.
pub(crate) struct Plan {
    pub(crate) kernel: String,
    pub(crate) geo: Geometry,
    pub(crate) args: Vec<SArg>,
    pub(crate) faults: Vec<Fault>,
    pub(crate) warmup: bool,
    pub(crate) wait: WaitMode,
    pub(crate) watchdog: WatchdogConfig,
    /// Commit outputs only once the balancer has nothing more for the device (the mirror is
    /// on, so a later failure can be recovered), rather than whenever it would wait: holding
    /// costs a wake-up at the end of the launch.
    pub(crate) hold: bool,
    /// (buffer argument, kernel argument of its hidden window offset), per `__global` pointer.
    pub(crate) offsets: Vec<(usize, usize)>,
    /// Elements per row of a 2-D range (per plane in 3-D, 1 in 1-D), for halos.
    pub(crate) row_len: u64,
    /// Session position of each launch position.
    pub(crate) slots: Vec<usize>,
    pub(crate) devices: Arc<Devices>,
    /// Per argument: the bytes moved, and the elements this launch's committed packages wrote.
    pub(crate) moved: Mutex<Vec<Moved>>,
    pub(crate) wrote: Mutex<Vec<RangeSet>>,
    /// Check each device's first package for writes outside it (see `stray`).
    pub(crate) check_writes: bool,
}

impl Plan {
    /// The elements of a buffer argument a package touches.
    pub(super) fn range(&self, core: &BufferCore, pattern: Pattern, p: Package) -> Range<u64> {
        let (first, items) = self.geo.items(p);
        pattern.elements_in_rows(first, items, core.len as u64, self.row_len)
    }

    /// The session's largest allocation, in bytes: a buffer over it is held in windows.
    pub(super) fn cap(&self) -> u64 {
        self.devices.max_alloc.load(Ordering::Relaxed)
    }

    /// Whether `core` is held in windows.
    pub(super) fn windowed(&self, core: &BufferCore) -> bool {
        core.bytes() as u64 > self.cap()
    }

    /// Whether any buffer argument is held in windows.
    pub(super) fn any_windowed(&self) -> bool {
        self.args.iter().any(|a| matches!(a, SArg::Buffer { core, .. } if self.windowed(core)))
    }

    /// Whether the launch reads halos across its blocks' boundaries: each boundary then costs a
    /// move at every launch.
    pub(super) fn reads_halos(&self) -> bool {
        self.args.iter().any(|a| matches!(a, SArg::Buffer { pattern: Pattern::Halo { .. }, .. }))
    }
}

/// A launch's work for one device.
pub(crate) struct Task {
    pub(crate) me: usize,
    pub(crate) shared: Arc<Shared>,
    pub(crate) plan: Arc<Plan>,
}

/// What the thread keeps across launches.
pub(super) struct Worker {
    pub(super) slot: usize,
    pub(super) device: ProgramDevice,
    /// The session's windowed program, which its kernels come from.
    pub(super) program: Arc<ClProgram>,
    pub(super) compute: CommandQueue,
    /// Where a queued launch's moves into this device are written, beside the kernels before
    /// them; `None` where the driver would not make a second queue (the moves then go on
    /// `compute`).
    pub(super) upload: Option<CommandQueue>,
    pub(super) kernels: HashMap<String, Kernel>,
    staging: Option<Staging>,
    per_unit: Option<f64>,
    /// The next package run here is checked for writes outside it (see `stray`).
    check_writes: bool,
}

impl Worker {
    /// The thread's state, made on the thread; `None` where the compute queue cannot be made.
    pub(super) fn new(
        slot: usize,
        device: ProgramDevice,
        program: Arc<ClProgram>,
    ) -> Option<Worker> {
        let queue =
            || crate::engine::worker::profiling_queue(&device.shared.context, device.device);
        let (compute, upload) = (queue(), queue().ok());
        compute.ok().map(|compute| Worker {
            slot,
            device,
            program,
            compute,
            upload,
            kernels: HashMap::new(),
            staging: None,
            per_unit: None,
            check_writes: false,
        })
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        // The mapping goes before its buffer and the queue it was made on.
        if let Some(s) = &mut self.staging {
            s.unmap(&self.compute);
        }
    }
}

pub(super) fn task(w: &mut Worker, t: &Task) {
    let (me, shared) = (t.me, &t.shared);
    // Begun after its launch ended (this thread was computing the losing copy of a back-up):
    // nothing of it may touch the device any more.
    if shared.run_over() {
        return;
    }
    let faults: Vec<Fault> = t
        .plan
        .faults
        .iter()
        .copied()
        .filter(|f| crate::engine::plan::fault_device(f) == me)
        .collect();
    if faults.iter().any(|f| matches!(f, Fault::HangSetup { .. })) {
        while shared.alive(me) && !shared.run_over() {
            std::thread::sleep(Duration::from_millis(5));
        }
        shared.setup_failed(me, "injected set-up hang".into());
        return;
    }
    let (kernel, fresh) = match w.kernels.remove(&t.plan.kernel) {
        Some(k) => (Ok(k), false),
        None => (Kernel::create(&w.program, &t.plan.kernel).call("clCreateKernel"), true),
    };
    let kernel = match kernel {
        Ok(k) => k,
        Err(e) => {
            shared.setup_done(me, Err(e));
            return;
        }
    };
    let profile = set_up(w, t.me, &t.plan, &kernel).map_err(PackageError::Run).and_then(|p| {
        // A kernel writing a buffer in place would change data fresh only here: no warm-up.
        let inout =
            t.plan.args.iter().any(|a| matches!(a, SArg::Buffer { dir: Direction::InOut, .. }));
        // A GPU compiled the kernel at the build (see `DeviceInfo::compiles_at_first_launch`).
        let jit = w.device.info.compiles_at_first_launch();
        if fresh && t.plan.warmup && !inout && jit {
            warm_up(w, t, &kernel)?;
        }
        Ok(p)
    });
    match profile {
        Err(PackageError::Run(e)) => {
            shared.setup_done(me, Err(e));
        }
        Err(PackageError::Device(reason)) => {
            shared.setup_failed(me, format!("warm-up failed: {reason}"))
        }
        Err(PackageError::Over) => shared.setup_failed(me, "the run ended during set-up".into()),
        Ok(profile) => {
            if shared.setup_done(me, Ok(profile)) {
                if let Err(reason) = work(w, t, &kernel, &faults) {
                    shared.device_failed(me, reason);
                }
                w.check_writes = false;
            }
        }
    }
    w.kernels.insert(t.plan.kernel.clone(), kernel);
}

/// The kernel's arguments (device memory made where missing), the device's limits, its profile.
pub(super) fn set_up(
    w: &mut Worker,
    me: usize,
    plan: &Plan,
    kernel: &Kernel,
) -> Result<DeviceProfile> {
    let info = &w.device.info;
    let limit = |reason: String| Error::DeviceLimit { device: me, name: info.name.clone(), reason };
    let num_args = kernel.num_args().call("clGetKernelInfo(NUM_ARGS)")? as usize;
    let given = plan.args.len() + plan.offsets.len();
    if num_args != given {
        return Err(Error::BadArgument {
            index: plan.args.len().min(num_args),
            reason: format!("kernel `{}` takes {num_args} arguments, {given} given", plan.kernel),
        });
    }
    let cap = plan.cap();
    let mut local_bytes = 0u64;
    let mut buffers = Vec::new();
    for a in &plan.args {
        match a {
            SArg::Buffer { index, core, .. } => {
                // A buffer that fits is held whole; a larger one in windows, made per package.
                let bytes = core.bytes() as u64;
                if bytes <= cap {
                    cover(w, core, 0..core.len as u64, cap).map_err(|e| match e {
                        PackageError::Run(e) => e,
                        _ => limit(format!("argument {index}: cannot allocate {bytes} bytes")),
                    })?;
                }
                buffers.push((*index, bytes.min(cap)));
            }
            SArg::Scalar { index, bytes } => set_scalar(kernel, *index, bytes)?,
            SArg::Local { index, bytes } => {
                // Saturated: a wrapped sum would pass the device's limit and crash the driver.
                local_bytes = local_bytes.saturating_add(*bytes as u64);
                set_local(kernel, *index, *bytes)?
            }
        }
    }
    let id = w.device.device.id();
    let local_total = kernel.get_local_mem_size(id).unwrap_or(0).max(local_bytes);
    let needs = limits::Needs {
        total_items: plan.geo.total_items(),
        local: &plan.geo.local,
        kernel_max_work_group: kernel.get_work_group_size(id).unwrap_or(info.max_work_group_size),
        required_local: kernel.get_compile_work_group_size(id).unwrap_or_default(),
        local_bytes: local_total,
        buffers,
    };
    limits::check(info, &needs).map_err(limit)?;
    Ok(device_profile(&w.device, &plan.geo, &plan.kernel, local_total))
}

/// One work-group at each end of the range, so the driver compiles the kernel before the clock
/// starts; what it wrote on this device is not fresh there (it is not the launch's result).
fn warm_up(w: &mut Worker, t: &Task, kernel: &Kernel) -> std::result::Result<(), PackageError> {
    let last = t.plan.geo.units - 1;
    for offset in if last > 0 { vec![0, last] } else { vec![0] } {
        run_slice(w, t, kernel, Package { offset, len: 1 })?;
    }
    Ok(())
}

pub(super) enum PackageError {
    /// The device failed: it leaves the run, its packages are re-run elsewhere.
    Device(String),
    /// The run cannot go on (an input lost with a failed device).
    Run(Error),
    /// The run is over: the package must not touch the device's data any more.
    Over,
}

/// Make a slice's inputs fresh here, mark its outputs not fresh here (the kernel changes
/// them), run its kernel and wait for it. Returns its device time.
pub(super) fn run_slice(
    w: &mut Worker,
    t: &Task,
    kernel: &Kernel,
    p: Package,
) -> std::result::Result<Option<f64>, PackageError> {
    let plan = &t.plan;
    let shared = &t.shared;
    let usable = |d: usize| {
        !plan.devices.is_dead(d)
            && plan.slots.iter().position(|&s| s == d).is_none_or(|pos| shared.alive(pos))
    };
    bind_windows(w, plan, kernel, p)?;
    for a in &plan.args {
        let SArg::Buffer { index, core, pattern, dir } = a else { continue };
        let range = plan.range(core, *pattern, p);
        if dir.reads() {
            let mut to = To {
                slot: w.slot,
                queue: &w.compute,
                context: &w.device.shared.context,
                staging: &mut w.staging,
            };
            let commit = |mark: &mut dyn FnMut()| shared.with_caller_memory(mark);
            let moved = transfer::ensure(core, &mut to, range.clone(), usable, commit).map_err(
                |e| match e {
                    EnsureError::Device(r) => PackageError::Device(r),
                    EnsureError::Lost(e) => PackageError::Run(e),
                },
            )?;
            plan.moved.lock().unwrap_or_else(|e| e.into_inner())[*index] += moved;
        }
        // Once the run is over the residency can no longer say the kernel changed this range
        // here, so the kernel must not run.
        if dir.writes()
            && !shared.with_caller_memory(|| core.lock().res.invalidate(Loc::Device(w.slot), range))
        {
            return Err(PackageError::Over);
        }
    }
    let mut probe = match std::mem::take(&mut w.check_writes) {
        true => super::stray::arm(w, plan, shared, p).map_err(PackageError::Device)?,
        false => None,
    };
    let ev = enqueue_kernel(w, plan, kernel, p, &[]).map_err(PackageError::Device)?;
    if let Some(probe) = &mut probe {
        super::stray::capture(w, probe).map_err(PackageError::Device)?;
    }
    w.compute.flush().map_err(|e| PackageError::Device(format!("flush failed: {e}")))?;
    let expected = w.per_unit.map(|s| s * p.len as f64);
    wait_kernel(&ev, expected, plan.wait)
        .map_err(|e| PackageError::Device(format!("kernel on package {p:?} failed: {e}")))?;
    if let Some(probe) = probe {
        super::stray::check(probe).map_err(PackageError::Run)?;
    }
    let seconds = device_seconds(&ev);
    if let Some(s) = seconds {
        w.per_unit = Some(s / p.len.max(1) as f64);
    }
    Ok(seconds)
}

/// Bind every buffer argument of `kernel` to the window of this device covering package `p`'s
/// elements (made or moved where needed), with its hidden offset.
pub(super) fn bind_windows(
    w: &Worker,
    plan: &Plan,
    kernel: &Kernel,
    p: Package,
) -> std::result::Result<(), PackageError> {
    let cap = plan.cap();
    for a in &plan.args {
        let SArg::Buffer { index, core, .. } = a else { continue };
        let win = cover(w, core, super::window::reach(plan, core, p), cap)?;
        let offset_arg = plan.offsets.iter().find(|(i, _)| i == index).map(|(_, o)| *o);
        bind(kernel, *index, offset_arg, &win)?;
    }
    Ok(())
}

/// Enqueue package `p`'s kernel (its arguments bound) on the device's compute queue, after
/// the events of `wait`.
pub(super) fn enqueue_kernel(
    w: &Worker,
    plan: &Plan,
    kernel: &Kernel,
    p: Package,
    wait: &[cl_event],
) -> std::result::Result<opencl3::event::Event, String> {
    let (offset, size) = plan.geo.launch(p);
    // SAFETY: offset, size and the work-group size have the kernel's dimension count; every
    // argument was bound for this package, and the buffers it names are kept alive by OpenCL
    // until the command ends (and by the session's buffers, which drain queued launches
    // before they go); the caller keeps the events of `wait` alive for the call.
    unsafe {
        w.compute.enqueue_nd_range_kernel(
            kernel.get(),
            offset.len() as u32,
            offset.as_ptr(),
            size.as_ptr(),
            plan.geo.local.as_ptr(),
            wait,
        )
    }
    .map_err(|e| format!("launch of package {p:?} failed: {e}"))
}

/// The package loop. `Err` carries the reason this device must leave the run.
fn work(
    w: &mut Worker,
    t: &Task,
    kernel: &Kernel,
    faults: &[Fault],
) -> std::result::Result<(), String> {
    let (me, shared) = (t.me, &t.shared);
    let kind = |slot: usize| t.plan.devices.list[slot].device.info.kind;
    w.check_writes = t.plan.check_writes
        && crate::engine::worker::stray::checks(
            kind(w.slot),
            t.plan.slots.iter().map(|&s| kind(s)),
        );
    let mut pending: Vec<(Package, Vec<window::Staged>)> = Vec::new();
    let mut count = 0usize;
    // A package may move a window of a buffer larger than the cap, which keeps only what the
    // residency knows of: commit before each package then, so no output is left out.
    let windowed = t.plan.any_windowed();
    loop {
        let asked = if t.plan.hold {
            shared.next_package_held(me, !pending.is_empty())
        } else {
            shared.next_package(me, pending.is_empty())
        };
        let p = match asked {
            Ask::Run(p) => p,
            Ask::Stop => break,
            Ask::Later => {
                commit(w, t, &mut pending);
                continue;
            }
        };
        let index = count;
        count += 1;
        if faults.iter().any(|f| matches!(*f, Fault::Panic { package, .. } if package == index)) {
            panic!("injected panic at package {index}");
        }
        if faults.iter().any(|f| matches!(*f, Fault::Fail { package, .. } if package == index)) {
            return Err(format!("injected failure at its package {index} (CL_OUT_OF_RESOURCES)"));
        }
        if windowed {
            commit(w, t, &mut pending);
        }
        if faults.iter().any(|f| matches!(*f, Fault::Hang { package, .. } if package == index)) {
            // Behave like a device that never answers, until the run goes on without it.
            while shared.alive(me) && !shared.run_over() {
                std::thread::sleep(Duration::from_millis(5));
            }
            return Ok(());
        }
        let (seconds, staged) = match window::run_package(w, t, kernel, p) {
            Ok(ran) => ran,
            Err(PackageError::Device(reason)) => return Err(reason),
            Err(PackageError::Run(e)) => {
                fail_run(shared, e);
                return Ok(());
            }
            Err(PackageError::Over) => return Ok(()),
        };
        if let Some(t) = Fault::sleep_after(faults, seconds) {
            std::thread::sleep(t);
        }
        if !shared.kernel_done(me, p, seconds, Transfer::default(), None) {
            return Ok(());
        }
        pending.push((p, staged));
    }
    commit(w, t, &mut pending);
    Ok(())
}

/// The outputs of the packages run here are now the only fresh copies: say so, through the
/// run's merge (once per package, never after the run is over). A sliced package's windowed
/// outputs were read home: they are written to the host image then, and fresh there.
fn commit(w: &Worker, t: &Task, pending: &mut Vec<(Package, Vec<window::Staged>)>) {
    let plan = &t.plan;
    for (p, staged) in pending.drain(..) {
        t.shared.merge(t.me, p, Transfer::default(), || {
            for a in
                plan.args.iter().filter(|a| matches!(a, SArg::Buffer { dir, .. } if dir.writes()))
            {
                let SArg::Buffer { index, core, pattern, .. } = a else { continue };
                let range = plan.range(core, *pattern, p);
                plan.note_written(*index, range.clone());
                if !staged.iter().any(|s| Arc::ptr_eq(&s.core, core)) {
                    core.lock().res.written(Loc::Device(w.slot), range);
                }
            }
            for s in &staged {
                s.write_home();
            }
        });
    }
}

/// End the run with `e` (a lost input): every device stops, `run` returns it.
fn fail_run(shared: &Shared, e: Error) {
    let mut s = shared.lock();
    if s.fatal.is_none() {
        s.fatal = Some(e);
    }
    s.phase = Phase::Over;
    shared.wake.notify_all();
}
