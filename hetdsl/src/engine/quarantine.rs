//! Host threads that outlive their run, and the devices they make unusable.
//!
//! A thread still computing when its run ends (the losing copy of a backed-up package, or a
//! device stuck in its driver) is left behind, not joined: it may never return. It releases its
//! objects under the process-wide OpenCL lock when it comes back. The next run that wants its
//! device waits for it until the watchdog would have called it hung, then quarantines the device
//! for the rest of the process.
//!
//! Touched only under the OpenCL lock; reads nothing of a run but its threads' `quiet` flags.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::program::ProgramDevice;
use super::shared::Shared;

/// A host thread of an earlier run nobody waited for, still computing when its run ended.
pub(super) struct LeftBehind {
    /// The device's index in the machine's list, and its name.
    pub(super) device: usize,
    pub(super) name: String,
    pub(super) shared: Arc<Shared>,
    pub(super) position: usize,
    /// When it is hung by the watchdog's own measure if it has not come back.
    pub(super) deadline: Instant,
}

/// Threads left behind by earlier runs, and devices quarantined for the rest of the process
/// (machine index, reason). Touched only under the OpenCL lock.
static LEFT_BEHIND: Mutex<Vec<LeftBehind>> = Mutex::new(Vec::new());
static QUARANTINE: Mutex<Vec<(usize, String)>> = Mutex::new(Vec::new());

/// Before a run: forget the threads left behind that have come back; wait for those still out
/// on a device this run uses until their deadline, and quarantine the device if they are still
/// out then. Returns each of `chosen`'s quarantine reason, if any. A thread stuck in its driver
/// is never joined: it may never return.
pub(super) fn settle_left_behind(chosen: &[ProgramDevice]) -> Vec<Option<String>> {
    let mut left = LEFT_BEHIND.lock().unwrap_or_else(|e| e.into_inner());
    let mut quarantine = QUARANTINE.lock().unwrap_or_else(|e| e.into_inner());
    let back = |l: &LeftBehind| l.shared.quiet[l.position].load(Ordering::Acquire);
    left.retain(|l| !back(l));
    for l in left.iter() {
        let used = chosen.iter().any(|d| d.info.index == l.device);
        if !used || quarantine.iter().any(|(i, _)| *i == l.device) {
            continue;
        }
        while !back(l) && Instant::now() < l.deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        if !back(l) {
            quarantine.push((
                l.device,
                format!(
                    "quarantined: device {} ({}) has not come back from a package of an earlier \
                     run past its watchdog limit; it is left out for the rest of the process",
                    l.device, l.name
                ),
            ));
        }
    }
    left.retain(|l| !back(l));
    chosen
        .iter()
        .map(|d| quarantine.iter().find(|(i, _)| *i == d.info.index).map(|(_, r)| r.clone()))
        .collect()
}

/// The devices quarantined in this process (machine index, reason): each has a host thread that
/// never came back from its driver. Later runs leave them out.
pub fn quarantined_devices() -> Vec<(usize, String)> {
    QUARANTINE.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Record a thread nobody waits for, so that later runs settle it before using its device.
pub(super) fn leave_behind(l: LeftBehind) {
    LEFT_BEHIND.lock().unwrap_or_else(|e| e.into_inner()).push(l);
}
