//! CI: every sample's kernel at small size, co-executed on two PoCL devices
//! (`POCL_DEVICES="pthread basic"`), each device running at least two packages, and the output
//! checked against the sample's independent CPU reference with its tolerance rule.

mod common;

use hetdsl::Runtime;
use hetdsl_samples::samples::{self, Size};

#[test]
fn every_kernel_small_on_two_pocl_devices() {
    if std::env::var_os("POCL_DEVICES").is_none() {
        // Must happen before the first OpenCL call of the process (PoCL reads it then).
        std::env::set_var("POCL_DEVICES", "pthread basic");
    }
    let runtime = Runtime::new().expect("an OpenCL platform (CI installs PoCL)");
    let devices = runtime.devices();
    assert!(
        devices.len() >= 2,
        "need two OpenCL devices, found {devices:?}; set POCL_DEVICES=\"pthread basic\""
    );
    let pair = [0usize, 1];

    let mut failures = Vec::new();
    for name in samples::NAMES {
        let mut sample = match samples::create(name, Size::Small, &runtime) {
            Ok(s) => s,
            Err(e) => {
                failures.push(format!("{name}: build failed: {e}"));
                continue;
            }
        };
        // Three packages per device, dealt round-robin: every device runs several, interleaved
        // with the other's, whatever the speeds.
        let report = match sample.run(Some(&pair), Some(common::round_robin(3)), None) {
            Ok(r) => r,
            Err(e) => {
                failures.push(format!("{name}: run failed: {e}"));
                continue;
            }
        };
        let verdict = sample.verify();
        let packages: Vec<usize> = report.devices.iter().map(|d| d.packages).collect();
        // Work-groups whose output was merged (a backed-up package ran twice, merged once).
        let groups: u64 = report.trace.iter().filter(|t| t.merged).map(|t| t.package.len).sum();
        println!("{name:<10} {}: packages {packages:?}, {verdict}", sample.describe());
        if !verdict.correct {
            failures.push(format!("{name}: {verdict}"));
        }
        if packages.len() != 2 || packages.iter().any(|&p| p < 2) {
            failures.push(format!(
                "{name}: packages per device {packages:?}, expected two devices with >= 2 each"
            ));
        }
        if groups != report.total_groups {
            failures
                .push(format!("{name}: {groups} of {} work-groups merged", report.total_groups));
        }
    }
    assert!(failures.is_empty(), "{} failure(s):\n{}", failures.len(), failures.join("\n"));
}
