//! The split of a one-shot run repeated over the same range, from what the previous run of the
//! same launch measured: one block per device, cut so that every device is predicted to end
//! together.
//!
//! # Why
//! A GPU pays a fixed cost per package beyond its work-groups: the package's last work-groups
//! finish unevenly across its multiprocessors while the rest of the device idles. Measured on an
//! H200, NBody's packages cost 59 ms plus 126 µs per work-group (2112 groups: 326 ms, 3520:
//! 504 ms, the whole range of 11 264 alone: 1494 ms), so Sigmoid's probe and its second package
//! left two H200s at 0.89 of their ideal, where one package each would reach 0.97. Sigmoid needs
//! its probe to learn the speeds; a repeated run already has them.
//!
//! # The plan
//! A package's seconds are its kernel time, or its whole span where transfers dominate (as
//! Sigmoid measures them). Devices of one name are one model and are planned alike.
//! - **A regular kernel** (a memory-bound one, most of whose groups ran in transfer-bound
//!   packages, or, on each device model, the costliest work-group of a package at most
//!   [`REGULAR_SPREAD`] times the cheapest, over packages of at least 1 % of the range) costs
//!   the same per group everywhere: each model's packages are fitted with a line,
//!   `fixed + groups / speed`, and each device gets the groups it ends in the common time with
//!   one package. Spreading the per-package cost over the range instead would misplace the cut:
//!   the probes' groups would look dearer than the rest, and two identical H200s would get 5474
//!   and 5790 of NBody's groups, 5 % apart.
//! - **An irregular kernel** (Mandelbrot's band, RAP's rising cost) is cut by its cost map:
//!   each group costs what its package cost per group, on the fastest model's scale, and each
//!   device's block holds the cost it ends in the common time. A map from large packages is
//!   coarse, so the first relaunch may miss; each relaunch measures its blocks and the next
//!   moves the cut towards balance. The map holds kernel times wherever the device gave them,
//!   never spans: a device's last package's span holds the merge of the ones before it that
//!   its short kernel could not hide, which lies where the device's block ends, not where the
//!   costly groups are (on two H100s that put Mandelbrot's cut 1013 work-groups, 0.8 %, off
//!   the image's middle, and the GPUs' blocks ran 0.748 and 0.712 s). Nor transfer times: they
//!   follow the groups, not the cost, and in pieces they overlap the next kernel; counted, they
//!   made Ray1's block of 2.26 M groups look dearer than the other GPU's 0.89 M, and the
//!   blocks' kernels ran 0.531 and 0.538 s, where cut by kernel times alone they ran 0.5347
//!   and 0.5346 s.
//!
//! Only from a run that merged every work-group once and lost no device, and not from a
//! relaunch that ended with a balance under [`SETTLED`] (the cost moved with new data, or the
//! devices' speeds depend on each other, as two PoCL devices sharing the same cores do): the
//! next run is then a first run. A device that merged
//! less than [`MIN_SHARE`] of the range sits out: its share is below the noise of the others'
//! and its block could not be helped if it ran late; so does a device whose *planned* block is
//! under [`MIN_SHARE`], or with data resident on the devices (a session) under
//! [`RESIDENT_MIN_SHARE`].

use std::ops::Range;

use super::sigmoid::{package_cost, transfer_dominated};
use super::{Completion, DeviceHistory, History};
use crate::report::Report;

/// How much the cost per work-group may vary between a device's packages for the kernel to
/// count as regular: on two H200s NBody's packages vary by 1.08 (each package's fixed cost
/// spread over more or fewer groups), Binomial's, Gaussian's and Taylor's by 1.00–1.02, a ray
/// tracer's by 1.7–3.4, Mandelbrot's by a thousand.
pub const REGULAR_SPREAD: f64 = 1.2;

/// A device that merged less than this fraction of the range gets no block.
pub const MIN_SHARE: f64 = 0.02;

/// With data resident on the devices (a session), a device whose planned block is under this
/// fraction of the range sits out. Every launch then waits for that device's own fixed cost,
/// which a first launch's large packages do not show: a PoCL CPU beside one GPU ran 0.55-0.86 ms
/// of kernel per launch for a few work-groups, against 0.45-1 ms for the GPU's whole step, and a
/// chain's 3 % on a CPU beside an H100 ended so late that the next launch re-cut the split again.
pub const RESIDENT_MIN_SHARE: f64 = 0.05;

/// With data resident, a device's second block under this share of the range joins the block
/// it adjoins even where the launch reads no halo: a first launch's last 71 of 262 144 units
/// (0.03 %), left as a second block on one of two H100s, ran as a kernel of its own at every
/// Black-Scholes step, 0.294-0.307 ms a step against 0.284-0.288 for a split without one.
/// Moving it once (0.4 MB) cost a ten-step loop 0.26 ms, so a first launch leaves none
/// (`Regions`).
pub const TINY_SHARE: f64 = 1e-3;

/// How many of a form's last times [`RecentTimes`] keeps: their median is the form's time, so
/// that one noisy call does not switch forms (memory-bound calls of 10–50 ms on an H200 vary by
/// 10–15 % from call to call).
pub const TIMES_KEPT: usize = 3;

/// The last [`TIMES_KEPT`] times of one form of a repeated launch, oldest first, whose median
/// judges a plan against the default balancer (hetdsl's repeated one-shot launches, and
/// hetdsl-mpi's rank plans against fresh calls).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RecentTimes(Vec<f64>);

impl RecentTimes {
    /// Keeps `seconds`, forgetting the oldest time beyond [`TIMES_KEPT`].
    pub fn push(&mut self, seconds: f64) {
        if self.0.len() == TIMES_KEPT {
            self.0.remove(0);
        }
        self.0.push(seconds);
    }

    /// The median of the kept times (the lower middle of an even count); `None` if none.
    pub fn median(&self) -> Option<f64> {
        let mut t = self.0.clone();
        t.sort_by(f64::total_cmp);
        t.get(t.len().saturating_sub(1) / 2).copied()
    }

    /// The kept times, oldest first.
    pub fn times(&self) -> &[f64] {
        &self.0
    }
}

/// A relaunch that ended with a balance below this is not planned from again: the next run
/// starts afresh with Sigmoid.
pub const SETTLED: f64 = 0.9;

/// One measured package: its device, its range, and the seconds it cost that device.
#[derive(Debug, Clone)]
struct Measured {
    device: usize,
    range: Range<u64>,
    seconds: f64,
    /// Its kernel time, where the device gave one: the cost map of an irregular kernel.
    kernel: Option<f64>,
    /// Costed by its span: it has no kernel time, or its transfers dominated it (as Sigmoid
    /// judges a package, [`transfer_dominated`]).
    transfer_bound: bool,
}

/// The one-block-per-device history to replay after `previous`, or `None` where the previous
/// run does not qualify (see the module's documentation).
pub fn one_block_per_device(previous: &Report) -> Option<History> {
    plan(previous, false, false)
}

/// [`one_block_per_device`] for data that stays on the devices between launches (a session):
/// a package costs its kernel time wherever it has one. Its transfers were that launch's moves
/// (a first launch's uploads), which the next launch does not pay: costed by span, an H200
/// that uploaded Black-Scholes' inputs looked slow enough to leave a CPU 600 times slower
/// 1.3 % of the options, 15 ms of CPU kernel in every 0.5 ms step.
pub fn one_block_per_device_resident(previous: &Report) -> Option<History> {
    plan(previous, true, false)
}

/// [`one_block_per_device_resident`] from a replayed split's own launch, even where it ended
/// unbalanced: its kernel times on resident data are what a re-cut of it corrects.
pub fn recut_resident(previous: &Report) -> Option<History> {
    plan(previous, true, true)
}

fn plan(previous: &Report, resident: bool, unsettled: bool) -> Option<History> {
    let total = previous.total_groups;
    let n = previous.devices.len();
    if total == 0 || n == 0 || previous.devices.iter().any(|d| d.fault.is_some()) {
        return None;
    }
    // A relaunch that ended far from balanced: the cost moved along the range (new data) or
    // the devices' speeds depend on each other (devices sharing cores); measure afresh.
    let relaunched = ["replay", "relaunch"].iter().any(|n| previous.balancer.starts_with(n));
    if relaunched && previous.balance < SETTLED && !unsettled {
        return None;
    }
    let mut measured = measured_packages(previous, resident);
    if !tiles(&measured, total)
        || measured.iter().any(|m| m.seconds.is_nan() || m.seconds <= 0.0 || m.device >= n)
    {
        return None;
    }
    let names: Vec<&str> = previous.devices.iter().map(|d| d.name.as_str()).collect();
    // Moving bytes costs the same per group wherever the group lies: a memory-bound kernel
    // is planned as a regular one (the spans of its overlapping packages make no cost map).
    let regular = regular(&names, &measured, total) || mostly_transfers(&measured);
    if !regular {
        for m in &mut measured {
            m.seconds = m.kernel.unwrap_or(m.seconds);
        }
    }
    // An irregular kernel's lines are flat: its speeds alone, which its cost map also needs.
    let (mut lines, speeds) = if regular {
        (cost_lines(&names, &measured, total), Vec::new())
    } else {
        let speeds = model_speeds(&names, &measured);
        (speeds.iter().map(|s| s.map(|s| (0.0, s))).collect(), speeds)
    };
    for (d, line) in lines.iter_mut().enumerate() {
        let groups: u64 =
            measured.iter().filter(|m| m.device == d).map(|m| m.range.end - m.range.start).sum();
        if (groups as f64) < MIN_SHARE * total as f64 {
            *line = None;
        }
    }
    let blocks = loop {
        let blocks = if regular {
            cut(total, &lines)?
        } else {
            let taking: Vec<bool> = lines.iter().map(Option::is_some).collect();
            cut_by_cost(&measured, total, &speeds, &taking)?
        };
        // A planned block under MIN_SHARE is not worth its device either: a PoCL device 400
        // times slower that had merged over 2 % of a first run got one work-group of 1024,
        // and the run waited for its set-up and latency (balance 0.47). With resident data the
        // floor is higher (see RESIDENT_MIN_SHARE): such a block also moves data at its two
        // boundaries.
        let floor = if resident { RESIDENT_MIN_SHARE } else { MIN_SHARE };
        let slivers: Vec<usize> = (0..n)
            .filter(|&d| lines[d].is_some())
            .filter(|&d| {
                let held = blocks[d].as_ref().map_or(0, |b| b.end - b.start);
                (held as f64) < floor * total as f64
            })
            .collect();
        if slivers.is_empty() || slivers.len() == lines.iter().flatten().count() {
            break blocks;
        }
        for d in slivers {
            lines[d] = None;
        }
    };
    Some(History {
        total_groups: total,
        devices: (0..n)
            .map(|d| DeviceHistory {
                speed: match (&blocks[d], lines[d]) {
                    (Some(_), Some((_, speed))) => speed,
                    _ => 0.0,
                },
                owned: blocks[d].clone().into_iter().collect(),
            })
            .collect(),
    })
}

/// A block's first half must cost this many times its second half, as `previous` measured
/// them, for its pieces to run from its end ([`falling_blocks`]): a regular kernel's halves
/// differ by their packages' noise.
const FALLING: f64 = 1.2;

/// Per device of `plan`, whether the cost of its block (its first range) falls along it, as
/// `previous` measured it: kernel times where the device gave them, each package's spread
/// evenly over its groups. A map from one package per device is flat and says no.
pub(crate) fn falling_blocks(previous: &Report, plan: &History) -> Vec<bool> {
    let measured = measured_packages(previous, false);
    let cost = |from: u64, to: u64| {
        spread(&measured, from as f64, to as f64, |m| m.kernel.unwrap_or(m.seconds))
    };
    (plan.devices.iter())
        .map(|d| {
            d.owned.first().is_some_and(|b| {
                let mid = b.start + (b.end - b.start) / 2;
                cost(b.start, mid) > FALLING * cost(mid, b.end)
            })
        })
        .collect()
}

/// The merged packages of `previous`, in range order, costed as [`plan`] costs them.
fn measured_packages(previous: &Report, resident: bool) -> Vec<Measured> {
    let mut measured: Vec<Measured> = previous
        .trace
        .iter()
        .filter(|t| t.merged)
        .map(|t| {
            let done = Completion {
                device: t.device,
                package: t.package,
                kernel_seconds: previous.kernel_seconds_at_own_rate(t).unwrap_or(0.0),
                host_start: t.host_start,
                host_end: t.host_end,
            };
            let k = done.kernel_seconds;
            let timed = k.is_finite() && k > 0.0;
            // No fill: the looser bound for one-fill probes is for Sigmoid's live speeds.
            let seconds = if resident && timed { k } else { package_cost(&done, 0) };
            let transfer_bound = !timed || (!resident && transfer_dominated(&done, 0));
            let range = t.package.offset..t.package.end();
            let kernel = timed.then_some(k);
            Measured { device: t.device, range, seconds, kernel, transfer_bound }
        })
        .collect();
    measured.sort_by_key(|m| m.range.start);
    measured
}

/// Sorted packages cover `0..total` exactly once.
fn tiles(measured: &[Measured], total: u64) -> bool {
    let mut next = 0;
    for m in measured {
        if m.range.start != next || m.range.end <= m.range.start {
            return false;
        }
        next = m.range.end;
    }
    next == total
}

/// Most work-groups (more than half) ran in transfer-bound packages.
fn mostly_transfers(measured: &[Measured]) -> bool {
    let (mut bound, mut all) = (0u64, 0u64);
    for m in measured {
        all += m.range.end - m.range.start;
        if m.transfer_bound {
            bound += m.range.end - m.range.start;
        }
    }
    2 * bound > all
}

/// Every device model's cost per group (over the packages of at least 1 % of the range of all
/// devices of that name) varies by at most [`REGULAR_SPREAD`].
fn regular(names: &[&str], measured: &[Measured], total: u64) -> bool {
    let floor = (total as f64 * 0.01).max(1.0);
    names.iter().all(|name| {
        let per_group: Vec<f64> = measured
            .iter()
            .filter(|m| names[m.device] == *name && (m.range.end - m.range.start) as f64 >= floor)
            .map(|m| m.seconds / (m.range.end - m.range.start) as f64)
            .collect();
        let lo = per_group.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = per_group.iter().copied().fold(0.0, f64::max);
        per_group.is_empty() || hi <= REGULAR_SPREAD * lo
    })
}

/// Per device, its cost of `n` work-groups as `fixed + n / speed` (seconds), fitted by least
/// squares to the packages of every device of its name (a regular kernel costs the same per
/// group everywhere; what varies with the package is its fixed cost, the uneven end of its last
/// wave). The fixed cost is kept
/// between 0 and half the device's cheapest package; a device with packages of one size only
/// gets none. `None` for a device that measured nothing.
fn cost_lines(names: &[&str], measured: &[Measured], total: u64) -> Vec<Option<(f64, f64)>> {
    // Packages under 1 % of the range are left out where the device has larger ones: a few
    // work-groups (a back-up of a slow device's probe) run at a single group's latency.
    let floor = total as f64 * 0.01;
    (0..names.len())
        .map(|d| {
            if !measured.iter().any(|m| m.device == d) {
                return None;
            }
            // Devices of one name are one model: their packages are fitted together, so that
            // the noise of two or three packages each does not split identical GPUs unevenly.
            let all: Vec<(f64, f64)> = measured
                .iter()
                .filter(|m| names[m.device] == names[d])
                .map(|m| ((m.range.end - m.range.start) as f64, m.seconds))
                .collect();
            let large: Vec<(f64, f64)> = all.iter().copied().filter(|p| p.0 >= floor).collect();
            let points = if large.is_empty() { all } else { large };
            let groups: f64 = points.iter().map(|p| p.0).sum();
            let seconds: f64 = points.iter().map(|p| p.1).sum();
            if !(groups > 0.0 && seconds > 0.0) {
                return None;
            }
            let k = points.len() as f64;
            let (mx, my) = (groups / k, seconds / k);
            let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
            let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
            let cheapest = points.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
            let fixed = if sxx > 0.0 && sxy > 0.0 {
                (my - sxy / sxx * mx).clamp(0.0, 0.5 * cheapest)
            } else {
                0.0
            };
            // The speed that gives the device's measured total with that fixed cost per package.
            let per_group = (seconds - k * fixed) / groups;
            (per_group > 0.0).then(|| (fixed, 1.0 / per_group))
        })
        .collect()
}

/// Groups per device so that all end together, each running one package: with every device's
/// cost `fixed + n / speed`, the common time is T = (G + Σ fixed·speed) / Σ speed. A device whose
/// share comes out empty sits out and the rest are planned again. Blocks are laid end to end in
/// device order. `None` if no device takes part.
fn cut(total: u64, lines: &[Option<(f64, f64)>]) -> Option<Vec<Option<Range<u64>>>> {
    let mut part: Vec<bool> = lines.iter().map(Option::is_some).collect();
    let shares = loop {
        let (mut speed, mut offset) = (0.0, 0.0);
        for (fixed, s) in lines.iter().zip(&part).filter(|(_, p)| **p).filter_map(|(l, _)| *l) {
            speed += s;
            offset += fixed * s;
        }
        if speed <= 0.0 {
            return None;
        }
        let time = (total as f64 + offset) / speed;
        let shares: Vec<f64> = lines
            .iter()
            .zip(&part)
            .map(|(l, p)| match (l, p) {
                (Some((fixed, s)), true) => (time - fixed) * s,
                _ => 0.0,
            })
            .collect();
        let empty: Vec<usize> = (0..lines.len()).filter(|&d| part[d] && shares[d] < 1.0).collect();
        if empty.is_empty() {
            break shares;
        }
        for d in empty {
            part[d] = false;
        }
    };
    let last = (0..lines.len()).filter(|&d| part[d]).max()?;
    let mut blocks = vec![None; lines.len()];
    let (mut start, mut exact) = (0u64, 0.0);
    for d in (0..lines.len()).filter(|&d| part[d]) {
        exact += shares[d];
        let end = if d == last { total } else { (exact.round() as u64).clamp(start, total) };
        if end > start {
            blocks[d] = Some(start..end);
        }
        start = end;
    }
    Some(blocks)
}

/// Per device, the work-groups per second of every device of its name over all their packages;
/// `None` for a device that measured nothing.
fn model_speeds(names: &[&str], measured: &[Measured]) -> Vec<Option<f64>> {
    (0..names.len())
        .map(|d| {
            if !measured.iter().any(|m| m.device == d) {
                return None;
            }
            let of_model = measured.iter().filter(|m| names[m.device] == names[d]);
            let (groups, seconds) = of_model
                .fold((0u64, 0.0), |(g, s), m| (g + (m.range.end - m.range.start), s + m.seconds));
            (seconds > 0.0).then(|| groups as f64 / seconds)
        })
        .collect()
}

/// Blocks for an irregular kernel: the cost of each work-group on the fastest model, taken from
/// the package that ran it (its seconds spread evenly over its groups, scaled by its device
/// model's speed, `speeds`, against the fastest), and blocks laid end to end in device order
/// for the devices `taking` part, each holding the cost its device ends in the common time.
/// `None` if no device takes part.
fn cut_by_cost(
    measured: &[Measured],
    total: u64,
    speeds: &[Option<f64>],
    taking: &[bool],
) -> Option<Vec<Option<Range<u64>>>> {
    let fastest = speeds.iter().flatten().copied().fold(0.0, f64::max);
    // Reference seconds of groups 0..g.
    let cost_to = |g: f64| -> f64 {
        spread(measured, 0.0, g, |m| m.seconds * speeds[m.device].unwrap_or(fastest) / fastest)
    };
    let whole = cost_to(total as f64);
    let taking: Vec<(usize, f64)> = (0..speeds.len())
        .filter(|&d| taking[d])
        .filter_map(|d| speeds[d].map(|v| (d, v)))
        .collect();
    // A device of speed v ends reference cost c in c · fastest / v seconds.
    let rate: f64 = taking.iter().map(|(_, v)| v / fastest).sum();
    if !(fastest > 0.0 && rate > 0.0 && whole > 0.0) {
        return None;
    }
    let time = whole / rate;
    let mut blocks = vec![None; speeds.len()];
    let (mut start, mut cost) = (0u64, 0.0);
    for (i, &(d, v)) in taking.iter().enumerate() {
        let end = if i + 1 == taking.len() {
            total
        } else {
            cost += time * v / fastest;
            group_at(&cost_to, cost, start, total)
        };
        if end > start {
            blocks[d] = Some(start..end);
        }
        start = end;
    }
    Some(blocks)
}

/// The seconds of groups `from..to` by `measured`, each package's `seconds` spread evenly over
/// its groups.
fn spread(measured: &[Measured], from: f64, to: f64, seconds: impl Fn(&Measured) -> f64) -> f64 {
    (measured.iter())
        .map(|m| {
            let (s, e) = (m.range.start as f64, m.range.end as f64);
            seconds(m) / (e - s) * (to.min(e) - from.max(s)).max(0.0)
        })
        .sum()
}

/// The group boundary in `from..=total` whose cost from 0 is nearest `target` (bisection: the
/// cost grows with the group).
fn group_at(cost_to: &dyn Fn(f64) -> f64, target: f64, from: u64, total: u64) -> u64 {
    let (mut lo, mut hi) = (from, total);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if cost_to(mid as f64) < target {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    // `lo` is the first boundary at or past the target; the one before may be nearer.
    if lo > from && target - cost_to((lo - 1) as f64) < cost_to(lo as f64) - target {
        lo - 1
    } else {
        lo
    }
}

#[cfg(test)]
mod tests;
