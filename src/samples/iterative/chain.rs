//! A chain of memory-bound launches, `y = a·x + y` over the same resident vectors.

use crate::samples::check::{par_all_close, Verdict};

pub const LWS: usize = 256;
pub const A: f32 = 0.75;

/// `x` in [0, 1) and `y` in [0, 77): cheap to generate for 2^28 elements, varied enough that a
/// misplaced element shows.
pub fn vectors(n: usize) -> (Vec<f32>, Vec<f32>) {
    let x = (0..n).map(|i| (i.wrapping_mul(2_654_435_761) % 1000) as f32 * 0.001).collect();
    let y = (0..n).map(|i| (i % 77) as f32).collect();
    (x, y)
}

/// `y[i]` after `steps` launches, in double precision.
pub fn element(x: &[f32], y: &[f32], steps: usize, i: usize) -> f64 {
    let (a, x) = (A as f64, x[i] as f64);
    (0..steps).fold(y[i] as f64, |acc, _| a * x + acc)
}

/// `got` against the reference on every element (a cheap closed form, so that no work-group
/// can fall between samples): relative 2e-7 per step, room for one float rounding per step.
pub fn verify(x: &[f32], y0: &[f32], got: &[f32], steps: usize) -> Verdict {
    let rel = 2e-7 * steps.max(1) as f64;
    let (a, s) = (A as f64, steps as f64);
    if x.len() != got.len() {
        return Verdict::new(
            false,
            got.len(),
            format!("y: {} elements, not {}", got.len(), x.len()),
        );
    }
    par_all_close("y", got.len(), |i| {
        // y0 + steps·a·x in double equals the step-by-step sum far below the tolerance.
        let want = f64::from(y0[i]) + s * a * f64::from(x[i]);
        (f64::from(got[i]), want, rel * want.abs().max(1.0))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_check_fails_on_each_corruption() {
        let (n, steps) = (4096, 100);
        let (x, y0) = vectors(n);
        let good: Vec<f32> = (0..n).map(|i| element(&x, &y0, steps, i) as f32).collect();
        assert!(verify(&x, &y0, &good, steps).correct);
        let corrupt = |f: &dyn Fn(&mut Vec<f32>)| {
            let mut g = good.clone();
            f(&mut g);
            verify(&x, &y0, &g, steps).correct
        };
        let group = LWS * 3..LWS * 4;
        assert!(!corrupt(&|g| g[group.clone()].fill(0.0)));
        assert!(!corrupt(&|g| g[group.clone()].fill(f32::from_bits(0xA5A5_A5A5))));
        assert!(!corrupt(&|g| g[group.clone()].copy_from_slice(&y0[group.clone()])));
        assert!(!corrupt(&|g| g.copy_within(group.clone(), LWS * 4)));
        assert!(!corrupt(&|g| g[77] = f32::NAN));
        assert!(!corrupt(&|g| g[100] *= 1.001));
        // One step too few in one work-group.
        assert!(!corrupt(&|g| {
            group.clone().for_each(|i| g[i] = element(&x, &y0, steps - 1, i) as f32)
        }));
    }
}
