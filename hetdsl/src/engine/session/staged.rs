//! The moves of a queued launch: the input ranges a device lacks, made fresh there before its
//! kernels. A range fresh on another device is read into host memory once the last kernel
//! queued there has ended (the host waits for that one kernel, then reads; OpenCL lets a
//! command wait for another device's event instead, but PoCL was seen to deadlock inside
//! `clWaitForEvents` on such a chain between its two CPU devices); a range fresh only on the
//! host is copied out of the host image, so that a later host write cannot change it in
//! flight. The receiving device writes each range on its own in-order queue before its kernels,
//! and the host does not wait for those writes.

use std::ops::Range;
use std::ptr;
use std::sync::Arc;

use opencl3::error_codes::ClError;
use opencl3::event::Event;
use opencl3::memory::ClMem;
use opencl3::types::{cl_event, CL_NON_BLOCKING};

use super::buffer::BufferCore;
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
/// queued launch keeps until it is drained) into elements `range` of `core` on its device.
pub(crate) struct Write {
    pub(super) core: Arc<BufferCore>,
    pub(super) range: Range<u64>,
    pub(super) src: *const u8,
    pub(super) len: usize,
}

// SAFETY: `src` points into a staging vector owned by the queued launch until it is drained,
// which waits for the write.
unsafe impl Send for Write {}

/// The moves' host memory, kept until the launch is drained (the writes read it).
pub(super) type InFlight = Vec<Vec<u8>>;

/// The moves staged: per launch position, the writes its device enqueues; the bytes per
/// argument.
pub(super) struct Started {
    pub(super) flight: InFlight,
    pub(super) writes: Vec<Vec<Write>>,
    pub(super) moved: Vec<(usize, Moved)>,
}

/// Stage every range of `needs` in host memory: from the host image, or read from the device
/// holding it once `last(slot)`, the last kernel queued there, has ended. `Err` names the
/// session position of a device that failed to give a range.
pub(super) fn start(
    devices: &Devices,
    slots: &[usize],
    needs: Vec<Need>,
    last: impl Fn(usize) -> Option<cl_event>,
) -> std::result::Result<Started, (usize, crate::error::Error)> {
    let n = slots.len();
    let mut s = Started {
        flight: InFlight::new(),
        writes: (0..n).map(|_| Vec::new()).collect(),
        moved: Vec::new(),
    };
    for need in needs {
        let elem = need.core.elem;
        let bytes = need.range.start as usize * elem..need.range.end as usize * elem;
        let len = bytes.len();
        let mut stage = vec![0u8; len];
        let mut moved = Moved::default();
        match need.from {
            Loc::Host => {
                crate::engine::copy::copy(&mut stage, &need.core.lock().host[bytes]);
                moved.host_to_device = len as u64;
            }
            Loc::Device(from) => {
                let Some(win) = need.core.lock().mems[from].clone() else {
                    let e = crate::error::Error::Internal("a fresh range without memory".into());
                    return Err((from, e));
                };
                if let Some(ev) = last(from) {
                    opencl3::event::wait_for_events(&[ev])
                        .map_err(ClError)
                        .call("clWaitForEvents (queued move)")
                        .map_err(|e| (from, e))?;
                }
                let at = win.at(need.range.start, elem);
                transfer::read(&devices.list[from].transfer, &win.mem, at, &mut stage)
                    .call("clEnqueueReadBuffer (queued move)")
                    .map_err(|e| (from, e))?;
                moved.device_to_device = len as u64;
            }
        }
        s.writes[need.pos].push(Write {
            core: need.core,
            range: need.range,
            src: stage.as_ptr(),
            len,
        });
        s.flight.push(stage);
        s.moved.push((need.arg, moved));
    }
    Ok(s)
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
        // SAFETY: `src` holds `len` bytes kept until the launch is drained (see `Write`); the
        // window covers the range (the launch's set-up made the whole buffer).
        let ev = unsafe {
            opencl3::command_queue::enqueue_write_buffer(
                queue.get(),
                win.mem.get(),
                CL_NON_BLOCKING,
                win.at(w.range.start, w.core.elem),
                w.len,
                w.src.cast(),
                0,
                ptr::null(),
            )
        }
        .map_err(ClError)
        .call("clEnqueueWriteBuffer (queued move)")?;
        drop(Event::new(ev));
    }
    Ok(())
}
