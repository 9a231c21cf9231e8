use super::*;
use crate::report::{DeviceReport, PackageTrace, Transfer};
use crate::work::{DeviceKind, Package};

const TOTAL: u64 = 2048;

fn key() -> LaunchKey {
    LaunchKey {
        kernel: "k".into(),
        global: vec![TOTAL as usize],
        local: vec![1],
        devices: vec![0, 1],
        span: 0..TOTAL,
    }
}

/// A CPU (device 0) and a GPU: the CPU ran one package of `groups0` groups and the GPU the
/// rest, in `seconds` each.
fn split(balancer: &str, groups0: u64, seconds: [f64; 2]) -> Report {
    named(["C", "G"], balancer, groups0, seconds)
}

/// [`split`] over devices named `names`.
fn named(names: [&str; 2], balancer: &str, groups0: u64, seconds: [f64; 2]) -> Report {
    let groups = [groups0, TOTAL - groups0];
    let devices = (0..2)
        .map(|index| DeviceReport {
            index,
            name: names[index].into(),
            kind: DeviceKind::Gpu,
            packages: 1,
            groups: groups[index],
            busy_seconds: seconds[index],
            finish_seconds: seconds[index],
            fault: None,
        })
        .collect();
    let trace = (0..2)
        .map(|d| PackageTrace {
            device: d,
            package: Package { offset: [0, groups0][d], len: groups[d] },
            host_start: 0.0,
            host_end: seconds[d],
            kernel_seconds: Some(seconds[d]),
            written: Transfer::default(),
            read: Transfer::default(),
            merged: true,
            idle_before: None,
        })
        .collect();
    let balance = seconds[0].min(seconds[1]) / seconds[0].max(seconds[1]);
    Report { balancer: balancer.into(), balance, ..Report::fixture(TOTAL, devices, trace) }
}

/// Two identical devices, each ran one package of half the range in `seconds`.
fn report(balancer: &str, seconds: [f64; 2]) -> Report {
    named(["G", "G"], balancer, TOTAL / 2, seconds)
}

fn timed(r: Report, roi: f64) -> Report {
    Report { roi_seconds: roi, ..r }
}

/// The form a balancer of that name runs.
fn form_of(name: &str) -> Option<Form> {
    match name {
        "sigmoid" => Some(Form::Default),
        "relaunch" => Some(Form::Whole),
        "relaunch-pieces" => Some(Form::Pieces),
        n if n.starts_with("relaunch-alone") => Some(Form::Alone),
        _ => None,
    }
}

fn record(runs: &LastRuns, r: Report) {
    let form = form_of(&r.balancer);
    runs.record(key(), &r, form);
}

/// The next run's balancer and the devices taking part.
fn next(runs: &LastRuns) -> (String, Option<Vec<usize>>) {
    let c = runs.choose(&key());
    assert_eq!(c.form, form_of(&c.balancer.name()));
    (c.balancer.name(), c.taking)
}

fn name(runs: &LastRuns) -> String {
    next(runs).0
}

#[test]
fn a_relaunch_far_from_balance_makes_the_launch_keep_the_default() {
    let runs = LastRuns::default();
    assert_eq!(name(&runs), "sigmoid", "nothing remembered");
    record(&runs, report("sigmoid", [1.0, 1.0]));
    assert_eq!(name(&runs), "relaunch");
    // The plan (from the first run) ran 1 : 2: the default runs again, and the next plan
    // comes from that run.
    record(&runs, report("relaunch", [1.0, 2.0]));
    assert_eq!(name(&runs), "sigmoid");
    record(&runs, report("sigmoid", [1.0, 1.0]));
    assert_eq!(name(&runs), "relaunch");
    // That one ran 1 : 2 too: the default runs, and so does every run after it, even from
    // a balanced default run.
    record(&runs, report("relaunch", [1.0, 2.0]));
    assert_eq!(name(&runs), "sigmoid");
    record(&runs, report("sigmoid", [1.0, 1.0]));
    assert_eq!(name(&runs), "sigmoid");
    runs.clear();
    record(&runs, report("sigmoid", [1.0, 1.0]));
    assert_eq!(name(&runs), "relaunch", "forgotten");
}

#[test]
fn an_unbalanced_plan_faster_than_the_default_is_kept() {
    let runs = LastRuns::default();
    record(&runs, timed(report("sigmoid", [1.0, 1.0]), 5.0));
    record(&runs, timed(report("relaunch", [1.0, 2.0]), 0.8));
    assert_eq!(name(&runs), "sigmoid", "the first run's plan missed: the default again");
    record(&runs, timed(report("sigmoid", [1.0, 1.0]), 1.1));
    // Unbalanced (1 : 1.25), but 0.8 s against the default's 1.1 s: planned again, from the
    // same default run, and pieces are tried.
    record(&runs, timed(report("relaunch", [1.0, 1.25]), 0.8));
    assert_eq!(name(&runs), "relaunch-pieces");
    record(&runs, timed(report("relaunch-pieces", [1.0, 1.25]), 0.9));
    assert_eq!(name(&runs), "relaunch-pieces", "slower on its one run: once more");
    record(&runs, timed(report("relaunch-pieces", [1.0, 1.25]), 0.9));
    assert_eq!(name(&runs), "relaunch", "the faster form");
    // Unbalanced and slower than the default: struck.
    record(&runs, timed(report("relaunch", [1.0, 1.25]), 1.2));
    record(&runs, timed(report("relaunch", [1.0, 1.25]), 1.2));
    assert_eq!(name(&runs), "sigmoid");
    record(&runs, timed(report("sigmoid", [1.0, 1.0]), 1.1));
    assert_eq!(name(&runs), "sigmoid");
}

#[test]
fn an_unbalanced_plan_with_no_default_time_to_judge_it_by_runs_the_default_first() {
    let runs = LastRuns::default();
    record(&runs, timed(report("sigmoid", [1.0, 1.0]), 5.0));
    record(&runs, timed(report("relaunch", [1.0, 1.0]), 0.9));
    assert_eq!(name(&runs), "relaunch-pieces");
    // Pieces ended at 1 : 1.25 (a reduction's noise on two H100s): just short of balance,
    // so the plan runs once more (in pieces again: slower than whole on its one run); it
    // misses again, and the default's time is not known yet (the first run's is not
    // compared), so the default runs, then the launch is planned again from it and both
    // forms are tried anew.
    record(&runs, timed(report("relaunch-pieces", [1.0, 1.25]), 1.1));
    assert_eq!(name(&runs), "relaunch-pieces");
    record(&runs, timed(report("relaunch-pieces", [1.0, 1.25]), 1.1));
    assert_eq!(name(&runs), "sigmoid");
    record(&runs, timed(report("sigmoid", [1.0, 1.0]), 1.0));
    assert_eq!(name(&runs), "relaunch");
    record(&runs, timed(report("relaunch", [1.0, 1.0]), 0.9));
    assert_eq!(name(&runs), "relaunch-pieces");
}

#[test]
fn a_relaunch_tries_whole_then_pieces_then_keeps_the_faster() {
    let runs = LastRuns::default();
    record(&runs, report("sigmoid", [1.0, 1.0]));
    assert_eq!(next(&runs), ("relaunch".into(), None));
    record(&runs, timed(report("relaunch", [1.0, 1.0]), 1.0));
    assert_eq!(name(&runs), "relaunch-pieces");
    record(&runs, timed(report("relaunch-pieces", [1.0, 1.0]), 0.9));
    // Whole was slower on its one run: once more, and slower again.
    assert_eq!(name(&runs), "relaunch");
    record(&runs, timed(report("relaunch", [1.0, 1.0]), 1.0));
    assert_eq!(name(&runs), "relaunch-pieces");
    // One slow call (the median of 0.9 and 1.1 is 0.9) does not switch; a second does.
    record(&runs, timed(report("relaunch-pieces", [1.0, 1.0]), 1.1));
    assert_eq!(name(&runs), "relaunch-pieces");
    record(&runs, timed(report("relaunch-pieces", [1.0, 1.0]), 1.1));
    assert_eq!(name(&runs), "relaunch");
}

#[test]
fn a_device_the_plan_gives_nothing_sits_the_launch_out() {
    let runs = LastRuns::default();
    // Device 0 merged 1 % of the range, under the share a plan keeps.
    record(&runs, split("sigmoid", 20, [1.0, 1.0]));
    assert_eq!(next(&runs), ("relaunch".into(), Some(vec![1])));
}

#[test]
fn where_one_device_ran_most_of_the_work_it_is_tried_alone_and_kept_if_faster() {
    let runs = LastRuns::default();
    // The GPU ran 90 %: the plan keeps the CPU (10 %), and the alone form is a third.
    record(&runs, split("sigmoid", 205, [1.0, 1.0]));
    assert_eq!(next(&runs), ("relaunch".into(), None));
    record(&runs, timed(split("relaunch", 205, [1.0, 1.0]), 1.0));
    assert_eq!(next(&runs), ("relaunch-pieces".into(), None));
    record(&runs, timed(split("relaunch-pieces", 205, [1.0, 1.0]), 1.1));
    // Whole beat pieces: alone runs whole too.
    assert_eq!(next(&runs), ("relaunch-alone".into(), Some(vec![1])));
    let alone = timed(split("relaunch-alone", 0, [0.0, 0.95]), 0.95);
    record(&runs, alone.clone());
    // Both plan forms were slower on their one run: each once more, slower again.
    for (form, roi) in [("relaunch", 1.0), ("relaunch-pieces", 1.1)] {
        assert_eq!(next(&runs), (form.into(), None), "slower once: once more");
        record(&runs, timed(split(form, 205, [1.0, 1.0]), roi));
    }
    assert_eq!(next(&runs), ("relaunch-alone".into(), Some(vec![1])));
    // Its own time grew past the plan's (twice: the median moves): back to the plan, which
    // the alone runs left as it was (they are not planned from).
    record(&runs, timed(alone.clone(), 1.05));
    assert_eq!(next(&runs), ("relaunch-alone".into(), Some(vec![1])));
    record(&runs, timed(alone, 1.05));
    assert_eq!(next(&runs), ("relaunch".into(), None));
}

#[test]
fn a_launch_whose_plans_misjudge_it_tries_the_default_and_the_fastest_device_alone() {
    let runs = LastRuns::default();
    // The first run's time is not compared (it pays the devices' first use).
    record(&runs, timed(split("sigmoid", 100, [1.0, 1.0]), 5.0));
    assert_eq!(name(&runs), "relaunch");
    // The plan ended far from balance: from the first run, so the default runs and the
    // launch is planned again; the second plan misses as well, and runs slower than the
    // default (struck): the default's time is known, so alone is tried next.
    record(&runs, timed(split("relaunch", 100, [0.3, 1.0]), 1.0));
    assert_eq!(name(&runs), "sigmoid");
    record(&runs, timed(split("sigmoid", 100, [1.0, 1.0]), 1.2));
    assert_eq!(name(&runs), "relaunch");
    record(&runs, timed(split("relaunch", 100, [0.3, 1.0]), 1.4));
    // Alone, in pieces (whole and pieces were never compared).
    assert_eq!(next(&runs), ("relaunch-alone-pieces".into(), Some(vec![1])));
    record(&runs, timed(split("relaunch-alone-pieces", 0, [0.0, 1.0]), 1.0));
    // The default, slower on its one compared run, runs once more, and is slower again.
    assert_eq!(name(&runs), "sigmoid");
    record(&runs, timed(split("sigmoid", 100, [1.0, 1.0]), 1.2));
    assert_eq!(name(&runs), "relaunch-alone-pieces");
    for expected in ["relaunch-alone-pieces", "sigmoid"] {
        record(&runs, timed(split("relaunch-alone-pieces", 0, [0.0, 1.0]), 1.3));
        assert_eq!(name(&runs), expected);
    }
}

#[test]
fn peers_sharing_the_work_and_devices_of_equal_shares_are_never_tried_alone() {
    // Two GPUs of one model, 29 % and 71 % (the cost lay unevenly); a CPU and a GPU with
    // half each.
    for (names, groups0) in [(["G", "G"], 600), (["C", "G"], 1024)] {
        let runs = LastRuns::default();
        record(&runs, named(names, "sigmoid", groups0, [1.0, 1.0]));
        let calls = [
            ("relaunch", 1.0),
            ("relaunch-pieces", 1.1),
            ("relaunch-pieces", 1.1),
            ("relaunch", 1.0),
        ];
        for (name, roi) in calls {
            assert_eq!(next(&runs), (name.into(), None), "{names:?}");
            record(&runs, timed(named(names, name, groups0, [1.0, 1.0]), roi));
        }
    }
}

#[test]
fn in_pieces_a_block_whose_cost_falls_runs_from_its_end() {
    use crate::balance::{DeviceProfile, Next, Setup};
    // Two GPUs, four packages each, a costly band across the middle (Mandelbrot's image).
    let costs = [0.001, 0.05, 0.2, 0.5, 0.5, 0.2, 0.05, 0.001];
    let mut banded = report("sigmoid", [1.0, 1.0]);
    banded.trace = (0..8)
        .map(|i| PackageTrace {
            device: i / 4,
            package: Package { offset: i as u64 * 256, len: 256 },
            kernel_seconds: Some(costs[i]),
            host_end: costs[i],
            ..banded.trace[0].clone()
        })
        .collect();
    for d in &mut banded.devices {
        d.packages = 4;
    }
    let gpu = DeviceProfile { kind: DeviceKind::Gpu, nominal_gflops: 1.0, min_groups: 1 };
    // The first package each device runs next: its block's start, or its end.
    let firsts = |runs: &LastRuns| {
        let mut choice = runs.choose(&key());
        assert_eq!(choice.balancer.name(), "relaunch-pieces");
        choice
            .balancer
            .start(&Setup { total_groups: TOTAL, devices: vec![gpu.clone(); 2] })
            .unwrap();
        [0, 1].map(|d| match choice.balancer.next(d, 0.0) {
            Next::Run(p) => p,
            other => panic!("{other:?}"),
        })
    };
    // The first block's cost rises along it, the second's falls: each ends at the middle.
    let ends_at_the_middle = [Package { offset: 0, len: 128 }, Package { offset: 1920, len: 128 }];
    let runs = LastRuns::default();
    record(&runs, banded.clone());
    record(&runs, timed(Report { balancer: "relaunch".into(), ..banded.clone() }, 1.0));
    assert_eq!(firsts(&runs), ends_at_the_middle);
    // A plan run whole measures one package per device, a flat map: the order comes from
    // the last run that measured the blocks in several packages.
    let runs = LastRuns::default();
    record(&runs, banded);
    record(&runs, timed(report("relaunch", [1.0, 1.0]), 1.0));
    assert_eq!(firsts(&runs), ends_at_the_middle);
}

#[test]
fn a_run_with_a_fault_leaves_nothing_to_plan_from() {
    let runs = LastRuns::default();
    let mut r = report("sigmoid", [1.0, 1.0]);
    r.devices[1].fault = Some("lost".into());
    record(&runs, r);
    assert_eq!(name(&runs), "sigmoid");
}

#[test]
fn a_plan_just_short_of_balance_runs_once_more_before_it_is_judged() {
    let runs = LastRuns::default();
    record(&runs, timed(report("sigmoid", [1.0, 1.0]), 5.0));
    assert_eq!(name(&runs), "relaunch");
    // 0.85, with no default time to judge it by: the plan runs again (its other form, not
    // tried yet), where a miss used to send the next call to the default.
    record(&runs, timed(report("relaunch", [1.0, 1.0 / 0.85]), 1.0));
    assert_eq!(name(&runs), "relaunch-pieces");
    // Balanced: the miss is forgotten, so a later near miss gets its second run too.
    record(&runs, timed(report("relaunch-pieces", [1.0, 1.0]), 0.9));
    record(&runs, timed(report("relaunch-pieces", [1.0, 1.0 / 0.85]), 1.0));
    assert_ne!(name(&runs), "sigmoid");
    // A second miss in a row is judged as before: no default time yet, the default runs.
    record(&runs, timed(report("relaunch-pieces", [1.0, 1.0 / 0.85]), 1.0));
    assert_eq!(name(&runs), "sigmoid");
    // Far from balance (0.5), the first miss counts at once.
    let far = LastRuns::default();
    record(&far, timed(report("sigmoid", [1.0, 1.0]), 5.0));
    record(&far, timed(report("relaunch", [1.0, 2.0]), 1.0));
    assert_eq!(name(&far), "sigmoid");
}

#[test]
fn one_slow_near_miss_does_not_strike_a_plan() {
    let runs = LastRuns::default();
    record(&runs, timed(report("sigmoid", [1.0, 1.0]), 5.0));
    record(&runs, timed(report("relaunch", [1.0, 1.0]), 1.0));
    record(&runs, timed(report("sigmoid", [1.0, 1.0]), 1.2));
    // Slower than the default and at 0.85: once, the plan stays.
    record(&runs, timed(report("relaunch", [1.0, 1.0 / 0.85]), 1.3));
    assert!(name(&runs).starts_with("relaunch"), "{}", name(&runs));
    // Again, in a row: struck, the default from now on.
    record(&runs, timed(report("relaunch", [1.0, 1.0 / 0.85]), 1.3));
    record(&runs, timed(report("sigmoid", [1.0, 1.0]), 1.2));
    assert_eq!(name(&runs), "sigmoid");
}

/// On two H200s a reduction's plans ran balanced in 5.9-6.9 ms and Sigmoid in 6.7-7.7, until
/// one planned call slowed by the host (12.3 ms) struck the plan for good, and every later call
/// ran Sigmoid. A plan that has run well gets a second run after a far miss, and one faster
/// than the default ends a miss, so only two misses in a row strike it.
#[test]
fn one_slow_far_miss_of_a_plan_that_ran_well_does_not_strike_it() {
    let runs = LastRuns::default();
    record(&runs, timed(report("sigmoid", [1.0, 1.0]), 5.0));
    record(&runs, timed(report("relaunch", [1.0, 1.0]), 1.0));
    record(&runs, timed(report("sigmoid", [1.0, 1.0]), 1.2));
    // A near miss, then an unbalanced run faster than the default, then a far slow miss.
    record(&runs, timed(report("relaunch", [1.0, 1.0 / 0.85]), 1.3));
    record(&runs, timed(report("relaunch", [1.0, 1.0 / 0.85]), 1.1));
    record(&runs, timed(report("relaunch", [1.0, 2.0]), 2.0));
    assert!(name(&runs).starts_with("relaunch"), "{}", name(&runs));
    // Twice far in a row: struck.
    record(&runs, timed(report("relaunch", [1.0, 2.0]), 2.0));
    assert_eq!(name(&runs), "sigmoid");
    // Never balanced, a far miss still counts at once (as above, with a default time).
    let never = LastRuns::default();
    record(&never, timed(report("sigmoid", [1.0, 1.0]), 5.0));
    record(&never, timed(report("sigmoid", [1.0, 1.0]), 1.2));
    record(&never, timed(report("relaunch", [1.0, 2.0]), 2.0));
    assert_eq!(name(&never), "sigmoid");
}

/// A launch whose default run was followed by its plan once whole (`whole` s) and once in
/// pieces (`pieces` s), both balanced.
fn both_forms_timed(whole: f64, pieces: f64) -> LastRuns {
    let runs = LastRuns::default();
    record(&runs, timed(report("sigmoid", [1.0, 1.0]), 5.0));
    record(&runs, timed(report("relaunch", [1.0, 1.0]), whole));
    assert_eq!(name(&runs), "relaunch-pieces");
    record(&runs, timed(report("relaunch-pieces", [1.0, 1.0]), pieces));
    runs
}

#[test]
fn a_form_slower_than_another_on_its_one_run_runs_once_more_before_it_is_judged() {
    // The plan's first run whole paid a one-time cost: 2.0 s against 1.0 in pieces.
    let runs = both_forms_timed(2.0, 1.0);
    assert_eq!(name(&runs), "relaunch", "timed once, at twice the fastest: tried again");
    record(&runs, timed(report("relaunch", [1.0, 1.0]), 0.8));
    // Its better time counts: now pieces are the slower, once, and run once more.
    assert_eq!(name(&runs), "relaunch-pieces");
    record(&runs, timed(report("relaunch-pieces", [1.0, 1.0]), 1.0));
    assert_eq!(name(&runs), "relaunch", "each form run twice: the faster is kept");
    // Twice slow is slow: pieces stay, whole is not tried a third time.
    let runs = both_forms_timed(2.0, 1.0);
    record(&runs, timed(report("relaunch", [1.0, 1.0]), 1.9));
    for _ in 0..2 {
        assert_eq!(name(&runs), "relaunch-pieces");
        record(&runs, timed(report("relaunch-pieces", [1.0, 1.0]), 1.0));
    }
    // Slower by as little as the host's noise: tried again too, and kept where its second
    // run beats the other form's (elementwise on an H200 + CPU: whole 64 ms once, pieces 54
    // once, whole 55 over 11 alternated rounds to 62 in pieces).
    let runs = both_forms_timed(1.2, 1.0);
    assert_eq!(name(&runs), "relaunch");
    record(&runs, timed(report("relaunch", [1.0, 1.0]), 0.9));
    assert_eq!(name(&runs), "relaunch-pieces", "now pieces are slower once");
    record(&runs, timed(report("relaunch-pieces", [1.0, 1.0]), 1.0));
    assert_eq!(name(&runs), "relaunch");
    // A tie is not retried: the first form tried stays.
    assert_eq!(name(&both_forms_timed(1.0, 1.0)), "relaunch");
}

#[test]
fn a_launch_is_checked_for_stray_writes_until_a_checked_run_is_recorded() {
    let runs = LastRuns::default();
    assert!(!runs.writes_checked(&key()));
    record(&runs, report("sigmoid", [1.0, 1.0]));
    assert!(!runs.writes_checked(&key()), "a run that did not check");
    runs.writes_checked_by(&key());
    assert!(runs.writes_checked(&key()));
    record(&runs, report("relaunch", [1.0, 1.0]));
    assert!(runs.writes_checked(&key()), "kept across runs");
    runs.clear();
    assert!(!runs.writes_checked(&key()), "forgotten: checked again");
}
