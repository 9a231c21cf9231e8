//! The watchdog's verdict, as a function of the dispatcher's state and an instant: which
//! devices are hung, and how long a package may run before its device is.

use std::ops::DerefMut;

use super::{Dev, Dispatcher, Fatal};
use crate::balance::{Balancer, Package};
use crate::error::Result;

/// The watchdog's rule: a package may run `factor` times what its device's measured speed
/// predicts, and never less than `min_seconds`, before the device is declared hung.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WatchdogRule {
    pub factor: f64,
    pub min_seconds: f64,
}

/// A device the watchdog declares hung.
#[derive(Debug, Clone, PartialEq)]
pub struct Hung {
    pub device: usize,
    /// `"package"` (its kernel) or `"read-back of package"` (a kept output never merged).
    pub what: &'static str,
    pub package: Package,
    pub elapsed: f64,
    pub limit: f64,
}

impl Hung {
    /// The fault reason the engine records.
    pub fn reason(&self) -> String {
        format!(
            "hung: {} {:?} ran {:.3} s, limit {:.3} s",
            self.what, self.package, self.elapsed, self.limit
        )
    }
}

/// How many times more slack a device not measured yet is given.
const UNMEASURED: f64 = 10.0;

impl<'d, B: DerefMut<Target = dyn Balancer + 'd>> Dispatcher<B> {
    /// The devices the watchdog declares hung at `at`: those whose running package has run
    /// longer than `rule` allows for it (see [`Self::watchdog_limit`]). A package is judged only
    /// while another live device sits idle (waiting, nothing running or left to merge) and
    /// could take its work over: with every device busy nobody waits for it, and a long
    /// package is not a hung one; nor is the last device standing, which may merely be slow.
    pub fn hung(&self, at: f64, rule: WatchdogRule) -> Vec<Hung> {
        self.judged(at, rule, false)
    }

    /// As [`Self::hung`] for a run that devices of its launch sit out (a learned form left
    /// them out) and could have taken its work: the last device standing is judged too, an
    /// unmeasured one only past 10 times the floor. Without it a device hung alone
    /// there would hang the launch, where run on every device it would have been dropped.
    pub fn hung_with_spares(&self, at: f64, rule: WatchdogRule) -> Vec<Hung> {
        self.judged(at, rule, true)
    }

    fn judged(&self, at: f64, rule: WatchdogRule, spares: bool) -> Vec<Hung> {
        let idle =
            |d: &Dev| !d.lost && d.waiting.is_some() && d.running.is_none() && d.kept.is_empty();
        let alone = |i: usize| self.devices.iter().enumerate().all(|(o, d)| o == i || d.lost);
        self.devices
            .iter()
            .enumerate()
            .filter(|(i, d)| {
                let spare = spares && alone(*i);
                !d.lost
                    && (spare
                        || self.devices.iter().enumerate().any(|(o, other)| o != *i && idle(other)))
            })
            .filter_map(|(i, d)| {
                // The kernel running, else the oldest output kept but not merged, which is
                // given as long as a kernel of its size from when that kernel ended.
                let (what, package, since) = match (d.running, d.kept.first()) {
                    (Some(c), _) => ("package", c.package, c.since),
                    (None, Some(&(p, _, done))) => ("read-back of package", p, done),
                    (None, None) => return None,
                };
                let elapsed = at - since;
                let mut limit = self.watchdog_limit(i, package, rule);
                if spares && alone(i) && d.stats.speed.is_none() {
                    limit = limit.max(UNMEASURED * rule.min_seconds);
                }
                let hung = elapsed > limit;
                if hung {
                    super::events::hung(self.label(i), package, elapsed, limit);
                }
                hung.then_some(Hung { device: i, what, package, elapsed, limit })
            })
            .collect()
    }

    /// How long `p` may run on `device`: `rule.factor` times what its measured speed predicts.
    /// A device with no measurement yet is predicted from the fastest measured device scaled by
    /// nominal speeds, with `UNMEASURED` times more slack, because nominal figures can be far
    /// off (a 16-core CPU is 31x below an H200 nominally, 700x in fact); with nothing measured
    /// anywhere only the floor applies. Never less than `rule.min_seconds`.
    pub fn watchdog_limit(&self, device: usize, p: Package, rule: WatchdogRule) -> f64 {
        let nominal = |d: usize| self.nominal.get(d).copied().unwrap_or(0.0);
        let (speed, slack) = match self.devices[device].stats.speed {
            Some(v) => (Some(v), rule.factor),
            None => {
                let guess = (0..self.devices.len())
                    .filter_map(|m| {
                        let v = self.devices[m].stats.speed?;
                        (nominal(m) > 0.0).then(|| v * nominal(device) / nominal(m))
                    })
                    .fold(None, |best: Option<f64>, v| Some(best.map_or(v, |b| b.max(v))));
                (guess.filter(|v| *v > 0.0), rule.factor * UNMEASURED)
            }
        };
        match speed {
            Some(v) => (slack * p.len as f64 / v).max(rule.min_seconds),
            None => rule.min_seconds,
        }
    }
}

impl<'d, B: DerefMut<Target = dyn Balancer + 'd>> Dispatcher<B> {
    /// Every live device has been asked since the last completion or loss and has nothing to
    /// run, nothing runs or waits to be merged, no re-run is pending, yet work is left: the
    /// balancer will never hand it out.
    pub(super) fn check_stall(&mut self) -> Result<()> {
        let epoch = self.epoch;
        let settled = self.devices.iter().filter(|d| !d.lost).all(|d| {
            d.running.is_none()
                && d.kept.is_empty()
                && d.waiting.is_some_and(|e| e == epoch || d.balancer_done)
        });
        if settled && self.retry.is_empty() && self.unmerged > 0 {
            let m = self.stalled();
            return Err(self.poison(Fatal::Balancer(m)));
        }
        Ok(())
    }

    pub(super) fn stalled(&self) -> String {
        format!(
            "balancer `{}` stopped handing out work with {} unit(s) left",
            self.name, self.unmerged
        )
    }
}
