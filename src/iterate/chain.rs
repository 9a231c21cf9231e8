//! chain: `y = a·x + y` launched again and again over the same vectors (memory-bound). Once the
//! first launch has placed each device's slices, a session should move nothing.

use std::time::Instant;

use hetdsl::{Pattern, Program};

use super::minimum::{count_moves, Reach, Shape, Use};
use super::{
    finish_submitted, go, oneshot_steps, say, session_label, timed_loop, Config, Iterative, Scale,
    Variant,
};
use crate::samples::check::Verdict;
use crate::samples::iterative::chain::{vectors, verify, A, LWS};

pub struct Chain {
    n: usize,
    steps: usize,
    x: Vec<f32>,
    y0: Vec<f32>,
}

impl Chain {
    pub fn new(scale: Scale, steps: Option<usize>) -> Self {
        let n = scale.pick([1 << 14, 1 << 20, 1 << 28]);
        let (x, y0) = vectors(n);
        Chain { n, steps: steps.unwrap_or(if scale == Scale::Tiny { 10 } else { 100 }), x, y0 }
    }

    fn check(&self, y: &[f32], steps: usize) -> (Verdict, String) {
        (verify(&self.x, &self.y0, y, steps), "every element".to_string())
    }

    fn uses() -> [Use; 2] {
        [
            Use { buffer: 0, reach: Reach::Slice, reads: true, writes: false },
            Use { buffer: 1, reach: Reach::Slice, reads: true, writes: true },
        ]
    }
}

impl Iterative for Chain {
    fn name(&self) -> &'static str {
        "chain"
    }

    fn describe(&self) -> String {
        format!(
            "y = a*x + y over {} floats ({} MiB per vector), lws {LWS}",
            self.n,
            (self.n * 4) >> 20
        )
    }

    fn steps(&self) -> usize {
        self.steps
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
        let x = session.buffer_from(&self.x).map_err(say)?;
        let mut y = session.buffer_from(&self.y0).map_err(say)?;
        let setup = start.elapsed().as_secs_f64();
        let mut run = timed_loop(self.steps, cfg.budget_seconds, |_| {
            let r = session
                .launch("axpy")
                .global(&[self.n])
                .local(&[LWS])
                .scalar(A)
                .input(&x, Pattern::ONE_TO_ONE)
                .inout(&mut y, Pattern::ONE_TO_ONE);
            Ok(go(cfg, r)?.into_iter().collect())
        })
        .map_err(say)?;
        finish_submitted(cfg, &session, &mut run, self.launches_per_step()).map_err(say)?;
        let home = Instant::now();
        let got = y.to_vec().map_err(say)?;
        let home = (home.elapsed().as_secs_f64(), 4 * self.n as u64);
        let (verdict, how) = self.check(&got, run.steps());
        let mut v = Variant::new(label, devices, self.steps, setup, &run, verdict, &how);
        v.home = Some(home);
        let shape = Shape { items_per_unit: LWS as u64, row_len: 1 };
        let buffers = [(self.n as u64, 4); 2];
        count_moves(&mut v, &run, &buffers, shape, &|_, _| Self::uses().to_vec());
        Ok(v)
    }

    fn oneshot(
        &mut self,
        program: &Program,
        devices: &[usize],
        cfg: &Config,
    ) -> Result<Variant, String> {
        let steps = oneshot_steps(cfg, self.steps);
        let mut y = self.y0.clone();
        let run = timed_loop(steps, cfg.budget_seconds, |_| {
            let r = program
                .launch("axpy")
                .on_devices(devices)
                .global(&[self.n])
                .local(&[LWS])
                .scalar(A)
                .input(&self.x, Pattern::ONE_TO_ONE)
                .inout(&mut y, Pattern::ONE_TO_ONE)
                .run()?;
            Ok(vec![r])
        })
        .map_err(say)?;
        let (verdict, how) = self.check(&y, run.steps());
        Ok(Variant::new("oneshot", devices, steps, 0.0, &run, verdict, &how))
    }
}
