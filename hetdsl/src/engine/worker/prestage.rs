//! A GPU's queues and pinned staging, made while its program builds. Pinning is slow the first
//! time a process touches fresh pages (about 1.5 GB/s), and a first call paid it before its
//! first package: on two H100s Binomial's GPUs each spent 55 ms pinning their rings before a
//! 295 ms ROI. Made beside the compilation instead, and parked for the first run (which reuses
//! rings whose slots are at least as large as it needs), it costs the first call nothing and
//! the build at most its own time. `HETDSL_STAGE_AT_BUILD`: unset or `gpu` for GPUs, `all` for
//! every device, `0` for none; any other value is an error of the build.

use opencl3::command_queue::{CommandQueue, CL_QUEUE_PROFILING_ENABLE};
use opencl3::context::Context;
use opencl3::device::Device as ClDevice;

use super::parked::Parked;
use super::ring::{slot_bytes, Rings};
use crate::device::DeviceInfo;
use crate::error::{ClContext, Result};
use crate::work::DeviceKind;

/// A queue on `device` of `context`, timed for profiling (every queue of a run or a session).
pub(crate) fn profiling_queue(
    context: &Context,
    device: ClDevice,
) -> std::result::Result<CommandQueue, opencl3::error_codes::ClError> {
    // SAFETY: `device` is a device of `context`; the properties are a valid bit set.
    unsafe {
        CommandQueue::create_with_properties(context, device.id(), CL_QUEUE_PROFILING_ENABLE, 0)
    }
}

/// Run `build` while `make(i)` runs on a thread of its own for each `i` where `wanted[i]`
/// (pinning staging, slow the first time pages are touched, beside a compilation), and return
/// both; a maker that panics gives `None`.
pub(crate) fn beside_build<T, S: Send>(
    wanted: &[bool],
    make: impl Fn(usize) -> Option<S> + Sync,
    build: impl FnOnce() -> T,
) -> (T, Vec<Option<S>>) {
    std::thread::scope(|s| {
        let make = &make;
        let making: Vec<_> = (wanted.iter().enumerate())
            .map(|(i, &w)| w.then(|| s.spawn(move || make(i))))
            .collect();
        let built = build();
        (built, making.into_iter().map(|h| h.and_then(|h| h.join().ok().flatten())).collect())
    })
}

/// A run's three queues on `device` (compute, transfer, upload), timed for profiling.
pub(super) fn new_queues(
    context: &Context,
    device: ClDevice,
) -> Result<(CommandQueue, CommandQueue, CommandQueue)> {
    let queue = || profiling_queue(context, device);
    let compute = queue().call("clCreateCommandQueueWithProperties")?;
    let transfer = queue().call("clCreateCommandQueueWithProperties")?;
    Ok((compute, transfer, queue().call("clCreateCommandQueueWithProperties")?))
}

/// The environment variable, and the values it takes (unset: `gpu`).
pub(crate) const VARIABLE: &str = "HETDSL_STAGE_AT_BUILD";
pub(crate) const VALUES: [&str; 3] = ["gpu", "all", "0"];

/// Whether `info`'s staging is made while the program builds (see the module's documentation;
/// `Program::build` refuses a value of the variable that means nothing before asking).
pub(crate) fn wanted(info: &DeviceInfo) -> bool {
    match std::env::var(VARIABLE).as_deref() {
        Ok("0") => false,
        Ok("all") => true,
        _ => info.kind == DeviceKind::Gpu,
    }
}

/// `device`'s queues and both rings at full slots, as a run would park them; `None` if a
/// queue cannot be made (the first run then makes its own, and says why if it cannot).
pub(crate) fn stage(context: &Context, device: ClDevice) -> Option<Parked> {
    let (compute, transfer, upload) = new_queues(context, device).ok()?;
    let slot = slot_bytes();
    let mut rings = Rings::fit(Rings::default(), Some(slot), Some(slot), &transfer, context);
    rings.make_output(&transfer, context);
    Some(Parked {
        queues: Some((compute, transfer, upload)),
        kernels: Vec::new(),
        buffers: Vec::new(),
        rings,
    })
}
