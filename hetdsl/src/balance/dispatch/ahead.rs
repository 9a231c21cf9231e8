//! Packages queued ahead: a device running one package may have its next queued behind it, so
//! that the engine hides its launch behind the running kernel. Only the balancer's packages are
//! queued ([`Balancer::next_ahead`]); the queued copy becomes the running one in
//! [`Dispatcher::kernel_done`], and [`Dispatcher::fail`] re-runs it with the rest.

use std::ops::DerefMut;

use super::{events, Assignment, Copy, Dispatcher, Origin};
use crate::balance::{Balancer, Next};
use crate::error::Result;

/// A device measured more than this many times slower than the fastest gets no package
/// queued ahead ([`Dispatcher::ask_ahead`]).
pub const QUEUE_CLASS: f64 = 4.0;

/// A device whose last package spent less than this share of its span in the kernel gets
/// nothing queued ahead ([`Dispatcher::ask_ahead`]).
pub const QUEUE_KERNEL_SHARE: f64 = 0.5;

impl<'d, B: DerefMut<Target = dyn Balancer + 'd>> Dispatcher<B> {
    /// `device`, running one package, asks for a second to queue behind it. Only the balancer's
    /// packages are queued: re-runs and back-ups wait for an idle device, and nothing is
    /// queued while a re-run is pending (an idle device should take that first). Only on a
    /// device with a package completed, measured within [`QUEUE_CLASS`] of the fastest
    /// measured one (a queued package is never backed up before it runs, so a slow device
    /// would hold it, out of reach, until it ends), whose last package spent at least
    /// [`QUEUE_KERNEL_SHARE`] of its span in the kernel: where transfers and host copies
    /// dominate, the next package's copies only compete with this one's for the host's memory
    /// (measured on an H100, stencil3d and elementwise in pieces: 5-25 % slower queued).
    /// `None`: nothing queued; the device asks [`Dispatcher::ask`] once idle, as always.
    pub fn ask_ahead(&mut self, device: usize, at: f64) -> Result<Option<Assignment>> {
        if let Some(f) = &self.fatal {
            return Err(f.error());
        }
        let Some(d) = self.devices.get(device) else {
            return Err(self.misuse(format!("no device {device} to queue for")));
        };
        if d.lost
            || d.running.is_none()
            || d.queued.is_some()
            || d.balancer_done
            || !self.retry.is_empty()
            || self.unmerged == 0
            || !self.may_queue(device)
        {
            return Ok(None);
        }
        let Next::Run(p) = self.call("next_ahead", |b| b.next_ahead(device, at))? else {
            return Ok(None);
        };
        self.check_fresh(p)?;
        self.devices[device].queued =
            Some(Copy { package: p, since: at, twin: None, abandoned: false });
        events::handed_out(self.label(device), at, p, Origin::Balancer);
        Ok(Some(Assignment { package: p, origin: Origin::Balancer }))
    }

    /// Let [`Dispatcher::ask_ahead`] queue on any device running one package, measured or not,
    /// leaving to the balancer's [`Balancer::next_ahead`] whether to: for "devices" whose next
    /// package costs a transfer the balancer knows to hide (the ranks of a cluster, whose next
    /// range's inputs travel while they compute), the rules of [`QUEUE_CLASS`] and
    /// [`QUEUE_KERNEL_SHARE`], made for GPUs sharing a host, do not apply.
    pub fn queue_unmeasured(&mut self) {
        self.queue_unmeasured = true;
    }

    /// Whether `device` has completed a package that spent at least [`QUEUE_KERNEL_SHARE`] of
    /// its span in the kernel, and is measured within [`QUEUE_CLASS`] of the fastest device.
    fn may_queue(&self, device: usize) -> bool {
        if self.queue_unmeasured {
            return true;
        }
        let d = &self.devices[device];
        let (Some(v), Some(share)) = (d.stats.speed, d.kernel_share) else { return false };
        let fastest = self
            .devices
            .iter()
            .filter(|d| !d.lost)
            .filter_map(|d| d.stats.speed)
            .fold(0.0, f64::max);
        share >= QUEUE_KERNEL_SHARE && v * QUEUE_CLASS >= fastest
    }
}

#[cfg(test)]
mod tests;
