use super::*;
use crate::balance::DeviceKind;

fn setup(total_groups: u64, devices: &[(f64, u64)]) -> Setup {
    Setup {
        total_groups,
        devices: devices
            .iter()
            .map(|&(nominal_gflops, min_groups)| DeviceProfile {
                kind: DeviceKind::Gpu,
                nominal_gflops,
                min_groups,
            })
            .collect(),
    }
}

fn run(b: &mut Sigmoid, device: usize, now: f64) -> Package {
    match b.next(device, now) {
        Next::Run(p) => p,
        other => panic!("device {device} at {now}: expected a package, got {other:?}"),
    }
}

/// Report `p` finished by `device` at `speed` work-groups per second, ending at `now`.
fn finish(b: &mut Sigmoid, device: usize, p: Package, speed: f64, now: f64) {
    let secs = p.len as f64 / speed;
    b.completed(&Completion {
        device,
        package: p,
        kernel_seconds: secs,
        host_start: now - secs,
        host_end: now,
    });
}

#[test]
fn first_packages_and_line_16_match_hand_computation() {
    // G = 1000, N = 2, nominal 3:1, k_r = 2.
    // Line 5, device 0: ⌊1000/4 · tanh(6) · 3/4⌋ = ⌊187.498⌋ = 187; x = 813.
    // Line 5, device 1: ⌊1000/4 · tanh(6·0.813) · 1/4⌋ = 62; x = 751.
    let mut b = Sigmoid::faithful();
    b.start(&setup(1000, &[(3000.0, 10), (1000.0, 2)])).unwrap();
    assert_eq!(run(&mut b, 0, 0.0), Package { offset: 0, len: 187 });
    assert_eq!(run(&mut b, 1, 0.0), Package { offset: 187, len: 62 });
    // Device 0 ran 187 groups in 1 s: S_0 = 187, S_1 (unmeasured) = 1000 · 187/3000.
    // Line 16 at t = 1: max(250 · tanh(6·0.751) · 0.75, 0.05·1·187, 10) = max(187.45, 9.35, 10).
    finish(&mut b, 0, Package { offset: 0, len: 187 }, 187.0, 1.0);
    assert_eq!(run(&mut b, 0, 1.0), Package { offset: 249, len: 187 });
}

#[test]
fn imbalance_bound_p_t_s() {
    // G = 100 000, two equal devices: first packages ⌊25 000 · tanh(6) / 2⌋ = 12 499 and
    // ⌊25 000 · tanh(6 · 0.87501) / 2⌋ = 12 499; x = 75 002.
    let mut b = Sigmoid::faithful();
    b.start(&setup(100_000, &[(1.0, 1), (1.0, 1)])).unwrap();
    let first = run(&mut b, 0, 0.0);
    assert_eq!((first.len, run(&mut b, 1, 0.0).len), (12_499, 12_499));
    // Device 0 needed 100 s: S = 124.99/s. At t = 4000 s the curve gives 12 496.9 but
    // p·t·S = 0.05 · 4000 · 124.99 = 24 998 wins.
    finish(&mut b, 0, first, 124.99, 4000.0);
    assert_eq!(run(&mut b, 0, 4000.0).len, 24_998);
}

#[test]
fn occupancy_bound_applies_from_the_second_package() {
    // G = 1000, two equal devices, device 0 fills only with 300 groups. Line 5 ignores the
    // bound: ⌊250 · tanh(6) / 2⌋ = 124. Line 16: max(≤ 125, 0.05·1·124, 300) = 300.
    let mut b = Sigmoid::faithful();
    b.start(&setup(1000, &[(1.0, 300), (1.0, 1)])).unwrap();
    let first = run(&mut b, 0, 0.0);
    assert_eq!(first.len, 124);
    run(&mut b, 1, 0.0);
    finish(&mut b, 0, first, 124.0, 1.0);
    assert_eq!(run(&mut b, 0, 1.0).len, 300);
}

/// Device 0 reports speeds 100, 100, `third`; returns the three sizes it gets after each
/// report, then three more after reports of a steady 120/s.
fn sizes_after_speeds(third: f64) -> Vec<u64> {
    let mut b = Sigmoid::faithful();
    b.start(&setup(100_000, &[(1.0, 1), (1.0, 1)])).unwrap();
    let mut current = run(&mut b, 0, 0.0);
    run(&mut b, 1, 0.0);
    let mut sizes = Vec::new();
    for speed in [100.0, 100.0, third, 120.0, 120.0, 120.0] {
        finish(&mut b, 0, current, speed, 1.0);
        current = run(&mut b, 0, 1.0);
        sizes.push(current.len);
    }
    sizes
}

#[test]
fn switches_to_k_i_for_good_once_sigma_over_s_exceeds_d() {
    // Speeds 100, 100, 160: σ/S = 28.28/120 = 0.236 ≤ 0.25, k stays 2: the third package is
    // ⌊25 000 · tanh(6 · 50 020/100 000) / 2⌋ = 12 438.
    assert_eq!(sizes_after_speeds(160.0)[..3], [12_496, 12_486, 12_438]);
    // Speeds 100, 100, 170: σ/S = 33.0/123.3 = 0.268 > 0.25, k becomes 0.5:
    // ⌊25 000 · tanh(1.5 · 50 020/100 000) / 2⌋ = 7 941.
    let irregular = sizes_after_speeds(170.0);
    assert_eq!(irregular[..3], [12_496, 12_486, 7_941]);
    // Three steady speeds later σ = 0, yet k stays 0.5: 6 985, 6 032, 5 128 (with k = 2 they
    // would be 12 340, 11 814, 9 894).
    assert_eq!(irregular[3..], [6_985, 6_032, 5_128]);
}

#[test]
fn guard_probes_at_the_occupancy_bound_first() {
    // Nominal says device 1 is a third of device 0; the faithful form commits 62 groups to
    // it at once, the guarded form only its occupancy bound.
    let mut b = Sigmoid::guarded();
    b.start(&setup(1000, &[(3000.0, 10), (1000.0, 2)])).unwrap();
    assert_eq!(run(&mut b, 0, 0.0).len, 10);
    assert_eq!(run(&mut b, 1, 0.0).len, 2);
}

#[test]
fn guard_keeps_a_very_slow_device_off_the_end_of_the_run() {
    // Device 0: 1000 groups/s, fills with 10. Device 1: 1 group/s, fills with 4, so any
    // package takes it at least 4 s. Nominal speeds put device 1 in a slower class (31x
    // below, like a 16-core CPU beside an H200) but understate the real gap.
    const G: u64 = 6000;
    let mut b = Sigmoid::guarded();
    b.start(&setup(G, &[(31.0, 10), (1.0, 4)])).unwrap();
    let mut current = run(&mut b, 0, 0.0);
    let probe = run(&mut b, 1, 0.0);
    // Device 0 works alone until device 1's probe ends at 4 s.
    let mut now = 0.0;
    while now + current.len as f64 / 1000.0 < 4.0 {
        now += current.len as f64 / 1000.0;
        finish(&mut b, 0, current, 1000.0, now);
        current = run(&mut b, 0, now);
    }
    finish(&mut b, 1, probe, 1.0, 4.0);
    // Device 0 is still running and fewer than 4000 groups (4 s of its work) are left, so
    // even an occupancy-bound package for device 1 would end after everything else.
    let left = G - current.end();
    assert!(left > 0 && left < 4000, "precondition: {left} groups left");
    assert_eq!(b.next(1, 4.0), Next::Wait);
    // With nothing else running, device 1 must take work rather than stall the run.
    let end = now + current.len as f64 / 1000.0;
    finish(&mut b, 0, current, 1000.0, end);
    assert!(matches!(b.next(1, end), Next::Run(_)));
}

#[test]
fn a_running_package_is_expected_to_end_on_time_or_overrun_as_much_again() {
    let r = Running { package: Package { offset: 0, len: 100 }, since: 1.0 };
    // 100 groups at 50/s: planned 2 s. At 1.5 s, 1.5 s are left.
    assert_eq!(remaining_seconds(r, 50.0, 1.5), 1.5);
    // At 3.5 s it is 0.5 s late: expect 0.5 s more, not the 2.5 s it has taken.
    assert_eq!(remaining_seconds(r, 50.0, 3.5), 0.5);
}

fn done(len: u64, kernel: f64, span: f64) -> Completion {
    Completion {
        device: 0,
        package: Package { offset: 0, len },
        kernel_seconds: kernel,
        host_start: 1.0,
        host_end: 1.0 + span,
    }
}

#[test]
fn a_package_costs_its_span_where_transfers_dominate_its_kernel() {
    // Fill of 100 groups. Over a fill: the kernel up to twice the kernel, the span beyond.
    assert_eq!(package_cost(&done(400, 1.0, 1.9), 100), 1.0);
    assert_eq!(package_cost(&done(400, 1.0, 2.5), 100), 2.5);
    // A fill or less: its fixed cost may be several kernels; only ten count as transfers.
    assert_eq!(package_cost(&done(100, 1.0, 5.0), 100), 1.0);
    assert_eq!(package_cost(&done(100, 1.0, 40.0), 100), 40.0);
    // No kernel time: the span is all there is.
    assert_eq!(package_cost(&done(400, 0.0, 3.0), 100), 3.0);
}

#[test]
fn a_range_of_a_fill_or_two_is_probed_in_shares_not_taken_whole() {
    // A matrix-vector product: 1024 groups, H200s filling with 4224, a CPU with 32. The
    // probes are the nominal shares rounded up (32, 497, and the 495 left), not one GPU
    // taking the whole range while the other idles.
    let mut b = Sigmoid::guarded();
    b.start(&setup(1024, &[(4300.8, 32), (66_908.0, 4224), (66_908.0, 4224)])).unwrap();
    let lens: Vec<u64> = (0..3).map(|d| run(&mut b, d, 0.0).len).collect();
    assert_eq!(lens, [32, 497, 495]);
}

#[test]
fn identical_transfer_bound_devices_split_the_range_evenly() {
    // Two identical devices whose packages cost 50 times their kernel end to end (a
    // memory-bound kernel over a link): each package reports a kernel of 1/50 of its span.
    // Planned from kernel times, they would believe the run ends 50 times sooner.
    const G: u64 = 100_000;
    let mut b = Sigmoid::guarded();
    b.start(&setup(G, &[(1.0, 100), (1.0, 100)])).unwrap();
    let (mut now, mut done_groups) = ([0.0f64; 2], [0u64; 2]);
    let mut current = [run(&mut b, 0, 0.0), run(&mut b, 1, 0.0)];
    let mut live = [true, true];
    while live.iter().any(|&l| l) {
        // The device whose package ends first reports; 1000 groups/s end to end.
        let d = (0..2).filter(|&d| live[d]).min_by(|&a, &c| {
            (now[a] + current[a].len as f64 / 1e3)
                .total_cmp(&(now[c] + current[c].len as f64 / 1e3))
        });
        let d = d.unwrap();
        let span = current[d].len as f64 / 1e3;
        b.completed(&Completion {
            device: d,
            package: current[d],
            kernel_seconds: span / 50.0,
            host_start: now[d],
            host_end: now[d] + span,
        });
        now[d] += span;
        done_groups[d] += current[d].len;
        match b.next(d, now[d]) {
            Next::Run(p) => current[d] = p,
            _ => live[d] = false,
        }
    }
    assert_eq!(done_groups[0] + done_groups[1], G);
    let (lo, hi) = (now[0].min(now[1]), now[0].max(now[1]));
    assert!(lo / hi >= 0.97, "finish {now:?}, groups {done_groups:?}");
}

#[test]
fn a_lost_device_leaves_the_share_to_the_others() {
    let mut b = Sigmoid::faithful();
    b.start(&setup(100, &[(1.0, 1), (1.0, 1)])).unwrap();
    let p0 = run(&mut b, 0, 0.0);
    b.device_lost(1);
    assert_eq!(b.next(1, 0.0), Next::Done);
    finish(&mut b, 0, p0, 10.0, 1.0);
    let mut handed = p0.len;
    while let Next::Run(p) = b.next(0, 1.0) {
        handed += p.len;
        finish(&mut b, 0, p, 10.0, 1.0);
    }
    assert_eq!(handed, 100);
}

/// Aho on an H200 (device 1) beside a 16-core PoCL CPU (device 0), as measured: the CPU's probe
/// ran at 190 work-groups per second on costly text, its next packages at up to 670 000 on
/// cheap text. Its next package must not outlast the run at the slowest speed it has shown
/// (the GPU ends the whole range in about 1.2 s); from its recent speeds it took 18 176.
#[test]
fn a_slow_device_that_ran_cheap_work_plans_with_its_slowest_speed() {
    let mut b = Sigmoid::guarded();
    b.start(&setup(8_388_608, &[(2150.0, 16), (66_908.0, 4224)])).unwrap();
    let gpu_probe = run(&mut b, 1, 0.0);
    let cpu_probe = run(&mut b, 0, 0.0);
    assert_eq!((gpu_probe.len, cpu_probe.len), (4224, 16));
    finish(&mut b, 1, gpu_probe, 4224.0 / 0.0034, 0.0034);
    let gpu_big = run(&mut b, 1, 0.0035);
    assert!(gpu_big.len > 1_000_000, "{gpu_big:?}");
    finish(&mut b, 0, cpu_probe, 16.0 / 0.084, 0.084);
    let mut now = 0.084;
    // Cheap text: each package ran in tens of microseconds.
    for kernel in [45e-6, 41e-6, 48e-6] {
        let p = run(&mut b, 0, now);
        now += kernel;
        finish(&mut b, 0, p, p.len as f64 / kernel, now);
    }
    let next = match b.next(0, now) {
        Next::Run(p) => p.len,
        Next::Wait => 0,
        other => panic!("{other:?}"),
    };
    let slowest = 16.0 / 0.084;
    assert!(
        (next as f64) / slowest < 1.2 - now,
        "{next} work-groups: {} s at its slowest",
        next as f64 / slowest
    );
}

/// Guard point 12, replaying the H100 + PoCL CPU run of Aho: the H100's one-fill probe, its
/// large package, then the CPU's 16-work-group probe on cheap text in 70 µs. The CPU was then
/// handed 21 744 work-groups (26 s at its mean speed on Aho); now at most 32 times its largest
/// completed package until its speed is averaged over three.
#[test]
fn a_slow_device_grows_its_packages_from_its_largest_completed() {
    let mut b = Sigmoid::guarded();
    b.start(&setup(8_388_608, &[(2150.0, 16), (66_908.0, 4224)])).unwrap();
    let gpu_probe = run(&mut b, 1, 0.0);
    finish(&mut b, 1, gpu_probe, 4224.0 / 0.00366, 0.0038);
    let gpu_big = run(&mut b, 1, 0.0039);
    assert!(gpu_big.len > 1_000_000, "{gpu_big:?}");
    let cpu_probe = run(&mut b, 0, 0.2936);
    assert_eq!(cpu_probe.len, 16);
    finish(&mut b, 0, cpu_probe, 16.0 / 70e-6, 0.2938);
    let mut largest = 16;
    let mut now = 0.2938;
    for _ in 0..2 {
        let p = match b.next(0, now) {
            Next::Run(p) => p,
            other => panic!("{other:?}"),
        };
        assert!(p.len <= 32 * largest, "{} work-groups after {largest}", p.len);
        // Still cheap text: the package grows by at most the same factor each time.
        now += p.len as f64 * 70e-6 / 16.0;
        finish(&mut b, 0, p, 16.0 / 70e-6, now);
        largest = largest.max(p.len);
    }
}

#[test]
fn a_package_is_queued_ahead_only_with_a_full_history_and_planned_from_the_running_one_s_end() {
    // Two equal GPUs on a regular kernel (100 groups/s each), a CPU nominally 10 times slower
    // (a slower class) at 10/s, 1 000 000 groups: plenty left after any package.
    let mut b = Sigmoid::guarded();
    b.start(&setup(1_000_000, &[(10.0, 4), (10.0, 4), (1.0, 4)])).unwrap();
    let mut now = 0.0;
    // Probes, then packages measured one at a time: nothing is queued before three are.
    for _ in 0..3 {
        for d in 0..2 {
            let p = run(&mut b, d, now);
            assert_eq!(b.next_ahead(d, now), Next::Wait, "queued after {now} s");
            now += p.len as f64 / 100.0;
            finish(&mut b, d, p, 100.0, now);
        }
    }
    for _ in 0..3 {
        let p = run(&mut b, 2, now);
        now += p.len as f64 / 10.0;
        finish(&mut b, 2, p, 10.0, now);
    }
    let running = run(&mut b, 0, now);
    let Next::Run(queued) = b.next_ahead(0, now) else { panic!("nothing queued after three") };
    assert_eq!(queued.offset, running.end(), "taken from the front, after the running one");
    // Planned from when the running one should end: at least the imbalance bound there.
    let free_at = now + running.len as f64 / 100.0;
    assert!(queued.len as f64 >= (0.05 * free_at * 100.0).floor(), "{queued:?} at {free_at}");
    // One queued at a time, and never on a device of a slower class.
    assert_eq!(b.next_ahead(0, now), Next::Wait);
    let _ = run(&mut b, 2, now);
    assert_eq!(b.next_ahead(2, now), Next::Wait);
    // The running one ends: the queued one runs from then, and another may be queued.
    finish(&mut b, 0, running, 100.0, free_at);
    assert!(b.running[0].is_some_and(|r| r.package == queued && r.since == free_at));
    assert!(matches!(b.next_ahead(0, free_at), Next::Run(_)));
    // A lost device drops what it had queued.
    b.device_lost(0);
    assert!(b.queued[0].is_none() && b.running[0].is_none());
}

#[test]
fn nothing_is_queued_ahead_near_the_end() {
    // Two equal GPUs, 2 000 groups: after three measured packages each, what is left is
    // less than twice what all devices run during one more package.
    let mut b = Sigmoid::guarded();
    b.start(&setup(2_000, &[(1.0, 4), (1.0, 4)])).unwrap();
    let mut now = 0.0;
    for _ in 0..3 {
        for d in 0..2 {
            let p = run(&mut b, d, now);
            now += p.len as f64 / 100.0;
            finish(&mut b, d, p, 100.0, now);
        }
    }
    let left = b.left.left();
    let p = run(&mut b, 0, now);
    assert!(left - p.len < 4 * p.len, "left {left}, package {p:?}: not near the end");
    assert_eq!(b.next_ahead(0, now), Next::Wait);
}
