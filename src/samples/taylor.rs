//! Taylor (the papers' "Taylor", a regular 2-D kernel; the original was not published, this is
//! ours): the order-K Taylor polynomial of exp(x)·sin(y) around (x0, y0), evaluated on a grid.
//! 2-D NDRange, split by the engine into bands of work-group rows; output 1:1, row-major.

use hetdsl::{Launch, Program, Runtime};

use super::check::{all_close, all_written, Verdict};
use super::{cached_reference, Cover, Sample, Size};

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
    size: Size,
    kernel: TaylorKernel,
    pub grid: Grid,
    approx: Vec<f32>,
    reference: Option<(Vec<usize>, Vec<f64>)>,
}

impl Taylor {
    pub fn new(size: Size, runtime: &Runtime) -> hetdsl::Result<Self> {
        let grid = match size {
            Size::Small => Grid::centred(128, 128, 16),
            Size::Paper => Grid::centred(8192, 8192, 320),
        };
        let kernel = TaylorKernel::new(runtime)?;
        Ok(Taylor {
            size,
            kernel,
            grid,
            approx: vec![0.0; grid.width * grid.height],
            reference: None,
        })
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
        let grid = self.grid;
        let (indices, expected) = cached_reference(
            &mut self.reference,
            (grid.width * grid.height, Cover::Sample),
            self.size,
            15,
            |p| reference_point(&grid, p % grid.width, p / grid.width),
        );
        let got: Vec<f64> = indices.iter().map(|&p| self.approx[p] as f64).collect();
        // The terms' magnitudes sum to at most exp(x0 + |dx| + |dy|); float rounding over the
        // sum is a few ulps of that, so allow 1e-5 of it (≈ 170 ulps). A point computed for the
        // wrong (x, y) is off by O(0.01) or more at these grid steps.
        let bound = |p: usize| {
            let (dx, dy) = grid.offsets(p % grid.width, p / grid.width);
            1e-5 * (grid.x0 as f64 + dx.abs() as f64 + dy.abs() as f64).exp()
        };
        all_close("values", &got, expected, |k, _| bound(indices[k])).and(all_written(
            "values",
            &self.approx,
            |v| v.is_nan(),
        ))
    }
}
