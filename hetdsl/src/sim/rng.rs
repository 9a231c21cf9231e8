//! A small seeded generator (SplitMix64) so that simulations and randomized tests are
//! reproducible from one number, without a dependency.

/// SplitMix64 (Steele, Lea, Flood 2014): 64-bit state, full period, good enough for workloads.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// A generator for one item of a family (a device, a package), independent of the order
    /// in which items are drawn.
    pub fn keyed(seed: u64, keys: &[u64]) -> Self {
        let mut g = SplitMix64(seed);
        for k in keys {
            g.0 ^= k.wrapping_mul(0xA24B_AED4_963E_E407);
            g.next_u64();
        }
        g
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in [lo, hi].
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo + 1)
    }

    /// Log-uniform in [lo, hi): spans orders of magnitude evenly.
    pub fn log_uniform(&mut self, lo: f64, hi: f64) -> f64 {
        (lo.ln() + self.unit() * (hi.ln() - lo.ln())).exp()
    }

    /// Approximately standard normal (sum of 12 uniforms − 6).
    pub fn normal(&mut self) -> f64 {
        (0..12).map(|_| self.unit()).sum::<f64>() - 6.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reproducible_and_in_range() {
        let a: Vec<u64> = (0..5)
            .map({
                let mut g = SplitMix64::new(7);
                move |_| g.next_u64()
            })
            .collect();
        let mut g = SplitMix64::new(7);
        assert!(a.iter().all(|x| *x == g.next_u64()));
        let mut g = SplitMix64::new(1);
        for _ in 0..1000 {
            let u = g.unit();
            assert!((0.0..1.0).contains(&u));
            assert!((3..=9).contains(&g.range(3, 9)));
        }
        assert_ne!(
            SplitMix64::keyed(1, &[0, 1]).next_u64(),
            SplitMix64::keyed(1, &[1, 0]).next_u64()
        );
    }
}
