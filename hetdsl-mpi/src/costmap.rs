//! What the work costs along the range, as the ranks' completed ranges measured it. A kernel
//! whose cost changes along its range (Mandelbrot's rows through the set) shows a rank's speed
//! on the rows it ran, not on the rows left: measured on a cheap first range, a rank looked
//! five times as fast as it then ran in the set, and the end of the run was shared out by that.
//! Each completed range gives its rows' cost as the seconds it took times its rank's nominal
//! speed, per unit (ranks whose measured speeds follow their nominal ones, as alike nodes do),
//! and a range not measured yet is predicted from the measured ranges nearest to it, which the
//! ranges handed out in order along the range always are.

/// Measured cost per unit of the parts of the range that ranks completed.
#[derive(Debug, Clone, Default)]
pub struct CostMap {
    /// (offset, units, seconds × nominal GFLOP/s per unit), in completion order.
    spans: Vec<(u64, u64, f64)>,
}

impl CostMap {
    pub fn new() -> Self {
        Self::default()
    }

    /// A range of `len` units at `offset` took `seconds` on a rank of `nominal` GFLOP/s.
    pub fn add(&mut self, offset: u64, len: u64, seconds: f64, nominal: f64) {
        let cost = seconds * nominal / len.max(1) as f64;
        if len > 0 && cost.is_finite() && cost > 0.0 {
            self.spans.push((offset, len, cost));
        }
    }

    /// The predicted cost per unit of `len` units at `offset`: the mean over the measured
    /// spans nearest to it (those it overlaps, else those at the least distance from it, the
    /// neighbours on both sides alike). `None` before any measurement.
    pub fn cost(&self, offset: u64, len: u64) -> Option<f64> {
        let end = offset + len.max(1);
        // Units between a span and the range (0 where they overlap).
        let gap = |&(o, l, _): &(u64, u64, f64)| {
            if o + l <= offset {
                offset - (o + l)
            } else {
                o.saturating_sub(end)
            }
        };
        let nearest = self.spans.iter().map(gap).min()?;
        let (units, total) = self
            .spans
            .iter()
            .filter(|s| gap(s) == nearest)
            .fold((0.0, 0.0), |(u, t), &(_, l, c)| (u + l as f64, t + l as f64 * c));
        (units > 0.0).then(|| total / units)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_not_measured_take_the_cost_of_their_nearest_neighbours() {
        let mut m = CostMap::new();
        assert_eq!(m.cost(0, 10), None);
        // 100 units at 0 in 1 s on a rank of 10 GFLOP/s: 0.1 s·GFLOP/s per unit; 100 at 300
        // in 2 s on a rank of 20: 0.4.
        m.add(0, 100, 1.0, 10.0);
        m.add(300, 100, 2.0, 20.0);
        assert!((m.cost(0, 50).unwrap() - 0.1).abs() < 1e-12);
        assert!((m.cost(110, 10).unwrap() - 0.1).abs() < 1e-12);
        assert!((m.cost(250, 40).unwrap() - 0.4).abs() < 1e-12);
        // Midway, both neighbours count alike: a range between them, adjacent to both.
        assert!((m.cost(100, 200).unwrap() - 0.25).abs() < 1e-12);
        // Nothing measured is recorded from an empty range or a zero time.
        m.add(500, 0, 1.0, 10.0);
        m.add(500, 10, 0.0, 10.0);
        assert!((m.cost(600, 10).unwrap() - 0.4).abs() < 1e-12);
    }
}
