//! N-body with two kernels per step (`nbody_forces`, then `nbody_integrate`): the velocity is
//! kicked by the acceleration of the current positions, then every body drifts with its new
//! velocity (semi-implicit Euler).

use crate::samples::check::{par_map, relative_l2, Verdict};
use crate::samples::rng::Rng;

pub const LWS: usize = 128;
pub const DT: f32 = 0.005;
pub const SOFTENING2: f32 = 500.0;

/// `bodies` bodies: xyz in [3, 50], mass (w) in [1, 1000], velocities in [-1, 1].
pub fn bodies(bodies: usize) -> (Vec<[f32; 4]>, Vec<[f32; 4]>) {
    let mut rng = Rng::new(0x17E2_A7E5);
    let position = (0..bodies)
        .map(|_| {
            let mut p = [0.0; 4];
            p.iter_mut().take(3).for_each(|c| *c = rng.range_f32(3.0, 50.0));
            p[3] = rng.range_f32(1.0, 1000.0);
            p
        })
        .collect();
    let velocity = (0..bodies)
        .map(|_| {
            [rng.range_f32(-1.0, 1.0), rng.range_f32(-1.0, 1.0), rng.range_f32(-1.0, 1.0), 0.0]
        })
        .collect();
    (position, velocity)
}

/// One body's acceleration from every position, in double precision.
fn acceleration(position: &[[f64; 4]], i: usize) -> [f64; 3] {
    let me = position[i];
    let mut acc = [0.0f64; 3];
    for other in position {
        let r: [f64; 3] = std::array::from_fn(|d| other[d] - me[d]);
        let dist2 = r[0] * r[0] + r[1] * r[1] + r[2] * r[2] + SOFTENING2 as f64;
        let s = other[3] / (dist2 * dist2.sqrt());
        (0..3).for_each(|d| acc[d] += s * r[d]);
    }
    acc
}

fn widen(rows: &[[f32; 4]]) -> Vec<[f64; 4]> {
    rows.iter().map(|r| r.map(f64::from)).collect()
}

/// One step (kick, then drift) of the bodies `indices` from `position`/`velocity`.
fn step_of(position: &[[f64; 4]], velocity: &[[f64; 4]], indices: &[usize]) -> Vec<[[f64; 4]; 2]> {
    let dt = DT as f64;
    par_map(indices, |i| {
        let a = acceleration(position, i);
        let mut v = velocity[i];
        let mut p = position[i];
        (0..3).for_each(|d| {
            v[d] += a[d] * dt;
            p[d] += v[d] * dt;
        });
        [p, v]
    })
}

/// Positions and velocities after `steps` steps from the initial state, every body.
pub fn trajectory(
    position: &[[f32; 4]],
    velocity: &[[f32; 4]],
    steps: usize,
) -> [Vec<[f64; 4]>; 2] {
    let (mut p, mut v) = (widen(position), widen(velocity));
    let all: Vec<usize> = (0..p.len()).collect();
    for _ in 0..steps {
        let moved = step_of(&p, &v, &all);
        p = moved.iter().map(|m| m[0]).collect();
        v = moved.iter().map(|m| m[1]).collect();
    }
    [p, v]
}

/// The bodies `indices` one step after the state `position`/`velocity` (the devices' own state
/// before their last step, for problems whose whole trajectory is too long to follow here).
pub fn one_step(
    position: &[[f32; 4]],
    velocity: &[[f32; 4]],
    indices: &[usize],
) -> [Vec<[f64; 4]>; 2] {
    let moved = step_of(&widen(position), &widen(velocity), indices);
    [moved.iter().map(|m| m[0]).collect(), moved.iter().map(|m| m[1]).collect()]
}

/// Compares the bodies `indices` of a device state with reference rows for them. Positions
/// within relative L2 `limit`; velocities within 100 × `limit` (each is a float sum of N terms
/// through `rsqrt`, which may be approximate on a device; a wrong slice is off by O(1)); and
/// each position against the way it moved from `before` (see [`moved`]).
pub fn verify(
    before: &[[f32; 4]],
    got: [&[[f32; 4]]; 2],
    indices: &[usize],
    want: &[Vec<[f64; 4]>; 2],
    limit: f64,
) -> Verdict {
    let pick = |rows: &[[f32; 4]]| -> Vec<f64> {
        indices.iter().flat_map(|&i| rows[i].map(f64::from)).collect()
    };
    let flat = |rows: &[[f64; 4]]| -> Vec<f64> { rows.iter().flatten().copied().collect() };
    relative_l2("positions", &pick(got[0]), &flat(&want[0]), limit)
        .and(relative_l2("velocities", &pick(got[1]), &flat(&want[1]), 100.0 * limit))
        .and(moved(before, got[0], indices, &want[0]))
}

/// Each body's position within 1e-3 of its reference displacement from `before` plus 64 ulps
/// of its largest coordinate. The relative L2 over positions is dominated by the masses and
/// the coordinates, so a body left where it was (a stale package) would pass it.
pub fn moved(
    before: &[[f32; 4]],
    got: &[[f32; 4]],
    indices: &[usize],
    want: &[[f64; 4]],
) -> Verdict {
    let norm = |a: [f64; 4], b: [f64; 4]| (0..3).map(|d| (a[d] - b[d]).powi(2)).sum::<f64>().sqrt();
    let ulp = |x: f64| 64.0 * f64::from(f32::EPSILON) * x;
    let mut bad = 0usize;
    let mut worst = String::new();
    for (&i, w) in indices.iter().zip(want) {
        let (b, g) = (before[i].map(f64::from), got[i].map(f64::from));
        let size = (0..4).map(|d| w[d].abs()).fold(0.0, f64::max);
        let tolerance = 1e-3 * norm(*w, b) + ulp(size);
        let error = norm(g, *w).max((g[3] - w[3]).abs());
        // NaN counts as out of tolerance.
        if error.is_nan() || error > tolerance {
            bad += 1;
            if worst.is_empty() {
                worst = format!(", first body {i}: off by {error:.2e}, tolerance {tolerance:.2e}");
            }
        }
    }
    let ok = bad == 0 && indices.len() == want.len() && !indices.is_empty();
    Verdict::new(ok, indices.len(), format!("moves: {bad} bodies off their step{worst}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn narrow(rows: &[[f64; 4]]) -> Vec<[f32; 4]> {
        rows.iter().map(|r| r.map(|c| c as f32)).collect()
    }

    #[test]
    fn one_stale_or_wrong_work_group_fails_the_check() {
        let n = 8 * LWS;
        let (p, v) = bodies(n);
        let all: Vec<usize> = (0..n).collect();
        let want = one_step(&p, &v, &all);
        let (gp, gv) = (narrow(&want[0]), narrow(&want[1]));
        assert!(verify(&p, [&gp, &gv], &all, &want, 1e-5).correct);
        let group = 3 * LWS..4 * LWS;
        let corrupt = |f: &dyn Fn(&mut Vec<[f32; 4]>)| {
            let mut q = gp.clone();
            f(&mut q);
            verify(&p, [&q, &gv], &all, &want, 1e-5)
        };
        // A work-group left at its old positions passes the relative L2 alone.
        let mut stale = gp.clone();
        stale[group.clone()].copy_from_slice(&p[group.clone()]);
        let flat = |rows: &[[f32; 4]]| -> Vec<f64> {
            rows.iter().flatten().map(|&c| f64::from(c)).collect()
        };
        let want_flat: Vec<f64> = want[0].iter().flatten().copied().collect();
        assert!(relative_l2("p", &flat(&stale), &want_flat, 1e-5).correct);
        assert!(!verify(&p, [&stale, &gv], &all, &want, 1e-5).correct);
        let mut sv = gv.clone();
        sv[group.clone()].copy_from_slice(&v[group.clone()]);
        assert!(!verify(&p, [&gp, &sv], &all, &want, 1e-5).correct);
        assert!(!corrupt(&|q| q[group.clone()].fill([0.0; 4])).correct);
        assert!(!corrupt(&|q| q[group.clone()].fill([f32::from_bits(0xA5A5_A5A5); 4])).correct);
        assert!(!corrupt(&|q| q.copy_within(group.clone(), 4 * LWS)).correct);
        assert!(!corrupt(&|q| q.copy_within(group.clone(), 3 * LWS + 1)).correct);
        assert!(!corrupt(&|q| q[17][1] = f32::NAN).correct);
        // Velocities wrong, positions right.
        let mut wv = gv.clone();
        wv[group.clone()].copy_from_slice(&v[group.clone()]);
        wv[group.clone()].iter_mut().for_each(|r| r[0] += 0.5);
        assert!(!verify(&p, [&gp, &wv], &all, &want, 1e-5).correct);
    }
}
