//! `Report::chrome_trace`: Chrome trace-event JSON (Perfetto, chrome://tracing) of a run, parsed
//! back with serde_json: one named track per device, every package of the report present on its
//! device's track with its work-groups, and neither packages nor kernels of one device overlap.

mod common;

use common::{expand4, lcg, program, round_robin};
use hetdsl::balance::{DeviceKind, Package};
use hetdsl::report::{DeviceReport, PackageTrace, Transfer};
use hetdsl::Report;
use serde_json::Value;

/// The trace's complete (`X`) events of category `cat` on track `tid`, as (start, end) in µs.
fn slices(trace: &Value, tid: u64, cat: &str) -> Vec<(f64, f64, Value)> {
    let mut s: Vec<(f64, f64, Value)> = trace["traceEvents"]
        .as_array()
        .expect("a traceEvents array")
        .iter()
        .filter(|e| e["ph"] == "X" && e["tid"] == tid)
        .filter(|e| e["cat"].as_str().is_some_and(|c| c.split(',').any(|c| c == cat)))
        .map(|e| {
            let ts = e["ts"].as_f64().expect("ts");
            (ts, ts + e["dur"].as_f64().expect("dur"), e.clone())
        })
        .collect();
    s.sort_by(|a, b| a.0.total_cmp(&b.0));
    s
}

fn assert_no_overlap(s: &[(f64, f64, Value)], what: &str) {
    for w in s.windows(2) {
        // Timestamps are rounded to the nanosecond; allow that much.
        assert!(w[1].0 >= w[0].1 - 1e-3, "{what}: {:?} overlaps {:?}", w[0].2, w[1].2);
    }
}

/// Everything the exporter promises, checked against the report it came from.
fn check(report: &Report) -> Value {
    let trace: Value = serde_json::from_str(&report.chrome_trace()).expect("valid JSON");
    let names: Vec<&Value> = trace["traceEvents"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
        .collect();
    assert_eq!(names.len(), report.devices.len(), "one track per device");
    for d in &report.devices {
        let tid = d.index as u64;
        assert!(names
            .iter()
            .any(|n| n["tid"] == tid
                && n["args"]["name"].as_str().is_some_and(|s| s.contains(&d.name))));
        let packages = slices(&trace, tid, "package");
        let mine: Vec<&PackageTrace> =
            report.trace.iter().filter(|t| t.device == d.index).collect();
        assert_eq!(packages.len(), mine.len(), "every package of device {tid} is on its track");
        for t in &mine {
            assert!(
                packages.iter().any(|(_, _, e)| e["args"]["offset"] == t.package.offset
                    && e["args"]["len"] == t.package.len),
                "package {:?} of device {tid} missing",
                t.package
            );
        }
        assert_no_overlap(&packages, "packages");
        let kernels = slices(&trace, tid, "kernel");
        assert_no_overlap(&kernels, "kernels");
        // Each kernel lies inside a package of its device.
        for (start, end, k) in &kernels {
            assert!(
                packages.iter().any(|(s, e, _)| s - 1e-3 <= *start && *end <= e + 1e-3),
                "kernel {k:?} outside every package"
            );
        }
    }
    trace
}

#[test]
fn a_two_device_launch_exports_one_track_per_device_and_every_package() {
    let p = program("engine.cl");
    let input = lcg(9, 1 << 16);
    let mut out = vec![0u32; 4 << 16];
    let launch = expand4(&p, 1 << 16, &input, &mut out).on_devices(&[0, 1]);
    let report = launch.balancer(round_robin(4)).backups(false).run().expect("the run");
    assert_eq!(report.trace.len(), 8);
    let trace = check(&report);
    // PoCL profiles kernels: every package has its kernel slice.
    let kernels: usize = (0..2).map(|d| slices(&trace, d, "kernel").len()).sum();
    assert_eq!(kernels, 8);
}

fn device(index: usize) -> DeviceReport {
    DeviceReport {
        index,
        name: format!("dev{index}"),
        kind: DeviceKind::Cpu,
        packages: 2,
        groups: 10,
        busy_seconds: 0.01,
        finish_seconds: 0.03,
        fault: None,
    }
}

fn package(device: usize, offset: u64, start: f64, end: f64, merged: bool) -> PackageTrace {
    PackageTrace {
        device,
        package: Package { offset, len: 5 },
        host_start: start,
        host_end: end,
        kernel_seconds: Some(0.004),
        written: Transfer { bytes: 64, seconds: Some(0.001) },
        read: Transfer { bytes: 256, seconds: Some(0.002) },
        merged,
        idle_before: None,
    }
}

#[test]
fn back_ups_are_marked_and_a_device_track_never_overlaps() {
    // Device 1 backs up device 0's package at offset 5 and wins; device 0's host readings of
    // its two packages straddle each other by a few microseconds (clock rounding).
    let report = Report {
        kernel: "k".into(),
        balancer: "b".into(),
        first_group: 0,
        total_groups: 15,
        devices: vec![device(0), device(1)],
        trace: vec![
            package(0, 0, 0.0, 0.010_003, true),
            package(0, 5, 0.010, 0.030, false),
            package(1, 10, 0.0, 0.012, true),
            package(1, 5, 0.015, 0.025, true),
        ],
        roi_seconds: 0.03,
        roi_start: None,
        binary_seconds: 0.04,
        balance: 1.0,
        speedup: None,
        smax: None,
        efficiency: None,
        faults: vec![],
        backups: vec![(0, 1, Package { offset: 5, len: 5 })],
        transfers: Vec::new(),
        sat_out: Vec::new(),
    };
    let trace = check(&report);
    let backups = slices(&trace, 1, "backup");
    assert_eq!(backups.len(), 1);
    assert_eq!(backups[0].2["args"]["backup_of_device"], 0);
    assert_eq!(backups[0].2["args"]["offset"], 5);
    let discarded = slices(&trace, 0, "discarded");
    assert_eq!(discarded.len(), 1, "the losing copy is marked");
    assert_eq!(discarded[0].2["args"]["merged"], false);
    // Write, kernel and read-back of a package in that order, with their profiled lengths.
    let t: Vec<(f64, f64, Value)> = ["transfer", "kernel"]
        .iter()
        .flat_map(|c| slices(&trace, 1, c))
        .filter(|s| s.2["args"]["offset"] == 10)
        .collect();
    let by_name = |n: &str| t.iter().find(|s| s.2["name"] == n).map(|s| (s.0, s.1));
    let (w, k, r) = (by_name("write"), by_name("kernel"), by_name("read"));
    assert_eq!(w, Some((0.0, 1000.0)));
    assert_eq!(k, Some((1000.0, 5000.0)));
    assert_eq!(r, Some((5000.0, 7000.0)));
}
