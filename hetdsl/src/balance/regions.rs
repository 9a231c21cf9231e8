//! Regions: a dynamic split that leaves each device one contiguous block, for the first launch
//! of a kernel in a session.
//!
//! # Why
//! A session keeps each output range on the device that wrote it, and the next launch of the
//! same kernel runs best where its inputs already are. Sigmoid interleaves its packages along
//! the range, so the first relaunch, one block per device, had to move about half of every
//! buffer between devices: on two H200s, 186 MiB in a Jacobi sweep (165 ms against a 1 ms
//! sweep) and 230 MiB in a Black-Scholes iteration. A first launch that already leaves each
//! device one block, balanced, is replayed as it is and moves nothing.
//!
//! # The split
//! The range is cut into one region per device in device order, in proportion to the devices'
//! nominal speeds (identical devices get equal regions). Each device takes packages from the
//! front of its own region: first a probe of its occupancy bound, then a third of what is left
//! there, capped at half its share of all that is left by the measured speeds.
//! A device whose region is empty takes from the back of the region before its own (which
//! keeps its work one block), or where another region would take its owner over twice as long
//! to finish, from that one (first one whose owner is lost or has not started); its fair share
//! of it by the two devices' measured speeds, half of that per package; a device without a
//! measurement yet takes one minimum package. A region whose next device has run out of its
//! own is left to that device, so a device usually ends with one block, at most its own and
//! one stolen elsewhere; and a sliver (under `TINY_SHARE` of the range) that would not adjoin
//! the thief's block, or any part its owner ends within `FAR_STEAL_LATE` of the launch's time
//! so far, is left to its owner, when that owner works and has measured a package.
//!
//! # A device too slow to keep a block
//! The launches after the first run on resident data, where a device whose share by kernel
//! speed is under [`RESIDENT_MIN_SHARE`] gets nothing, and whatever it computed in the first
//! launch has to move to another device once. So after its probe a device waits for the probes
//! of the devices nominally faster than it (it is asked again at each completion); if its
//! measured speed is then under that share of all measured, it sits out and its region goes to
//! the others as a lost device's would. On two H100s and a 32-core CPU, Black-Scholes' first
//! launch left the CPU 2.5 % of the options (23 MiB to move later) and a ten-step loop ran
//! 0.64 ms per step, against 0.27 on the two GPUs alone and 0.52 on one.

use std::ops::Range;

use super::relaunch::{RESIDENT_MIN_SHARE, TINY_SHARE};
use super::speeds::usable_nominal;
use super::{check_setup, proportional_split, Balancer, Completion, Next, Package, Setup};
use crate::error::Result;

/// What a device takes from its own region: this fraction of what is left there.
const OWN_FRACTION: f64 = 1.0 / 3.0;

/// A working, measured owner that ends its region within this fraction of the time the launch
/// has run keeps it from a thief whose block it does not adjoin: the launch ends at most that
/// much later, where the steal would cost a move at the next launch.
const FAR_STEAL_LATE: f64 = 0.05;

#[derive(Debug, Clone, Default)]
pub struct Regions {
    /// Per device: what is still unassigned of its region.
    left: Vec<Range<u64>>,
    min_groups: Vec<u64>,
    nominal: Vec<f64>,
    alive: Vec<bool>,
    /// Per device: too slow to keep a block (see the module's doc); it takes nothing more.
    out: Vec<bool>,
    /// Per device: the package handed out to it and not yet completed (by it, or by the
    /// device that backed it up).
    running: Vec<Option<Package>>,
    /// Per device: groups at the back of the region before its own that it takes before its
    /// own region, its share of a region whose owner sat out (see [`Self::sit_out`]).
    passed: Vec<u64>,
    /// Per device: (work-groups, seconds) of its completed packages.
    measured: Vec<(u64, f64)>,
    /// The range's size in work-groups.
    total: u64,
}

impl Regions {
    fn speed(&self, device: usize) -> Option<f64> {
        let (groups, seconds) = self.measured[device];
        (groups > 0 && seconds > 0.0).then(|| groups as f64 / seconds)
    }

    /// Alive and not sitting out: it may take more work.
    fn working(&self, device: usize) -> bool {
        self.alive[device] && !self.out[device]
    }

    /// The working devices nominally faster than `device` that have not measured a package:
    /// until they have, `device`'s own speed says nothing about its share.
    fn unmeasured_faster(&self, device: usize) -> impl Iterator<Item = usize> + '_ {
        let mine = self.nominal[device];
        (0..self.alive.len()).filter(move |&f| {
            f != device && self.working(f) && self.nominal[f] > mine && self.speed(f).is_none()
        })
    }

    /// Whether the speeds that decide `device`'s share are known: its own and those of every
    /// working device nominally faster than it.
    fn measured_with_faster(&self, device: usize) -> bool {
        self.speed(device).is_some() && self.unmeasured_faster(device).next().is_none()
    }

    /// Whether `device`, measured and with every nominally faster device measured, runs under
    /// [`RESIDENT_MIN_SHARE`] of the working devices' measured speed (never the last working
    /// device: the work must end somewhere).
    fn too_slow(&self, device: usize) -> bool {
        let Some(mine) = self.speed(device).filter(|_| self.measured_with_faster(device)) else {
            return false;
        };
        let others = (0..self.alive.len()).filter(|&d| d != device && self.working(d));
        let total: f64 = mine + others.clone().filter_map(|d| self.speed(d)).sum::<f64>();
        others.count() > 0 && mine < RESIDENT_MIN_SHARE * total
    }

    /// Seconds the owner of `region` would take to finish it: infinite where it is lost, or
    /// has not measured a package yet (its speed is unknown, so the region is the likeliest
    /// to end last).
    fn time_left(&self, region: usize) -> f64 {
        let left = self.left[region].end - self.left[region].start;
        match (self.working(region), self.speed(region)) {
            _ if left == 0 => 0.0,
            (true, Some(s)) => left as f64 / s,
            _ => f64::INFINITY,
        }
    }

    /// Half `device`'s share of everything left by the measured speeds; `None` until it and
    /// every device nominally faster have measured a package.
    fn fair(&self, device: usize) -> Option<f64> {
        let speed = self.speed(device).filter(|_| self.measured_with_faster(device))?;
        let everything: u64 = self.left.iter().map(|r| r.end - r.start).sum();
        let measured: f64 =
            (0..self.left.len()).filter(|&d| self.working(d)).filter_map(|d| self.speed(d)).sum();
        Some(everything as f64 * speed / measured / 2.0)
    }

    /// The size of `device`'s next package from its own region (`left` groups there): a probe
    /// of its minimum until the speeds are known (see [`Self::fair`]), then a third of its
    /// region, but no more than half its share of everything left, so that a device whose
    /// region was cut too large (nominal speeds mislead: a CPU's is often several times its
    /// real share) does not hold the run's end with one large package.
    fn own_package(&self, device: usize, left: u64) -> u64 {
        let min = self.min_groups[device];
        let Some(fair) = self.fair(device) else {
            return min.min(left);
        };
        let guided = left as f64 * OWN_FRACTION;
        (guided.min(fair).ceil() as u64).max(min).min(left)
    }

    /// `out` sits out: what is left of its region goes to the measured working devices after
    /// it, in proportion to their speeds. The first takes all of it (see [`Self::inherit`]) and
    /// passes on the rest of it at the back of its own region, and so on, so that each keeps
    /// one block. Left to the end of the launch, the share follows time, not kernel speed:
    /// where the launch is bound by uploads that the GPUs share, two H100s ended at the same
    /// time with 51.5 and 48.5 % of Black-Scholes, and every later launch kept that split.
    fn sit_out(&mut self, out: usize) {
        self.out[out] = true;
        let left = self.left[out].end - self.left[out].start;
        let heirs: Vec<usize> = (out + 1..self.left.len())
            .take_while(|&d| self.working(d) && self.speed(d).is_some())
            .collect();
        let total: f64 = heirs.iter().filter_map(|&d| self.speed(d)).sum();
        let mut flow = left;
        for &d in &heirs {
            let keep = (left as f64 * self.speed(d).unwrap_or(0.0) / total).round() as u64;
            flow = flow.saturating_sub(keep);
            if let Some(next) = self.passed.get_mut(d + 1).filter(|_| heirs.contains(&(d + 1))) {
                *next += flow;
            }
        }
    }

    /// A package from the back of the region before `device`'s: all of it where that region's
    /// owner takes no more work (lost, or sitting out), else what that owner passed on (see
    /// [`Self::sit_out`]); up to half `device`'s fair share at a time. Its back adjoins the
    /// front of `device`'s block, and it is taken before `device`'s own region, so the device
    /// after `device` finds the back of `device`'s region still there to take.
    fn inherit(&mut self, device: usize) -> Option<Package> {
        let before = device.checked_sub(1)?;
        let left = self.left[before].end - self.left[before].start;
        let owed = if self.working(before) { self.passed[device].min(left) } else { left };
        if owed == 0 {
            return None;
        }
        let fair = self.fair(device)?;
        let len = (fair.ceil() as u64).max(self.min_groups[device]).min(owed);
        if self.working(before) {
            self.passed[device] -= len;
        }
        Some(self.take_back(before, len))
    }

    /// The last `len` groups left of `region`.
    fn take_back(&mut self, region: usize, len: u64) -> Package {
        let left = &mut self.left[region];
        left.end -= len;
        Package { offset: left.end, len }
    }

    /// A package from the back of another region, for `thief` whose own region is empty, `now`
    /// seconds into the launch.
    fn steal(&mut self, thief: usize, now: f64) -> Option<Package> {
        let has_work = |v: usize| self.left[v].end > self.left[v].start;
        // A region whose next device has run out of its own is that device's to take from:
        // its back adjoins that device's block, and a second thief would cut both in pieces.
        // A device as fast as the thief that has not begun yet is not robbed: it is a moment
        // late (its thread was finishing the launch before), and a microsecond kernel's
        // thief took a twin's whole region, which the next launches then moved every step.
        let unstarted = |v: usize| self.measured[v].0 == 0 && self.running[v].is_none();
        let spared =
            |v: usize| self.working(v) && unstarted(v) && self.nominal[v] >= self.nominal[thief];
        let open = |v: usize| {
            has_work(v)
                && !spared(v)
                && (v + 1 == thief
                    || v + 1 >= self.left.len()
                    || !self.working(v + 1)
                    || has_work(v + 1))
        };
        let longest = (0..self.left.len())
            .filter(|&v| open(v))
            .max_by(|&a, &b| self.time_left(a).total_cmp(&self.time_left(b)).then(b.cmp(&a)))?;
        // The region just before the thief's own: its back adjoins the thief's block, so the
        // thief's work stays one block. Taken unless another would end far later.
        let before = thief
            .checked_sub(1)
            .filter(|&v| has_work(v) && !spared(v))
            .filter(|&v| self.time_left(v) >= 0.5 * self.time_left(longest));
        let victim = before.unwrap_or(longest);
        let left = self.left[victim].end - self.left[victim].start;
        let fair = match (self.working(victim), self.speed(thief), self.speed(victim)) {
            // A lost owner, or one sitting out: the region is the thief's to work through,
            // guided.
            (false, _, _) => left as f64 * OWN_FRACTION,
            (true, Some(t), Some(v)) => left as f64 * t / (t + v) / 2.0,
            // Either speed unknown: one minimum package, to measure before taking more.
            _ => 0.0,
        };
        let len = (fair.ceil() as u64).max(self.min_groups[thief]).min(left);
        // The back of a region that does not adjoin the thief's block is left to its owner,
        // working and measured, where it is a sliver (`TINY_SHARE`) or the owner ends it soon
        // (`FAR_STEAL_LATE`): the launches after the first would give it back to the block it
        // adjoins and move its inputs. Two H100s' Jacobi: 10 of 1024 units stolen so, 11 us
        // of the owner's work, cost 10.6 MB moved at the next launch, about 10 ms in all.
        let far = victim + 1 != thief;
        let sliver = (len as f64) < TINY_SHARE * self.total as f64;
        let soon = self.time_left(victim) < FAR_STEAL_LATE * now;
        if far && (sliver || soon) && self.working(victim) && self.speed(victim).is_some() {
            return None;
        }
        Some(self.take_back(victim, len))
    }
}

impl Balancer for Regions {
    fn name(&self) -> String {
        "regions".into()
    }

    fn start(&mut self, setup: &Setup) -> Result<()> {
        check_setup(setup)?;
        let nominal: Vec<f64> = setup.devices.iter().map(|d| d.nominal_gflops).collect();
        self.nominal = usable_nominal(&nominal);
        let sizes = proportional_split(setup.total_groups, &self.nominal);
        let mut at = 0;
        self.left = sizes
            .iter()
            .map(|&s| {
                at += s;
                at - s..at
            })
            .collect();
        self.min_groups = setup.devices.iter().map(|d| d.min_groups.max(1)).collect();
        self.alive = vec![true; setup.devices.len()];
        self.out = vec![false; setup.devices.len()];
        self.running = vec![None; setup.devices.len()];
        self.passed = vec![0; setup.devices.len()];
        self.measured = vec![(0, 0.0); setup.devices.len()];
        self.total = setup.total_groups;
        Ok(())
    }

    fn next(&mut self, device: usize, now: f64) -> Next {
        if !self.alive.get(device).copied().unwrap_or(false) {
            return Next::Done;
        }
        // Asked, so nothing of its own runs (a copy of its backed-up package may have lost).
        self.running[device] = None;
        // Once out, out for good, unless every other device is lost (then asked again).
        let alone = (0..self.alive.len()).all(|d| d == device || !self.working(d));
        // Only while another device runs: its completion has the devices that found nothing
        // to take asked again, now that this device's region is theirs.
        let others_run = (0..self.alive.len()).any(|d| d != device && self.running[d].is_some());
        if !self.out[device] && !alone && others_run && self.too_slow(device) {
            self.sit_out(device);
        }
        self.out[device] &= !alone;
        if self.out[device] {
            return Next::Done;
        }
        // Measured, but a faster device's probe is still running: its speed decides whether
        // this device keeps a block at all.
        let waiting = |f: usize| self.running[f].is_some();
        if self.speed(device).is_some() && self.unmeasured_faster(device).any(waiting) {
            return Next::Wait;
        }
        let left = self.left[device].end - self.left[device].start;
        let next = if let Some(p) = self.inherit(device) {
            Some(p)
        } else if left > 0 {
            let len = self.own_package(device, left);
            let own = &mut self.left[device];
            let p = Package { offset: own.start, len };
            own.start += len;
            Some(p)
        } else {
            self.steal(device, now)
        };
        self.running[device] = next;
        match next {
            Some(p) => Next::Run(p),
            // What is left is kept for a device that may yet sit out and leave it to others.
            None if self.left.iter().any(|r| r.end > r.start) => Next::Wait,
            None => Next::Done,
        }
    }

    fn completed(&mut self, done: &Completion) {
        // The device that ran it, and the one it was handed to where that one was backed up:
        // its copy no longer holds anything up.
        for r in &mut self.running {
            if *r == Some(done.package) {
                *r = None;
            }
        }
        if let Some(r) = self.running.get_mut(done.device) {
            *r = None;
        }
        let seconds = done.seconds();
        if let Some(m) = self.measured.get_mut(done.device) {
            if seconds.is_finite() && seconds > 0.0 {
                m.0 += done.package.len;
                m.1 += seconds;
            }
        }
    }

    fn device_lost(&mut self, device: usize) {
        if let Some(a) = self.alive.get_mut(device) {
            *a = false;
            self.running[device] = None;
        }
    }
}

#[cfg(test)]
mod tests;
