//! Repeated calls of the same cluster launch, across ranks. A fresh call hands out many ranges
//! (guided self-scheduling, [`crate::guided`]), and each range is a whole co-execution on its
//! node that pays its set-up and, on a GPU, the uneven end of its last wave: on two H100 ranks
//! NBody ran five packages per GPU where one process ran one, at 0.70 of its time. A call of a
//! launch the cluster has run before starts instead from what the last call measured: each rank
//! gets one range, sized so that every rank is predicted to end together ([`RankPlan`], cut by
//! [`crate::recall::CostProfile`]), the ranges laid end to end over the NDRange.
//!
//! While a plan is new, or after a planned call that ended under [`TAIL_SETTLED`], each rank's
//! range keeps a tail ([`PLAN_TAIL`] of its cost) that any rank may take: a rank runs its own
//! tail after its range, unless another rank would end it sooner (the owner overran its
//! prediction, or was lost), so a rank that slowed down is absorbed by the others. Once a plan
//! ends settled the next call runs it without tails, one range per rank; a rank that slows down
//! then costs one unbalanced call, after which the tails come back and the cuts move.
//!
//! The rules mirror hetdsl's repeated one-shot launches (`balance::relaunch`, judged by time):
//! the first call, and any call after one with a fault, runs fresh; a planned call that ends
//! with a balance under [`SETTLED`] is kept where it ran faster than the fresh calls (the
//! median of their last three, the first call's never counted: it pays the devices' first use),
//! and struck for good where it ran slower: the launch then always runs fresh. With no fresh
//! time known yet, the next call runs fresh and the plan is made again from it. Unlike a
//! one-shot relaunch, a balanced plan is judged by time too (once a fresh call after the first
//! has a time; until then the call after the plan runs fresh once): struck where it ran over
//! [`SLOWER_THAN_FRESH`] slower, since balance does not show outputs that no longer stream
//! back while the ranks compute. Pure.

use std::collections::VecDeque;

use hetdsl::balance::relaunch::RecentTimes;
use hetdsl::balance::{Completion, Next, Setup};
use hetdsl::{Balancer, Error, Package, Result};

use crate::recall::{CostProfile, Measured};

/// A planned call that ends with a balance under this is judged against the fresh calls' time
/// (hetdsl's `balance::relaunch::SETTLED`).
pub const SETTLED: f64 = hetdsl::balance::relaunch::SETTLED;

/// A planned call that ends with at least this balance lets the next call run without tails.
pub const TAIL_SETTLED: f64 = 0.97;

/// The share of each rank's planned cost held back as a tail that any rank may take while the
/// plan is not settled. Each tail is one more range on its node: a GPU's extra package costs
/// the uneven end of its last wave (NBody on an H100: about 60 ms), so the tail is kept small,
/// and it only absorbs a rank that runs up to this much slower than predicted.
pub const PLAN_TAIL: f64 = 0.05;

/// A balanced planned call slower than the fresh calls by more than this fraction strikes the
/// plan. Balance does not show what one range per rank costs in messages: a range's outputs go
/// back when it ends, so with one range per rank none overlap the computing (Taylor on two H100
/// ranks, a GiB of outputs each: 3.89 s planned at balance 0.95-0.99 against 3.78 s fresh).
pub const SLOWER_THAN_FRESH: f64 = 0.01;

/// Launches remembered per cluster (the oldest forgotten first).
pub const REMEMBERED: usize = 32;

/// How a call ran across ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// The default balancer across ranks, learning the ranks afresh.
    Fresh,
    /// One range per rank from the last call's measurements.
    Planned,
}

impl Form {
    /// What the cluster report calls it.
    pub fn name(self) -> &'static str {
        match self {
            Form::Fresh => "fresh",
            Form::Planned => "remembered plan",
        }
    }
}

/// One range a rank ran and rank 0 merged.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RangeRun {
    pub rank: usize,
    pub package: Package,
    /// Seconds the rank's node took for it.
    pub seconds: f64,
    /// Seconds from handing it out to its outputs merged, beyond `seconds`: messages, inputs
    /// and outputs moving.
    pub overhead: f64,
}

/// What rank 0 saw of one call.
#[derive(Debug, Clone, PartialEq)]
pub struct CallOutcome {
    /// No rank lost, no range re-run.
    pub clean: bool,
    pub roi_seconds: f64,
    pub balance: f64,
    pub ranges: Vec<RangeRun>,
}

/// What the cluster remembers of one launch across ranks.
#[derive(Debug, Clone, Default)]
pub struct RankRecall {
    profile: CostProfile,
    /// Per rank, its mean seconds per range besides computing.
    fixed: Vec<f64>,
    /// The fresh calls' last times (the first call's never): their median is the fresh time.
    fresh_times: RecentTimes,
    calls: u32,
    /// A plan ended unbalanced and slower than the fresh calls: always fresh.
    struck: bool,
    /// The last planned call ended at [`TAIL_SETTLED`] or better.
    settled: bool,
    /// A plan ran balanced before any fresh time was known: the next call runs fresh, once,
    /// so that the plans after it are judged by time.
    time_wanted: bool,
}

impl RankRecall {
    /// The next call's plan over `total` units and `ranks` ranks, holding back `tail` of each
    /// rank's cost while the plan is not settled; `None`: run fresh.
    pub fn choose(&self, ranks: usize, total: u64, tail: f64) -> Option<RankPlan> {
        if self.struck
            || self.time_wanted
            || self.profile.speeds().len() != ranks
            || !self.profile.is_known()
        {
            return None;
        }
        let tail = if self.settled { 0.0 } else { tail };
        RankPlan::cut(&self.profile, &self.fixed, total, tail)
    }

    /// Whether the launch always runs fresh now.
    pub fn is_struck(&self) -> bool {
        self.struck
    }

    /// Records a call that ran in `form` on `ranks` ranks (see the module's documentation).
    pub fn record(&mut self, ranks: usize, form: Form, outcome: &CallOutcome) {
        let first = self.calls == 0;
        self.calls = self.calls.saturating_add(1);
        if !outcome.clean {
            // Its measurements miss the lost rank's ranges: the next call learns afresh.
            self.profile = CostProfile::default();
            self.settled = false;
            return;
        }
        let measured: Vec<Measured> = outcome
            .ranges
            .iter()
            .map(|r| Measured {
                lane: r.rank,
                offset: r.package.offset,
                len: r.package.len,
                seconds: r.seconds,
            })
            .collect();
        let fixed = (0..ranks).map(|r| fixed_cost(&outcome.ranges, r)).collect();
        match form {
            Form::Fresh => {
                self.profile.learn_interleaved(ranks, &measured);
                self.fixed = fixed;
                self.settled = false;
                if !first {
                    self.fresh_times.push(outcome.roi_seconds);
                    self.time_wanted = false;
                }
            }
            Form::Planned => {
                let fresh = self.fresh_times.median();
                if outcome.balance >= SETTLED {
                    match fresh {
                        None => self.time_wanted = true,
                        Some(f) if outcome.roi_seconds > f * (1.0 + SLOWER_THAN_FRESH) => {
                            self.struck = true;
                            return;
                        }
                        Some(_) => {}
                    }
                } else {
                    match fresh {
                        None => {
                            self.profile = CostProfile::default();
                            self.settled = false;
                            return;
                        }
                        Some(fresh) if outcome.roi_seconds >= fresh => {
                            self.struck = true;
                            return;
                        }
                        // Unbalanced, yet faster than fresh: kept, and the cuts move.
                        Some(_) => {}
                    }
                }
                self.profile.learn_planned(&measured);
                self.fixed = fixed;
                self.settled = outcome.balance >= TAIL_SETTLED;
            }
        }
    }
}

/// Rank `rank`'s mean seconds per range besides computing, over its ranges after its first
/// where it ran several: a call's first range on a node also pays what the node pays once per
/// call (its devices' warm-up; on the first call, their first use), as in [`crate::guided`].
fn fixed_cost(ranges: &[RangeRun], rank: usize) -> f64 {
    let mine: Vec<f64> =
        ranges.iter().filter(|r| r.rank == rank).map(|r| r.overhead.max(0.0)).collect();
    let later = if mine.len() > 1 { &mine[1..] } else { &mine[..] };
    if later.is_empty() {
        0.0
    } else {
        later.iter().sum::<f64>() / later.len() as f64
    }
}

/// Each rank's range of a planned call: its main range, then its tail, laid end to end in rank
/// order over the NDRange; with each rank's predicted seconds.
#[derive(Debug, Clone, PartialEq)]
pub struct RankPlan {
    pub total: u64,
    pub main: Vec<Option<Package>>,
    pub tail: Vec<Option<Package>>,
    /// Per rank: units per second on average work, seconds per range besides computing.
    speeds: Vec<f64>,
    fixed: Vec<f64>,
    /// Per rank: the predicted seconds of its main range, and the cost of its tail.
    main_seconds: Vec<f64>,
    tail_cost: Vec<f64>,
}

impl RankPlan {
    /// The plan from `profile`: ranks end together, each paying its fixed cost once (most of
    /// what a remote rank's range costs besides computing is its outputs' transfer, which a
    /// tail does not add to).
    pub fn cut(profile: &CostProfile, fixed: &[f64], total: u64, tail: f64) -> Option<RankPlan> {
        let n = profile.speeds().len();
        let per_call: Vec<f64> = (0..n).map(|r| fixed.get(r).copied().unwrap_or(0.0)).collect();
        let regions = profile.cut(0..total, &per_call, &vec![true; n], 0.0)?;
        let speeds: Vec<f64> = profile.speeds().iter().map(|s| s.unwrap_or(0.0)).collect();
        let mut plan = RankPlan {
            total,
            main: vec![None; n],
            tail: vec![None; n],
            speeds,
            fixed: per_call,
            main_seconds: vec![0.0; n],
            tail_cost: vec![0.0; n],
        };
        for (r, region) in regions.into_iter().enumerate() {
            let Some(region) = region else { continue };
            let cut = profile.split(region.clone(), 1.0 - tail.clamp(0.0, 1.0));
            let cut = if cut <= region.start { region.end } else { cut };
            let piece = |a: u64, b: u64| (b > a).then_some(Package { offset: a, len: b - a });
            plan.main[r] = piece(region.start, cut);
            plan.tail[r] = piece(cut, region.end);
            let speed = plan.speeds[r].max(f64::MIN_POSITIVE);
            plan.main_seconds[r] = plan.fixed[r] + profile.cost(region.start, cut) / speed;
            plan.tail_cost[r] = profile.cost(cut, region.end);
        }
        Some(plan)
    }

    /// Every range of the plan, main and tail.
    pub fn ranges(&self) -> Vec<Package> {
        self.main.iter().chain(&self.tail).flatten().copied().collect()
    }

    /// Whether the plan holds tails.
    pub fn has_tail(&self) -> bool {
        self.tail.iter().any(Option::is_some)
    }
}

/// The balancer across ranks of a planned call (see the module's documentation).
#[derive(Debug)]
pub struct PlannedRanks {
    plan: RankPlan,
    /// Per rank: its main range not handed out yet.
    main: Vec<Option<Package>>,
    /// Tails not handed out yet, by owner.
    tails: Vec<Option<Package>>,
    /// Ranges of lost ranks, for whichever rank asks.
    orphans: VecDeque<Package>,
    /// Per rank: when its main range was handed out, while it runs.
    running_main: Vec<Option<f64>>,
    alive: Vec<bool>,
}

impl PlannedRanks {
    pub fn new(plan: RankPlan) -> Self {
        PlannedRanks {
            main: plan.main.clone(),
            tails: plan.tail.clone(),
            plan,
            orphans: VecDeque::new(),
            running_main: Vec::new(),
            alive: Vec::new(),
        }
    }

    /// When rank `r` would end the tail of `owner` if it took it at `now`.
    fn ends_tail(&self, r: usize, owner: usize, now: f64) -> f64 {
        let speed = self.plan.speeds[r].max(f64::MIN_POSITIVE);
        now + self.plan.fixed[r] + self.plan.tail_cost[owner] / speed
    }

    /// The tail of another rank that `r` would end sooner than its owner, predicted at `now`
    /// from when the owner's main range should end (or now, once it has overran).
    fn stealable(&self, r: usize, now: f64) -> Option<usize> {
        (0..self.tails.len())
            .filter(|&o| o != r && self.tails[o].is_some())
            .filter(|&o| {
                let owner_free = match self.running_main[o] {
                    Some(handed) => (handed + self.plan.main_seconds[o]).max(now),
                    None => now,
                };
                self.ends_tail(r, o, now) < self.ends_tail(o, o, owner_free)
            })
            .max_by(|a, b| self.plan.tail_cost[*a].total_cmp(&self.plan.tail_cost[*b]))
    }
}

impl Balancer for PlannedRanks {
    fn name(&self) -> String {
        if self.plan.has_tail() {
            format!("remembered plan (tails of {:.0} %)", PLAN_TAIL * 100.0)
        } else {
            "remembered plan".into()
        }
    }

    fn start(&mut self, setup: &Setup) -> Result<()> {
        let n = setup.devices.len();
        let ranges: Vec<_> = self.plan.ranges().iter().map(|p| p.offset..p.end()).collect();
        if self.plan.main.len() != n
            || self.plan.total != setup.total_groups
            || !crate::recall::tiles(&ranges, 0..setup.total_groups)
        {
            return Err(Error::BadBalancer(format!(
                "a remembered plan for {} ranks over {} units does not fit {n} ranks over {}",
                self.plan.main.len(),
                self.plan.total,
                setup.total_groups
            )));
        }
        self.main = self.plan.main.clone();
        self.tails = self.plan.tail.clone();
        self.orphans.clear();
        self.running_main = vec![None; n];
        self.alive = vec![true; n];
        Ok(())
    }

    fn next(&mut self, device: usize, now: f64) -> Next {
        if !self.alive.get(device).copied().unwrap_or(false) {
            return Next::Done;
        }
        if let Some(p) = self.main[device].take() {
            self.running_main[device] = Some(now);
            return Next::Run(p);
        }
        if let Some(p) = self.tails[device].take().or_else(|| self.orphans.pop_front()) {
            return Next::Run(p);
        }
        if let Some(owner) = self.stealable(device, now) {
            return self.tails[owner].take().map_or(Next::Done, Next::Run);
        }
        if self.tails.iter().any(Option::is_some) {
            // Its owner is predicted to end it sooner: asked again when anything completes.
            Next::Wait
        } else {
            Next::Done
        }
    }

    fn completed(&mut self, done: &Completion) {
        if let Some(slot) = self.running_main.get_mut(done.device) {
            *slot = None;
        }
    }

    fn device_lost(&mut self, device: usize) {
        if let Some(a) = self.alive.get_mut(device) {
            *a = false;
            self.running_main[device] = None;
            let left = self.main[device].take().into_iter().chain(self.tails[device].take());
            self.orphans.extend(left);
        }
    }
}

/// Launches remembered by key, the oldest forgotten first beyond [`REMEMBERED`].
#[derive(Debug)]
pub struct Memory<T>(Vec<(String, T)>);

impl<T> Default for Memory<T> {
    fn default() -> Self {
        Memory(Vec::new())
    }
}

impl<T: Default> Memory<T> {
    /// The entry of `key`, made empty if there is none, now the most recent.
    pub fn entry(&mut self, key: &str) -> &mut T {
        let at = self.0.iter().position(|(k, _)| k == key);
        let entry = match at {
            Some(i) => self.0.remove(i),
            None => (key.to_string(), T::default()),
        };
        self.0.push(entry);
        if self.0.len() > REMEMBERED {
            self.0.remove(0);
        }
        &mut self.0.last_mut().expect("just pushed").1
    }
}

#[cfg(test)]
mod tests;
