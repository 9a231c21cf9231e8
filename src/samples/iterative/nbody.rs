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
/// through `rsqrt`, which may be approximate on a device; a wrong or stale slice is off by O(1)).
pub fn verify(
    got: [&[[f32; 4]]; 2],
    indices: &[usize],
    want: &[Vec<[f64; 4]>; 2],
    limit: f64,
) -> Verdict {
    let pick = |rows: &[[f32; 4]]| -> Vec<f64> {
        indices.iter().flat_map(|&i| rows[i].map(f64::from)).collect()
    };
    let flat = |rows: &[[f64; 4]]| -> Vec<f64> { rows.iter().flatten().copied().collect() };
    relative_l2("positions", &pick(got[0]), &flat(&want[0]), limit).and(relative_l2(
        "velocities",
        &pick(got[1]),
        &flat(&want[1]),
        100.0 * limit,
    ))
}
