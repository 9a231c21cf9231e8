//! Load balancers: given what has completed so far, decide the next package for a device.
//!
//! Balancers are pure: they see numbers (work-group counts, speeds, times), never an OpenCL
//! handle, so the engine and the simulator drive the very same objects.
//!
//! # The contract the engine (and the simulator) keeps
//! The engine and the simulator call a balancer only through the dispatcher
//! (`dispatch::Dispatcher`), which keeps it:
//! 1. [`Balancer::start`] once, before anything else.
//! 2. [`Balancer::next`] for device `j` only while `j` has no package running; the package that
//!    `j` ran before has been reported through [`Balancer::completed`] first.
//! 3. [`Next::Wait`] means "nothing for you yet": the driver asks again after the next
//!    completion or loss on any device. [`Next::Done`] is final for that device, unless another
//!    device is lost later: then every device is asked again.
//! 4. [`Balancer::device_lost`] when a device faults: the balancer must hand the work it kept for
//!    that device to the others (the packages that were running or queued there are re-run by
//!    the driver, not the balancer).
//! 5. [`Balancer::next_ahead`] for device `j` while `j` runs exactly one package, to queue a
//!    second behind it so that its launch hides behind the running kernel. The default answers
//!    [`Next::Wait`]: the device then asks [`Balancer::next`] when idle, as in 2. A queued
//!    package becomes the running one when its predecessor completes, and its
//!    [`Completion::host_start`] is that instant.
//!
//! And what every balancer guarantees: each work-group in `0..total_groups` is handed out exactly
//! once, no package is empty, and once every device has answered `Done` nothing is left.

mod adaptive;
mod dynamic;
mod hguided;
mod horizon;
mod learned;
mod linear;
mod minmax;
mod model;
pub mod probe;
mod random_split;
mod regions;
pub mod relaunch;
pub(crate) mod replay;
mod sigmoid;
mod spec;
mod speeds;
mod static_split;
mod trend;

// The dispatcher and the back-up rule are the engine's and the simulator's machinery, not
// something a balancer names: public only with the `internals` feature, like the simulator.
#[cfg(feature = "internals")]
pub mod backup;
#[cfg(not(feature = "internals"))]
pub(crate) mod backup;
#[cfg(feature = "internals")]
pub mod dispatch;
#[cfg(not(feature = "internals"))]
// Without the feature the simulator's and the tests' parts of the dispatcher go unused.
#[allow(dead_code, unused_imports)]
pub(crate) mod dispatch;

pub use adaptive::{Adaptive, AdaptiveRule};
pub use dynamic::Dynamic;
pub use hguided::{HGuided, PerDevice};
/// Ranges sorted, merged and clipped to `0..total`, as a history holds them.
pub(crate) use learned::merged as merged_ranges;
pub use learned::{DeviceHistory, History, Learned, Ran};
pub use linear::{LinearTwoPoint, TwoPointRule};
pub use minmax::{MinMax, MinMaxRule};
pub use random_split::RandomSplit;
pub use regions::Regions;
pub use replay::{Replay, PIECES};
pub use sigmoid::{Sigmoid, SigmoidParams, SLOW_CLASS};
pub use spec::{BalancerSpec, NAMES};
pub use static_split::Static;

// The shared vocabulary lives one floor down, so the engine, the report and the device
// descriptions need not import the balancers; balancer authors keep finding it here.
pub use crate::work::{Completion, DeviceKind, DeviceProfile, Next, Package, Setup};

use crate::error::{Error, Result};

/// A load-balancing policy. See the module documentation for the contract.
pub trait Balancer: Send {
    /// A short name for reports, e.g. `sigmoid` or `hguided(k=2)`.
    fn name(&self) -> String;
    /// Prepare for a run; rejects configurations that do not fit `setup`.
    fn start(&mut self, setup: &Setup) -> Result<()>;
    /// The next package for `device`; `now` is seconds since the run began.
    fn next(&mut self, device: usize, now: f64) -> Next;
    /// A package to queue behind the one `device` runs (see point 5 of the contract): it is
    /// committed to `device` before that package's measurement is in. Anything but
    /// [`Next::Run`] queues nothing.
    fn next_ahead(&mut self, device: usize, now: f64) -> Next {
        let _ = (device, now);
        Next::Wait
    }
    /// A package finished.
    fn completed(&mut self, done: &Completion);
    /// A device failed for good; give its share to the others.
    fn device_lost(&mut self, device: usize);
}

/// Work-groups not yet handed out, taken from the front. Most balancers only decide sizes and
/// take them from here.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Remaining {
    next: u64,
    end: u64,
}

impl Remaining {
    pub fn new(total_groups: u64) -> Self {
        Remaining { next: 0, end: total_groups }
    }
    /// Gr: work-groups not yet handed out.
    pub fn left(&self) -> u64 {
        self.end - self.next
    }
    pub fn is_empty(&self) -> bool {
        self.left() == 0
    }
    /// The work-groups not handed out yet, as a range of indices.
    pub fn range(&self) -> std::ops::Range<u64> {
        self.next..self.end
    }
    /// A package of `len` work-groups, clamped to `1..=left`; `None` when nothing is left.
    pub fn take(&mut self, len: u64) -> Option<Package> {
        if self.is_empty() {
            return None;
        }
        let len = len.clamp(1, self.left());
        let p = Package { offset: self.next, len };
        self.next += len;
        Some(p)
    }
    /// A package of `len` work-groups from the back (for reverse-order splits).
    pub fn take_back(&mut self, len: u64) -> Option<Package> {
        if self.is_empty() {
            return None;
        }
        let len = len.clamp(1, self.left());
        self.end -= len;
        Some(Package { offset: self.end, len })
    }
}

/// Split `total` into parts proportional to `weights` that add up to `total` exactly (largest
/// remainder). Non-finite or negative weights count as zero; all-zero weights split evenly.
pub fn proportional_split(total: u64, weights: &[f64]) -> Vec<u64> {
    let clean: Vec<f64> =
        weights.iter().map(|w| if w.is_finite() && *w > 0.0 { *w } else { 0.0 }).collect();
    let sum: f64 = clean.iter().sum();
    let clean = if sum > 0.0 { clean } else { vec![1.0; weights.len()] };
    let sum: f64 = clean.iter().sum();
    let exact: Vec<f64> = clean.iter().map(|w| total as f64 * w / sum).collect();
    let mut parts: Vec<u64> = exact.iter().map(|x| x.floor() as u64).collect();
    // Past 2^53 a total may round up as a float: the parts then overshoot it by a few ulps,
    // taken back from the largest parts.
    let mut over = parts.iter().map(|&p| p as u128).sum::<u128>().saturating_sub(total as u128);
    while over > 0 {
        let Some(largest) = parts.iter_mut().max() else { break };
        let take = (*largest as u128).min(over);
        *largest -= take as u64;
        over -= take;
    }
    let mut short = total.saturating_sub(parts.iter().sum());
    // Below 2^53 the floors miss fewer units than there are parts; past it, rounding may miss
    // more, and each part of a positive weight takes an equal share of those first.
    let weighed = clean.iter().filter(|w| **w > 0.0).count() as u64;
    if let Some(each) = short.checked_div(weighed) {
        let takers = parts.iter_mut().zip(&clean).filter(|(_, w)| **w > 0.0);
        takers.for_each(|(p, _)| *p += each);
        short -= each * weighed;
    }
    let mut order: Vec<usize> = (0..parts.len()).collect();
    order.sort_by(|&i, &j| {
        let (fi, fj) = (exact[i] - exact[i].floor(), exact[j] - exact[j].floor());
        fj.total_cmp(&fi).then(i.cmp(&j))
    });
    for &i in order.iter().cycle().take(parts.len().max(1) * 2) {
        if short == 0 {
            break;
        }
        parts[i] += 1;
        short -= 1;
    }
    parts
}

/// Checks shared by every balancer's `start`.
pub(crate) fn check_setup(setup: &Setup) -> Result<()> {
    if setup.devices.is_empty() {
        return Err(Error::BadBalancer("no device to balance over".into()));
    }
    if setup.total_groups == 0 {
        return Err(Error::BadBalancer("the NDRange has no work-group".into()));
    }
    Ok(())
}

/// The balancer a launch uses when none is given: Sigmoid with the probe-and-horizon guard
/// (see [`Sigmoid`]; `sigmoid-faithful` selects the paper's exact algorithm).
pub fn default_balancer() -> Box<dyn Balancer> {
    Box::new(Sigmoid::guarded())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remaining_hands_out_everything_once() {
        let mut r = Remaining::new(10);
        assert_eq!(r.take(4), Some(Package { offset: 0, len: 4 }));
        assert_eq!(r.take_back(3), Some(Package { offset: 7, len: 3 }));
        assert_eq!(r.take(0), Some(Package { offset: 4, len: 1 }));
        assert_eq!(r.take(99), Some(Package { offset: 5, len: 2 }));
        assert_eq!(r.take(1), None);
    }

    #[test]
    fn proportional_split_adds_up() {
        assert_eq!(proportional_split(10, &[1.0, 1.0]), vec![5, 5]);
        assert_eq!(proportional_split(10, &[1.0, 2.0, 2.0]), vec![2, 4, 4]);
        assert_eq!(proportional_split(7, &[0.0, 0.0]).iter().sum::<u64>(), 7);
        assert_eq!(proportional_split(3, &[f64::NAN, 1.0]), vec![0, 3]);
        let p = proportional_split(1000, &[1.0, 700.0, 700.0]);
        assert_eq!(p.iter().sum::<u64>(), 1000);
    }

    #[test]
    fn proportional_split_adds_up_past_the_floats_exact_integers() {
        // 2^54 - 1 rounds up to 2^54 as a float: the parts once came to one more than the total.
        for total in [(1u64 << 54) - 1, u64::MAX, (1 << 60) + 3, 1 << 53] {
            for weights in [&[1.0][..], &[1.0, 3.0], &[1.0, 1.0, 1.0], &[0.0, 5.0, 1e-9]] {
                let p = proportional_split(total, weights);
                assert_eq!(p.iter().map(|&x| x as u128).sum::<u128>(), total as u128, "{total}");
                assert!(p.iter().zip(weights).all(|(p, w)| *w > 0.0 || *p == 0), "{p:?}");
            }
        }
    }
}
