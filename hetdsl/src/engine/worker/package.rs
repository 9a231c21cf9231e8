//! One package on a device: write its sliced inputs, launch its kernel, queue its read-back,
//! and merge its outputs into the caller's memory once they are back.
//!
//! The caller's memory is read (inputs) and written (outputs) only inside the run's gate,
//! through [`Shared::with_caller_memory`] and [`Shared::merge`]; everything else moves between
//! the device and its own staging.
//!
//! [`Shared::with_caller_memory`]: crate::engine::shared::Shared::with_caller_memory
//! [`Shared::merge`]: crate::engine::shared::Shared::merge

use std::ptr;
use std::time::{Duration, Instant};

use opencl3::event::Event;
use opencl3::memory::ClMem;
use opencl3::types::{cl_event, CL_NON_BLOCKING};

use super::job::{Device, Job};
use crate::engine::{Fault, WaitMode};
use crate::pattern::Pattern;
use crate::report::Transfer;
use crate::work::Package;

/// Bytes of an input staged and written per step: large enough that a write's fixed cost
/// is small, small enough that copying the next chunk overlaps most of a package's transfer.
pub(super) const CHUNK: usize = 32 << 20;

/// A package in flight on this device.
pub(super) struct InFlight {
    pub(super) package: Package,
    /// Its place among this device's packages (for injected faults).
    pub(super) index: usize,
    pub(super) reads: Vec<Event>,
    pub(super) read_bytes: u64,
}

/// A launched package: its kernel and the input writes it waits for.
pub(super) struct Launched {
    pub(super) kernel: Event,
    pub(super) writes: Vec<Event>,
    pub(super) write_bytes: u64,
}

/// Bytes moved by `events` and the device time they took (profiling), if the device says.
pub(super) fn transfer(events: &[Event], bytes: u64) -> Transfer {
    let seconds: Option<f64> = events.iter().map(device_seconds).sum();
    Transfer { bytes, seconds: if events.is_empty() { Some(0.0) } else { seconds } }
}

/// Write a package's inputs and launch its kernel. The writes go on the upload queue when
/// packages are queued ahead (`job.pipeline`), so that they overlap the kernel before, which
/// holds the in-order compute queue, and the read-backs; the kernel waits for them by their
/// events either way.
pub(super) fn launch(
    job: &Job,
    d: &mut Device,
    p: Package,
) -> std::result::Result<Launched, opencl3::error_codes::ClError> {
    let p = job.absolute(p);
    let writes_on = if job.pipeline { &d.upload } else { &d.compute };
    let mut writes: Vec<Event> = Vec::new();
    let mut write_bytes = 0;
    for b in d.buffers.iter_mut().filter(|b| b.dir.reads() && b.pattern != Pattern::Whole) {
        let range = b.bytes(&job.geo, p);
        if range.is_empty() {
            continue;
        }
        let Some(staging) = b.staging.as_mut() else { continue };
        let host = b.host;
        let staged = staging.bytes();
        // In chunks, each written to the device as soon as it is staged, so the copy of the
        // next overlaps the transfer of the last.
        let mut at = range.start;
        while at < range.end {
            let chunk = at..(at + CHUNK).min(range.end);
            let dst = &mut staged[chunk.clone()];
            let copied = job.shared.with_caller_memory(|| {
                // SAFETY: inside the gate; `chunk` lies within the caller's slice (checked by
                // the plan).
                let src =
                    unsafe { std::slice::from_raw_parts(host.ptr.add(chunk.start), chunk.len()) };
                crate::engine::copy::copy(dst, src);
            });
            if !copied {
                return Err(opencl3::error_codes::ClError(
                    opencl3::error_codes::CL_INVALID_OPERATION,
                ));
            }
            // SAFETY: `dst` is this package's chunk of the buffer's staging, owned by the
            // device; packages are disjoint and a device runs a package once, so nothing else
            // writes that range while the write is in flight (a package queued behind this
            // one is staged into its own range); `chunk` lies within staging and the device
            // buffer.
            let ev = unsafe {
                opencl3::command_queue::enqueue_write_buffer(
                    writes_on.get(),
                    b.buffer.get(),
                    CL_NON_BLOCKING,
                    chunk.start,
                    chunk.len(),
                    dst.as_ptr().cast(),
                    0,
                    ptr::null(),
                )
            }?;
            writes.push(Event::new(ev));
            if chunk.end < range.end {
                writes_on.flush()?;
            }
            at = chunk.end;
        }
        write_bytes += range.len() as u64;
    }
    if job.pipeline && !writes.is_empty() {
        writes_on.flush()?;
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
pub(super) fn read_back(
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
pub(super) fn finish(job: &Job, d: &mut Device, f: InFlight) -> std::result::Result<(), String> {
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
                crate::engine::copy::copy(dst, src);
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
pub(in crate::engine) fn wait_kernel(
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
pub(in crate::engine) fn device_seconds(ev: &Event) -> Option<f64> {
    device_span(ev).map(|(start, end)| (end - start) as f64 * 1e-9)
}

/// A command's start and end on the device's profiling clock, in nanoseconds.
pub(super) fn device_span(ev: &Event) -> Option<(u64, u64)> {
    let start = ev.profiling_command_start().ok()?;
    let end = ev.profiling_command_end().ok()?;
    (end >= start && start > 0).then_some((start, end))
}
