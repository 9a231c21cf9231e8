//! Black-Scholes prices of European calls and puts (`blackscholes`), the same options priced
//! again at every iteration: the inputs stay on the devices, only the prices are written.

use crate::samples::check::{all_close, par_map, sample_indices, Verdict};
use crate::samples::rng::Rng;

pub const LWS: usize = 256;
pub const RISKFREE: f32 = 0.02;
pub const VOLATILITY: f32 = 0.30;

/// `n` options: spot price in [5, 30], strike in [1, 100], expiry in [0.25, 10] years.
pub fn options(n: usize) -> [Vec<f32>; 3] {
    let mut rng = Rng::new(0x0B1A_C500);
    let mut draw = |lo, hi| (0..n).map(|_| rng.range_f32(lo, hi)).collect::<Vec<f32>>();
    [draw(5.0, 30.0), draw(1.0, 100.0), draw(0.25, 10.0)]
}

/// The standard normal distribution function: the complementary error function of
/// W. J. Cody's rational Chebyshev-free form (Numerical Recipes' `erfcc`, relative error below
/// 1.2e-7), independent of the kernel's Abramowitz-Stegun polynomial.
fn normal_cdf(d: f64) -> f64 {
    let z = d.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let erfc = t * poly.exp();
    if d >= 0.0 {
        1.0 - 0.5 * erfc
    } else {
        0.5 * erfc
    }
}

/// Call and put of option `i`, in double precision.
pub fn price(options: &[Vec<f32>; 3], i: usize) -> (f64, f64) {
    let (s, x, t) = (options[0][i] as f64, options[1][i] as f64, options[2][i] as f64);
    let (r, v) = (RISKFREE as f64, VOLATILITY as f64);
    let d1 = ((s / x).ln() + (r + 0.5 * v * v) * t) / (v * t.sqrt());
    let d2 = d1 - v * t.sqrt();
    let discounted = x * (-r * t).exp();
    let call = s * normal_cdf(d1) - discounted * normal_cdf(d2);
    let put = discounted * normal_cdf(-d2) - s * normal_cdf(-d1);
    (call, put)
}

/// Calls and puts against the reference on `budget` options spread over the range (all of
/// them when there are fewer). Within 2e-4 + 1e-4 × |price| (the kernel is single precision
/// with a distribution function accurate to 7.5e-8; a price from a wrong option is far off).
pub fn verify(options: &[Vec<f32>; 3], call: &[f32], put: &[f32], budget: usize) -> Verdict {
    let picks = sample_indices(call.len(), budget, 0x0B1A_C5EE);
    let want = par_map(&picks, |i| price(options, i));
    let tolerance = |_: usize, r: f64| 2e-4 + 1e-4 * r.abs();
    let got = |v: &[f32]| picks.iter().map(|&i| f64::from(v[i])).collect::<Vec<f64>>();
    let calls: Vec<f64> = want.iter().map(|w| w.0).collect();
    let puts: Vec<f64> = want.iter().map(|w| w.1).collect();
    all_close("calls", &got(call), &calls, tolerance).and(all_close(
        "puts",
        &got(put),
        &puts,
        tolerance,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn put_call_parity_holds_and_the_distribution_is_right() {
        // Φ at known points (tables of the standard normal).
        assert!((normal_cdf(0.0) - 0.5).abs() < 1e-7);
        assert!((normal_cdf(1.0) - 0.841_344_746).abs() < 1e-7);
        assert!((normal_cdf(-1.96) - 0.024_997_895).abs() < 1e-7);
        let o = options(64);
        for i in 0..64 {
            let (c, p) = price(&o, i);
            let (s, x, t) = (o[0][i] as f64, o[1][i] as f64, o[2][i] as f64);
            // C − P = S − X·e^{−rT}.
            assert!((c - p - (s - x * (-(RISKFREE as f64) * t).exp())).abs() < 1e-6, "option {i}");
        }
    }
}
