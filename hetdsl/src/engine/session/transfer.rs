//! Moves between the host and the devices of a session, each blocking and counted: the few
//! OpenCL calls the rest of the session goes through, and the two steps built on them — making
//! a range fresh on a device before a package runs ([`ensure`]), and bringing every buffer's
//! host image up to date (the mirror's [`sync_all`]).

use std::ops::Range;
use std::ptr;
use std::sync::Arc;

use opencl3::command_queue::CommandQueue;
use opencl3::event::Event;
use opencl3::memory::{Buffer as ClBuffer, ClMem};
use opencl3::types::CL_BLOCKING;

use super::buffer::BufferCore;
use super::residency::Loc;
use super::streamed;
use crate::engine::worker::Staging;
use crate::error::{ClError, Result};
use crate::report::{BufferMoved, Moved};

/// Read `dst.len()` bytes of `mem` from byte `offset`, waiting for them.
pub(crate) fn read(
    queue: &CommandQueue,
    mem: &ClBuffer<u8>,
    offset: usize,
    dst: &mut [u8],
) -> std::result::Result<(), ClError> {
    // SAFETY: a blocking read: `dst` is alive and exclusively borrowed until the call returns,
    // when the bytes are in; the caller keeps `offset + dst.len()` within the buffer.
    let ev = unsafe {
        opencl3::command_queue::enqueue_read_buffer(
            queue.get(),
            mem.get(),
            CL_BLOCKING,
            offset,
            dst.len(),
            dst.as_mut_ptr().cast(),
            0,
            ptr::null(),
        )
    }?;
    drop(Event::new(ev));
    Ok(())
}

/// Write `src` into `mem` at byte `offset`, waiting until the driver has it.
pub(crate) fn write(
    queue: &CommandQueue,
    mem: &ClBuffer<u8>,
    offset: usize,
    src: &[u8],
) -> std::result::Result<(), ClError> {
    // SAFETY: a blocking write: `src` is alive until the call returns, when the driver no
    // longer needs it; the caller keeps `offset + src.len()` within the buffer.
    let ev = unsafe {
        opencl3::command_queue::enqueue_write_buffer(
            queue.get(),
            mem.get(),
            CL_BLOCKING,
            offset,
            src.len(),
            src.as_ptr().cast(),
            0,
            ptr::null(),
        )
    }?;
    drop(Event::new(ev));
    Ok(())
}

/// Why a range could not be made fresh on a device.
pub(crate) enum EnsureError {
    /// The device's own OpenCL call failed: the device leaves the run.
    Device(String),
    /// The range is fresh nowhere usable: the run fails with this error.
    Lost(crate::error::Error),
}

/// Everything [`ensure`] needs from the device that receives.
pub(crate) struct Receiver<'a> {
    pub(crate) slot: usize,
    pub(crate) queue: &'a CommandQueue,
    pub(crate) context: &'a opencl3::context::Context,
    /// Pinned host memory the device's moves go through, grown when a move needs more.
    pub(crate) staging: &'a mut Option<Staging>,
}

impl Receiver<'_> {
    /// Whether its staging holds `len` bytes already.
    fn fits(&self, len: usize) -> bool {
        self.staging.as_ref().is_some_and(|s| s.len() >= len)
    }

    /// `len` bytes of staging.
    fn stage(&mut self, len: usize) -> &mut [u8] {
        if !self.fits(len) {
            if let Some(mut old) = self.staging.take() {
                old.unmap(self.queue);
            }
            // Grown to the next power of two, so a series of growing moves allocates rarely.
            *self.staging = Some(Staging::new(self.queue, self.context, len.next_power_of_two()));
        }
        match self.staging.as_mut() {
            Some(s) => &mut s.bytes()[..len],
            None => unreachable!("staging was just made"),
        }
    }
}

/// Make elements `range` of `core` fresh on the receiving device: the parts it lacks come from
/// the host image where fresh there, else from a usable device through host staging. Returns
/// the bytes moved; the residency is updated only through `commit` (the run's gate).
pub(crate) fn ensure(
    core: &BufferCore,
    to: &mut Receiver<'_>,
    range: Range<u64>,
    usable: impl Fn(usize) -> bool,
    commit: impl FnOnce(&mut dyn FnMut()) -> bool,
) -> std::result::Result<Moved, EnsureError> {
    // The windows are taken with the plan: a source that moves its window later still holds
    // these ranges in the memory taken here (inputs are not written during a launch).
    let (moves, windows) = {
        let st = core.lock();
        let moves = st.res.plan_moves(to.slot, range, &usable).map_err(|gone| {
            let why = "needed by a launch, fresh on no working device";
            EnsureError::Lost(core.lost(&st.res, &gone, &usable, why))
        })?;
        (moves, st.mems.clone())
    };
    let mine = windows[to.slot].clone();
    let mut moved = Moved::default();
    if moves.is_empty() {
        return Ok(moved);
    }
    let Some(mine) = mine else {
        return Err(EnsureError::Device("no device memory for a buffer it needs".into()));
    };
    let elem = core.elem;
    for m in &moves {
        let bytes = m.range.start as usize * elem..m.range.end as usize * elem;
        let queue = to.queue;
        let mut ring = core.devices.list[to.slot].ring.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(ring) = ring.as_mut() {
            moved += through_ring(core, &windows, (to.slot, &mine), m, queue, ring)?;
            continue;
        }
        drop(ring);
        // Without pinned staging that fits, from the host image through the driver: pinning
        // fresh memory costs more than a one-time move (a re-cut taking back a CPU's share).
        if m.from == Loc::Host && !to.fits(bytes.len()) {
            let st = core.lock();
            write(queue, &mine.mem, mine.at(m.range.start, elem), &st.host[bytes.clone()])
                .map_err(|e| EnsureError::Device(format!("write of an input: {e}")))?;
            moved.host_to_device += bytes.len() as u64;
            continue;
        }
        let stage = to.stage(bytes.len());
        match m.from {
            Loc::Host => {
                crate::engine::copy::copy(stage, &core.lock().host[bytes.clone()]);
                moved.host_to_device += bytes.len() as u64;
            }
            Loc::Device(s) => {
                let src = windows[s].as_ref();
                let src =
                    src.ok_or_else(|| EnsureError::Device("a source without memory".into()))?;
                read(&core.devices.list[s].transfer, &src.mem, src.at(m.range.start, elem), stage)
                    .map_err(|e| EnsureError::Device(format!("read from device {s}: {e}")))?;
                moved.device_to_device += bytes.len() as u64;
            }
        }
        write(queue, &mine.mem, mine.at(m.range.start, elem), stage)
            .map_err(|e| EnsureError::Device(format!("write of an input: {e}")))?;
    }
    let slot = to.slot;
    let mut mark = || {
        let mut st = core.lock();
        for m in &moves {
            st.res.copied(Loc::Device(slot), m.range.clone());
        }
    };
    commit(&mut mark);
    Ok(moved)
}

/// Move `m` into `mine` on the receiving device `slot` (queue `queue`) through that device's ring,
/// a slot at a time: from the host image, or read from the device holding it. The buffer's
/// lock is taken per piece, after the ring's (see `BufferCore::fetch` for the other order).
fn through_ring(
    core: &BufferCore,
    windows: &[Option<super::buffer::Window>],
    (slot, mine): (usize, &super::buffer::Window),
    m: &super::residency::Move,
    queue: &CommandQueue,
    ring: &mut crate::engine::worker::Ring,
) -> std::result::Result<Moved, EnsureError> {
    let elem = core.elem;
    let (first, len) =
        (m.range.start as usize * elem, (m.range.end - m.range.start) as usize * elem);
    let mut moved = Moved::default();
    let source = match m.from {
        Loc::Host => {
            moved.host_to_device = len as u64;
            None
        }
        Loc::Device(s) => {
            let src = windows[s].as_ref();
            let src = src.ok_or_else(|| EnsureError::Device("a source without memory".into()))?;
            moved.device_to_device = len as u64;
            Some((s, src, src.at(m.range.start, elem)))
        }
    };
    let fill = |piece: Range<usize>, stage: &mut [u8]| match source {
        None => {
            let at = first + piece.start..first + piece.end;
            crate::engine::copy::copy(stage, &core.lock().host[at]);
            Ok(())
        }
        Some((s, src, at)) => {
            read(&core.devices.list[s].transfer, &src.mem, at + piece.start, stage)
                .map_err(|e| format!("read from device {s}: {e}"))
        }
    };
    let at = mine.at(m.range.start, elem);
    let pieces = streamed::write(ring, queue, &mine.mem, at, len, fill)
        .map_err(|e| EnsureError::Device(format!("write of an input: {e}")))?;
    let from = if source.is_some() { "from device" } else { "from host" };
    streamed::note(slot, from, len, pieces);
    Ok(moved)
}

/// Bring every buffer's host image up to date (the mirror's checkpoint). Returns each buffer's
/// bytes moved; a range fresh on no working device is an error naming it.
pub(crate) fn sync_all(buffers: &[Arc<BufferCore>]) -> Result<Vec<BufferMoved>> {
    let mut out = Vec::new();
    for b in buffers {
        let mut moved = Moved::default();
        b.fetch(0..b.len as u64, &mut moved)?;
        if moved.total() > 0 {
            out.push(BufferMoved { buffer: b.index, arg: None, moved });
        }
    }
    Ok(out)
}
