//! Pinned host memory for the moves of queued launches, kept by the session and reused from
//! launch to launch: a loop that moves the same halo or all-gather every step pins its memory
//! once (pinning costs far more than the copy) and copies at link speed rather than through
//! the driver's pageable path.

use std::sync::Mutex;

use crate::engine::worker::Staging;

/// Staged bytes beyond which memory given back is unpinned rather than kept.
const KEEP_BYTES: usize = 1 << 30;

/// A piece of staging lent to one move: the session device whose context it was made in.
pub(crate) struct Lent {
    pub(in crate::engine) device: usize,
    pub(in crate::engine) staging: Staging,
}

/// The session's idle pinned staging.
#[derive(Default)]
pub(crate) struct Pool {
    idle: Mutex<Vec<Lent>>,
}

/// Idle staging each device starts with: enough for the halo rows of the first queued launches
/// (one per move a launch makes out of a device, two launches in flight). Pinned when they
/// needed it, each took 2.4-2.5 ms on an H100 while both GPUs sat idle (Jacobi's first queued
/// sweep staged its two 64 KiB rows in 5 ms); beside the session's build, it costs nothing.
const FIRST: usize = 4;
const FIRST_BYTES: usize = 1 << 20;

/// The first staging of a device (see [`FIRST`]), mapped on `queue`.
pub(super) fn first_staging(
    queue: &opencl3::command_queue::CommandQueue,
    context: &opencl3::context::Context,
) -> Vec<Staging> {
    (0..FIRST).map(|_| Staging::new(queue, context, FIRST_BYTES)).collect()
}

impl Pool {
    /// At least `len` bytes of staging made in session device `device`'s context: the
    /// smallest idle one that fits, else a new one (rounded up to a power of two so that a
    /// loop's moves find it again).
    pub(crate) fn take(&self, devices: &super::Devices, device: usize, len: usize) -> Lent {
        if let Some(lent) = self.take_idle(device, len) {
            return lent;
        }
        let d = &devices.list[device];
        let len = len.max(1).next_power_of_two();
        Lent { device, staging: Staging::new(&d.transfer, &d.device.shared.context, len) }
    }

    /// The smallest idle staging of session device `device` that holds `len` bytes, without
    /// making a new one.
    pub(crate) fn take_idle(&self, device: usize, len: usize) -> Option<Lent> {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        let fits = idle
            .iter()
            .enumerate()
            .filter(|(_, l)| l.device == device && l.staging.len() >= len)
            .min_by_key(|(_, l)| l.staging.len())
            .map(|(i, _)| i)?;
        Some(idle.swap_remove(fits))
    }

    /// Staging back from a launch that has ended (nothing reads or writes it any more); the
    /// oldest is unpinned past `KEEP_BYTES`.
    pub(crate) fn give_back(&self, devices: &super::Devices, lent: Vec<Lent>) {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        idle.extend(lent);
        while idle.iter().map(|l| l.staging.len()).sum::<usize>() > KEEP_BYTES {
            let mut old = idle.remove(0);
            old.staging.unmap(&devices.list[old.device].transfer);
        }
    }

    /// Unpin everything (the session's end, nothing in flight).
    pub(crate) fn release(&self, devices: &super::Devices) {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        for mut l in idle.drain(..) {
            l.staging.unmap(&devices.list[l.device].transfer);
        }
    }

    /// Leave everything pinned, never touched again (a device thread may still be in the
    /// driver, see `Session`'s drop).
    pub(crate) fn abandon(&self) {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        std::mem::forget(std::mem::take(&mut *idle));
    }
}
