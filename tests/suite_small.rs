//! CI: every sample's kernel at small size, co-executed on two PoCL devices
//! (`POCL_DEVICES="pthread basic"`), each device running at least two packages, and the output
//! checked against the sample's independent CPU reference with its tolerance rule.

use hetdsl::balance::{Balancer, Completion, Next, Package, Setup};
use hetdsl::Runtime;
use hetdsl_samples::samples::{self, Size};

/// Splits the work-groups into `per_device × devices` equal packages and deals them out like
/// cards: device j runs packages j, j + N, j + 2N, … So every device runs `per_device` packages
/// whatever the speeds, and every device's packages are interleaved with the others' (every
/// package boundary and global offset of the kernel gets exercised).
struct Interleaved {
    per_device: u64,
    queues: Vec<Vec<Package>>,
}

impl Balancer for Interleaved {
    fn name(&self) -> String {
        format!("interleaved({} per device)", self.per_device)
    }

    fn start(&mut self, setup: &Setup) -> hetdsl::Result<()> {
        let n = setup.devices.len() as u64;
        let count = (self.per_device * n).min(setup.total_groups);
        let mut queues = vec![Vec::new(); n as usize];
        let mut offset = 0;
        for k in 0..count {
            let end = setup.total_groups * (k + 1) / count;
            queues[(k % n) as usize].push(Package { offset, len: end - offset });
            offset = end;
        }
        // Pop from the back: keep each queue in reverse order.
        queues.iter_mut().for_each(|q| q.reverse());
        self.queues = queues;
        Ok(())
    }

    fn next(&mut self, device: usize, _now: f64) -> Next {
        self.queues.get_mut(device).and_then(Vec::pop).map_or(Next::Done, Next::Run)
    }

    fn completed(&mut self, _done: &Completion) {}

    fn device_lost(&mut self, device: usize) {
        let orphans = std::mem::take(&mut self.queues[device]);
        if let Some(q) = self.queues.iter_mut().find(|q| !q.is_empty()) {
            q.extend(orphans);
        }
    }
}

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
        let mut sample = samples::create(name, Size::Small).expect("every listed sample exists");
        let program = match samples::build(&runtime, sample.as_ref()) {
            Ok(p) => p,
            Err(e) => {
                failures.push(format!("{name}: build failed: {e}"));
                continue;
            }
        };
        let per_device = 3;
        let report = match sample.run(
            &program,
            Some(&pair),
            Box::new(Interleaved { per_device, queues: Vec::new() }),
        ) {
            Ok(r) => r,
            Err(e) => {
                failures.push(format!("{name}: run failed: {e}"));
                continue;
            }
        };
        let verdict = sample.verify();
        let packages: Vec<usize> = report.devices.iter().map(|d| d.packages).collect();
        let groups: u64 = report.devices.iter().map(|d| d.groups).sum();
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
            failures.push(format!(
                "{name}: devices ran {groups} of {} work-groups",
                report.total_groups
            ));
        }
    }
    assert!(failures.is_empty(), "{} failure(s):\n{}", failures.len(), failures.join("\n"));
}
