//! Large moves between the host and a session's GPU, streamed in slot-sized pieces through a
//! pinned ring of two slots that the device keeps for the session: one piece's host copy (on
//! several threads) overlaps the other's DMA. Without it a first launch wrote its inputs from
//! pageable memory, one blocking write per package: Black-Scholes' first step over 2^26 options
//! on two H200s spent about 100 ms uploading 768 MiB (under 8 GB/s), two hundred times its
//! kernels. The rings are pinned while the session's program builds, as a program's own are
//! (pinning fresh pages runs near 1.5 GB/s), for the devices `HETDSL_STAGE_AT_BUILD` names
//! (GPUs unless set).

use std::collections::VecDeque;
use std::ops::Range;
use std::ptr;
use std::sync::{Mutex, MutexGuard, TryLockError};

use opencl3::command_queue::CommandQueue;
use opencl3::error_codes::ClError;
use opencl3::event::Event;
use opencl3::memory::{Buffer as ClBuffer, ClMem};
use opencl3::types::CL_NON_BLOCKING;

use super::Devices;
use crate::engine::program::ProgramDevice;
use crate::engine::worker::{self, pieces, slot_bytes, Ring, Staging, SLOTS};

/// A device's pinned memory made beside the session's build: its ring, and the first staging
/// of its queued launches' moves.
pub(super) type Pinned = (Ring, Vec<Staging>);

/// Run `build` while a ring, and the first staging of the queued launches' moves (see
/// `pinned::Pool`), are pinned for each device of `devices` that stages at build, on a thread
/// per device, with that device's queue of `queues` (the queue that unmaps them later).
pub(super) fn pinned_beside<T>(
    devices: &[ProgramDevice],
    queues: &[CommandQueue],
    build: impl FnOnce() -> T,
) -> (T, Vec<Option<Pinned>>) {
    let wanted: Vec<bool> = devices.iter().map(|d| worker::stage_wanted(&d.info)).collect();
    let make = |i: usize| {
        let context = &devices[i].shared.context;
        let ring = Ring::new(&queues[i], context, slot_bytes());
        Some((ring, super::pinned::first_staging(&queues[i], context)))
    };
    worker::beside_build(&wanted, make, build)
}

/// Unmap every device's ring (the session's end, nothing in flight), or where a device thread
/// may still be out in a driver (`joined` false), leave them pinned, never touched again.
pub(super) fn release(devices: &Devices, joined: bool) {
    for d in &devices.list {
        // A ring in use by a thread that never came back is not ours to unmap.
        match try_lock(&d.ring).and_then(|mut g| g.take()) {
            Some(r) if joined => r.unmap(&d.transfer),
            Some(r) => std::mem::forget(r),
            None => {}
        }
    }
}

/// The ring of a device if no other thread is using it (a read of the host image must not wait
/// for a device thread that may be waiting for that image's lock).
pub(crate) fn try_lock(ring: &Mutex<Option<Ring>>) -> Option<MutexGuard<'_, Option<Ring>>> {
    match ring.try_lock() {
        Ok(g) => Some(g),
        Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
        Err(TryLockError::WouldBlock) => None,
    }
}

/// Write `len` bytes into `mem` from byte `offset`, a slot at a time: `fill(range, slot)` puts
/// bytes `range` (of the `len`) into the slot, then the device writes the slot while the next
/// one fills. Returns once every write has ended, with the number of pieces.
pub(crate) fn write(
    ring: &mut Ring,
    queue: &CommandQueue,
    mem: &ClBuffer<u8>,
    offset: usize,
    len: usize,
    mut fill: impl FnMut(Range<usize>, &mut [u8]) -> Result<(), String>,
) -> Result<usize, String> {
    let mut count = 0;
    let outcome = (|| {
        for piece in pieces(0..len, ring.slot_len()) {
            let k = ring.take().map_err(|e| format!("a staging slot's last write failed: {e}"))?;
            let stage = &mut ring.slot(k)[..piece.len()];
            fill(piece.clone(), stage)?;
            // SAFETY: `stage` is slot `k` of the ring, not handed out again before this write's
            // event (held below) has ended; the caller keeps `offset + len` within `mem`.
            let ev = unsafe {
                opencl3::command_queue::enqueue_write_buffer(
                    queue.get(),
                    mem.get(),
                    CL_NON_BLOCKING,
                    offset + piece.start,
                    piece.len(),
                    stage.as_ptr().cast(),
                    0,
                    ptr::null(),
                )
            }
            .map_err(|e| format!("a staged write failed: {}", ClError(e)))?;
            let ev = Event::new(ev);
            queue.flush().map_err(|e| format!("flush failed: {e}"))?;
            ring.hold(k, &ev).map_err(|e| format!("clRetainEvent failed: {e}"))?;
            count += 1;
        }
        Ok(())
    })();
    // Every write ends before the slots are reused or the caller's data changes, failed or not.
    let settled = ring.settle().map_err(|e| format!("a staged write failed: {e}"));
    outcome.and(settled).map(|()| count)
}

/// Read `dst.len()` bytes of `mem` from byte `offset` into `dst`, a slot at a time: each piece
/// is copied out of its slot while the device reads the next into the other. Returns once
/// every byte is in, with the number of pieces.
pub(crate) fn read(
    ring: &mut Ring,
    queue: &CommandQueue,
    mem: &ClBuffer<u8>,
    offset: usize,
    dst: &mut [u8],
) -> Result<usize, ClError> {
    ring.settle()?;
    let mut flight: VecDeque<(usize, Range<usize>, Event)> = VecDeque::new();
    let mut count = 0;
    let outcome = (|| {
        for piece in pieces(0..dst.len(), ring.slot_len()) {
            if flight.len() == SLOTS {
                land(ring, flight.pop_front(), dst)?;
            }
            // Free: its last read was landed above (reads are not held in the ring).
            let k = ring.take()?;
            let stage = &mut ring.slot(k)[..piece.len()];
            // SAFETY: `stage` is slot `k`, not used again before this read's event is waited
            // for (in `land`, or below on failure); the caller keeps the range within `mem`.
            let ev = unsafe {
                opencl3::command_queue::enqueue_read_buffer(
                    queue.get(),
                    mem.get(),
                    CL_NON_BLOCKING,
                    offset + piece.start,
                    piece.len(),
                    stage.as_mut_ptr().cast(),
                    0,
                    ptr::null(),
                )
            }?;
            flight.push_back((k, piece, Event::new(ev)));
            queue.flush()?;
            count += 1;
        }
        while !flight.is_empty() {
            land(ring, flight.pop_front(), dst)?;
        }
        Ok(count)
    })();
    // A failed read leaves none in flight into the slots.
    for (_, _, ev) in flight {
        let _ = ev.wait();
    }
    outcome
}

/// Wait for a piece read into its slot, and copy it out.
fn land(
    ring: &mut Ring,
    piece: Option<(usize, Range<usize>, Event)>,
    dst: &mut [u8],
) -> Result<(), ClError> {
    let Some((k, range, ev)) = piece else { return Ok(()) };
    ev.wait()?;
    let len = range.len();
    crate::engine::copy::copy(&mut dst[range], &ring.slot(k)[..len]);
    Ok(())
}

/// Say that a move went through a device's ring (`direction`: "from host", "from device",
/// "to host"), for tests and traces.
pub(crate) fn note(device: usize, direction: &str, bytes: usize, count: usize) {
    // A subscriber is foreign code: its panic loses the event, not the move.
    let _ = std::panic::catch_unwind(|| {
        tracing::debug!(device, direction, bytes, pieces = count, "session move through ring")
    });
}
