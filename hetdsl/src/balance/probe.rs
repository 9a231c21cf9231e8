//! Probe, then split: the skeleton shared by the balancers that measure the devices on a few
//! small packages and then hand out all remaining work in one package per device (Adaptive,
//! the min–max model, the two-point linear model). Only the probe sizes and the split rule
//! differ; they are a [`SplitRule`].
//!
//! Phases:
//! 1. every device runs its probe packages (sizes from [`SplitRule::probes`]);
//! 2. a device done with its probes while others still probe keeps busy with packages twice
//!    its last one (at most half an even share of what is left), so a slow device's probes do
//!    not idle the fast ones;
//! 3. when every live device has finished its probes, the rule splits everything left into
//!    one package per device, laid out in device order; a device still running a probe gets its
//!    share after it.
//!
//! A lost device's unstarted share goes to the next device that asks.

use super::{check_setup, Balancer, Completion, Next, Package, Remaining, Setup};
use crate::error::Result;

/// One finished package of a device.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    pub groups: u64,
    /// Device time of the package (falls back to the host span when the device gives none).
    pub kernel_seconds: f64,
    /// From hand-out to completion on the host: includes the per-package overhead.
    pub host_seconds: f64,
}

/// What the split rule sees when it runs.
#[derive(Debug)]
pub struct SplitView<'a> {
    /// Finished packages per device, oldest first.
    pub samples: &'a [Vec<Sample>],
    pub alive: &'a [bool],
    /// Per device, the package it is still running: (work-groups, seconds since it began).
    pub running: &'a [Option<(u64, f64)>],
}

/// Probe sizes and the final split of a probe-then-split balancer.
pub trait SplitRule: Send + std::fmt::Debug {
    fn name(&self) -> String;
    /// Sizes of the probe packages for a device whose occupancy bound is `min_groups`.
    fn probes(&self, min_groups: u64) -> Vec<u64>;
    /// Work-groups per device (indexed like `view.samples`, 0 for lost devices) adding up to
    /// `work`.
    fn split(&self, work: u64, view: &SplitView<'_>) -> Vec<u64>;
}

/// A balancer that probes every device, then splits the rest by `R`.
#[derive(Debug, Clone, Default)]
pub struct ProbeThenSplit<R> {
    rule: R,
    left: Remaining,
    alive: Vec<bool>,
    probes: Vec<Vec<u64>>,
    sent: Vec<usize>,
    last_len: Vec<u64>,
    samples: Vec<Vec<Sample>>,
    running: Vec<Option<(Package, f64)>>,
    /// After the split: each device's one remaining package.
    plan: Option<Vec<Option<Package>>>,
    orphans: Vec<Package>,
}

impl<R: SplitRule> ProbeThenSplit<R> {
    pub fn with_rule(rule: R) -> Self {
        ProbeThenSplit {
            rule,
            left: Remaining::default(),
            alive: Vec::new(),
            probes: Vec::new(),
            sent: Vec::new(),
            last_len: Vec::new(),
            samples: Vec::new(),
            running: Vec::new(),
            plan: None,
            orphans: Vec::new(),
        }
    }

    fn probing_done(&self) -> bool {
        (0..self.alive.len())
            .all(|d| !self.alive[d] || self.samples[d].len() >= self.probes[d].len())
    }

    /// Split what is left once every live device has been measured.
    fn maybe_split(&mut self, now: f64) {
        if self.plan.is_some() || !self.probing_done() {
            return;
        }
        let running: Vec<Option<(u64, f64)>> = self
            .running
            .iter()
            .map(|r| r.map(|(p, since)| (p.len, (now - since).max(0.0))))
            .collect();
        let view = SplitView { samples: &self.samples, alive: &self.alive, running: &running };
        let shares = self.rule.split(self.left.left(), &view);
        let mut plan = vec![None; self.alive.len()];
        for (d, share) in shares.into_iter().enumerate().take(plan.len()) {
            if share > 0 && self.alive[d] {
                plan[d] = self.left.take(share);
            }
        }
        // Whatever a rule left unassigned still gets run.
        let rest = self.left.left();
        self.orphans.extend(self.left.take(rest));
        self.plan = Some(plan);
    }
}

impl<R: SplitRule> Balancer for ProbeThenSplit<R> {
    fn name(&self) -> String {
        self.rule.name()
    }

    fn start(&mut self, setup: &Setup) -> Result<()> {
        check_setup(setup)?;
        let n = setup.devices.len();
        self.left = Remaining::new(setup.total_groups);
        self.alive = vec![true; n];
        self.probes = setup.devices.iter().map(|d| self.rule.probes(d.min_groups.max(1))).collect();
        self.sent = vec![0; n];
        self.last_len = vec![0; n];
        self.samples = vec![Vec::new(); n];
        self.running = vec![None; n];
        self.plan = None;
        self.orphans.clear();
        Ok(())
    }

    fn next(&mut self, device: usize, now: f64) -> Next {
        if !self.alive.get(device).copied().unwrap_or(false) {
            return Next::Done;
        }
        let package = if let Some(plan) = &mut self.plan {
            // A share orphaned by a later loss reaches devices already told `Done`: the
            // contract has every device asked again after a loss.
            plan[device].take().or_else(|| self.orphans.pop())
        } else {
            let len = match self.probes[device].get(self.sent[device]) {
                Some(&probe) => probe,
                None => {
                    let live = self.alive.iter().filter(|a| **a).count() as u64;
                    let ceiling = (self.left.left() / (2 * live)).max(1);
                    (2 * self.last_len[device]).min(ceiling)
                }
            };
            self.left.take(len)
        };
        match package {
            Some(p) => {
                self.sent[device] += 1;
                self.last_len[device] = p.len;
                self.running[device] = Some((p, now));
                Next::Run(p)
            }
            None => Next::Done,
        }
    }

    fn completed(&mut self, done: &Completion) {
        let Some(samples) = self.samples.get_mut(done.device) else {
            return;
        };
        let host = done.host_end - done.host_start;
        let kernel = done.seconds();
        samples.push(Sample {
            groups: done.package.len,
            kernel_seconds: kernel,
            host_seconds: host,
        });
        if self.running[done.device].is_some_and(|(p, _)| p == done.package) {
            self.running[done.device] = None;
        }
        self.maybe_split(done.host_end);
    }

    fn device_lost(&mut self, device: usize) {
        let Some(alive) = self.alive.get_mut(device) else {
            return;
        };
        *alive = false;
        self.running[device] = None;
        if let Some(p) = self.plan.as_mut().and_then(|plan| plan[device].take()) {
            self.orphans.push(p);
        }
        // The contract gives no clock here; the latest hand-out is the closest instant known.
        let now = self.running.iter().flatten().map(|(_, since)| *since).fold(0.0, f64::max);
        self.maybe_split(now);
    }
}
