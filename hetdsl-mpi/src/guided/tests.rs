use super::*;
use hetdsl::balance::{DeviceKind, DeviceProfile};
use hetdsl::Package;

fn setup(total: u64, gflops: &[f64]) -> Setup {
    let d = |g| DeviceProfile { kind: DeviceKind::Gpu, nominal_gflops: g, min_groups: 10 };
    Setup { total_groups: total, devices: gflops.iter().map(|g| d(*g)).collect() }
}

fn done(device: usize, package: Package, seconds: f64) -> Completion {
    Completion { device, package, kernel_seconds: seconds, host_start: 0.0, host_end: seconds }
}

/// Sizes follow the work left and the measured speeds, not the nominal ones once measured.
#[test]
fn sizes_follow_the_work_left_and_measured_speeds() {
    let mut g = RankGuided::new(0.5);
    g.start(&setup(4000, &[1.0, 1.0])).unwrap();
    // k·N = 1 is under the bound of 2: ⌊4000 · 1/2 / 2⌋ = 1000, then ⌊3000 / 4⌋ = 750.
    let a = Package { offset: 0, len: 1000 };
    let b = Package { offset: 1000, len: 750 };
    assert_eq!(g.next(0, 0.0), Next::Run(a));
    assert_eq!(g.next(1, 0.0), Next::Run(b));
    // Rank 0 ran 1000 in 1 s; rank 1, not measured yet, counts at rank 0's speed per
    // GFLOP/s: both at 1000/s, and rank 0 gets ⌊2250 / 4⌋ = 562.
    g.completed(&done(0, a, 1.0));
    let c = Package { offset: 1750, len: 562 };
    assert_eq!(g.next(0, 1.0), Next::Run(c));
    // Rank 1 measures 750 in 1.5 s, rank 0 its 562 in 1/16 s: rank 0 is now the faster
    // by its own measurements and gets the larger share of the 1688 left.
    g.completed(&done(1, b, 1.5));
    g.completed(&done(0, c, 0.0625));
    let (s0, s1) = (1562.0 / 1.0625, 750.0 / 1.5);
    let Next::Run(p) = g.next(0, 2.0) else { panic!("rank 0 gets work") };
    assert_eq!(p, Package { offset: 2312, len: (1688.0 * s0 / (2.0 * (s0 + s1))) as u64 });
    // The last groups come out at the minimum, then nothing.
    let mut end = p.end();
    while let Next::Run(q) = g.next(1, 3.0) {
        assert_eq!(q.offset, end);
        assert!(q.len >= 10 || q.end() == 4000);
        end = q.end();
    }
    assert_eq!(end, 4000);
    assert_eq!(g.next(0, 3.0), Next::Done);
}

/// Queued ahead, a rank gets what it would get next, one range at a time, and that range
/// runs from its predecessor's end; the end's ranges wait for an idle rank.
#[test]
fn a_range_queued_ahead_is_the_next_one_and_never_an_end_s() {
    let mut g = RankGuided::new(0.5);
    g.start(&setup(4000, &[1.0, 1.0])).unwrap();
    let a = Package { offset: 0, len: 1000 };
    assert_eq!(g.next(0, 0.0), Next::Run(a));
    assert_eq!(g.next(1, 0.0), Next::Run(Package { offset: 1000, len: 750 }));
    // ⌊2250 / 4⌋, as `next` would give once rank 0 is idle; well within its share of an
    // even finish (1000: rank 0 is busy to 1000 s, rank 1 to 750 s, at 1 unit a second).
    let q = Package { offset: 1750, len: 562 };
    assert_eq!(g.next_ahead(0, 0.0), Next::Run(q));
    assert_eq!(g.next_ahead(0, 0.0), Next::Wait, "one range queued at a time");
    g.completed(&done(0, a, 1.0));
    assert_eq!(g.running[0], Some((q, 1.0)), "the queued range runs from a's end");
    // 25 units, ranges of at least 10: queuing 10 would leave a crumb of 5.
    let mut g = RankGuided::new(0.5);
    g.start(&setup(25, &[1.0, 1.0])).unwrap();
    assert_eq!(g.next(0, 0.0), Next::Run(Package { offset: 0, len: 10 }));
    assert_eq!(g.next_ahead(0, 0.0), Next::Wait);
    assert_eq!(g.next(1, 0.0), Next::Run(Package { offset: 10, len: 15 }));
}

/// Two ranks at k = 0.25: k·N = 0.5 would give the first rank twice its share, all of it;
/// the bound keeps it to half its share.
#[test]
fn few_ranks_never_take_more_than_half_their_share() {
    let mut g = RankGuided::new(0.25);
    g.start(&setup(4000, &[1.0, 1.0])).unwrap();
    assert_eq!(g.next(0, 0.0), Next::Run(Package { offset: 0, len: 1000 }));
    assert_eq!(g.next(1, 0.0), Next::Run(Package { offset: 1000, len: 750 }));
}

/// A rank whose ranges each cost 0.05 s besides their computing gets ranges of at least
/// 20 × 0.05 s of its work, and a rank not measured yet is held to the others' cost; what
/// a rank's first range cost besides (its one-time set-up) does not count.
#[test]
fn ranges_amortise_their_fixed_cost() {
    let mut g = RankGuided::new(0.25);
    g.start(&setup(2_000_000, &[1.0, 1.0])).unwrap();
    let answered = |package: Package, start: f64, computed: f64, span: f64| Completion {
        device: 0,
        package,
        kernel_seconds: computed,
        host_start: start,
        host_end: start + span,
    };
    let a = Package { offset: 0, len: 500_000 };
    assert_eq!(g.next(0, 0.0), Next::Run(a));
    // 500 000 groups computed in 2 s, answered 4 s after the hand-out: 2 s of first use,
    // which would make the floor 20 · 2 s · 250 000/s, everything left.
    g.completed(&answered(a, 0.0, 2.0, 4.0));
    // No floor yet: ⌊1 500 000 / 4⌋.
    let b = Package { offset: 500_000, len: 375_000 };
    assert_eq!(g.next(0, 4.0), Next::Run(b));
    // 375 000 groups in 1.5 s, answered after 1.5625 s: 1/16 s per range from now on.
    g.completed(&answered(b, 4.0, 1.5, 1.5625));
    // Without the floor ⌊1 125 000 / 4⌋ = 281 250; with it 20 · 1/16 s · 250 000/s.
    let c = Package { offset: 875_000, len: 312_500 };
    assert_eq!(g.next(0, 5.5625), Next::Run(c));
    // Rank 1, at the same nominal speed, unmeasured: ⌊812 500 / 4⌋ = 203 125 without.
    assert_eq!(g.next(1, 5.5625), Next::Run(Package { offset: 1_187_500, len: 312_500 }));
}

/// Two ranks at 1 000 work-groups a second, whose ranges after the first cost 0.1 s besides;
/// rank 1's outputs arrive, with `lag`, as long after its answer as it took to compute
/// them (heard of once both rounds are over). After two rounds both are idle with 844
/// work-groups left; rank 1's next range.
fn two_rounds_then_rank_1_asks(lag: bool) -> Next {
    let mut g = RankGuided::new(0.25);
    g.start(&setup(4000, &[1.0, 1.0])).unwrap();
    let d = g.deliveries();
    let mut now = 0.0;
    let mut sent = Vec::new();
    for _ in 0..2 {
        for r in 0..2 {
            let Next::Run(p) = g.next(r, now) else { panic!("rank {r} gets work") };
            let computed = p.len as f64 / 1000.0;
            let answered = now + computed + 0.1;
            g.completed(&Completion {
                device: r,
                package: p,
                kernel_seconds: computed,
                host_start: now,
                host_end: answered,
            });
            if r == 1 {
                sent.push((p, answered, answered + if lag { computed } else { 0.0 }));
            }
        }
        now += 2.0;
    }
    for (p, answered, arrived) in sent {
        d.answered(1, p, answered);
        d.arrived(1, p, arrived);
    }
    // 1 000 and 750; then 562, and for rank 1 its even share of the 1 688 left.
    assert_eq!(g.left.left(), 844);
    g.next(1, now)
}

/// The floor that amortises a range's 0.1 s of fixed cost (20 · 0.1 s · 1 000/s = 2 000
/// work-groups) is above all that is left: it made the asking rank's range everything left
/// while the other rank, free as well, got nothing (two H200s as two ranks: balance
/// 0.42–0.45). Now the asking rank gets its share of an even finish: half, or a third when
/// its outputs take as long to arrive as to compute.
#[test]
fn near_the_end_a_rank_gets_its_share_of_an_even_finish() {
    let Next::Run(p) = two_rounds_then_rank_1_asks(false) else { panic!("no range") };
    assert!(p.len.abs_diff(422) <= 1, "{p:?}");
    let Next::Run(p) = two_rounds_then_rank_1_asks(true) else { panic!("no range") };
    assert!(p.len.abs_diff(281) <= 1, "{p:?}");
}

/// Rank 1, whose outputs take ten times as long to arrive as to compute, waits while rank 0
/// runs a range and would end the run far sooner without it; once nothing runs it takes
/// work. With outputs that arrive at once it takes work straight away.
#[test]
fn a_rank_behind_its_outputs_waits_while_another_ends_the_run_sooner() {
    for lag in [true, false] {
        let mut g = RankGuided::new(0.25);
        let d =
            |fill| DeviceProfile { kind: DeviceKind::Gpu, nominal_gflops: 1.0, min_groups: fill };
        g.start(&Setup { total_groups: 1200, devices: vec![d(100), d(100)] }).unwrap();
        let deliveries = g.deliveries();
        // 300 and 225 work-groups, computed at 1 000/s.
        let Next::Run(a) = g.next(0, 0.0) else { panic!("rank 0 gets work") };
        let Next::Run(b) = g.next(1, 0.0) else { panic!("rank 1 gets work") };
        g.completed(&done(0, a, 0.3));
        g.completed(&done(1, b, 0.225));
        deliveries.answered(1, b, 0.225);
        deliveries.arrived(1, b, if lag { 2.475 } else { 0.225 });
        let Next::Run(c) = g.next(0, 0.3) else { panic!("rank 0 gets work") };
        let asked = g.next(1, 0.3);
        if !lag {
            assert!(matches!(asked, Next::Run(_)), "{asked:?}");
            continue;
        }
        assert_eq!(asked, Next::Wait);
        let end = 0.3 + c.len as f64 / 1000.0;
        g.completed(&Completion { host_start: 0.3, host_end: end, ..done(0, c, end - 0.3) });
        assert!(matches!(g.next(1, end), Next::Run(_)));
    }
}

#[test]
fn refuses_a_bad_k_and_no_ranks() {
    assert!(RankGuided::new(0.0).start(&setup(10, &[1.0])).is_err());
    assert!(RankGuided::new(f64::NAN).start(&setup(10, &[1.0])).is_err());
    assert!(RankGuided::default().start(&setup(10, &[])).is_err());
}
