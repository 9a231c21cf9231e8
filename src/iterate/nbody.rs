//! nbody: time steps of two launches each, `nbody_forces` (positions read whole, velocities
//! kicked 1:1) then `nbody_integrate` (positions drift 1:1). Between steps every device needs
//! the positions the others moved: an all-gather, the least a partition of the bodies implies.

use std::time::Instant;

use hetdsl::{Pattern, Program, Report};

use super::minimum::{count_moves, Reach, Shape, Use};
use super::{
    finish_submitted, go, oneshot_steps, say, session_label, timed_loop, Config, Iterative, Scale,
    Variant,
};
use crate::samples::check::{sample_indices, Verdict};
use crate::samples::iterative::nbody::{bodies, one_step, trajectory, verify, DT, LWS, SOFTENING2};

type Rows = Vec<[f32; 4]>;

/// Above this many interactions (bodies² × steps) the whole trajectory is not followed on the
/// CPU; each variant's last state is checked by one more step from its own previous state.
const TRAJECTORY_BUDGET: u64 = 1 << 32;
/// Bodies checked in the one-step check.
const ONE_STEP_BODIES: usize = 2048;

pub struct NBody {
    n: usize,
    steps: usize,
    position: Rows,
    velocity: Rows,
    /// The reference trajectory's end, for the step count it was computed for.
    reference: Option<(usize, [Vec<[f64; 4]>; 2])>,
}

impl NBody {
    pub fn new(scale: Scale, steps: Option<usize>) -> Self {
        let n = scale.pick([512, 2048, 1 << 17]);
        let (position, velocity) = bodies(n);
        let steps = steps.unwrap_or(if scale == Scale::Tiny { 5 } else { 50 });
        NBody { n, steps, position, velocity, reference: None }
    }

    fn follows_trajectory(&self, steps: usize) -> bool {
        (self.n as u64).pow(2) * steps as u64 <= TRAJECTORY_BUDGET
    }

    /// The state after `steps` steps against the whole reference trajectory.
    fn check_trajectory(&mut self, got: [&[[f32; 4]]; 2], steps: usize) -> (Verdict, String) {
        if self.reference.as_ref().is_none_or(|r| r.0 != steps) {
            self.reference = Some((steps, trajectory(&self.position, &self.velocity, steps)));
        }
        let all: Vec<usize> = (0..self.n).collect();
        let want = &self.reference.as_ref().expect("computed above").1;
        (verify(&self.position, got, &all, want, 1e-4), format!("every body after {steps} steps"))
    }

    /// `after` one step from `before`, on sampled bodies.
    fn check_one_step(
        &self,
        before: [&[[f32; 4]]; 2],
        after: [&[[f32; 4]]; 2],
    ) -> (Verdict, String) {
        let picks = sample_indices(self.n, ONE_STEP_BODIES, 0x0B0D_1E55);
        let want = one_step(before[0], before[1], &picks);
        let how = format!(
            "{} sampled bodies, one extra step from the variant's own state (whole trajectory too long here)",
            picks.len()
        );
        (verify(before[0], after, &picks, &want, 1e-5), how)
    }

    fn forces_uses() -> [Use; 2] {
        [
            Use { buffer: 0, reach: Reach::Whole, reads: true, writes: false },
            Use { buffer: 1, reach: Reach::Slice, reads: true, writes: true },
        ]
    }

    fn integrate_uses() -> [Use; 2] {
        [
            Use { buffer: 0, reach: Reach::Slice, reads: true, writes: true },
            Use { buffer: 1, reach: Reach::Slice, reads: true, writes: false },
        ]
    }

    /// One step on a session; its launches submitted where `submit` says so (see [`go`]).
    fn session_step(
        &self,
        session: &hetdsl::Session,
        pos: &mut hetdsl::Buffer<[f32; 4]>,
        vel: &mut hetdsl::Buffer<[f32; 4]>,
        submit: Option<&Config>,
    ) -> hetdsl::Result<Vec<Report>> {
        let start = |l: hetdsl::SessionLaunch<'_>| match submit {
            Some(cfg) => go(cfg, l),
            None => l.run().map(Some),
        };
        let n = self.n;
        let forces = session
            .launch("nbody_forces")
            .global(&[n])
            .local(&[LWS])
            .input(&*pos, Pattern::Whole)
            .inout(vel, Pattern::ONE_TO_ONE)
            .scalar(n as i32)
            .scalar(DT)
            .scalar(SOFTENING2);
        let forces = start(forces)?;
        let integrate = session
            .launch("nbody_integrate")
            .global(&[n])
            .local(&[LWS])
            .inout(pos, Pattern::ONE_TO_ONE)
            .input(&*vel, Pattern::ONE_TO_ONE)
            .scalar(DT);
        let integrate = start(integrate)?;
        Ok(forces.into_iter().chain(integrate).collect())
    }

    /// One step with one-shot launches over host data.
    fn oneshot_step(
        &self,
        program: &Program,
        devices: &[usize],
        pos: &mut Rows,
        vel: &mut Rows,
    ) -> hetdsl::Result<Vec<Report>> {
        let n = self.n;
        let forces = program
            .launch("nbody_forces")
            .on_devices(devices)
            .global(&[n])
            .local(&[LWS])
            .input(pos, Pattern::Whole)
            .inout(vel, Pattern::ONE_TO_ONE)
            .scalar(n as i32)
            .scalar(DT)
            .scalar(SOFTENING2)
            .run()?;
        let integrate = program
            .launch("nbody_integrate")
            .on_devices(devices)
            .global(&[n])
            .local(&[LWS])
            .inout(pos, Pattern::ONE_TO_ONE)
            .input(vel, Pattern::ONE_TO_ONE)
            .scalar(DT)
            .run()?;
        Ok(vec![forces, integrate])
    }
}

impl Iterative for NBody {
    fn name(&self) -> &'static str {
        "nbody"
    }

    fn describe(&self) -> String {
        format!("{} bodies, lws {LWS}, forces (positions whole) then integrate (1:1)", self.n)
    }

    fn steps(&self) -> usize {
        self.steps
    }

    fn launches_per_step(&self) -> usize {
        2
    }

    fn session(
        &mut self,
        program: &Program,
        devices: &[usize],
        cfg: &Config,
    ) -> Result<Variant, String> {
        let label = session_label(devices);
        let start = Instant::now();
        let session = program.session_on(devices).map_err(say)?;
        let mut pos = session.buffer_from(&self.position).map_err(say)?;
        let mut vel = session.buffer_from(&self.velocity).map_err(say)?;
        let setup = start.elapsed().as_secs_f64();
        let mut run = timed_loop(self.steps, cfg.budget_seconds, |_| {
            self.session_step(&session, &mut pos, &mut vel, Some(cfg))
        })
        .map_err(say)?;
        finish_submitted(cfg, &session, &mut run, self.launches_per_step()).map_err(say)?;
        let home = Instant::now();
        let (p, v) = (pos.to_vec().map_err(say)?, vel.to_vec().map_err(say)?);
        let home = (home.elapsed().as_secs_f64(), 2 * 16 * self.n as u64);
        let (verdict, how) = if self.follows_trajectory(run.steps()) {
            self.check_trajectory([&p, &v], run.steps())
        } else {
            self.session_step(&session, &mut pos, &mut vel, None).map_err(say)?;
            let (p1, v1) = (pos.to_vec().map_err(say)?, vel.to_vec().map_err(say)?);
            self.check_one_step([&p, &v], [&p1, &v1])
        };
        let mut variant = Variant::new(label, devices, self.steps, setup, &run, verdict, &how);
        variant.home = Some(home);
        let shape = Shape { items_per_unit: LWS as u64, row_len: 1 };
        let buffers = [(self.n as u64, 16); 2];
        count_moves(&mut variant, &run, &buffers, shape, &|_, r| {
            if r.kernel == "nbody_forces" {
                Self::forces_uses().to_vec()
            } else {
                Self::integrate_uses().to_vec()
            }
        });
        Ok(variant)
    }

    fn oneshot(
        &mut self,
        program: &Program,
        devices: &[usize],
        cfg: &Config,
    ) -> Result<Variant, String> {
        let steps = oneshot_steps(cfg, self.steps);
        let (mut pos, mut vel) = (self.position.clone(), self.velocity.clone());
        let run = timed_loop(steps, cfg.budget_seconds, |_| {
            self.oneshot_step(program, devices, &mut pos, &mut vel)
        })
        .map_err(say)?;
        let (verdict, how) = if self.follows_trajectory(run.steps()) {
            self.check_trajectory([&pos, &vel], run.steps())
        } else {
            let (p, v) = (pos.clone(), vel.clone());
            self.oneshot_step(program, devices, &mut pos, &mut vel).map_err(say)?;
            self.check_one_step([&p, &v], [&pos, &vel])
        };
        Ok(Variant::new("oneshot", devices, steps, 0.0, &run, verdict, &how))
    }
}
