//! Submitted session launches: a repeated launch that replays a balanced split and finds its
//! inputs on its devices is queued there and `submit` returns before its kernels end. Results
//! are checked against plain CPU loops, after reads that must wait for the queued kernels.

mod common;

use common::{close, jacobi_cpu, jacobi_launch};

use hetdsl::{Error, Fault, Pattern, Report, Session};

const QUEUED: &str = "replay(queued)";

/// Submit `x = 2x + 1` over all of `x` (groups of 64), with `fault` injected if any.
fn affine(
    s: &Session,
    x: &mut hetdsl::Buffer<f32>,
    fault: Option<Fault>,
    watchdog: hetdsl::WatchdogConfig,
) -> hetdsl::Result<()> {
    let mut l = common::affine_launch(s, x, 2.0f32, 1.0f32).watchdog(watchdog);
    if let Some(f) = fault {
        l = l.inject(f);
    }
    l.submit()
}

/// Every report's packages cover the range exactly once.
fn tiles(r: &Report) {
    let mut ps: Vec<_> = r.trace.iter().filter(|t| t.merged).map(|t| t.package).collect();
    ps.sort_by_key(|p| p.offset);
    let mut next = 0;
    for p in ps {
        assert_eq!(p.offset, next, "{}", r.table());
        next = p.offset + p.len;
    }
    assert_eq!(next, r.total_groups, "{}", r.table());
}

fn jacobi_sweeps(s: &Session, sweeps: usize) -> (Vec<f32>, Vec<f32>) {
    let (w, h) = (64usize, 96usize);
    let start = common::jacobi_start(w, h);
    let mut a = s.buffer_from(&start).unwrap();
    let mut b = s.buffer::<f32>(w * h).unwrap();
    let mut want = start;
    for sweep in 0..sweeps {
        let (src, dst) = if sweep % 2 == 0 { (&a, &mut b) } else { (&b, &mut a) };
        jacobi_launch(s, src, dst, w, h).submit().unwrap();
        want = jacobi_cpu(&want, w, h);
    }
    let got = if sweeps.is_multiple_of(2) { a.to_vec() } else { b.to_vec() };
    (got.unwrap(), want)
}

#[test]
fn on_one_device_every_relaunch_is_queued_and_the_result_matches_the_cpu() {
    let p = common::program("session.cl");
    let s = p.session_on(&[0]).unwrap();
    let (got, want) = jacobi_sweeps(&s, 12);
    close(&got, &want, "jacobi x12");
    let reports = s.finish().unwrap();
    assert_eq!(reports.len(), 12, "one report per launch");
    assert_ne!(reports[0].balancer, QUEUED, "the first launch has nothing to replay");
    for r in &reports[1..] {
        // One device always ends balanced, and holds every input it reads: nothing moves.
        assert_eq!(r.balancer, QUEUED, "{}", r.table());
        assert_eq!(r.moved().total(), 0, "{}", r.table());
        tiles(r);
    }
    assert!(s.finish().unwrap().is_empty(), "reports are handed out once");
}

#[test]
fn on_two_devices_submitted_launches_match_the_cpu_whether_queued_or_not() {
    let p = common::program("session.cl");
    let s = p.session().unwrap();
    let n = 1 << 14;
    let xs: Vec<f32> = (0..n).map(|i| (i % 100) as f32).collect();
    let mut x = s.buffer_from(&xs).unwrap();
    let mut want = xs.clone();
    for step in 0..40 {
        common::affine_launch(&s, &mut x, 0.5f32, 1.0f32).submit().unwrap();
        for v in &mut want {
            *v = *v * 0.5 + 1.0;
        }
        if step == 20 {
            // A read in the middle waits for what is queued, and the loop goes on after it.
            close(&x.to_vec().unwrap(), &want, "affine x21");
        }
    }
    close(&x.to_vec().unwrap(), &want, "affine x40");
    let reports = s.finish().unwrap();
    assert_eq!(reports.len(), 40);
    reports.iter().for_each(tiles);
    let queued = reports.iter().filter(|r| r.balancer == QUEUED).count();
    println!("{queued} of 40 launches queued on two PoCL devices");
}

#[test]
fn halo_rows_owned_by_the_other_device_move_with_a_queued_launch_never_stale() {
    let p = common::program("session.cl");
    let s = p.session().unwrap();
    let (got, want) = jacobi_sweeps(&s, 10);
    close(&got, &want, "jacobi x10 on two devices");
    let mut queued = 0;
    // Which device computed each unit (4 rows of 64) in the previous sweep.
    let owners = |r: &Report| {
        let mut o = vec![usize::MAX; r.total_groups as usize];
        for t in r.trace.iter().filter(|t| t.merged) {
            o[t.package.offset as usize..t.package.end() as usize].fill(t.device);
        }
        o
    };
    let mut before: Option<Vec<usize>> = None;
    for r in s.finish().unwrap() {
        tiles(&r);
        let now = owners(&r);
        if r.balancer == QUEUED {
            queued += 1;
            // A queued launch moves only the halo rows across its blocks' boundaries, and the
            // rows of a unit another device computed last sweep (a sliver's share taken over),
            // between the devices, never anything from the host.
            let boundaries = r.trace.len() as u64 - 1;
            let taken = match &before {
                Some(b) => b.iter().zip(&now).filter(|(a, b)| a != b).count() as u64,
                None => 0,
            };
            let m = r.moved();
            assert_eq!(m.host_to_device, 0, "{}", r.table());
            let most = (boundaries * 2 + taken * 4) * 64 * 4;
            assert!(m.device_to_device <= most, "{m:?}, {taken} unit(s) taken over\n{}", r.table());
        }
        before = Some(now);
    }
    println!("{queued} of 10 jacobi sweeps queued on two PoCL devices");
}

#[test]
fn a_device_failing_under_a_queued_launch_loses_what_only_it_held_never_stale_data() {
    let p = common::program("session.cl");
    let s = p.session_on(&[0]).unwrap();
    let n = 4096;
    let xs: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let mut x = s.buffer_from(&xs).unwrap();
    // The first launch leaves the only fresh copy of `x` on the device; the second is queued
    // there, and the device fails to take it.
    let usual = hetdsl::WatchdogConfig::default();
    affine(&s, &mut x, None, usual).unwrap();
    let err = affine(&s, &mut x, Some(Fault::Fail { device: 0, package: 0 }), usual).unwrap_err();
    let Error::Lost { buffer, ranges, .. } = &err else { panic!("not Lost: {err}") };
    assert_eq!(*buffer, x.index());
    assert_eq!(ranges.len(), 1, "{err}");
    assert_eq!(ranges[0], 0..n as u64, "{err}");
    assert!(matches!(x.to_vec(), Err(Error::Lost { .. })), "a read never returns stale data");
    assert_eq!(s.failed_devices().len(), 1);
    assert_eq!(s.finish().unwrap().len(), 2, "both launches are reported");
}

#[test]
fn a_saved_history_splits_the_first_launch_of_a_new_session_and_other_devices_refuse_it() {
    let p = common::program("session.cl");
    let path = std::env::temp_dir().join(format!("hetdsl-history-{}.json", std::process::id()));
    let first_balancer = |s: &Session| {
        let n = 4096;
        let x = s.buffer_from(&vec![1.0f32; n]).unwrap();
        let y = s.buffer_from(&vec![2.0f32; n]).unwrap();
        let mut out = s.buffer::<f32>(n).unwrap();
        let r = s
            .launch("saxpy")
            .global(&[n])
            .local(&[64])
            .input(&x, Pattern::ONE_TO_ONE)
            .input(&y, Pattern::ONE_TO_ONE)
            .output(&mut out, Pattern::ONE_TO_ONE)
            .scalar(3.0f32)
            .run()
            .unwrap();
        close(&out.to_vec().unwrap(), &vec![5.0; n], "saxpy");
        r.balancer
    };
    let learned = p.session_on(&[0]).unwrap();
    first_balancer(&learned);
    learned.save_history(&path).unwrap();
    let fresh = p.session_on(&[0]).unwrap();
    assert_ne!(first_balancer(&fresh), "replay", "nothing learned yet");
    let resumed = p.session_on(&[0]).unwrap();
    assert_eq!(resumed.load_history(&path).unwrap(), 1);
    assert_eq!(first_balancer(&resumed), "replay", "split as the saved launch ended");
    let other = p.session().unwrap();
    let err = other.load_history(&path).unwrap_err();
    assert!(matches!(err, Error::BadConfig(_)) && err.to_string().contains("learned on devices"));
    std::fs::remove_file(&path).unwrap();
    assert!(matches!(other.load_history(&path), Err(Error::Io { .. })));
    // A file that never ends is refused past a bound, not read until memory runs out.
    let err = other.load_history("/dev/zero").unwrap_err();
    assert!(matches!(&err, Error::Io { reason, .. } if reason.contains("not a history")), "{err}");
}

/// A split known to be balanced (a saved history whose balance is set to 1 and whose devices ran
/// at one speed, loaded before each sweep) is replayed and queued from the first launch of a
/// new session: its inputs go from the host, then each sweep moves only halo rows between the
/// devices (read from the device holding them once the package that wrote them has ended).
#[test]
fn a_replayed_split_queues_its_moves_from_the_host_and_between_devices() {
    let p = common::program("session.cl");
    // 512 units of 4 groups: each half holds 16 fills of a CPU of up to 64 cores, so its
    // boundary units are split off and run first.
    let (w, h) = (64usize, 2048usize);
    let path = std::env::temp_dir().join(format!("hetdsl-halves-{}.json", std::process::id()));
    let start = common::jacobi_start(w, h);
    {
        let s = p.session().unwrap();
        let a = s.buffer_from(&start).unwrap();
        let mut b = s.buffer::<f32>(w * h).unwrap();
        let halves = hetdsl::balance::Static::with_weights(vec![1.0, 1.0]);
        jacobi_launch(&s, &a, &mut b, w, h).balancer(Box::new(halves)).run().unwrap();
        s.save_history(&path).unwrap();
    }
    let mut saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    for launch in saved["launches"].as_array_mut().unwrap() {
        launch[1]["balance"] = serde_json::json!(1.0);
        // Balanced by the devices' kernel speeds too: a microsecond per group on each.
        for t in launch[1]["trace"].as_array_mut().unwrap() {
            let groups = t["package"]["len"].as_f64().unwrap();
            t["kernel_seconds"] = serde_json::json!(groups * 1e-6);
        }
    }
    std::fs::write(&path, saved.to_string()).unwrap();

    let s = p.session().unwrap();
    let mut a = s.buffer_from(&start).unwrap();
    let mut b = s.buffer::<f32>(w * h).unwrap();
    let mut want = start.clone();
    for k in 0..6 {
        // Before each sweep, so that what the last queued sweep measured (microseconds of
        // jitter on these CPUs) cannot talk the session out of the balanced split.
        s.load_history(&path).unwrap();
        let (src, dst) = if k % 2 == 0 { (&a, &mut b) } else { (&b, &mut a) };
        jacobi_launch(&s, src, dst, w, h).submit().unwrap();
        want = jacobi_cpu(&want, w, h);
    }
    std::fs::remove_file(&path).unwrap();
    close(&a.to_vec().unwrap(), &want, "jacobi x6, queued");
    let reports = s.finish().unwrap();
    assert_eq!(reports.len(), 6);
    let grid = (w * h * 4) as u64;
    for (k, r) in reports.iter().enumerate() {
        assert_eq!(r.balancer, QUEUED, "sweep {k}: {}", r.table());
        tiles(r);
        let m = r.moved();
        if k == 0 {
            // Each half and its halo row came from the host; nothing between the devices.
            assert_eq!((m.host_to_device, m.device_to_device), (grid + 2 * 64 * 4, 0), "{m:?}");
        } else if k == 1 {
            // `b` was computed on the devices: one halo row each way.
            assert_eq!((m.host_to_device, m.device_to_device), (0, 2 * 64 * 4), "{m:?}");
        } else {
            // From then on each device also holds its own half of the other grid: one halo row
            // each way, every sweep.
            assert_eq!((m.host_to_device, m.device_to_device), (0, 2 * 64 * 4), "{m:?}");
            // The grid written here was read across the boundary at the last move: each
            // device computes the units holding that row first, then the rest of its half.
            edge_first(r, k);
        }
    }
}

/// In a queued sweep of two halves, each device ran two packages: first the few units at the
/// boundary, then the rest of its half.
fn edge_first(r: &Report, k: usize) {
    let half = r.total_groups / 2;
    for d in 0..2 {
        let ps: Vec<_> = r.trace.iter().filter(|t| t.device == d).map(|t| t.package).collect();
        assert_eq!(ps.len(), 2, "sweep {k}, device {d}: {}", r.table());
        let edge = ps[0];
        assert!(edge.len <= half / 8, "sweep {k}: {}", r.table());
        let touches_boundary =
            if d == 0 { edge.offset + edge.len == half } else { edge.offset == half };
        assert!(touches_boundary, "sweep {k}, device {d}: {}", r.table());
    }
}

/// A device that never finishes a queued launch (an injected hang: the host never sees its
/// kernels end) is judged past the watchdog's bound, not waited for: the read that waits for
/// it returns `Lost` for what only that device held.
#[test]
fn a_device_hanging_under_a_queued_launch_is_dropped_within_the_watchdog_bound() {
    let p = common::program("session.cl");
    let s = p.session_on(&[0]).unwrap();
    let n = 4096;
    let xs: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let mut x = s.buffer_from(&xs).unwrap();
    let quick = hetdsl::WatchdogConfig { factor: 2.0, min: std::time::Duration::from_millis(300) };
    affine(&s, &mut x, None, quick).unwrap();
    // Queued, on a device that never runs it.
    affine(&s, &mut x, Some(Fault::Hang { device: 0, package: 0 }), quick).unwrap();
    let t = std::time::Instant::now();
    let err = x.to_vec().unwrap_err();
    assert!(t.elapsed() < std::time::Duration::from_secs(5), "waited {:?}", t.elapsed());
    let Error::Lost { buffer, .. } = &err else { panic!("not Lost: {err}") };
    assert_eq!(*buffer, x.index());
    let failed = s.failed_devices();
    assert_eq!(failed.len(), 1);
    assert!(failed[0].1.contains("did not end"), "{failed:?}");
}

/// The call that waits for a failed queued launch returns that launch's error and does nothing
/// of its own, as `submit` documents: a write to another buffer is not made (its old values
/// stay, not a half-made write), and made when the caller makes it again.
#[test]
fn the_call_that_meets_a_queued_launch_s_error_does_nothing_of_its_own() {
    let p = common::program("session.cl");
    let s = p.session_on(&[0]).unwrap();
    let n = 4096;
    let xs: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let mut x = s.buffer_from(&xs).unwrap();
    let old: Vec<f32> = (0..n).map(|i| -(i as f32)).collect();
    let mut y = s.buffer_from(&old).unwrap();
    let quick = hetdsl::WatchdogConfig { factor: 2.0, min: std::time::Duration::from_millis(300) };
    affine(&s, &mut x, None, quick).unwrap();
    affine(&s, &mut x, Some(Fault::Hang { device: 0, package: 0 }), quick).unwrap();
    let new: Vec<f32> = (0..n).map(|i| 0.5 * i as f32).collect();
    let first = y.write(0, &new);
    assert!(first.is_err(), "the queued launch's error should come from the write");
    assert_eq!(y.to_vec().unwrap(), old, "the failed call made its write after all");
    y.write(0, &new).unwrap();
    assert_eq!(y.to_vec().unwrap(), new);
}

/// A replayed split whose kernels end apart keeps being replayed while each launch's imbalance
/// is small, but the kernel time its replays lose adds up: once it outweighs one launch and the
/// bytes a new cut would move, the split is cut again from what was measured. Here the saved
/// split (two halves, balanced by its finish times, device 1 5 % slower per group) is loaded
/// before each launch, and the kernel costs 33 times as much at the range's end as at its
/// start: the halves' kernels end far apart, the re-cut (from the saved times, a few KiB to
/// move) gives device 0 a little more, and the results still match the CPU.
#[test]
fn a_replayed_split_is_cut_again_once_its_losses_outweigh_the_move() {
    let p = common::program("session.cl");
    let n = 1usize << 18;
    let path = std::env::temp_dir().join(format!("hetdsl-owed-{}.json", std::process::id()));
    let start: Vec<f32> = (0..n).map(|i| (i % 50) as f32).collect();
    {
        let s = p.session().unwrap();
        let mut x = s.buffer_from(&start).unwrap();
        let halves = hetdsl::balance::Static::with_weights(vec![1.0, 1.0]);
        ramp(&s, &mut x, n).balancer(Box::new(halves)).run().unwrap();
        s.save_history(&path).unwrap();
    }
    let mut saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    for launch in saved["launches"].as_array_mut().unwrap() {
        let report = &mut launch[1];
        report["balance"] = serde_json::json!(1.0);
        // Leaving the queue for one launch costs nothing: the move's bytes alone are weighed.
        report["roi_seconds"] = serde_json::json!(0.0);
        for t in report["trace"].as_array_mut().unwrap() {
            let groups = t["package"]["len"].as_f64().unwrap();
            let per_group = if t["device"] == 0 { 1e-6 } else { 1.05e-6 };
            t["kernel_seconds"] = serde_json::json!(groups * per_group);
        }
    }
    std::fs::write(&path, saved.to_string()).unwrap();

    let s = p.session().unwrap();
    let mut x = s.buffer_from(&start).unwrap();
    let mut want = start.clone();
    for _ in 0..2 {
        // The saved split each time, so that only what the replays lost can move it.
        s.load_history(&path).unwrap();
        ramp(&s, &mut x, n).submit().unwrap();
        for (i, v) in want.iter_mut().enumerate() {
            for _ in 0..1 + 32 * i / n {
                *v = *v * 0.5 + 1.0;
            }
        }
        // Waits for the launch, whose loss is then counted.
        close(&x.to_vec().unwrap(), &want, "ramp");
    }
    std::fs::remove_file(&path).unwrap();
    let reports = s.finish().unwrap();
    let names: Vec<&str> = reports.iter().map(|r| r.balancer.as_str()).collect();
    assert_eq!(names, [QUEUED, "relaunch"], "{}", reports[1].table());
    // The new cut gives device 0's block more than half; on a loaded machine the other device
    // may run that block too (a planned split lets an idle device take a block not started).
    let first = reports[1].trace.iter().find(|t| t.package.offset == 0).map(|t| t.package.len);
    assert!(first.is_some_and(|len| len > reports[1].total_groups / 2), "{}", reports[1].table());
}

/// `ramp` over all of `x` (groups of 64): `x = x / 2 + 1`, 1 + 32i/n times at element i.
fn ramp<'a>(s: &'a Session, x: &'a mut hetdsl::Buffer<f32>, n: usize) -> hetdsl::SessionLaunch<'a> {
    let launch = s.launch("ramp").global(&[n]).local(&[64]).inout(x, Pattern::ONE_TO_ONE);
    launch.scalar(0.5f32).scalar(1.0f32).scalar(n as u32)
}
