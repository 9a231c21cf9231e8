//! Adaptive (Boyer et al., as extended to N devices in the Sigmoid paper, §4.1): small probe
//! packages per device, growing, then one split of all remaining work in proportion to the
//! throughput the probes measured. The Sigmoid paper found the authors' first probe too big for the
//! slowest device and used a smaller one; here the first probe is the device's occupancy bound (the
//! smallest package that still fills it) and the second twice that.

use super::probe::{ProbeThenSplit, SplitRule, SplitView};
use super::proportional_split;

/// Probe sizes and the proportional split of [`Adaptive`].
#[derive(Debug, Clone, PartialEq)]
pub struct AdaptiveRule {
    /// Probe packages per device before the split.
    pub probes: usize,
    /// Each probe is this many times the previous one.
    pub growth: u64,
}

impl Default for AdaptiveRule {
    fn default() -> Self {
        AdaptiveRule { probes: 2, growth: 2 }
    }
}

impl SplitRule for AdaptiveRule {
    fn name(&self) -> String {
        "adaptive".into()
    }

    fn probes(&self, min_groups: u64) -> Vec<u64> {
        std::iter::successors(Some(min_groups), |s| Some(s.saturating_mul(self.growth)))
            .take(self.probes)
            .collect()
    }

    fn split(&self, work: u64, view: &SplitView<'_>) -> Vec<u64> {
        let throughput: Vec<f64> = view
            .samples
            .iter()
            .zip(view.alive)
            .map(|(samples, &alive)| {
                let groups: u64 = samples.iter().map(|s| s.groups).sum();
                let seconds: f64 = samples.iter().map(|s| s.kernel_seconds).sum();
                if alive && seconds > 0.0 {
                    groups as f64 / seconds
                } else {
                    0.0
                }
            })
            .collect();
        if throughput.iter().all(|t| *t == 0.0) {
            // No usable timing at all: split evenly over the live devices.
            let even: Vec<f64> = view.alive.iter().map(|&a| if a { 1.0 } else { 0.0 }).collect();
            return proportional_split(work, &even);
        }
        proportional_split(work, &throughput)
    }
}

/// Adaptive: probe, then one proportional split.
pub type Adaptive = ProbeThenSplit<AdaptiveRule>;
