//! The min–max model (min–max model paper): fit a time function T_i(w) per device from sampled
//! runs, then choose the split that minimises max_i T_i(w_i) (for CPU + GPU: J(k; n) = max(c(k),
//! g(n − k))). The samples here are the run's own probe packages (the occupancy bound, twice and
//! four times it, plus any keep-busy packages); T_i is the least-squares line through their
//! host-side times, so its intercept carries the per-package overhead. The split also accounts for
//! packages still running, and is the exact N-device min–max point of `model.rs`.

use super::model::{fit_line, min_max_split, LinearTime};
use super::probe::{ProbeThenSplit, Sample, SplitRule, SplitView};

/// The models a split is computed from: `fit` chooses the samples a device's line is fitted to.
pub(crate) fn split_by_models(
    work: u64,
    view: &SplitView<'_>,
    fit: impl Fn(&[Sample]) -> Option<LinearTime>,
) -> Vec<u64> {
    let models: Vec<Option<LinearTime>> = (0..view.samples.len())
        .map(|d| {
            if !view.alive[d] {
                return None;
            }
            let mut model = fit(&view.samples[d])?;
            if let Some((groups, elapsed)) = view.running[d] {
                let whole = model.fixed + groups as f64 * model.per_group;
                model.ready = (whole - elapsed).max(0.0);
            }
            Some(model)
        })
        .collect();
    let split = min_max_split(work, &models);
    if split.iter().sum::<u64>() == work {
        split
    } else {
        // No device has a usable model: spread evenly over the live ones.
        let even: Vec<f64> = view.alive.iter().map(|&a| if a { 1.0 } else { 0.0 }).collect();
        super::proportional_split(work, &even)
    }
}

fn points(samples: &[Sample]) -> Vec<(f64, f64)> {
    samples.iter().map(|s| (s.groups as f64, s.host_seconds)).collect()
}

/// Probe sizes and the min–max split of [`MinMax`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MinMaxRule;

impl SplitRule for MinMaxRule {
    fn name(&self) -> String {
        "minmax".into()
    }

    fn probes(&self, min_groups: u64) -> Vec<u64> {
        vec![min_groups, min_groups.saturating_mul(2), min_groups.saturating_mul(4)]
    }

    fn split(&self, work: u64, view: &SplitView<'_>) -> Vec<u64> {
        split_by_models(work, view, |samples| fit_line(&points(samples)))
    }
}

/// Min–max model: probe, fit T_i(w) by least squares, split at the min–max point.
pub type MinMax = ProbeThenSplit<MinMaxRule>;

/// The two-point line of the sparse-grid paper through a device's first two samples.
pub(crate) fn two_point_fit(samples: &[Sample]) -> Option<LinearTime> {
    fit_line(&points(samples.get(..2)?))
}
