//! Host threads that outlive their run, and the devices they make unusable.
//!
//! A thread still computing when its run ends (the losing copy of a backed-up package, or a
//! device stuck in its driver) is left behind, not joined: it may never return. It releases its
//! objects under the process-wide OpenCL lock when it comes back. The next run that wants its
//! device does not wait for it: the device's new thread does, and the device joins that run late
//! once the old thread is back, as a device slow to set up does. Once the old thread is out past
//! the watchdog's limit the device is quarantined, until that thread comes back.
//!
//! Reads nothing of a run but its threads' `quiet` flags.

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

/// Threads left behind by earlier runs (touched only under the OpenCL lock), and devices
/// quarantined while one of them is out past its limit (machine index, reason; a device's new
/// thread may add one).
static LEFT_BEHIND: Mutex<Vec<LeftBehind>> = Mutex::new(Vec::new());
static QUARANTINE: Mutex<Vec<(usize, String)>> = Mutex::new(Vec::new());

/// What a run does about one of its devices before starting its thread.
pub(super) enum Settled {
    /// No thread of an earlier run is out on it.
    Free,
    /// Threads of earlier runs are still out on it: the device's new thread waits for them
    /// before it sets up, and the run goes on without it meanwhile (it joins late).
    Out(Vec<Predecessor>),
    /// Left out of the run, with the reason.
    Quarantined(String),
}

/// A device's host thread of an earlier run, still out when a new run wants the device.
pub(super) struct Predecessor {
    device: usize,
    name: String,
    shared: Arc<Shared>,
    position: usize,
    deadline: Instant,
}

impl Predecessor {
    fn back(&self) -> bool {
        self.shared.quiet[self.position].load(Ordering::Acquire)
    }

    /// Waits until this thread is back (`Ok`), `give_up` says to stop (`Ok`: the caller looks
    /// at why), or its watchdog limit passes (`Err`: the device is quarantined until it is back,
    /// and the reason returned).
    pub(super) fn wait(&self, give_up: impl Fn() -> bool) -> Result<(), String> {
        while !self.back() && !give_up() {
            if Instant::now() >= self.deadline {
                let reason = quarantine_reason(self.device, &self.name);
                let mut q = QUARANTINE.lock().unwrap_or_else(|e| e.into_inner());
                if !q.iter().any(|(i, _)| *i == self.device) {
                    q.push((self.device, reason.clone()));
                }
                return Err(reason);
            }
            std::thread::sleep(Duration::from_micros(500));
        }
        Ok(())
    }
}

fn quarantine_reason(device: usize, name: &str) -> String {
    format!(
        "quarantined: device {device} ({name}) has not come back from a package of an earlier \
         run past its watchdog limit; it is left out until it does"
    )
}

/// Before a run: forget the threads left behind that have come back, lift the quarantine of a
/// device whose threads are all back, and say for each of `chosen` whether it is free, has
/// threads still out (which its new thread waits for: the caller does not), or is quarantined
/// (a thread out past its watchdog limit). A thread stuck in its driver is never joined: it may
/// never return.
pub(super) fn settle_left_behind(chosen: &[ProgramDevice]) -> Vec<Settled> {
    let mut left = LEFT_BEHIND.lock().unwrap_or_else(|e| e.into_inner());
    let mut quarantine = QUARANTINE.lock().unwrap_or_else(|e| e.into_inner());
    let back = |l: &LeftBehind| l.shared.quiet[l.position].load(Ordering::Acquire);
    left.retain(|l| !back(l));
    let now = Instant::now();
    for l in left.iter().filter(|l| now >= l.deadline) {
        if !quarantine.iter().any(|(i, _)| *i == l.device) {
            quarantine.push((l.device, quarantine_reason(l.device, &l.name)));
        }
    }
    quarantine.retain(|(i, _)| left.iter().any(|l| l.device == *i));
    chosen
        .iter()
        .map(|d| {
            let index = d.info.index;
            if let Some((_, reason)) = quarantine.iter().find(|(i, _)| *i == index) {
                return Settled::Quarantined(reason.clone());
            }
            let out: Vec<Predecessor> = left
                .iter()
                .filter(|l| l.device == index)
                .map(|l| Predecessor {
                    device: l.device,
                    name: l.name.clone(),
                    shared: l.shared.clone(),
                    position: l.position,
                    deadline: l.deadline,
                })
                .collect();
            if out.is_empty() {
                Settled::Free
            } else {
                Settled::Out(out)
            }
        })
        .collect()
}

/// The devices quarantined in this process now (machine index, reason): each has a host thread
/// out in its driver past its watchdog limit. Runs leave them out until that thread is back.
pub fn quarantined_devices() -> Vec<(usize, String)> {
    QUARANTINE.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Record a thread nobody waits for, so that later runs settle it before using its device.
pub(super) fn leave_behind(l: LeftBehind) {
    LEFT_BEHIND.lock().unwrap_or_else(|e| e.into_inner()).push(l);
}
