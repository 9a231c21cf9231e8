//! One package on a device: write its sliced inputs, launch its kernel, queue its read-back,
//! and merge its outputs into the caller's memory once they are back.
//!
//! The caller's memory is read (inputs) and written (outputs) only inside the run's gate,
//! through [`Shared::with_caller_memory`] and [`Shared::merge`]; everything else moves between
//! the device and its own staging.
//!
//! [`Shared::with_caller_memory`]: crate::engine::shared::Shared::with_caller_memory
//! [`Shared::merge`]: crate::engine::shared::Shared::merge

use std::collections::VecDeque;
use std::ops::Range;
use std::ptr;
use std::time::{Duration, Instant};

use opencl3::error_codes::CL_INVALID_VALUE;
use opencl3::event::Event;
use opencl3::event::CL_COMPLETE;
use opencl3::memory::ClMem;
use opencl3::types::{cl_event, CL_NON_BLOCKING};

use super::job::{Device, Job};
use super::ring::{pieces, SLOTS};
use crate::engine::{Fault, WaitMode};
use crate::pattern::Pattern;
use crate::report::Transfer;
use crate::work::Package;

/// A package in flight on this device.
pub(super) struct InFlight {
    pub(super) package: Package,
    /// Its place among this device's packages (for injected faults).
    pub(super) index: usize,
    /// Reduced outputs' reads, then each part's read once it is in.
    pub(super) reads: Vec<Event>,
    pub(super) read_bytes: u64,
    /// The sliced outputs, in pieces of at most a slot of the output ring: part `j` goes
    /// through slot `j % SLOTS`, read once part `j - SLOTS` is merged.
    parts: Vec<Part>,
    /// Parts whose reads are queued, in order, with their reads.
    pending: VecDeque<(usize, Event)>,
    /// The next part to queue once a slot is free.
    next: usize,
    /// The run is over for this device: nothing more is merged.
    over: bool,
    /// Why merging a part failed while the next package was launched, reported by [`finish`].
    error: Option<String>,
}

/// A piece of a package's output: bytes `range` of buffer `buffer`.
struct Part {
    buffer: usize,
    range: Range<usize>,
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
/// events either way. Between two slots of input, the parts of `previous` already back are
/// merged and their slots read into again (see [`pump`]).
pub(super) fn launch(
    job: &Job,
    d: &mut Device,
    p: Package,
    mut previous: Option<&mut InFlight>,
) -> std::result::Result<Launched, opencl3::error_codes::ClError> {
    let p = job.absolute(p);
    let slot = d.rings.input.as_ref().map_or(usize::MAX, |r| r.slot_len());
    let mut chunks = Vec::new();
    for (i, b) in d.buffers.iter().enumerate() {
        if b.dir.reads() && b.pattern != Pattern::Whole {
            let range = b.bytes(&job.geo, p);
            chunks.extend(pieces(range, slot).map(|range| Part { buffer: i, range }));
        }
    }
    let mut writes: Vec<Event> = Vec::with_capacity(chunks.len());
    for chunk in &chunks {
        writes.push(write_chunk(job, d, chunk)?);
        if let Some(f) = previous.as_deref_mut() {
            if f.error.is_none() {
                f.error = pump(job, d, f, false).err();
            }
        }
    }
    let write_bytes = chunks.iter().map(|c| c.range.len() as u64).sum();
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

/// Stage `chunk` of an input (at most a slot) from the caller's memory into the next slot of
/// the input ring and write it to the device, flushed at once: the next take of that slot waits
/// for this write, and the copy of the next chunk overlaps it.
fn write_chunk(
    job: &Job,
    d: &mut Device,
    chunk: &Part,
) -> std::result::Result<Event, opencl3::error_codes::ClError> {
    let writes_on = if job.pipeline { &d.upload } else { &d.compute };
    let b = &d.buffers[chunk.buffer];
    let ring = d.rings.input.as_mut().expect("a device with sliced inputs has an input ring");
    let k = ring.take()?;
    let dst = &mut ring.slot(k)[..chunk.range.len()];
    let (host, range) = (b.host, chunk.range.clone());
    // The plan checked that every package's bytes lie in the caller's memory.
    let at = host.at(&range).ok_or(opencl3::error_codes::ClError(CL_INVALID_VALUE))?;
    let copied = job.shared.with_caller_memory(|| {
        // SAFETY: inside the gate; the `range.len()` bytes at `at` are the caller's.
        let src = unsafe { std::slice::from_raw_parts(at, range.len()) };
        crate::engine::copy::copy(dst, src);
    });
    if !copied {
        return Err(opencl3::error_codes::ClError(opencl3::error_codes::CL_INVALID_OPERATION));
    }
    // SAFETY: `dst` is a slot of the device's input ring, not handed out again before this
    // write completes (`hold`); `chunk.range` lies within the device buffer.
    let ev = unsafe {
        opencl3::command_queue::enqueue_write_buffer(
            writes_on.get(),
            b.buffer.get(),
            CL_NON_BLOCKING,
            chunk.range.start,
            chunk.range.len(),
            dst.as_ptr().cast(),
            0,
            ptr::null(),
        )
    }?;
    writes_on.flush()?;
    let ev = Event::new(ev);
    ring.hold(k, &ev)?;
    Ok(ev)
}

/// Queue the read-back of a package's outputs after its kernel: reduced outputs whole, and the
/// first parts of the sliced ones, as many as the output ring has slots ([`finish`] reads the
/// rest as slots free up).
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
    for b in d.buffers.iter_mut().filter(|b| b.reduce.is_some()) {
        let (Some(red), Some(staging)) = (&b.reduce, b.staging.as_mut()) else { continue };
        // The whole copy, on the compute queue after the kernel, then reset to its start
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
        // SAFETY: `start` holds the buffer's whole length and lives as long as the device,
        // whose queues are finished before anything is released.
        let reset = unsafe {
            opencl3::command_queue::enqueue_write_buffer(
                d.compute.get(),
                b.buffer.get(),
                CL_NON_BLOCKING,
                0,
                red.start.len(),
                red.start.as_ptr().cast(),
                0,
                ptr::null(),
            )
        }?;
        drop(Event::new(reset));
    }
    d.compute.flush()?;
    d.rings.make_output(&d.transfer, &job.device.shared.context);
    let slot = d.rings.output.as_ref().map_or(usize::MAX, |r| r.slot_len());
    let mut parts = Vec::new();
    for (i, b) in d.buffers.iter().enumerate() {
        if !b.dir.writes() || b.reduce.is_some() {
            continue;
        }
        let range = b.bytes(&job.geo, p);
        read_bytes += range.len() as u64;
        parts.extend(pieces(range, slot).map(|range| Part { buffer: i, range }));
    }
    let mut pending = VecDeque::new();
    for (j, part) in parts.iter().enumerate().take(SLOTS) {
        pending.push_back((j, read_part(d, part, j, Some(kernel))?));
    }
    d.transfer.flush()?;
    let next = pending.len();
    Ok(InFlight {
        package,
        index,
        reads,
        read_bytes,
        parts,
        pending,
        next,
        over: false,
        error: None,
    })
}

/// Queue the read of `part` into slot `j % SLOTS` of the output ring, after `kernel` if given.
fn read_part(
    d: &mut Device,
    part: &Part,
    j: usize,
    kernel: Option<&Event>,
) -> std::result::Result<Event, opencl3::error_codes::ClError> {
    let ring = d.rings.output.as_mut().expect("a device with sliced outputs has an output ring");
    let dst = &mut ring.slot(j % SLOTS)[..part.range.len()];
    let wait: Vec<cl_event> = kernel.iter().map(|e| e.get()).collect();
    // SAFETY: `dst` is a slot of the device's output ring, read only after this read's event
    // completes and not read into again before its bytes are merged (`finish`); `part.range`
    // lies within the device buffer; `wait` holds live events.
    let ev = unsafe {
        opencl3::command_queue::enqueue_read_buffer(
            d.transfer.get(),
            d.buffers[part.buffer].buffer.get(),
            CL_NON_BLOCKING,
            part.range.start,
            part.range.len(),
            dst.as_mut_ptr().cast(),
            wait.len() as u32,
            if wait.is_empty() { ptr::null() } else { wait.as_ptr() },
        )
    }?;
    Ok(Event::new(ev))
}

/// Merge the parts of `f` that are back, in order, each slot read into again as soon as its
/// part is merged; with `block`, wait for every part, else stop at the first still moving.
fn pump(job: &Job, d: &mut Device, f: &mut InFlight, block: bool) -> Result<(), String> {
    let p = f.package;
    let failed = |e: &dyn std::fmt::Display| format!("read-back of package {p:?} failed: {e}");
    while let Some((_, ev)) = f.pending.front().filter(|_| !f.over) {
        let moving = ev.command_execution_status().is_ok_and(|s| s.0 > CL_COMPLETE);
        if moving && !block {
            break;
        }
        let Some((j, ev)) = f.pending.pop_front() else { break };
        ev.wait().map_err(|e| failed(&e))?;
        f.reads.push(ev);
        let part = &f.parts[j];
        let (host, dir) = (d.buffers[part.buffer].host, d.buffers[part.buffer].dir);
        let ring = d.rings.output.as_mut().expect("parts come through the output ring");
        let src = &ring.slot(j % SLOTS)[..part.range.len()];
        // The plan checked that every package's bytes lie in the caller's memory.
        let at = host.at(&part.range).ok_or_else(|| failed(&"outside the caller's window"))?;
        let merged = job.shared.merge_part(job.me, p, || {
            // SAFETY: under the gate and this device's commit lock; packages are disjoint, and
            // the `part.range.len()` bytes at `at` are the caller's.
            let dst = unsafe { std::slice::from_raw_parts_mut(at, part.range.len()) };
            if dir == crate::pattern::Direction::InOut {
                let half = &job.shared.half_merged[job.me];
                *half.lock().unwrap_or_else(|e| e.into_inner()) = Some(p);
            }
            crate::engine::copy::copy(dst, src);
        });
        if !merged {
            // The run is over for this device: nothing more is read into the ring.
            f.over = true;
            for (_, ev) in f.pending.drain(..) {
                let _ = ev.wait();
            }
            break;
        }
        if f.next < f.parts.len() {
            let ev = read_part(d, &f.parts[f.next], f.next, None).map_err(|e| failed(&e))?;
            d.transfer.flush().map_err(|e| failed(&e))?;
            f.pending.push_back((f.next, ev));
            f.next += 1;
        }
    }
    Ok(())
}

/// Wait for a package's read-back and merge it into the caller's memory (its sliced outputs
/// part by part, see [`pump`]); then the package counts as merged.
pub(super) fn finish(
    job: &Job,
    d: &mut Device,
    mut f: InFlight,
) -> std::result::Result<(), String> {
    let index = f.index;
    let hang = |x: &Fault| matches!(*x, Fault::HangReadBack { package, .. } if package == index);
    if job.faults.iter().any(hang) {
        // Behave like a transfer that never completes: block until dropped from the run.
        while job.shared.alive(job.me) && !job.shared.run_over() {
            std::thread::sleep(Duration::from_millis(5));
        }
        return Err(format!("read-back of package {:?} never completed (injected)", f.package));
    }
    let p = f.package;
    for r in &f.reads {
        r.wait().map_err(|e| format!("read-back of package {p:?} failed: {e}"))?;
    }
    if let Some(e) = f.error.take() {
        return Err(e);
    }
    pump(job, d, &mut f, true)?;
    if f.over {
        return Ok(());
    }
    let buffers = &mut d.buffers;
    job.shared.merge(job.me, p, transfer(&f.reads, f.read_bytes), || {
        for b in buffers.iter_mut() {
            if let (Some(red), Some(staging)) = (&b.reduce, b.staging.as_mut()) {
                let host = b.host;
                // SAFETY: under the gate and this device's commit lock, and under the run's
                // fold lock, so no other device folds into this buffer at the same time.
                let dst = unsafe { std::slice::from_raw_parts_mut(host.ptr, host.len) };
                (red.ops.combine)(red.merge, dst, staging.bytes());
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
        std::thread::sleep(crate::engine::coordinator::seconds(nap));
    }
    let give_up = crate::engine::coordinator::seconds(2.0 * expected + 1e-3);
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
