//! The default balancer across ranks: guided self-scheduling weighted by each rank's measured
//! speed. Rank j asking with Gr work-groups left gets
//!
//! ```text
//! ⌊ Gr · S_j / (max(k · N, 2) · Σ S) ⌋,   never below its smallest range (`min_groups`) nor
//!                                          20 times its fixed cost per range, never above
//!                                          its share of an even finish
//! ```
//!
//! with N live ranks, S their speeds (work-groups per second over every range each has run,
//! a rank not measured yet counted at its nominal GFLOP/s put on the measured ranks' scale)
//! and k = [`RANK_GUIDED_K`]. It is HGuided (EngineCL optimisation study) with measured
//! instead of nominal powers.
//!
//! The share of an even finish ([`crate::finish`]) is what the rank computes if the work left
//! is shared so that every rank ends at the same instant, each from when its running range is
//! predicted to end (by what the ranges nearest to it cost, [`crate::costmap`]), each paying its
//! fixed cost, and each waiting for its outputs to reach rank 0 ([`Deliveries`]). It binds only
//! near the end, where the floors would otherwise hand one rank what all should share; there a
//! rank left less than one range's worth waits if the ranks running would end sooner without it
//! ([`WAIT_MARGIN`]), and a crumb under one range goes with the range before it.
//!
//! Why not Sigmoid across ranks: a range is a whole co-execution on its node, whose last wave
//! of work-groups on each GPU misaligns with the others' by a fraction of a wave on a kernel
//! whose cost varies, so a node loses about half a wave per range: 8 % of a range of 8 waves per
//! GPU, 4 % of 16, 3.5 % of 32 (simulated, four H200s on the log-normal kernel). Ranges must
//! therefore be long through most of the run and short only at its end. Sigmoid's sizes across
//! N ranks are G/(2N²) at best and shrink with its gentle slope once the ranks' measured speeds
//! differ (they do, range by range, on an irregular kernel): at 16 nodes most ranges were at the
//! floor of 8 waves, and the log-normal kernel ran at 0.92 of the ideal. Guided sizes start at
//! 4·G/N² (k = 0.25) and shrink geometrically with the work left, so the bulk runs in long
//! ranges and the tail in short ones (`hier::RANGE_FILLS`, 4 waves): 0.95–0.96.

use hetdsl::balance::{Completion, Next, Remaining, Setup};
use hetdsl::{Balancer, Error, Package, Result};

use crate::costmap::CostMap;
use crate::finish::{level, spread, Deliveries, Lane};

/// Guided's k across ranks: the first ranges hold 1/(k·N) of the work left, shared by speed.
/// Simulated on 16 nodes of four H200s, log-normal kernel, ranges of at least 4 waves per GPU:
/// 0.949 with k = 0.5, 0.957 with 0.25 (seeds 1–4: 0.954–0.957); smaller k lengthens the first
/// ranges past what the tail can even out on 64 nodes.
pub const RANK_GUIDED_K: f64 = 0.25;

/// A range holds at least this many times its rank's fixed cost per range (set-up of the
/// node's run, messages: what rank 0 measures between handing a range out and hearing it done,
/// less what the rank computed) in work: that cost is then at most 5 % of each range. In the
/// simulated clusters (5 ms of set-up) this is below the occupancy floor; on a machine where a
/// range's run takes long to set up (device buffers and pinned staging allocated per run), it
/// keeps the ranges few. A rank's first range is not counted: it also pays what the rank pays
/// once (its devices' first use, a CPU's warm-up), which on two H200s as two ranks made rank
/// 0's second range everything left while rank 1 had run one range (balance 0.42–0.67). Near
/// the end of a short job the floor exceeds what is left even so (0.1 s a range at 1 000 rows a
/// second: 2 000 rows), and a range never holds more than its rank's share of an even finish.
pub const AMORTISE: f64 = 20.0;

/// Whatever k and the number of ranks, a range holds at most half of its rank's share of the
/// work left: with k·N under 1 the formula would hand the first rank everything (simulated,
/// 2 nodes of four H200s at k = 0.25: 0.49 of the ideal, against 0.97 with this bound).
pub const MIN_DIVISOR: f64 = 2.0;

/// A rank asking for less than one range's worth near the end waits only when the ranks
/// already running are predicted to end the run sooner without it by this fraction of the time
/// its range would take: predictions err, and a rank that waits idles. Two ranks whose outputs
/// lag: Taylor's balance 0.955 without waiting, 0.987 at 0.1, 0.973 at 0.25; at 0 sixteen
/// nodes lost 0.002–0.003 of efficiency to ranks waiting on a wrong prediction, at 0.1 none.
pub const WAIT_MARGIN: f64 = 0.1;

/// Guided self-scheduling over measured speeds (see the module's documentation).
#[derive(Debug, Clone)]
pub struct RankGuided {
    k: f64,
    left: Remaining,
    min_groups: Vec<u64>,
    nominal: Vec<f64>,
    /// Per rank: work-groups and seconds of every range it completed.
    ran: Vec<(u64, f64)>,
    /// Per rank: seconds each range after its first cost besides its computation (the span
    /// from hand-out to the answer, less the seconds computed: set-up, messages), added up,
    /// and ranges.
    fixed: Vec<(f64, u32)>,
    /// Per rank: what its first range cost besides its computation (once answered).
    first_fixed: Vec<Option<f64>>,
    /// Per rank: ranges completed.
    completed: Vec<u32>,
    /// Per rank: the range it runs, and when it was handed out (or, queued, started).
    running: Vec<Option<(Package, f64)>>,
    /// Per rank: the range queued behind the one it runs ([`Balancer::next_ahead`]).
    queued: Vec<Option<Package>>,
    /// What each completed range cost per work-group, for the end's predictions.
    costs: CostMap,
    alive: Vec<bool>,
    /// When each rank's outputs reached rank 0 after its answers, as the ranks' dispatcher
    /// records it (nothing unless it was given [`RankGuided::deliveries`]).
    deliveries: Deliveries,
}

impl RankGuided {
    pub fn new(k: f64) -> Self {
        RankGuided {
            k,
            left: Remaining::new(0),
            min_groups: Vec::new(),
            nominal: Vec::new(),
            ran: Vec::new(),
            fixed: Vec::new(),
            first_fixed: Vec::new(),
            completed: Vec::new(),
            running: Vec::new(),
            queued: Vec::new(),
            costs: CostMap::new(),
            alive: Vec::new(),
            deliveries: Deliveries::new(),
        }
    }

    /// The handle through which the ranks' dispatcher tells this balancer when each range's
    /// outputs were merged ([`crate::hier::Ranks::record_deliveries`]).
    pub fn deliveries(&self) -> Deliveries {
        self.deliveries.clone()
    }

    /// Rank `j`'s fixed cost per range after its first: measured, or the other ranks' mean
    /// before it has one (0 before anyone has).
    fn fixed_cost(&self, j: usize) -> f64 {
        let mean = |(sum, n): (f64, u32)| (n > 0).then(|| sum / n as f64);
        let others = self.fixed.iter().fold((0.0, 0), |(s, n), f| (s + f.0, n + f.1));
        mean(self.fixed[j]).or(mean(others)).unwrap_or(0.0)
    }

    /// What a first range costs besides its computation, as the ranks that answered one saw
    /// it (0 before any has).
    fn first_fixed_cost(&self) -> f64 {
        let seen: Vec<f64> = self.first_fixed.iter().flatten().copied().collect();
        if seen.is_empty() {
            0.0
        } else {
            seen.iter().sum::<f64>() / seen.len() as f64
        }
    }

    /// The fewest work-groups a range of rank `j` may hold so that its fixed cost (measured,
    /// or the other ranks' mean before its first range) is at most 1/[`AMORTISE`] of it.
    fn amortised(&self, j: usize, speed: f64) -> u64 {
        let groups = AMORTISE * self.fixed_cost(j) * speed;
        if groups.is_finite() {
            groups as u64
        } else {
            0
        }
    }

    /// Each rank's speed: measured where it has completed a range, else its nominal GFLOP/s
    /// times the measured ranks' work-groups per second per GFLOP/s (1 before any measurement).
    fn speeds(&self) -> Vec<f64> {
        let measured = |j: usize| {
            let (g, s) = self.ran[j];
            (g > 0 && s > 0.0).then(|| g as f64 / s)
        };
        let (per_flop, seen): (f64, f64) = (0..self.ran.len())
            .filter_map(|j| measured(j).map(|s| (s, self.nominal[j])))
            .fold((0.0, 0.0), |(a, b), (s, n)| (a + s, b + n));
        let scale = if per_flop > 0.0 && seen > 0.0 { per_flop / seen } else { 1.0 };
        (0..self.ran.len()).map(|j| measured(j).unwrap_or(self.nominal[j] * scale)).collect()
    }

    /// Rank `i` as the end of the run sees it when rank `j` asks at `now`
    /// ([`crate::finish`]): free now or at the predicted end of the range it runs, then paying
    /// its fixed cost, computing at the speed the range's front is predicted to allow, and
    /// waiting for its outputs to reach rank 0. Times come from what the completed ranges
    /// nearest to each range cost ([`CostMap`]) once any completed, else from the speeds.
    fn lane(&self, i: usize, j: usize, now: f64, speeds: &[f64]) -> Lane {
        let fixed = self.fixed_cost(i);
        let lag = self.deliveries.lag(i, now);
        let mut backlog = self.deliveries.backlog(i, now);
        let ahead = self.costs.cost(self.left.range().start, 1);
        let speed = ahead.map_or(speeds[i], |c| self.nominal[i] / c);
        let (free, speed) = match self.running[i] {
            Some((p, handed)) if i != j => {
                let first = if self.completed[i] == 0 { self.first_fixed_cost() } else { fixed };
                let mapped = self.costs.cost(p.offset, p.len);
                let end = handed + first + self.predicted(i, p, speeds);
                // Without a cost map, a range still running past its predicted end shows its
                // rank slower than measured: at most its length over the time it has computed
                // so far. With one, it shows a costlier region, not a slower rank.
                let ran = now - handed - first;
                let bound = match mapped {
                    None if end < now && ran > 0.0 => p.len as f64 / ran,
                    _ => speed,
                };
                // Its outputs join the backlog once computed.
                backlog = backlog.max(end.max(now)) + p.len as f64 * lag;
                let mut end = end.max(now);
                // A range queued behind it runs next, its inputs already there.
                if let Some(q) = self.queued[i] {
                    end += fixed + self.predicted(i, q, speeds);
                    backlog = backlog.max(end) + q.len as f64 * lag;
                }
                (end, speed.min(bound))
            }
            _ => (now, speed),
        };
        Lane { start: free + fixed, speed, lag, backlog }
    }

    /// Seconds rank `i` is predicted to compute `p`: by the cost map where it covers `p`,
    /// else at the rank's speed.
    fn predicted(&self, i: usize, p: Package, speeds: &[f64]) -> f64 {
        match self.costs.cost(p.offset, p.len) {
            Some(c) => c * p.len as f64 / self.nominal[i],
            None => p.len as f64 / speeds[i],
        }
    }

    /// What rank `j` asking at `now` would get: guided's size over the measured speeds,
    /// raised to its floors ([`Sizing::len`]), and its share of an even finish. `ahead`: `j`
    /// asks for a range to queue behind the one it runs, so its own lane starts after it.
    fn sizing(&self, j: usize, now: f64, ahead: bool) -> Sizing {
        let speeds = self.speeds();
        let live: Vec<usize> = (0..self.alive.len()).filter(|i| self.alive[*i]).collect();
        let total: f64 = live.iter().map(|i| speeds[*i]).sum();
        let left = self.left.left() as f64;
        let divisor = (self.k * live.len() as f64).max(MIN_DIVISOR);
        let size = left * speeds[j] / (divisor * total.max(f64::MIN_POSITIVE));
        let guided = if size.is_finite() { size.floor() as u64 } else { 0 };
        let least = self.min_groups[j].max(self.amortised(j, speeds[j]));
        // Never more than the rank's share of an even finish: near the end a floor that
        // amortises a range's fixed cost would otherwise hand one rank what all should share.
        // (No rank is numbered `usize::MAX`: asking ahead, every lane counts its running range.)
        let asker = if ahead { usize::MAX } else { j };
        let lanes: Vec<Lane> = live.iter().map(|&i| self.lane(i, asker, now, &speeds)).collect();
        let mine = self.lane(j, asker, now, &speeds);
        let together = level(&lanes, left).map_or(left, |t| mine.share(t));
        Sizing { len: guided.max(least) as f64, together, left, mine, speeds }
    }

    /// Whether the ranks running a range would end the run sooner if they took what is left,
    /// in ranges of `units`, than if rank `j` (its lane `mine`) took `units` of it now, by
    /// more than [`WAIT_MARGIN`] of the time that range would take it.
    fn sooner_without(&self, j: usize, mine: Lane, now: f64, speeds: &[f64], units: f64) -> bool {
        let others: Vec<Lane> = (0..self.alive.len())
            .filter(|&i| i != j && self.alive[i] && self.running[i].is_some())
            .map(|i| self.lane(i, j, now, speeds))
            .collect();
        let left = self.left.left() as f64;
        let Some(without) = spread(&others, left, units) else { return false };
        let rest = spread(&others, left - units, units).unwrap_or(f64::NEG_INFINITY);
        let finish = mine.finish(units);
        without < rest.max(finish) - WAIT_MARGIN * (finish - now)
    }
}

/// What a rank asking would get ([`RankGuided::sizing`]).
struct Sizing {
    /// Guided's size, raised to the rank's floors.
    len: f64,
    /// The rank's share of an even finish.
    together: f64,
    left: f64,
    mine: Lane,
    speeds: Vec<f64>,
}

impl Default for RankGuided {
    fn default() -> Self {
        RankGuided::new(RANK_GUIDED_K)
    }
}

impl Balancer for RankGuided {
    fn name(&self) -> String {
        format!("guided(k={}, measured)", self.k)
    }

    fn start(&mut self, setup: &Setup) -> Result<()> {
        if !(self.k.is_finite() && self.k > 0.0) {
            return Err(Error::BadBalancer(format!("guided k must be positive, got {}", self.k)));
        }
        if setup.devices.is_empty() {
            return Err(Error::BadBalancer("no rank to balance".into()));
        }
        let n = setup.devices.len();
        self.left = Remaining::new(setup.total_groups);
        self.min_groups = setup.devices.iter().map(|d| d.min_groups.max(1)).collect();
        // A rank with no usable nominal speed counts as the mean of the others (or 1).
        let usable: Vec<f64> = setup
            .devices
            .iter()
            .map(|d| d.nominal_gflops)
            .filter(|g| g.is_finite() && *g > 0.0)
            .collect();
        let mean =
            if usable.is_empty() { 1.0 } else { usable.iter().sum::<f64>() / usable.len() as f64 };
        self.nominal = setup
            .devices
            .iter()
            .map(|d| {
                if d.nominal_gflops.is_finite() && d.nominal_gflops > 0.0 {
                    d.nominal_gflops
                } else {
                    mean
                }
            })
            .collect();
        self.ran = vec![(0, 0.0); n];
        self.fixed = vec![(0.0, 0); n];
        self.first_fixed = vec![None; n];
        self.completed = vec![0; n];
        self.running = vec![None; n];
        self.queued = vec![None; n];
        self.costs = CostMap::new();
        self.alive = vec![true; n];
        Ok(())
    }

    fn next(&mut self, device: usize, now: f64) -> Next {
        if !self.alive.get(device).copied().unwrap_or(false) || self.left.is_empty() {
            return Next::Done;
        }
        let Sizing { len, together, left, mine, speeds } = self.sizing(device, now, false);
        let mut len = len.min(together);
        let fill = self.min_groups[device] as f64;
        // A crumb left behind would cost whichever rank takes it a whole range's fixed cost.
        if left - len < fill {
            len = left;
        }
        if len < fill {
            // Too little to be worth a range: wait if the others end the run sooner without.
            if self.sooner_without(device, mine, now, &speeds, fill.min(left)) {
                return Next::Wait;
            }
            len = fill;
        }
        match self.left.take(len.round() as u64) {
            Some(p) => {
                self.running[device] = Some((p, now));
                Next::Run(p)
            }
            None => Next::Done,
        }
    }

    /// The range `next` would give `device` once the one it runs ends, handed out now so that
    /// its inputs travel meanwhile; never one of the end's ranges (where the share of an even
    /// finish binds, or a range would leave less than one behind): those are sized when the
    /// rank is idle, from what is known then.
    fn next_ahead(&mut self, device: usize, now: f64) -> Next {
        let alive = self.alive.get(device).copied().unwrap_or(false);
        if !alive || self.running[device].is_none() || self.queued[device].is_some() {
            return Next::Wait;
        }
        let Sizing { len, together, left, .. } = self.sizing(device, now, true);
        let fill = self.min_groups[device] as f64;
        if len > together || len < fill || left - len < fill {
            return Next::Wait;
        }
        match self.left.take(len.round() as u64) {
            Some(p) => {
                self.queued[device] = Some(p);
                Next::Run(p)
            }
            None => Next::Wait,
        }
    }

    fn completed(&mut self, done: &Completion) {
        let j = done.device;
        if j >= self.ran.len() {
            return;
        }
        let seconds = done.seconds().max(0.0);
        let besides = (done.host_end - done.host_start - seconds).max(0.0);
        self.ran[j].0 += done.package.len;
        self.ran[j].1 += seconds;
        // A range queued behind it runs from now.
        self.running[j] = self.queued[j].take().map(|q| (q, done.host_end));
        self.costs.add(done.package.offset, done.package.len, seconds, self.nominal[j]);
        if self.completed[j] == 0 {
            self.first_fixed[j] = Some(besides);
        } else {
            self.fixed[j].0 += besides;
            self.fixed[j].1 += 1;
        }
        self.completed[j] += 1;
    }

    fn device_lost(&mut self, device: usize) {
        if let Some(a) = self.alive.get_mut(device) {
            *a = false;
            self.running[device] = None;
            self.queued[device] = None;
        }
    }
}

#[cfg(test)]
mod tests;
