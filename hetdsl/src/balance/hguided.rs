//! HGuided (EngineCL optimisation study): guided self-scheduling weighted by device power.
//! Device i gets
//!
//! ```text
//! size_i = ⌊ Gr · P_i / (k_i · N · Σ_j P_j) ⌋,   never below m_i, never above Gr
//! ```
//!
//! with Gr the work-groups left, P the devices' computing powers (nominal GFLOP/s unless given),
//! k_i a constant and m_i a minimum package in work-groups (the paper's multiplier of the local
//! work size). The default form ("DefHG" of the Sigmoid paper) uses k = 2 and the occupancy bound
//! as the minimum; the tuned form takes a (k_i, m_i) pair per device.

use super::speeds::usable_nominal;
use super::{check_setup, Balancer, Completion, DeviceKind, Next, Remaining, Setup};
use crate::error::{Error, Result};

/// A value for every device, or one list indexed like the devices.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum PerDevice<T> {
    All(T),
    Each(Vec<T>),
}

impl<T: Clone> PerDevice<T> {
    /// One value per device, or an error naming `what` when the list has the wrong length.
    pub fn expand(&self, devices: usize, what: &str) -> Result<Vec<T>> {
        match self {
            PerDevice::All(v) => Ok(vec![v.clone(); devices]),
            PerDevice::Each(list) if list.len() == devices => Ok(list.clone()),
            PerDevice::Each(list) => Err(Error::BadBalancer(format!(
                "{what} has {} values for {devices} devices",
                list.len()
            ))),
        }
    }
}

/// Where HGuided's (k_i, m_i) pairs come from.
#[derive(Debug, Clone, PartialEq)]
enum Tuning {
    /// The same k for all; minimum `Some(m)` work-groups, or each device's occupancy bound.
    Uniform { k: f64, min_groups: Option<u64> },
    /// Per-device pairs; `None` takes the EngineCL optimisation study's best values by device kind.
    PerDevice { k: Option<PerDevice<f64>>, min_groups: Option<PerDevice<u64>> },
}

/// The EngineCL optimisation study's best pairs: CPU (k 3.5, m 1), integrated GPU (1.5, 15),
/// discrete GPU (1, 30). A device kind does not tell integrated from discrete GPUs, so GPUs and
/// accelerators take the discrete values.
fn tuned_pair(kind: DeviceKind) -> (f64, u64) {
    match kind {
        DeviceKind::Cpu => (3.5, 1),
        DeviceKind::Gpu | DeviceKind::Accelerator | DeviceKind::Other => (1.0, 30),
    }
}

#[derive(Debug, Clone)]
pub struct HGuided {
    tuning: Tuning,
    k: Vec<f64>,
    min_groups: Vec<u64>,
    power: Vec<f64>,
    alive: Vec<bool>,
    left: Remaining,
}

impl Default for HGuided {
    /// DefHG: k = 2, minimum = occupancy bound, powers = nominal GFLOP/s.
    fn default() -> Self {
        Self::from_tuning(Tuning::Uniform { k: 2.0, min_groups: None })
    }
}

impl HGuided {
    fn from_tuning(tuning: Tuning) -> Self {
        HGuided {
            tuning,
            k: Vec::new(),
            min_groups: Vec::new(),
            power: Vec::new(),
            alive: Vec::new(),
            left: Remaining::default(),
        }
    }
    /// One k for every device and a minimum package of `min_groups` work-groups (`None`: each
    /// device's occupancy bound).
    pub fn uniform(k: f64, min_groups: Option<u64>) -> Self {
        Self::from_tuning(Tuning::Uniform { k, min_groups })
    }
    /// Per-device (k_i, m_i); a `None` side takes the EngineCL optimisation study's values by
    /// device kind.
    pub fn tuned(k: Option<PerDevice<f64>>, min_groups: Option<PerDevice<u64>>) -> Self {
        Self::from_tuning(Tuning::PerDevice { k, min_groups })
    }
}

impl HGuided {
    /// The live devices' count and total power (N, ΣP).
    fn live_power(&self) -> (usize, f64) {
        let live = (0..self.alive.len()).filter(|&d| self.alive[d]);
        live.fold((0, 0.0), |(n, p), d| (n + 1, p + self.power[d]))
    }

    /// The next package's size for a live `device`: Gr·P_j / (k_j·N·ΣP), at least m_j.
    fn size(&self, device: usize) -> Option<u64> {
        if !self.alive.get(device).copied().unwrap_or(false) {
            return None;
        }
        let (live, total_power) = self.live_power();
        let gr = self.left.left() as f64;
        let size = gr * self.power[device] / (self.k[device] * live as f64 * total_power);
        Some((size.floor() as u64).max(self.min_groups[device]))
    }
}

impl Balancer for HGuided {
    fn name(&self) -> String {
        match &self.tuning {
            Tuning::Uniform { k, min_groups: Some(m) } => format!("hguided(k={k},m={m})"),
            Tuning::Uniform { k, min_groups: None } => format!("hguided(k={k})"),
            Tuning::PerDevice { .. } => "hguided-tuned".into(),
        }
    }

    fn start(&mut self, setup: &Setup) -> Result<()> {
        check_setup(setup)?;
        let n = setup.devices.len();
        let (k, min_groups) = match &self.tuning {
            Tuning::Uniform { k, min_groups } => (
                vec![*k; n],
                setup.devices.iter().map(|d| min_groups.unwrap_or(d.min_groups)).collect(),
            ),
            Tuning::PerDevice { k, min_groups } => {
                let defaults: Vec<(f64, u64)> =
                    setup.devices.iter().map(|d| tuned_pair(d.kind)).collect();
                let k = match k {
                    Some(k) => k.expand(n, "hguided k")?,
                    None => defaults.iter().map(|p| p.0).collect(),
                };
                let m = match min_groups {
                    Some(m) => m.expand(n, "hguided m")?,
                    None => defaults.iter().map(|p| p.1).collect(),
                };
                (k, m)
            }
        };
        if let Some(bad) = k.iter().find(|k| !(k.is_finite() && **k > 0.0)) {
            return Err(Error::BadBalancer(format!("hguided k must be positive, got {bad}")));
        }
        self.k = k;
        self.min_groups = min_groups.into_iter().map(|m| m.max(1)).collect();
        self.power =
            usable_nominal(&setup.devices.iter().map(|d| d.nominal_gflops).collect::<Vec<_>>());
        self.alive = vec![true; n];
        self.left = Remaining::new(setup.total_groups);
        Ok(())
    }

    fn next(&mut self, device: usize, _now: f64) -> Next {
        match self.size(device) {
            Some(len) => self.left.take(len).map_or(Next::Done, Next::Run),
            None => Next::Done,
        }
    }

    /// Queues a package only while the work left after it would keep every device busy for
    /// twice as long as it keeps this one (by nominal power): near the end, a package queued
    /// on one device is work another, idle sooner, could have shared.
    fn next_ahead(&mut self, device: usize, now: f64) -> Next {
        let Some(len) = self.size(device) else { return Next::Wait };
        let (_, total_power) = self.live_power();
        let after = self.left.left().saturating_sub(len) as f64;
        if after / total_power >= 2.0 * len as f64 / self.power[device] {
            self.next(device, now)
        } else {
            Next::Wait
        }
    }

    fn completed(&mut self, _done: &Completion) {}

    fn device_lost(&mut self, device: usize) {
        if let Some(a) = self.alive.get_mut(device) {
            *a = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{DeviceProfile, Package};
    use super::*;

    fn setup(groups: u64, gflops: &[f64]) -> Setup {
        Setup {
            total_groups: groups,
            devices: gflops
                .iter()
                .map(|&g| DeviceProfile { kind: DeviceKind::Gpu, nominal_gflops: g, min_groups: 4 })
                .collect(),
        }
    }

    #[test]
    fn sizes_follow_the_seed_001_formula() {
        // G = 1200, powers 1:2, k = 2, N = 2: device 1 gets ⌊1200·2/(2·2·3)⌋ = 200, then device 0
        // ⌊1000·1/(2·2·3)⌋ = 83.
        let mut h = HGuided::default();
        h.start(&setup(1200, &[1.0, 2.0])).unwrap();
        assert_eq!(h.next(1, 0.0), Next::Run(Package { offset: 0, len: 200 }));
        assert_eq!(h.next(0, 0.0), Next::Run(Package { offset: 200, len: 83 }));
    }

    #[test]
    fn minimum_package_and_tuned_lists() {
        let mut h = HGuided::uniform(2.0, Some(50));
        h.start(&setup(100, &[1.0, 1.0])).unwrap();
        // ⌊100/(2·2·2)⌋ = 12 is below m = 50.
        assert_eq!(h.next(0, 0.0), Next::Run(Package { offset: 0, len: 50 }));
        let mut t = HGuided::tuned(Some(PerDevice::Each(vec![1.0])), None);
        assert!(t.start(&setup(100, &[1.0, 1.0])).is_err());
        let mut t = HGuided::tuned(Some(PerDevice::Each(vec![1.0, 4.0])), Some(PerDevice::All(1)));
        t.start(&setup(800, &[1.0, 1.0])).unwrap();
        // k_0 = 1: ⌊800/(1·2·2)⌋ = 200; k_1 = 4: ⌊600/(4·2·2)⌋ = 37.
        assert_eq!(t.next(0, 0.0), Next::Run(Package { offset: 0, len: 200 }));
        assert_eq!(t.next(1, 0.0), Next::Run(Package { offset: 200, len: 37 }));
    }
}
