//! What one call of a launch measured, kept for the next call of the same launch: how fast each
//! lane (a rank, or one device of a node) runs, and what the work costs along the range. From
//! it, a range is cut into one block per lane, laid end to end, sized so that every lane is
//! predicted to end at the same instant. Pure: the rank plan ([`crate::plan`]) and the node's
//! split both use it.
//!
//! Speed and cost cannot be told apart from blocks that do not mix: a lane that ran a cheap
//! block looks fast. They are learned apart from a call whose lanes ran interleaved pieces of
//! the range (a dynamic balancer's), which gives each lane its speed on an average of the range
//! and each piece its cost; a call that ran a plan keeps those speeds and scales the cost of
//! each block it measured to what that block took, keeping the shape the interleaved call saw
//! within it. A lane that slowed down therefore shows as dearer work in its block, and the next
//! cut gives it less: each planned call moves the cuts towards balance.

use std::ops::Range;

use hetdsl::balance::relaunch::RecentTimes;

/// One measured piece of the range: the lane that ran it, its units, and the seconds it took.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measured {
    pub lane: usize,
    pub offset: u64,
    pub len: u64,
    pub seconds: f64,
}

/// Lanes' speeds and the range's cost map (see the module's documentation).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CostProfile {
    /// Per lane, units per second on the range's average work (`None`: not measured).
    speeds: Vec<Option<f64>>,
    /// Disjoint spans `(start, end, cost per unit)`, sorted: a lane of speed `w` runs a span
    /// in `(end - start) · cost / w` seconds.
    map: Vec<(u64, u64, f64)>,
}

fn usable(x: f64) -> bool {
    x.is_finite() && x > 0.0
}

impl CostProfile {
    /// Whether a cut can be made: some lane has a speed.
    pub fn is_known(&self) -> bool {
        self.speeds.iter().flatten().any(|s| usable(*s))
    }

    pub fn speeds(&self) -> &[Option<f64>] {
        &self.speeds
    }

    /// Learns speeds and costs afresh from a call whose lanes ran interleaved pieces: each
    /// lane's speed is its units over its seconds, each piece's cost its seconds at that speed.
    /// Lanes that ran nothing have no speed.
    pub fn learn_interleaved(&mut self, lanes: usize, measured: &[Measured]) {
        let mut ran = vec![(0u64, 0.0f64); lanes];
        for m in measured.iter().filter(|m| m.lane < lanes && m.len > 0) {
            ran[m.lane].0 += m.len;
            ran[m.lane].1 += m.seconds.max(0.0);
        }
        self.speeds = ran.iter().map(|&(g, s)| (g > 0 && s > 0.0).then(|| g as f64 / s)).collect();
        self.map_afresh(measured);
    }

    /// Learns speeds and costs afresh from a call whose lanes ran ranges that did not mix
    /// (guided self-scheduling across ranks hands each rank a few long ranges, one rank's
    /// through Mandelbrot's set, another's beside it): each lane's speed is its `nominal`
    /// speed, scaled so that the call's measured time is what the speeds predict, and each
    /// range's cost its seconds at that speed. Lanes that ran nothing have no speed; without a
    /// usable nominal speed for every lane that ran, as [`CostProfile::learn_interleaved`].
    pub fn learn_by_nominal(&mut self, lanes: usize, measured: &[Measured], nominal: &[f64]) {
        let ran = |l: usize| measured.iter().any(|m| m.lane == l && m.len > 0 && m.seconds > 0.0);
        let known =
            (0..lanes).filter(|&l| ran(l)).all(|l| nominal.get(l).is_some_and(|&g| usable(g)));
        let (units, weighted) = measured.iter().filter(|m| m.lane < lanes && m.len > 0).fold(
            (0.0, 0.0),
            |(u, w), m| {
                (
                    u + m.len as f64,
                    w + m.seconds.max(0.0) * nominal.get(m.lane).copied().unwrap_or(0.0),
                )
            },
        );
        if !known || !usable(units) || !usable(weighted) {
            return self.learn_interleaved(lanes, measured);
        }
        let scale = units / weighted;
        self.speeds = (0..lanes).map(|l| ran(l).then(|| nominal[l] * scale)).collect();
        self.map_afresh(measured);
    }

    /// The map made again from `measured` alone: each piece's cost is its seconds at its
    /// lane's speed (pieces of lanes without a speed are left out).
    fn map_afresh(&mut self, measured: &[Measured]) {
        self.map.clear();
        for m in measured.iter().filter(|m| m.len > 0) {
            if let Some(w) = self.speeds.get(m.lane).copied().flatten() {
                let (a, b) = (m.offset, m.offset + m.len);
                self.set(a, b, &[(a, b, m.seconds * w / m.len as f64)], 1.0);
            }
        }
    }

    /// Learns from a call that ran blocks of a plan: the speeds stay, and the cost of each
    /// measured block becomes what it took at its lane's speed, shared out within the block as
    /// the map had it.
    pub fn learn_planned(&mut self, measured: &[Measured]) {
        for m in measured {
            let Some(w) = self.speeds.get(m.lane).copied().flatten() else { continue };
            let (a, b) = (m.offset, m.offset + m.len);
            let target = m.seconds * w;
            let now = self.cost(a, b);
            if m.len == 0 || !usable(target) || !usable(now) {
                continue;
            }
            let pieces = self.pieces(a, b);
            self.set(a, b, &pieces, target / now);
        }
    }

    /// The spans of `a..b` with their costs, gaps filled at the map's mean cost.
    fn pieces(&self, a: u64, b: u64) -> Vec<(u64, u64, f64)> {
        let mean = self.mean();
        let mut out = Vec::new();
        let mut at = a;
        for &(s, e, c) in &self.map {
            let (s, e) = (s.max(a), e.min(b));
            if s >= e {
                continue;
            }
            if s > at {
                out.push((at, s, mean));
            }
            out.push((s, e, c));
            at = e;
        }
        if at < b {
            out.push((at, b, mean));
        }
        out
    }

    /// Replaces `a..b` of the map by `pieces` (which tile it), each cost times `scale`.
    fn set(&mut self, a: u64, b: u64, pieces: &[(u64, u64, f64)], scale: f64) {
        let mut kept = Vec::with_capacity(self.map.len() + pieces.len() + 2);
        for &(s, e, c) in &self.map {
            if e <= a || s >= b {
                kept.push((s, e, c));
                continue;
            }
            if s < a {
                kept.push((s, a, c));
            }
            if e > b {
                kept.push((b, e, c));
            }
        }
        kept.extend(pieces.iter().map(|&(s, e, c)| (s, e, c * scale)));
        kept.retain(|&(s, e, c)| e > s && usable(c));
        kept.sort_by_key(|p| p.0);
        self.map = kept;
    }

    /// The mean cost per unit over the map (1 before anything is measured).
    fn mean(&self) -> f64 {
        let (units, cost) = self
            .map
            .iter()
            .fold((0u64, 0.0), |(u, c), &(s, e, k)| (u + (e - s), c + (e - s) as f64 * k));
        if units > 0 && usable(cost) {
            cost / units as f64
        } else {
            1.0
        }
    }

    /// The cost of units `a..b` (units the map does not cover at its mean cost).
    pub fn cost(&self, a: u64, b: u64) -> f64 {
        self.pieces(a, b).iter().map(|&(s, e, c)| (e - s) as f64 * c).sum()
    }

    /// The cost of `a..x` for a fractional `x` (the unit at `x` counted in part).
    fn cost_to(&self, a: u64, x: f64) -> f64 {
        let whole = x.floor().max(a as f64) as u64;
        let part = x - whole as f64;
        self.cost(a, whole) + if part > 0.0 { part * self.cost(whole, whole + 1) } else { 0.0 }
    }

    /// `range` cut into one block per lane, laid end to end in lane order, so that each lane
    /// taking part ends together: lane `l` ends its block at `fixed[l] + cost / speed[l]`. Lanes
    /// not `taking`, without a speed, or whose share would be under `min_share` of the range's
    /// cost get nothing. `None` when no lane can take part.
    pub fn cut(
        &self,
        range: Range<u64>,
        fixed: &[f64],
        taking: &[bool],
        min_share: f64,
    ) -> Option<Vec<Option<Range<u64>>>> {
        let n = self.speeds.len();
        let speed = |l: usize| self.speeds[l].filter(|s| usable(*s));
        let fixed_of = |l: usize| fixed.get(l).copied().filter(|f| f.is_finite()).unwrap_or(0.0);
        let mut part: Vec<bool> =
            (0..n).map(|l| taking.get(l).copied().unwrap_or(true) && speed(l).is_some()).collect();
        let total = self.cost(range.start, range.end);
        if range.is_empty() || !usable(total) {
            return None;
        }
        let shares = loop {
            let (mut rate, mut offset) = (0.0, 0.0);
            for l in (0..n).filter(|&l| part[l]) {
                let w = speed(l)?;
                rate += w;
                offset += fixed_of(l) * w;
            }
            if rate <= 0.0 {
                return None;
            }
            let t = (total + offset) / rate;
            let shares: Vec<f64> = (0..n)
                .map(|l| if part[l] { (t - fixed_of(l)) * speed(l).unwrap_or(0.0) } else { 0.0 })
                .collect();
            let small: Vec<usize> =
                (0..n).filter(|&l| part[l] && shares[l] <= (min_share * total).max(0.0)).collect();
            // The last lane standing takes everything, however small its share came out.
            if small.is_empty() || small.len() == part.iter().filter(|p| **p).count() {
                break shares;
            }
            for l in small {
                part[l] = false;
            }
        };
        let last = (0..n).filter(|&l| part[l]).max()?;
        let mut blocks = vec![None; n];
        let (mut start, mut cost) = (range.start, 0.0);
        for l in (0..n).filter(|&l| part[l]) {
            let end = if l == last {
                range.end
            } else {
                cost += shares[l];
                self.unit_at(range.start, cost, start, range.end)
            };
            if end > start {
                blocks[l] = Some(start..end);
            }
            start = end;
        }
        Some(blocks)
    }

    /// The unit boundary in `range` that leaves `fraction` of its cost before it.
    pub fn split(&self, range: Range<u64>, fraction: f64) -> u64 {
        let target = self.cost(range.start, range.end) * fraction.clamp(0.0, 1.0);
        self.unit_at(range.start, target, range.start, range.end)
    }

    /// The unit boundary in `from..=end` whose cost from `a` is nearest `target`.
    fn unit_at(&self, a: u64, target: f64, from: u64, end: u64) -> u64 {
        let (mut lo, mut hi) = (from, end);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.cost_to(a, mid as f64) < target {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        if lo > from && target - self.cost_to(a, (lo - 1) as f64) < self.cost(a, lo) - target {
            lo - 1
        } else {
            lo
        }
    }
}

/// Whether `blocks` lie end to end over `range`, each non-empty, covering it exactly once.
pub fn tiles(blocks: &[Range<u64>], range: Range<u64>) -> bool {
    let mut sorted: Vec<&Range<u64>> = blocks.iter().collect();
    sorted.sort_by_key(|b| b.start);
    let mut next = range.start;
    for b in sorted {
        if b.start != next || b.end <= b.start {
            return false;
        }
        next = b.end;
    }
    next == range.end
}

/// What a node remembers of one launch's devices from call to call (the lanes are the node's
/// devices): each range of a repeated call is cut into one package per device that gets work
/// ([`NodeRecall::split`]), where a fresh balancer would probe every device and hand each
/// several packages, each of which pays, on a GPU, the uneven end of its last wave. What a call
/// measures is learned when the next call begins, so that every range of one call is cut from
/// the same knowledge.
#[derive(Debug, Default)]
pub struct NodeRecall {
    profile: CostProfile,
    devices: usize,
    /// This call's measurements: of ranges a dynamic balancer ran, and of ranges cut.
    fresh: Vec<Measured>,
    planned: Vec<Measured>,
    /// This call lost a device or re-ran a package: its measurements are not learned.
    dirty: bool,
    /// A range of this call cut from memory ended unbalanced: the call's other ranges run
    /// with the dynamic balancer, whose measurements the next call learns from.
    missed: bool,
    /// The share of the latest cut ranges run whole that their busiest device spent outside
    /// its kernels (inputs written, outputs read back, set-up): what pieces could hide.
    exposed: RecentTimes,
}

/// How a cut range runs on the node's devices: one package per device, or each device's
/// block in pieces (hetdsl's `Replay::in_pieces`), each piece's read-back overlapping the next
/// piece's kernel. A rank's range is one launch on its node, which reads all its outputs back
/// after its kernels: on two H100 ranks, Taylor's nodes spent 3.71-3.77 s over ranges whose
/// GPU kernels took 3.61 s (a GiB of outputs per rank), where one process, running its blocks
/// in pieces, took 3.63 s for both halves; in pieces, 3.66-3.69 s. Pieces cost each package's
/// fixed cost: NBody's (60 ms on an H100) is more than the 0.6 % its ranges leave exposed, and
/// Binomial's ranges of 60 ms ran 7 % slower in four pieces than whole. So a cut range runs
/// in pieces only where the ranges run whole left at least [`PIECES_EXPOSED`] of their time
/// outside the busiest device's kernels, and a piece of the mean size (a quarter of the
/// range; the end pieces are half that) would compute at least [`PIECE_MIN_SECONDS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeForm {
    Whole,
    Pieces,
}

/// A range cut from memory: one block per device (`None`: none), the form it runs in, and the
/// seconds the cost map predicts for it.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeCut {
    pub blocks: Vec<Option<Range<u64>>>,
    pub form: NodeForm,
    pub predicted: f64,
}

/// Ranges run whole must leave this share of their time outside the busiest device's kernels
/// for the next to run in pieces ([`NodeForm`]).
pub const PIECES_EXPOSED: f64 = 0.02;

/// A piece of the mean size of a range run in pieces is predicted to compute at least this
/// long ([`NodeForm`]): a package's fixed cost of a few milliseconds is then a few per cent of
/// it.
/// (Binomial's rank 0 on two H100 ranks, one range of 0.24 s: its settled plans ran
/// 0.238-0.242 s in four pieces, 0.242-0.246 s whole, with 0.1 here.)
pub const PIECE_MIN_SECONDS: f64 = 0.05;

/// When a node runs a cut range in pieces ([`NodeForm`]): the ranges run whole left at least
/// `exposed` of their time outside the busiest device's kernels, and a piece of the mean size
/// computes at least `min_piece_seconds`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PieceRule {
    pub exposed: f64,
    pub min_piece_seconds: f64,
}

impl Default for PieceRule {
    fn default() -> Self {
        PieceRule { exposed: PIECES_EXPOSED, min_piece_seconds: PIECE_MIN_SECONDS }
    }
}

/// A cut range as it ran: its seconds (the engine's ROI) and its busiest device's kernel
/// seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CutRan {
    pub seconds: f64,
    pub busiest: f64,
}

impl NodeRecall {
    /// A new call on a node of `devices` devices: learns what the last call measured.
    pub fn begin_call(&mut self, devices: usize) {
        if self.dirty || self.devices != devices {
            self.profile = CostProfile::default();
            self.exposed = RecentTimes::default();
        } else {
            if !self.fresh.is_empty() {
                self.profile.learn_interleaved(devices, &self.fresh);
            }
            self.profile.learn_planned(&self.planned);
        }
        self.devices = devices;
        self.fresh.clear();
        self.planned.clear();
        self.dirty = false;
        self.missed = false;
    }

    /// `range` as one block per device, laid end to end, sized so that all end together; a
    /// device whose share would be under hetdsl's `relaunch::MIN_SHARE` gets none. `None`:
    /// nothing known yet, or a cut range of this call ended unbalanced; run it fresh.
    pub fn split(&self, range: Range<u64>, rule: PieceRule) -> Option<NodeCut> {
        if self.missed || self.profile.speeds().len() != self.devices {
            return None;
        }
        let everyone = vec![true; self.devices];
        let blocks =
            self.profile.cut(range, &[], &everyone, hetdsl::balance::relaunch::MIN_SHARE)?;
        let predicted = (blocks.iter().enumerate())
            .filter_map(|(d, b)| {
                let (b, speed) = (b.as_ref()?, self.profile.speeds()[d]?);
                Some(self.profile.cost(b.start, b.end) / speed)
            })
            .fold(0.0, f64::max);
        Some(NodeCut { blocks, form: self.form(predicted, rule), predicted })
    }

    /// The form of a cut range predicted to compute `seconds` (see [`NodeForm`]).
    fn form(&self, seconds: f64, rule: PieceRule) -> NodeForm {
        let long = seconds / hetdsl::balance::PIECES as f64 >= rule.min_piece_seconds;
        match self.exposed.median() {
            Some(e) if e >= rule.exposed && long => NodeForm::Pieces,
            _ => NodeForm::Whole,
        }
    }

    /// A range ran: `cut` from memory (and then how it ran) or not, its merged packages
    /// `measured` (lanes are the node's devices, offsets in the NDRange), whether it ran
    /// without a fault, and its balance across devices.
    pub fn ran(
        &mut self,
        cut: Option<(&NodeCut, CutRan)>,
        measured: Vec<Measured>,
        clean: bool,
        balance: f64,
    ) {
        self.dirty |= !clean;
        match cut {
            Some((cut, ran)) => {
                self.missed |= balance < hetdsl::balance::relaunch::SETTLED;
                self.planned.extend(measured);
                if clean && cut.form == NodeForm::Whole && ran.seconds > 0.0 {
                    let outside = (ran.seconds - ran.busiest).max(0.0) / ran.seconds;
                    self.exposed.push(outside);
                }
            }
            None => self.fresh.extend(measured),
        }
    }
}

#[cfg(test)]
mod tests;
