//! 3-D stencil (ours): one sweep of a 7-point stencil on a `w × h × d` volume, one work-item per
//! voxel over a 3-D NDRange. hetdsl splits a 3-D range along z in slabs of work-groups, so each
//! package writes a contiguous run of the output (1:1) and reads its slab of the input with a
//! halo of one plane beyond each of its faces.

use hetdsl::{Launch, Program, Runtime};

use super::check::{par_all_close, Verdict};
use super::{Sample, Size};

pub const LOCAL: [usize; 3] = [8, 8, 4];

hetdsl::kernel! {
    /// A slab and a plane each side of it in, one voxel out per work-item.
    #[kernel(file = "kernels/stencil3d.cl", local = [8, 8, 4])]
    pub struct Stencil3dKernel {
        fn stencil3d(#[input(1:1, halo = 1)] input: &[f32], #[output(1:1)] output: &mut [f32]);
    }
}

/// CPU reference of voxel `i` of a `[w, h, d]` volume, in double precision: the border keeps
/// its value, an inner voxel is half itself plus a twelfth of each of its six neighbours.
pub fn reference_voxel(a: &[f32], [w, h, d]: [usize; 3], i: usize) -> f64 {
    let (x, y, z) = (i % w, (i / w) % h, i / (w * h));
    let at = |x: usize, y: usize, z: usize| f64::from(a[(z * h + y) * w + x]);
    if x == 0 || y == 0 || z == 0 || x == w - 1 || y == h - 1 || z == d - 1 {
        return at(x, y, z);
    }
    let sides = at(x - 1, y, z)
        + at(x + 1, y, z)
        + at(x, y - 1, z)
        + at(x, y + 1, z)
        + at(x, y, z - 1)
        + at(x, y, z + 1);
    0.5 * at(x, y, z) + sides / 12.0
}

pub struct Stencil3d {
    kernel: Stencil3dKernel,
    pub shape: [usize; 3],
    input: Vec<f32>,
    output: Vec<f32>,
}

impl Stencil3d {
    pub fn new(size: Size, runtime: &Runtime) -> hetdsl::Result<Self> {
        let shape = match size {
            Size::Small => [128, 128, 64],
            Size::Paper => [512, 512, 256],
        };
        let mut rng = super::rng::Rng::new(53);
        let input = (0..shape.iter().product()).map(|_| rng.range_f32(0.0, 100.0)).collect();
        let output = vec![0.0; shape.iter().product()];
        let kernel = Stencil3dKernel::new(runtime)?;
        Ok(Stencil3d { kernel, shape, input, output })
    }

    /// The volume of the last run.
    pub fn output(&self) -> &[f32] {
        &self.output
    }
}

impl Sample for Stencil3d {
    fn name(&self) -> &str {
        "stencil3d"
    }

    fn describe(&self) -> String {
        let [w, h, d] = self.shape;
        format!("{w}x{h}x{d} volume, lws {LOCAL:?}")
    }

    fn program(&self) -> &Program {
        self.kernel.program()
    }

    fn launch(&mut self) -> hetdsl::Result<Launch<'_>> {
        self.output.fill(f32::NAN);
        self.kernel.launch(self.shape, &self.input, &mut self.output)
    }

    fn verify(&mut self) -> Verdict {
        let (input, shape, output) = (&self.input, self.shape, &self.output);
        // Every voxel on all cores, holding no copy of the output. Seven float terms of
        // magnitude up to 100: a few ulps of the largest.
        let tolerance = 8.0 * 100.0 * f64::from(f32::EPSILON);
        par_all_close("voxels", shape.iter().product(), |i| {
            (f64::from(output[i]), reference_voxel(input, shape, i), tolerance)
        })
    }
}
