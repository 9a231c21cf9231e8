//! blackscholes: the same options priced again at every iteration. The three inputs stay on the
//! devices and the two outputs are written where they are computed, so after the first
//! iteration a session need move nothing.

use std::time::Instant;

use hetdsl::{Pattern, Program};

use super::minimum::{count_moves, Reach, Shape, Use};
use super::{
    finish_submitted, go, oneshot_steps, say, session_label, timed_loop, Config, Iterative, Scale,
    Variant,
};
use crate::samples::check::Verdict;
use crate::samples::iterative::blackscholes::{options, verify, LWS, RISKFREE, VOLATILITY};

pub struct BlackScholes {
    n: usize,
    steps: usize,
    options: [Vec<f32>; 3],
}

impl BlackScholes {
    pub fn new(scale: Scale, steps: Option<usize>) -> Self {
        let n = scale.pick([1 << 14, 1 << 20, 1 << 26]);
        let steps = steps.unwrap_or(if scale == Scale::Tiny { 3 } else { 10 });
        BlackScholes { n, steps, options: options(n) }
    }

    fn check(&self, call: &[f32], put: &[f32]) -> (Verdict, String) {
        (verify(&self.options, call, put), "every option".to_string())
    }

    fn uses() -> [Use; 5] {
        let read = |buffer| Use { buffer, reach: Reach::Slice, reads: true, writes: false };
        let write = |buffer| Use { buffer, reach: Reach::Slice, reads: false, writes: true };
        [read(0), read(1), read(2), write(3), write(4)]
    }
}

impl Iterative for BlackScholes {
    fn name(&self) -> &'static str {
        "blackscholes"
    }

    fn describe(&self) -> String {
        format!("{} options (3 inputs, call and put 1:1), lws {LWS}", self.n)
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
        let [s, x, t] = &self.options;
        let (s, x, t) = (
            session.buffer_from(s).map_err(say)?,
            session.buffer_from(x).map_err(say)?,
            session.buffer_from(t).map_err(say)?,
        );
        let mut call = session.buffer::<f32>(self.n).map_err(say)?;
        let mut put = session.buffer::<f32>(self.n).map_err(say)?;
        let setup = start.elapsed().as_secs_f64();
        let mut run = timed_loop(self.steps, cfg.budget_seconds, |_| {
            let r = session
                .launch("blackscholes")
                .global(&[self.n])
                .local(&[LWS])
                .input(&s, Pattern::ONE_TO_ONE)
                .input(&x, Pattern::ONE_TO_ONE)
                .input(&t, Pattern::ONE_TO_ONE)
                .scalar(RISKFREE)
                .scalar(VOLATILITY)
                .output(&mut call, Pattern::ONE_TO_ONE)
                .output(&mut put, Pattern::ONE_TO_ONE);
            Ok(go(cfg, r)?.into_iter().collect())
        })
        .map_err(say)?;
        finish_submitted(cfg, &session, &mut run, self.launches_per_step()).map_err(say)?;
        let home = Instant::now();
        let (c, p) = (call.to_vec().map_err(say)?, put.to_vec().map_err(say)?);
        let home = (home.elapsed().as_secs_f64(), 2 * 4 * self.n as u64);
        let (verdict, how) = self.check(&c, &p);
        let mut v = Variant::new(label, devices, self.steps, setup, &run, verdict, &how);
        v.home = Some(home);
        let n = self.n as u64;
        let shape = Shape { items_per_unit: LWS as u64, row_len: 1 };
        count_moves(&mut v, &run, &[(n, 4); 5], shape, &|_, _| Self::uses().to_vec());
        Ok(v)
    }

    fn oneshot(
        &mut self,
        program: &Program,
        devices: &[usize],
        cfg: &Config,
    ) -> Result<Variant, String> {
        let steps = oneshot_steps(cfg, self.steps);
        let (mut call, mut put) = (vec![f32::NAN; self.n], vec![f32::NAN; self.n]);
        let [s, x, t] = &self.options;
        let run = timed_loop(steps, cfg.budget_seconds, |_| {
            let r = program
                .launch("blackscholes")
                .on_devices(devices)
                .global(&[self.n])
                .local(&[LWS])
                .input(s, Pattern::ONE_TO_ONE)
                .input(x, Pattern::ONE_TO_ONE)
                .input(t, Pattern::ONE_TO_ONE)
                .scalar(RISKFREE)
                .scalar(VOLATILITY)
                .output(&mut call, Pattern::ONE_TO_ONE)
                .output(&mut put, Pattern::ONE_TO_ONE)
                .run()?;
            Ok(vec![r])
        })
        .map_err(say)?;
        let (verdict, how) = self.check(&call, &put);
        Ok(Variant::new("oneshot", devices, steps, 0.0, &run, verdict, &how))
    }
}
