//! Guard point 13: a package queued behind the running one ([`Balancer::next_ahead`]), so that
//! a GPU goes from one kernel to the next without waiting for the host.
//!
//! [`Balancer::next_ahead`]: crate::balance::Balancer::next_ahead

use super::{Running, Sigmoid};
use crate::balance::{Next, Package};

impl Sigmoid {
    /// The package `device` would be given when its running one ends, planned now from the
    /// instant that one is expected to end, or `None`. Only the guarded form, only a device
    /// of the faster class whose speed is averaged over a full history (a probe, or a package
    /// sized from one measurement, must be measured before the next is sized), and only while
    /// the work left after it would keep every device busy for twice as long as it keeps this
    /// one: near the end the horizon sizes each package from the latest speeds, and a package
    /// committed early there is work a device idle sooner could have shared.
    pub(super) fn ahead(&mut self, device: usize, now: f64) -> Next {
        let Some((size, free_at)) = self.ahead_size(device, now) else { return Next::Wait };
        let len = size.floor() as u64;
        let Some(package) = self.left.take(len) else { return Next::Wait };
        self.queued[device] = Some(Running { package, since: free_at });
        Next::Run(package)
    }

    /// The queued package's size, and when it should start.
    fn ahead_size(&self, device: usize, now: f64) -> Option<(f64, f64)> {
        let eligible = self.guarded
            && self.alive.get(device).copied().unwrap_or(false)
            && !self.slow_class[device]
            && !self.irregular
            && self.running[device].is_some()
            && self.queued[device].is_none()
            && self.speeds.recent(device).0 >= self.params.history;
        if !eligible || self.left.is_empty() {
            return None;
        }
        let free_at = self.free_at(device, now);
        let size = self.guarded_size(device, free_at)?;
        if !size.is_finite() || size < 1.0 {
            return None;
        }
        let speed = self.speeds.speed(device);
        let total: f64 = self.live().map(|d| self.speeds.speed(d)).sum();
        let after = self.left.left() as f64 - size.floor();
        (after / total >= 2.0 * size.floor() / speed).then_some((size, free_at))
    }

    /// When `device`'s running package is expected to end, at its planning speed (now, if it
    /// is overdue or nothing runs).
    fn free_at(&self, device: usize, now: f64) -> f64 {
        let speed = self.speeds.speed(device);
        self.running[device].map_or(now, |r| (r.since + r.package.len as f64 / speed).max(now))
    }

    /// `done` ended on `device`: the package queued behind it runs from `at`.
    pub(super) fn promote(&mut self, device: usize, done: Package, at: f64) {
        let Some(slot) = self.running.get_mut(device) else { return };
        if slot.is_some_and(|r| r.package == done) {
            *slot = self.queued[device].take().map(|q| Running { since: at, ..q });
        }
    }
}
