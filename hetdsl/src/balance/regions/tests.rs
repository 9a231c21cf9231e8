use super::*;
use crate::balance::DeviceKind;
use crate::balance::DeviceProfile;

fn setup(total: u64, nominal: &[f64]) -> Setup {
    Setup {
        total_groups: total,
        devices: nominal
            .iter()
            .map(|&g| DeviceProfile { kind: DeviceKind::Gpu, nominal_gflops: g, min_groups: 4 })
            .collect(),
    }
}

fn run(b: &mut Regions, device: usize) -> Package {
    match b.next(device, 0.0) {
        Next::Run(p) => p,
        other => panic!("expected a package, got {other:?}"),
    }
}

#[test]
fn identical_devices_work_through_equal_regions_front_first() {
    let mut b = Regions::default();
    b.start(&setup(1200, &[10.0, 10.0])).unwrap();
    // Probes of the minimum first, then a third of the region.
    for (device, offset) in [(0, 0), (1, 600)] {
        let p = run(&mut b, device);
        assert_eq!(p, Package { offset, len: 4 });
        b.completed(&Completion {
            device,
            package: p,
            kernel_seconds: 1e-3,
            host_start: 0.0,
            host_end: 0.0,
        });
    }
    assert_eq!(run(&mut b, 0), Package { offset: 4, len: 199 });
    assert_eq!(run(&mut b, 1), Package { offset: 604, len: 199 });
}

#[test]
fn a_device_with_an_empty_region_takes_its_fair_share_from_the_back() {
    let mut b = Regions::default();
    b.start(&setup(1000, &[0.0, 1.0, 1.0])).unwrap();
    // Device 0 has no nominal figure: it gets the mean, a third of the range (0..334).
    let mut offset = 0;
    while offset < 334 {
        let p = run(&mut b, 0);
        assert_eq!(p.offset, offset);
        offset = p.end();
        b.completed(&Completion {
            device: 0,
            package: p,
            kernel_seconds: p.len as f64 * 1e-3,
            host_start: 0.0,
            host_end: 0.0,
        });
    }
    let p1 = run(&mut b, 1);
    b.completed(&Completion {
        device: 1,
        package: p1,
        kernel_seconds: p1.len as f64 * 3e-3,
        host_start: 0.0,
        host_end: 0.0,
    });
    // Device 2 has begun its probe but measured nothing, so its region ends last: device
    // 0, three times as fast as device 1, takes from the back of device 2's region one
    // minimum package (device 2's speed is unknown).
    assert_eq!(run(&mut b, 2), Package { offset: 667, len: 4 });
    assert_eq!(run(&mut b, 0), Package { offset: 996, len: 4 });
    // Device 2 lost: the thief works through its region, a third at a time.
    b.device_lost(2);
    let p = run(&mut b, 0);
    assert_eq!(p, Package { offset: 887, len: 109 });
    assert_eq!(b.next(2, 0.0), Next::Done);
}

#[test]
fn a_device_as_fast_that_has_not_begun_keeps_its_region_a_slower_one_does_not() {
    let mut b = Regions::default();
    b.start(&setup(100, &[1.0, 1.0, 0.5])).unwrap();
    // Regions 0..40, 40..80, 80..100. Device 0 works through its own.
    work_through_own_region(&mut b, 0);
    // Device 1, as fast, has not begun (its thread a moment late): its region stays its
    // own. Device 2, slower and not begun either, is robbed of one minimum package.
    assert_eq!(run(&mut b, 0), Package { offset: 96, len: 4 });
    assert_eq!(b.left[1], 40..80);
    // Once device 1 has begun, its region is open to the others too: its speed unknown,
    // it ends last, and device 0 takes one minimum package from its back.
    assert_eq!(run(&mut b, 1), Package { offset: 40, len: 4 });
    assert_eq!(run(&mut b, 0), Package { offset: 76, len: 4 });
}

#[test]
fn a_device_as_fast_that_has_not_begun_keeps_even_the_region_before_the_thief() {
    // A CPU's region, then two GPUs': the second GPU, done with its own, takes from the
    // CPU's region (slower) and not from the first GPU's, which adjoins its block but has
    // not begun (NBody's integration over two H100s, the first GPU a moment late).
    let mut b = Regions::default();
    b.start(&setup(1000, &[0.01, 1.0, 1.0])).unwrap();
    work_through_own_region(&mut b, 2);
    let first_gpu = b.left[1].clone();
    let p = run(&mut b, 2);
    assert!(p.end() <= first_gpu.start, "{p:?} taken from the first GPU's region");
    assert_eq!(b.left[1], first_gpu);
}

#[test]
fn everything_is_handed_out_once_then_done() {
    let mut b = Regions::default();
    b.start(&setup(97, &[5.0, 1.0, 20.0])).unwrap();
    let mut got = Vec::new();
    let mut device = 0;
    loop {
        match b.next(device % 3, 0.0) {
            Next::Run(p) => got.push(p),
            Next::Done if got.iter().map(|p| p.len).sum::<u64>() == 97 => break,
            other => panic!("{other:?} with work left"),
        }
        device += 1;
    }
    got.sort_by_key(|p| p.offset);
    let mut next = 0;
    for p in got {
        assert_eq!(p.offset, next);
        next = p.end();
    }
    assert_eq!(next, 97);
}

#[test]
fn two_gpus_and_an_overstated_cpu_end_together_in_few_blocks() {
    use crate::sim::{simulate, CostProfile, CostTable, SimDevice, SimOptions};
    let device = |name: &str, kind, speed, nominal_gflops, min_groups| SimDevice {
        name: name.into(),
        kind,
        speed,
        overhead: 1e-4,
        min_groups,
        nominal_gflops,
        jitter: 0.05,
        link: None,
    };
    // The CPU's nominal share is 3 %, its real one 0.5 %: the GPUs take the rest of its
    // region from the back.
    let devices = vec![
        device("cpu", DeviceKind::Cpu, 1e4, 4000.0, 32),
        device("gpu", DeviceKind::Gpu, 1e6, 67000.0, 264),
        device("gpu", DeviceKind::Gpu, 1e6, 67000.0, 264),
    ];
    let work = CostTable::new(&CostProfile::Uniform, 200_000, 32);
    let mut b = Regions::default();
    let options = SimOptions { seed: 7, ..SimOptions::default() };
    let r = simulate(&devices, &work, &mut b, &options).unwrap();
    assert!(r.efficiency > 0.93, "efficiency {}", r.efficiency);
    let h = r.history(&devices, 200_000);
    // The CPU, a hundredth of a GPU, sits out after its probe; the GPUs share the rest of
    // its region and end together, each with one block.
    assert_eq!(h.devices[0].owned, vec![0..32]);
    let held: Vec<u64> =
        h.devices.iter().map(|d| d.owned.iter().map(|r| r.end - r.start).sum()).collect();
    for (d, dh) in h.devices.iter().enumerate().skip(1) {
        assert_eq!(dh.owned.len(), 1, "device {d} holds {:?}", dh.owned);
    }
    assert!(held[1].abs_diff(held[2]) < 2_000, "GPUs hold {held:?}");
}

/// Device `device` finished `p` at `groups_per_second` of kernel time.
/// `device` takes and completes packages (1000 groups a second) until its region is empty.
fn work_through_own_region(b: &mut Regions, device: usize) {
    while let Next::Run(p) = b.next(device, 0.0) {
        finish(b, device, p, 1e3);
        if b.left[device].is_empty() {
            break;
        }
    }
}

fn finish(b: &mut Regions, device: usize, p: Package, groups_per_second: f64) {
    b.completed(&Completion {
        device,
        package: p,
        kernel_seconds: p.len as f64 / groups_per_second,
        host_start: 0.0,
        host_end: 0.0,
    });
}

#[test]
fn a_slow_device_waits_for_the_faster_probes_then_sits_out() {
    let mut b = Regions::default();
    // A CPU nominally a tenth of each GPU: its region is 0..477.
    b.start(&setup(10_000, &[1.0, 10.0, 10.0])).unwrap();
    let cpu = run(&mut b, 0);
    let (g1, g2) = (run(&mut b, 1), run(&mut b, 2));
    finish(&mut b, 0, cpu, 1e3);
    // The CPU is measured first: a second package now would be sized by its speed alone.
    assert_eq!(b.next(0, 0.0), Next::Wait);
    finish(&mut b, 1, g1, 1e6);
    assert_eq!(b.next(0, 0.0), Next::Wait, "GPU 2's probe is still running");
    finish(&mut b, 2, g2, 1e6);
    let g2_own = run(&mut b, 2);
    // 1e3 of 2.001e6 groups/s is under the resident share: the CPU takes nothing more.
    assert_eq!(b.next(0, 0.0), Next::Done);
    // GPU 1 takes what is left of the CPU's region (its back adjoins GPU 1's block); GPU 2,
    // as fast, half of that at the back of GPU 1's region (which adjoins GPU 2's block).
    let cpu_left = g1.offset - cpu.end();
    let from_cpu = run(&mut b, 1);
    assert_eq!(from_cpu, Package { offset: cpu.end(), len: cpu_left });
    finish(&mut b, 1, from_cpu, 1e6);
    finish(&mut b, 2, g2_own, 1e6);
    let passed = run(&mut b, 2);
    assert_eq!(passed, Package { offset: g2.offset - cpu_left / 2, len: cpu_left / 2 });
    finish(&mut b, 2, passed, 1e6);
    let mut got = vec![(0, cpu), (1, g1), (2, g2), (2, g2_own), (1, from_cpu), (2, passed)];
    for _ in 0..1000 {
        let mut any = false;
        for d in [1, 2] {
            if let Next::Run(p) = b.next(d, 0.0) {
                finish(&mut b, d, p, 1e6);
                got.push((d, p));
                any = true;
            }
        }
        if !any {
            break;
        }
    }
    assert_eq!(b.next(0, 0.0), Next::Done, "still out");
    got.sort_by_key(|(_, p)| p.offset);
    let mut next = 0;
    for (_, p) in &got {
        assert_eq!(p.offset, next, "{got:?}");
        next = p.end();
    }
    assert_eq!(next, 10_000);
    // The CPU holds its probe alone; GPU 1 took the rest of the CPU's region from its back,
    // so its work is one block from the probe's end.
    let held = |d: usize| got.iter().filter(move |(o, _)| *o == d).map(|(_, p)| *p);
    assert_eq!(held(0).collect::<Vec<_>>(), vec![cpu]);
    let gpu1: Vec<Package> = held(1).collect();
    assert_eq!(gpu1.first().map(|p| p.offset), Some(cpu.end()));
    assert!(gpu1.windows(2).all(|w| w[0].end() == w[1].offset), "{gpu1:?}");
}

#[test]
fn a_slow_device_worth_a_share_goes_on_once_the_faster_ones_are_measured() {
    let mut b = Regions::default();
    b.start(&setup(10_000, &[1.0, 10.0])).unwrap();
    let (cpu, gpu) = (run(&mut b, 0), run(&mut b, 1));
    finish(&mut b, 0, cpu, 1e5);
    assert_eq!(b.next(0, 0.0), Next::Wait);
    finish(&mut b, 1, gpu, 1e6);
    // A CPU at 9 % of the total keeps its region and takes more than a probe of it.
    match b.next(0, 0.0) {
        Next::Run(p) => assert!(p.offset == cpu.end() && p.len > 4, "{p:?}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_slow_device_does_not_wait_for_a_faster_one_that_has_not_started() {
    let mut b = Regions::default();
    b.start(&setup(10_000, &[1.0, 10.0])).unwrap();
    let cpu = run(&mut b, 0);
    finish(&mut b, 0, cpu, 1e3);
    // The GPU has not asked yet (its thread is still starting): the CPU goes on in probes,
    // which cannot hold the run's end long.
    assert_eq!(b.next(0, 0.0), Next::Run(Package { offset: 4, len: 4 }));
}

#[test]
fn a_probe_another_device_backed_up_holds_no_one_up() {
    let mut b = Regions::default();
    b.start(&setup(10_000, &[10.0, 1.0])).unwrap();
    let (fast, slow) = (run(&mut b, 0), run(&mut b, 1));
    finish(&mut b, 1, slow, 1e3);
    assert_eq!(b.next(1, 0.0), Next::Wait, "device 0's probe runs");
    // Device 0 stalls; device 1 runs a copy of its probe and finishes first.
    finish(&mut b, 1, fast, 1e3);
    assert!(matches!(b.next(1, 0.0), Next::Run(_)));
}

#[test]
fn a_slow_device_sits_out_only_while_another_runs() {
    let mut b = Regions::default();
    b.start(&setup(10_000, &[1.0, 10.0])).unwrap();
    let (cpu, gpu) = (run(&mut b, 0), run(&mut b, 1));
    finish(&mut b, 0, cpu, 1e3);
    finish(&mut b, 1, gpu, 1e6);
    // Nothing runs: sitting out now could leave its region to a GPU that already answered
    // and will not be asked again until a completion. It takes a package instead.
    assert!(matches!(b.next(0, 0.0), Next::Run(_)));
}

#[test]
fn a_device_sitting_out_comes_back_when_it_is_the_last_one() {
    let mut b = Regions::default();
    b.start(&setup(10_000, &[1.0, 10.0])).unwrap();
    let (cpu, gpu) = (run(&mut b, 0), run(&mut b, 1));
    finish(&mut b, 0, cpu, 1e3);
    finish(&mut b, 1, gpu, 1e6);
    // With nothing else running it would not sit out (see the next test): the GPU runs.
    let _ = run(&mut b, 1);
    assert_eq!(b.next(0, 0.0), Next::Done);
    b.device_lost(1);
    // Everything left is the CPU's now, its own region first.
    assert_eq!(b.next(0, 0.0), Next::Run(Package { offset: 4, len: 302 }));
}

/// Two identical devices, both measured at 1000 groups a second: device 0 has worked through
/// its region, device 1 has the last `left` groups of its own, whose back does not adjoin
/// device 0's block.
fn through_region_0(total: u64, left: u64) -> Regions {
    let mut b = Regions::default();
    b.start(&setup(total, &[1.0, 1.0])).unwrap();
    for d in [0, 1] {
        let p = run(&mut b, d);
        finish(&mut b, d, p, 1e3);
    }
    b.left[0] = total / 2..total / 2;
    b.left[1] = total - left..total;
    b
}

#[test]
fn a_thief_leaves_a_far_sliver_to_its_running_owner() {
    let total = 262_144;
    let sliver = (TINY_SHARE * total as f64) as u64 - 1;
    for (left, stolen) in
        [(sliver, None), (4000, Some(Package { offset: total - 1000, len: 1000 }))]
    {
        // Device 1 runs a package, `left` groups of its region after it. Between two of its
        // packages too, the sliver stays device 1's.
        let mut b = through_region_0(total, left);
        let running = Package { offset: total - left - 1000, len: 1000 };
        b.running[1] = Some(running);
        match stolen {
            None => {
                assert_eq!(b.next(0, 0.0), Next::Wait, "a sliver of {left} is left to device 1");
                finish(&mut b, 1, running, 1e3);
                assert_eq!(b.next(0, 0.0), Next::Wait, "between device 1's packages");
                let p = run(&mut b, 1);
                assert_eq!(p.offset, total - left, "device 1 goes on from the front");
                finish(&mut b, 1, p, 1e3);
                assert_eq!(b.next(0, 0.0), Next::Wait, "and keeps what is left");
                work_through_own_region(&mut b, 1);
                assert_eq!(b.next(0, 0.0), Next::Done);
            }
            // More than a sliver: half the thief's fair share, from the back.
            Some(p) => assert_eq!(run(&mut b, 0), p),
        }
    }
}

#[test]
fn a_thief_leaves_a_far_region_its_owner_ends_soon() {
    let total = 262_144;
    // Device 1 has 4000 groups left, 4 s at its 1000 groups a second, over the sliver size:
    // not stolen 100 s into the launch (under 5 % of it), but stolen 50 s in, half the thief's
    // fair share from the back.
    let mut b = through_region_0(total, 4000);
    assert_eq!(b.next(0, 100.0), Next::Wait);
    assert_eq!(b.next(0, 50.0), Next::Run(Package { offset: total - 1000, len: 1000 }));
}
