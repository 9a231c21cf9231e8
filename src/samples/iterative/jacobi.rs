//! Jacobi sweeps of the 2-D heat equation (`jacobi_step`): every interior cell becomes the mean
//! of its four neighbours, border cells stay fixed. The reference repeats the kernel's float
//! expression in the same order, so it should agree to the last bit; a small tolerance still
//! allows a compiler that reassociates.

use crate::samples::check::{all_close, par_map, sample_indices, Verdict};
use crate::samples::rng::Rng;

/// Work-group: 16 × 16 (a balancing unit is one row of work-groups: 16 rows of cells).
pub const LWS: [usize; 2] = [16, 16];

/// A `width` × `height` grid: a hot top border (1.0), the other borders cold (0.0), a random
/// interior in [0, 1) so that every sweep changes every interior cell.
pub fn grid(width: usize, height: usize) -> Vec<f32> {
    let mut rng = Rng::new(0x0000_7EA7);
    (0..width * height)
        .map(|k| {
            let (y, x) = (k / width, k % width);
            if y == 0 {
                1.0
            } else if x == 0 || x == width - 1 || y == height - 1 {
                0.0
            } else {
                rng.unit_f32()
            }
        })
        .collect()
}

/// One sweep of the cells of rows `rows` and columns `cols` (both inside the grid's interior)
/// from `from` into `to`, the kernel's expression in its order.
fn sweep(
    from: &[f32],
    to: &mut [f32],
    width: usize,
    rows: std::ops::RangeInclusive<usize>,
    cols: std::ops::RangeInclusive<usize>,
) {
    for y in rows {
        for x in cols.clone() {
            let i = y * width + x;
            to[i] = 0.25f32 * ((from[i - width] + from[i + width]) + (from[i - 1] + from[i + 1]));
        }
    }
}

/// The whole grid after `sweeps` sweeps.
pub fn whole(initial: &[f32], width: usize, height: usize, sweeps: usize) -> Vec<f32> {
    let (mut a, mut b) = (initial.to_vec(), initial.to_vec());
    if width < 3 || height < 3 {
        return a;
    }
    for _ in 0..sweeps {
        sweep(&a, &mut b, width, 1..=height - 2, 1..=width - 2);
        std::mem::swap(&mut a, &mut b);
    }
    a
}

/// Cell `(y, x)` after `sweeps` sweeps, from its cone of dependence alone: sweep `k` updates
/// only the cells within `sweeps − k` (in both directions) of the cell, which is all the
/// final value depends on; a few hundred million operations for 500 sweeps, whatever the grid.
pub fn cell(
    initial: &[f32],
    width: usize,
    height: usize,
    sweeps: usize,
    y: usize,
    x: usize,
) -> f32 {
    let inner =
        |c: usize, reach: usize, n: usize| c.saturating_sub(reach).max(1)..=(c + reach).min(n - 2);
    let on_border = y == 0 || x == 0 || y == height - 1 || x == width - 1;
    if on_border || sweeps == 0 {
        return initial[y * width + x];
    }
    // The window the cone reaches, copied (with a one-cell rim) so that the work stays local.
    let (y0, y1) = (y.saturating_sub(sweeps + 1), (y + sweeps + 1).min(height - 1));
    let (x0, x1) = (x.saturating_sub(sweeps + 1), (x + sweeps + 1).min(width - 1));
    let w = x1 - x0 + 1;
    let mut a: Vec<f32> =
        (y0..=y1).flat_map(|r| initial[r * width + x0..=r * width + x1].to_vec()).collect();
    let mut b = a.clone();
    for k in 1..=sweeps {
        let reach = sweeps - k;
        let (rows, cols) = (inner(y, reach, height), inner(x, reach, width));
        let rows = rows.start() - y0..=rows.end() - y0;
        let cols = cols.start() - x0..=cols.end() - x0;
        sweep(&a, &mut b, w, rows, cols);
        std::mem::swap(&mut a, &mut b);
    }
    a[(y - y0) * w + (x - x0)]
}

/// The grid `got` after `sweeps` sweeps against the reference: every cell when the whole
/// problem is small (`width · height · sweeps` ≤ `budget`), otherwise `cells` cells spread over
/// the grid (every band of rows, so every package), the four corners' neighbours, and three
/// cells of each row of `rows` (where co-executing devices' blocks meet: a wrong halo shows
/// there first), each from its cone of dependence.
pub fn verify(
    initial: &[f32],
    got: &[f32],
    (width, height): (usize, usize),
    sweeps: usize,
    budget: u64,
    cells: usize,
    rows: &[usize],
) -> Verdict {
    let tolerance = |_: usize, _: f64| 1e-5;
    if (width * height) as u64 * sweeps as u64 <= budget {
        let want: Vec<f64> =
            whole(initial, width, height, sweeps).into_iter().map(f64::from).collect();
        let out: Vec<f64> = got.iter().map(|v| f64::from(*v)).collect();
        return all_close("grid (every cell)", &out, &want, tolerance);
    }
    let mut picks = sample_indices(width * height, cells, 0x5EED_7EA7);
    let corners = [(1, 1), (1, width - 2), (height - 2, 1), (height - 2, width - 2)];
    picks.extend(corners.iter().map(|(y, x)| y * width + x));
    for &y in rows.iter().filter(|&&y| y > 0 && y < height - 1) {
        picks.extend([1, width / 2, width - 2].map(|x| y * width + x));
    }
    let want: Vec<f64> =
        par_map(&picks, |k| f64::from(cell(initial, width, height, sweeps, k / width, k % width)));
    let out: Vec<f64> = picks.iter().map(|&k| f64::from(got[k])).collect();
    all_close("grid (sampled cells, each from its cone)", &out, &want, tolerance)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cell_from_its_cone_equals_the_whole_grid() {
        let (w, h, s) = (37, 29, 9);
        let g = grid(w, h);
        let all = whole(&g, w, h, s);
        for (y, x) in [(1, 1), (5, 7), (14, 18), (27, 35), (0, 3), (28, 36), (10, 1)] {
            assert_eq!(cell(&g, w, h, s, y, x), all[y * w + x], "cell ({y}, {x})");
        }
        // The sweeps do change the grid (the check above would pass on a copy of the input).
        assert_ne!(all, g);
    }
}
