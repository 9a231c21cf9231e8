//! What a rank's range costs besides computing, and the pieces a planned call hands it out in.
//! A remote rank receives a range's inputs before it computes and sends its outputs after, and
//! with one range per rank none of that overlaps the computing: Mandelbrot's remote rank sent
//! 400 MB of rows back only once all of them were computed. Handed out in a few pieces, each
//! piece's outputs go back while the next one computes, and, where ranks get their next range
//! while computing the last ([`crate::hier::Ranks::queue_ahead`]), each piece's inputs arrive
//! while the one before computes; at the cost of one more range's set-up on the node per
//! piece. Pure.

use hetdsl::Package;

use crate::plan::RangeRun;
use crate::recall::CostProfile;

/// A remote rank's range is handed out in pieces only when the outputs they would overlap are
/// over this share of its computing: a GPU package also pays the uneven end of its last wave,
/// which the seconds besides computing do not show (NBody on an H100: about 60 ms a package,
/// against 27 ms of moving per rank).
pub const PIECE_SHARE: f64 = 0.03;

/// What one more piece costs a rank at least, in seconds: a node's set-up of a range (3-7 ms
/// measured on the H100 ranks) and the end of its GPU package.
pub const PIECE_SECONDS: f64 = 0.01;

/// The most pieces of one rank's range.
pub const MAX_PIECES: usize = 4;

/// How a range's pieces are sized, in units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    Equal,
    /// From three pieces on, the first and the last half the others. Only the first piece's
    /// inputs and the last one's outputs wait for the computing (the others travel while a
    /// neighbour computes), so halving those two shortens the wait by a third at four pieces
    /// (Mandelbrot's remote rank waited 0.055 s for the 133 MB of its last of three equal
    /// pieces on two H100s). Only where the cost per unit is even along the range: where it
    /// varies, a short last piece may compute too little to hide the outputs of the one
    /// before (simulated, Mandelbrot's ranks: 0.961 of one process with equal pieces, 0.956
    /// tapered; Binomial 0.900 -> 0.906, Taylor 0.972 -> 0.975).
    Tapered,
}

/// The relative sizes of a range's `k` pieces, in order.
pub fn piece_weights(k: usize, shape: Shape) -> Vec<u64> {
    match (k, shape) {
        (0 | 1, _) => vec![1],
        (_, Shape::Equal) | (2, _) => vec![1; k],
        _ => (0..k).map(|i| if i == 0 || i + 1 == k { 1 } else { 2 }).collect(),
    }
}

/// The share of a range in its first (and in its last) of `k` pieces ([`piece_weights`]).
pub fn end_share(k: usize, shape: Shape) -> f64 {
    let w = piece_weights(k, shape);
    w[0] as f64 / w.iter().sum::<u64>() as f64
}

/// How `range`'s pieces are sized: tapered where its cost per unit, over eight equal parts,
/// varies by at most hetdsl's `relaunch::REGULAR_SPREAD` ([`Shape`]).
pub fn shape(profile: &CostProfile, range: std::ops::Range<u64>) -> Shape {
    let len = range.end - range.start;
    let parts = len.min(8);
    let density = |i: u64| {
        let (a, b) = (range.start + len * i / parts, range.start + len * (i + 1) / parts);
        profile.cost(a, b) / (b - a).max(1) as f64
    };
    let (lo, hi) =
        (0..parts).map(density).fold((f64::MAX, 0.0f64), |(lo, hi), d| (lo.min(d), hi.max(d)));
    if parts > 0 && lo > 0.0 && hi / lo <= hetdsl::balance::relaunch::REGULAR_SPREAD {
        Shape::Tapered
    } else {
        Shape::Equal
    }
}

/// `range` in `k` pieces of [`piece_weights`] (so in the bytes each moves), in order.
pub fn cut_pieces(range: std::ops::Range<u64>, k: usize, shape: Shape) -> Vec<Package> {
    let weights = piece_weights(k, shape);
    let total: u64 = weights.iter().sum();
    let len = range.end - range.start;
    let mut at = 0;
    let mut bounds = vec![range.start];
    for w in &weights {
        at += w;
        bounds.push(range.start + len * at / total);
    }
    (bounds.windows(2))
        .filter(|b| b[1] > b[0])
        .map(|b| Package { offset: b[0], len: b[1] - b[0] })
        .collect()
}

/// What a rank's ranges spent besides computing over a fresh call, as `setup + per_unit ·
/// units` per range (least squares over its ranges after its first: a call's first range on
/// a node also pays what the node pays once per call, as in [`crate::guided`]), and the share
/// of the bytes moved that were outputs.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Moving {
    pub setup: f64,
    pub per_unit: f64,
    pub output_share: f64,
    /// Units the rank ran in that call.
    pub units: u64,
    /// A range's inputs arrive while the rank computes the range before it.
    pub ahead: bool,
    /// Its ranges moved no bytes (rank 0's node, in the caller's memory): what it spent
    /// besides computing is its node's, which pieces would only add to.
    pub in_place: bool,
}

impl Moving {
    /// Rank `rank`'s moving in the call that ran `ranges`, whose outputs were `output_share`
    /// of the bytes moved; `ahead`: the next call's ranks get their next range while computing
    /// the last. A range that was queued so left only its outputs to wait for: its overhead
    /// counts its units at their output share.
    pub fn of(ranges: &[RangeRun], rank: usize, output_share: f64, ahead: bool) -> Moving {
        let share = if output_share.is_finite() { output_share.clamp(0.0, 1.0) } else { 0.5 };
        let mine: Vec<(f64, f64, f64)> = ranges
            .iter()
            .filter(|r| r.rank == rank && r.package.len > 0)
            .map(|r| {
                let len = r.package.len as f64;
                (len, if r.queued { len * share } else { len }, r.overhead.max(0.0))
            })
            .collect();
        let units = mine.iter().map(|m| m.0).sum::<f64>() as u64;
        let later: Vec<(f64, f64)> = match mine.len() {
            1 => vec![(mine[0].1, mine[0].2)],
            _ => mine.iter().skip(1).map(|m| (m.1, m.2)).collect(),
        };
        let n = later.len() as f64;
        let (sx, so) = later.iter().fold((0.0, 0.0), |(x, o), m| (x + m.0, o + m.1));
        let proportional = Moving {
            setup: 0.0,
            per_unit: so / sx.max(1.0),
            output_share: share,
            units,
            ahead,
            in_place: false,
        };
        if later.len() < 2 {
            return proportional;
        }
        let (mx, mo) = (sx / n, so / n);
        let var: f64 = later.iter().map(|m| (m.0 - mx).powi(2)).sum();
        let cov: f64 = later.iter().map(|m| (m.0 - mx) * (m.1 - mo)).sum();
        let per_unit = if var > 0.0 { cov / var } else { -1.0 };
        let setup = mo - per_unit * mx;
        if per_unit < 0.0 || setup < 0.0 || !setup.is_finite() {
            return proportional;
        }
        Moving { setup, per_unit, output_share: share, units, ahead, in_place: false }
    }

    /// Learns again from a planned call in which the rank ran `units` as one range and spent
    /// `exposed` seconds not computing: one range waits for all it moves, so that is its set-up
    /// and its moving. A fresh call's few ranges, some queued, can misjudge it: on two H100
    /// ranks, Binomial's remote rank got one range from such a guess and ended 0.05 s late.
    pub fn learn_whole(&mut self, units: u64, exposed: f64) {
        if !self.in_place && units > 0 && exposed.is_finite() {
            self.per_unit = (exposed - self.setup).max(0.0) / units as f64;
        }
    }

    /// Of what a range of `units` moves, the seconds pieces can overlap: its outputs, and with
    /// queued ranges its inputs too (all but the first piece's).
    fn overlappable(&self, units: u64) -> f64 {
        let moved = self.per_unit * units as f64;
        if self.ahead {
            moved
        } else {
            moved * self.output_share
        }
    }

    /// How many pieces a range of `units` that computes `seconds` is handed out in: one unless
    /// what pieces can overlap (its outputs; with `ahead`, its inputs too) takes over [`PIECE_SHARE`] of
    /// `seconds`; else the square root of its seconds over what a piece costs (its set-up, at
    /// least [`PIECE_SECONDS`]), rounded up, which makes the pieces' cost and the wait left
    /// alike; at most [`MAX_PIECES`]. (Choosing the count whose cost and wait add up to least
    /// gave fewer pieces, and Mandelbrot's simulated ranks 0.958 of one process against 0.961.)
    pub fn pieces(&self, units: u64, seconds: f64) -> usize {
        let overlappable = self.overlappable(units);
        if self.in_place || overlappable.is_nan() || overlappable <= PIECE_SHARE * seconds {
            return 1;
        }
        let each = self.setup.max(PIECE_SECONDS);
        ((overlappable / each).sqrt().ceil() as usize).clamp(1, MAX_PIECES)
    }

    /// The seconds not computing of a range of `units` in `pieces` pieces, before any was
    /// measured: each piece's set-up, what pieces cannot overlap, and an end piece's share of
    /// what they can.
    pub fn guess(&self, pieces: usize, units: u64, shape: Shape) -> f64 {
        let moved = self.per_unit * units as f64;
        let overlappable = self.overlappable(units);
        let k = pieces.max(1);
        self.setup * k as f64 + (moved - overlappable) + overlappable * end_share(k, shape)
    }
}

/// Rank `rank`'s ranges in a call and its seconds not computing, from its first hand-out to
/// its last range merged.
pub fn exposed(ranges: &[RangeRun], rank: usize) -> (usize, f64) {
    let mine: Vec<&RangeRun> = ranges.iter().filter(|r| r.rank == rank).collect();
    let first = mine.iter().map(|r| r.handed).fold(f64::MAX, f64::min);
    let last = mine.iter().map(|r| r.handed + r.seconds + r.overhead).fold(f64::MIN, f64::max);
    let computing: f64 = mine.iter().map(|r| r.seconds).sum();
    (mine.len(), if mine.is_empty() { 0.0 } else { (last - first - computing).max(0.0) })
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Shape = Shape::Tapered;

    fn run(rank: usize, len: u64, overhead: f64) -> RangeRun {
        let package = Package { offset: 0, len };
        RangeRun { rank, package, seconds: 1.0, overhead, handed: 0.0, queued: false }
    }

    /// Ranges of several sizes: the set-up and the seconds per unit come apart (the first
    /// range, which paid the node's warm-up, left out), and the pieces follow from them.
    #[test]
    fn set_up_and_transfer_come_apart() {
        // 5 ms a range and 0.1 ms a unit; the first range paid 0.3 s more.
        let ranges: Vec<RangeRun> = [(400, 0.345), (200, 0.025), (100, 0.015), (50, 0.01)]
            .into_iter()
            .map(|(len, o)| run(1, len, o))
            .collect();
        let m = Moving::of(&ranges, 1, 0.5, false);
        assert!((m.setup - 0.005).abs() < 1e-9 && (m.per_unit - 1e-4).abs() < 1e-9, "{m:?}");
        assert_eq!(m.units, 750);
        // 2000 units move 0.2 s, 0.1 s of it outputs: over 3 % of 1 s, in √(0.1 / 0.01) → 4
        // pieces; under 3 % of 4 s (0.1 > 0.12 is false): one piece.
        assert_eq!(m.pieces(2000, 1.0), 4);
        assert_eq!(m.pieces(2000, 4.0), 1);
        assert_eq!(m.pieces(300, 1.0), 1);
        // One piece waits for all it moves; four for each set-up, the inputs, and the last
        // piece's sixth of the outputs.
        assert!((m.guess(1, 2000, T) - 0.205).abs() < 1e-9);
        assert!((m.guess(4, 2000, T) - (0.02 + 0.1 + 0.1 / 6.0)).abs() < 1e-9);
    }

    /// Ranges queued ahead waited only for their outputs: their units count at the output
    /// share, and the pieces of a rank that queues ahead overlap its inputs too.
    #[test]
    fn queued_ranges_and_pieces_overlap_their_inputs() {
        let ranges: Vec<RangeRun> = [(400, 0.345), (200, 0.015), (100, 0.01), (50, 0.0075)]
            .into_iter()
            .map(|(len, o)| RangeRun { queued: true, ..run(1, len, o) })
            .collect();
        let m = Moving::of(&ranges, 1, 0.5, true);
        assert!((m.setup - 0.005).abs() < 1e-9 && (m.per_unit - 1e-4).abs() < 1e-9, "{m:?}");
        // 2000 units move 0.2 s, all of it overlappable: √(0.2 / 0.01) → at most 4 pieces,
        // which wait for each set-up and a sixth of the moving (the first piece's inputs, the
        // last one's outputs).
        assert_eq!(m.pieces(2000, 1.0), 4);
        assert!((m.guess(1, 2000, T) - 0.205).abs() < 1e-9);
        assert!((m.guess(4, 2000, T) - (0.02 + 0.2 / 6.0)).abs() < 1e-9);
        // Without queuing, half of it (the outputs) is, as before.
        let before = Moving { ahead: false, ..m };
        assert!((before.guess(4, 2000, T) - (0.02 + 0.1 + 0.1 / 6.0)).abs() < 1e-9);
    }

    /// From three pieces on, the end pieces are half the others: what is left to wait for.
    #[test]
    fn end_pieces_are_half_the_others() {
        assert_eq!(piece_weights(1, T), vec![1]);
        assert_eq!(piece_weights(2, T), vec![1, 1]);
        assert_eq!(piece_weights(3, T), vec![1, 2, 1]);
        assert_eq!(piece_weights(4, T), vec![1, 2, 2, 1]);
        assert_eq!(piece_weights(4, Shape::Equal), vec![1; 4]);
        let shares: Vec<f64> = (1..=4).map(|k| end_share(k, T)).collect();
        assert_eq!(shares, vec![1.0, 0.5, 0.25, 1.0 / 6.0]);
        assert_eq!(end_share(4, Shape::Equal), 0.25);
        // Equal pieces of the same moving: 4 of them leave a quarter.
        let m = Moving { per_unit: 1e-4, output_share: 1.0, ..Moving::default() };
        assert!((m.guess(4, 2000, Shape::Equal) - 0.05).abs() < 1e-12);
    }

    /// Ranges all of one size, or a single one: the seconds per unit from their total.
    #[test]
    fn ranges_of_one_size_give_a_rate() {
        let ranges = vec![run(1, 100, 0.5), run(1, 100, 0.02), run(1, 100, 0.02), run(0, 9, 9.0)];
        let m = Moving::of(&ranges, 1, 1.0, false);
        assert_eq!((m.setup, m.units), (0.0, 300));
        assert!((m.per_unit - 2e-4).abs() < 1e-12);
        let one = Moving::of(&ranges[..1], 1, 1.0, false);
        assert!((one.per_unit - 5e-3).abs() < 1e-12);
        assert_eq!(
            Moving::of(&ranges, 2, 1.0, false),
            Moving { output_share: 1.0, ..Moving::default() }
        );
    }

    /// A rank's seconds not computing run from its first hand-out to its last merge.
    #[test]
    fn exposed_spans_a_rank_s_pieces() {
        let r = |handed: f64, seconds: f64, overhead: f64| RangeRun {
            handed,
            seconds,
            overhead,
            ..run(1, 10, 0.0)
        };
        // Handed at 0 and 1.1 (its inputs and set-up 0.1 s each), merged 0.2 s after each
        // computed: busy 2 s of the 2.3 s to the last merge.
        let ranges = vec![r(0.0, 1.0, 0.3), r(1.1, 1.0, 0.2)];
        let (k, seconds) = exposed(&ranges, 1);
        assert_eq!(k, 2);
        assert!((seconds - 0.3).abs() < 1e-9);
        assert_eq!(exposed(&ranges, 0), (0, 0.0));
    }
}
