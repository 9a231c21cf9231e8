//! Learned: a balancer for the second and later launches of the same kernel at the same size,
//! which starts from what the previous launch measured and gives each device the work-groups it
//! already holds, so that with device-resident data nothing moves that need not.
//!
//! # Why
//! An iterative application launches one kernel hundreds of times. Sigmoid (the default) learns
//! the devices' speeds afresh each time and hands out packages from the front of the range, so
//! every launch scatters the range over the devices anew: resident data would move each time,
//! and the probes and the curve's small packages cost the same every launch. The previous
//! launch already measured what Sigmoid spends its start learning.
//!
//! # The plan (at `start`)
//! From a [`History`] (per device: its speed in work-groups per second and the ranges it ran):
//! 1. **Shares ∝ speed.** Lost or unmeasured devices (speed 0) get nothing, nor does a device
//!    whose occupancy-bound package would end after the others finish everything without it
//!    (a package below the bound takes as long as a full one).
//! 2. **A slower device gets whole waves.** A device many times slower than the fastest (as
//!    Sigmoid's `SLOW_CLASS`) cannot be helped once it holds a package and its overrun idles
//!    everyone: its share is cut to the whole occupancy waves of 90 % of it, the rest going to
//!    the faster devices.
//! 3. **One block per device, where it was.** Blocks are laid end to end in the order that keeps
//!    the most device time (groups over speed) on groups the device ran before: all orders of up
//!    to 6 devices are tried, more are ordered by where their groups lay. Time, not groups: a
//!    slow device's speed is the one least sure to hold on groups it never ran. With unchanged
//!    speeds every device gets exactly its old block; a speed change moves only block
//!    boundaries. A first relaunch after Sigmoid's scattered packages gathers each device's
//!    groups once.
//! 4. **Bulk on measured ground.** A device first runs, from the end it starts at, 90 % of the
//!    groups it held there in one run last launch (scaled by the fraction of its block it held),
//!    in whole occupancy waves, as one package or two from four waves on. Its speed was measured
//!    on those groups; a cost that varies along the range (Mandelbrot's band, RAP's rising cost)
//!    makes groups it never ran cost more or less than the speed says.
//!
//! # The tail (dynamic, absorbs a change in cost)
//! Devices are paired along the range, (0, 1), (2, 3), ...: the first of a pair takes its block
//! upward from its start, the second downward from its end, so each pair's unassigned groups
//! form one interval at their shared boundary; an unpaired last device takes its block downward
//! so its free end meets its left neighbour.
//! - Every later package is sized from the common end E: when the run would end if the work left
//!   (and what running packages still have to do) were spread by speed. The second bulk package
//!   is cut to 90 % of what the device would do by E (the others may run faster than the
//!   history says), and shrinks if the first ran slower than promised.
//! - A tail package is half of what the device would do by E, three quarters where it runs its
//!   own old groups at its old speed, a quarter where most of its block is new to it, all of it below two fills (splitting then only adds a
//!   package that costs a fill); never below its occupancy bound nor 1 % of the run so far at
//!   its speed (Sigmoid's imbalance bound). The speed is the lowest of this launch's mean and
//!   the last package's, and where the last two packages slowed down, it is expected to slow
//!   as much again (a cost that rises along the block).
//! - A slower device plans to end by E with a margin (×1.25, or ×4 once its speeds vary by more
//!   than a quarter) and takes half of that at a time in whole waves; if even one wave would not
//!   end in time, it waits while others run. A crumb of its block next to a faster device's last package (less than that
//!   device's fill) is run in that package.
//! - With its block done, a device steals from the free end of another block: a lost device's
//!   first, else its neighbour's (at the boundary it shares), else the block that would end
//!   last; only when that ends the run sooner (by more than 0.2 % of the time so far: moving
//!   resident groups for a gain inside the jitter is not worth it), by half the amount that
//!   would make both end together. A slower device steals only from lost devices.
//!
//! So ownership moves at block boundaries, by what the measured speeds require. A device given
//! no share (too slow or unknown) gets [`Next::Done`] while a device with one is alive, and
//! otherwise steals like the rest, so the run ends even if all planned devices are lost.
//!
//! When the history does not fit the launch (another size or device count, or no usable speed)
//! the balancer behaves exactly like the default, guarded Sigmoid, and calls itself
//! `learned(fallback)`.
//!
//! It is not in the registry of balancer names (`BalancerSpec`): without a history it has
//! nothing to learn from. Build it with [`Learned::new`] from a [`History`], typically
//! [`History::from_report`] of the previous launch (or a saved one, [`History::load`]).

use super::{check_setup, Balancer, Completion, Next, Package, Setup, Sigmoid, SLOW_CLASS};
use crate::error::Result;
use std::ops::Range;

mod history;
mod layout;

pub use history::{DeviceHistory, History, Ran};
pub(crate) use layout::merged;

/// Fraction of a device's block run as its bulk when it held the whole block last launch.
const BULK: f64 = 0.9;
/// A steal must end the run sooner by more than this fraction of the time so far: moving
/// resident groups for a gain inside the per-package jitter is not worth it.
const STEAL_GAIN: f64 = 0.002;
/// The least tail package, as a fraction of the run so far at the device's speed.
const MIN_TAIL: f64 = 0.01;
/// A device whose one fill would end this much past the common end waits instead, while
/// others run: they can take its groups sooner.
const TAIL_SLACK: f64 = 0.05;

/// One device's block and what is left of it.
#[derive(Debug, Clone, PartialEq)]
struct Block {
    /// Not handed out yet; the owner takes from one end, thieves from the other.
    rest: Range<u64>,
    /// The owner takes from `rest.start` (else from `rest.end`).
    up: bool,
    /// Bulk packages still to hand out to the owner, in order.
    bulk: Vec<u64>,
    /// Fraction of the block the owner ran last launch.
    keep: f64,
}

/// The Learned balancer; see the module documentation.
#[derive(Debug, Clone)]
pub struct Learned {
    history: History,
    fallback: Option<Sigmoid>,
    occupancy: Vec<u64>,
    /// Speeds from the history, replaced by this launch's as they are measured.
    learned: Vec<f64>,
    /// The devices given a block.
    planned: Vec<bool>,
    /// Groups and seconds measured this launch.
    measured: Vec<(u64, f64)>,
    /// Speeds of each device's last two packages this launch (0 before they are measured).
    last: Vec<[f64; 2]>,
    blocks: Vec<Block>,
    alive: Vec<bool>,
    running: Vec<Option<(Package, f64)>>,
    /// Ends of every package handed to a device, to steal next to what it holds.
    edges: Vec<Vec<u64>>,
}

impl Learned {
    pub fn new(history: History) -> Learned {
        Learned {
            history,
            fallback: None,
            occupancy: Vec::new(),
            learned: Vec::new(),
            planned: Vec::new(),
            measured: Vec::new(),
            last: Vec::new(),
            blocks: Vec::new(),
            alive: Vec::new(),
            running: Vec::new(),
            edges: Vec::new(),
        }
    }

    /// The blocks planned at `start`, per device (empty for a device given no share; none in
    /// the fallback).
    pub fn planned(&self) -> Vec<Range<u64>> {
        self.blocks.iter().map(|b| b.rest.clone()).collect()
    }

    fn fits(&self, setup: &Setup) -> bool {
        let h = &self.history;
        h.total_groups == setup.total_groups
            && h.devices.len() == setup.devices.len()
            && h.devices.iter().any(|d| d.speed.is_finite() && d.speed > 0.0)
    }

    fn speed(&self, d: usize) -> f64 {
        match self.measured[d] {
            (g, s) if g > 0 && s > 0.0 => g as f64 / s,
            _ => self.learned[d],
        }
    }

    /// Has a block and is alive: will come back for what is left of its block.
    fn planned_alive(&self, d: usize) -> bool {
        self.alive[d] && self.planned[d]
    }

    /// Seconds until `d` is free: its running package's planned time left, or if overdue as
    /// much again as it has overrun (as Sigmoid's guard expects).
    fn busy(&self, d: usize, now: f64) -> f64 {
        let Some((p, since)) = self.running[d] else { return 0.0 };
        let planned = p.len.max(self.occupancy[d]) as f64 / self.speed(d);
        let elapsed = now - since;
        if elapsed <= planned {
            planned - elapsed
        } else {
            elapsed - planned
        }
    }

    /// When the run would end if the work left were spread over the live devices by speed:
    /// what is left of every block, and what the running packages still have to do.
    fn common_end(&self, now: f64) -> f64 {
        let live: Vec<usize> = (0..self.alive.len()).filter(|&d| self.alive[d]).collect();
        let pool: u64 = self.blocks.iter().map(|b| b.rest.end - b.rest.start).sum();
        let busy: f64 = live.iter().map(|&d| self.busy(d, now) * self.speed(d)).sum();
        let speed: f64 = live
            .iter()
            .filter(|&&d| self.planned[d] || !self.any_planned())
            .map(|&d| self.speed(d))
            .sum();
        now + (pool as f64 + busy) / speed
    }

    /// Many times slower than the fastest live device given a block (as Sigmoid's
    /// [`SLOW_CLASS`]; any live device once none with a block is left): only such
    /// a device waits or keeps off others' blocks; between peers a lower speed says more about
    /// the groups each ran than about the device.
    fn slower_class(&self, d: usize) -> bool {
        let any_planned = self.any_planned();
        let fastest = (0..self.alive.len())
            .filter(|&t| self.alive[t] && (self.planned[t] || !any_planned))
            .map(|t| self.speed(t))
            .fold(0.0, f64::max);
        self.speed(d) * SLOW_CLASS < fastest
    }

    fn any_planned(&self) -> bool {
        (0..self.alive.len()).any(|d| self.planned_alive(d))
    }

    /// The owner's next package from its own block: the planned bulk, then a part of what it
    /// would do by the common end (three quarters where it ran the block before, half where its
    /// speed is less sure), never below its occupancy bound. `None` when the block is empty;
    /// `Some(None)` when even one fill would end after the common end while another device
    /// runs (it will come back, and can take the work sooner).
    fn own(&mut self, d: usize, now: f64) -> Option<Option<Package>> {
        let oc = self.occupancy[d];
        let (hist, speed) = (self.learned[d], self.speed(d));
        let end = self.common_end(now);
        let others_run = (0..self.running.len()).any(|o| o != d && self.running[o].is_some());
        let slow = self.slower_class(d);
        let (last, measured) = (self.last[d], self.measured[d].0 > 0);
        let block = &mut self.blocks[d];
        let left = block.rest.end - block.rest.start;
        if left == 0 {
            return None;
        }
        let time_left = end - now;
        let mut len = if let Some(planned) = (!block.bulk.is_empty()).then(|| block.bulk.remove(0))
        {
            // A second bulk package shrinks if the first ran slower than the history said, or
            // if the others run faster (the common end comes sooner): to its bulk share of what
            // it would do by then, in whole waves.
            let slower = (speed / hist).min(1.0);
            let planned = match measured && slower < 0.95 {
                true => oc.max(((planned as f64 * slower / oc as f64).floor() as u64) * oc),
                false => planned,
            };
            planned.min(oc.max((time_left * speed * BULK / oc as f64).floor() as u64 * oc))
        } else {
            // Sized at the lowest speed seen: the groups ahead lie next to the last package,
            // and on a cost that rises along the block each package runs slower than the last.
            let cautious = match last {
                // Falling from one package to the next: expect it to fall as much again.
                [l, p] if l > 0.0 && p > l => speed.min(l * l / p),
                [l, _] if l > 0.0 => speed.min(l),
                _ => speed,
            };
            let fair = time_left * cautious;
            // The region behaves as the history says: a larger part is safe.
            let as_before = block.keep >= 0.9 && cautious >= 0.9 * hist;
            // A slower device's overrun idles everyone, and its small packages see the cost of
            // few groups, which varies most: it plans with a margin, a quarter of the time left
            // once its speeds have varied by more than a quarter (this launch's or against the
            // history), else four fifths.
            let seen = [last[0], last[1], hist].into_iter().filter(|&v| v > 0.0);
            let (lo, hi) = seen.fold((f64::INFINITY, 0.0f64), |(a, b), v| (a.min(v), b.max(v)));
            let margin = if hi > 1.25 * lo { 4.0 } else { 1.25 };
            let fair = if slow { fair / margin } else { fair };
            if slow && oc as f64 > fair * (1.0 + TAIL_SLACK) && others_run {
                return Some(None);
            }
            // And it goes half of that at a time, in whole waves: a few groups' cost can be
            // several times what the last few cost.
            if slow {
                let waves = ((fair / 2.0 / oc as f64) as u64).max(1);
                let least = (MIN_TAIL * now * cautious) as u64;
                let len = (waves * oc).max(least).min(left);
                return Some(Some(take(&mut block.rest, len, block.up)));
            }
            // Below two fills, splitting only adds a package that costs a whole fill.
            let part = match (fair < 2.0 * oc as f64, as_before, block.keep >= 0.5) {
                (true, _, _) => 1.0,
                (false, true, _) => 0.75,
                (false, false, true) => 0.5,
                // Mostly groups it never ran: their cost is anyone's guess.
                (false, false, false) => 0.25,
            };
            // Nor below MIN_TAIL of the time so far at its speed (Sigmoid's imbalance bound
            // p·t·S): shorter packages only add their overhead.
            oc.max((fair * part).ceil() as u64).max((MIN_TAIL * now * cautious) as u64)
        };
        // What would be left costs a whole fill anyway: take it now.
        if left.saturating_sub(len) < oc {
            len = left;
        }
        let (up, package) = (block.up, take(&mut block.rest, len.min(left), block.up));
        Some(Some(self.absorb(d, package, up)))
    }

    /// `package` took the last of `d`'s block: if the block beyond its far end belongs to a
    /// device that will not come back for it soon (one of a slower class, or lost) and what is
    /// left there is less than a fill of `d`, run it in the same package instead of leaving a
    /// crumb that would cost `d` a whole fill (and its overhead) later.
    fn absorb(&mut self, d: usize, package: Package, up: bool) -> Package {
        if self.blocks[d].rest.start != self.blocks[d].rest.end {
            return package;
        }
        let edge = if up { package.end() } else { package.offset };
        let beyond = (0..self.blocks.len()).find(|&v| {
            let r = &self.blocks[v].rest;
            v != d && r.start < r.end && if up { r.start == edge } else { r.end == edge }
        });
        let Some(v) = beyond else { return package };
        let rest = self.blocks[v].rest.clone();
        let idle_owner = !self.planned_alive(v) || self.slower_class(v);
        if !idle_owner || rest.end - rest.start >= self.occupancy[d] || self.slower_class(d) {
            return package;
        }
        self.blocks[v].rest = rest.start..rest.start;
        let (start, end) = (package.offset.min(rest.start), package.end().max(rest.end));
        Package { offset: start, len: end - start }
    }

    /// A package stolen from another block's free end, if that ends the run sooner.
    fn steal(&mut self, d: usize, now: f64) -> Option<Package> {
        let oc = self.occupancy[d];
        let mine = self.speed(d);
        let live: f64 =
            (0..self.alive.len()).filter(|&t| self.alive[t]).map(|t| self.speed(t)).sum();
        // A device of a slower class steals only what nobody else would take: its speed was
        // measured on its own groups, and an overrun on costlier ones idles everyone.
        let slow = self.slower_class(d);
        // (priority, gain, victim, len): orphans first, then the neighbour, then the most gain.
        let mut best: Option<(u8, f64, usize, u64)> = None;
        for v in (0..self.blocks.len()).filter(|&v| v != d) {
            let b = &self.blocks[v];
            let left = b.rest.end - b.rest.start;
            if left == 0 {
                continue;
            }
            let candidate = if !self.planned_alive(v) {
                let len = oc.max((left as f64 * mine / live / 2.0).ceil() as u64).min(left);
                (2, f64::INFINITY, v, len)
            } else if slow {
                continue;
            } else {
                let sv = self.speed(v);
                let victim_end = self.busy(v, now) + left as f64 / sv;
                // Groups that would make both end together, and half of them now.
                let even = victim_end * mine * sv / (mine + sv);
                let len = if even >= 2.0 * oc as f64 { (even / 2.0).ceil() as u64 } else { oc };
                let len = len.min(left);
                let after =
                    (len.max(oc) as f64 / mine).max(self.busy(v, now) + (left - len) as f64 / sv);
                let gain = victim_end - after;
                if gain <= STEAL_GAIN * now {
                    continue;
                }
                let free_end = if b.up { b.rest.end } else { b.rest.start };
                let next_to_me = self.edges[d].contains(&free_end);
                (u8::from(next_to_me), gain, v, len)
            };
            let better = best.is_none_or(|(p, g, _, _)| (candidate.0, candidate.1) > (p, g));
            if better {
                best = Some(candidate);
            }
        }
        let (_, _, v, len) = best?;
        let b = &mut self.blocks[v];
        Some(take(&mut b.rest, len, !b.up))
    }
}

/// Take `len` groups from the low end of `rest` (`low`) or from its high end.
fn take(rest: &mut Range<u64>, len: u64, low: bool) -> Package {
    if low {
        let p = Package { offset: rest.start, len };
        rest.start += len;
        p
    } else {
        rest.end -= len;
        Package { offset: rest.end, len }
    }
}

/// The bulk for a device filling with `oc`: [`BULK`] of `groups` (what it ran last launch from
/// the end it starts at, scaled by the fraction of its block it ran) in whole waves, in two
/// packages when that holds four waves or more (the second can then be corrected).
fn bulk(groups: f64, oc: u64) -> Vec<u64> {
    let waves = (groups * BULK / oc as f64).floor() as u64;
    match waves {
        0 => Vec::new(),
        1..=3 => vec![waves * oc],
        _ => vec![waves / 2 * oc, (waves - waves / 2) * oc],
    }
}

impl Balancer for Learned {
    fn name(&self) -> String {
        match self.fallback {
            Some(_) => "learned(fallback)".into(),
            None => "learned".into(),
        }
    }

    fn start(&mut self, setup: &Setup) -> Result<()> {
        check_setup(setup)?;
        if !self.fits(setup) {
            let mut sigmoid = Sigmoid::guarded();
            sigmoid.start(setup)?;
            self.fallback = Some(sigmoid);
            return Ok(());
        }
        self.fallback = None;
        let n = setup.devices.len();
        let total = setup.total_groups;
        self.occupancy = setup.devices.iter().map(|d| d.min_groups.max(1)).collect();
        let speeds: Vec<f64> = self
            .history
            .devices
            .iter()
            .map(|d| if d.speed.is_finite() && d.speed > 0.0 { d.speed } else { 0.0 })
            .collect();
        let owned: Vec<Vec<Range<u64>>> =
            self.history.devices.iter().map(|d| layout::merged(d.owned.clone(), total)).collect();
        let mut shares = layout::shares(total, &speeds, &self.occupancy);
        layout::trim_slow(&mut shares, &speeds, &self.occupancy, BULK);
        let plan = layout::plan(&shares, &layout::Held { owned: &owned, speeds: &speeds });
        // Pairs along the range: the first of a pair goes up, the second down; an unpaired last
        // device goes down when it has a left neighbour.
        let mut order: Vec<usize> = (0..n).filter(|&d| shares[d] > 0).collect();
        order.sort_by_key(|&d| plan[d].span.start);
        let paired = order.len() / 2 * 2;
        self.blocks = plan
            .iter()
            .enumerate()
            .map(|(d, p)| {
                let rank = order.iter().position(|&o| o == d);
                let up = match rank {
                    Some(r) if r < paired => r % 2 == 0,
                    Some(r) => r == 0,
                    None => true,
                };
                let prefix = layout::held_run(&p.span, &owned[d], up) as f64;
                let bulk = bulk(prefix * p.keep, self.occupancy[d]);
                Block { rest: p.span.clone(), up, bulk, keep: p.keep }
            })
            .collect();
        self.planned = shares.iter().map(|&s| s > 0).collect();
        // A device without a speed (it must steal only once every planned device is lost)
        // plans as the slowest known one until it measures its own.
        let slowest = speeds.iter().copied().filter(|&s| s > 0.0).fold(f64::INFINITY, f64::min);
        self.learned = speeds.iter().map(|&s| if s > 0.0 { s } else { slowest }).collect();
        self.measured = vec![(0, 0.0); n];
        self.last = vec![[0.0; 2]; n];
        self.alive = vec![true; n];
        self.running = vec![None; n];
        self.edges = vec![Vec::new(); n];
        Ok(())
    }

    fn next(&mut self, device: usize, now: f64) -> Next {
        if let Some(s) = self.fallback.as_mut() {
            return s.next(device, now);
        }
        if !self.alive.get(device).copied().unwrap_or(false) {
            return Next::Done;
        }
        // A device that asks runs nothing (its last package may have lost to a back-up copy,
        // which the balancer never hears of under this device).
        self.running[device] = None;
        let planned = self.planned[device];
        let package = match (planned, self.any_planned()) {
            (true, _) => match self.own(device, now) {
                Some(Some(p)) => Some(p),
                Some(None) => return Next::Wait,
                None => self.steal(device, now),
            },
            (false, true) => None,
            (false, false) => self.steal(device, now),
        };
        match package {
            Some(p) => {
                self.running[device] = Some((p, now));
                self.edges[device].extend([p.offset, p.end()]);
                Next::Run(p)
            }
            None => Next::Done,
        }
    }

    fn completed(&mut self, done: &Completion) {
        if let Some(s) = self.fallback.as_mut() {
            return s.completed(done);
        }
        let d = done.device;
        if d >= self.measured.len() {
            return;
        }
        let seconds = done.seconds();
        if seconds.is_finite() && seconds > 0.0 {
            self.measured[d].0 += done.package.len;
            self.measured[d].1 += seconds;
            self.last[d] = [done.package.len as f64 / seconds, self.last[d][0]];
        }
        // The copy that won a back-up ends the package on both devices.
        for slot in &mut self.running {
            if slot.is_some_and(|(p, _)| p == done.package) {
                *slot = None;
            }
        }
    }

    fn device_lost(&mut self, device: usize) {
        if let Some(s) = self.fallback.as_mut() {
            return s.device_lost(device);
        }
        if let Some(a) = self.alive.get_mut(device) {
            *a = false;
            self.running[device] = None;
        }
    }
}
