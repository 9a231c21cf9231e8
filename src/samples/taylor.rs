//! Taylor (the papers' "Taylor", a regular 2-D kernel; the original was not published, this is
//! ours): the order-K Taylor polynomial of exp(x)·sin(y) around (x0, y0), evaluated on a grid.
//! 2-D NDRange, split by the engine into bands of work-group rows; output 1:1, row-major.

use hetdsl::{Launch, Program, Runtime};

use super::check::{all_written, par_all_close, Verdict};
use super::{Sample, Size};

pub const LWS: [usize; 2] = [16, 8];

/// The grid and the expansion.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Grid {
    pub width: usize,
    pub height: usize,
    pub x0: f32,
    pub y0: f32,
    pub x_min: f32,
    pub y_min: f32,
    pub step: f32,
    pub order: i32,
}

impl Grid {
    /// A `width × height` grid spanning 2 units in x, centred on (x0, y0) = (0.5, 0.8).
    pub fn centred(width: usize, height: usize, order: i32) -> Self {
        let (x0, y0) = (0.5f32, 0.8f32);
        let step = 2.0 / width as f32;
        Grid {
            width,
            height,
            x0,
            y0,
            x_min: x0 - 1.0,
            y_min: y0 - step * height as f32 / 2.0,
            step,
            order,
        }
    }

    /// The offsets (dx, dy) of point (gx, gy) from the centre, computed as the kernel does.
    pub fn offsets(&self, gx: usize, gy: usize) -> (f32, f32) {
        (self.x_min + gx as f32 * self.step - self.x0, self.y_min + gy as f32 * self.step - self.y0)
    }
}

/// CPU reference: the same polynomial summed term by term in double precision (factorials and
/// powers computed directly, not by the kernel's running products).
pub fn reference_point(grid: &Grid, gx: usize, gy: usize) -> f64 {
    let (dx, dy) = grid.offsets(gx, gy);
    let (dx, dy, y0) = (dx as f64, dy as f64, grid.y0 as f64);
    let order = grid.order.max(0) as usize;
    let derivative: Vec<f64> =
        (0..=order).map(|n| (y0 + n as f64 * std::f64::consts::FRAC_PI_2).sin()).collect();
    let factorial: Vec<f64> = (0..=order).map(|k| (1..=k).map(|i| i as f64).product()).collect();
    let mut total = 0.0;
    for m in 0..=order {
        for n in 0..=order - m {
            total +=
                derivative[n] * dx.powi(m as i32) / factorial[m] * dy.powi(n as i32) / factorial[n];
        }
    }
    (grid.x0 as f64).exp() * total
}

/// The check of every point against the function the polynomial approximates, exp(x)·sin(y) at
/// the grid point, in double precision: independent of the polynomial's evaluation, and cheap
/// enough for every element, so that one wrong work-group fails.
///
/// Tolerance, from the math: every derivative is bounded by exp(x0), so the terms' magnitudes
/// sum to at most M = exp(x0 + a) with a = |dx| + |dy|, and the terms of degree > K (the
/// truncation) to at most M · a^(K+1) / (K+1)!. Rounding in f32: each of the two nested sums
/// has about 13 terms above 2^-24 of it (a ≤ 1; more but well within when a ≤ 2), each term
/// carries ~2 roundings per factor, exp and sin a few ulps: ~60 ulps of M; allow 1e-5 M (170).
pub fn check(grid: &Grid, approx: &[f32]) -> Verdict {
    let k = grid.order.max(0) as f64;
    let ln_factorial: f64 = (1..=grid.order.max(0) + 1).map(|i| f64::from(i).ln()).sum();
    let (x0, y0) = (grid.x0 as f64, grid.y0 as f64);
    let n = grid.width * grid.height;
    let values = par_all_close("values vs exp(x)·sin(y)", n.min(approx.len()), |p| {
        let (dx, dy) = grid.offsets(p % grid.width, p / grid.width);
        let (dx, dy) = (dx as f64, dy as f64);
        let exact = (x0 + dx).exp() * (y0 + dy).sin();
        let a = dx.abs() + dy.abs();
        let magnitude = (x0 + a).exp();
        let truncation = magnitude * ((k + 1.0) * a.ln() - ln_factorial).exp();
        (approx[p] as f64, exact, 1e-5 * magnitude + truncation)
    });
    let whole = Verdict::new(approx.len() == n, n, format!("{} of {n} values", approx.len()));
    values.and(whole).and(all_written("values", approx, |v| v.is_nan()))
}

hetdsl::kernel! {
    /// A 2-D NDRange of 16×8 work-groups; one value per point, row-major (1:1).
    #[kernel(file = "kernels/taylor.cl", local = [16, 8])]
    pub struct TaylorKernel {
        fn taylor2d(
            #[output(1:1)] approx: &mut [f32],
            x0: f32,
            y0: f32,
            x_min: f32,
            y_min: f32,
            step: f32,
            width: i32,
            order: i32,
        );
    }
}

pub struct Taylor {
    kernel: TaylorKernel,
    pub grid: Grid,
    approx: Vec<f32>,
}

impl Taylor {
    pub fn new(size: Size, runtime: &Runtime) -> hetdsl::Result<Self> {
        let grid = match size {
            Size::Small => Grid::centred(128, 128, 16),
            Size::Paper => Grid::centred(8192, 8192, 320),
        };
        let kernel = TaylorKernel::new(runtime)?;
        Ok(Taylor { kernel, grid, approx: vec![0.0; grid.width * grid.height] })
    }
}

impl Sample for Taylor {
    fn name(&self) -> &str {
        "taylor"
    }

    fn describe(&self) -> String {
        format!(
            "{}x{} points, order {}, lws {}x{}",
            self.grid.width, self.grid.height, self.grid.order, LWS[0], LWS[1]
        )
    }

    fn program(&self) -> &Program {
        self.kernel.program()
    }

    fn launch(&mut self) -> hetdsl::Result<Launch<'_>> {
        self.approx.fill(f32::NAN);
        let g = self.grid;
        self.kernel.launch(
            [g.width, g.height],
            &mut self.approx,
            g.x0,
            g.y0,
            g.x_min,
            g.y_min,
            g.step,
            g.width as i32,
            g.order,
        )
    }

    fn verify(&mut self) -> Verdict {
        check(&self.grid, &self.approx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A grid with the paper's shape of problem (order, span) but few points, its output the
    /// polynomial itself rounded to f32 (what a correct device writes, to a few ulps).
    fn computed(grid: &Grid) -> Vec<f32> {
        let n = grid.width * grid.height;
        let idx: Vec<usize> = (0..n).collect();
        super::super::check::par_map(&idx, |p| {
            reference_point(grid, p % grid.width, p / grid.width) as f32
        })
    }

    #[test]
    fn one_wrong_work_group_fails_the_closed_form_check() {
        for grid in [Grid::centred(128, 128, 16), Grid::centred(256, 64, 96)] {
            let good = computed(&grid);
            let v = check(&grid, &good);
            assert!(v.correct, "{v}");
            let w = grid.width;
            // The work-group at tile (3, 2) and its elements.
            let group: Vec<usize> = (0..LWS[1])
                .flat_map(|r| (0..LWS[0]).map(move |c| (2 * LWS[1] + r) * w + 3 * LWS[0] + c))
                .collect();
            let corrupt = |f: &dyn Fn(&mut Vec<f32>)| {
                let mut o = good.clone();
                f(&mut o);
                check(&grid, &o).correct
            };
            assert!(!corrupt(&|o| group.iter().for_each(|&p| o[p] = 0.0)));
            assert!(!corrupt(&|o| group.iter().for_each(|&p| o[p] = f32::from_bits(0xA5A5_A5A5))));
            // Shifted by a work-group down, up, right; by one work-item.
            for shift in [LWS[1] * w, LWS[0], 1] {
                assert!(!corrupt(&|o| group.iter().for_each(|&p| o[p] = good[p + shift])));
                assert!(!corrupt(&|o| group.iter().for_each(|&p| o[p] = good[p - shift])));
            }
            // Two bands of work-group rows (packages) swapped.
            let band = LWS[1] * w;
            assert!(!corrupt(&|o| o.copy_within(band..2 * band, 4 * band)));
            assert!(!corrupt(&|o| {
                let (a, b) = o.split_at_mut(3 * band);
                a[..band].swap_with_slice(&mut b[..band]);
            }));
            // Stale: computed by another grid (a previous problem with another order).
            let other = computed(&Grid { order: 2, ..grid });
            assert!(!corrupt(&|o| group.iter().for_each(|&p| o[p] = other[p])));
            assert!(!corrupt(&|o| o[group[5]] = f32::NAN));
        }
    }
}
