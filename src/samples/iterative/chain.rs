//! A chain of memory-bound launches, `y = a·x + y` over the same resident vectors.

use crate::samples::check::{all_close, par_map, sample_indices, Verdict};

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

/// `got` against the reference on `budget` elements spread over the vector (all when fewer):
/// relative 2e-5, room for one float rounding per step at most 100 steps.
pub fn verify(x: &[f32], y0: &[f32], got: &[f32], steps: usize, budget: usize) -> Verdict {
    let picks = sample_indices(got.len(), budget, 0xC4A1_5EED);
    let want = par_map(&picks, |i| element(x, y0, steps, i));
    let out: Vec<f64> = picks.iter().map(|&i| f64::from(got[i])).collect();
    let rel = 2e-7 * steps.max(1) as f64;
    all_close("y", &out, &want, |_, r| rel * r.abs().max(1.0))
}
