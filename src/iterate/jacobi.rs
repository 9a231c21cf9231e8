//! jacobi: sweeps of a 2-D heat stencil, ping-pong between two grids (A -> B, B -> A), a 2-D
//! NDRange split by bands of rows. The input of each sweep is read with a halo of one row, so
//! between sweeps a partition needs only the rows across its boundaries.

use std::time::Instant;

use hetdsl::{Pattern, Program};

use super::minimum::{count_moves, Reach, Shape, Use};
use super::{
    finish_submitted, go, oneshot_steps, say, session_label, timed_loop, Config, Iterative, Scale,
    Variant,
};
use crate::samples::check::Verdict;
use crate::samples::iterative::jacobi::{grid, verify, LWS};

/// Above this many cell updates the check takes sampled cells from their cones of dependence.
const WHOLE_BUDGET: u64 = 1 << 28;
/// Sampled cells (plus the four corners' neighbours).
const CELLS: usize = 12;

pub struct Jacobi {
    side: usize,
    steps: usize,
    grid: Vec<f32>,
}

/// The rows on both sides of each place where packages of different devices met in the last
/// two steps of `reports` (`rows_per_unit` grid rows per balancing unit), at most 16.
fn seams(reports: &[Vec<hetdsl::Report>], rows_per_unit: usize) -> Vec<usize> {
    let mut rows = Vec::new();
    for r in reports.iter().rev().take(2).flatten() {
        let mut ps: Vec<_> = r.trace.iter().filter(|t| t.merged).collect();
        ps.sort_by_key(|t| t.package.offset);
        for pair in ps.windows(2).filter(|p| p[0].device != p[1].device) {
            let row = pair[1].package.offset as usize * rows_per_unit;
            rows.extend([row.saturating_sub(1), row]);
        }
    }
    rows.sort_unstable();
    rows.dedup();
    rows.truncate(16);
    rows
}

/// The grid read (`.0`) and the grid written (`.1`) by sweep `k`.
fn pair<T>(grids: &mut [T; 2], k: usize) -> (&T, &mut T) {
    let [a, b] = grids;
    if k.is_multiple_of(2) {
        (&*a, b)
    } else {
        (&*b, a)
    }
}

impl Jacobi {
    pub fn new(scale: Scale, steps: Option<usize>) -> Self {
        let side = scale.pick([64, 512, 16384]);
        let steps = steps.unwrap_or(if scale == Scale::Tiny { 20 } else { 500 });
        Jacobi { side, steps, grid: grid(side, side) }
    }

    /// The grid after `sweeps` sweeps against the reference.
    /// `reports`: the loop's, whose last steps say where the devices' blocks met (checked
    /// on both sides when the grid is sampled).
    pub(crate) fn check(
        &self,
        got: &[f32],
        sweeps: usize,
        reports: &[Vec<hetdsl::Report>],
    ) -> (Verdict, String) {
        let whole = (self.side * self.side) as u64 * sweeps as u64 <= WHOLE_BUDGET;
        let rows = seams(reports, LWS[1]);
        let how = if whole {
            "every cell".to_string()
        } else {
            let n = CELLS + 4 + 3 * rows.len();
            format!("{n} sampled cells ({} on rows where devices' blocks met), each from its cone of dependence", 3 * rows.len())
        };
        let side = self.side;
        (verify(&self.grid, got, (side, side), sweeps, WHOLE_BUDGET, CELLS, &rows), how)
    }

    fn uses(k: usize) -> [Use; 2] {
        let (from, to) = if k.is_multiple_of(2) { (0, 1) } else { (1, 0) };
        [
            Use { buffer: from, reach: Reach::Halo(1), reads: true, writes: false },
            Use { buffer: to, reach: Reach::Slice, reads: false, writes: true },
        ]
    }

    pub(crate) fn side(&self) -> usize {
        self.side
    }

    pub(crate) fn initial(&self) -> &[f32] {
        &self.grid
    }
}

impl Iterative for Jacobi {
    fn name(&self) -> &'static str {
        "jacobi"
    }

    fn describe(&self) -> String {
        let mib = (self.side * self.side * 4) >> 20;
        format!(
            "{0} x {0} grid ({mib} MiB per grid), 5-point stencil, lws {1}x{2}",
            self.side, LWS[0], LWS[1]
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
        let side = self.side;
        let start = Instant::now();
        let session = program.session_on(devices).map_err(say)?;
        let mut grids = [
            session.buffer_from(&self.grid).map_err(say)?,
            session.buffer_from(&self.grid).map_err(say)?,
        ];
        let setup = start.elapsed().as_secs_f64();
        let mut run = timed_loop(self.steps, cfg.budget_seconds, |k| {
            let (from, to) = pair(&mut grids, k);
            let r = session
                .launch("jacobi_step")
                .global(&[side, side])
                .local(&LWS)
                .input(from, Pattern::halo(1))
                .output(to, Pattern::ONE_TO_ONE)
                .scalar(side as i32)
                .scalar(side as i32);
            Ok(go(cfg, r)?.into_iter().collect())
        })
        .map_err(say)?;
        finish_submitted(cfg, &session, &mut run, self.launches_per_step()).map_err(say)?;
        let home = Instant::now();
        let got = grids[run.steps() % 2].to_vec().map_err(say)?;
        let home = (home.elapsed().as_secs_f64(), 4 * (side * side) as u64);
        let (verdict, how) = self.check(&got, run.steps(), &run.reports);
        let mut v = Variant::new(label, devices, self.steps, setup, &run, verdict, &how);
        v.home = Some(home);
        let cells = (side * side) as u64;
        let shape = Shape { items_per_unit: (side * LWS[1]) as u64, row_len: side as u64 };
        count_moves(&mut v, &run, &[(cells, 4); 2], shape, &|k, _| Self::uses(k).to_vec());
        Ok(v)
    }

    fn oneshot(
        &mut self,
        program: &Program,
        devices: &[usize],
        cfg: &Config,
    ) -> Result<Variant, String> {
        let steps = oneshot_steps(cfg, self.steps);
        let side = self.side;
        // A one-shot launch has no halo pattern: every device gets the whole input grid.
        let mut grids = [self.grid.clone(), self.grid.clone()];
        let run = timed_loop(steps, cfg.budget_seconds, |k| {
            let (from, to) = pair(&mut grids, k);
            let r = program
                .launch("jacobi_step")
                .on_devices(devices)
                .global(&[side, side])
                .local(&LWS)
                .input(from, Pattern::Whole)
                .output(to, Pattern::ONE_TO_ONE)
                .scalar(side as i32)
                .scalar(side as i32)
                .run()?;
            Ok(vec![r])
        })
        .map_err(say)?;
        let (verdict, how) = self.check(&grids[run.steps() % 2], run.steps(), &run.reports);
        Ok(Variant::new("oneshot", devices, steps, 0.0, &run, verdict, &how))
    }

    fn handwritten(
        &mut self,
        position: usize,
        unified: usize,
        cfg: &Config,
    ) -> Option<Result<Variant, String>> {
        Some(super::handwritten::jacobi(self, position, unified, cfg))
    }
}
