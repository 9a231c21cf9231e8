//! NBody (AMD APP SDK `NBody`): one step of a direct-sum gravitational simulation. Positions are
//! read whole by every package; velocities and both outputs are sliced 1:1.

use hetdsl::{Launch, Program, Runtime};

use super::check::{relative_l2, Verdict};
use super::iterative::nbody::moved;
use super::rng::Rng;
use super::{cached_reference, Cover, Sample, Size};

pub const LWS: usize = 128;
pub const DT: f32 = 0.005;
pub const SOFTENING2: f32 = 500.0;

/// A body's new position and velocity.
type Moved = ([f64; 4], [f64; 4]);

hetdsl::kernel! {
    /// One body per work-item; every package reads all positions (`whole`).
    #[kernel(file = "kernels/nbody.cl", local = 128)]
    pub struct NBodyKernel {
        fn nbody_step(
            #[input(whole)] position: &[[f32; 4]],
            #[input(1:1)] velocity: &[[f32; 4]],
            bodies: i32,
            dt: f32,
            softening2: f32,
            #[output(1:1)] new_position: &mut [[f32; 4]],
            #[output(1:1)] new_velocity: &mut [[f32; 4]],
        );
    }
}

pub struct NBody {
    size: Size,
    kernel: NBodyKernel,
    /// xyz position, w mass.
    pub position: Vec<[f32; 4]>,
    pub velocity: Vec<[f32; 4]>,
    new_position: Vec<[f32; 4]>,
    new_velocity: Vec<[f32; 4]>,
    reference: Option<(Vec<usize>, Vec<Moved>)>,
}

/// CPU reference for body `i`: its new position and velocity, summed in double precision.
pub fn reference_body(position: &[[f32; 4]], velocity: &[[f32; 4]], i: usize) -> Moved {
    let me = position[i].map(f64::from);
    let mut acc = [0.0f64; 3];
    for other in position {
        let r: [f64; 3] = std::array::from_fn(|d| other[d] as f64 - me[d]);
        let dist2 = r[0] * r[0] + r[1] * r[1] + r[2] * r[2] + SOFTENING2 as f64;
        let s = other[3] as f64 / (dist2 * dist2.sqrt());
        for d in 0..3 {
            acc[d] += s * r[d];
        }
    }
    let v = velocity[i].map(f64::from);
    let dt = DT as f64;
    let pos = [
        me[0] + v[0] * dt + 0.5 * acc[0] * dt * dt,
        me[1] + v[1] * dt + 0.5 * acc[1] * dt * dt,
        me[2] + v[2] * dt + 0.5 * acc[2] * dt * dt,
        me[3],
    ];
    let vel = [v[0] + acc[0] * dt, v[1] + acc[1] * dt, v[2] + acc[2] * dt, v[3]];
    (pos, vel)
}

impl NBody {
    pub fn new(size: Size, runtime: &Runtime) -> hetdsl::Result<Self> {
        let bodies = match size {
            Size::Small => 2048,
            Size::Paper => 1_441_792,
        };
        let mut rng = Rng::new(0x00B0_D1E5);
        // The SDK's distribution: xyz in [3, 50], mass in [1, 1000]. Velocities are random here
        // (the SDK starts at rest) so that a wrongly sliced velocity input shows in the output.
        let position = (0..bodies)
            .map(|_| {
                [
                    rng.range_f32(3.0, 50.0),
                    rng.range_f32(3.0, 50.0),
                    rng.range_f32(3.0, 50.0),
                    rng.range_f32(1.0, 1000.0),
                ]
            })
            .collect();
        let velocity = (0..bodies)
            .map(|_| {
                [rng.range_f32(-1.0, 1.0), rng.range_f32(-1.0, 1.0), rng.range_f32(-1.0, 1.0), 0.0]
            })
            .collect();
        Ok(NBody {
            size,
            kernel: NBodyKernel::new(runtime)?,
            position,
            velocity,
            new_position: vec![[0.0; 4]; bodies],
            new_velocity: vec![[0.0; 4]; bodies],
            reference: None,
        })
    }

    /// Positions after the last step.
    pub fn new_position(&self) -> &[[f32; 4]] {
        &self.new_position
    }
}

impl Sample for NBody {
    fn name(&self) -> &str {
        "nbody"
    }

    fn describe(&self) -> String {
        format!("{} bodies, 1 step, lws {LWS}", self.position.len())
    }

    fn program(&self) -> &Program {
        self.kernel.program()
    }

    fn launch(&mut self) -> hetdsl::Result<Launch<'_>> {
        self.new_position.fill([f32::NAN; 4]);
        self.new_velocity.fill([f32::NAN; 4]);
        self.kernel.launch(
            self.position.len(),
            &self.position,
            &self.velocity,
            self.position.len() as i32,
            DT,
            SOFTENING2,
            &mut self.new_position,
            &mut self.new_velocity,
        )
    }

    fn verify(&mut self) -> Verdict {
        let (p, v) = (&self.position, &self.velocity);
        let (indices, expected) = cached_reference(
            &mut self.reference,
            (p.len(), Cover::groups(p.len(), 128)),
            self.size,
            13,
            |i| reference_body(p, v, i),
        );
        let flat = |rows: &mut dyn Iterator<Item = [f64; 4]>| {
            rows.flat_map(|r| r.into_iter()).collect::<Vec<f64>>()
        };
        let got_pos = flat(&mut indices.iter().map(|&i| self.new_position[i].map(f64::from)));
        let got_vel = flat(&mut indices.iter().map(|&i| self.new_velocity[i].map(f64::from)));
        let ref_pos = flat(&mut expected.iter().map(|e| e.0));
        let ref_vel = flat(&mut expected.iter().map(|e| e.1));
        // Positions: the SDK's rule, relative L2 < 1e-5 over xyzw. Velocities (the SDK checks
        // none): the acceleration is a float sum of N terms (rounding grows like sqrt(N) ulps) and
        // rsqrt may be approximate on some devices, so 1e-3 relative L2; a wrong velocity slice
        // is off by O(1) and still fails it.
        // And each body against its own step: the masses dominate the L2 norm, under which a
        // package left at its input positions would pass.
        let want: Vec<[f64; 4]> = expected.iter().map(|e| e.0).collect();
        relative_l2("positions", &got_pos, &ref_pos, 1e-5)
            .and(relative_l2("velocities", &got_vel, &ref_vel, 1e-3))
            .and(moved(p, &self.new_position, indices, &want))
    }
}
