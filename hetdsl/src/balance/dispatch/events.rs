//! The dispatcher's decisions as `tracing` events, for engine and simulator alike: every
//! package handed out (by the balancer, again after a fault, or as a back-up), completed and
//! merged, every device lost, every device the watchdog declares hung, every run stopped. The
//! fields are `device`, `offset` and `len` (work-groups) and `seconds` (the run's clock: host
//! seconds on the devices, simulated seconds in the simulator). Without a subscriber each event
//! is one check of a global level, nothing is formatted.
//!
//! Each event is emitted through [`guarded`]: a subscriber is foreign code that may panic (even
//! tracing-subscriber's formatter does, printing its write error to a closed stderr), and a
//! panic unwinding out of here would leave the dispatcher mid-decision under the run's lock.

use std::panic::{catch_unwind, AssertUnwindSafe};

use tracing::{debug, error, info, warn};

use super::Origin;
use crate::work::Package;

/// Runs `emit`; a panic in it loses the event (the panic hook has printed it) and goes no
/// further. Nothing of the dispatcher is borrowed by `emit`, so nothing is seen half-changed.
fn guarded(emit: impl FnOnce()) {
    let _ = catch_unwind(AssertUnwindSafe(emit));
}

pub(super) fn handed_out(device: usize, seconds: f64, p: Package, origin: Origin) {
    let (offset, len) = (p.offset, p.len);
    guarded(|| match origin {
        Origin::Balancer => debug!(device, offset, len, seconds, "package handed out"),
        Origin::Retry => info!(device, offset, len, seconds, "package handed out again (retry)"),
        Origin::Backup { of } => {
            info!(device, offset, len, seconds, backup_of = of, "back-up of a straggler handed out")
        }
    })
}

/// A kernel finished; `kept`: its output is the one merged (the first copy to finish).
pub(super) fn completed(device: usize, seconds: f64, p: Package, kernel: f64, kept: bool) {
    let (offset, len) = (p.offset, p.len);
    guarded(|| {
        debug!(device, offset, len, seconds, kernel_seconds = kernel, kept, "package completed")
    });
}

pub(super) fn merged(device: usize, seconds: f64, p: Package) {
    guarded(|| debug!(device, offset = p.offset, len = p.len, seconds, "package merged"));
}

pub(super) fn lost(device: usize, seconds: f64, reason: &str) {
    guarded(|| {
        warn!(device, seconds, reason, "device lost: its unmerged packages go back to the pool")
    });
}

pub(super) fn hung(device: usize, p: Package, elapsed: f64, limit: f64) {
    let (offset, len) = (p.offset, p.len);
    guarded(|| warn!(device, offset, len, seconds = elapsed, limit, "watchdog: device hung"));
}

pub(super) fn stopped(reason: &str) {
    guarded(|| error!(reason, "run stopped"));
}
