//! Kernel cost profiles: how much work each work-group index represents.
//!
//! A profile is tabulated at a fixed number of blocks over the index range and scaled so that
//! the whole range costs exactly G (the mean work-group costs 1). The cost of a package is read
//! from the cumulative table, interpolating linearly inside a block, so it is O(1) per package
//! whatever G is. Variation finer than a block is averaged away; blocks are small next to the
//! packages balancers make.

use super::rng::SplitMix64;

/// The shape of a kernel's cost over the work-group index.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum CostProfile {
    /// Every work-group costs the same (Binomial, Gaussian, NBody, Taylor; the Sigmoid paper's "regular").
    Uniform,
    /// A band of expensive rows (a Mandelbrot image with the set across its middle): cost
    /// `1 + (peak − 1)·exp(−((x − center)/width)²)` at relative index x.
    Band { center: f64, width: f64, peak: f64 },
    /// Cost rising linearly from `from` to `to` across the range (RAP: each package more work
    /// than the previous).
    Rising { from: f64, to: f64 },
    /// Independent log-normal cost per block (Aho's text, Ray's scene): `exp(spread · z)`.
    Random { spread: f64, seed: u64 },
    /// Cheap work with rare bursts `height` times as expensive, each burst `length` (a fraction
    /// of the range) long, starting in a block with probability `rate`.
    Bursts { rate: f64, height: f64, length: f64, seed: u64 },
    /// A cost map measured on a real run (see `replay.rs`): relative cost of equal slices of
    /// the range, in order. Read at the nearest slice for each block.
    Measured { slices: Vec<f64> },
}

impl CostProfile {
    /// A short name for tables.
    pub fn kind(&self) -> &'static str {
        match self {
            CostProfile::Uniform => "uniform",
            CostProfile::Band { .. } => "band",
            CostProfile::Rising { .. } => "rising",
            CostProfile::Random { .. } => "random",
            CostProfile::Bursts { .. } => "bursts",
            CostProfile::Measured { .. } => "measured",
        }
    }

    /// Relative cost of each of `blocks` equal blocks (any positive scale).
    fn block_costs(&self, blocks: usize) -> Vec<f64> {
        let mid = |b: usize| (b as f64 + 0.5) / blocks as f64;
        match self {
            CostProfile::Uniform => vec![1.0; blocks],
            CostProfile::Band { center, width, peak } => (0..blocks)
                .map(|b| 1.0 + (peak - 1.0) * (-((mid(b) - center) / width).powi(2)).exp())
                .collect(),
            CostProfile::Rising { from, to } => {
                (0..blocks).map(|b| from + (to - from) * mid(b)).collect()
            }
            CostProfile::Random { spread, seed } => {
                let mut g = SplitMix64::new(*seed);
                (0..blocks).map(|_| (spread * g.normal()).exp()).collect()
            }
            CostProfile::Bursts { rate, height, length, seed } => {
                let mut g = SplitMix64::new(*seed);
                let burst_blocks = ((length * blocks as f64).round() as usize).max(1);
                let mut left_in_burst = 0;
                (0..blocks)
                    .map(|_| {
                        if left_in_burst == 0 && g.unit() < *rate {
                            left_in_burst = burst_blocks;
                        }
                        if left_in_burst > 0 {
                            left_in_burst -= 1;
                            *height
                        } else {
                            1.0
                        }
                    })
                    .collect()
            }
            CostProfile::Measured { slices } if !slices.is_empty() => (0..blocks)
                .map(|b| slices[((mid(b) * slices.len() as f64) as usize).min(slices.len() - 1)])
                .map(|c| if c.is_finite() && c > 0.0 { c } else { f64::MIN_POSITIVE })
                .collect(),
            CostProfile::Measured { .. } => vec![1.0; blocks],
        }
    }
}

/// Bytes a work-group moves between the host and a device: its inputs written before the
/// kernel and its outputs read back after it. Memory-bound kernels (saxpy, a reduction, a
/// matrix-vector product) spend most of a package on these transfers, not on the kernel.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Traffic {
    pub bytes_in: f64,
    pub bytes_out: f64,
}

/// A profile tabulated for one NDRange of `total_groups` work-groups.
#[derive(Debug, Clone)]
pub struct CostTable {
    total_groups: u64,
    /// Cumulative cost at block boundaries; `cumulative[blocks] == total_groups`.
    cumulative: Vec<f64>,
    /// What each work-group moves (none unless [`CostTable::with_traffic`]).
    traffic: Traffic,
}

impl CostTable {
    /// Tabulate `profile` over `total_groups` work-groups in at most `resolution` blocks.
    pub fn new(profile: &CostProfile, total_groups: u64, resolution: usize) -> Self {
        let blocks = resolution.clamp(1, total_groups.max(1) as usize);
        let costs = profile.block_costs(blocks);
        let sum: f64 = costs.iter().sum();
        let scale = total_groups as f64 / sum;
        let mut cumulative = Vec::with_capacity(blocks + 1);
        let mut acc = 0.0;
        cumulative.push(0.0);
        for c in costs {
            acc += c * scale;
            cumulative.push(acc);
        }
        CostTable { total_groups, cumulative, traffic: Traffic::default() }
    }

    /// The same table for a kernel whose work-groups each move `traffic`.
    pub fn with_traffic(mut self, traffic: Traffic) -> Self {
        self.traffic = traffic;
        self
    }

    /// What each work-group moves between the host and a device.
    pub fn traffic(&self) -> Traffic {
        self.traffic
    }

    pub fn total_groups(&self) -> u64 {
        self.total_groups
    }

    /// Cost of work-groups `[0, g)`.
    fn before(&self, g: u64) -> f64 {
        let blocks = self.cumulative.len() - 1;
        let pos = g.min(self.total_groups) as f64 / self.total_groups as f64 * blocks as f64;
        let b = (pos.floor() as usize).min(blocks - 1);
        let frac = pos - b as f64;
        self.cumulative[b] + frac * (self.cumulative[b + 1] - self.cumulative[b])
    }

    /// Cost of work-groups `[offset, offset + len)`, in mean work-groups.
    pub fn cost(&self, offset: u64, len: u64) -> f64 {
        (self.before(offset + len) - self.before(offset)).max(0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_profile_costs_g_in_total_and_adds_up() {
        let profiles = [
            CostProfile::Uniform,
            CostProfile::Band { center: 0.5, width: 0.1, peak: 8.0 },
            CostProfile::Rising { from: 0.2, to: 1.8 },
            CostProfile::Random { spread: 0.5, seed: 3 },
            CostProfile::Bursts { rate: 0.05, height: 10.0, length: 0.02, seed: 3 },
            CostProfile::Measured { slices: vec![1.0, 30.0, 2.0] },
        ];
        for p in profiles {
            let t = CostTable::new(&p, 1000, 64);
            assert!((t.cost(0, 1000) - 1000.0).abs() < 1e-6, "{p:?}");
            let parts = t.cost(0, 123) + t.cost(123, 400) + t.cost(523, 477);
            assert!((parts - 1000.0).abs() < 1e-6, "{p:?}");
            assert!(t.cost(10, 5) > 0.0);
        }
    }

    #[test]
    fn shapes_are_what_they_claim() {
        let uniform = CostTable::new(&CostProfile::Uniform, 100, 100);
        assert!((uniform.cost(40, 10) - 10.0).abs() < 1e-9);
        let rising = CostTable::new(&CostProfile::Rising { from: 1.0, to: 3.0 }, 100, 100);
        assert!(rising.cost(90, 10) > 2.0 * rising.cost(0, 10));
        let band =
            CostTable::new(&CostProfile::Band { center: 0.5, width: 0.1, peak: 10.0 }, 100, 100);
        assert!(band.cost(45, 10) > 5.0 * band.cost(0, 10));
    }
}
