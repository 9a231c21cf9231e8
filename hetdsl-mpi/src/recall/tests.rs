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

/// Two alike lanes that ran long ranges, not interleaved, over a range whose middle
/// third costs ten times the rest: their speeds come from their nominal ones, each range's
/// cost from its time, and the cut shares the cost. Learned as interleaved, lane 1 (which
/// ran the dear third) looked ten times slower and got almost nothing.
#[test]
fn ranges_that_do_not_mix_are_costed_by_nominal_speed() {
    // 300 units: 0..100 and 200..300 cost 1 per unit, 100..200 cost 10; both lanes run
    // 100 units a second on unit cost.
    let ran = [m(0, 0, 100, 1.0), m(1, 100, 100, 10.0), m(0, 200, 100, 1.0)];
    let mut p = CostProfile::default();
    p.learn_by_nominal(2, &ran, &[5.0, 5.0]);
    let (w0, w1) = (p.speeds()[0].unwrap(), p.speeds()[1].unwrap());
    assert!((w0 - w1).abs() < 1e-9, "{w0} {w1}");
    let cut = blocks(p.cut(0..300, &[], &[true, true], 0.0).unwrap());
    assert_eq!(cut, vec![0..150, 150..300]);
    let mut q = CostProfile::default();
    q.learn_interleaved(2, &ran);
    let cut = blocks(q.cut(0..300, &[], &[true, true], 0.0).unwrap());
    assert!(cut[1].start > 250, "{cut:?}");
    // Without a nominal speed for a lane that ran: as interleaved.
    let mut r = CostProfile::default();
    r.learn_by_nominal(2, &ran, &[5.0]);
    assert_eq!(r, q);
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
    assert_eq!(r.split(0..100, PieceRule::default()), None);
    // A CPU (device 0) ten times slower than the GPU, interleaved over 0..1000.
    r.ran(None, vec![m(0, 0, 10, 1.0), m(1, 10, 490, 4.9), m(1, 500, 500, 5.0)], true, 0.9);
    assert_eq!(r.split(0..100, PieceRule::default()), None, "learned when the next call begins");
    r.begin_call(2);
    // The CPU gets 1/11 of a range; both end in 9.1 s.
    let cut = r.split(0..1000, PieceRule::default()).unwrap();
    assert_eq!(cut.blocks, vec![Some(0..91), Some(91..1000)]);
    assert!((cut.predicted - 9.1).abs() < 1e-9, "{cut:?}");
    r.ran(
        Some((&cut, CutRan { seconds: 9.1, busiest: 9.1 })),
        vec![m(0, 0, 91, 0.91), m(1, 91, 909, 9.09)],
        true,
        0.99,
    );
    let cut = r.split(200..300, PieceRule::default()).unwrap();
    r.ran(
        Some((&cut, CutRan { seconds: 3.0, busiest: 3.0 })),
        vec![m(0, 200, 9, 3.0), m(1, 209, 91, 0.91)],
        true,
        0.3,
    );
    assert_eq!(r.split(300..400, PieceRule::default()), None, "the rest of the call runs fresh");
    r.begin_call(2);
    // The planned call's CPU block at 200..209 cost three times its prediction: it gets
    // less of that part of the range from now on.
    let cut = r.split(200..300, PieceRule::default()).unwrap();
    assert!(cut.blocks[0].as_ref().unwrap().end < 209, "{cut:?}");
    r.ran(None, vec![m(0, 0, 1000, 1.0)], false, 1.0);
    r.begin_call(2);
    assert_eq!(
        r.split(0..1000, PieceRule::default()),
        None,
        "a call with a fault is not learned from"
    );
    r.begin_call(3);
    assert_eq!(r.split(0..1000, PieceRule::default()), None);
}

/// Cut ranges run whole until the ranges run whole show what pieces could hide: at least
/// 2 % of their time outside the busiest device's kernels; then in pieces where each piece
/// computes long enough. A reset of what the node knows starts whole again.
#[test]
fn a_node_runs_long_ranges_in_pieces_where_whole_ones_left_time_exposed() {
    let mut r = NodeRecall::default();
    r.begin_call(1);
    r.ran(None, vec![m(0, 0, 1000, 10.0)], true, 1.0);
    r.begin_call(1);
    // 100 units are predicted to compute 1 s; ranges of 15 units, 0.15 s (37.5 ms a piece).
    let run = |r: &mut NodeRecall, a: u64, len: u64, busy: f64| {
        let cut = r.split(a..a + len, PieceRule::default()).unwrap();
        assert!((cut.predicted - len as f64 / 100.0).abs() < 1e-9, "{cut:?}");
        let ran = CutRan { seconds: len as f64 / 100.0, busiest: busy * len as f64 / 100.0 };
        r.ran(Some((&cut, ran)), vec![m(0, a, len, ran.seconds)], true, 1.0);
        cut.form
    };
    use NodeForm::{Pieces, Whole};
    // 1 % exposed: always whole.
    assert_eq!(run(&mut r, 0, 100, 0.99), Whole);
    assert_eq!(run(&mut r, 100, 100, 0.99), Whole);
    assert_eq!(run(&mut r, 200, 100, 0.99), Whole);
    // 5 % exposed from now on: once the median says so, long ranges run in pieces, short
    // ones whole.
    assert_eq!(run(&mut r, 300, 100, 0.95), Whole);
    assert_eq!(run(&mut r, 400, 100, 0.95), Whole);
    assert_eq!(run(&mut r, 500, 100, 0.95), Pieces);
    assert_eq!(run(&mut r, 600, 15, 0.95), Whole);
    assert_eq!(run(&mut r, 615, 100, 0.95), Pieces);
    r.begin_call(2);
    r.ran(None, vec![m(0, 0, 10, 1.0), m(1, 10, 990, 1.0)], true, 1.0);
    r.begin_call(2);
    assert_eq!(r.split(0..1000, PieceRule::default()).unwrap().form, Whole);
}
