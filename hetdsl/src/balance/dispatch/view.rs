//! What the dispatcher's books say, for the engine's and the simulator's reports.

use std::ops::DerefMut;

use super::{DeviceStats, Dispatcher};
use crate::balance::{Balancer, Package};

impl<'d, B: DerefMut<Target = dyn Balancer + 'd>> Dispatcher<B> {
    pub fn stats(&self) -> Vec<&DeviceStats> {
        self.devices.iter().map(|d| &d.stats).collect()
    }

    pub fn device(&self, device: usize) -> &DeviceStats {
        &self.devices[device].stats
    }

    pub fn is_lost(&self, device: usize) -> bool {
        self.devices[device].lost
    }

    /// The package `device` runs and when it was handed out.
    pub fn running(&self, device: usize) -> Option<(Package, f64)> {
        self.devices[device].running.map(|c| (c.package, c.since))
    }

    /// The package queued behind the one `device` runs, if any.
    pub fn queued(&self, device: usize) -> Option<Package> {
        self.devices[device].queued.map(|c| c.package)
    }

    /// Whether `device` runs the losing copy of a package whose other copy already won.
    pub fn runs_abandoned(&self, device: usize) -> bool {
        self.devices[device].running.is_some_and(|c| c.abandoned)
    }

    /// (device lost, package, reason) for each package a lost device had not merged.
    pub fn faults(&self) -> &[(usize, Package, String)] {
        &self.faults
    }

    /// (from, to, package) of each back-up.
    pub fn backups(&self) -> &[(usize, usize, Package)] {
        &self.backups
    }
}
