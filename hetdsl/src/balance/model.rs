//! Linear execution-time models and the min–max split over them.
//!
//! A device that becomes free `ready` seconds from now and needs `per_group` seconds per
//! work-group (plus `fixed` seconds per package) finishes `w` more work-groups at
//! `ready + fixed + w · per_group`. The min–max model paper splits work so that the latest finish,
//! `max_i T_i(w_i)`, is least; with increasing affine `T_i` that is the split where every
//! device that gets work finishes at the same instant E (water-filling). Sigmoid's run-end
//! guard uses the same E as its prediction of when the whole run ends.

use super::proportional_split;

/// `T(w) = ready + fixed + w · per_group`, seconds from now.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct LinearTime {
    pub(crate) ready: f64,
    pub(crate) fixed: f64,
    pub(crate) per_group: f64,
}

impl LinearTime {
    /// Seconds from now at which this device could start producing work-groups.
    fn origin(&self) -> f64 {
        self.ready + self.fixed
    }
    fn usable(&self) -> bool {
        self.per_group.is_finite() && self.per_group > 0.0 && self.origin().is_finite()
    }
}

/// The instant E (seconds from now) at which `work` work-groups spread over the devices finish
/// when every device that takes a share finishes at E. `None` entries are devices that take no
/// part; `None` overall when no device can take work.
pub(crate) fn common_finish(work: f64, models: &[Option<LinearTime>]) -> Option<f64> {
    let mut usable: Vec<LinearTime> =
        models.iter().flatten().copied().filter(LinearTime::usable).collect();
    if usable.is_empty() {
        return None;
    }
    usable.sort_by(|a, b| a.origin().total_cmp(&b.origin()));
    // Add devices in the order they can start; stop when E comes before the next one's origin.
    let (mut rate, mut weighted) = (0.0, 0.0);
    let mut finish = f64::INFINITY;
    for (i, m) in usable.iter().enumerate() {
        rate += 1.0 / m.per_group;
        weighted += m.origin() / m.per_group;
        finish = (work.max(0.0) + weighted) / rate;
        let next_joins = usable.get(i + 1).is_some_and(|next| next.origin() < finish);
        if !next_joins {
            break;
        }
    }
    Some(finish)
}

/// Whole work-groups per device (indexed like `models`) adding up to `work`, each device's share
/// ending as close as whole groups allow to the common finish. Devices that would finish after E
/// even with nothing get nothing.
pub(crate) fn min_max_split(work: u64, models: &[Option<LinearTime>]) -> Vec<u64> {
    let Some(finish) = common_finish(work as f64, models) else {
        return vec![0; models.len()];
    };
    let shares: Vec<f64> = models
        .iter()
        .map(|m| match m {
            Some(m) if m.usable() => ((finish - m.origin()) / m.per_group).max(0.0),
            _ => 0.0,
        })
        .collect();
    proportional_split(work, &shares)
}

/// Least-squares line through `(groups, seconds)` samples, as a model starting now. Falls back to
/// a line through the origin with the mean rate when the fit is not increasing (noise, or every
/// sample the same size).
pub(crate) fn fit_line(samples: &[(f64, f64)]) -> Option<LinearTime> {
    let n = samples.len() as f64;
    let total_groups: f64 = samples.iter().map(|s| s.0).sum();
    let total_secs: f64 = samples.iter().map(|s| s.1).sum();
    if samples.is_empty() || total_groups <= 0.0 || total_secs <= 0.0 {
        return None;
    }
    let (mx, my) = (total_groups / n, total_secs / n);
    let sxx: f64 = samples.iter().map(|s| (s.0 - mx) * (s.0 - mx)).sum();
    let sxy: f64 = samples.iter().map(|s| (s.0 - mx) * (s.1 - my)).sum();
    let through_origin =
        LinearTime { ready: 0.0, fixed: 0.0, per_group: total_secs / total_groups };
    if sxx <= 0.0 {
        return Some(through_origin);
    }
    let slope = sxy / sxx;
    let intercept = my - slope * mx;
    if !(slope.is_finite() && slope > 0.0 && intercept.is_finite()) {
        return Some(through_origin);
    }
    Some(LinearTime { ready: 0.0, fixed: intercept.max(0.0), per_group: slope })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate(per_group: f64) -> Option<LinearTime> {
        Some(LinearTime { ready: 0.0, fixed: 0.0, per_group })
    }

    #[test]
    fn equal_devices_share_equally() {
        assert_eq!(min_max_split(10, &[rate(1.0), rate(1.0)]), vec![5, 5]);
        let e = common_finish(10.0, &[rate(1.0), rate(1.0)]).unwrap();
        assert!((e - 5.0).abs() < 1e-12);
    }

    #[test]
    fn a_busy_device_gets_less_and_a_late_one_nothing() {
        // Device 0 free now at 1 s/group; device 1 busy for 4 s more at 1 s/group.
        // 10 groups: E = (10 + 4) / 2 = 7, shares 7 and 3.
        let busy = Some(LinearTime { ready: 4.0, fixed: 0.0, per_group: 1.0 });
        assert_eq!(min_max_split(10, &[rate(1.0), busy]), vec![7, 3]);
        // 2 groups: device 0 alone finishes at 2 < 4, so device 1 takes nothing.
        assert_eq!(min_max_split(2, &[rate(1.0), busy]), vec![2, 0]);
        assert_eq!(common_finish(2.0, &[rate(1.0), busy]), Some(2.0));
    }

    #[test]
    fn fixed_costs_and_missing_devices() {
        let slow_start = Some(LinearTime { ready: 0.0, fixed: 2.0, per_group: 0.5 });
        // E = (12 + 2/0.5) / (1 + 2) = 16/3; device 0: 16/3, device 1: (16/3 - 2)/0.5 = 20/3.
        let split = min_max_split(12, &[rate(1.0), slow_start, None]);
        assert_eq!(split.iter().sum::<u64>(), 12);
        assert_eq!(split[2], 0);
        assert!(split[0] == 5 || split[0] == 6, "{split:?}");
        assert_eq!(min_max_split(3, &[None, None]), vec![0, 0]);
    }

    #[test]
    fn line_fits_recover_exact_lines_and_reject_decreasing_ones() {
        let exact = fit_line(&[(10.0, 1.5), (20.0, 2.5), (40.0, 4.5)]).unwrap();
        assert!((exact.per_group - 0.1).abs() < 1e-12 && (exact.fixed - 0.5).abs() < 1e-12);
        let noisy = fit_line(&[(10.0, 2.0), (20.0, 1.0)]).unwrap();
        assert_eq!(noisy.fixed, 0.0);
        assert!((noisy.per_group - 0.1).abs() < 1e-12);
        assert_eq!(fit_line(&[]), None);
    }
}
