//! A small deterministic random number generator so that every sample's input is the same on
//! every machine and run, with no external data and no extra dependency: the simulator's
//! SplitMix64 (`hetdsl::sim::SplitMix64`), with the draws the samples need.

use hetdsl::sim::SplitMix64;

/// Sample inputs drawn from SplitMix64 (Steele, Lea, Flood 2014), trivially seedable.
#[derive(Debug, Clone)]
pub struct Rng(SplitMix64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(SplitMix64::new(seed))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Uniform in [0, 1), with 24 random bits (every value exactly representable in f32).
    pub fn unit_f32(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }

    /// Uniform in [lo, hi).
    pub fn range_f32(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * self.unit_f32()
    }

    /// Uniform in 0..n (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        // Multiply-shift: unbiased enough for test data and never divides by zero for n > 0.
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream_and_values_in_range() {
        let (mut a, mut b) = (Rng::new(7), Rng::new(7));
        for _ in 0..1000 {
            assert_eq!(a.next_u64(), b.next_u64());
            let u = a.unit_f32();
            assert!((0.0..1.0).contains(&u));
            assert!(a.below(10) < 10);
            b.unit_f32();
            b.below(10);
        }
        assert_ne!(Rng::new(1).next_u64(), Rng::new(2).next_u64());
    }

    #[test]
    fn matches_the_published_splitmix64_stream() {
        // The reference implementation's first outputs for seed 0, so the sample inputs stay
        // the ones every earlier run and CPU reference used.
        let mut r = Rng::new(0);
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next_u64(), 0x6E78_9E6A_A1B9_65F4);
        assert_eq!(r.next_u64(), 0x06C4_5D18_8009_454F);
    }
}
