//! Where each device's block lies in the next launch: shares from the learned speeds, one
//! contiguous block per device, in the order that keeps the most of what each device already
//! holds. Pure arithmetic over ranges, separate from the balancer's hand-out logic.

use std::ops::Range;

use super::super::{proportional_split, SLOW_CLASS};

/// Orders of at most this many devices are searched exhaustively (6! = 720 layouts); more are
/// ordered by where their previous ranges lay.
const EXHAUSTIVE: usize = 6;

/// How far apart two identical devices' speeds may be measured. Where a launch is under one
/// fill of each (NBody's 1024 work-groups against an H100's 2112), the fill of the one
/// measured 0.5 % slower ended just after the other's, and that GPU was left out: the other
/// ran every step alone, 15.6 ms against 11.1 for the two (the fill model is rough there too:
/// half the groups took 70 % of the time, not all of it).
const FILL_NOISE: f64 = 0.1;

/// One device's block in the planned layout.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Planned {
    /// The groups planned for the device (empty for a device left out).
    pub span: Range<u64>,
    /// Fraction of `span` the device held last launch: how far its measured speed applies.
    pub keep: f64,
}

/// Work-groups per device ∝ speed, among the devices worth giving work. A package below a
/// device's occupancy bound takes as long as a full one, so a device takes part only if one
/// fill of it ends by the common end: the end is the least, over the devices taken in order of
/// their fill times, of max(last fill time, G / their summed speed). A fill within
/// [`FILL_NOISE`] of that end still counts as ending by it.
pub(super) fn shares(total: u64, speeds: &[f64], occupancy: &[u64]) -> Vec<u64> {
    let usable: Vec<usize> =
        (0..speeds.len()).filter(|&d| speeds[d].is_finite() && speeds[d] > 0.0).collect();
    let fill = |d: usize| occupancy[d].max(1) as f64 / speeds[d];
    let mut by_fill = usable.clone();
    by_fill.sort_by(|&a, &b| fill(a).total_cmp(&fill(b)).then(a.cmp(&b)));
    let mut end = f64::INFINITY;
    let mut sum = 0.0;
    for &d in &by_fill {
        sum += speeds[d];
        end = end.min(fill(d).max(total as f64 / sum));
    }
    let weights: Vec<f64> = (0..speeds.len())
        .map(|d| {
            if usable.contains(&d) && fill(d) <= end * (1.0 + FILL_NOISE) {
                speeds[d]
            } else {
                0.0
            }
        })
        .collect();
    if weights.iter().all(|&w| w == 0.0) {
        return vec![0; speeds.len()];
    }
    proportional_split(total, &weights)
}

/// A device of a slower class ([`SLOW_CLASS`] below the fastest) cannot be helped once it
/// holds a package, and any extra time it takes idles everyone; so it gets no dynamic tail:
/// its share is cut to the whole occupancy waves of `margin` of it, and the groups cut off go
/// to the faster devices by speed. A share below one wave stays as it is (one package).
pub(super) fn trim_slow(shares: &mut [u64], speeds: &[f64], occupancy: &[u64], margin: f64) {
    let fastest =
        (0..shares.len()).filter(|&d| shares[d] > 0).map(|d| speeds[d]).fold(0.0, f64::max);
    let slow: Vec<bool> =
        (0..shares.len()).map(|d| shares[d] > 0 && speeds[d] * SLOW_CLASS < fastest).collect();
    // Only where a faster device takes what is cut off.
    if slow.iter().zip(shares.iter()).all(|(&s, &g)| s || g == 0) {
        return;
    }
    let mut cut = 0;
    for d in 0..shares.len() {
        let oc = occupancy[d].max(1);
        let waves = (shares[d] as f64 * margin / oc as f64).floor() as u64;
        if slow[d] && waves >= 1 {
            cut += shares[d] - waves * oc;
            shares[d] = waves * oc;
        }
    }
    let weights: Vec<f64> = (0..shares.len())
        .map(|d| if shares[d] > 0 && !slow[d] { speeds[d] } else { 0.0 })
        .collect();
    if cut > 0 {
        for (s, extra) in shares.iter_mut().zip(proportional_split(cut, &weights)) {
            *s += extra;
        }
    }
}

/// Groups of `span` inside the merged, sorted `owned` ranges.
pub(super) fn overlap(span: &Range<u64>, owned: &[Range<u64>]) -> u64 {
    owned.iter().map(|r| r.end.min(span.end).saturating_sub(r.start.max(span.start))).sum()
}

/// Groups of `span` the device held in one run from its start (`up`) or from its end: where
/// its bulk can go on measured ground.
pub(super) fn held_run(span: &Range<u64>, owned: &[Range<u64>], up: bool) -> u64 {
    let run = owned.iter().find(|r| match up {
        true => r.start <= span.start && span.start < r.end,
        false => r.start < span.end && span.end <= r.end,
    });
    match (run, up) {
        (Some(r), true) => r.end.min(span.end) - span.start,
        (Some(r), false) => span.end - r.start.max(span.start),
        (None, _) => 0,
    }
}

/// Mean position of what a device held, for ordering devices with no better clue.
fn centroid(owned: &[Range<u64>]) -> f64 {
    let (mut weight, mut moment) = (0.0, 0.0);
    for r in owned {
        let len = (r.end - r.start) as f64;
        weight += len;
        moment += len * (r.start + r.end) as f64 / 2.0;
    }
    if weight > 0.0 {
        moment / weight
    } else {
        f64::INFINITY
    }
}

/// Blocks laid end to end in `order`, with `shares`, and the device time they keep on groups
/// the device ran before (groups over its speed).
fn lay(order: &[usize], shares: &[u64], held: &Held) -> (Vec<Range<u64>>, f64) {
    let mut spans = vec![0..0; shares.len()];
    let (mut at, mut kept) = (0, 0.0);
    for &d in order {
        spans[d] = at..at + shares[d];
        kept += overlap(&spans[d], &held.owned[d]) as f64 / held.speeds[d];
        at += shares[d];
    }
    (spans, kept)
}

/// What each device held last launch, and its speed.
pub(super) struct Held<'a> {
    pub owned: &'a [Vec<Range<u64>>],
    pub speeds: &'a [f64],
}

/// Every permutation of `items` (Heap's algorithm), the identity first.
fn permutations(items: &[usize], visit: &mut impl FnMut(&[usize])) {
    let mut a = items.to_vec();
    let mut c = vec![0usize; a.len()];
    visit(&a);
    let mut i = 0;
    while i < a.len() {
        if c[i] < i {
            a.swap(if i % 2 == 0 { 0 } else { c[i] }, i);
            visit(&a);
            c[i] += 1;
            i = 0;
        } else {
            c[i] = 0;
            i += 1;
        }
    }
}

/// The layout: devices with a share get one block each, in the order that keeps the most
/// device time on groups each device ran before (so that with unchanged speeds every device
/// gets exactly its old block). Time, not groups: a slow device's speed is the one least
/// likely to hold on groups it never ran, and its overrun the costliest. Ties keep the order
/// of the devices' previous positions.
pub(super) fn plan(shares: &[u64], held: &Held) -> Vec<Planned> {
    let owned = held.owned;
    let mut order: Vec<usize> = (0..shares.len()).filter(|&d| shares[d] > 0).collect();
    order.sort_by(|&a, &b| centroid(&owned[a]).total_cmp(&centroid(&owned[b])).then(a.cmp(&b)));
    if order.len() <= EXHAUSTIVE {
        let mut best = (lay(&order, shares, held).1, order.clone());
        permutations(&order.clone(), &mut |candidate| {
            let kept = lay(candidate, shares, held).1;
            // Strictly more, beyond rounding: sums in another order must not break a tie.
            if kept > best.0 * (1.0 + 1e-9) {
                best = (kept, candidate.to_vec());
            }
        });
        order = best.1;
    }
    let (spans, _) = lay(&order, shares, held);
    spans
        .into_iter()
        .enumerate()
        .map(|(d, span)| {
            let len = span.end - span.start;
            let keep = if len > 0 { overlap(&span, &owned[d]) as f64 / len as f64 } else { 0.0 };
            Planned { span, keep }
        })
        .collect()
}

/// Sorted, merged, clipped to `0..total`; empty ranges dropped.
pub(crate) fn merged(mut ranges: Vec<Range<u64>>, total: u64) -> Vec<Range<u64>> {
    ranges.iter_mut().for_each(|r| *r = r.start.min(total)..r.end.min(total));
    ranges.retain(|r| r.start < r.end);
    ranges.sort_by_key(|r| r.start);
    let mut out: Vec<Range<u64>> = Vec::with_capacity(ranges.len());
    for r in ranges {
        match out.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => out.push(r),
        }
    }
    out
}

// Owned ranges are lists of ranges; a list of one range is what these tests mean.
#[allow(clippy::single_range_in_vec_init)]
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_follow_speeds_and_leave_out_a_device_too_slow_for_one_fill() {
        assert_eq!(shares(1000, &[1.0, 3.0], &[1, 1]), vec![250, 750]);
        // Device 1 alone would need 100 s for a fill; the others end everything in ~5 s.
        assert_eq!(shares(1000, &[100.0, 1.0, 100.0], &[1, 100, 1]), vec![500, 0, 500]);
        // Unknown and broken speeds get nothing.
        assert_eq!(shares(10, &[0.0, f64::NAN, 2.0], &[1, 1, 1]), vec![0, 0, 10]);
        // Every fill too long: the device that is soonest alone still takes everything.
        assert_eq!(shares(5, &[1.0, 2.0], &[100, 100]), vec![0, 5]);
        // A device whose share is below its fill still takes part when its fill ends before
        // the others could do without it (two GPUs of 208-group fills on 400 groups).
        assert_eq!(shares(400, &[27.0, 200.0, 200.0], &[24, 208, 208]), vec![25, 188, 187]);
        // Two identical GPUs measured 0.5 % apart, a launch under one fill of either: both.
        assert_eq!(shares(1024, &[3e-4, 46_400.0, 46_170.0], &[32, 2112, 2112]), vec![0, 513, 511]);
    }

    #[test]
    fn a_slow_device_gets_whole_waves_and_the_fast_ones_the_rest() {
        // Device 0 is 100 times slower: 0.9 · 160 = 144 groups = 4 waves of 32 (128), and the
        // 32 groups cut off go to the two peers by speed.
        let mut s = vec![160, 8000, 8000];
        trim_slow(&mut s, &[1.0, 50.0, 50.0], &[32, 1000, 1000], 0.9);
        assert_eq!(s, vec![128, 8016, 8016]);
        // A slow device beside a faster one that takes no part is not slow.
        let mut s = vec![160, 0];
        trim_slow(&mut s, &[1.0, 50.0], &[32, 1000], 0.9);
        assert_eq!(s, vec![160, 0]);
        // Peers are left alone; so is a slow share below one wave.
        let mut s = vec![20, 500, 480];
        trim_slow(&mut s, &[1.0, 90.0, 100.0], &[32, 10, 10], 0.9);
        assert_eq!(s, vec![20, 500, 480]);
    }

    #[test]
    fn the_order_keeps_each_device_where_it_was() {
        // Device 1 held the front, device 0 the back: unchanged shares keep them there.
        let owned = vec![vec![60..100], vec![0..60]];
        let p = plan(&[40, 60], &Held { owned: &owned, speeds: &[1.0, 1.5] });
        assert_eq!((p[0].span.clone(), p[1].span.clone()), (60..100, 0..60));
        assert_eq!((p[0].keep, p[1].keep), (1.0, 1.0));
        // Three devices in the order 2, 0, 1; device 0 faster now: only the boundaries move.
        let owned = vec![vec![30..60], vec![60..90], vec![0..30]];
        let p = plan(&[40, 25, 25], &Held { owned: &owned, speeds: &[4.0, 2.5, 2.5] });
        assert_eq!(p.iter().map(|x| x.span.clone()).collect::<Vec<_>>(), [25..65, 65..90, 0..25]);
    }

    #[test]
    fn ranges_are_merged_and_clipped() {
        assert_eq!(merged(vec![5..8, 0..2, 2..4, 7..12, 20..30], 25), vec![0..4, 5..12, 20..25]);
        assert_eq!(overlap(&(3..10), &[0..4, 5..12]), 6);
        assert_eq!(held_run(&(3..10), &[0..4, 5..12], true), 1);
        assert_eq!(held_run(&(3..10), &[0..4, 5..12], false), 5);
        assert_eq!(held_run(&(4..5), &[0..4, 5..12], true), 0);
        let mut seen = 0;
        permutations(&[0, 1, 2, 3], &mut |_| seen += 1);
        assert_eq!(seen, 24);
    }
}
