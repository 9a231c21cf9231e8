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

/// The last clean report of each launch of a program.
#[derive(Debug, Default)]
pub(crate) struct LastRuns(Mutex<Vec<(LaunchKey, Report)>>);

impl LastRuns {
    /// The balancer for a launch given none: the previous run's split where it qualifies, else
    /// the default.
    pub(crate) fn balancer_for(&self, key: &LaunchKey) -> Box<dyn Balancer> {
        let runs = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let history = runs
            .iter()
            .find(|(k, _)| k == key)
            .and_then(|(_, report)| balance::relaunch::one_block_per_device(report));
        match history {
            Some(h) => Box::new(balance::Replay::planned(h)),
            None => balance::default_balancer(),
        }
    }

    /// Remember `report` for `key` if every device kept its work (no fault); a run with a fault
    /// makes the next one start afresh.
    pub(crate) fn record(&self, key: LaunchKey, report: &Report) {
        let mut runs = self.0.lock().unwrap_or_else(|e| e.into_inner());
        runs.retain(|(k, _)| *k != key);
        if report.faults.is_empty() && report.devices.iter().all(|d| d.fault.is_none()) {
            runs.push((key, report.clone()));
            if runs.len() > REMEMBERED {
                runs.remove(0);
            }
        }
    }

    /// Forget every launch.
    pub(crate) fn clear(&self) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }
}
