use super::*;

/// Tails of 5 %, as a caller may ask for.
const TAIL: f64 = 0.05;
use hetdsl::balance::{DeviceKind, DeviceProfile};

fn run(rank: usize, offset: u64, len: u64, seconds: f64) -> RangeRun {
    let package = Package { offset, len };
    RangeRun { rank, package, seconds, overhead: 0.0, handed: 0.0, queued: false }
}

/// A fresh call of two ranks, rank 1 twice as fast, on uniform work of 3 000 units.
fn fresh() -> CallOutcome {
    CallOutcome {
        clean: true,
        roi_seconds: 1.0,
        balance: 0.99,
        ranges: vec![
            run(0, 0, 500, 1.0),
            run(1, 500, 1000, 1.0),
            run(0, 1500, 500, 1.0),
            run(1, 2000, 1000, 1.0),
        ],
        nominal: vec![1.0, 2.0],
        output_share: 1.0,
        queue_ahead: false,
        in_place: Vec::new(),
    }
}

/// [`fresh`], the ranges of `ranks` spending 0.3 s each besides computing.
fn fresh_moving(ranks: &[usize]) -> CallOutcome {
    let mut call = fresh();
    for r in call.ranges.iter_mut().filter(|r| ranks.contains(&r.rank)) {
        r.overhead = 0.3;
    }
    call
}

/// A planned call of one range per rank over 3 000 units, taking `roi` seconds at `balance`.
fn planned(roi: f64, balance: f64) -> CallOutcome {
    CallOutcome {
        roi_seconds: roi,
        balance,
        ranges: vec![run(0, 0, 1000, 1.0), run(1, 1000, 2000, 1.0)],
        ..fresh()
    }
}

fn setup(n: usize, total: u64) -> Setup {
    let d = DeviceProfile { kind: DeviceKind::Gpu, nominal_gflops: 1.0, min_groups: 1 };
    Setup { total_groups: total, devices: vec![d; n] }
}

/// Everything a balancer hands out until every rank is done, asking in turn.
fn drain(b: &mut PlannedRanks, n: usize) -> Vec<(usize, Package)> {
    let mut out = Vec::new();
    let mut done = vec![false; n];
    while !done.iter().all(|d| *d) {
        for (r, d) in done.iter_mut().enumerate() {
            match b.next(r, 0.0) {
                Next::Run(p) => out.push((r, p)),
                Next::Done => *d = true,
                Next::Wait => {}
            }
        }
    }
    out
}

/// Nothing remembered runs fresh; after a fresh call, one range per rank plus a tail,
/// contiguous, tiling the range, sized by speed so that both end together.
#[test]
fn a_repeated_call_gets_one_range_per_rank_sized_to_end_together() {
    let mut m = RankRecall::default();
    assert_eq!(m.choose(2, 3000, TAIL), None);
    m.record(2, Form::Fresh, &fresh());
    let plan = m.choose(2, 3000, TAIL).unwrap();
    let (m0, t0) = (plan.main[0].unwrap(), plan.tail[0].unwrap());
    let (m1, t1) = (plan.main[1].unwrap(), plan.tail[1].unwrap());
    assert_eq!((m0.offset, m0.end(), t0.end(), m1.end(), t1.end()), (0, 950, 1000, 2900, 3000));
    assert_eq!((t0.offset, m1.offset, t1.offset), (m0.end(), t0.end(), m1.end()));
    // Through the balancer, each rank takes its own range, then its own tail.
    let mut b = PlannedRanks::new(plan);
    b.start(&setup(2, 3000)).unwrap();
    let handed = drain(&mut b, 2);
    assert_eq!(handed, vec![(0, m0), (1, m1), (0, t0), (1, t1)]);
    // Without a tail: exactly one range each.
    let plan = m.choose(2, 3000, 0.0).unwrap();
    assert_eq!(
        plan.ranges(),
        vec![Package { offset: 0, len: 1000 }, Package { offset: 1000, len: 2000 }]
    );
}

/// A rank that moves much besides computing gets its range in pieces (the end ones half the others), shorter
/// by what the pieces leave of its moving; once a planned call measured what it left, the next
/// cut uses that. A rank that moves nothing gets one piece.
#[test]
fn a_rank_s_moving_shortens_its_range_and_splits_it() {
    let mut m = RankRecall::default();
    let call = fresh_moving(&[1]);
    m.record(2, Form::Fresh, &call);
    let plan = m.choose(2, 3000, 0.0).unwrap();
    // Rank 1 moves 0.3 ms a unit, all of it outputs. Cut with one piece each, it would get
    // 1800 units, whose outputs (0.54 s) take over 3 % of its 1.8 s: 4 pieces (√(0.54 / 0.01)
    // = 7.3, at most 4), tapered (the work is uniform), leaving the last piece's sixth, 0.09 s. T = (3000 + 0.09·1000) / 1500 = 2.06 s: rank 0 gets 1030 units, rank 1
    // 1970, in pieces of 1, 2, 2 and 1 sixths.
    assert_eq!(plan.main[0], Some(Package { offset: 0, len: 1030 }));
    assert_eq!(plan.main[1], Some(Package { offset: 1030, len: 1970 }));
    assert_eq!(plan.pieces[0], vec![Package { offset: 0, len: 1030 }]);
    let lens: Vec<u64> = plan.pieces[1].iter().map(|p| p.len).collect();
    assert_eq!(lens, vec![328, 657, 656, 329]);
    assert_eq!(plan.ranges().len(), 5);
    assert!(crate::recall::tiles(
        &plan.ranges().iter().map(|p| p.offset..p.end()).collect::<Vec<_>>(),
        0..3000
    ));
    // Through the balancer, rank 1 takes its pieces in order.
    let mut b = PlannedRanks::new(plan.clone());
    b.start(&setup(2, 3000)).unwrap();
    let handed: Vec<Package> =
        drain(&mut b, 2).into_iter().filter(|h| h.0 == 1).map(|h| h.1).collect();
    assert_eq!(handed, plan.pieces[1]);
    // A planned call as predicted, but rank 1's pieces left it only 0.01 s not computing:
    // the next cut charges it that. T = (3000 + 0.01·1000) / 1500: rank 1 gets 1997 units.
    let mut ranges = vec![run(0, 0, 1045, 2.09)];
    let mut at = 0.0;
    for p in &plan.pieces[1] {
        let seconds = p.len as f64 / 1000.0;
        ranges.push(RangeRun { handed: at, ..run(1, p.offset, p.len, seconds) });
        at += seconds;
    }
    ranges.last_mut().unwrap().overhead = 0.01;
    let planned = CallOutcome {
        clean: true,
        roi_seconds: 0.9,
        balance: 0.99,
        ranges,
        nominal: vec![1.0, 2.0],
        output_share: 1.0,
        queue_ahead: false,
        in_place: Vec::new(),
    };
    m.record(2, Form::Fresh, &call);
    m.record(2, Form::Planned, &planned);
    let next = m.choose(2, 3000, 0.0).unwrap();
    assert_eq!(next.main[1], Some(Package { offset: 1003, len: 1997 }));
}

/// What a rank spends moving is learned again from each fresh call: the first call's costs
/// (a node's staging first written) do not size the pieces of every later plan.
#[test]
fn a_later_fresh_call_relearns_what_ranks_spend_moving() {
    let mut m = RankRecall::default();
    m.record(2, Form::Fresh, &fresh_moving(&[1]));
    assert_eq!(m.choose(2, 3000, 0.0).unwrap().pieces[1].len(), 4);
    m.record(2, Form::Planned, &planned(1.0, 0.99));
    m.record(2, Form::Fresh, &fresh());
    let plan = m.choose(2, 3000, 0.0).unwrap();
    assert_eq!(plan.pieces[1], vec![Package { offset: 1000, len: 2000 }], "moves nothing now");
}

/// A rank that a fresh call showed moving next to nothing gets one range; once a planned call
/// shows that range waiting 0.3 s besides computing, the next plan hands it out in pieces.
#[test]
fn a_whole_range_that_waited_teaches_the_next_plan_pieces() {
    let mut m = RankRecall::default();
    m.record(2, Form::Fresh, &fresh());
    m.record(2, Form::Fresh, &fresh());
    assert_eq!(m.choose(2, 3000, 0.0).unwrap().pieces[1].len(), 1);
    let mut call = planned(1.0, 0.99);
    call.ranges[1].overhead = 0.3;
    m.record(2, Form::Planned, &call);
    let plan = m.choose(2, 3000, 0.0).unwrap();
    assert!(plan.pieces[1].len() > 1, "{plan:?}");
    assert_eq!(plan.pieces[0].len(), 1, "rank 0 waited for nothing");
}

/// A rank whose ranges moved no bytes (rank 0's node, in the caller's memory) gets its range
/// whole however long it spent besides computing: pieces would have nothing to overlap.
#[test]
fn a_rank_that_moves_nothing_gets_one_piece() {
    let mut m = RankRecall::default();
    let call = CallOutcome { in_place: vec![true, false], ..fresh_moving(&[0, 1]) };
    m.record(2, Form::Fresh, &call);
    let plan = m.choose(2, 3000, 0.0).unwrap();
    assert_eq!(plan.pieces[0].len(), 1);
    assert_eq!(plan.pieces[1].len(), 4);
}

/// Queued ahead, a rank gets the next piece of its main range, never a tail nor an orphan.
#[test]
fn pieces_queue_behind_each_other_and_tails_wait() {
    let total = 4000;
    let p = |offset, len| Package { offset, len };
    let plan = RankPlan {
        total,
        main: vec![Some(p(0, 1800)), Some(p(2000, 1800))],
        pieces: vec![vec![p(0, 900), p(900, 900)], vec![p(2000, 900), p(2900, 900)]],
        tail: vec![Some(p(1800, 200)), Some(p(3800, 200))],
        speeds: vec![1000.0; 2],
        fixed: vec![0.0; 2],
        main_seconds: vec![1.8; 2],
        tail_cost: vec![0.2; 2],
    };
    let mut b = PlannedRanks::new(plan);
    b.start(&setup(2, total)).unwrap();
    assert_eq!(b.next(0, 0.0), Next::Run(p(0, 900)));
    assert_eq!(b.next_ahead(0, 0.0), Next::Run(p(900, 900)));
    assert_eq!(b.next_ahead(0, 0.0), Next::Wait, "its tail waits for it to be idle");
    let done = |device, package, t| Completion {
        device,
        package,
        kernel_seconds: 0.9,
        host_start: t - 0.9,
        host_end: t,
    };
    b.completed(&done(0, p(0, 900), 0.9));
    assert!(b.running_main[0].is_some(), "its second piece still runs");
    b.completed(&done(0, p(900, 900), 1.8));
    assert!(b.running_main[0].is_none());
    assert_eq!(b.next(0, 1.8), Next::Run(p(1800, 200)));
    b.device_lost(1);
    assert_eq!(b.next_ahead(1, 1.8), Next::Wait, "a lost rank gets nothing");
    assert_eq!(b.next_ahead(0, 1.8), Next::Wait, "orphans wait for an idle rank");
    assert_eq!(b.next(0, 1.8), Next::Run(p(2000, 900)));
}

/// A rank that overran its prediction has its tail taken by a rank that is free; a rank on
/// time keeps its own; a lost rank's ranges go to whoever asks.
#[test]
fn tails_absorb_a_late_rank_and_a_lost_one() {
    let mut m = RankRecall::default();
    m.record(2, Form::Fresh, &fresh());
    let plan = m.choose(2, 3000, TAIL).unwrap();
    let (t0, t1) = (plan.tail[0].unwrap(), plan.tail[1].unwrap());
    let mut b = PlannedRanks::new(plan.clone());
    b.start(&setup(2, 3000)).unwrap();
    assert!(matches!(b.next(0, 0.0), Next::Run(_)));
    assert!(matches!(b.next(1, 0.0), Next::Run(_)));
    // Rank 1 (predicted 1.9 s) ends at 1.9 s and takes its tail; rank 0 is on time.
    assert_eq!(b.next(1, 1.9), Next::Run(t1));
    b.completed(&Completion {
        device: 1,
        package: t1,
        kernel_seconds: 0.07,
        host_start: 1.9,
        host_end: 1.97,
    });
    // Rank 0 (predicted 1.9 s) is late at 1.97: it would end its 50-unit tail at 2.07 at
    // the soonest, rank 1 by 2.02: rank 1 takes it.
    assert_eq!(b.next(1, 1.97), Next::Run(t0));
    assert_eq!(b.next(0, 2.3), Next::Done);
    // A rank that would end another's tail later than its owner, still on time, waits.
    let mut b = PlannedRanks::new(plan.clone());
    b.start(&setup(2, 3000)).unwrap();
    let _ = (b.next(0, 0.0), b.next(1, 0.0));
    assert_eq!(b.next(0, 1.85), Next::Run(t0));
    assert_eq!(b.next(0, 1.86), Next::Wait);
    // A lost rank's range and tail go to the next rank asking.
    let mut b = PlannedRanks::new(plan.clone());
    b.start(&setup(2, 3000)).unwrap();
    assert!(matches!(b.next(1, 0.0), Next::Run(_)));
    b.device_lost(0);
    assert_eq!(b.next(1, 1.0), Next::Run(t1));
    assert_eq!(b.next(1, 1.1), Next::Run(plan.main[0].unwrap()));
    assert_eq!(b.next(1, 1.2), Next::Run(t0));
    assert_eq!(b.next(1, 1.3), Next::Done);
    // A plan for another range or another number of ranks is refused.
    assert!(PlannedRanks::new(plan.clone()).start(&setup(3, 3000)).is_err());
    assert!(PlannedRanks::new(plan).start(&setup(2, 3001)).is_err());
}

/// The rules of repeated calls: a settled plan drops its tails; a plan that ends unbalanced
/// is kept only where it ran faster than fresh, struck where slower; with no fresh time
/// known, the next call runs fresh; a call with a fault makes the next one fresh.
#[test]
fn plans_are_judged_like_hetdsl_s_relaunches() {
    let mut m = RankRecall::default();
    m.record(2, Form::Fresh, &fresh());
    assert!(m.choose(2, 3000, TAIL).unwrap().has_tail());
    // Unbalanced, and only the first (uncounted) fresh call known: fresh next, then plan.
    m.record(2, Form::Planned, &planned(1.0, 0.5));
    assert_eq!(m.choose(2, 3000, TAIL), None);
    m.record(2, Form::Fresh, &fresh());
    assert!(m.choose(2, 3000, TAIL).is_some());
    m.record(2, Form::Planned, &planned(1.0, 0.99));
    assert!(!m.choose(2, 3000, TAIL).unwrap().has_tail(), "settled: no tails");
    m.record(2, Form::Planned, &planned(1.0, 0.95));
    assert!(m.choose(2, 3000, TAIL).unwrap().has_tail(), "not settled: tails again");
    // Unbalanced but faster than fresh (1.0 s): kept.
    m.record(2, Form::Planned, &planned(0.9, 0.8));
    assert!(m.choose(2, 3000, TAIL).is_some() && !m.is_struck());
    // Unbalanced and slower: kept once, since a plan may have misjudged what a rank moves;
    // again, no better balanced: struck for good.
    m.record(2, Form::Planned, &planned(1.2, 0.8));
    assert!(m.choose(2, 3000, TAIL).is_some() && !m.is_struck());
    m.record(2, Form::Planned, &planned(1.2, 0.8));
    assert!(m.is_struck());
    m.record(2, Form::Fresh, &fresh());
    assert_eq!(m.choose(2, 3000, TAIL), None);
    // Balanced, but no fresh time to judge it by: one fresh call, then planned again.
    let mut m = RankRecall::default();
    m.record(2, Form::Fresh, &fresh());
    m.record(2, Form::Planned, &planned(1.0, 0.99));
    assert_eq!(m.choose(2, 3000, TAIL), None, "a fresh call for its time");
    m.record(2, Form::Fresh, &fresh());
    assert!(m.choose(2, 3000, TAIL).is_some());
    // A fault: fresh next; then planned again.
    let mut m = RankRecall::default();
    m.record(2, Form::Fresh, &fresh());
    m.record(2, Form::Planned, &CallOutcome { clean: false, ..planned(1.0, 1.0) });
    assert_eq!(m.choose(2, 3000, TAIL), None);
    m.record(2, Form::Fresh, &fresh());
    assert!(m.choose(2, 3000, TAIL).is_some());
    // Another number of ranks than the one remembered: fresh.
    assert_eq!(m.choose(3, 3000, TAIL), None);
}

/// An unbalanced plan slower than fresh is kept while each such call ends better balanced
/// than the last, [`MISSES`] times at most; a fresh call after planned ones only times.
#[test]
fn unbalanced_plans_that_improve_are_kept_a_few_times() {
    let mut m = RankRecall::default();
    m.record(2, Form::Fresh, &fresh());
    m.record(2, Form::Fresh, &fresh());
    for (k, balance) in [0.6, 0.7, 0.8].into_iter().enumerate() {
        m.record(2, Form::Planned, &planned(1.5, balance));
        assert!(!m.is_struck(), "miss {k} at {balance}, better than the last");
    }
    let before = m.choose(2, 3000, 0.0).unwrap();
    // A fresh call now does not teach the map: the next plan is the same.
    m.record(2, Form::Fresh, &CallOutcome { ranges: vec![run(0, 0, 3000, 9.0)], ..fresh() });
    assert_eq!(m.choose(2, 3000, 0.0).unwrap(), before);
    m.record(2, Form::Planned, &planned(1.5, 0.9));
    assert!(m.is_struck(), "a fourth miss in a row");
    // One that does not improve on the last is struck at once.
    let mut m = RankRecall::default();
    m.record(2, Form::Fresh, &fresh());
    m.record(2, Form::Fresh, &fresh());
    m.record(2, Form::Planned, &planned(1.5, 0.7));
    m.record(2, Form::Planned, &planned(1.5, 0.71));
    assert!(m.is_struck());
}

/// A settled plan's first unbalanced call slower than fresh is not learned from: the same plan
/// runs again. A second in a row is learned from and kept; a third no better is struck.
#[test]
fn a_settled_plan_replays_its_first_miss_unchanged() {
    let mut m = RankRecall::default();
    m.record(2, Form::Fresh, &fresh());
    m.record(2, Form::Fresh, &fresh());
    m.record(2, Form::Planned, &planned(0.9, 0.99));
    let settled = m.choose(2, 3000, 0.0).unwrap();
    // Rank 1 took twice as long as planned.
    let mut miss = planned(1.5, 0.6);
    miss.ranges[1].seconds = 2.0;
    m.record(2, Form::Planned, &miss);
    assert_eq!(m.choose(2, 3000, 0.0).unwrap(), settled, "replayed as it was");
    m.record(2, Form::Planned, &miss);
    let learned = m.choose(2, 3000, 0.0).unwrap();
    assert!(!m.is_struck());
    assert!(learned.main[1].unwrap().len < settled.main[1].unwrap().len, "{learned:?}");
    m.record(2, Form::Planned, &miss);
    assert!(m.is_struck(), "a second miss no better balanced");
}

/// A balanced plan whose recent calls run slower than the fresh calls (its outputs no longer
/// stream back during the computing) is struck; one within [`SLOWER_THAN_FRESH`] is kept, and
/// so is one slow call among faster ones. Against a single fresh time, a slower plan is judged
/// again after one more fresh call.
#[test]
fn a_balanced_plan_slower_than_fresh_is_struck() {
    let planned = |roi: f64| planned(roi, 0.99);
    let mut m = RankRecall::default();
    m.record(2, Form::Fresh, &fresh());
    m.record(2, Form::Fresh, &fresh());
    m.record(2, Form::Planned, &planned(1.005));
    assert!(m.choose(2, 3000, TAIL).is_some() && !m.is_struck(), "within 1 %: kept");
    m.record(2, Form::Planned, &planned(1.03));
    assert!(m.choose(2, 3000, TAIL).is_some(), "one slow call after a faster one: kept");
    m.record(2, Form::Planned, &planned(1.03));
    assert!(!m.is_struck(), "one fresh time to go by");
    assert_eq!(m.choose(2, 3000, TAIL), None, "a fresh call for a second time");
    m.record(2, Form::Fresh, &fresh());
    assert!(m.choose(2, 3000, TAIL).is_some());
    m.record(2, Form::Planned, &planned(1.03));
    assert!(m.is_struck(), "slower than two fresh calls");
    assert_eq!(m.choose(2, 3000, TAIL), None);
}

#[test]
fn memory_keeps_the_latest_launches() {
    let mut m: Memory<u32> = Memory::default();
    *m.entry("a") = 1;
    for k in 0..REMEMBERED {
        *m.entry(&k.to_string()) = 2;
    }
    assert_eq!(*m.entry("a"), 0, "the oldest was forgotten");
    assert_eq!(*m.entry("5"), 2);
}

/// A rank's pieces are tapered where the cost per unit is even along its range, equal where it
/// varies (a short last piece of cheap units would not hide the outputs of the one before).
#[test]
fn pieces_taper_only_over_even_cost() {
    let p = |offset, len| Package { offset, len };
    assert_eq!(
        cut_pieces(100..700, 4, Shape::Tapered),
        vec![p(100, 100), p(200, 200), p(400, 200), p(600, 100)]
    );
    assert_eq!(cut_pieces(100..700, 3, Shape::Equal), vec![p(100, 200), p(300, 200), p(500, 200)]);
    // Uniform work (one second per 500 or 1000 units of the same rank): even.
    let mut even = CostProfile::default();
    let measured = measured(&fresh().ranges);
    even.learn_by_nominal(2, &measured, &[1.0, 2.0]);
    assert_eq!(shape(&even, 0..3000), Shape::Tapered);
    // The last thousand units twice as dear: varies.
    let mut dear = measured.clone();
    dear[3].seconds = 2.0;
    let mut varies = CostProfile::default();
    varies.learn_by_nominal(2, &dear, &[1.0, 2.0]);
    assert_eq!(shape(&varies, 0..3000), Shape::Equal);
}
