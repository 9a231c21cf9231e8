//! The dispatcher's decisions as `tracing` events, for engine and simulator alike: every
//! package handed out (by the balancer, again after a fault, or as a back-up), completed and
//! merged, every device lost, every device the watchdog declares hung, every run stopped. The
//! fields are `device`, `offset` and `len` (work-groups) and `seconds` (the run's clock: host
//! seconds on the devices, simulated seconds in the simulator). Without a subscriber each event
//! is one check of a global level, nothing is formatted.

use tracing::{debug, error, info, warn};

use super::Origin;
use crate::work::Package;

pub(super) fn handed_out(device: usize, seconds: f64, p: Package, origin: Origin) {
    let (offset, len) = (p.offset, p.len);
    match origin {
        Origin::Balancer => debug!(device, offset, len, seconds, "package handed out"),
        Origin::Retry => info!(device, offset, len, seconds, "package handed out again (retry)"),
        Origin::Backup { of } => {
            info!(device, offset, len, seconds, backup_of = of, "back-up of a straggler handed out")
        }
    }
}

/// A kernel finished; `kept`: its output is the one merged (the first copy to finish).
pub(super) fn completed(device: usize, seconds: f64, p: Package, kernel: f64, kept: bool) {
    let (offset, len) = (p.offset, p.len);
    debug!(device, offset, len, seconds, kernel_seconds = kernel, kept, "package completed");
}

pub(super) fn merged(device: usize, seconds: f64, p: Package) {
    debug!(device, offset = p.offset, len = p.len, seconds, "package merged");
}

pub(super) fn lost(device: usize, seconds: f64, reason: &str) {
    warn!(device, seconds, reason, "device lost: its unmerged packages go back to the pool");
}

pub(super) fn hung(device: usize, p: Package, elapsed: f64, limit: f64) {
    let (offset, len) = (p.offset, p.len);
    warn!(device, offset, len, seconds = elapsed, limit, "watchdog: device hung");
}

pub(super) fn stopped(reason: &str) {
    error!(reason, "run stopped");
}
