//! Black-Scholes prices of European calls and puts (`blackscholes`), the same options priced
//! again at every iteration: the inputs stay on the devices, only the prices are written.

use crate::samples::check::{par_all_close, Verdict};
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

/// Calls and puts against the reference on every option (cheap next to the run, so that no
/// work-group can fall between samples). Within 2e-4 + 1e-4 × |price| (the kernel is single
/// precision with a distribution function accurate to 7.5e-8; a price from a wrong option is
/// far off).
pub fn verify(options: &[Vec<f32>; 3], call: &[f32], put: &[f32]) -> Verdict {
    let n = options[0].len();
    if call.len() != n || put.len() != n {
        return Verdict::new(
            false,
            n,
            format!("{} calls, {} puts for {n} options", call.len(), put.len()),
        );
    }
    let tolerance = |r: f64| 2e-4 + 1e-4 * r.abs();
    let calls = par_all_close("calls", n, |i| {
        let want = price(options, i).0;
        (f64::from(call[i]), want, tolerance(want))
    });
    calls.and(par_all_close("puts", n, |i| {
        let want = price(options, i).1;
        (f64::from(put[i]), want, tolerance(want))
    }))
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

    #[test]
    fn the_check_fails_on_each_corruption() {
        let n = 8 * LWS;
        let o = options(n);
        let (call, put): (Vec<f32>, Vec<f32>) =
            (0..n).map(|i| price(&o, i)).map(|(c, p)| (c as f32, p as f32)).unzip();
        assert!(verify(&o, &call, &put).correct);
        let group = 2 * LWS..3 * LWS;
        let corrupt = |f: &dyn Fn(&mut Vec<f32>), calls: bool| {
            let (mut c, mut p) = (call.clone(), put.clone());
            f(if calls { &mut c } else { &mut p });
            verify(&o, &c, &p).correct
        };
        for calls in [true, false] {
            assert!(!corrupt(&|v| v[group.clone()].fill(0.0), calls));
            assert!(!corrupt(&|v| v[group.clone()].fill(f32::from_bits(0xA5A5_A5A5)), calls));
            assert!(!corrupt(&|v| v[group.clone()].copy_from_slice(&o[0][group.clone()]), calls));
            assert!(!corrupt(&|v| v.copy_within(group.clone(), 3 * LWS), calls));
            assert!(!corrupt(&|v| v.copy_within(group.clone(), 2 * LWS + 1), calls));
            assert!(!corrupt(&|v| v[5] = f32::NAN, calls));
        }
        // Two packages swapped (calls and puts alike).
        let swap = |v: &mut Vec<f32>| {
            let (a, b) = v.split_at_mut(4 * LWS);
            a[..2 * LWS].swap_with_slice(&mut b[..2 * LWS]);
        };
        assert!(!corrupt(&swap, true) && !corrupt(&swap, false));
    }
}
