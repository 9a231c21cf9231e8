//! A device's host staging for its packages' transfers: a few pinned slots of fixed size per
//! direction, taken in turn, whatever the buffers' sizes.
//!
//! Pinned memory is slow to make: the first time a process touches fresh pages it pays for
//! each of them (about 1.5 GB/s measured for `CL_MEM_ALLOC_HOST_PTR` on an H200 host, no faster
//! on several threads). Staging the size of every sliced buffer made a first call wait for its
//! buffers' sizes at that rate before its first package (Mandelbrot's 1 GiB output: about
//! 0.4 s), and held as much pinned memory as the caller's data. A ring's cost is bounded by
//! its slots, and it is kept with the device between runs like its buffers.

use std::ops::Range;

use opencl3::command_queue::CommandQueue;
use opencl3::context::Context;
use opencl3::event::Event;

use super::buffers::Staging;

/// Bytes per slot unless `HETDSL_STAGING_SLOT_MIB` says otherwise: large enough that a
/// transfer's fixed cost is small and a slot's host copy is split across the copy pool, small
/// enough that a ring costs little to pin. saxpy over 2^28 floats on an H200, repeated calls:
/// 16 MiB slots 142-154 ms, 32 MiB 97-113 ms, 64 MiB 105-135 ms (staging the size of every
/// buffer: 115-139 ms). With the copy pool's 16 threads on an H100 host, 32 MiB slots ran it
/// at 33-45 GB/s end to end, 64 MiB at 34-42.
const SLOT: usize = 32 << 20;

/// Slots per direction: one slot's host copy overlaps the other's transfer.
pub(in crate::engine) const SLOTS: usize = 2;

/// The variable that sets the slot size in MiB, and the largest it takes (4 GiB a slot: a
/// larger figure is a typo, not a slot size). The build refuses any other value.
pub(in crate::engine) const SLOT_VARIABLE: &str = "HETDSL_STAGING_SLOT_MIB";
pub(in crate::engine) const MAX_SLOT_MIB: u64 = 4096;

/// The slot size: [`SLOT`], or [`SLOT_VARIABLE`] where set (to measure another size on a given
/// machine). Read once.
pub(in crate::engine) fn slot_bytes() -> usize {
    static BYTES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *BYTES.get_or_init(|| {
        let asked = std::env::var(SLOT_VARIABLE).ok().and_then(|v| v.parse().ok());
        asked.filter(|&m: &u64| m > 0).map_or(SLOT, |m| (m.min(MAX_SLOT_MIB) << 20) as usize)
    })
}

/// `range` in consecutive pieces of at most `slot` bytes, each staged through one slot.
pub(in crate::engine) fn pieces(
    range: Range<usize>,
    slot: usize,
) -> impl Iterator<Item = Range<usize>> {
    let end = range.end;
    range.step_by(slot.max(1)).map(move |at| at..at.saturating_add(slot).min(end))
}

/// A device's staging slots for one direction.
pub(in crate::engine) struct Ring {
    staging: Staging,
    slot: usize,
    /// The last command that used each slot: its bytes may change once that has completed.
    busy: Vec<Option<Event>>,
    next: usize,
}

impl Ring {
    /// A ring whose slots hold `slot` bytes each.
    pub(in crate::engine) fn new(queue: &CommandQueue, context: &Context, slot: usize) -> Ring {
        let slot = slot.max(1);
        Ring {
            staging: Staging::new(queue, context, slot * SLOTS),
            slot,
            busy: (0..SLOTS).map(|_| None).collect(),
            next: 0,
        }
    }

    /// Bytes per slot.
    pub(in crate::engine) fn slot_len(&self) -> usize {
        self.slot
    }

    /// The next slot in turn, once the last command that used it has completed.
    pub(in crate::engine) fn take(&mut self) -> Result<usize, opencl3::error_codes::ClError> {
        let k = self.next;
        self.next = (k + 1) % SLOTS;
        if let Some(ev) = self.busy[k].take() {
            ev.wait()?;
        }
        Ok(k)
    }

    /// Slot `k`'s bytes. Nothing may be in flight on it (see [`Ring::take`]).
    pub(in crate::engine) fn slot(&mut self, k: usize) -> &mut [u8] {
        let slot = self.slot;
        &mut self.staging.bytes()[k * slot..(k + 1) * slot]
    }

    /// `ev` uses slot `k`: the slot is not handed out again before it completes.
    pub(in crate::engine) fn hold(
        &mut self,
        k: usize,
        ev: &Event,
    ) -> Result<(), opencl3::error_codes::ClError> {
        // SAFETY: `ev` is a live event; the retained reference is released by the new `Event`.
        unsafe { opencl3::event::retain_event(ev.get()) }.map_err(opencl3::error_codes::ClError)?;
        self.busy[k] = Some(Event::new(ev.get()));
        Ok(())
    }

    /// Every slot free: its last command waited for.
    pub(in crate::engine) fn settle(&mut self) -> Result<(), opencl3::error_codes::ClError> {
        for ev in self.busy.iter_mut().filter_map(Option::take) {
            ev.wait()?;
        }
        self.next = 0;
        Ok(())
    }

    /// Unmap the slots, with the queue that mapped them, and release them.
    pub(in crate::engine) fn unmap(mut self, queue: &CommandQueue) {
        self.busy.clear();
        self.staging.unmap(queue);
    }
}

/// A device's two rings.
#[derive(Default)]
pub(super) struct Rings {
    /// Packages' sliced inputs and large whole inputs, host to device.
    pub(super) input: Option<Ring>,
    /// Packages' sliced outputs, device to host; made by [`Rings::make_output`].
    pub(super) output: Option<Ring>,
    /// The slot size the output ring is to have, while it is not made yet.
    output_wanted: Option<usize>,
    /// How many of the two were kept from the last run (or made while the program built).
    pub(super) reused: usize,
}

impl Rings {
    /// Rings for slots of `input` and `output` bytes (`None`: that direction stages nothing),
    /// reusing `kept` where its slots are at least as large and freeing the rest. A new output
    /// ring is only noted: it is made once the first package's kernel is queued, so that its
    /// pinning overlaps that kernel rather than delay it.
    pub(super) fn fit(
        mut kept: Rings,
        input: Option<usize>,
        output: Option<usize>,
        queue: &CommandQueue,
        context: &Context,
    ) -> Rings {
        let keep = |old: Option<Ring>, want: Option<usize>| match (old, want) {
            (Some(r), Some(n)) if r.slot >= n => Some(r),
            (old, _) => {
                if let Some(r) = old {
                    r.unmap(queue);
                }
                None
            }
        };
        let kept_input = keep(kept.input.take(), input);
        let output_ring = keep(kept.output.take(), output);
        let reused = usize::from(kept_input.is_some()) + usize::from(output_ring.is_some());
        let input = kept_input.or_else(|| input.map(|n| Ring::new(queue, context, n)));
        let output_wanted = if output_ring.is_some() { None } else { output };
        Rings { input, output: output_ring, output_wanted, reused }
    }

    /// Make the output ring if it is wanted and not made yet.
    pub(super) fn make_output(&mut self, queue: &CommandQueue, context: &Context) {
        if let Some(n) = self.output_wanted.take() {
            self.output = Some(Ring::new(queue, context, n));
        }
    }

    /// Unmap and release both, with the queue that mapped them.
    pub(super) fn unmap(&mut self, queue: &CommandQueue) {
        for r in [self.input.take(), self.output.take()].into_iter().flatten() {
            r.unmap(queue);
        }
    }
}

/// The slot size for transfers of at most `largest` bytes: the ring's, or less where the
/// slots together would hold more than the largest transfer (Binomial's 32 MiB output: two
/// slots of 16 MiB, half the pinning), rounded up to 64 KiB so that a slightly larger next
/// run reuses them.
pub(super) fn slot_for(largest: usize) -> usize {
    let share = largest.div_ceil(SLOTS);
    slot_bytes().min(share.div_ceil(64 << 10).max(1) * (64 << 10))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_hold_the_largest_transfer_and_no_more_than_the_ring() {
        if std::env::var_os(SLOT_VARIABLE).is_some() {
            eprintln!(
                "SKIPPED: HETDSL_STAGING_SLOT_MIB is set, so the slot size is not the default"
            );
            return;
        }
        assert_eq!(slot_for(32 << 20), 16 << 20);
        assert_eq!(slot_for(1 << 30), SLOT);
        assert_eq!(slot_for(1), 64 << 10);
        assert_eq!(slot_for((100 << 10) + 1), 64 << 10);
        assert!(slot_for(3 << 20) * SLOTS >= 3 << 20);
    }

    #[test]
    fn pieces_tile_the_range_in_slots() {
        let p: Vec<_> = pieces(10..35, 10).collect();
        assert_eq!(p, [10..20, 20..30, 30..35]);
        assert_eq!(pieces(5..5, 10).count(), 0);
        assert_eq!(pieces(0..7, usize::MAX).collect::<Vec<_>>(), vec![0..7usize]);
    }
}
