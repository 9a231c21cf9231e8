//! The dispatcher's `tracing` events: a launch on the two PoCL devices emits one hand-out, one
//! completion and one merge per package, and the merged packages cover the whole range exactly
//! once; a device lost mid-run emits its loss and the re-run of its work. Collected by
//! `common::events`.

mod common;

use std::sync::atomic::Ordering;
use std::time::Duration;

use common::events::{events_of, Event, PANIC_ON_EVENT};
use common::{expand4, lcg, program, round_robin, within};
use hetdsl::{Fault, Pattern};

const N: usize = 1 << 16;
/// Work-groups of 64 work-items in the range.
const UNITS: u64 = (N / 64) as u64;

/// The packages `(offset, len)` of the events with `message`, sorted.
fn packages(events: &[Event], message: &str) -> Vec<(u64, u64, u64)> {
    let mut p: Vec<(u64, u64, u64)> = events
        .iter()
        .filter(|e| e.message == message)
        .map(|e| (e.number("offset"), e.number("len"), e.number("device")))
        .collect();
    p.sort_unstable();
    p
}

/// `packages` tile 0..UNITS exactly once.
fn assert_tiles(packages: &[(u64, u64, u64)], what: &str) {
    let mut next = 0;
    for &(offset, len, _) in packages {
        assert_eq!(offset, next, "{what}: gap or overlap at {offset}: {packages:?}");
        next = offset + len;
    }
    assert_eq!(next, UNITS, "{what} end at {next} of {UNITS}: {packages:?}");
}

#[test]
fn a_launch_on_two_devices_emits_every_package_handed_out_completed_and_merged() {
    let p = program("engine.cl");
    let input = lcg(5, N);
    let mut out = vec![0u32; 4 * N];
    let events = events_of(|| {
        let launch = expand4(&p, N, &input, &mut out).on_devices(&[0, 1]);
        let report = launch.balancer(round_robin(4)).backups(false).run().expect("the run");
        assert_eq!(report.trace.len(), 8);
    });
    assert_eq!(out, common::expand4_reference(&input), "the output itself is right");
    let handed = packages(&events, "package handed out");
    let completed = packages(&events, "package completed");
    let merged = packages(&events, "package merged");
    assert_tiles(&handed, "handed out");
    assert_tiles(&merged, "merged");
    assert_eq!(handed, completed, "each package handed out completes on its device");
    assert_eq!(handed, merged, "and is merged from it");
    for device in [0, 1] {
        assert_eq!(handed.iter().filter(|p| p.2 == device).count(), 4, "device {device}");
    }
    // Completion follows hand-out on the run's clock.
    for c in events.iter().filter(|e| e.message == "package completed") {
        let start = events
            .iter()
            .find(|h| h.message == "package handed out" && h.fields["offset"] == c.fields["offset"])
            .map(Event::seconds);
        assert!(start.is_some_and(|s| s <= c.seconds()), "{c:?} before its hand-out");
        assert_eq!(c.fields.get("kept").map(String::as_str), Some("true"));
    }
    assert!(!events.iter().any(|e| e.message.contains("lost") || e.message.contains("retry")));
}

#[test]
fn a_lost_device_emits_its_loss_and_the_rerun_of_its_work() {
    let p = program("engine.cl");
    let input = lcg(6, N);
    let mut out = vec![0u32; 4 * N];
    let events = events_of(|| {
        let launch = expand4(&p, N, &input, &mut out).on_devices(&[0, 1]);
        let launch = launch.balancer(round_robin(4)).backups(false);
        let report = launch.inject(Fault::Fail { device: 1, package: 1 }).run().expect("the run");
        assert!(report.devices[1].fault.is_some());
    });
    assert_eq!(out, common::expand4_reference(&input), "nothing lost");
    let lost: Vec<&Event> =
        events.iter().filter(|e| e.message.starts_with("device lost")).collect();
    assert_eq!(lost.len(), 1, "{events:#?}");
    assert_eq!(lost[0].number("device"), 1);
    assert!(lost[0].fields.contains_key("reason"));
    let retried = packages(&events, "package handed out again (retry)");
    assert!(!retried.is_empty() && retried.iter().all(|p| p.2 == 0), "{retried:?}");
    // Whatever device 1 lost, every work-group is merged exactly once, from one device or the other.
    assert_tiles(&packages(&events, "package merged"), "merged");
}

#[test]
fn a_panicking_subscriber_loses_its_events_but_not_the_run() {
    /// Back to collecting however the run ends, so the other tests are not disturbed.
    struct Calm;
    impl Drop for Calm {
        fn drop(&mut self) {
            PANIC_ON_EVENT.store(false, Ordering::Relaxed);
        }
    }
    let events = events_of(|| {
        PANIC_ON_EVENT.store(true, Ordering::Relaxed);
        let _calm = Calm;
        let result = within(Duration::from_secs(60), || {
            let p = program("engine.cl");
            let input = lcg(7, N);
            let mut out = vec![0u32; 4 * N];
            let launch = expand4(&p, N, &input, &mut out).on_devices(&[0, 1]);
            let report = launch.balancer(round_robin(4)).backups(false).run();
            (report.map(|r| r.trace.len()), out == common::expand4_reference(&input))
        });
        let (trace, correct) = result;
        assert_eq!(trace.ok(), Some(8), "the run completes");
        assert!(correct, "with the right output");
    });
    assert!(events.is_empty(), "every event was lost to the panic");
}

/// `(device, reused, allocated, freed)` of each device's set-up in `events`, sorted.
fn buffer_counts(events: &[Event]) -> Vec<(u64, u64, u64, u64)> {
    let mut c: Vec<_> = events
        .iter()
        .filter(|e| e.message == "device buffers")
        .map(|e| (e.number("device"), e.number("reused"), e.number("allocated"), e.number("freed")))
        .collect();
    c.sort_unstable();
    c
}

/// lookup (a whole input, the table; a sliced input and an output) over devices 0 and 1 with
/// `balancer`, no back-ups and `fault`; its output checked against the CPU on these inputs.
fn run_lookup(
    p: &hetdsl::Program,
    table: &[u32],
    keys: &[u32],
    balancer: Box<dyn hetdsl::Balancer>,
    fault: Option<Fault>,
) -> hetdsl::Report {
    let mut out = vec![0u32; keys.len()];
    let mut launch = p
        .launch("lookup")
        .global(&[keys.len()])
        .local(&[64])
        .input(table, Pattern::Whole)
        .scalar(table.len() as u32)
        .input(keys, Pattern::ONE_TO_ONE)
        .output(&mut out, Pattern::ONE_TO_ONE)
        .on_devices(&[0, 1])
        .balancer(balancer)
        .backups(false);
    if let Some(f) = fault {
        launch = launch.inject(f);
    }
    let r = launch.run().expect("the run");
    let want: Vec<u32> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| table[(*k as usize) % table.len()].wrapping_add(i as u32))
        .collect();
    assert_eq!(out, want, "the output matches the CPU on this call's inputs");
    r
}

#[test]
fn a_second_call_of_a_program_reuses_its_device_buffers_and_sees_the_new_inputs() {
    let p = program("engine.cl");
    // lookup: a whole input (the table), a sliced input and an output.
    let call = |table: &[u32], keys: &[u32]| {
        let events = events_of(|| {
            // A device running the losing copy of a back-up is left behind and keeps nothing:
            // no back-ups (run_lookup).
            let r = run_lookup(&p, table, keys, round_robin(4), None);
            common::assert_coexecuted(&r);
        });
        buffer_counts(&events)
    };
    let (t1, t2) = (lcg(61, 997), lcg(62, 997));
    let (k1, k2) = (lcg(63, N), lcg(64, N));
    assert_eq!(call(&t1, &k1), [(0, 0, 3, 0), (1, 0, 3, 0)], "the first call allocates");
    // Same sizes, new contents: every buffer reused, the whole table written again.
    assert_eq!(call(&t2, &k2), [(0, 3, 0, 0), (1, 3, 0, 0)]);
    // A longer range: the table (same size) is reused, the two sliced buffers are not.
    let k3 = lcg(65, 2 * N);
    assert_eq!(call(&t1, &k3), [(0, 1, 2, 2), (1, 1, 2, 2)]);
    // Kept buffers off: freed now, and nothing is parked after a run either.
    p.keep_buffers(false);
    assert_eq!(call(&t2, &k3), [(0, 0, 3, 0), (1, 0, 3, 0)]);
    assert_eq!(call(&t1, &k3), [(0, 0, 3, 0), (1, 0, 3, 0)]);
    p.keep_buffers(true);
    call(&t2, &k1);
    assert_eq!(call(&t1, &k2), [(0, 3, 0, 0), (1, 3, 0, 0)], "and on again");
}

/// expand4 over devices 0 and 1 with `balancer` and no back-ups (a device running the losing
/// copy keeps nothing), `fault` injected; checked against the CPU.
fn run_expand4(
    p: &hetdsl::Program,
    input: &[u32],
    balancer: Box<dyn hetdsl::Balancer>,
    fault: Option<Fault>,
) -> hetdsl::Report {
    let mut out = vec![0u32; 4 * N];
    let mut launch = expand4(p, N, input, &mut out).on_devices(&[0, 1]);
    launch = launch.balancer(balancer).backups(false);
    if let Some(f) = fault {
        launch = launch.inject(f);
    }
    let report = launch.run().expect("the run");
    assert_eq!(out, common::expand4_reference(input));
    report
}

#[test]
fn a_device_that_failed_in_a_run_keeps_nothing_from_it() {
    let p = program("engine.cl");
    let input = lcg(66, N);
    let run = |fault: Option<Fault>| {
        buffer_counts(&events_of(|| {
            run_expand4(&p, &input, round_robin(4), fault);
        }))
    };
    run(None);
    assert_eq!(run(Some(Fault::Fail { device: 1, package: 1 })), [(0, 2, 0, 0), (1, 2, 0, 0)]);
    // Device 1 failed: its objects were released, device 0's kept.
    assert_eq!(run(None), [(0, 2, 0, 0), (1, 0, 2, 0)]);
}

#[test]
fn a_device_still_setting_up_when_its_run_ends_keeps_its_objects_for_the_next_run() {
    let p = program("engine.cl");
    let input = lcg(67, N);
    let run = |fault: Option<Fault>| {
        run_expand4(&p, &input, Box::new(hetdsl::balance::Dynamic::packages(16)), fault)
    };
    // All runs in one window of events: the late device's thread outlives its run, and its
    // events must not land in another test's window.
    let events = events_of(|| {
        run(None);
        // Device 1 sets up for 3 s more than device 0 needs for the whole run: the run ends
        // without it, and its thread parks what it made once its set-up is over.
        run(Some(Fault::SlowSetup { device: 1, millis: 3000 }));
        tracing::info!(target: "hetdsl::test", "later runs");
        // Runs while that thread is still out go on without device 1 (its new thread waits
        // for the old one); once it is back, device 1 runs again.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while run(None).devices[1].groups == 0 {
            assert!(std::time::Instant::now() < deadline, "device 1 never came back");
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
    });
    let later = events.iter().position(|e| e.message == "later runs").expect("the marker");
    // Device 1's set-ups from then on (the slow one's own event may land here too) all reuse
    // every buffer: the parked objects were kept.
    let device1: Vec<_> =
        buffer_counts_in_order(&events[later..]).into_iter().filter(|c| c.0 == 1).collect();
    assert!(!device1.is_empty(), "{:?}", buffer_counts_in_order(&events));
    assert!(device1.iter().all(|&c| c == (1, 2, 0, 0)), "{:?}", buffer_counts_in_order(&events));
}

/// `(device, reused, allocated, freed)` of each device's set-up in `events`, in their order.
fn buffer_counts_in_order(events: &[Event]) -> Vec<(u64, u64, u64, u64)> {
    events
        .iter()
        .filter(|e| e.message == "device buffers")
        .map(|e| (e.number("device"), e.number("reused"), e.number("allocated"), e.number("freed")))
        .collect()
}

#[test]
fn a_device_whose_run_ended_before_its_buffers_writes_no_input_and_is_reused_cleanly() {
    let p = program("engine.cl");
    // lookup: a whole input (the table), read from the caller's memory at set-up.
    let call = |table: &[u32], keys: &[u32], balancer, fault: Option<Fault>| {
        run_lookup(&p, table, keys, balancer, fault);
    };
    let (t1, t2, keys) = (lcg(71, 997), lcg(72, 997), lcg(73, N));
    let events = events_of(|| {
        // Device 1 reaches its buffers 3 s late, after the run (device 0 alone) has ended: it
        // cannot read the table any more, skips it and its warm-up, and parks what it made.
        let dynamic = Box::new(hetdsl::balance::Dynamic::packages(16));
        call(&t1, &keys, dynamic, Some(Fault::SlowSetup { device: 1, millis: 3000 }));
        tracing::info!(target: "hetdsl::test", "second call");
        // Its unfilled table is written with this call's contents before it runs its share.
        call(&t2, &keys, round_robin(4), None);
    });
    let second = events.iter().position(|e| e.message == "second call").expect("the marker");
    let last = buffer_counts_in_order(&events[second..]).into_iter().rfind(|c| c.0 == 1);
    assert_eq!(last, Some((1, 3, 0, 0)), "{:?}", buffer_counts_in_order(&events));
}

#[test]
fn a_device_a_repeated_launch_leaves_out_is_not_set_up() {
    let p = program("engine.cl");
    let input = lcg(68, N);
    // No balancer: the program's repeated launches plan from the last. Device 0 runs 2000
    // times slower, so the first run gives it a probe and little more (at 400 times, two busy
    // processes on this machine's two cores slowed device 1 enough, once in 80 runs, for the
    // plan to give device 0 a block).
    let run = || {
        let mut out = vec![0u32; 4 * N];
        let launch = expand4(&p, N, &input, &mut out).on_devices(&[0, 1]);
        let report = launch.inject(Fault::Slow { device: 0, factor: 2000 }).run().expect("the run");
        assert_eq!(out, common::expand4_reference(&input));
        report
    };
    let mut first = None;
    let events = events_of(|| first = Some(run()));
    let first = first.expect("the first run");
    assert_eq!(first.balancer, "sigmoid");
    assert_eq!(buffer_counts(&events).len(), 2, "both devices set up");
    let mut second = None;
    let events = events_of(|| second = Some(run()));
    let second = second.expect("the second run");
    assert!(second.balancer.starts_with("relaunch"), "{}", second.table());
    assert_eq!(second.devices[0].packages, 0, "{}", second.table());
    // One set-up only: device 1's, numbered as in the launch (it ran at position 0 of the
    // run), as are the packages' events.
    assert_eq!(buffer_counts(&events), [(1, 2, 0, 0)], "{}", second.table());
    let handed = packages(&events, "package handed out");
    assert!(!handed.is_empty() && handed.iter().all(|p| p.2 == 1), "{handed:?}");
}
