//! What a program's one-shot runs learn from each other: the report of the last clean run of
//! each launch (kernel, range, work-group size, devices), so that a launch given no balancer and
//! run again over the same range starts from what the last one measured rather than from
//! nominal figures (`balance::relaunch`: one block per device for a regular kernel). A launch
//! with a balancer of its own uses that balancer; an irregular kernel keeps the default.

use std::ops::Range;
use std::sync::Mutex;

use super::plan::Plan;
use crate::balance::{self, Balancer};
use crate::report::Report;

/// Launches remembered per program: a program rarely runs more kernels at more sizes than this,
/// and the oldest is forgotten first.
const REMEMBERED: usize = 32;

/// A launch, as far as its split is concerned.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LaunchKey {
    kernel: String,
    global: Vec<usize>,
    local: Vec<usize>,
    devices: Vec<usize>,
    span: Range<u64>,
}

impl LaunchKey {
    pub(crate) fn of(plan: &Plan) -> LaunchKey {
        LaunchKey {
            kernel: plan.kernel.clone(),
            global: plan.geo.global.clone(),
            local: plan.geo.local.clone(),
            devices: plan.devices.iter().map(|d| d.info.index).collect(),
            span: plan.span.clone(),
        }
    }
}

/// What a program remembers of one launch.
#[derive(Debug)]
struct Remembered {
    key: LaunchKey,
    /// Its last clean report, if any.
    last: Option<Report>,
    /// A relaunch of it ended far from balance: its plans misjudge this launch (a device whose
    /// speed depends on the others', a cost that moves with the data), so it keeps the default
    /// balancer, rather than alternating between a bad plan and the default run it learns from.
    struck: bool,
    /// The ROI of its last relaunch run whole (one package per device) and in pieces: a
    /// relaunch tries each form once, then keeps the faster (see `balance::Replay::in_pieces`).
    roi: [Option<f64>; 2],
}

impl Remembered {
    /// Whether the next relaunch runs in pieces: the form not tried yet, else the faster.
    fn in_pieces(&self) -> bool {
        match self.roi {
            [None, _] => false,
            [Some(_), None] => true,
            [Some(whole), Some(pieces)] => pieces < whole,
        }
    }
}

/// The last clean report of each launch of a program.
#[derive(Debug, Default)]
pub(crate) struct LastRuns(Mutex<Vec<Remembered>>);

impl LastRuns {
    /// The balancer for a launch given none: the previous run's split where it qualifies, else
    /// the default.
    pub(crate) fn balancer_for(&self, key: &LaunchKey) -> Box<dyn Balancer> {
        let runs = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let remembered = runs.iter().find(|r| r.key == *key && !r.struck);
        let history = remembered
            .and_then(|r| r.last.as_ref())
            .and_then(balance::relaunch::one_block_per_device);
        match (history, remembered) {
            (Some(h), Some(r)) if r.in_pieces() => {
                Box::new(balance::Replay::planned(h).in_pieces())
            }
            (Some(h), _) => Box::new(balance::Replay::planned(h)),
            (None, _) => balance::default_balancer(),
        }
    }

    /// Remember `report` for `key` if every device kept its work (no fault); a run with a fault
    /// makes the next one start afresh.
    pub(crate) fn record(&self, key: LaunchKey, report: &Report) {
        let mut runs = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let at = runs.iter().position(|r| r.key == key);
        let mut entry = match at {
            Some(i) => runs.remove(i),
            None => Remembered { key, last: None, struck: false, roi: [None; 2] },
        };
        let relaunch = report.balancer.starts_with("relaunch");
        entry.struck |= relaunch && report.balance < balance::relaunch::SETTLED;
        let clean = report.faults.is_empty() && report.devices.iter().all(|d| d.fault.is_none());
        if relaunch && clean {
            entry.roi[usize::from(report.balancer == "relaunch-pieces")] = Some(report.roi_seconds);
        }
        entry.last = clean.then(|| report.clone());
        runs.push(entry);
        if runs.len() > REMEMBERED {
            runs.remove(0);
        }
    }

    /// Forget every launch.
    pub(crate) fn clear(&self) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{DeviceReport, PackageTrace, Transfer};
    use crate::work::{DeviceKind, Package};

    fn key() -> LaunchKey {
        LaunchKey {
            kernel: "k".into(),
            global: vec![2048],
            local: vec![1],
            devices: vec![0, 1],
            span: 0..2048,
        }
    }

    /// Two identical devices, each ran one package of 1024 groups in `seconds`.
    fn report(balancer: &str, seconds: [f64; 2]) -> Report {
        let devices = (0..2)
            .map(|index| DeviceReport {
                index,
                name: "G".into(),
                kind: DeviceKind::Gpu,
                packages: 1,
                groups: 1024,
                busy_seconds: seconds[index],
                finish_seconds: seconds[index],
                fault: None,
            })
            .collect();
        let trace = (0..2)
            .map(|d| PackageTrace {
                device: d,
                package: Package { offset: 1024 * d as u64, len: 1024 },
                host_start: 0.0,
                host_end: seconds[d],
                kernel_seconds: Some(seconds[d]),
                written: Transfer::default(),
                read: Transfer::default(),
                merged: true,
            })
            .collect();
        let balance = seconds[0].min(seconds[1]) / seconds[0].max(seconds[1]);
        Report { balancer: balancer.into(), balance, ..Report::fixture(2048, devices, trace) }
    }

    #[test]
    fn a_relaunch_far_from_balance_makes_the_launch_keep_the_default() {
        let runs = LastRuns::default();
        assert_eq!(runs.balancer_for(&key()).name(), "sigmoid", "nothing remembered");
        runs.record(key(), &report("sigmoid", [1.0, 1.0]));
        assert_eq!(runs.balancer_for(&key()).name(), "relaunch");
        // The plan ran 1 : 2; the next run is a default one, and so is every one after it,
        // even from a balanced default run.
        runs.record(key(), &report("relaunch", [1.0, 2.0]));
        assert_eq!(runs.balancer_for(&key()).name(), "sigmoid");
        runs.record(key(), &report("sigmoid", [1.0, 1.0]));
        assert_eq!(runs.balancer_for(&key()).name(), "sigmoid");
        runs.clear();
        runs.record(key(), &report("sigmoid", [1.0, 1.0]));
        assert_eq!(runs.balancer_for(&key()).name(), "relaunch", "forgotten");
    }

    #[test]
    fn a_relaunch_tries_whole_then_pieces_then_keeps_the_faster() {
        let runs = LastRuns::default();
        runs.record(key(), &report("sigmoid", [1.0, 1.0]));
        assert_eq!(runs.balancer_for(&key()).name(), "relaunch");
        let timed = |name: &str, roi: f64| Report { roi_seconds: roi, ..report(name, [1.0, 1.0]) };
        runs.record(key(), &timed("relaunch", 1.0));
        assert_eq!(runs.balancer_for(&key()).name(), "relaunch-pieces");
        runs.record(key(), &timed("relaunch-pieces", 0.9));
        assert_eq!(runs.balancer_for(&key()).name(), "relaunch-pieces");
        // Pieces got slower than the whole form's last run: back to whole.
        runs.record(key(), &timed("relaunch-pieces", 1.1));
        assert_eq!(runs.balancer_for(&key()).name(), "relaunch");
    }

    #[test]
    fn a_run_with_a_fault_leaves_nothing_to_plan_from() {
        let runs = LastRuns::default();
        let mut r = report("sigmoid", [1.0, 1.0]);
        r.devices[1].fault = Some("lost".into());
        runs.record(key(), &r);
        assert_eq!(runs.balancer_for(&key()).name(), "sigmoid");
    }
}
