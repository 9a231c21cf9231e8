//! Gaussian blur (the papers' "Gaussian"): an RGBA image convolved with a normalised square
//! Gaussian filter, borders clamped. The image is given whole (the rows of a package need a
//! halo above and below), the filter weights are a second input, the output is 1:1.

use hetdsl::{Launch, Program, Runtime};

use super::check::{all_close, Verdict};
use super::rng::Rng;
use super::{cached_reference, Cover, Sample, Size};

pub const LWS: usize = 128;

hetdsl::kernel! {
    /// One output pixel per work-item; the image (halo) and the filter are read whole.
    #[kernel(file = "kernels/gaussian.cl", local = 128)]
    pub struct GaussianKernel {
        fn gaussian_blur(
            #[input(whole)] image: &[[u8; 4]],
            #[input(whole)] filter: &[f32],
            #[output(1:1)] blurred: &mut [[u8; 4]],
            rows: i32,
            cols: i32,
            filter_width: i32,
        );
    }
}

pub struct Gaussian {
    size: Size,
    kernel: GaussianKernel,
    pub rows: usize,
    pub cols: usize,
    pub filter_width: usize,
    pub image: Vec<[u8; 4]>,
    pub filter: Vec<f32>,
    blurred: Vec<[u8; 4]>,
    reference: Option<(Vec<usize>, Vec<[u8; 4]>)>,
}

/// A normalised `width × width` Gaussian with σ = width / 6 (the filter covers ±3σ).
pub fn gaussian_filter(width: usize) -> Vec<f32> {
    let sigma = width as f64 / 6.0;
    let half = (width / 2) as f64;
    let raw: Vec<f64> = (0..width * width)
        .map(|k| {
            let (dy, dx) = ((k / width) as f64 - half, (k % width) as f64 - half);
            (-(dx * dx + dy * dy) / (2.0 * sigma * sigma)).exp()
        })
        .collect();
    let total: f64 = raw.iter().sum();
    raw.iter().map(|w| (w / total) as f32).collect()
}

/// A synthetic photo-like test image: smooth colour gradients, a grid of sharp-edged discs and
/// per-pixel noise, so a blur changes every pixel.
pub fn test_image(rows: usize, cols: usize, seed: u64) -> Vec<[u8; 4]> {
    let mut rng = Rng::new(seed);
    let cell = (cols / 8).max(8);
    (0..rows * cols)
        .map(|p| {
            let (y, x) = (p / cols, p % cols);
            let (cy, cx) =
                ((y % cell) as f64 - cell as f64 / 2.0, (x % cell) as f64 - cell as f64 / 2.0);
            let disc = cx * cx + cy * cy < (cell as f64 / 3.0).powi(2);
            let noise = rng.below(48) as f64;
            let r = 255.0 * x as f64 / cols as f64;
            let g = 255.0 * y as f64 / rows as f64;
            let b = if disc { 230.0 } else { 40.0 };
            let mix = |v: f64| (0.8 * v + noise).min(255.0) as u8;
            [mix(r), mix(g), mix(b), 255]
        })
        .collect()
}

/// CPU reference for pixel (row, col), accumulated in double precision and rounded.
pub fn reference_pixel(
    image: &[[u8; 4]],
    rows: usize,
    cols: usize,
    filter: &[f32],
    width: usize,
    row: usize,
    col: usize,
) -> [u8; 4] {
    let half = (width / 2) as isize;
    let mut sum = [0.0f64; 4];
    for fy in 0..width {
        let y = (row as isize + fy as isize - half).clamp(0, rows as isize - 1) as usize;
        for fx in 0..width {
            let x = (col as isize + fx as isize - half).clamp(0, cols as isize - 1) as usize;
            let w = filter[fy * width + fx] as f64;
            for (s, v) in sum.iter_mut().zip(image[y * cols + x]) {
                *s += w * v as f64;
            }
        }
    }
    sum.map(|s| (s + 0.5).floor().clamp(0.0, 255.0) as u8)
}

impl Gaussian {
    pub fn new(size: Size, runtime: &Runtime) -> hetdsl::Result<Self> {
        let (rows, cols, filter_width) = match size {
            Size::Small => (96, 128, 9),
            Size::Paper => (8192, 8192, 161),
        };
        Ok(Gaussian {
            size,
            kernel: GaussianKernel::new(runtime)?,
            rows,
            cols,
            filter_width,
            image: test_image(rows, cols, 0x6A55),
            filter: gaussian_filter(filter_width),
            blurred: vec![[0; 4]; rows * cols],
            reference: None,
        })
    }
}

impl Sample for Gaussian {
    fn name(&self) -> &str {
        "gaussian"
    }

    fn describe(&self) -> String {
        format!(
            "{}x{} RGBA, {}x{} filter, lws {LWS}",
            self.cols, self.rows, self.filter_width, self.filter_width
        )
    }

    fn program(&self) -> &Program {
        self.kernel.program()
    }

    fn launch(&mut self) -> hetdsl::Result<Launch<'_>> {
        // Alpha is 255 in every blurred pixel (the image's alpha is 255 and the weights sum to 1).
        self.blurred.fill([0, 0, 0, 0]);
        self.kernel.launch(
            self.rows * self.cols,
            &self.image,
            &self.filter,
            &mut self.blurred,
            self.rows as i32,
            self.cols as i32,
            self.filter_width as i32,
        )
    }

    fn verify(&mut self) -> Verdict {
        let (image, filter, rows, cols, width) =
            (&self.image, &self.filter, self.rows, self.cols, self.filter_width);
        let (indices, expected) = cached_reference(
            &mut self.reference,
            (rows * cols, Cover::groups(rows * cols, 128)),
            self.size,
            14,
            |p| reference_pixel(image, rows, cols, filter, width, p / cols, p % cols),
        );
        let channels = |px: &mut dyn Iterator<Item = [u8; 4]>| {
            px.flat_map(|p| p.map(f64::from)).collect::<Vec<f64>>()
        };
        let got = channels(&mut indices.iter().map(|&p| self.blurred[p]));
        let want = channels(&mut expected.iter().copied());
        // Every channel within 1: the float sum of w² weighted taps differs from the double one
        // by far less than 1/2, but may still land on the other side of a rounding boundary.
        all_close("channels", &got, &want, |_, _| 1.0)
    }

    fn image(&self) -> Option<(usize, usize, Vec<[u8; 4]>)> {
        Some((self.cols, self.rows, self.blurred.clone()))
    }
}
