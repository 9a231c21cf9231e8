//! How the cost of a work-group changes along the range, for Sigmoid's guard (point 8 in
//! `sigmoid.rs`). Pure: completed packages in, a cost factor out.
//!
//! Measured speeds say what the work-groups already run cost. On a kernel whose cost rises
//! along the range (RAP's work-item loops grow with the index), the work left always costs more
//! than that, so every package is planned too large and the last ones end far apart. Packages are handed out from the front, so the trend is visible: time per
//! work-group against the package's position is a straight line there.
//!
//! The trend is fitted on devices of one nominal class at a time (identical GPUs run the same
//! region at the same cost), on packages of at least a fill (a partial fill costs more per
//! group for reasons unrelated to the position), and it is used only when it is clear: at
//! least [`MIN_POINTS`] packages, a rising line, and a fit with R² ≥ [`MIN_FIT`]. It only ever
//! slows a prediction down, by at most [`MAX_FACTOR`]: a falling or noisy cost is left to the
//! measured speeds, as before.

use std::collections::VecDeque;

use super::Package;

/// Packages of a class the line is fitted over (the most recent ones: a cost that rises and
/// then flattens is followed).
const WINDOW: usize = 8;
/// Fewest packages a line is fitted on: two always lie on a line.
const MIN_POINTS: usize = 3;
/// Least R² for the line to be believed. Independent random costs (Aho, Ray) give lines far
/// below it.
const MIN_FIT: f64 = 0.8;
/// The most a prediction is slowed down: beyond the measured region the line is extrapolated,
/// and an extrapolation is only trusted so far.
const MAX_FACTOR: f64 = 4.0;

/// A completed package as the fit sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Point {
    /// Middle of the package, as a fraction of the range.
    at: f64,
    /// Seconds per work-group.
    cost: f64,
}

/// Time per work-group against position, per class of devices.
#[derive(Debug, Clone, Default)]
pub(crate) struct CostTrend {
    total: f64,
    /// The class (index into `points`) of each device: devices of equal nominal speed share one.
    class_of: Vec<usize>,
    points: Vec<VecDeque<Point>>,
    /// Middles of each device's last `window` packages (any size): the region its planning
    /// speed was measured on.
    recent: Vec<VecDeque<f64>>,
    window: usize,
}

impl CostTrend {
    /// `nominal`: each device's nominal speed (equal figures make a class); `window`: how many
    /// packages a device's planning speed is taken over.
    pub(crate) fn new(nominal: &[f64], total_groups: u64, window: usize) -> Self {
        let mut classes: Vec<f64> = Vec::new();
        let class_of = nominal
            .iter()
            .map(|&g| match classes.iter().position(|&c| (c - g).abs() <= 1e-3 * c.abs()) {
                Some(i) => i,
                None => {
                    classes.push(g);
                    classes.len() - 1
                }
            })
            .collect();
        CostTrend {
            total: total_groups.max(1) as f64,
            class_of,
            points: vec![VecDeque::new(); classes.len()],
            recent: vec![VecDeque::new(); nominal.len()],
            window: window.max(1),
        }
    }

    /// `device` ran `package` in `seconds`; `full` when the package filled the device.
    pub(crate) fn record(&mut self, device: usize, package: Package, seconds: f64, full: bool) {
        let Some(&class) = self.class_of.get(device) else {
            return;
        };
        if !(seconds.is_finite() && seconds > 0.0) || package.len == 0 {
            return;
        }
        let at = (package.offset as f64 + package.len as f64 / 2.0) / self.total;
        let recent = &mut self.recent[device];
        if recent.len() == self.window {
            recent.pop_front();
        }
        recent.push_back(at);
        if full {
            let points = &mut self.points[class];
            if points.len() == WINDOW {
                points.pop_front();
            }
            points.push_back(Point { at, cost: seconds / package.len as f64 });
        }
    }

    /// The rising line (intercept, slope) of one class's packages, when the evidence is clear.
    fn class_line(points: &VecDeque<Point>) -> Option<(f64, f64)> {
        if points.len() < MIN_POINTS {
            return None;
        }
        let n = points.len() as f64;
        let mx = points.iter().map(|p| p.at).sum::<f64>() / n;
        let my = points.iter().map(|p| p.cost).sum::<f64>() / n;
        let sxx: f64 = points.iter().map(|p| (p.at - mx) * (p.at - mx)).sum();
        let syy: f64 = points.iter().map(|p| (p.cost - my) * (p.cost - my)).sum();
        let sxy: f64 = points.iter().map(|p| (p.at - mx) * (p.cost - my)).sum();
        if sxx <= 0.0 || syy <= 0.0 || sxy <= 0.0 {
            return None;
        }
        let fit = sxy * sxy / (sxx * syy);
        let slope = sxy / sxx;
        (fit >= MIN_FIT).then_some((my - slope * mx, slope))
    }

    /// The line `device` plans with: its own class's, else that of the class with the most
    /// packages. Only ratios of the line are used, and the cost's shape along the range belongs
    /// to the kernel: a CPU that has run two packages learns from the GPUs that the band ahead
    /// is costly.
    fn line(&self, device: usize) -> Option<(f64, f64)> {
        let own = *self.class_of.get(device)?;
        Self::class_line(&self.points[own]).or_else(|| {
            let busiest = self.points.iter().max_by_key(|p| p.len())?;
            Self::class_line(busiest)
        })
    }

    /// How many times more a work-group of `groups` (a range of work-group indices) is
    /// predicted to cost `device` than the work-groups its planning speed was measured on: 1
    /// without a clear rising trend, never below 1, at most [`MAX_FACTOR`].
    pub(crate) fn factor(&self, device: usize, groups: std::ops::Range<f64>) -> f64 {
        let (Some((a, b)), Some(recent)) = (self.line(device), self.recent.get(device)) else {
            return 1.0;
        };
        if recent.is_empty() || groups.end <= groups.start {
            return 1.0;
        }
        let measured_at = recent.iter().sum::<f64>() / recent.len() as f64;
        let ahead_at = (groups.start + groups.end) / 2.0 / self.total;
        let (measured, ahead) = (a + b * measured_at, a + b * ahead_at);
        if measured <= 0.0 || ahead <= 0.0 {
            return 1.0;
        }
        (ahead / measured).clamp(1.0, MAX_FACTOR)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn package(offset: u64, len: u64) -> Package {
        Package { offset, len }
    }

    #[test]
    fn a_rising_line_predicts_the_cost_ahead() {
        // Two identical GPUs on 1000 groups, cost 1 + 9x per group (x the position): probes of
        // 100 at 0 and 100, then a package of 200 at 200 on device 0.
        let cost = |p: Package| {
            let mid = (p.offset as f64 + p.len as f64 / 2.0) / 1000.0;
            (1.0 + 9.0 * mid) * p.len as f64
        };
        let mut t = CostTrend::new(&[5.0, 5.0], 1000, 3);
        for (d, p) in [(0, package(0, 100)), (1, package(100, 100)), (0, package(200, 200))] {
            t.record(d, p, cost(p), true);
        }
        // Device 0's speed was measured around 0.05 and 0.3 (mean 0.175: cost 2.575); work at
        // 0.7..0.9 costs 1 + 9·0.8 = 8.2, 3.18 times as much.
        let f = t.factor(0, 700.0..900.0);
        assert!((f - 8.2 / 2.575).abs() < 1e-9, "{f}");
        // Device 1, measured around 0.15 (cost 2.35), sees the same line.
        let f = t.factor(1, 700.0..900.0);
        assert!((f - 8.2 / 2.35).abs() < 1e-9, "{f}");
        // Far ahead, the extrapolation is capped.
        let mut t2 = t.clone();
        t2.total = 10_000.0;
        assert!(t2.factor(0, 9000.0..10_000.0) <= MAX_FACTOR);
        // Work behind the measured region never speeds the prediction up.
        assert_eq!(t.factor(0, 0.0..100.0), 1.0);
    }

    #[test]
    fn unclear_evidence_leaves_speeds_alone() {
        let mut t = CostTrend::new(&[5.0, 5.0, 1.0], 1000, 3);
        // Two points lie on any line.
        t.record(0, package(0, 100), 1.0, true);
        t.record(1, package(100, 100), 2.0, true);
        assert_eq!(t.factor(0, 800.0..900.0), 1.0);
        // A falling cost is left to the measured speeds.
        t.record(0, package(200, 100), 0.5, true);
        assert_eq!(t.factor(0, 800.0..900.0), 1.0);
        // Noise: a zig-zag has a poor fit.
        let mut z = CostTrend::new(&[5.0], 1000, 3);
        for (i, secs) in [1.0, 3.0, 1.0, 3.2, 1.1, 3.0].into_iter().enumerate() {
            z.record(0, package(100 * i as u64, 100), secs, true);
        }
        assert_eq!(z.factor(0, 800.0..900.0), 1.0);
        // Another class (device 1) and partial fills do not join the line.
        let mut c = CostTrend::new(&[5.0, 1.0], 1000, 3);
        c.record(0, package(0, 100), 1.0, true);
        c.record(1, package(100, 100), 2.0, true);
        c.record(0, package(200, 100), 3.0, false);
        c.record(1, package(300, 100), 4.0, true);
        assert_eq!(c.factor(0, 800.0..900.0), 1.0);
        assert_eq!(c.factor(1, 800.0..900.0), 1.0);
    }

    #[test]
    fn a_class_without_a_line_borrows_the_busiest_class_s() {
        // Two GPUs show cost 1 + 9x; a CPU 50 times slower has run one package at 0.05.
        let mut t = CostTrend::new(&[5.0, 5.0, 0.1], 1000, 3);
        for (d, offset) in [(0, 100), (1, 200), (0, 300)] {
            let mid = (offset as f64 + 50.0) / 1000.0;
            t.record(d, package(offset, 100), (1.0 + 9.0 * mid) * 100.0, true);
        }
        t.record(2, package(0, 100), 50.0 * (1.0 + 9.0 * 0.05) * 100.0, true);
        let f = t.factor(2, 300.0..400.0);
        assert!((f - (1.0 + 9.0 * 0.35) / (1.0 + 9.0 * 0.05)).abs() < 1e-9, "{f}");
    }
}
