//! Which split a repeated session launch runs, from the previous run of the same launch:
//! replayed where it lies, one block per device, or learned.

use super::worker::Plan;
use super::{queued, staged};
use crate::balance::{self, Balancer, History};
use crate::report::Report;

/// The split of a repeated launch, from the previous run of the same launch. Where that run
/// ended balanced and each device held at most two blocks (a learned split, not Sigmoid's
/// scattered packages), it is replayed exactly: no data moves and each device runs one package
/// per block. Otherwise, where the previous run qualifies (`balance::relaunch`: it lost nothing
/// and was not itself a relaunch far from balance), one block per device cut so that all end
/// together, laid in device order, so that a later re-cut moves data at block boundaries only;
/// it has no dynamic tail, whose jitter would move boundaries at every launch. Otherwise each
/// device first gets the groups it ran last time, in proportion to its speed (`Learned`).
pub(super) fn learned(
    previous: &Report,
    history: balance::History,
    may_replay: bool,
    halos: bool,
) -> Box<dyn Balancer> {
    if let Some(split) = replayable(previous, &history, halos).filter(|_| may_replay) {
        return Box::new(balance::Replay::new(split));
    }
    let plan =
        if may_replay { balance::relaunch::one_block_per_device_resident(previous) } else { None };
    if let Some(plan) = plan {
        return Box::new(balance::Replay::planned(plan));
    }
    Box::new(balance::Learned::new(history))
}

/// The split a launch after `previous` (whose history is `history`) replays, if it does: one
/// with each device holding at most two blocks that ended balanced or lies near the relaunch
/// plan, and where a device held only a sliver of the range, that sliver given to the device
/// whose block adjoins it (with `halos`, a launch reading halos across its blocks' boundaries,
/// a device's small second block too).
pub(super) fn replayable(
    previous: &Report,
    history: &balance::History,
    halos: bool,
) -> Option<balance::History> {
    if !history.devices.iter().all(|d| d.owned.len() <= 2) {
        return None;
    }
    let split = absorb_slivers(history, halos)?;
    // Where a device's blocks went to another (a CPU's probe beside GPUs), the finish times of
    // the devices the split keeps: that CPU ended long before the GPUs (0.6 ms against 60 in a
    // Black-Scholes first launch), which says nothing of the split replayed.
    let absorbed = (history.devices.iter().zip(&split.devices))
        .any(|(was, kept)| !was.owned.is_empty() && kept.owned.is_empty());
    let finished: Vec<f64> = (previous.devices.iter().zip(&split.devices))
        .filter(|(_, kept)| !absorbed || !kept.owned.is_empty())
        .map(|(d, _)| d.finish_seconds)
        .filter(|t| *t > 0.0)
        .collect();
    let spread = finished.iter().copied().fold(0.0, f64::max)
        - finished.iter().copied().fold(f64::INFINITY, f64::min);
    let by_finish = if absorbed { crate::report::balance(&finished) } else { previous.balance };
    // A launch that moved data into its devices finished late by those moves, which a replay
    // of its split does not make: the kernel time each kept device ran judges it too. A
    // relaunch that moved 5 MiB into one H100 finished it 0.56 ms after the other, with
    // kernels of 0.264 and 0.259 ms, and the launch after it started afresh and scattered
    // Black-Scholes' options over both GPUs; NBody's forces, re-cut after a first launch whose
    // uploads held one GPU 9 ms, no longer met the integration's blocks, and each step then
    // waited for a few bodies computed on the other GPU (16.4 ms per step against 11.2).
    let moved =
        previous.transfers.iter().any(|t| t.moved.host_to_device + t.moved.device_to_device > 0);
    let busy = kept_kernel_seconds(previous, &split);
    // Kernels of a few tens of microseconds on every kept device: a re-cut would follow their
    // jitter, and move the blocks away from where the kernels before and after them left the
    // data (NBody's integration, 20-30 µs a launch, re-cut so, no longer met the forces'
    // blocks, and each step then waited on the other GPU).
    let short = short_kernels(&busy);
    let balanced = by_finish >= REPLAY_BALANCE
        || (spread <= REPLAY_SPREAD_SECONDS && by_finish >= REPLAY_BALANCE_SHORT)
        || (moved && crate::report::balance(&busy) >= REPLAY_BALANCE)
        || short;
    // Finish times that include a first launch's uploads say little about the launches after
    // it: the split must also balance by the devices' kernel speeds, unless those are kernels
    // of microseconds, whose speeds are jitter (NBody's integration ran 496 groups in 20 and
    // 28 µs on two H100s, was re-cut 441 : 583, and each step then moved bodies between
    // the GPUs). Replays that keep losing to its imbalance re-cut it (`recut`).
    let fair = short || kernel_balance(&split) >= REPLAY_BALANCE_SHORT;
    (balanced && fair || near_plan(previous, &split)).then_some(split)
}

/// The kernel seconds each device `split` keeps ran in `previous` (a back-up copy at its
/// device's own rate).
fn kept_kernel_seconds(previous: &Report, split: &balance::History) -> Vec<f64> {
    (0..split.devices.len())
        .filter(|&d| !split.devices[d].owned.is_empty())
        .map(|d| {
            let mine = previous.trace.iter().filter(|t| t.device == d && t.merged);
            mine.filter_map(|t| previous.kernel_seconds_at_own_rate(t)).sum()
        })
        .collect()
}

/// Kernels under [`SHORT_KERNELS_SECONDS`] on every kept device.
fn short_kernels(busy: &[f64]) -> bool {
    !busy.is_empty() && busy.iter().all(|b| *b < SHORT_KERNELS_SECONDS)
}

/// The split a replay of a launch of microsecond kernels runs: `latest`, the split of the
/// launch of another kernel over the same devices run or queued just before, where it is one
/// block per device over the same range, so that the kernel runs where that one left its
/// inputs; else `split`. After a back-up, NBody's forces were cut 512 : 512 and the
/// integration kept its own 528 : 496, and every step moved 16 groups of accelerations.
pub(super) fn follow_latest(
    split: balance::History,
    previous: &Report,
    latest: Option<balance::History>,
) -> balance::History {
    let one_block_each = |l: &balance::History| {
        l.devices.iter().all(|d| d.owned.len() <= 1)
            && crate::balance::replay::tiles(l, split.total_groups, split.devices.len())
    };
    match latest {
        Some(l) if short_kernels(&kept_kernel_seconds(previous, &split)) && one_block_each(&l) => l,
        _ => split,
    }
}

/// The balance `split` would end with if each device ran its groups at the speed it showed
/// (work-groups per second of kernel time): the first device done over the last. Devices with
/// no groups or no measured speed are left out (1 when fewer than two remain).
///
/// A first launch's finish times include its uploads: on one H200 + 16-core CPU Black-Scholes'
/// first launch left the CPU 6.7 % of the options, and every later launch kept that split:
/// 18.3 ms of CPU kernel per step, against 0.48 ms per step on the H200 alone.
fn kernel_balance(split: &balance::History) -> f64 {
    let ends: Vec<f64> =
        split.devices.iter().filter(|d| d.speed > 0.0).map(|d| held(d) as f64 / d.speed).collect();
    crate::report::balance(&ends)
}

/// The work-groups a device holds.
fn held(d: &balance::DeviceHistory) -> u64 {
    d.owned.iter().map(|r| r.end - r.start).sum()
}

/// Whether `split` is one block per device, each boundary within [`NEAR`] of the range of where
/// the relaunch plan from `previous` would cut: re-cutting would move data for a gain of a
/// percent or so. A first launch's dynamic end leaves such a split between identical GPUs
/// (50.6 : 49.4 of a Jacobi grid: 65 MiB to move for 1 % of each sweep).
fn near_plan(previous: &Report, split: &balance::History) -> bool {
    let Some(plan) = balance::relaunch::one_block_per_device_resident(previous) else {
        return false;
    };
    let near = (NEAR * split.total_groups as f64).max(1.0);
    let off = |a: u64, b: u64| a.abs_diff(b) as f64 > near;
    split.devices.iter().zip(&plan.devices).all(|(now, planned)| {
        match (&now.owned[..], &planned.owned[..]) {
            ([], []) => true,
            ([a], [b]) => !(off(a.start, b.start) || off(a.end, b.end)),
            _ => false,
        }
    })
}

/// How far a boundary may lie from the planned one, as a fraction of the range, for the split
/// to be replayed as it lies: two devices then differ by at most 2 % of the range.
const NEAR: f64 = 0.01;

/// `history` with each device that held under [`balance::relaunch::RESIDENT_MIN_SHARE`] of the
/// range (a first launch's probe on a CPU beside GPUs) left out, its blocks joined to the
/// blocks they adjoin: such a device would hold every replayed launch to its own latency, and
/// re-cutting the split instead moves data at every boundary. With `halos`, a device's second
/// block under that share (a first launch's last package) joins the other device's block it
/// adjoins too: each boundary is a halo to move at every launch (a Jacobi sweep over two H200s
/// took 0.69 ms instead of 0.55 when its split moved twice one block's halo). Without halos
/// only a second block under [`balance::relaunch::TINY_SHARE`] joins: it costs a kernel per
/// launch, while moving a larger one once (2.5 % of the options) cost a ten-step Black-Scholes
/// loop a third of its speed. `None` where a sliver adjoins no other device's block.
fn absorb_slivers(history: &balance::History, halos: bool) -> Option<balance::History> {
    let small = balance::relaunch::RESIDENT_MIN_SHARE * history.total_groups.max(1) as f64;
    let tiny = balance::relaunch::TINY_SHARE;
    let second = if halos { small } else { tiny * history.total_groups.max(1) as f64 };
    let sliver: Vec<bool> =
        history.devices.iter().map(|d| held(d) > 0 && (held(d) as f64) < small).collect();
    let mut out = history.clone();
    for d in (0..sliver.len()).filter(|&d| sliver[d]) {
        for r in std::mem::take(&mut out.devices[d].owned) {
            give_to_neighbour(&mut out, r, d, &sliver)?;
        }
        out.devices[d].speed = 0.0;
    }
    for d in 0..out.devices.len() {
        let blocks = out.devices[d].owned.clone();
        let Some(largest) = blocks.iter().map(|r| r.end - r.start).max() else { continue };
        for r in blocks {
            let len = r.end - r.start;
            if len == largest || len as f64 >= second {
                continue;
            }
            if give_to_neighbour(&mut out, r.clone(), d, &sliver).is_some() {
                out.devices[d].owned.retain(|o| *o != r);
            }
        }
    }
    Some(out)
}

/// Join block `r` of device `from` to the block of another device, not a sliver, that it
/// adjoins; that device, or `None` (nothing given) where no such block adjoins it.
fn give_to_neighbour(
    out: &mut balance::History,
    r: std::ops::Range<u64>,
    from: usize,
    sliver: &[bool],
) -> Option<usize> {
    let touches = |o: &std::ops::Range<u64>| o.end == r.start || o.start == r.end;
    let next = (0..out.devices.len())
        .find(|&k| k != from && !sliver[k] && out.devices[k].owned.iter().any(touches))?;
    let owned = &mut out.devices[next].owned;
    owned.push(r);
    *owned = balance::merged_ranges(std::mem::take(owned), out.total_groups);
    Some(next)
}

/// Finish times within 3 % of each other: a balanced split, worth replaying unchanged rather
/// than moving data for a gain inside the jitter of the measured speeds.
const REPLAY_BALANCE: f64 = 0.97;

/// Or within a millisecond: a launch of a millisecond or two has a few percent of host jitter
/// in its finish times, and the boundary shifts that jitter asks for moved 4-30 MiB per launch
/// through the host on two H200s (0.4-3 ms at the 10 GB/s such moves reach), more than any
/// imbalance of under a millisecond could win back.
const REPLAY_SPREAD_SECONDS: f64 = 1e-3;

/// Kernel time per device under which a launch's split is replayed as it lies (see
/// `replayable`).
const SHORT_KERNELS_SECONDS: f64 = 1e-4;

/// But not a split that is plainly off: replaying a 74:26 split of two equal H200s (Jacobi,
/// whose first relaunch learned from a cold first launch) kept one GPU idle most of every
/// sweep; below this balance the learned split moves the boundary once, and replay resumes.
const REPLAY_BALANCE_SHORT: f64 = 0.75;

/// The split to cut afresh instead of replaying the current one (`now`, `previous`'s), where the
/// replays have lost more kernel time to its imbalance (`owed`, [`imbalance_loss`] summed since
/// it was cut) than cutting it costs: one launch run to its end outside the queue, plus the
/// bytes the new blocks lack, moved through the host. A replay keeps a split whose finish times
/// lie within a millisecond (a move would cost more than one launch wins), but it keeps it for
/// as long as the loop runs: on two H200s Black-Scholes replayed its first launch's 52.8 : 47.2
/// at every step, 0.252 against 0.220 ms of kernel. Paying a move once the losses match it
/// costs a loop at most twice what the best choice in hindsight would have.
pub(super) fn recut(
    plan: &Plan,
    previous: &Report,
    now: &History,
    owed: f64,
    devices: usize,
) -> Option<History> {
    if owed <= previous.roi_seconds {
        return None;
    }
    let cut = balance::relaunch::recut_resident(previous)?;
    let blocks = queued::blocks(&cut, plan.geo.units, devices)?;
    if queued::blocks(now, plan.geo.units, devices).as_ref() == Some(&blocks) {
        return None;
    }
    let bytes: u64 = (staged::needs(plan, &blocks)?.iter())
        .map(|n| (n.range.end - n.range.start) * n.core.elem as u64)
        .sum();
    (owed > previous.roi_seconds + bytes as f64 / MOVE_BYTES_PER_SECOND).then_some(cut)
}

/// The kernel time a launch lost to its split's imbalance: its last device's kernel time beyond
/// the time every device would have ended in with the groups shared by the speeds it showed.
pub(super) fn imbalance_loss(report: &Report) -> f64 {
    let ran = report.devices.iter().filter(|d| d.groups > 0 && d.busy_seconds > 0.0);
    let (mut groups, mut speed, mut last) = (0.0, 0.0, 0.0f64);
    for d in ran {
        groups += d.groups as f64;
        speed += d.groups as f64 / d.busy_seconds;
        last = last.max(d.busy_seconds);
    }
    if speed > 0.0 {
        (last - groups / speed).max(0.0)
    } else {
        0.0
    }
}

/// What a re-cut's moves between devices reach through the host (measured on two H200s, see
/// [`REPLAY_SPREAD_SECONDS`]).
const MOVE_BYTES_PER_SECOND: f64 = 10e9;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::balance::{DeviceHistory, History};

    /// One block per device, `(start, end)`.
    fn history(blocks: &[(u64, u64)]) -> History {
        History {
            total_groups: 1000,
            devices: blocks
                .iter()
                .map(|&(s, e)| DeviceHistory { speed: 1.0, owned: std::iter::once(s..e).collect() })
                .collect(),
        }
    }

    fn held(h: &History, d: usize) -> Vec<(u64, u64)> {
        h.devices[d].owned.iter().map(|r| (r.start, r.end)).collect()
    }

    #[test]
    fn a_split_is_judged_by_the_devices_kernel_speeds() {
        // Two equal GPUs with halves: balanced.
        let mut h = history(&[(0, 500), (500, 1000)]);
        assert!((kernel_balance(&h) - 1.0).abs() < 1e-12);
        // A CPU 40 times slower holding 6.7 % beside a GPU with the rest: its block takes
        // 67/1 against 933/40 seconds, a balance of 0.35.
        h = history(&[(0, 67), (67, 1000)]);
        h.devices[1].speed = 40.0;
        let b = kernel_balance(&h);
        assert!((b - (933.0 / 40.0) / 67.0).abs() < 1e-12, "{b}");
        assert!(b < REPLAY_BALANCE_SHORT);
        // A device with no groups, or no measured speed, is not judged.
        h = history(&[(0, 0), (0, 1000)]);
        h.devices[0].owned.clear();
        assert_eq!(kernel_balance(&h), 1.0);
        h = history(&[(0, 500), (500, 1000)]);
        h.devices[0].speed = 0.0;
        assert_eq!(kernel_balance(&h), 1.0);
    }

    /// A report of `balancer` from packages `(device, offset, len, kernel seconds)` of devices
    /// named `names`, each ending at `finish` seconds, that moved `moved` bytes into them.
    fn launch(
        balancer: &str,
        names: &[&str],
        packages: &[(usize, u64, u64, f64)],
        finish: &[f64],
        moved: u64,
    ) -> Report {
        use crate::report::{BufferMoved, DeviceReport, Moved, PackageTrace};
        let trace = packages
            .iter()
            .map(|&(d, offset, len, k)| PackageTrace::merged_fixture(d, offset, len, k, finish[d]))
            .collect();
        let devices = names
            .iter()
            .enumerate()
            .map(|(index, name)| DeviceReport {
                index,
                name: name.to_string(),
                kind: crate::work::DeviceKind::Gpu,
                packages: 0,
                groups: 0,
                busy_seconds: 0.0,
                finish_seconds: finish[index],
                fault: None,
            })
            .collect();
        let mut r = Report::fixture(1000, devices, trace);
        r.balancer = balancer.into();
        r.balance = crate::report::balance(finish);
        let moved = Moved { host_to_device: moved, ..Moved::default() };
        r.transfers = vec![BufferMoved { buffer: 0, arg: Some(0), moved }];
        r
    }

    #[test]
    fn a_probe_that_sat_out_does_not_count_in_the_balance() {
        // A first launch: a CPU's probe ended at 0.6 ms, two GPUs together at 60 ms, one of
        // them with the last few groups at the range's end as a second block.
        let previous = launch(
            "regions",
            &["cpu", "gpu", "gpu"],
            &[(0, 0, 10, 6e-4), (1, 10, 491, 1e-4), (1, 995, 5, 1e-6), (2, 501, 494, 1e-4)],
            &[6e-4, 0.060, 0.0605],
            768 << 20,
        );
        let history = History::from_report(&previous);
        let split = replayable(&previous, &history, false).expect("replayed");
        assert_eq!(held(&split, 0), []);
        assert_eq!(held(&split, 1), [(0, 501), (995, 1000)]);
        assert_eq!(held(&split, 2), [(501, 995)]);
    }

    #[test]
    fn a_first_launch_whose_uploads_held_one_gpu_is_replayed_by_its_kernel_times() {
        // NBody's forces: a CPU's probe ends last (absorbed), one GPU's uploads held it 9 ms,
        // the GPUs' kernels ran 10.69 and 10.70 ms. Re-cut, the split would no longer meet
        // the next kernel's, which replays its own first launch.
        let previous = launch(
            "regions",
            &["cpu", "gpu", "gpu"],
            &[(0, 0, 31, 0.090), (1, 31, 485, 0.01069), (2, 516, 484, 0.01070)],
            &[0.092, 0.022, 0.0134],
            8 << 20,
        );
        let history = History::from_report(&previous);
        let split = replayable(&previous, &history, false).expect("replayed");
        assert_eq!(held(&split, 1), [(0, 516)]);
        assert_eq!(held(&split, 2), [(516, 1000)]);
    }

    #[test]
    fn a_split_of_kernels_of_microseconds_is_replayed_where_it_lies() {
        // NBody's integration after its first launch: 25 and 28 µs of kernel, finishing 0.17
        // and 0.25 ms, a CPU's probe absorbed. Re-cut from such times, the blocks would no
        // longer meet the forces' blocks.
        let replayed = |packages: &[(usize, u64, u64, f64)], finish: &[f64]| {
            let previous = launch("regions", &["cpu", "gpu", "gpu"], packages, finish, 0);
            let history = History::from_report(&previous);
            replayable(&previous, &history, false).expect("replayed")
        };
        let packages = [(0, 0, 31, 1e-4), (1, 31, 485, 2.5e-5), (2, 516, 484, 2.8e-5)];
        let split = replayed(&packages, &[4e-4, 2.5e-4, 1.7e-4]);
        assert_eq!(held(&split, 1), [(0, 516)]);
        // Measured on two H100s: 28 and 20 µs for 496 groups each; with the probe's 32
        // groups joined, the first GPU's block is 0.67 of the other's speed.
        let packages = [(0, 0, 32, 1.04e-4), (1, 32, 496, 2.8e-5), (2, 528, 472, 2.0e-5)];
        let split = replayed(&packages, &[4.3e-4, 2.8e-4, 2.3e-4]);
        assert!(kernel_balance(&split) < REPLAY_BALANCE_SHORT);
        assert_eq!(held(&split, 1), [(0, 528)]);
        assert_eq!(held(&split, 2), [(528, 1000)]);
    }

    #[test]
    fn a_microsecond_kernel_follows_the_split_of_the_kernel_before_it() {
        // NBody's integration (20-28 µs) replays 528 : 472; the forces were just cut
        // 512 : 488.
        let packages = [(0, 0, 528, 2.8e-5), (1, 528, 472, 2.0e-5)];
        let previous = launch("replay", &["gpu", "gpu"], &packages, &[3e-4, 3e-4], 0);
        let own = History::from_report(&previous);
        let forces = history(&[(0, 512), (512, 1000)]);
        assert_eq!(follow_latest(own.clone(), &previous, Some(forces.clone())), forces);
        assert_eq!(follow_latest(own.clone(), &previous, None), own);
        // Not a split of one block per device, or not over the same range: its own.
        let mut scattered = forces.clone();
        scattered.devices[0].owned = vec![0..256, 600..856];
        scattered.devices[1].owned = vec![256..600, 856..1000];
        assert_eq!(follow_latest(own.clone(), &previous, Some(scattered)), own);
        let mut other = forces.clone();
        other.total_groups = 2000;
        assert_eq!(follow_latest(own.clone(), &previous, Some(other)), own);
        // Kernels of milliseconds keep their own split.
        let packages = [(0, 0, 528, 1.1e-2), (1, 528, 472, 1.0e-2)];
        let previous = launch("replay", &["gpu", "gpu"], &packages, &[1.1e-2, 1e-2], 0);
        let own = History::from_report(&previous);
        assert_eq!(follow_latest(own.clone(), &previous, Some(forces)), own);
    }

    #[test]
    fn a_launch_late_by_its_moves_is_judged_by_its_kernels() {
        // A relaunch that moved 5 MiB into the first GPU, which ended 0.56 ms after the other
        // with kernels of 0.264 and 0.259 ms.
        let packages = [(0, 0, 508, 0.264e-3), (1, 508, 492, 0.2586e-3)];
        let finish = [1.316e-3, 0.755e-3];
        let previous = launch("relaunch", &["gpu", "gpu"], &packages, &finish, 5 << 20);
        let history = History::from_report(&previous);
        let split = replayable(&previous, &history, false).expect("replayed");
        assert_eq!(held(&split, 0), [(0, 508)]);
        // Without moves, the same finish times are a split plainly off.
        let previous = launch("relaunch", &["gpu", "gpu"], &packages, &finish, 0);
        assert_eq!(replayable(&previous, &history, false), None);
    }

    #[test]
    fn a_sliver_joins_the_block_it_adjoins() {
        // A CPU's 10-group probe at the front, two GPUs' halves after it.
        let out = absorb_slivers(&history(&[(0, 10), (10, 500), (500, 1000)]), false).unwrap();
        assert_eq!(held(&out, 0), []);
        assert_eq!(out.devices[0].speed, 0.0);
        assert_eq!(held(&out, 1), [(0, 500)]);
        assert_eq!(held(&out, 2), [(500, 1000)]);
        // Between two blocks, it goes to the first device that adjoins it.
        let out = absorb_slivers(&history(&[(0, 495), (495, 505), (505, 1000)]), false).unwrap();
        assert_eq!(held(&out, 0), [(0, 505)]);
        // Shares of 5 % and more stay where they are.
        let h = history(&[(0, 50), (50, 500), (500, 1000)]);
        assert_eq!(absorb_slivers(&h, true).unwrap(), h);
    }

    #[test]
    fn with_halos_a_small_second_block_joins_the_block_it_adjoins() {
        // A GPU that also ran the last few groups of a first launch: its 0.5 % block at the end
        // goes to the other GPU, whose block it adjoins; each then holds one block.
        let mut h = history(&[(0, 500), (500, 995)]);
        h.devices[0].owned.push(995..1000);
        // Without halos a block of 0.5 % stays (moving it once costs more than a kernel a
        // launch); one under 0.1 % joins.
        assert_eq!(absorb_slivers(&h, false).unwrap(), h);
        let mut tiny = history(&[(0, 5000), (5000, 9997)]);
        tiny.total_groups = 10_000;
        tiny.devices[0].owned.push(9997..10_000);
        let out = absorb_slivers(&tiny, false).unwrap();
        assert_eq!(held(&out, 0), [(0, 5000)]);
        assert_eq!(held(&out, 1), [(5000, 10_000)]);
        let out = absorb_slivers(&h, true).unwrap();
        assert_eq!(held(&out, 0), [(0, 500)]);
        assert_eq!(held(&out, 1), [(500, 1000)]);
        assert_eq!(out.devices[0].speed, 1.0);
        // A second block of 5 % or more is a share worth keeping where it is.
        let mut h = history(&[(0, 450), (450, 950)]);
        h.devices[0].owned.push(950..1000);
        assert_eq!(absorb_slivers(&h, true).unwrap(), h);
        // One adjoining no other device's block stays too.
        let mut h = history(&[(0, 600), (600, 980)]);
        h.devices[0].owned.push(990..1000);
        assert_eq!(absorb_slivers(&h, true).unwrap(), h);
    }

    /// Devices that ran `groups` work-groups in `busy` seconds of kernel each.
    fn ran(groups: &[u64], busy: &[f64]) -> Report {
        let devices = (0..groups.len())
            .map(|index| crate::report::DeviceReport {
                index,
                name: "G".into(),
                kind: crate::work::DeviceKind::Gpu,
                packages: 1,
                groups: groups[index],
                busy_seconds: busy[index],
                finish_seconds: busy[index],
                fault: None,
            })
            .collect();
        Report::fixture(groups.iter().sum(), devices, Vec::new())
    }

    #[test]
    fn a_launch_loses_its_last_device_s_time_beyond_an_even_end() {
        // 100 groups in 1 s and 100 in 0.5 s: at 100 and 200 groups per second all 200 would
        // have ended in 2/3 s, so the launch lost 1/3 s.
        let loss = imbalance_loss(&ran(&[100, 100], &[1.0, 0.5]));
        assert!((loss - 1.0 / 3.0).abs() < 1e-12, "{loss}");
        // Shared by speed, nothing is lost; a device that ran nothing is not counted.
        assert!(imbalance_loss(&ran(&[100, 200], &[0.5, 0.5])).abs() < 1e-12);
        assert!(imbalance_loss(&ran(&[0, 100], &[0.0, 0.5])).abs() < 1e-12);
    }
}
