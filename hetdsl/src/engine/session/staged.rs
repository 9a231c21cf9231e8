//! The moves of a queued launch: the input ranges a device lacks, made fresh there before its
//! kernels. A range fresh on another device is read by the host, into pinned staging, once the
//! queued package that last wrote it there has ended (the host waits for that one kernel, then
//! reads; see `order`). A range fresh only on the host is copied into idle pinned staging where
//! some fits, else the device reads it from the host image itself (the host image changes only
//! once every queued launch has drained). The receiving device writes each range on a queue of
//! its own (`upload`), after the queued kernel there that last reads or writes that range, and
//! its first kernel waits for those writes: a halo row arrives while the kernels before it
//! still run, where on the compute queue it ran between them (on two H200s a Jacobi sweep's
//! GPUs idled 18 us between sweeps against 3 us alone). The host does not wait for the writes.
//!
//! Chaining the source's read and the receiver's write by events instead (no host wait at
//! all) gave wrong Jacobi grids on two H200s in 4 runs of 10, for a cause never found; with
//! each block computing first what the other devices read, the host's moves hide behind the
//! rest of the block anyway.

use std::ops::Range;
use std::ptr;
use std::sync::Arc;

use opencl3::error_codes::ClError;
use opencl3::event::Event;
use opencl3::memory::ClMem;
use opencl3::types::{cl_event, CL_NON_BLOCKING};

use super::buffer::BufferCore;
use super::pinned::Lent;
use super::residency::{Loc, RangeSet};
use super::worker::{Plan, SArg};
use super::{transfer, Devices};
use crate::error::{ClContext, Result};
use crate::report::Moved;
use crate::work::Package;

/// One range a device of the launch lacks, and where it is fresh.
pub(super) struct Need {
    /// The launch argument it is for.
    arg: usize,
    pub(super) core: Arc<BufferCore>,
    /// The launch position of the device that lacks it.
    pub(super) pos: usize,
    pub(super) range: Range<u64>,
    from: Loc,
}

/// What each launch position lacks of the inputs its blocks read. `None` when a range is
/// fresh nowhere usable (the launch then runs the ordinary way, which says what was lost).
pub(super) fn needs(plan: &Plan, blocks: &[Vec<Package>]) -> Option<Vec<Need>> {
    let mut out = Vec::new();
    for (pos, (&slot, packages)) in plan.slots.iter().zip(blocks).enumerate() {
        for a in &plan.args {
            let SArg::Buffer { index, core, pattern, dir } = a else { continue };
            if !dir.reads() {
                continue;
            }
            let st = core.lock();
            let mut planned = RangeSet::new();
            for &p in packages {
                let mut lacking =
                    st.res.missing_at(Loc::Device(slot), plan.range(core, *pattern, p));
                lacking.remove_set(&planned);
                for part in lacking.ranges().to_vec() {
                    let usable = |d: usize| !plan.devices.is_dead(d);
                    for m in st.res.plan_moves(slot, part.clone(), usable).ok()? {
                        let from = m.from;
                        out.push(Need {
                            arg: *index,
                            core: core.clone(),
                            pos,
                            range: m.range,
                            from,
                        });
                    }
                    planned.insert(part);
                }
            }
        }
    }
    Some(out)
}

/// A write a device thread enqueues before its kernels: `len` bytes at `src` (host memory the
/// queued launch keeps until it is drained, or `core`'s host image) into elements `range` of
/// `core` on its device, once the events of `after` have ended (the queued kernel there that
/// last reads or writes the range, if any).
pub(crate) struct Write {
    pub(super) core: Arc<BufferCore>,
    pub(super) range: Range<u64>,
    pub(super) src: *const u8,
    pub(super) len: usize,
    pub(super) after: Vec<cl_event>,
}

// SAFETY: `src` points into staging owned by the queued launch until it is drained, which
// waits for the write, or into the host image of `core`, which the queued launch keeps alive
// until it is drained (`Queued::_sources`) and which is written only after every queued
// launch has drained; the events of `after` are retained by
// the queued launch the write belongs to until it is drained.
unsafe impl Send for Write {}

/// The moves' host memory, kept until the launch is drained (the writes read it): pinned
/// staging from the session's pool.
pub(super) type InFlight = Vec<Lent>;

/// The moves staged: per launch position, the writes its device enqueues; the bytes per
/// argument.
pub(super) struct Started {
    pub(super) flight: InFlight,
    pub(super) writes: Vec<Vec<Write>>,
    pub(super) moved: Vec<(usize, Moved)>,
}

/// Stage every range of `needs` in host memory: from the host image, or read from the device
/// holding it once `producer(slot, buffer, range)`, the queued kernel after which the range is
/// final there, has ended. Each buffer remembers what moved out of each device (`sent`). `Err`
/// names the session position of a device that failed to give a range.
pub(super) fn start(
    devices: &Devices,
    slots: &[usize],
    needs: Vec<Need>,
    producer: impl Fn(usize, usize, &Range<u64>) -> Option<cl_event>,
) -> std::result::Result<Started, (usize, crate::error::Error)> {
    let n = slots.len();
    let mut s = Started {
        flight: InFlight::new(),
        writes: (0..n).map(|_| Vec::new()).collect(),
        moved: Vec::new(),
    };
    // (buffer, device) pairs whose `sent` this launch has started anew.
    let mut renewed = Vec::new();
    for need in needs {
        let elem = need.core.elem;
        let bytes = need.range.start as usize * elem..need.range.end as usize * elem;
        let len = bytes.len();
        let mut moved = Moved::default();
        // Where the device's write reads from, and the staging that holds it (if any).
        let (src, lent) = match need.from {
            // Without idle pinned staging that fits, the device reads the host image through
            // its driver: pinning fresh memory costs more than the move it would serve. The
            // host image is written only once every queued launch has drained (`Buffer::write`,
            // reads, checkpoints), and the write's `core` keeps it.
            Loc::Host => {
                moved.host_to_device = len as u64;
                match devices.pinned.take_idle(slots[need.pos], len) {
                    Some(mut lent) => {
                        let stage = &mut lent.staging.bytes()[..len];
                        crate::engine::copy::copy(stage, &need.core.lock().host[bytes]);
                        (stage.as_ptr(), Some(lent))
                    }
                    None => (need.core.lock().host[bytes].as_ptr(), None),
                }
            }
            Loc::Device(from) => {
                let win = {
                    let mut st = need.core.lock();
                    if !renewed.contains(&(need.core.index, from)) {
                        renewed.push((need.core.index, from));
                        st.sent[from] = RangeSet::new();
                    }
                    st.sent[from].insert(need.range.clone());
                    st.mems[from].clone()
                };
                let Some(win) = win else {
                    let e = crate::error::Error::Internal("a fresh range without memory".into());
                    return Err((from, e));
                };
                let at = win.at(need.range.start, elem);
                let wrote = producer(from, need.core.index, &need.range);
                moved.device_to_device = len as u64;
                let began = std::time::Instant::now();
                if let Some(ev) = wrote {
                    opencl3::event::wait_for_events(&[ev])
                        .map_err(ClError)
                        .call("clWaitForEvents (queued move)")
                        .map_err(|e| (from, e))?;
                }
                let waited = began.elapsed();
                let mut lent = devices.pinned.take(devices, from, len);
                let taken = began.elapsed();
                let stage = &mut lent.staging.bytes()[..len];
                transfer::read(&devices.list[from].transfer, &win.mem, at, stage)
                    .call("clEnqueueReadBuffer (queued move)")
                    .map_err(|e| (from, e))?;
                trace_move(from, len, [waited, taken, began.elapsed()]);
                (stage.as_ptr(), Some(lent))
            }
        };
        s.flight.extend(lent);
        let (core, range, after) = (need.core, need.range, Vec::new());
        s.writes[need.pos].push(Write { core, range, src, len, after });
        s.moved.push((need.arg, moved));
    }
    Ok(s)
}

/// Enqueue a device's writes on `queue` (the thread that owns it calls this), each after the
/// events of its `after`; their events, which the device's first kernel waits for.
pub(super) fn enqueue_writes(
    queue: &opencl3::command_queue::CommandQueue,
    slot: usize,
    writes: &[Write],
) -> Result<Vec<Event>> {
    let mut events = Vec::with_capacity(writes.len());
    for w in writes {
        let Some(win) = w.core.lock().mems[slot].clone() else {
            return Err(crate::error::Error::Internal("no device memory for a queued move".into()));
        };
        let (count, wait) = match w.after.len() {
            0 => (0, ptr::null()),
            n => (n as u32, w.after.as_ptr()),
        };
        // SAFETY: `src` holds `len` bytes kept until the launch is drained (see `Write`); the
        // window covers the range (the launch's set-up made the whole buffer); the events of
        // `after` are alive (see `Write`).
        let ev = unsafe {
            opencl3::command_queue::enqueue_write_buffer(
                queue.get(),
                win.mem.get(),
                CL_NON_BLOCKING,
                win.at(w.range.start, w.core.elem),
                w.len,
                w.src.cast(),
                count,
                wait,
            )
        }
        .map_err(ClError)
        .call("clEnqueueWriteBuffer (queued move)")?;
        events.push(Event::new(ev));
    }
    Ok(events)
}

/// A queued move out of a device, phase by phase, as a debug event (microseconds from its
/// start): the source's kernel waited for, pinned staging taken (made, the first times), read.
fn trace_move(from: usize, bytes: usize, at: [std::time::Duration; 3]) {
    let us = |i: usize| at[i].as_secs_f64() * 1e6;
    let _ = std::panic::catch_unwind(|| {
        tracing::debug!(
            from,
            bytes,
            waited_us = us(0),
            taken_us = us(1),
            read_us = us(2),
            "queued move"
        )
    });
}
