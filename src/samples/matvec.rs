//! Matrix-vector product (ours, written the way a user would port it): y = A·x for a row-major
//! `rows × cols` matrix, one work-item per row. The matrix is split by rows with the pattern
//! `cols:1`, whose side is the kernel's own `cols` parameter: any width runs with the same
//! declaration. x is read whole by every device, y is 1:1.

use hetdsl::{Launch, Program, Runtime};

use super::check::{all_close, Verdict};
use super::{cached_reference, Cover, Sample, Size};

pub const LWS: usize = 64;

hetdsl::kernel! {
    /// A row of `cols` elements of `a` per work-item, all of `x`, one element of `y`.
    #[kernel(file = "kernels/matvec.cl", local = 64)]
    pub struct MatVecKernel {
        fn matvec(
            #[input(cols:1)] a: &[f32],
            #[input(whole)] x: &[f32],
            #[output(1:1)] y: &mut [f32],
            cols: i32,
        );
    }
}

/// CPU reference: row `row` of `a` (of width `cols`) times `x`, in double precision, and the
/// sum of the products' magnitudes (what float rounding is proportional to).
pub fn reference_row(a: &[f32], x: &[f32], cols: usize, row: usize) -> (f64, f64) {
    let r = &a[row * cols..(row + 1) * cols];
    let mut sum = 0.0f64;
    let mut magnitude = 0.0f64;
    for (v, w) in r.iter().zip(x) {
        let p = f64::from(*v) * f64::from(*w);
        sum += p;
        magnitude += p.abs();
    }
    (sum, magnitude)
}

/// How far a float sum of `cols` products may be from the exact one: a few ulps per addition
/// of the magnitudes summed. A row read from the wrong place is off by O(1) at these values.
pub fn tolerance(cols: usize, magnitude: f64) -> f64 {
    4.0 * cols as f64 * f64::from(f32::EPSILON) * magnitude + 1e-30
}

/// The rows checked and, for each, the exact product and the magnitude of its terms.
type Reference = (Vec<usize>, Vec<(f64, f64)>);

pub struct MatVec {
    size: Size,
    kernel: MatVecKernel,
    pub rows: usize,
    pub cols: usize,
    a: Vec<f32>,
    x: Vec<f32>,
    y: Vec<f32>,
    reference: Option<Reference>,
}

impl MatVec {
    pub fn new(size: Size, runtime: &Runtime) -> hetdsl::Result<Self> {
        let (rows, cols) = match size {
            Size::Small => (4096, 200),
            Size::Paper => (1 << 16, 2048),
        };
        Self::with_shape(rows, cols, size, MatVecKernel::new(runtime)?)
    }

    /// A `rows × cols` problem (rows a multiple of the work-group size, 64) with the kernel
    /// already built.
    pub fn with_shape(
        rows: usize,
        cols: usize,
        size: Size,
        kernel: MatVecKernel,
    ) -> hetdsl::Result<Self> {
        let mut rng = super::rng::Rng::new(47);
        let a = (0..rows * cols).map(|_| rng.range_f32(-1.0, 1.0)).collect();
        let x = (0..cols).map(|_| rng.range_f32(-1.0, 1.0)).collect();
        Ok(MatVec { size, kernel, rows, cols, a, x, y: vec![0.0; rows], reference: None })
    }

    /// The product of the last run.
    pub fn output(&self) -> &[f32] {
        &self.y
    }
}

impl Sample for MatVec {
    fn name(&self) -> &str {
        "matvec"
    }

    fn describe(&self) -> String {
        format!("{}x{} matrix, lws {LWS}", self.rows, self.cols)
    }

    fn program(&self) -> &Program {
        self.kernel.program()
    }

    fn launch(&mut self) -> hetdsl::Result<Launch<'_>> {
        self.y.fill(f32::NAN);
        let cols = i32::try_from(self.cols).map_err(|_| hetdsl::Error::BadDeclaredArgument {
            index: 3,
            name: "cols".into(),
            reason: format!("{} columns do not fit the kernel's `int cols`", self.cols),
        })?;
        self.kernel.launch(self.rows, &self.a, &self.x, &mut self.y, cols)
    }

    fn verify(&mut self) -> Verdict {
        let (a, x, cols) = (&self.a, &self.x, self.cols);
        let (indices, expected) = cached_reference(
            &mut self.reference,
            (self.rows, Cover::every(self.rows)),
            self.size,
            47,
            |row| reference_row(a, x, cols, row),
        );
        let got: Vec<f64> = indices.iter().map(|&r| f64::from(self.y[r])).collect();
        let sums: Vec<f64> = expected.iter().map(|(s, _)| *s).collect();
        all_close("rows", &got, &sums, |k, _| tolerance(cols, expected[k].1))
    }
}
