use super::*;
use crate::balance::{Completion, Dynamic, Next, Static};

/// A device whose model is its speed: devices of different speeds are different models (the
/// back-up rule never lets a device copy an overdue package of a device of its own model).
fn device(speed: f64, overhead: f64, min_groups: u64) -> SimDevice {
    SimDevice {
        name: format!("{speed} groups/s"),
        kind: DeviceKind::Gpu,
        speed,
        overhead,
        min_groups,
        nominal_gflops: 1.0,
        jitter: 0.0,
        link: None,
    }
}

fn uniform(groups: u64) -> CostTable {
    CostTable::new(&CostProfile::Uniform, groups, 16)
}

fn run(devices: &[SimDevice], groups: u64, b: &mut dyn Balancer, loss: Option<Loss>) -> SimResult {
    simulate(
        devices,
        &uniform(groups),
        b,
        &SimOptions { seed: 1, loss, backups: false, waves: false, ..SimOptions::default() },
    )
    .unwrap()
}

/// Every work-group covered exactly once by the packages whose copy counted.
fn covered_once(r: &SimResult, groups: u64) -> bool {
    let mut seen = vec![0u32; groups as usize];
    for p in r.packages.iter().filter(|p| !p.aborted) {
        for g in p.package.offset..p.package.end() {
            seen[g as usize] += 1;
        }
    }
    seen.iter().all(|&c| c == 1)
}

#[test]
fn a_straggler_is_backed_up_and_its_late_copy_ignored() {
    // Two packages of 100 groups each (Dynamic: first come, first served), on a device at
    // 10 groups/s and one at 1000: the fast one takes the second package and ends it at
    // 0.1 s. The slow one is unmeasured, so its package is predicted to need as long again
    // as it has run: once it has run BACKUP_MARGIN times the copy's 0.1 s (at 0.15 s, to
    // the next 5 ms poll), the fast one backs it up, ending near 0.25 s instead of 10 s.
    let devices = [device(10.0, 0.0, 1), device(1000.0, 0.0, 1)];
    let options = |backups| SimOptions {
        seed: 1,
        loss: None,
        backups,
        waves: false,
        ..SimOptions::default()
    };
    let work = uniform(200);
    let with = simulate(&devices, &work, &mut Dynamic::packages(2), &options(true)).unwrap();
    assert!(with.makespan > 0.249 && with.makespan < 0.256, "{}", with.makespan);
    assert!(covered_once(&with, 200));
    let late = with.packages.iter().find(|p| p.device == 0).unwrap();
    assert!(late.aborted, "the slow copy lost: {:?}", with.packages);
    assert_eq!(with.device_packages, vec![0, 2]);
    let without = simulate(&devices, &work, &mut Dynamic::packages(2), &options(false)).unwrap();
    assert!((without.makespan - 10.0).abs() < 1e-9, "{}", without.makespan);
}

#[test]
fn a_backed_up_package_whose_device_is_lost_is_not_run_a_third_time() {
    // As above, the slow device lost at 0.2 s while the fast one runs its copy.
    let devices = [device(10.0, 0.0, 1), device(1000.0, 0.0, 1)];
    let loss = Some(Loss { device: 0, at: 0.2 });
    let options =
        SimOptions { seed: 1, loss, backups: true, waves: false, ..SimOptions::default() };
    let r = simulate(&devices, &uniform(200), &mut Dynamic::packages(2), &options).unwrap();
    assert!(r.packages.iter().all(|p| !p.rerun), "{:?}", r.packages);
    assert!(covered_once(&r, 200));
    assert!(r.makespan > 0.249 && r.makespan < 0.256, "{}", r.makespan);
}

#[test]
fn one_package_takes_overhead_plus_work_over_speed() {
    // 1000 groups at 100/s plus 0.5 s of overhead: 10.5 s, which is also the ideal.
    let r = run(&[device(100.0, 0.5, 1)], 1000, &mut Static::nominal(), None);
    assert_eq!(r.packages.len(), 1);
    assert!((r.makespan - 10.5).abs() < 1e-9, "{}", r.makespan);
    assert!((r.efficiency - 1.0).abs() < 1e-9 && r.balance == 1.0);
}

#[test]
fn packages_below_the_occupancy_bound_take_a_full_fill() {
    // Chunks of 100 groups on a device that fills with 400 at 100/s: 4 s each, 8 s in all.
    let r = run(&[device(100.0, 0.0, 400)], 200, &mut Dynamic::chunk(100), None);
    assert_eq!(r.packages.len(), 2);
    assert!((r.makespan - 8.0).abs() < 1e-9, "{}", r.makespan);
}

#[test]
fn a_lost_device_s_package_is_run_again_by_a_survivor() {
    // Two devices at 10/s, 50 groups each (5 s). Device 1 fails at 2 s: device 0 runs its
    // 50 groups again after its own, ending at 10 s.
    let devices = [device(10.0, 0.0, 1), device(10.0, 0.0, 1)];
    let r = run(&devices, 100, &mut Static::nominal(), Some(Loss { device: 1, at: 2.0 }));
    let aborted: Vec<_> = r.packages.iter().filter(|p| p.aborted).collect();
    let rerun: Vec<_> = r.packages.iter().filter(|p| p.rerun).collect();
    assert_eq!(aborted.len(), 1);
    assert_eq!((aborted[0].device, aborted[0].package), (1, Package { offset: 50, len: 50 }));
    assert_eq!((rerun[0].device, rerun[0].package, rerun[0].start), (0, aborted[0].package, 5.0));
    assert!((r.makespan - 10.0).abs() < 1e-9);
}

/// Device 1 is told to wait until device 0 has finished its first package; after a loss it
/// has work for a device it had told `Done`.
#[derive(Default)]
struct Scripted {
    first_done: bool,
    lost: bool,
    handed: u64,
}

impl Balancer for Scripted {
    fn name(&self) -> String {
        "scripted".into()
    }
    fn start(&mut self, _setup: &Setup) -> Result<()> {
        Ok(())
    }
    fn next(&mut self, device: usize, _now: f64) -> Next {
        let give = |s: &mut Self| {
            s.handed += 1;
            Next::Run(Package { offset: s.handed - 1, len: 1 })
        };
        match (device, self.handed) {
            (0, 0) => give(self),
            (1, 1) if self.first_done => give(self),
            (0, 2) if self.lost => give(self),
            (1, _) if !self.first_done => Next::Wait,
            _ => Next::Done,
        }
    }
    fn completed(&mut self, _done: &Completion) {
        self.first_done = true;
    }
    fn device_lost(&mut self, _device: usize) {
        self.lost = true;
    }
}

#[test]
fn waiting_devices_are_asked_again_and_done_ones_after_a_loss() {
    // Device 0 runs group 0 (1 s); device 1 waits, then runs group 1 from 1 s to 2 s.
    // Device 0 was told Done at 1 s; device 2 is lost at 1.5 s, so device 0 is asked again
    // and runs group 2.
    let devices = [device(1.0, 0.0, 1), device(1.0, 0.0, 1), device(1.0, 0.0, 1)];
    let work = uniform(3);
    let loss = Some(Loss { device: 2, at: 1.5 });
    let r = simulate(
        &devices,
        &work,
        &mut Scripted::default(),
        &SimOptions { seed: 1, loss, backups: false, waves: false, ..SimOptions::default() },
    )
    .unwrap();
    let starts: Vec<(usize, u64, f64)> =
        r.packages.iter().map(|p| (p.device, p.package.offset, p.start)).collect();
    assert_eq!(starts, vec![(0, 0, 0.0), (1, 1, 1.0), (0, 2, 1.5)]);
}

struct Stalls;

impl Balancer for Stalls {
    fn name(&self) -> String {
        "stalls".into()
    }
    fn start(&mut self, _setup: &Setup) -> Result<()> {
        Ok(())
    }
    fn next(&mut self, _device: usize, _now: f64) -> Next {
        Next::Wait
    }
    fn completed(&mut self, _done: &Completion) {}
    fn device_lost(&mut self, _device: usize) {}
}

#[test]
fn a_balancer_that_never_hands_out_work_is_an_error_not_a_hang() {
    let err = simulate(&[device(1.0, 0.0, 1)], &uniform(4), &mut Stalls, &SimOptions::default())
        .unwrap_err();
    assert!(err.to_string().contains("`stalls` stopped handing out work with 4 unit"), "{err}");
}

/// Says `Done` to every device with work left.
struct Quits;

impl Balancer for Quits {
    fn name(&self) -> String {
        "quits".into()
    }
    fn start(&mut self, _setup: &Setup) -> Result<()> {
        Ok(())
    }
    fn next(&mut self, _device: usize, _now: f64) -> Next {
        Next::Done
    }
    fn completed(&mut self, _done: &Completion) {}
    fn device_lost(&mut self, _device: usize) {}
}

#[test]
fn a_balancer_done_with_work_left_is_an_error_not_a_silent_partial_run() {
    // The driver before the dispatcher returned a result covering none of the range.
    let devices = [device(1.0, 0.0, 1), device(2.0, 0.0, 1)];
    let err = simulate(&devices, &uniform(8), &mut Quits, &SimOptions::default()).unwrap_err();
    assert!(err.to_string().contains("`quits` stopped handing out work with 8 unit"), "{err}");
}

/// Panics on its second hand-out.
struct Panics {
    handed: u64,
}

impl Balancer for Panics {
    fn name(&self) -> String {
        "panics".into()
    }
    fn start(&mut self, _setup: &Setup) -> Result<()> {
        Ok(())
    }
    fn next(&mut self, _device: usize, _now: f64) -> Next {
        self.handed += 1;
        assert!(self.handed < 2, "no second package");
        Next::Run(Package { offset: 0, len: 1 })
    }
    fn completed(&mut self, _done: &Completion) {}
    fn device_lost(&mut self, _device: usize) {}
}

#[test]
fn a_balancer_that_panics_is_an_error_naming_it() {
    let devices = [device(1.0, 0.0, 1), device(1.0, 0.0, 1)];
    let mut b = Panics { handed: 0 };
    let err = simulate(&devices, &uniform(4), &mut b, &SimOptions::default()).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("`panics` panicked in next(): no second package"), "{text}");
}

/// Hands work-group 0 out to every device.
struct Repeats;

impl Balancer for Repeats {
    fn name(&self) -> String {
        "repeats".into()
    }
    fn start(&mut self, _setup: &Setup) -> Result<()> {
        Ok(())
    }
    fn next(&mut self, _device: usize, _now: f64) -> Next {
        Next::Run(Package { offset: 0, len: 2 })
    }
    fn completed(&mut self, _done: &Completion) {}
    fn device_lost(&mut self, _device: usize) {}
}

#[test]
fn a_work_group_handed_out_twice_is_an_error_as_in_the_engine() {
    // The driver before the dispatcher ran both copies and merged both.
    let devices = [device(1.0, 0.0, 1), device(1.0, 0.0, 1)];
    let err = simulate(&devices, &uniform(4), &mut Repeats, &SimOptions::default()).unwrap_err();
    assert!(err.to_string().contains("`repeats` handed out work-group 0 twice"), "{err}");
}

/// Geomean efficiency of the guarded Sigmoid over `cases`, with and without whole waves.
fn whole_waves_geomeans(cases: &[scenario::Case], waves: bool) -> (f64, f64) {
    use crate::balance::{Sigmoid, SigmoidParams};
    let options = SimOptions { seed: 3, loss: None, backups: true, waves, ..SimOptions::default() };
    let (mut with_log, mut without_log) = (0.0, 0.0);
    for case in cases {
        let table = case.cost_table();
        let eff = |whole_waves| {
            let params = SigmoidParams { whole_waves, ..SigmoidParams::default() };
            let mut b = Sigmoid::new(params, true);
            simulate(&case.devices, &table, &mut b, &options).unwrap().efficiency
        };
        let (with, without) = (eff(true), eff(false));
        // With the waves modelled, no case may lose more than a little to whole fills.
        assert!(
            !waves || with >= without - 0.03,
            "{} {} {}: {with} < {without}",
            case.scenario,
            case.machine,
            case.kernel
        );
        with_log += with.ln();
        without_log += without.ln();
    }
    let n = cases.len() as f64;
    ((with_log / n).exp(), (without_log / n).exp())
}

/// Where a partial wave costs a whole one (the wave model), cutting packages to whole fills
/// pays: over every case of the scenarios, the guarded Sigmoid's geomean efficiency rises
/// (0.909 to 0.960 when written). Where it does not (the model without waves), it costs
/// nothing on the whole (0.9653 to 0.9656).
#[test]
fn whole_waves_pay_where_partial_waves_cost_a_whole_one() {
    let mut cases = Vec::new();
    for name in ["h200", "hydra", "batel", "desktop"] {
        cases.extend(scenario::scenario(name).unwrap());
    }
    let (with, without) = whole_waves_geomeans(&cases, true);
    assert!(with >= without + 0.03, "with waves: geomean {with} against {without}");
    let (with, without) = whole_waves_geomeans(&cases, false);
    assert!(with >= without - 0.002, "without waves: geomean {with} against {without}");
}

/// Hands out one package of 100 groups, then another of 300, and keeps what it hears.
#[derive(Default)]
struct Records {
    handed: u64,
    heard: Vec<Completion>,
}

impl Balancer for Records {
    fn name(&self) -> String {
        "records".into()
    }
    fn start(&mut self, _setup: &Setup) -> Result<()> {
        Ok(())
    }
    fn next(&mut self, _device: usize, _now: f64) -> Next {
        let len = match self.handed {
            0 => 100,
            100 => 300,
            _ => return Next::Done,
        };
        let package = Package { offset: self.handed, len };
        self.handed += len;
        Next::Run(package)
    }
    fn completed(&mut self, done: &Completion) {
        self.heard.push(*done);
    }
    fn device_lost(&mut self, _device: usize) {}
}

#[test]
fn a_package_pays_its_writes_and_read_back_and_the_kernel_time_leaves_them_out() {
    // 100 groups/s, 0.5 s of overhead; each group writes 8 bytes and reads back 2 over a link
    // of 10 bytes/s with 0.25 s per transfer. 100 groups: 0.5 + (0.25 + 80) + (0.25 + 20)
    // + 1 = 102 s, of which the kernel is 1 s; then 300 groups: 0.5 + 240.25 + 60.25 + 3.
    let dev = SimDevice {
        link: Some(Link { bytes_per_second: 10.0, latency: 0.25 }),
        ..device(100.0, 0.5, 1)
    };
    let work = uniform(400).with_traffic(Traffic { bytes_in: 8.0, bytes_out: 2.0 });
    let mut b = Records::default();
    let options = SimOptions { seed: 1, ..SimOptions::default() };
    let r = simulate(std::slice::from_ref(&dev), &work, &mut b, &options).unwrap();
    let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
    assert!(close(b.heard[0].host_end - b.heard[0].host_start, 102.0), "{:?}", b.heard[0]);
    assert!(close(b.heard[0].kernel_seconds, 1.0), "{:?}", b.heard[0]);
    assert!(close(b.heard[1].host_end - b.heard[1].host_start, 304.0), "{:?}", b.heard[1]);
    assert!(close(b.heard[1].kernel_seconds, 3.0), "{:?}", b.heard[1]);
    assert!(close(r.makespan, 406.0), "{}", r.makespan);
    // Alone, the whole range is one package: one write and one read-back.
    assert!(close(r.ideal_makespan, 0.5 + 320.25 + 80.25 + 4.0), "{}", r.ideal_makespan);
    // A device without a link pays nothing for the same traffic.
    assert_eq!(device(100.0, 0.5, 1).transfer_seconds(400, work.traffic()), 0.0);
}

#[test]
fn a_queued_package_pays_its_overhead_behind_the_one_before() {
    // 1000 groups in chunks of 10 at 100/s (0.1 s each) with 0.05 s of overhead per package:
    // one at a time, 100 × 0.15 = 15 s. Queued ahead while two chunks are left after it
    // (Dynamic's rule, on one device), once the device has completed a chunk (from the
    // second on), every overhead hides behind the kernel before but those of the first two
    // and the last two, asked for when idle: 4 × 0.15 + 96 × 0.1 s.
    let devices = [device(100.0, 0.05, 1)];
    let options = |pipeline| SimOptions { seed: 1, pipeline, ..SimOptions::default() };
    let work = uniform(1000);
    let off = simulate(&devices, &work, &mut Dynamic::chunk(10), &options(false)).unwrap();
    assert!((off.makespan - 15.0).abs() < 1e-9, "{}", off.makespan);
    let on = simulate(&devices, &work, &mut Dynamic::chunk(10), &options(true)).unwrap();
    assert!(covered_once(&on, 1000));
    let queued = on.packages.iter().filter(|p| p.queued).count();
    assert_eq!(queued, 96, "{:?}", on.packages);
    let want = 4.0 * 0.15 + 96.0 * 0.1;
    assert!((on.makespan - want).abs() < 1e-6, "{} against {want}", on.makespan);
    // What a learned balancer reads back: each package's compute time, overhead or not.
    let h = on.history(&devices, 1000);
    assert!((h.devices[0].speed - 100.0).abs() < 1e-6, "{:?}", h.devices[0]);
}

#[test]
fn a_device_lost_with_a_package_queued_has_both_run_again() {
    // Two devices at 100/s, chunks of 10, pipelined; device 1 is lost at 0.3 s with one chunk
    // running and one queued: both are re-run by device 0, and every group is covered once.
    let devices = [device(100.0, 0.01, 1), device(100.0, 0.01, 1)];
    let loss = Some(Loss { device: 1, at: 0.3 });
    let options = SimOptions { seed: 1, loss, pipeline: true, ..SimOptions::default() };
    let r = simulate(&devices, &uniform(400), &mut Dynamic::chunk(10), &options).unwrap();
    assert!(covered_once(&r, 400), "{:?}", r.packages);
    assert!(r.packages.iter().filter(|p| p.rerun).count() >= 2, "{:?}", r.packages);
    assert!(r.packages.iter().any(|p| p.queued));
}
