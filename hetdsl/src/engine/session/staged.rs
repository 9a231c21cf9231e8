//! The moves of a queued launch: the input ranges a device lacks, made fresh there before its
//! kernels. By default a range fresh on another device is read by the host once the queued
//! package that last wrote it there has ended (the host waits for that one kernel, then reads;
//! see `order`), and a range fresh
//! only on the host is copied out of the host image, so that a later host write cannot change
//! it in flight. The receiving device writes each range on its own in-order queue before its
//! kernels, and the host does not wait for those writes.
//!
//! With `HETDSL_CHAINED_MOVES=1`, a move between devices of one platform (one OpenCL context)
//! is chained on the devices instead: the source reads the range into host memory once the
//! package that wrote it has ended, the receiving device's write waits for that read's event, and
//! a later launch that writes the buffer on the source waits for it too, so the host waits for
//! nothing. It is off by default because it gave wrong results in one case (see [`chained`]),
//! and never used across platforms or on PoCL, seen to deadlock inside the driver on such a
//! cross-device chain between its two CPU devices.

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
/// queued launch keeps until it is drained) into elements `range` of `core` on its device,
/// once `after` (the chained read that fills `src`) has ended.
pub(crate) struct Write {
    pub(super) core: Arc<BufferCore>,
    pub(super) range: Range<u64>,
    pub(super) src: *const u8,
    pub(super) len: usize,
    pub(super) after: Option<cl_event>,
}

// SAFETY: `src` points into a staging vector owned by the queued launch until it is drained,
// which waits for the write; `after` is kept alive by the launch's `Started::reads` as long.
unsafe impl Send for Write {}

/// Events a device's first kernel of a queued launch waits for: earlier launches' chained
/// reads out of its memory of buffers this launch writes there.
#[derive(Default)]
pub(crate) struct After(pub(super) Vec<cl_event>);

// SAFETY: the events are kept alive by their launches' `ChainedRead`s, which are drained only
// after this launch's kernels (launches end in order).
unsafe impl Send for After {}

/// A chained read out of a device's memory, in flight until its launch is drained.
pub(super) struct ChainedRead {
    /// The session position of the device read from.
    pub(super) slot: usize,
    /// The buffer read (its index in the session).
    pub(super) buffer: usize,
    pub(super) event: Event,
}

/// The moves' host memory, kept until the launch is drained (the writes read it): pinned
/// staging from the session's pool for the host's moves, heap memory for chained reads.
#[derive(Default)]
pub(super) struct InFlight {
    pub(super) pinned: Vec<Lent>,
    heap: Vec<Vec<u8>>,
}

/// The moves staged: per launch position, the writes its device enqueues; the bytes per
/// argument; the chained reads, kept until the launch is drained.
pub(super) struct Started {
    pub(super) flight: InFlight,
    pub(super) writes: Vec<Vec<Write>>,
    pub(super) moved: Vec<(usize, Moved)>,
    pub(super) reads: Vec<ChainedRead>,
}

/// Whether a move from session device `from` to `to` is chained on the devices (see the
/// module's documentation): only with `HETDSL_CHAINED_MOVES=1`. On two H200s a Jacobi loop
/// whose second launch re-cut the first launch's split came out wrong in 4 runs of 4 with
/// chained moves (right in 6 of 6 where the second launch replayed the first's split, and in
/// 10 of 10 with the host's moves); until that is understood the host moves by default, and
/// the variable is there to reproduce it.
fn chained(devices: &Devices, from: usize, to: usize) -> bool {
    // Read once: every move of every submit asks.
    static ASKED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let asked =
        *ASKED.get_or_init(|| std::env::var("HETDSL_CHAINED_MOVES").is_ok_and(|v| v == "1"));
    let (a, b) = (&devices.list[from].device.info, &devices.list[to].device.info);
    asked && a.platform == b.platform && !a.platform.contains("Portable Computing Language")
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
        flight: InFlight::default(),
        writes: (0..n).map(|_| Vec::new()).collect(),
        moved: Vec::new(),
        reads: Vec::new(),
    };
    // (buffer, device) pairs whose `sent` this launch has started anew.
    let mut renewed = Vec::new();
    for need in needs {
        let elem = need.core.elem;
        let bytes = need.range.start as usize * elem..need.range.end as usize * elem;
        let len = bytes.len();
        let mut moved = Moved::default();
        let mut after = None;
        let src = match need.from {
            Loc::Host => {
                let mut lent = devices.pinned.take(devices, slots[need.pos], len);
                let stage = &mut lent.staging.bytes()[..len];
                crate::engine::copy::copy(stage, &need.core.lock().host[bytes]);
                moved.host_to_device = len as u64;
                let src = stage.as_ptr();
                s.flight.pinned.push(lent);
                src
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
                if chained(devices, from, slots[need.pos]) {
                    let mut stage = vec![0u8; len];
                    let queue = &devices.list[from].transfer;
                    let event = read_after(queue, &win.mem, at, &mut stage, wrote)
                        .map_err(|e| (from, e))?;
                    after = Some(event.get());
                    s.reads.push(ChainedRead { slot: from, buffer: need.core.index, event });
                    let src = stage.as_ptr();
                    s.flight.heap.push(stage);
                    src
                } else {
                    if let Some(ev) = wrote {
                        opencl3::event::wait_for_events(&[ev])
                            .map_err(ClError)
                            .call("clWaitForEvents (queued move)")
                            .map_err(|e| (from, e))?;
                    }
                    let mut lent = devices.pinned.take(devices, from, len);
                    let stage = &mut lent.staging.bytes()[..len];
                    let read = transfer::read(&devices.list[from].transfer, &win.mem, at, stage)
                        .call("clEnqueueReadBuffer (queued move)");
                    let src = stage.as_ptr();
                    s.flight.pinned.push(lent);
                    read.map_err(|e| (from, e))?;
                    src
                }
            }
        };
        s.writes[need.pos].push(Write { core: need.core, range: need.range, src, len, after });
        s.moved.push((need.arg, moved));
    }
    Ok(s)
}

/// Read `dst.len()` bytes of `mem` from byte `offset` on `queue` once `last` (a kernel of the
/// same device) has ended, without waiting; the event says when the bytes are in.
fn read_after(
    queue: &opencl3::command_queue::CommandQueue,
    mem: &opencl3::memory::Buffer<u8>,
    offset: usize,
    dst: &mut [u8],
    last: Option<cl_event>,
) -> Result<Event> {
    let wait: Vec<cl_event> = last.into_iter().collect();
    // SAFETY: `dst` is a staging vector the queued launch keeps until it is drained, which
    // waits for this read's consumers; the caller keeps `offset + dst.len()` within the buffer
    // and `last` alive for the call.
    let ev = unsafe {
        opencl3::command_queue::enqueue_read_buffer(
            queue.get(),
            mem.get(),
            CL_NON_BLOCKING,
            offset,
            dst.len(),
            dst.as_mut_ptr().cast(),
            wait.len() as u32,
            if wait.is_empty() { ptr::null() } else { wait.as_ptr() },
        )
    }
    .map_err(ClError)
    .call("clEnqueueReadBuffer (chained move)")?;
    let ev = Event::new(ev);
    // The receiving device waits for this read: it must reach the device now.
    queue.flush().call("clFlush (chained move)")?;
    Ok(ev)
}

/// Enqueue a device's writes on its queue (the thread that owns it calls this).
pub(super) fn enqueue_writes(
    queue: &opencl3::command_queue::CommandQueue,
    slot: usize,
    writes: &[Write],
) -> Result<()> {
    for w in writes {
        let Some(win) = w.core.lock().mems[slot].clone() else {
            return Err(crate::error::Error::Internal("no device memory for a queued move".into()));
        };
        // SAFETY: `src` holds `len` bytes kept until the launch is drained (see `Write`), as is
        // `after`; the window covers the range (the launch's set-up made the whole buffer).
        let wait: Vec<cl_event> = w.after.into_iter().collect();
        let ev = unsafe {
            opencl3::command_queue::enqueue_write_buffer(
                queue.get(),
                win.mem.get(),
                CL_NON_BLOCKING,
                win.at(w.range.start, w.core.elem),
                w.len,
                w.src.cast(),
                wait.len() as u32,
                if wait.is_empty() { ptr::null() } else { wait.as_ptr() },
            )
        }
        .map_err(ClError)
        .call("clEnqueueWriteBuffer (queued move)")?;
        drop(Event::new(ev));
    }
    Ok(())
}
