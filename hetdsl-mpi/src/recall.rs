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
    /// Seconds each piece takes whatever its size ([`per_piece_seconds`]): kept out of the
    /// map and the speeds, and paid once by each block of a cut.
    per_piece: f64,
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
        self.per_piece = per_piece_seconds(lanes, measured).unwrap_or(0.0);
        let measured: Vec<Measured> =
            measured.iter().map(|m| Measured { seconds: self.working(m.seconds), ..*m }).collect();
        let measured = &measured[..];
        let mut ran = vec![(0u64, 0.0f64); lanes];
        for m in measured.iter().filter(|m| m.lane < lanes && m.len > 0) {
            ran[m.lane].0 += m.len;
            ran[m.lane].1 += m.seconds.max(0.0);
        }
        self.speeds = ran.iter().map(|&(g, s)| (g > 0 && s > 0.0).then(|| g as f64 / s)).collect();
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
        if let Some(f) = per_piece_seconds(self.speeds.len(), measured) {
            self.per_piece = f;
        }
        for m in measured {
            let Some(w) = self.speeds.get(m.lane).copied().flatten() else { continue };
            let (a, b) = (m.offset, m.offset + m.len);
            let target = self.working(m.seconds) * w;
            let now = self.cost(a, b);
            if m.len == 0 || !usable(target) || !usable(now) {
                continue;
            }
            let pieces = self.pieces(a, b);
            self.set(a, b, &pieces, target / now);
        }
    }

    /// The seconds of a piece that took `seconds` spent on its units (never under a twentieth:
    /// no piece is taken as free).
    fn working(&self, seconds: f64) -> f64 {
        let s = seconds.max(0.0);
        (s - self.per_piece).max(0.05 * s)
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
        let fixed_of = |l: usize| {
            fixed.get(l).copied().filter(|f| f.is_finite()).unwrap_or(0.0) + self.per_piece
        };
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

/// How far apart the lanes' fits of [`per_piece_seconds`] may be (largest over smallest).
const PER_PIECE_AGREE: f64 = 1.25;

/// Seconds every piece pays whatever its size: a node's run set-up, and on a GPU the uneven end
/// of its last wave (NBody on an H100 rank: about 0.1 s a range). Left in a piece's time it
/// makes small pieces look like dear work: a guided call's last ranges, a plan's tails, and
/// the cut made from them gives their lane too little (NBody's one-range plans on two H100
/// ranks ended at balance 0.87). Fitted per lane as `seconds = fixed + units · pace` over its
/// pieces of different sizes, and trusted only where at least two lanes fit and agree within
/// [`PER_PIECE_AGREE`]: work whose cost varies along the range bends each lane's fit its own
/// way. `None`: no such agreement (a lane whose fit is negative counts as 0).
pub fn per_piece_seconds(lanes: usize, measured: &[Measured]) -> Option<f64> {
    let mut fits = Vec::new();
    for l in 0..lanes {
        let mine: Vec<(f64, f64)> = measured
            .iter()
            .filter(|m| m.lane == l && m.len > 0 && usable(m.seconds))
            .map(|m| (m.len as f64, m.seconds))
            .collect();
        let n = mine.len() as f64;
        let (mx, my) = mine.iter().fold((0.0, 0.0), |(a, b), &(x, y)| (a + x / n, b + y / n));
        let sxx: f64 = mine.iter().map(|&(x, _)| (x - mx) * (x - mx)).sum();
        let sxy: f64 = mine.iter().map(|&(x, y)| (x - mx) * (y - my)).sum();
        // Relative spread of sizes: pieces of (nearly) one size say nothing of a fixed part.
        if mine.len() < 2 || sxx <= (0.01 * mx).powi(2) * n {
            continue;
        }
        let quickest = mine.iter().map(|&(_, y)| y).fold(f64::INFINITY, f64::min);
        // Under a microsecond is rounding, not a cost.
        let fixed = Some(my - sxy / sxx * mx).filter(|f| *f >= 1e-6).unwrap_or(0.0);
        if fixed >= quickest {
            return None;
        }
        fits.push(fixed);
    }
    let (lo, hi) = fits.iter().fold((f64::INFINITY, 0.0f64), |(a, b), &f| (a.min(f), b.max(f)));
    if fits.len() < 2 {
        return None;
    }
    if hi == 0.0 {
        return Some(0.0);
    }
    (lo > 0.0 && hi <= PER_PIECE_AGREE * lo).then(|| fits.iter().sum::<f64>() / fits.len() as f64)
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
}

impl NodeRecall {
    /// A new call on a node of `devices` devices: learns what the last call measured.
    pub fn begin_call(&mut self, devices: usize) {
        if self.dirty || self.devices != devices {
            self.profile = CostProfile::default();
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
    pub fn split(&self, range: Range<u64>) -> Option<Vec<Option<Range<u64>>>> {
        if self.missed || self.profile.speeds().len() != self.devices {
            return None;
        }
        let everyone = vec![true; self.devices];
        self.profile.cut(range, &[], &everyone, hetdsl::balance::relaunch::MIN_SHARE)
    }

    /// A range ran: cut from memory (`planned`) or not, its merged packages `measured` (lanes
    /// are the node's devices, offsets in the NDRange), whether it ran without a fault, and its
    /// balance across devices.
    pub fn ran(&mut self, planned: bool, measured: Vec<Measured>, clean: bool, balance: f64) {
        self.dirty |= !clean;
        if planned {
            self.missed |= balance < hetdsl::balance::relaunch::SETTLED;
            self.planned.extend(measured);
        } else {
            self.fresh.extend(measured);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(lane: usize, offset: u64, len: u64, seconds: f64) -> Measured {
        Measured { lane, offset, len, seconds }
    }

    fn blocks(cut: Vec<Option<Range<u64>>>) -> Vec<Range<u64>> {
        cut.into_iter().flatten().collect()
    }

    /// Lane 1 runs three times as fast as lane 0 on uniform work: it gets three quarters, and
    /// the blocks tile the range.
    #[test]
    fn uniform_work_is_cut_by_speed() {
        let mut p = CostProfile::default();
        p.learn_interleaved(2, &[m(0, 0, 100, 1.0), m(1, 100, 300, 1.0), m(0, 400, 100, 1.0)]);
        assert_eq!(p.speeds(), &[Some(100.0), Some(300.0)]);
        let cut = p.cut(0..1000, &[0.0, 0.0], &[true, true], 0.0).unwrap();
        assert_eq!(cut, vec![Some(0..250), Some(250..1000)]);
        // A sub-range, and a fixed cost that makes lane 1 start 0.1 s late: 1000 units in
        // T = (1000 + 30) / 400 s, lane 0 taking 257.5 of them.
        let cut = p.cut(500..1500, &[0.0, 0.1], &[true, true], 0.0).unwrap();
        assert_eq!(cut, vec![Some(500..758), Some(758..1500)]);
        assert!(tiles(&blocks(cut), 500..1500));
    }

    /// An irregular kernel: the second half costs four times the first. Equal lanes split the
    /// cost, not the units.
    #[test]
    fn irregular_work_is_cut_by_cost() {
        let mut p = CostProfile::default();
        p.learn_interleaved(
            2,
            &[m(0, 0, 50, 0.5), m(1, 50, 50, 0.5), m(0, 100, 50, 2.0), m(1, 150, 50, 2.0)],
        );
        // Both run 40 units/s on average; the halves cost 0.4 and 1.6 per unit, 200 in all:
        // lane 0 takes the cheap half (40) and 37.5 units of the dear one (60).
        assert!((p.cost(0, 200) - 200.0).abs() < 1e-9);
        let cut = blocks(p.cut(0..200, &[], &[true, true], 0.0).unwrap());
        assert!(matches!(cut[0].end, 137 | 138), "{cut:?}");
        assert!(tiles(&cut, 0..200));
    }

    /// A planned call where lane 1's block took twice its prediction: the block's cost doubles,
    /// its shape stays, and the next cut gives lane 1 less.
    #[test]
    fn a_planned_call_moves_the_cut_towards_balance() {
        let mut p = CostProfile::default();
        p.learn_interleaved(2, &[m(0, 0, 100, 1.0), m(1, 100, 100, 1.0)]);
        let before = p.cut(0..200, &[], &[true, true], 0.0).unwrap();
        assert_eq!(before, vec![Some(0..100), Some(100..200)]);
        p.learn_planned(&[m(0, 0, 100, 1.0), m(1, 100, 100, 2.0)]);
        assert!((p.cost(100, 200) - 2.0 * p.cost(0, 100)).abs() < 1e-9);
        let after = blocks(p.cut(0..200, &[], &[true, true], 0.0).unwrap());
        // Cost 100 + 200: 150 each; lane 0 takes 0..100 and 25 units of the dear half.
        assert_eq!(after, vec![0..125, 125..200]);
    }

    /// Lanes not taking part, unmeasured, or under the minimum share get nothing; the blocks
    /// still tile the range.
    /// Uniform work on two lanes (the second 1.25 times as fast), each piece paying `fixed`
    /// seconds whatever its size, in pieces that shrink as a guided call's do.
    fn shrinking_pieces(fixed: f64) -> Vec<Measured> {
        let (n, speeds) = (2896u64, [800.0, 1000.0]);
        let (mut free, mut at, mut out) = ([0.0f64; 2], 0u64, Vec::new());
        while at < n {
            let lane = usize::from(free[1] < free[0]);
            let len = ((n - at) / 8).max(8).min(n - at);
            let seconds = fixed + len as f64 / speeds[lane];
            out.push(m(lane, at, len, seconds));
            free[lane] += seconds;
            at += len;
        }
        out
    }

    /// A fixed cost per piece is found where the lanes agree on it, and kept out of the map:
    /// the cut then ends both lanes together, where counting it as work gave the lane holding
    /// the last, small pieces a third of what it should get.
    #[test]
    fn a_fixed_cost_per_piece_is_kept_out_of_the_cut() {
        let measured = shrinking_pieces(0.11);
        let f = per_piece_seconds(2, &measured).expect("two lanes agree");
        assert!((f - 0.11).abs() < 1e-6, "{f}");
        let mut p = CostProfile::default();
        p.learn_interleaved(2, &measured);
        let cut = blocks(p.cut(0..2896, &[], &[true, true], 0.0).unwrap());
        let ends: Vec<f64> = cut
            .iter()
            .zip([800.0, 1000.0])
            .map(|(b, w)| 0.11 + (b.end - b.start) as f64 / w)
            .collect();
        let balance = ends[0].min(ends[1]) / ends[0].max(ends[1]);
        assert!(balance > 0.999, "{cut:?}: {ends:?}");
        assert_eq!(per_piece_seconds(2, &shrinking_pieces(0.0)), Some(0.0));
    }

    /// On work whose cost varies along the range each lane's fit bends its own way: no fixed
    /// cost is trusted, and a lane with pieces of one size only gives no fit.
    #[test]
    fn lanes_that_disagree_give_no_fixed_cost() {
        let irregular =
            [m(0, 0, 100, 0.5), m(1, 100, 80, 0.1), m(0, 180, 50, 0.05), m(1, 230, 30, 0.2)];
        assert_eq!(per_piece_seconds(2, &irregular), None);
        let one_size =
            [m(0, 0, 100, 0.5), m(0, 100, 100, 0.5), m(1, 200, 80, 0.1), m(1, 280, 40, 0.06)];
        assert_eq!(per_piece_seconds(2, &one_size), None);
    }

    #[test]
    fn small_and_absent_lanes_sit_out() {
        let mut p = CostProfile::default();
        p.learn_interleaved(3, &[m(0, 0, 1, 1.0), m(1, 1, 999, 1.0)]);
        assert_eq!(p.speeds()[2], None);
        let cut = p.cut(0..1000, &[], &[true, true, true], 0.02).unwrap();
        assert_eq!(cut, vec![None, Some(0..1000), None]);
        let cut = p.cut(0..1000, &[], &[true, false, true], 0.02).unwrap();
        assert_eq!(cut, vec![Some(0..1000), None, None]);
        assert_eq!(p.cut(0..1000, &[], &[false, false, true], 0.0), None);
        assert_eq!(CostProfile::default().cut(0..10, &[], &[], 0.0), None);
    }

    /// A node's first call runs fresh; the next call cuts each range by what the first
    /// measured; a cut range that ends unbalanced sends the rest of its call back to fresh, and
    /// a call with a fault is not learned from.
    #[test]
    fn a_node_cuts_ranges_of_a_repeated_call_from_the_last_one() {
        let mut r = NodeRecall::default();
        r.begin_call(2);
        assert_eq!(r.split(0..100), None);
        // A CPU (device 0) ten times slower than the GPU, interleaved over 0..1000.
        r.ran(false, vec![m(0, 0, 10, 1.0), m(1, 10, 490, 4.9), m(1, 500, 500, 5.0)], true, 0.9);
        assert_eq!(r.split(0..100), None, "learned when the next call begins");
        r.begin_call(2);
        // The CPU gets 1/11 of a range.
        assert_eq!(r.split(0..1000).unwrap(), vec![Some(0..91), Some(91..1000)]);
        r.ran(true, vec![m(0, 0, 91, 0.91), m(1, 91, 909, 9.09)], true, 0.99);
        assert!(r.split(200..300).is_some());
        r.ran(true, vec![m(0, 200, 9, 3.0), m(1, 209, 91, 0.91)], true, 0.3);
        assert_eq!(r.split(300..400), None, "the rest of the call runs fresh");
        r.begin_call(2);
        // The planned call's CPU block at 200..209 cost three times its prediction: it gets
        // less of that part of the range from now on.
        let cut = r.split(200..300).unwrap();
        assert!(cut[0].as_ref().unwrap().end < 209, "{cut:?}");
        r.ran(false, vec![m(0, 0, 1000, 1.0)], false, 1.0);
        r.begin_call(2);
        assert_eq!(r.split(0..1000), None, "a call with a fault is not learned from");
        r.begin_call(3);
        assert_eq!(r.split(0..1000), None);
    }
}
