//! Device speeds for the balancers that learn them at run time (Sigmoid).
//!
//! Before a device has finished a package its speed is only known as nominal GFLOP/s, while
//! measured speeds are work-groups per second. The two scales cannot be mixed in `S_j / S_T`, so
//! a device without a measurement is given its nominal speed times the ratio measured / nominal
//! of the devices that do have one (a guessed GFLOP/s and a measured rate are not in the same
//! units, so they never mix). Until the first measurement all speeds are nominal, which is all the
//! relative split of the first packages needs.

use std::collections::VecDeque;

/// Nominal speeds that can be used as weights: a missing or nonsensical figure (zero, negative,
/// NaN) becomes the mean of the sensible ones, or 1 when none is.
pub(crate) fn usable_nominal(nominal: &[f64]) -> Vec<f64> {
    let good: Vec<f64> = nominal.iter().copied().filter(|g| g.is_finite() && *g > 0.0).collect();
    let fill = if good.is_empty() { 1.0 } else { good.iter().sum::<f64>() / good.len() as f64 };
    nominal.iter().map(|g| if g.is_finite() && *g > 0.0 { *g } else { fill }).collect()
}

/// The last few measured speeds of every device, and the nominal figures to fall back on.
#[derive(Debug, Clone, Default)]
pub(crate) struct SpeedBook {
    nominal: Vec<f64>,
    /// (work-groups, seconds) of the last `window` packages of each device.
    history: Vec<VecDeque<(f64, f64)>>,
    window: usize,
    /// Plan with the recent packages' work over their time instead of their mean speed.
    harmonic: bool,
    /// (fastest, slowest) speed per device over the whole run.
    extremes: Vec<(f64, f64)>,
}

impl SpeedBook {
    /// `window`: how many recent packages a device's speed is averaged over.
    pub(crate) fn new(nominal: &[f64], window: usize) -> Self {
        SpeedBook {
            nominal: usable_nominal(nominal),
            history: vec![VecDeque::with_capacity(window); nominal.len()],
            window: window.max(1),
            extremes: vec![(0.0, f64::INFINITY); nominal.len()],
            harmonic: false,
        }
    }

    /// Plan with the harmonic mean of the window's speeds (their mean time per work-group)
    /// rather than their arithmetic mean. The arithmetic mean is the paper's; on a kernel whose
    /// cost varies a hundredfold (Mandelbrot's band) one short package on cheap work dominates
    /// it, and a package sized from it runs a hundred times longer than planned. The harmonic
    /// mean is dominated by the slow packages instead, so an overrun is the exception.
    pub(crate) fn harmonic(mut self) -> Self {
        self.harmonic = true;
        self
    }

    /// Record that `device` computed `groups` work-groups in `seconds`. A package with no usable
    /// duration teaches nothing and is ignored.
    pub(crate) fn record(&mut self, device: usize, groups: u64, seconds: f64) {
        let Some(h) = self.history.get_mut(device) else {
            return;
        };
        if !(seconds.is_finite() && seconds > 0.0) || groups == 0 {
            return;
        }
        if h.len() == self.window {
            h.pop_front();
        }
        let speed = groups as f64 / seconds;
        h.push_back((groups as f64, seconds));
        let (fastest, slowest) = &mut self.extremes[device];
        *fastest = fastest.max(speed);
        *slowest = slowest.min(speed);
    }

    /// How many packages the device's speed is averaged over now (at most the window), and the
    /// most work-groups one of them ran.
    pub(crate) fn recent(&self, device: usize) -> (usize, f64) {
        self.history
            .get(device)
            .map_or((0, 0.0), |h| (h.len(), h.iter().map(|(g, _)| *g).fold(0.0, f64::max)))
    }

    /// Mean and population standard deviation of the device's recent speeds, if it has any.
    pub(crate) fn measured(&self, device: usize) -> Option<(f64, f64)> {
        let h = self.history.get(device).filter(|h| !h.is_empty())?;
        let n = h.len() as f64;
        let speeds = h.iter().map(|(g, t)| g / t);
        let mean = speeds.clone().sum::<f64>() / n;
        let var = speeds.map(|s| (s - mean) * (s - mean)).sum::<f64>() / n;
        Some((mean, var.sqrt()))
    }

    /// The measured speed to plan with: the mean of [`measured`](Self::measured), or the
    /// harmonic mean when [`harmonic`](Self::harmonic).
    fn planning(&self, device: usize) -> Option<f64> {
        let (mean, _) = self.measured(device)?;
        if !self.harmonic {
            return Some(mean);
        }
        let h = &self.history[device];
        Some(h.len() as f64 / h.iter().map(|(g, t)| t / g).sum::<f64>())
    }

    /// How far apart the packages of one device have run so far: the largest ratio of fastest
    /// to slowest speed any device has shown in this run (1 for a perfectly regular kernel).
    pub(crate) fn variability(&self) -> f64 {
        self.extremes
            .iter()
            .filter(|(fastest, slowest)| *slowest > 0.0 && fastest.is_finite())
            .map(|(fastest, slowest)| fastest / slowest)
            .fold(1.0, f64::max)
    }

    /// The slowest this device has run in this run, if it has run.
    pub(crate) fn slowest(&self, device: usize) -> Option<f64> {
        self.extremes.get(device).map(|e| e.1).filter(|s| s.is_finite() && *s > 0.0)
    }

    /// The fastest this device has run in this run, if it has run.
    pub(crate) fn fastest(&self, device: usize) -> Option<f64> {
        self.extremes.get(device).map(|e| e.0).filter(|f| *f > 0.0)
    }

    /// The speed to plan with: measured if known, otherwise nominal put on the measured scale.
    pub(crate) fn speed(&self, device: usize) -> f64 {
        if let Some(speed) = self.planning(device) {
            return speed;
        }
        let (mut measured, mut nominal) = (0.0, 0.0);
        for d in 0..self.history.len() {
            if let Some(speed) = self.planning(d) {
                measured += speed;
                nominal += self.nominal[d];
            }
        }
        let scale = if nominal > 0.0 { measured / nominal } else { 1.0 };
        self.nominal[device] * scale
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unmeasured_devices_are_rescaled_to_the_measured_scale() {
        // Nominal 2:1. Device 0 measures 100 groups/s: device 1 is then assumed at 50 groups/s.
        let mut book = SpeedBook::new(&[2000.0, 1000.0], 3);
        assert_eq!(book.speed(1), 1000.0);
        book.record(0, 100, 1.0);
        assert_eq!(book.speed(0), 100.0);
        assert_eq!(book.speed(1), 50.0);
    }

    #[test]
    fn speed_is_the_mean_of_the_last_window_packages() {
        let mut book = SpeedBook::new(&[1.0], 3);
        for (groups, secs) in [(10, 1.0), (20, 1.0), (30, 1.0), (60, 1.0)] {
            book.record(0, groups, secs);
        }
        // The first package (10/s) has left the window: mean of 20, 30, 60.
        let (mean, sd) = book.measured(0).unwrap();
        assert!((mean - 110.0 / 3.0).abs() < 1e-9);
        let expect_sd = (((20.0 - mean) * (20.0 - mean)
            + (30.0 - mean) * (30.0 - mean)
            + (60.0 - mean) * (60.0 - mean))
            / 3.0_f64)
            .sqrt();
        assert!((sd - expect_sd).abs() < 1e-9);
    }

    #[test]
    fn harmonic_speed_is_the_harmonic_mean() {
        // A short package on cheap work (1000 groups in 1 ms) and a long one on costly work
        // (1000 groups in 1 s): the mean of speeds says ~500 000/s, the harmonic mean (here,
        // equal packages, the same as work over time) 2000 groups in 1.001 s.
        let mut paper = SpeedBook::new(&[1.0], 3);
        let mut weighted = SpeedBook::new(&[1.0], 3).harmonic();
        for book in [&mut paper, &mut weighted] {
            book.record(0, 1000, 1e-3);
            book.record(0, 1000, 1.0);
        }
        assert!((paper.speed(0) - 500_500.0).abs() < 1e-6);
        assert!((weighted.speed(0) - 2000.0 / 1.001).abs() < 1e-9);
        // The irregularity test still sees the paper's mean and spread.
        assert_eq!(paper.measured(0), weighted.measured(0));
    }

    #[test]
    fn variability_is_the_widest_ratio_of_the_run() {
        let mut book = SpeedBook::new(&[1.0, 1.0], 3);
        assert_eq!(book.variability(), 1.0);
        for (d, speed) in
            [(0, 10.0), (0, 20.0), (1, 5.0), (1, 30.0), (1, 15.0), (1, 15.0), (1, 15.0)]
        {
            book.record(d, speed as u64, 1.0);
        }
        // Device 1's 5 and 30 have left its 3-package window but still count.
        assert_eq!(book.variability(), 6.0);
        assert_eq!(book.fastest(1), Some(30.0));
    }

    #[test]
    fn useless_samples_and_nominals_are_ignored() {
        let mut book = SpeedBook::new(&[0.0, f64::NAN, 4.0], 3);
        book.record(0, 5, 0.0);
        book.record(0, 0, 1.0);
        assert_eq!(book.measured(0), None);
        assert_eq!(book.speed(0), 4.0);
        assert_eq!(book.speed(1), 4.0);
    }
}
