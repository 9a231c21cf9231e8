//! Binomial option pricing (AMD APP SDK `BinomialOption`): European calls on a 254-step
//! Cox–Ross–Rubinstein tree, four options per work-group of 255 work-items; output 1:255.

use hetdsl::{Launch, Program, Runtime};

use super::check::{all_written, par_all_close, Verdict};
use super::rng::Rng;
use super::{Sample, Size};

/// Tree depth; the work-group has `STEPS + 1` work-items, and the fold needs an even depth.
pub const STEPS: usize = 254;
pub const RISK_FREE: f64 = 0.02;
pub const VOLATILITY: f64 = 0.30;

hetdsl::kernel! {
    /// Four options per work-group of STEPS + 1 = 255 work-items: one float4 in and one out per
    /// work-group (pattern 1:255), and the two levels of the tree in local memory.
    #[kernel(file = "kernels/binomial.cl", local = 255)]
    pub struct BinomialKernel {
        fn binomial_options(
            steps: i32,
            #[input(1:255)] rand_in: &[[f32; 4]],
            #[output(1:255)] price_out: &mut [[f32; 4]],
            #[local] value_a: [[f32; 4]; 255],
            // Written only at leaf < level <= STEPS = 254, one less than the work-group.
            #[local(allow_smaller)] value_b: [[f32; 4]; 254],
        );
    }
}

pub struct Binomial {
    kernel: BinomialKernel,
    /// One uniform number per option, four options per work-group (float4).
    random: Vec<[f32; 4]>,
    prices: Vec<[f32; 4]>,
}

/// An option's (spot, strike, years to expiry), interpolated from one uniform number as in
/// the SDK sample.
pub fn option_parameters(r: f64) -> (f64, f64, f64) {
    (5.0 * (1.0 - r) + 30.0 * r, 1.0 * (1.0 - r) + 100.0 * r, 0.25 * (1.0 - r) + 10.0 * r)
}

/// CPU reference: the call's price on a `steps`-step CRR tree, in double precision.
pub fn reference_price(r: f32, steps: usize) -> f64 {
    let (spot, strike, years) = option_parameters(r as f64);
    let dt = years / steps as f64;
    let vol_sqrt_dt = VOLATILITY * dt.sqrt();
    let growth = (RISK_FREE * dt).exp();
    let (up, down) = (vol_sqrt_dt.exp(), (-vol_sqrt_dt).exp());
    let p_up = (growth - down) / (up - down);
    let (p_up_disc, p_down_disc) = (p_up / growth, (1.0 - p_up) / growth);
    let mut value: Vec<f64> = (0..=steps)
        .map(|k| (spot * (vol_sqrt_dt * (2.0 * k as f64 - steps as f64)).exp() - strike).max(0.0))
        .collect();
    for level in (1..=steps).rev() {
        for k in 0..level {
            value[k] = p_up_disc * value[k + 1] + p_down_disc * value[k];
        }
    }
    value[0]
}

/// The same tree's price in closed form, without folding it: the discounted expectation of the
/// payoff over the binomial distribution of up-moves (Cox, Ross & Rubinstein 1979),
/// e^(-rT) Σ_k C(N, k) p^k (1 − p)^(N − k) max(S u^(2k − N) − X, 0). O(steps) per option
/// instead of O(steps²), so every option can be checked, by an algorithm the kernel does not use.
pub fn closed_form_price(r: f32, steps: usize) -> f64 {
    let (spot, strike, years) = option_parameters(r as f64);
    let dt = years / steps as f64;
    let vol_sqrt_dt = VOLATILITY * dt.sqrt();
    let growth = (RISK_FREE * dt).exp();
    let (up, down) = (vol_sqrt_dt.exp(), (-vol_sqrt_dt).exp());
    let p = (growth - down) / (up - down);
    // From k = steps down, while the call is in the money: P(k) from P(k + 1) by the ratio of
    // consecutive binomial probabilities, the leaf price by dividing by u².
    let (mut probability, mut leaf, mut total) =
        (p.powi(steps as i32), spot * up.powi(steps as i32), 0.0);
    let step_down = (-2.0 * vol_sqrt_dt).exp();
    for k in (0..=steps).rev() {
        if leaf <= strike {
            break;
        }
        total += probability * (leaf - strike);
        probability *= k as f64 / (steps - k + 1) as f64 * (1.0 - p) / p;
        leaf *= step_down;
    }
    total * (-RISK_FREE * years).exp()
}

/// Every option of `prices` (four per float4, drawn from `random`) against the closed form. The
/// kernel folds 254 levels in f32 (~1e-5 relative) with exp/sqrt ulps that differ between
/// devices: within 1e-3 of max(1, |price|). Prices range over 0.1–70 and move by far more than
/// that across the draws, so a zero, a stale or another option's price fails it (the tests).
pub fn check(random: &[[f32; 4]], prices: &[[f32; 4]]) -> Verdict {
    let n = random.len() * 4;
    let values = par_all_close("prices vs closed form", n.min(prices.len() * 4), |k| {
        let want = closed_form_price(random[k / 4][k % 4], STEPS);
        (prices[k / 4][k % 4] as f64, want, 1e-3 * want.abs().max(1.0))
    });
    let whole =
        Verdict::new(prices.len() * 4 == n, n, format!("{} of {n} prices", prices.len() * 4));
    values.and(whole).and(all_written("prices", prices, |p| p.iter().any(|v| v.is_nan())))
}

impl Binomial {
    pub fn new(size: Size, runtime: &Runtime) -> hetdsl::Result<Self> {
        let groups = match size {
            Size::Small => 256,
            // 8 Mi work-groups of 255 keep every global id below 2^31: NVIDIA's OpenCL faulted
            // (out-of-range address) in launches whose offset + size lay between 2^31 and 2^32;
            // the cost per work-item is fixed by the paper's 254 steps, so this size runs
            // shorter than the others (docs/RESULTS.md).
            Size::Paper => 8 << 20,
        };
        let mut rng = Rng::new(0xB1_0001);
        let random = (0..groups)
            .map(|_| [rng.unit_f32(), rng.unit_f32(), rng.unit_f32(), rng.unit_f32()])
            .collect();
        let kernel = BinomialKernel::new(runtime)?;
        Ok(Binomial { kernel, random, prices: vec![[0.0; 4]; groups] })
    }

    /// The uniform numbers the options are derived from (four options per float4).
    pub fn random(&self) -> &[[f32; 4]] {
        &self.random
    }

    /// Option prices of the last run, in option order.
    pub fn prices(&self) -> &[[f32; 4]] {
        &self.prices
    }
}

impl Sample for Binomial {
    fn name(&self) -> &str {
        "binomial"
    }

    fn describe(&self) -> String {
        format!("{} options, {STEPS} steps, lws {}", self.random.len() * 4, STEPS + 1)
    }

    fn program(&self) -> &Program {
        self.kernel.program()
    }

    fn launch(&mut self) -> hetdsl::Result<Launch<'_>> {
        self.prices.fill([f32::NAN; 4]);
        let items = self.random.len() * (STEPS + 1);
        self.kernel.launch(items, STEPS as i32, &self.random, &mut self.prices)
    }

    fn verify(&mut self) -> Verdict {
        check(&self.random, &self.prices)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Standard normal CDF via erfc (Abramowitz & Stegun 7.1.26, |error| < 1.5e-7).
    fn normal_cdf(x: f64) -> f64 {
        let z = x.abs() / std::f64::consts::SQRT_2;
        let t = 1.0 / (1.0 + 0.327_591_1 * z);
        let poly = t
            * (0.254_829_592
                + t * (-0.284_496_736
                    + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
        let erfc = poly * (-z * z).exp();
        if x >= 0.0 {
            1.0 - 0.5 * erfc
        } else {
            0.5 * erfc
        }
    }

    /// The Black–Scholes price the tree converges to.
    fn black_scholes_call(spot: f64, strike: f64, years: f64) -> f64 {
        let sd = VOLATILITY * years.sqrt();
        let d1 = ((spot / strike).ln() + (RISK_FREE + 0.5 * VOLATILITY * VOLATILITY) * years) / sd;
        spot * normal_cdf(d1) - strike * (-RISK_FREE * years).exp() * normal_cdf(d1 - sd)
    }

    #[test]
    fn reference_converges_to_black_scholes() {
        for r in [0.05f32, 0.3, 0.5, 0.8, 0.99] {
            let (s, x, t) = option_parameters(r as f64);
            let tree = reference_price(r, STEPS);
            let closed = black_scholes_call(s, x, t);
            // CRR error is O(1/steps) of the spot: well below 1 % of it at 254 steps.
            assert!(
                (tree - closed).abs() < 0.01 * s,
                "r {r}: tree {tree} vs Black-Scholes {closed}"
            );
        }
    }

    #[test]
    fn the_closed_form_is_the_tree() {
        for r in [0.0f32, 0.05, 0.3, 0.5, 0.8, 0.99, 1.0 - f32::EPSILON] {
            let (tree, closed) = (reference_price(r, STEPS), closed_form_price(r, STEPS));
            assert!(
                (tree - closed).abs() <= 1e-9 * tree.abs().max(1.0),
                "r {r}: {tree} vs {closed}"
            );
        }
    }

    #[test]
    fn one_wrong_work_group_fails_the_check() {
        let mut rng = Rng::new(7);
        let random: Vec<[f32; 4]> = (0..96)
            .map(|_| [rng.unit_f32(), rng.unit_f32(), rng.unit_f32(), rng.unit_f32()])
            .collect();
        let idx: Vec<usize> = (0..random.len() * 4).collect();
        let flat =
            super::super::check::par_map(&idx, |k| reference_price(random[k / 4][k % 4], STEPS));
        let good: Vec<[f32; 4]> =
            flat.chunks(4).map(|c| [c[0] as f32, c[1] as f32, c[2] as f32, c[3] as f32]).collect();
        assert!(check(&random, &good).correct, "{}", check(&random, &good));
        // Every option is worth well above the tolerance, so a zero price is always wrong.
        assert!(
            flat.iter().all(|&p| p > 0.1),
            "{:?}",
            flat.iter().cloned().fold(f64::MAX, f64::min)
        );
        let corrupt = |f: &dyn Fn(&mut Vec<[f32; 4]>)| {
            let mut o = good.clone();
            f(&mut o);
            check(&random, &o).correct
        };
        for g in [0, 17, 95] {
            assert!(!corrupt(&|o| o[g] = [0.0; 4]));
            assert!(!corrupt(&|o| o[g] = [f32::from_bits(0xA5A5_A5A5); 4]));
            // Another group's options, and the group shifted by one option.
            assert!(!corrupt(&|o| o[g] = good[(g + 1) % 96]));
            assert!(!corrupt(
                &|o| o[g] = [good[g][1], good[g][2], good[g][3], good[(g + 1) % 96][0]]
            ));
            // Stale: priced from another draw of the inputs (a previous problem).
            let stale = random[g].map(|r| reference_price((r + 0.37) % 1.0, STEPS) as f32);
            assert!(!corrupt(&|o| o[g] = stale));
            assert!(!corrupt(&|o| o[g][2] = f32::NAN));
        }
        assert!(!corrupt(&|o| o.swap(3, 60)));
    }
}
