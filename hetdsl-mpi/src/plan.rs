//! Repeated calls of the same cluster launch, across ranks. A fresh call hands out many ranges
//! (guided self-scheduling, [`crate::guided`]), and each range is a whole co-execution on its
//! node that pays its set-up and, on a GPU, the uneven end of its last wave: on two H100 ranks
//! NBody ran five packages per GPU where one process ran one, at 0.70 of its time. A call of a
//! launch the cluster has run before starts instead from what the calls before measured: each
//! rank gets one range, sized so that every rank is predicted to end together ([`RankPlan`],
//! cut by [`crate::recall::CostProfile`]), the ranges laid end to end over the NDRange.
//!
//! - The cost map comes first from a fresh call, whose ranks ran a few long ranges each (not
//!   interleaved): each rank's speed is taken as its nominal one, scaled to the call's time.
//!   Each planned call then moves the cuts by what it measured; a fresh call after that (run
//!   for its time) is only timed.
//! - A remote rank whose range moves much besides computing gets it in a few pieces
//!   ([`crate::moving`]), so that each piece's outputs go back while it computes the next.
//! - Optionally (`ClusterLaunch::plan_tail`; none by default), while a plan is new
//!   or after a planned call that ended under [`TAIL_SETTLED`], each rank's range keeps a tail
//!   that any rank may take when its owner overran its prediction or was lost.
//!
//! The rules mirror hetdsl's repeated one-shot launches (`balance::relaunch`, judged by time):
//! the first call, and any call after one with a fault, runs fresh; until a fresh call after
//! the first has a time (the first pays the devices' first use), the call after a plan runs
//! fresh once, so that plans are judged by time. A planned call that ends with a balance under
//! [`SETTLED`] is kept where it ran faster than the fresh calls (the median of their last
//! three); where it ran slower, it is kept for the first such call in a row, then only while
//! each ends better balanced than the one before, for [`MISSES`] calls at most, and then struck
//! for good: the launch always runs fresh. A settled plan's first such call is taken for noise:
//! the plan runs again unchanged, and only a second one in a row counts. A balanced plan is
//! struck where its last three calls' median ran over [`SLOWER_THAN_FRESH`] slower than
//! [`FRESH_TO_STRIKE`] fresh calls, since balance does not show outputs that no longer stream
//! back while the ranks compute. Pure.

use std::collections::VecDeque;

use hetdsl::balance::relaunch::RecentTimes;
use hetdsl::balance::{Completion, Next, Setup};
use hetdsl::{Balancer, Error, Package, Result};

use crate::moving::{cut_pieces, exposed, shape, Moving, Shape};
use crate::recall::{CostProfile, Measured};

/// A planned call that ends with a balance under this is judged against the fresh calls' time
/// (hetdsl's `balance::relaunch::SETTLED`).
pub const SETTLED: f64 = hetdsl::balance::relaunch::SETTLED;

/// A planned call that ends with at least this balance lets the next call run without tails.
pub const TAIL_SETTLED: f64 = 0.97;

/// The share of each rank's planned cost held back by default as a tail that any rank may take
/// while the plan is not settled: none. Each tail is one more range on its node (a GPU's extra
/// package costs the uneven end of its last wave, about 60 ms for NBody on an H100), and what
/// a tail's time teaches the cost map includes that: on two H100 ranks NBody's plans ended at
/// balance 0.70-0.99 with tails of 5 % and were struck; simulated ([`crate::repeated`]), plans
/// with tails of 5 % settle where plans without do, two calls later.
pub const PLAN_TAIL: f64 = 0.0;

/// A balanced planned call slower than the fresh calls by more than this fraction strikes the
/// plan. Balance does not show what one range per rank costs in messages: a range's outputs go
/// back when it ends, so with one range per rank none overlap the computing (Taylor on two H100
/// ranks, a GiB of outputs each: 3.89 s planned at balance 0.95-0.99 against 3.78 s fresh).
pub const SLOWER_THAN_FRESH: f64 = 0.01;

/// A balanced plan is struck for being slower only against the median of at least this many
/// fresh calls; against fewer, the next call runs fresh and the plan is judged again.
pub const FRESH_TO_STRIKE: usize = 2;

/// An unbalanced planned call slower than fresh, after the first in a row, keeps its plan only
/// if its balance is at least this much better than the last such call's, and for at most
/// [`MISSES`] such calls in a row: each planned call moves the cuts by what it measured, and a
/// cost map learned from a fresh call's few long ranges (Mandelbrot's, a few hundred rows each
/// across the set) may need several to settle.
pub const BETTER: f64 = 0.02;
pub const MISSES: u32 = 3;

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
    /// When it was handed out, seconds from the call's start; queued, when it started (its
    /// rank's range before it answered).
    pub handed: f64,
    /// Queued behind the rank's range before it: its inputs travelled while that one ran.
    pub queued: bool,
}

/// What rank 0 saw of one call.
#[derive(Debug, Clone, PartialEq)]
pub struct CallOutcome {
    /// No rank lost, no range re-run.
    pub clean: bool,
    pub roi_seconds: f64,
    pub balance: f64,
    pub ranges: Vec<RangeRun>,
    /// Per rank, the nominal GFLOP/s of its devices together.
    pub nominal: Vec<f64>,
    /// Of the bytes the ranges moved, the share that were outputs.
    pub output_share: f64,
    /// The ranks got their next range while computing the last ([`crate::hier::Ranks::queue_ahead`]):
    /// pieces overlap their inputs too.
    pub queue_ahead: bool,
    /// Per rank: its ranges move no bytes (rank 0's node, working in the caller's memory);
    /// empty where not known: every rank is taken to move some.
    pub in_place: Vec<bool>,
}

/// What the cluster remembers of one launch across ranks.
#[derive(Debug, Clone, Default)]
pub struct RankRecall {
    profile: CostProfile,
    /// Per rank, what its ranges spent besides computing in the fresh call learned from
    /// ([`Moving`]).
    moving: Vec<Moving>,
    /// Per rank, from the last planned call: the pieces it ran and its seconds not computing
    /// from its first hand-out to its last merge.
    exposed: Vec<(usize, f64)>,
    /// The fresh calls' last times (the first call's never): their median is the fresh time.
    fresh_times: RecentTimes,
    /// The planned calls' last times: a balanced plan is judged by their median, so that one
    /// slow call does not strike a plan that ran faster than fresh before it.
    planned_times: RecentTimes,
    calls: u32,
    /// A plan ended unbalanced and slower than the fresh calls: always fresh.
    struck: bool,
    /// The last planned call ended at [`TAIL_SETTLED`] or better.
    settled: bool,
    /// A plan ran before any fresh time was known: the next call runs fresh, once, so that
    /// the plans after it are judged by time.
    time_wanted: bool,
    /// A planned call has refined the cost map.
    refined: bool,
    /// The last planned call was a settled plan's first unbalanced call slower than fresh,
    /// and not learned from.
    replayed: bool,
    /// The last planned call's balance, and how many planned calls in a row ended unbalanced
    /// and slower than fresh.
    last_balance: f64,
    missed: u32,
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
        RankPlan::cut(&self.profile, &self.moving, &self.exposed, total, tail)
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
            (self.settled, self.refined, self.missed, self.last_balance) = (false, false, 0, 0.0);
            self.planned_times = RecentTimes::default();
            self.replayed = false;
            return;
        }
        let measured = measured(&outcome.ranges);

        match form {
            Form::Fresh => {
                // Once a planned call has refined the map, a fresh call (run for its time) is
                // only timed: its few long ranges would teach a coarser map than the plan's.
                if !self.refined {
                    self.profile.learn_by_nominal(ranks, &measured, &outcome.nominal);
                    self.exposed.clear();
                }
                // What the ranks spend moving is learned again from every fresh call: the
                // first also paid what a node pays once (its staging's pages, first written),
                // and a remote rank's pieces were then sized for costs later calls never see.
                let (share, ahead) = (outcome.output_share, outcome.queue_ahead);
                self.moving = (0..ranks)
                    .map(|r| Moving {
                        in_place: outcome.in_place.get(r) == Some(&true),
                        ..Moving::of(&outcome.ranges, r, share, ahead)
                    })
                    .collect();
                self.settled = false;
                if !first {
                    self.fresh_times.push(outcome.roi_seconds);
                    self.time_wanted = false;
                }
            }
            Form::Planned => {
                self.planned_times.push(outcome.roi_seconds);
                let fresh = self.fresh_times.median();
                let slower =
                    |seconds: f64, by: f64| fresh.is_some_and(|f| seconds > f * (1.0 + by));
                let planned = self.planned_times.median().unwrap_or(outcome.roi_seconds);
                if fresh.is_none() {
                    // Judged once a fresh call has a time: the next call gives it one.
                    self.time_wanted = true;
                } else if outcome.balance >= SETTLED {
                    // A balanced call 6 % slower than the plan's calls before it happened on
                    // two H100 ranks (Binomial, 0.240 s then 0.254 s at balance 0.956).
                    if slower(planned, SLOWER_THAN_FRESH) {
                        // One fresh time is within the noise of a percent (Mandelbrot's fresh
                        // calls on two H100 ranks: 1.394-1.417 s): judged again after another.
                        if self.fresh_times.times().len() >= FRESH_TO_STRIKE {
                            self.struck = true;
                            return;
                        }
                        self.time_wanted = true;
                    }
                    self.missed = 0;
                } else if slower(outcome.roi_seconds, 0.0) {
                    if self.settled && !self.replayed {
                        // A settled plan's first such call is taken for noise, not learned
                        // from: its plan runs again as it was. Learned, one rank's slow call
                        // moves the next cuts the other way, and that call misses too.
                        self.replayed = true;
                        return;
                    }
                    // Unbalanced and slower than fresh: the cuts may still move towards balance,
                    // for a few calls while each ends better balanced than the last such call.
                    // The first in a row is kept: a plan that followed a fresh call may have
                    // misjudged what a rank moves, which this call measured.
                    self.missed += 1;
                    let better = self.missed == 1 || outcome.balance >= self.last_balance + BETTER;
                    if !better || self.missed > MISSES {
                        self.struck = true;
                        return;
                    }
                } else {
                    // Unbalanced, yet faster than fresh: kept, and the cuts move.
                    self.missed = 0;
                }
                self.replayed = false;
                self.last_balance = outcome.balance;
                self.profile.learn_planned(&measured);
                self.exposed = (0..ranks).map(|r| exposed(&outcome.ranges, r)).collect();
                for (r, &(k, seconds)) in self.exposed.iter().enumerate() {
                    let units = outcome.ranges.iter().filter(|x| x.rank == r);
                    let units = units.map(|x| x.package.len).sum();
                    if let (1, Some(m)) = (k, self.moving.get_mut(r)) {
                        m.learn_whole(units, seconds);
                    }
                }
                self.refined = true;
                self.settled = outcome.balance >= TAIL_SETTLED;
            }
        }
    }
}

/// The ranges of a call as the cost map learns them: lanes are ranks.
fn measured(ranges: &[RangeRun]) -> Vec<Measured> {
    (ranges.iter())
        .map(|r| Measured {
            lane: r.rank,
            offset: r.package.offset,
            len: r.package.len,
            seconds: r.seconds,
        })
        .collect()
}

/// Each rank's range of a planned call: its main range (handed out in `pieces`), then its
/// tail, laid end to end in rank order over the NDRange; with each rank's predicted seconds.
#[derive(Debug, Clone, PartialEq)]
pub struct RankPlan {
    pub total: u64,
    pub main: Vec<Option<Package>>,
    /// Per rank, its main range in the pieces it is handed out in (`crate::moving::Shape`), in
    /// order.
    pub pieces: Vec<Vec<Package>>,
    pub tail: Vec<Option<Package>>,
    /// Per rank: units per second on average work, seconds besides computing.
    speeds: Vec<f64>,
    fixed: Vec<f64>,
    /// Per rank: the predicted seconds of its main range, and the cost of its tail.
    main_seconds: Vec<f64>,
    tail_cost: Vec<f64>,
}

impl RankPlan {
    /// The plan from `profile`: ranks end together, each paying once what it spends besides
    /// computing: as `exposed` in the last planned call where it ran as many pieces, else as
    /// its `moving` predicts (a tail adds nothing to it).
    pub fn cut(
        profile: &CostProfile,
        moving: &[Moving],
        exposed: &[(usize, f64)],
        total: u64,
        tail: f64,
    ) -> Option<RankPlan> {
        let n = profile.speeds().len();
        let moving: Vec<Moving> =
            (0..n).map(|r| moving.get(r).copied().unwrap_or_default()).collect();
        let speeds: Vec<f64> = profile.speeds().iter().map(|s| s.unwrap_or(0.0)).collect();
        let everyone = vec![true; n];
        // One piece each first, to know each rank's seconds; then cut again with what its
        // pieces leave of its moving.
        let once: Vec<f64> = moving.iter().map(|m| m.guess(1, m.units, Shape::Equal)).collect();
        let whole = profile.cut(0..total, &once, &everyone, 0.0)?;
        let units = |r: usize| whole[r].as_ref().map_or(0, |g| g.end - g.start);
        let shapes: Vec<Shape> =
            whole.iter().map(|g| g.clone().map_or(Shape::Equal, |g| shape(profile, g))).collect();
        // Rank 0's too where it copies a range's bytes (an inout's); one that moves none gets
        // one piece (`Moving::in_place`).
        let pieces: Vec<usize> = (0..n)
            .map(|r| match &whole[r] {
                Some(g) => moving[r].pieces(
                    units(r),
                    profile.cost(g.start, g.end) / speeds[r].max(f64::MIN_POSITIVE),
                ),
                None => 1,
            })
            .collect();
        let fixed: Vec<f64> = (0..n)
            .map(|r| match exposed.get(r) {
                Some(&(k, seconds)) if k == pieces[r] => seconds,
                _ => moving[r].guess(pieces[r], units(r), shapes[r]),
            })
            .collect();
        let regions = profile.cut(0..total, &fixed, &everyone, 0.0)?;
        let mut plan = RankPlan {
            total,
            main: vec![None; n],
            pieces: vec![Vec::new(); n],
            tail: vec![None; n],
            speeds,
            fixed,
            main_seconds: vec![0.0; n],
            tail_cost: vec![0.0; n],
        };
        let piece = |a: u64, b: u64| (b > a).then_some(Package { offset: a, len: b - a });
        for (r, region) in regions.into_iter().enumerate() {
            let Some(region) = region else { continue };
            let cut = profile.split(region.clone(), 1.0 - tail.clamp(0.0, 1.0));
            let cut = if cut <= region.start { region.end } else { cut };
            plan.main[r] = piece(region.start, cut);
            plan.tail[r] = piece(cut, region.end);
            plan.pieces[r] = cut_pieces(region.start..cut, pieces[r], shapes[r]);
            let speed = plan.speeds[r].max(f64::MIN_POSITIVE);
            plan.main_seconds[r] = plan.fixed[r] + profile.cost(region.start, cut) / speed;
            plan.tail_cost[r] = profile.cost(cut, region.end);
        }
        Some(plan)
    }

    /// Every range of the plan, the main ranges' pieces and the tails.
    pub fn ranges(&self) -> Vec<Package> {
        let tails = self.tail.iter().flatten();
        self.pieces.iter().flatten().chain(tails).copied().collect()
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
    /// Per rank: the pieces of its main range not handed out yet.
    main: Vec<VecDeque<Package>>,
    /// Tails not handed out yet, by owner.
    tails: Vec<Option<Package>>,
    /// Ranges of lost ranks, for whichever rank asks.
    orphans: VecDeque<Package>,
    /// Per rank: when its main range was handed out, while it runs.
    running_main: Vec<Option<f64>>,
    /// Per rank: pieces of its main range handed out and not completed.
    pieces_out: Vec<u32>,
    alive: Vec<bool>,
}

impl PlannedRanks {
    pub fn new(plan: RankPlan) -> Self {
        PlannedRanks {
            main: plan.pieces.iter().map(|p| p.iter().copied().collect()).collect(),
            tails: plan.tail.clone(),
            plan,
            orphans: VecDeque::new(),
            running_main: Vec::new(),
            pieces_out: Vec::new(),
            alive: Vec::new(),
        }
    }

    /// Rank `r`'s next piece of its main range, if any is left.
    fn main_piece(&mut self, r: usize, now: f64) -> Option<Package> {
        let p = self.main.get_mut(r)?.pop_front()?;
        // The main range runs from its first piece's hand-out.
        if self.main[r].len() + 1 == self.plan.pieces[r].len() {
            self.running_main[r] = Some(now);
        }
        self.pieces_out[r] += 1;
        Some(p)
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
        self.main = self.plan.pieces.iter().map(|p| p.iter().copied().collect()).collect();
        self.tails = self.plan.tail.clone();
        self.orphans.clear();
        self.running_main = vec![None; n];
        self.pieces_out = vec![0; n];
        self.alive = vec![true; n];
        Ok(())
    }

    fn next(&mut self, device: usize, now: f64) -> Next {
        if !self.alive.get(device).copied().unwrap_or(false) {
            return Next::Done;
        }
        if let Some(p) = self.main_piece(device, now) {
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

    /// The next piece of a rank's main range, queued behind the one it runs: its inputs then
    /// travel while the rank computes. Tails and orphans wait for an idle rank.
    fn next_ahead(&mut self, device: usize, now: f64) -> Next {
        if !self.alive.get(device).copied().unwrap_or(false) {
            return Next::Wait;
        }
        self.main_piece(device, now).map_or(Next::Wait, Next::Run)
    }

    fn completed(&mut self, done: &Completion) {
        let Some(out) = self.pieces_out.get_mut(done.device) else { return };
        *out = out.saturating_sub(1);
        let left = self.main[done.device].len();
        if let (Some(slot), 0, 0) = (self.running_main.get_mut(done.device), left, *out) {
            *slot = None;
        }
    }

    fn device_lost(&mut self, device: usize) {
        if let Some(a) = self.alive.get_mut(device) {
            *a = false;
            self.running_main[device] = None;
            let left = self.main[device].drain(..).chain(self.tails[device].take());
            let left: Vec<Package> = left.collect();
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
