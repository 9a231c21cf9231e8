use super::*;
use crate::report::{DeviceReport, PackageTrace, Transfer};
use crate::work::DeviceKind;

/// A report over `total` groups from packages `(device, offset, len, kernel seconds)`.
fn report(total: u64, names: &[&str], packages: &[(usize, u64, u64, f64)]) -> Report {
    let trace = packages
        .iter()
        .map(|&(device, offset, len, k)| {
            PackageTrace::merged_fixture(device, offset, len, k, k * 1.01)
        })
        .collect();
    Report::fixture(
        total,
        names
            .iter()
            .enumerate()
            .map(|(index, name)| DeviceReport {
                index,
                name: name.to_string(),
                kind: DeviceKind::Gpu,
                packages: 0,
                groups: 0,
                busy_seconds: 0.0,
                finish_seconds: 0.0,
                fault: None,
            })
            .collect(),
        trace,
    )
}

fn blocks(h: &History) -> Vec<Vec<Range<u64>>> {
    h.devices.iter().map(|d| d.owned.clone()).collect()
}

#[test]
fn nbody_on_two_h200s_gets_one_half_per_gpu() {
    // Sigmoid's run on the two H200s: a probe of 2112 groups each, then the rest.
    let r = report(
        11264,
        &["H200", "H200"],
        &[
            (1, 0, 2112, 0.3254),
            (0, 2112, 2112, 0.3262),
            (1, 4224, 3523, 0.5041),
            (0, 7747, 3517, 0.5046),
        ],
    );
    let h = one_block_per_device(&r).expect("a regular kernel");
    let b = blocks(&h);
    assert_eq!(b[0].len(), 1, "{b:?}");
    assert_eq!(b[1].len(), 1, "{b:?}");
    assert_eq!(b[0][0].start, 0);
    assert_eq!(b[1][0].end, 11264);
    assert_eq!(b[0][0].end, b[1][0].start);
    // Each package's cost per group is near the same: the blocks are near halves.
    assert!((b[0][0].end as i64 - 5632).abs() < 60, "{b:?}");
}

#[test]
fn a_back_up_of_a_slow_probe_does_not_skew_the_split() {
    // Every device: the CPU's 32-group probe, backed up by H200 #2 at the end (a partial wave:
    // 148 ms for 32 groups), is no measure of the H200's cost per group.
    let r = report(
        11264,
        &["cpu", "H200", "H200"],
        &[
            (2, 0, 32, 0.1477),
            (2, 32, 2112, 0.3258),
            (1, 2144, 2112, 0.3272),
            (2, 4256, 3448, 0.5031),
            (1, 7704, 3560, 0.5040),
        ],
    );
    let b = blocks(&one_block_per_device(&r).expect("regular"));
    assert!(b[0].is_empty(), "the CPU merged nothing");
    assert!((b[1][0].end as i64 - 5632).abs() < 60, "{b:?}");
}

#[test]
fn an_irregular_kernel_is_cut_where_its_measured_cost_halves() {
    // Cost per group rising fourfold along the range (RAP): 0.1 s per 1000 groups, then 0.2,
    // 0.3, 0.4. Half the cost (0.5 s) lies two thirds into the third thousand.
    let r = report(
        4000,
        &["G", "G"],
        &[(0, 0, 1000, 0.1), (1, 1000, 1000, 0.2), (0, 2000, 1000, 0.3), (1, 3000, 1000, 0.4)],
    );
    let b = blocks(&one_block_per_device(&r).expect("a cost map"));
    assert_eq!(b, vec![vec![0..2667], vec![2667..4000]]);
}

#[test]
fn an_unbalanced_relaunch_starts_afresh() {
    // Its data changed: the last map misled once, so the next run is a first run again.
    let mut r = report(2000, &["G", "G"], &[(0, 0, 1000, 0.1), (1, 1000, 1000, 0.5)]);
    r.balancer = "replay".into();
    r.balance = 0.2;
    assert!(one_block_per_device(&r).is_none());
    r.balance = 0.95;
    assert!(one_block_per_device(&r).is_some(), "a settled relaunch plans the next");
    // A regular kernel alike.
    let mut even = report(2000, &["G", "G"], &[(0, 0, 1000, 0.3), (1, 1000, 1000, 0.1)]);
    even.balancer = "relaunch".into();
    even.balance = 0.33;
    assert!(one_block_per_device(&even).is_none());
}

#[test]
fn a_device_twice_as_fast_gets_twice_the_work() {
    // Device 0 ran 1000 groups in 1 s, device 1 (another model) 1000 in 2 s: uniform cost.
    let r = report(
        3000,
        &["fast", "slow"],
        &[(0, 0, 1000, 1.0), (1, 1000, 1000, 2.0), (0, 2000, 1000, 1.0)],
    );
    let b = blocks(&one_block_per_device(&r).expect("regular"));
    assert_eq!(b, vec![vec![0..2000], vec![2000..3000]]);
}

#[test]
fn a_device_with_a_crumb_of_the_range_sits_out() {
    // A CPU that merged 32 of 11264 groups gets no block; the GPUs split the range.
    let r = report(
        11264,
        &["cpu", "H200", "H200"],
        &[(0, 0, 32, 0.5), (1, 32, 5616, 0.80), (2, 5648, 5616, 0.80)],
    );
    let h = one_block_per_device(&r).expect("regular");
    assert!(h.devices[0].owned.is_empty() && h.devices[0].speed == 0.0);
    let b = blocks(&h);
    assert_eq!(b[1][0].start, 0);
    assert_eq!(b[2][0].end, 11264);
    assert!((b[1][0].end as i64 - 5632).abs() <= 2, "{b:?}");
}

#[test]
fn runs_that_lost_a_device_or_do_not_tile_are_not_replayed() {
    let mut r = report(2000, &["G", "G"], &[(0, 0, 1000, 1.0), (1, 1000, 1000, 1.0)]);
    assert!(one_block_per_device(&r).is_some());
    r.devices[1].fault = Some("lost".into());
    assert!(one_block_per_device(&r).is_none());
    let gap = report(2000, &["G", "G"], &[(0, 0, 900, 1.0), (1, 1000, 1000, 1.0)]);
    assert!(one_block_per_device(&gap).is_none());
    let mut lost_copy = report(2000, &["G", "G"], &[(0, 0, 1000, 1.0), (1, 1000, 1000, 1.0)]);
    lost_copy.trace[1].merged = false;
    assert!(one_block_per_device(&lost_copy).is_none(), "a back-up's losing copy leaves a gap");
}

#[test]
fn transfer_bound_packages_are_costed_by_their_span() {
    // Kernels of 1 ms in packages whose span is 10 ms on device 0 and 30 ms on device 1 (same
    // kernel speed, a slower link): the split follows the spans, 3 : 1.
    let mut r = report(4000, &["a", "b"], &[(0, 0, 2000, 0.001), (1, 2000, 2000, 0.001)]);
    r.trace[0].host_end = 0.010;
    r.trace[1].host_end = 0.030;
    let b = blocks(&one_block_per_device(&r).expect("regular"));
    assert_eq!(b, vec![vec![0..3000], vec![3000..4000]]);
}

#[test]
fn resident_data_plans_by_kernel_time_not_by_a_first_launchs_uploads() {
    // A GPU's block of 9 330 groups: 0.43 ms of kernel in a 30 ms span (its uploads); a CPU's
    // 670 groups: 18 ms of kernel. Costed by span the GPU looks 25 times slower than it is.
    let mut r = report(10_000, &["GPU", "CPU"], &[(1, 0, 670, 0.018), (0, 670, 9330, 0.00043)]);
    r.trace[1].host_end = 0.030;
    r.trace[1].written = Transfer { bytes: 700 << 20, seconds: Some(0.029) };
    let groups = |h: &History, d: usize| h.devices[d].owned.iter().map(|g| g.end - g.start).sum();
    let by_span: u64 = groups(&one_block_per_device(&r).expect("a plan"), 1);
    let resident: u64 = groups(&one_block_per_device_resident(&r).expect("a plan"), 1);
    // By kernel time the CPU would end its share with the GPU at about 0.2 % of the range: a
    // sliver, so it sits out and the GPU holds the whole range.
    assert_eq!(resident, 0, "the CPU keeps {resident} groups");
    assert!(by_span > 200, "by span {by_span}");
    let gpu = one_block_per_device_resident(&r).expect("a plan");
    assert_eq!(blocks(&gpu)[0], vec![0..10_000]);
    assert_eq!(gpu.devices[1].speed, 0.0);
}

#[test]
fn resident_data_keeps_a_device_whose_planned_block_is_worth_it() {
    // The same CPU at a quarter of the GPU's kernel speed keeps its block (a fifth of the range).
    let r = report(10_000, &["GPU", "CPU"], &[(1, 0, 2000, 0.004), (0, 2000, 8000, 0.004)]);
    let b = blocks(&one_block_per_device_resident(&r).expect("a plan"));
    assert_eq!(b, vec![vec![0..8000], vec![8000..10_000]]);
    let cpu_holds = |h: &History| h.devices[1].owned.iter().map(|g| g.end - g.start).sum::<u64>();
    // A planned block of about 3 % of the range: kept by a one-shot plan, dropped where data is
    // resident (under RESIDENT_MIN_SHARE).
    let r = report(10_000, &["GPU", "CPU"], &[(1, 0, 670, 0.018), (0, 670, 9330, 0.0077)]);
    let held = cpu_holds(&one_block_per_device(&r).expect("a plan"));
    assert!(
        (held as f64) >= MIN_SHARE * 10_000.0 && (held as f64) < RESIDENT_MIN_SHARE * 10_000.0,
        "{held}"
    );
    assert_eq!(cpu_holds(&one_block_per_device_resident(&r).expect("a plan")), 0);
    // A planned block of 0.2 %, though the CPU merged 6.7 % of the last run: dropped by both.
    let r = report(10_000, &["GPU", "CPU"], &[(1, 0, 670, 0.018), (0, 670, 9330, 0.00043)]);
    assert_eq!(cpu_holds(&one_block_per_device(&r).expect("a plan")), 0);
}

#[test]
fn a_form_s_time_is_the_median_of_its_last_three() {
    let mut t = RecentTimes::default();
    assert_eq!(t.median(), None);
    for (seconds, median) in [(3.0, 3.0), (1.0, 1.0), (2.0, 2.0), (5.0, 2.0), (6.0, 5.0)] {
        t.push(seconds);
        assert_eq!(t.median(), Some(median));
    }
    assert_eq!(t.times(), [2.0, 5.0, 6.0]);
}

#[test]
fn an_irregular_kernel_s_map_is_its_kernel_times() {
    // Two GPUs, four pieces each, a cost symmetric about the middle (Mandelbrot's band). The
    // second GPU's last piece is cheap, and its span (30 ms for a 1 ms kernel) holds the merge
    // of the piece before, which its kernel could not hide.
    let costs = [0.001, 0.05, 0.2, 0.5, 0.5, 0.2, 0.05, 0.001];
    let pieces: Vec<_> =
        costs.iter().enumerate().map(|(i, &k)| (i / 4, i as u64 * 1000, 1000, k)).collect();
    let mut r = report(8000, &["G", "G"], &pieces);
    r.balancer = "relaunch-pieces".into();
    r.trace[7].host_end = r.trace[7].host_start + 0.030;
    // Costed by its span, the last piece would move the cut 29 groups past the middle.
    let b = blocks(&one_block_per_device(&r).expect("a cost map"));
    assert_eq!(b, vec![vec![0..4000], vec![4000..8000]]);
    // Reads follow the groups, not the cost: a first block of 6000 cheap groups reads back
    // three times what the second does, and counted they would move the cut into it.
    let costs = [0.001, 0.001, 0.001, 0.001, 0.001, 0.3, 0.4, 0.3];
    let pieces: Vec<_> = costs
        .iter()
        .enumerate()
        .map(|(i, &k)| (usize::from(i >= 6), i as u64 * 1000, 1000, k))
        .collect();
    let mut r = report(8000, &["G", "G"], &pieces);
    for t in &mut r.trace {
        t.read = Transfer { bytes: 1 << 27, seconds: Some(0.02) };
    }
    let b = blocks(&one_block_per_device(&r).expect("a cost map"));
    // Half the kernel time (0.5025 s) ends 494 groups into the seventh thousand; with the
    // reads counted (0.5825 s of 1.165) it would end at 6375.
    assert_eq!(b, vec![vec![0..6494], vec![6494..8000]]);
}

#[test]
fn a_block_falls_where_its_first_half_cost_more_than_its_second() {
    let costs = [0.001, 0.05, 0.2, 0.5, 0.5, 0.2, 0.05, 0.001];
    let pieces: Vec<_> =
        costs.iter().enumerate().map(|(i, &k)| (i / 4, i as u64 * 1000, 1000, k)).collect();
    let r = report(8000, &["G", "G"], &pieces);
    let plan = one_block_per_device(&r).expect("a cost map");
    assert_eq!(falling_blocks(&r, &plan), vec![false, true]);
    // One package per device: each block's cost looks even along it.
    let whole = report(8000, &["G", "G"], &[(0, 0, 4000, 0.75), (1, 4000, 4000, 0.75)]);
    assert_eq!(falling_blocks(&whole, &plan), vec![false, false]);
    // A regular kernel's noise (10 %) is no fall.
    let noisy = report(8000, &["G", "G"], &[(0, 0, 2000, 0.11), (0, 2000, 2000, 0.1)]);
    let block = 0..4000;
    let one = History {
        total_groups: 8000,
        devices: vec![DeviceHistory { speed: 1.0, owned: vec![block] }],
    };
    assert_eq!(falling_blocks(&noisy, &one), vec![false]);
}

#[test]
fn a_replay_on_resident_data_is_cut_again_from_its_own_kernel_times() {
    // A session's replayed halves, device B three times slower per group: far from balance,
    // so not planned from as a relaunch, but what a re-cut of the split corrects.
    let mut r = report(2000, &["A", "B"], &[(0, 0, 1000, 0.1), (1, 1000, 1000, 0.3)]);
    r.balancer = "replay(queued)".into();
    r.balance = 0.33;
    assert!(one_block_per_device_resident(&r).is_none());
    let b = blocks(&recut_resident(&r).expect("a cut"));
    assert_eq!(b, vec![vec![0..1500], vec![1500..2000]]);
}

/// NBody's forces on a CPU and two H100s, as a session's first launch measured them (kernel
/// times, 1024 work-groups): the CPU, 134 times slower, is left out and the GPUs halve it.
#[test]
fn resident_nbody_on_a_cpu_and_two_gpus_is_planned_on_the_gpus_alone() {
    let names = ["cpu", "H100", "H100"];
    let packages = [(0, 0, 32, 0.0928), (1, 32, 496, 0.01070), (2, 528, 496, 0.01073)];
    let h = one_block_per_device_resident(&report(1024, &names, &packages)).expect("a plan");
    assert_eq!(blocks(&h), vec![vec![], vec![0..512], vec![512..1024]]);
}
