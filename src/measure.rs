//! Repeated, timed runs of a sample, shared by the suite and the inflection runner: the run
//! with the median ROI time of `reps`, its energy reading where asked, and the check of every
//! run against the CPU reference where the run covers the whole problem.

use std::ops::Range;

use hetdsl::energy::{EnergyReading, Sampler, DEFAULT_PERIOD};
use hetdsl::{Balancer, Report};

use crate::check::Verdict;
use crate::samples::Sample;

/// The median run of a [`repeat`].
pub struct Timed {
    pub report: Report,
    /// Every run checked: the first failing verdict, or the last one. `None` when not checked.
    pub verdict: Option<Verdict>,
    /// The energy of the median run itself (the sampler wraps each run, not the checks).
    pub energy: Option<EnergyReading>,
}

/// `reps` runs of `sample` on `devices` over the balancing units `groups` (all if `None`) with
/// a fresh balancer from `balancer` each; checked against the reference when `verify` (only
/// meaningful for whole-problem runs: [`Sample::verify`] compares the whole output), each
/// wrapped in an energy [`Sampler`] when `energy`.
pub fn repeat(
    sample: &mut dyn Sample,
    devices: &[usize],
    groups: Option<Range<u64>>,
    reps: usize,
    balancer: &dyn Fn() -> Result<Box<dyn Balancer>, String>,
    verify: bool,
    energy: bool,
) -> Result<Timed, String> {
    let mut runs = Vec::new();
    let mut verdict: Option<Verdict> = None;
    for _ in 0..reps.max(1) {
        let b = balancer()?;
        let sampler = energy.then(|| Sampler::start(DEFAULT_PERIOD));
        let result = sample.run(Some(devices), Some(b), groups.clone());
        let reading = sampler.map(Sampler::stop);
        let report = result.map_err(|e| e.to_string())?;
        if verify {
            let v = sample.verify();
            if !v.correct {
                eprintln!("{}: {v}", sample.name());
            }
            if verdict.as_ref().is_none_or(|old| old.correct) {
                verdict = Some(v);
            }
        }
        runs.push((report, reading));
    }
    runs.sort_by(|a, b| a.0.roi_seconds.total_cmp(&b.0.roi_seconds));
    let (report, energy) = runs.swap_remove(runs.len() / 2);
    Ok(Timed { report, verdict, energy })
}
