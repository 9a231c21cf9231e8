//! The memory-bound samples: saxpy (y = a·x + y, one buffer read and written) and an
//! element-wise kernel with two inputs and two outputs. Their kernels take a fraction of a
//! millisecond on a GPU at paper size; a package costs what its bytes take to cross the link,
//! which is what a balancer must split them by.

use hetdsl::{Launch, Program, Runtime};

use super::check::{par_all_close, Verdict};
use super::{Sample, Size};

pub const LWS: usize = 256;

hetdsl::kernel! {
    /// One element of `x` in and one of `y` in and out per work-item.
    #[kernel(file = "kernels/saxpy.cl", local = 256)]
    pub struct SaxpyKernel {
        fn saxpy(a: f32, #[input(1:1)] x: &[f32], #[inout(1:1)] y: &mut [f32]);
    }
}

hetdsl::kernel! {
    /// One element of each input in, one of each output out per work-item.
    #[kernel(file = "kernels/elementwise.cl", local = 256)]
    pub struct SumProdKernel {
        fn sumprod(
            #[input(1:1)] a: &[f32],
            #[input(1:1)] b: &[f32],
            #[output(1:1)] sum: &mut [f32],
            #[output(1:1)] prod: &mut [f32],
        );
    }
}

/// Elements of each buffer: 2^26 at paper size (256 MiB a buffer, the size saxpy was measured
/// at on the H200s).
fn elements(size: Size) -> usize {
    match size {
        Size::Small => 1 << 16,
        Size::Paper => 1 << 26,
    }
}

/// How far a float result of one operation on `magnitude` may be from the exact one: a fused
/// multiply-add and a separate multiply and add round differently, by an ulp or two.
fn tolerance(magnitude: f64) -> f64 {
    4.0 * f64::from(f32::EPSILON) * magnitude + 1e-30
}

/// Values in [-1, 1] that are never 0, so that a work-item that never ran leaves an output
/// that differs from the reference.
fn inputs(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = super::rng::Rng::new(seed);
    (0..n)
        .map(|_| {
            let v = rng.range_f32(-1.0, 1.0);
            if v.abs() < 1e-3 {
                0.5
            } else {
                v
            }
        })
        .collect()
}

pub struct Saxpy {
    kernel: SaxpyKernel,
    a: f32,
    x: Vec<f32>,
    y0: Vec<f32>,
    y: Vec<f32>,
}

impl Saxpy {
    pub fn new(size: Size, runtime: &Runtime) -> hetdsl::Result<Self> {
        let n = elements(size);
        let (x, y0) = (inputs(n, 61), inputs(n, 62));
        let kernel = SaxpyKernel::new(runtime)?;
        Ok(Saxpy { kernel, a: 2.5, x, y: y0.clone(), y0 })
    }
}

impl Sample for Saxpy {
    fn name(&self) -> &str {
        "saxpy"
    }

    fn describe(&self) -> String {
        format!("{} floats, y = {}·x + y, lws {LWS}", self.x.len(), self.a)
    }

    fn program(&self) -> &Program {
        self.kernel.program()
    }

    fn launch(&mut self) -> hetdsl::Result<Launch<'_>> {
        // y is read and written: every run starts from the same y, so that a work-item that
        // never ran leaves y0 there, which differs from a·x + y0 (x is never 0).
        self.y.copy_from_slice(&self.y0);
        self.kernel.launch(self.x.len(), self.a, &self.x, &mut self.y)
    }

    fn verify(&mut self) -> Verdict {
        // Every element, from its closed form on all cores, holding no copy of the output.
        let (a, x, y0, y) = (f64::from(self.a), &self.x, &self.y0, &self.y);
        par_all_close("y", x.len(), |i| {
            let (ax, y0) = (a * f64::from(x[i]), f64::from(y0[i]));
            (f64::from(y[i]), ax + y0, tolerance(ax.abs() + y0.abs()))
        })
    }
}

pub struct SumProd {
    kernel: SumProdKernel,
    a: Vec<f32>,
    b: Vec<f32>,
    sum: Vec<f32>,
    prod: Vec<f32>,
}

impl SumProd {
    pub fn new(size: Size, runtime: &Runtime) -> hetdsl::Result<Self> {
        let n = elements(size);
        let (a, b) = (inputs(n, 71), inputs(n, 72));
        let kernel = SumProdKernel::new(runtime)?;
        Ok(SumProd { kernel, a, b, sum: vec![0.0; n], prod: vec![0.0; n] })
    }
}

impl Sample for SumProd {
    fn name(&self) -> &str {
        "elementwise"
    }

    fn describe(&self) -> String {
        format!("{} floats, sum and product, lws {LWS}", self.a.len())
    }

    fn program(&self) -> &Program {
        self.kernel.program()
    }

    fn launch(&mut self) -> hetdsl::Result<Launch<'_>> {
        self.sum.fill(f32::NAN);
        self.prod.fill(f32::NAN);
        self.kernel.launch(self.a.len(), &self.a, &self.b, &mut self.sum, &mut self.prod)
    }

    fn verify(&mut self) -> Verdict {
        let (a, b, sum, prod) = (&self.a, &self.b, &self.sum, &self.prod);
        let inputs = |i: usize| (f64::from(a[i]), f64::from(b[i]));
        par_all_close("sum", a.len(), |i| {
            let (x, y) = inputs(i);
            (f64::from(sum[i]), x + y, tolerance(x.abs() + y.abs()))
        })
        .and(par_all_close("prod", a.len(), |i| {
            let (x, y) = inputs(i);
            (f64::from(prod[i]), x * y, tolerance((x * y).abs()))
        }))
    }
}
