//! Repeated, timed runs of a sample, shared by the suite and the inflection runner: the run
//! with the median ROI time of `reps`, its energy reading where asked, and the check of every
//! run against the CPU reference where the run covers the whole problem.

use std::ops::Range;

use crate::harness::energy::{EnergyReading, Sampler, DEFAULT_PERIOD};
use crate::harness::progress::Progress;
use hetdsl::{Balancer, Report};

use crate::samples::check::Verdict;
use crate::samples::Sample;

/// The median run of a [`repeat`].
pub struct Timed {
    pub report: Report,
    /// Every run checked: the first failing verdict, or the last one. `None` when not checked.
    pub verdict: Option<Verdict>,
    /// The energy of the median run's region of interest (the sampler wraps each run, not the
    /// checks, and is read over the ROI).
    pub energy: Option<EnergyReading>,
    /// Every run in the order it ran: its balancer (a repeated launch's form shows here) and
    /// ROI seconds, so that a median is read beside the runs it was taken from.
    pub runs: Vec<(String, f64)>,
}

/// `reps` runs of `sample` on `devices` over the balancing units `groups` (all if `None`) with
/// a fresh balancer from `balancer` each; checked against the reference when `verify` (only
/// meaningful for whole-problem runs: [`Sample::verify`] compares the whole output), each
/// wrapped in an energy [`Sampler`] when `energy`. Each repetition is shown on `progress` and
/// counted as one run done.
#[allow(clippy::too_many_arguments)]
pub fn repeat(
    sample: &mut dyn Sample,
    devices: &[usize],
    groups: Option<Range<u64>>,
    reps: usize,
    balancer: &dyn Fn() -> Result<Option<Box<dyn Balancer>>, String>,
    verify: bool,
    energy: bool,
    progress: &Progress,
) -> Result<Timed, String> {
    let mut runs = Vec::new();
    let mut verdict: Option<Verdict> = None;
    let reps = reps.max(1);
    for k in 0..reps {
        progress.rep(k, reps);
        let b = balancer()?;
        let sampler = energy.then(|| Sampler::start(DEFAULT_PERIOD));
        let result = sample.run(Some(devices), b, groups.clone());
        // The energy of the region of interest alone, as the times compared are: the set-up
        // around it (program build, buffers, the final read-back) varies from run to run by
        // seconds (the first run of a device set builds the program), and counting it made
        // the energy ratios of whichever balancer ran first several times too large.
        let window = result.as_ref().ok().and_then(|r| {
            let start = r.roi_start?;
            Some((start, start + std::time::Duration::from_secs_f64(r.roi_seconds)))
        });
        let reading = sampler.map(|s| match window {
            Some((from, to)) => s.stop_within(from, to),
            None => s.stop(),
        });
        let report = result.map_err(|e| e.to_string())?;
        if verify {
            let v = sample.verify();
            if !v.correct {
                progress.suspend(|| eprintln!("{}: {v}", sample.name()));
            }
            if verdict.as_ref().is_none_or(|old| old.correct) {
                verdict = Some(v);
            }
        }
        runs.push((report, reading));
        progress.advance(1);
    }
    let in_order = runs.iter().map(|(r, _)| (r.balancer.clone(), r.roi_seconds)).collect();
    runs.sort_by(|a, b| a.0.roi_seconds.total_cmp(&b.0.roi_seconds));
    let (report, energy) = runs.swap_remove(runs.len() / 2);
    Ok(Timed { report, verdict, energy, runs: in_order })
}

/// The inflection point (the EngineCL optimisation study's term) over points `(alone seconds,
/// co-executed seconds)` sorted by growing problem size: the index of the smallest point from which
/// co-execution is faster at that size and at every larger one; `None` if the largest point is not
/// faster.
pub fn inflection_point(points: &[(f64, f64)]) -> Option<usize> {
    let from = points.iter().rposition(|&(alone, coexec)| coexec >= alone).map_or(0, |i| i + 1);
    (from < points.len()).then_some(from)
}

#[cfg(test)]
mod tests {
    use super::inflection_point;

    #[test]
    fn inflection_is_where_coexecution_wins_for_good() {
        // Loses, wins, loses again, then wins from index 3 on: the point is 3, not 1.
        let p = [(1.0, 2.0), (2.0, 1.9), (4.0, 4.5), (8.0, 6.0), (16.0, 9.0)];
        assert_eq!(inflection_point(&p), Some(3));
        assert_eq!(inflection_point(&[(1.0, 0.5), (2.0, 1.0)]), Some(0));
        assert_eq!(inflection_point(&[(1.0, 0.5), (2.0, 2.5)]), None);
        // A tie is not a win.
        assert_eq!(inflection_point(&[(1.0, 1.0)]), None);
        assert_eq!(inflection_point(&[]), None);
    }
}
