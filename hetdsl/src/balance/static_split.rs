//! Static: one package per device, sized in proportion to given weights or to nominal speeds.
//! The forward order gives device 0 the first work-groups; the reverse order gives it the last
//! (which matters for kernels whose cost varies with the index).

use super::{check_setup, proportional_split, Balancer, Completion, Next, Package, Setup};
use crate::error::{Error, Result};

#[derive(Debug, Clone, Default)]
pub struct Static {
    weights: Option<Vec<f64>>,
    reverse: bool,
    planned: Vec<Option<Package>>,
    /// Packages of lost devices, handed to whoever asks next.
    orphans: Vec<Package>,
}

impl Static {
    /// Proportions from the devices' nominal GFLOP/s.
    pub fn nominal() -> Self {
        Self::default()
    }
    /// Proportions given per device (any positive scale).
    pub fn with_weights(weights: Vec<f64>) -> Self {
        Static { weights: Some(weights), ..Self::default() }
    }
    /// Lay the packages out from the last device to the first.
    pub fn reversed(mut self) -> Self {
        self.reverse = true;
        self
    }
}

impl Balancer for Static {
    fn name(&self) -> String {
        let order = if self.reverse { "-rev" } else { "" };
        match &self.weights {
            Some(w) => format!("static{order}({w:?})"),
            None => format!("static{order}"),
        }
    }

    fn start(&mut self, setup: &Setup) -> Result<()> {
        check_setup(setup)?;
        let n = setup.devices.len();
        let weights = match &self.weights {
            Some(w) if w.len() != n => {
                return Err(Error::BadBalancer(format!(
                    "static split has {} weights for {n} devices",
                    w.len()
                )))
            }
            Some(w)
                if w.iter().any(|x| !x.is_finite() || *x < 0.0)
                    || w.iter().all(|x| *x == 0.0)
                    || !w.iter().sum::<f64>().is_finite() =>
            {
                return Err(Error::BadBalancer(format!(
                    "static weights must be non-negative, not all zero, and sum to a finite \
                     number, got {w:?}"
                )))
            }
            Some(w) => w.clone(),
            None => setup.devices.iter().map(|d| d.nominal_gflops).collect(),
        };
        let sizes = proportional_split(setup.total_groups, &weights);
        let order: Vec<usize> =
            if self.reverse { (0..n).rev().collect() } else { (0..n).collect() };
        self.planned = vec![None; n];
        self.orphans.clear();
        let mut offset = 0;
        for i in order {
            if sizes[i] > 0 {
                self.planned[i] = Some(Package { offset, len: sizes[i] });
            }
            offset += sizes[i];
        }
        Ok(())
    }

    fn next(&mut self, device: usize, _now: f64) -> Next {
        match self.planned.get_mut(device).and_then(Option::take).or_else(|| self.orphans.pop()) {
            Some(p) => Next::Run(p),
            None => Next::Done,
        }
    }

    fn completed(&mut self, _done: &Completion) {}

    fn device_lost(&mut self, device: usize) {
        if let Some(p) = self.planned.get_mut(device).and_then(Option::take) {
            self.orphans.push(p);
        }
    }
}
