//! Where the ranks' last ranges end together. Guided self-scheduling shrinks ranges with the
//! work left, but each range also costs its rank a fixed time (its run's set-up, messages), and
//! a floor that amortises that cost, applied near the end, hands one rank what the others
//! should have shared: on a short job two ranks then end seconds apart. Near the end, a rank
//! asking for work is given instead what lets every rank end at the same instant: each rank
//! can start a new range once it is free (now, or when its running range is predicted to end)
//! and has paid its fixed cost, and computes at its measured speed from then on.
//!
//! A rank's last range ends for the run when its outputs are in rank 0's buffers. Outputs
//! travel to rank 0 one range after another while the rank computes its next range, so a rank
//! whose link is slower than its computing has a backlog of them; its last range's outputs
//! arrive after that backlog and their own transfer ([`Deliveries`]), so it gets less of the
//! end.
//!
//! Pure arithmetic over predictions; [`crate::guided`] decides when it applies.

use std::sync::{Arc, Mutex};

use hetdsl::Package;

/// One rank, as the end of the run sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Lane {
    /// When the rank could start computing a range handed out now.
    pub start: f64,
    /// Units it computes per second.
    pub speed: f64,
    /// Seconds each unit's outputs take to reach rank 0 once computed (0 for rank 0's own).
    pub lag: f64,
    /// When the outputs of its earlier ranges will all have reached rank 0.
    pub backlog: f64,
}

impl Lane {
    /// When a range of `units` handed to this lane now would be computed and delivered.
    pub fn finish(&self, units: f64) -> f64 {
        let lag = if self.lag.is_finite() { self.lag.max(0.0) } else { 0.0 };
        (self.start + units / self.speed).max(self.backlog) + units * lag
    }

    /// The units this lane computes and delivers by `t`: a range of x units ends at
    /// `max(start + x / speed, backlog) + x · lag`.
    pub fn share(&self, t: f64) -> f64 {
        if !(self.speed.is_finite() && self.speed > 0.0) {
            return 0.0;
        }
        let lag = if self.lag.is_finite() { self.lag.max(0.0) } else { 0.0 };
        let computed = (t - self.start) / (1.0 / self.speed + lag);
        let delivered = if lag > 0.0 {
            (t - self.backlog) / lag
        } else if t >= self.backlog {
            f64::INFINITY
        } else {
            0.0
        };
        computed.min(delivered).max(0.0)
    }
}

/// The instant `T` at which every lane ends when `left` units are shared so that they do:
/// `Σ share(T) = left`. `None` when no lane can take any work.
pub fn level(lanes: &[Lane], left: f64) -> Option<f64> {
    let usable: Vec<Lane> = lanes
        .iter()
        .copied()
        .filter(|l| {
            l.speed.is_finite() && l.speed > 0.0 && l.start.is_finite() && l.backlog.is_finite()
        })
        .collect();
    let total = |t: f64| usable.iter().map(|l| l.share(t)).sum::<f64>();
    let lo = usable.iter().map(|l| l.start.max(l.backlog)).fold(f64::INFINITY, f64::min);
    if !lo.is_finite() {
        return None;
    }
    let left = left.max(0.0);
    // Every lane's share grows without bound with `T`: double the span until it holds `left`.
    let mut span = 1e-6_f64.max(lo.abs() * 1e-9);
    while total(lo + span) < left {
        span *= 2.0;
        if !span.is_finite() {
            return None;
        }
    }
    let (mut a, mut b) = (lo, lo + span);
    for _ in 0..100 {
        let mid = 0.5 * (a + b);
        if total(mid) < left {
            a = mid;
        } else {
            b = mid;
        }
    }
    Some(b)
}

/// When the last of `lanes` ends if `units` are handed out in ranges of `range` units (the
/// last one smaller), each to the lane that would end it first: ranges no smaller than a
/// rank's fill cannot be shared as finely as [`level`] shares. `None` when no lane can take
/// work; `Some(-inf)` when there is none to take.
pub fn spread(lanes: &[Lane], units: f64, range: f64) -> Option<f64> {
    let usable: Vec<&Lane> =
        lanes.iter().filter(|l| l.speed.is_finite() && l.speed > 0.0).collect();
    if usable.is_empty() {
        return None;
    }
    let range = range.max(1.0);
    let mut given = vec![0.0; usable.len()];
    let mut rest = units.max(0.0);
    let mut end = f64::NEG_INFINITY;
    while rest > 0.0 {
        let r = rest.min(range);
        let (best, at) = (0..usable.len())
            .map(|i| (i, usable[i].finish(given[i] + r)))
            .min_by(|a, b| a.1.total_cmp(&b.1))?;
        given[best] += r;
        end = end.max(at);
        rest -= r;
    }
    Some(end)
}

/// Per rank, what rank 0 saw of its outputs after its answers, shared by the ranks' dispatcher
/// ([`crate::hier::Ranks`], which records) and the balancer (which reads).
#[derive(Debug, Clone, Default)]
pub struct Deliveries(Arc<Mutex<Vec<Delivered>>>);

#[derive(Debug, Clone, Default)]
struct Delivered {
    /// Seconds each range's outputs spent in transfer (from its answer or the previous one's
    /// arrival, whichever came later, to its arrival), and the units, added up.
    transfer: f64,
    units: u64,
    /// Ranges answered whose outputs have not arrived, with when.
    pending: Vec<(Package, f64)>,
    last: f64,
}

impl Deliveries {
    pub fn new() -> Self {
        Self::default()
    }

    fn with<T>(&self, rank: usize, f: impl FnOnce(&mut Delivered) -> T) -> Option<T> {
        let mut d = self.0.lock().ok()?;
        if d.len() <= rank {
            d.resize(rank + 1, Delivered::default());
        }
        Some(f(&mut d[rank]))
    }

    /// Rank `rank` answered `range` at `at`; its outputs are on their way.
    pub fn answered(&self, rank: usize, range: Package, at: f64) {
        self.with(rank, |d| d.pending.push((range, at)));
    }

    /// The outputs of rank `rank`'s `range` arrived at `at`.
    pub fn arrived(&self, rank: usize, range: Package, at: f64) {
        self.with(rank, |d| {
            let Some(i) = d.pending.iter().position(|(p, _)| *p == range) else { return };
            let (_, answered) = d.pending.remove(i);
            d.transfer += (at - answered.max(d.last)).max(0.0);
            d.units += range.len;
            d.last = d.last.max(at);
        });
    }

    /// Seconds per unit that rank `rank`'s outputs spend in transfer, as seen at `now`: the
    /// mean over those that arrived, and no less than the oldest still on its way has taken
    /// so far (the only sign of a slow link before anything arrived). 0 before any answer.
    pub fn lag(&self, rank: usize, now: f64) -> f64 {
        let lag = self.with(rank, |d| {
            let seen = if d.units > 0 { d.transfer / d.units as f64 } else { 0.0 };
            let oldest = d
                .pending
                .first()
                .map_or(0.0, |(p, at)| (now - at.max(d.last)).max(0.0) / p.len.max(1) as f64);
            seen.max(oldest)
        });
        lag.unwrap_or(0.0)
    }

    /// When the outputs rank `rank` has answered will all have arrived, as seen at `now`.
    pub fn backlog(&self, rank: usize, now: f64) -> f64 {
        let lag = self.lag(rank, now);
        let end = self.with(rank, |d| {
            let first = d.pending.iter().map(|(_, at)| *at).fold(f64::INFINITY, f64::min);
            let units: u64 = d.pending.iter().map(|(p, _)| p.len).sum();
            if units == 0 {
                now
            } else {
                first.max(d.last) + units as f64 * lag
            }
        });
        end.unwrap_or(now).max(now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lane(start: f64, speed: f64) -> Lane {
        Lane { start, speed, lag: 0.0, backlog: 0.0 }
    }

    #[test]
    fn lanes_that_start_later_get_less() {
        let lanes = [lane(0.0, 100.0), lane(1.0, 100.0)];
        // 300 units: 100 by the first alone in its first second, then 200 shared: T = 2.
        let t = level(&lanes, 300.0).unwrap();
        assert!((t - 2.0).abs() < 1e-9, "{t}");
        assert!((lanes[0].share(t) - 200.0).abs() < 1e-6);
        assert!((lanes[1].share(t) - 100.0).abs() < 1e-6);
        // 50 units: the first ends them before the second could start.
        let t = level(&lanes, 50.0).unwrap();
        assert!((t - 0.5).abs() < 1e-9 && lanes[1].share(t) == 0.0);
    }

    #[test]
    fn speeds_weigh_the_shares_and_bad_lanes_are_left_out() {
        let lanes = [lane(0.0, 300.0), lane(0.0, 100.0), lane(0.0, f64::NAN)];
        let t = level(&lanes, 400.0).unwrap();
        assert!((lanes[0].share(t) - 300.0).abs() < 1e-6);
        assert_eq!(lanes[2].share(t), 0.0);
        assert_eq!(level(&[lane(0.0, 0.0)], 10.0), None);
    }

    /// A lane whose outputs take as long to deliver as to compute gets a third of the end
    /// beside a lane whose outputs cost nothing, and less again behind a backlog.
    #[test]
    fn outputs_in_transit_shorten_a_lane() {
        let slow = Lane { start: 0.0, speed: 100.0, lag: 0.01, backlog: 0.0 };
        let t = level(&[lane(0.0, 100.0), slow], 300.0).unwrap();
        assert!((slow.share(t) - 100.0).abs() < 1e-6, "{}", slow.share(t));
        assert!((slow.finish(100.0) - 2.0).abs() < 1e-9);
        // Its earlier outputs arrive at 1.5 s: its own follow them, 0.01 s a unit, by T.
        // 100 T + 100 (T − 1.5) = 300: T = 2.25, and it gets 75 units.
        let behind = Lane { backlog: 1.5, ..slow };
        let t = level(&[lane(0.0, 100.0), behind], 300.0).unwrap();
        assert!((t - 2.25).abs() < 1e-9, "{t}");
        assert!((behind.share(t) - 75.0).abs() < 1e-6, "{}", behind.share(t));
        assert!((behind.finish(75.0) - 2.25).abs() < 1e-9);
    }

    /// Ranges of a fill go to whichever lane ends them first: two fills on two lanes alike end
    /// at once, a third waits for the first lane free.
    #[test]
    fn whole_ranges_go_where_they_end_first() {
        let lanes = [lane(0.0, 100.0), lane(0.5, 100.0)];
        assert_eq!(spread(&lanes, 0.0, 100.0), Some(f64::NEG_INFINITY));
        assert!((spread(&lanes, 200.0, 100.0).unwrap() - 1.5).abs() < 1e-9);
        assert!((spread(&lanes, 300.0, 100.0).unwrap() - 2.0).abs() < 1e-9);
        assert!((spread(&lanes, 50.0, 100.0).unwrap() - 0.5).abs() < 1e-9);
        assert_eq!(spread(&[lane(0.0, 0.0)], 10.0, 1.0), None);
    }

    #[test]
    fn deliveries_count_transfer_apart_from_the_wait_behind_earlier_outputs() {
        let d = Deliveries::new();
        assert_eq!(d.lag(1, 0.0), 0.0);
        let (a, b) = (Package { offset: 0, len: 100 }, Package { offset: 100, len: 100 });
        // Two ranges answered at 1 and 2 s; the link delivers one at 3 s, the other at 4 s:
        // 2 s and then 1 s of transfer for 100 units each.
        d.answered(1, a, 1.0);
        d.clone().answered(1, b, 2.0);
        // Nothing arrived yet, but the first has been on its way for 1.5 s at 2.5 s.
        assert!((d.lag(1, 2.5) - 0.015).abs() < 1e-12);
        assert!((d.backlog(1, 2.5) - 4.0).abs() < 1e-12);
        d.arrived(1, a, 3.0);
        assert!((d.lag(1, 3.0) - 0.02).abs() < 1e-12);
        // At 3 s one range waits, answered at 2 s and in transfer since 3 s: arrives at 5 s.
        assert!((d.backlog(1, 3.0) - 5.0).abs() < 1e-12);
        d.arrived(1, b, 4.0);
        assert!((d.lag(1, 4.0) - 0.015).abs() < 1e-12);
        assert_eq!(d.backlog(1, 4.5), 4.5);
        assert_eq!(d.lag(0, 4.5), 0.0);
    }
}
