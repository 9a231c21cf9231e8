//! Sigmoid (Sigmoid paper, Algorithm 1): package sizes that follow a logistic curve of the work
//! left, weighted by each device's measured speed, with a slope that turns gentle for good once the
//! kernel shows itself irregular, and two lower bounds (imbalance and occupancy).
//!
//! Per package for device j, with x work-groups left out of G, N devices, speeds S (work-groups
//! per second, the mean of the last 3 packages) and t seconds since the run began:
//!
//! ```text
//! f(x)   = G/(2N) · (1 − e^{−6kx/G}) / (1 + e^{−6kx/G})        (= G/(2N) · tanh(3kx/G))
//! first  = f(x) · S_j/S_T                                         (Algorithm 1, line 5)
//! later  = max(f(x) · S_j/S_T, p·t·S_j, oc_j)                     (line 16)
//! k      = k_r = 2 until σ(S_j)/S_j > d = 0.25 on any device, then k_i = 0.5 for good
//! ```
//!
//! with p = 0.05 and oc_j the occupancy lower bound ([`DeviceProfile::min_groups`]). The first
//! speeds are nominal GFLOP/s, rescaled onto the measured scale as measurements arrive (see
//! `speeds.rs`). Sizes are floored to whole work-groups, at least 1 and at most x. σ is the
//! population standard deviation of the same (up to 3) speeds the mean is taken over.
//!
//! # The probe-and-horizon guard (our extension, on by default)
//!
//! Nominal GFLOP/s can be far off for a given kernel: a CPU beside a big GPU can be twenty times
//! slower in fact than on paper, so the faithful first CPU package runs longer than the GPU needs
//! for the whole problem. The figures behind each point are in `docs/RESULTS.md` ("The
//! measurements behind Sigmoid's guard"). The guard keeps the curve, the slopes and the bounds
//! above, and adds:
//!
//! 1. **Probe.** A device without a measured speed gets one occupancy-bound package (`oc_j`
//!    work-groups: the fewest that fill it, so its speed is representative) instead of a
//!    nominal-speed share: nothing large is committed before its real speed is known.
//! 2. **Horizon.** From the measured speeds and the packages still running (an overdue one is
//!    expected to overrun by as much again as it has so far), predict the instant E at which
//!    the run would end if the work left were spread so that every device finishes together
//!    (the min–max point of `model.rs`). A package is cut so that it is predicted to end by E,
//!    but never below `oc_j`, nor below p·t/v seconds of work (v as in 3): the p·t seconds of
//!    imbalance the paper tolerates, should the work cost v times what it did. When it
//!    would leave less than `oc_j` behind (a crumb that costs a whole fill), it takes everything
//!    unless another device could run the crumb beside it and end sooner.
//! 3. **Irregularity margin.** Let v be the widest ratio of fastest to slowest speed any device
//!    has shown in the run (1 for a regular kernel). A device slower than the mean device plans
//!    as if the run could end v^e times sooner and its package take v^e times longer, with
//!    e = 1 − N·best_j/Σ best (its best speed relative to the mean; e ≤ 0 means no margin):
//!    an overrun by a device that adds little idles everyone else, while fast devices are left
//!    to Sigmoid's own k_i, as in the paper (`horizon.rs`). Only a device of a slower class
//!    (below) gets a margin: a peer's lower speed comes from the region it ran, not from what
//!    it is.
//! 4. **Wait.** If even `oc_j` work-groups would end after E, and the devices already running
//!    would, once free, finish everything left before this device finished them (at its best
//!    speed, under its margin), the device is told [`Next::Wait`](super::Next::Wait). It waits
//!    only on running devices, which will report back, so the run always progresses. A device
//!    hundreds of times slower therefore only takes work it can finish before the fast ones.
//!    Only a device of a slower class waits: nominally more than [`SLOW_CLASS`] (4) times below
//!    the fastest. Among nominal peers, measured speeds differ by the region each happened to
//!    run on an irregular kernel, not by what the devices are, and making one wait for the
//!    other idles it for most of the run; a peer whose package would overrun takes its
//!    occupancy bound instead.
//!
//! 5. **Harmonic speeds.** The guard plans with the harmonic mean of the last 3 speeds instead
//!    of their mean (`speeds.rs`): on an irregular kernel one package on cheap work measures many
//!    times the speed of the next, and the plain mean sizes a package that runs most of the run.
//! 6. **Tail.** With fewer than two fills per device left, a peer takes exactly its share of
//!    the common end E, even below its occupancy bound (to a third of it): bound-sized packages
//!    there leave one GPU a whole fill behind the other.
//! 7. **Room for a back-up.** A slower-class device's package must end by E minus the time a
//!    fast device needs for a partial fill, so that if it is late the engine's speculative
//!    back-up can still end by E.
//! 8. **Cost trend.** Where time per work-group rises steadily along the range (a straight
//!    line over the recent packages of a class of devices, R² ≥ 0.8), the work left costs more
//!    than the speeds measured behind the front say: speeds are slowed by the line's ratio
//!    (at most 4×) for the common end and for each package (`trend.rs`), so that a kernel such as
//!    RAP, whose cost keeps rising, is planned with what is ahead. A device of a slower class only
//!    ever gets the smaller package from it, never a later end.
//!
//! 9. **Whole waves.** Outside the tail, a package over one fill is cut down to a whole number
//!    of fills (`oc_j`): a GPU runs its work-groups in waves of `oc_j`, and a partial last
//!    wave costs as long as a full one while most of the device idles (measured on an H100:
//!    NBody packages of 2.6 fills ran at 142–170 µs per work-group against 133 alone).
//!
//! 10. **End-to-end cost.** A package's seconds are its kernel time while the kernel is most of
//!     its span (hand-out to completion), and the whole span once the span is more than
//!     [`TRANSFER_BOUND`] times the kernel ([`package_cost`]): a memory-bound kernel such as
//!     saxpy spends a few percent of a package on an H200 in the kernel and the rest moving
//!     bytes, and speeds taken from the kernel made two identical GPUs split the range 2 : 1
//!     and made a CPU whose copies cost as much as its kernel look worth feeding. A device
//!     whose last [`TRANSFER_STREAK`] packages cost mostly transfers sizes its packages by the
//!     horizon alone ([`TRANSFER_CAP_SHARE`] of the cap, in whole fills) rather than by the
//!     curve: transfers cost per byte, so larger packages lose nothing to irregularity and
//!     save each package's fixed cost. The probe is the device's share of the whole range
//!     where that is less than a fill, so that a range of a fill or two is split, not taken
//!     whole by the first GPU to ask.
//!
//! 11. **Worst case for a slow device.** A device of a slower class whose packages have run
//!     more than [`SLOW_SPREAD`] times apart sizes its next package at the slowest speed it has
//!     shown, not its recent mean. On Aho (text of cheap random stretches and costly repeats) a
//!     PoCL CPU beside an H200 ran a one-fill probe at 190 work-groups per second, then three
//!     small packages on cheap text at about 500 000; from those it took 18 176 work-groups,
//!     over 20 s of CPU work in a run the H200 ends in 1.2 s, and its thread stayed out long
//!     after. An overrun by a device that adds little idles or delays everyone else, and its
//!     shortfall costs little.
//!
//! 12. **Slow growth for a slow device.** Until its speed is averaged over a full history
//!     (3 packages), a device of a slower class takes at most [`SLOW_GROWTH`] times the
//!     largest package it has completed. One package's speed is no evidence on an irregular
//!     kernel (point 11 needs two packages far apart to act), and what a slow device risks by
//!     overrating itself is bounded by the size of what it takes.
//!
//! 13. **Queued ahead.** A device of the faster class whose speed is averaged over a full
//!     history may have its next package planned while its current one runs, from the instant
//!     that one should end, and queued behind it ([`Balancer::next_ahead`]), so that the
//!     device goes from kernel to kernel without waiting for the host; only while the work
//!     left after it keeps every device busy for twice as long as it keeps this one.
//!
//! [`Sigmoid::faithful`] keeps the paper's algorithm exactly, without the guard.

use super::horizon::{DeviceView, Outlook};
use super::speeds::SpeedBook;
use super::trend::CostTrend;
use super::{check_setup, Balancer, Completion, DeviceProfile, Next, Package, Remaining, Setup};
use crate::error::{Error, Result};

/// The paper's constants (Sigmoid paper, §3.4); all have defaults, none needs tuning.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SigmoidParams {
    /// Slope while the kernel looks regular (k_r = 2).
    pub k_regular: f64,
    /// Slope once the kernel has shown itself irregular (k_i = 0.5).
    pub k_irregular: f64,
    /// Irregularity threshold d on σ(S_j)/S_j (0.25).
    pub irregularity: f64,
    /// Maximum imbalance p: packages of at least p·t·S_j (0.05).
    pub max_imbalance: f64,
    /// Packages a device's speed is averaged over (3).
    pub history: usize,
    /// Guarded form only: outside the tail, a package larger than one fill is cut down to a
    /// whole number of fills (`oc_j`), since its partial last wave costs a whole one.
    #[serde(default = "whole_waves_default")]
    pub whole_waves: bool,
}

fn whole_waves_default() -> bool {
    true
}

impl Default for SigmoidParams {
    fn default() -> Self {
        SigmoidParams {
            k_regular: 2.0,
            k_irregular: 0.5,
            irregularity: 0.25,
            max_imbalance: 0.05,
            history: 3,
            whole_waves: true,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Running {
    package: Package,
    since: f64,
}

/// The Sigmoid balancer. [`Sigmoid::default`] is the guarded form, [`Sigmoid::faithful`] the
/// paper's.
#[derive(Debug, Clone)]
pub struct Sigmoid {
    params: SigmoidParams,
    guarded: bool,
    total: u64,
    occupancy: Vec<u64>,
    left: Remaining,
    speeds: SpeedBook,
    /// Time per work-group against position (guard point 8).
    trend: CostTrend,
    irregular: bool,
    alive: Vec<bool>,
    running: Vec<Option<Running>>,
    /// Queued behind `running` (guard point 13), planned from when that one should end.
    queued: Vec<Option<Running>>,
    handed_first: Vec<bool>,
    /// Devices nominally far slower than the fastest (see [`SLOW_CLASS`]): only they may be
    /// told to wait.
    slow_class: Vec<bool>,
    /// Per device, how many packages in a row cost mostly transfers (guard point 10).
    transfer_bound: Vec<u32>,
}

/// A device whose nominal speed is more than this many times below the fastest device's is of
/// a slower class (a CPU beside a big GPU). Devices closer than that are peers: on an irregular
/// kernel their measured speeds differ by the region each happened to run, not by what they
/// are, so the guard must never park one of them waiting for the other.
///
/// 4, not more: nominal GFLOP/s count a CPU's AVX-512 peak, which PoCL kernels come nowhere
/// near, so a big many-core CPU looks close to a GPU on paper (a threshold of 8 took one for a
/// peer). Peers in the papers' machines (an iGPU beside a discrete GPU, 2.6x) stay peers.
pub const SLOW_CLASS: f64 = 4.0;

impl Default for Sigmoid {
    fn default() -> Self {
        Self::guarded()
    }
}

impl Sigmoid {
    /// Sigmoid with the probe-and-horizon guard (the default balancer).
    pub fn guarded() -> Self {
        Self::new(SigmoidParams::default(), true)
    }
    /// Sigmoid exactly as the Sigmoid paper's Algorithm 1.
    pub fn faithful() -> Self {
        Self::new(SigmoidParams::default(), false)
    }
    /// Other constants, with or without the guard.
    pub fn new(params: SigmoidParams, guarded: bool) -> Self {
        Sigmoid {
            params,
            guarded,
            total: 0,
            occupancy: Vec::new(),
            left: Remaining::default(),
            speeds: SpeedBook::default(),
            trend: CostTrend::default(),
            irregular: false,
            alive: Vec::new(),
            running: Vec::new(),
            queued: Vec::new(),
            handed_first: Vec::new(),
            slow_class: Vec::new(),
            transfer_bound: Vec::new(),
        }
    }

    fn slope(&self) -> f64 {
        if self.irregular {
            self.params.k_irregular
        } else {
            self.params.k_regular
        }
    }

    fn live(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.alive.len()).filter(|&d| self.alive[d])
    }

    /// f(x) · S_j / S_T, in (fractional) work-groups.
    fn curve_size(&self, device: usize) -> f64 {
        let g = self.total as f64;
        let n = self.live().count().max(1) as f64;
        let x = self.left.left() as f64;
        let e = (-6.0 * self.slope() * x / g).exp();
        let f = g / (2.0 * n) * (1.0 - e) / (1.0 + e);
        let total_speed: f64 = self.live().map(|d| self.speeds.speed(d)).sum();
        f * self.speeds.speed(device) / total_speed
    }

    /// Line 16: the curve, the imbalance bound p·t·S_j and the occupancy bound.
    fn bounded_size(&self, device: usize, now: f64) -> f64 {
        let imbalance = self.params.max_imbalance * now * self.speeds.speed(device);
        self.curve_size(device).max(imbalance).max(self.occupancy[device] as f64)
    }

    /// The guarded form's package for a measured device, or `None`: wait.
    fn guarded_size(&self, device: usize, now: f64) -> Option<f64> {
        let views = self.device_views(device, now);
        let outlook = Outlook {
            devices: &views,
            left: self.left.left() as f64,
            variability: self.speeds.variability(),
            tolerated: self.params.max_imbalance * now,
        };
        let cap = outlook.cap(device)?;
        // In the tail the cap is the device's share of the common end; earlier, it only trims
        // Sigmoid's own size, unless the device's packages cost mostly transfers (point 10).
        let fill = self.occupancy[device] as f64;
        let size = if outlook.in_tail(device) && cap.is_finite() {
            cap.floor()
        } else if self.transfer_bound[device] >= TRANSFER_STREAK && cap.is_finite() {
            self.whole_fills(device, (cap * TRANSFER_CAP_SHARE).max(fill).floor())
        } else {
            self.whole_fills(device, self.bounded_size(device, now).min(cap).floor())
        };
        let size = self.grown_at_most(device, size);
        Some(if outlook.takes_all(device, size) { outlook.left } else { size })
    }

    /// `size`, or for a device of a slower class whose speed is averaged over fewer packages
    /// than a full history, at most [`SLOW_GROWTH`] times the largest of them (guard point 12),
    /// while a device of the faster class is still in the run (alone, a slow device keeps no
    /// one waiting).
    fn grown_at_most(&self, device: usize, size: f64) -> f64 {
        let fast_alive = self.live().any(|d| !self.slow_class[d]);
        let (packages, largest) = self.speeds.recent(device);
        let ramping = (1..self.params.history).contains(&packages);
        match self.slow_class[device] && fast_alive && ramping {
            true => size.min(SLOW_GROWTH * largest),
            false => size,
        }
    }

    /// Guard point 1's probe: one fill, or the device's share of the whole range (rounded up, so
    /// that the shares leave no crumb behind) where
    /// that is less (a range of a fill or two, as a matrix-vector product over 1024 groups of
    /// 64 rows makes, would otherwise go whole to whichever GPU asks first).
    fn probe_size(&self, device: usize) -> f64 {
        let fill = self.occupancy[device] as f64;
        let total: f64 = self.live().map(|d| self.speeds.speed(d)).sum();
        let share = self.total as f64 * self.speeds.speed(device) / total;
        if share.is_finite() {
            fill.min(share.ceil().max(1.0))
        } else {
            fill
        }
    }

    /// `size` cut down to whole fills of `device` (guard point 9), when it is over one fill.
    fn whole_fills(&self, device: usize, size: f64) -> f64 {
        let fill = self.occupancy[device] as f64;
        if !self.params.whole_waves || size <= fill || !size.is_finite() {
            return size;
        }
        (size / fill).floor() * fill
    }

    /// What the guard's horizon rule sees of each device now, as `device` plans. Where the
    /// cost of a work-group rises along the range, speeds measured behind the front are slowed
    /// down by the trend (point 8): `device`'s own speed on its next package (a share of the
    /// work left, from the front); and, when `device` is a peer, every device's speed on the
    /// work left and a running package's on its own range, which move the common end later. A
    /// device of a slower class plans with the earlier end, as without the trend: a later end
    /// would let it take more, and its overrun is the costly one.
    fn device_views(&self, device: usize, now: f64) -> Vec<DeviceView> {
        let left = self.left.range();
        let (front, end) = (left.start as f64, left.end as f64);
        let share = (end - front) / self.live().count().max(1) as f64;
        let trend = |d: usize, groups: std::ops::Range<f64>| match self.slow_class[device] {
            true => 1.0,
            false => self.trend.factor(d, groups),
        };
        (0..self.alive.len())
            .map(|d| {
                let measured = self.speeds.speed(d);
                let busy_for = self.running[d].map(|r| {
                    let range = r.package.offset as f64..(r.package.offset + r.package.len) as f64;
                    remaining_seconds(r, measured / trend(d, range), now)
                });
                let ahead = trend(d, front..end);
                let next = match d == device {
                    true => self.trend.factor(d, front..front + share),
                    false => ahead,
                };
                DeviceView {
                    guarded: self.slow_class[d],
                    alive: self.alive[d],
                    speed: measured / ahead,
                    next_speed: self.worst_case(d, measured / next),
                    best: self.speeds.fastest(d).unwrap_or(measured),
                    busy_for,
                    occupancy: self.occupancy[d] as f64,
                }
            })
            .collect()
    }
}

impl Sigmoid {
    /// `speed`, or for a device of a slower class whose packages have run more than
    /// [`SLOW_SPREAD`] times apart, the slowest it has run (guard point 11).
    fn worst_case(&self, device: usize, speed: f64) -> f64 {
        let (Some(fastest), Some(slowest)) =
            (self.speeds.fastest(device), self.speeds.slowest(device))
        else {
            return speed;
        };
        match self.slow_class[device] && fastest > SLOW_SPREAD * slowest {
            true => speed.min(slowest),
            false => speed,
        }
    }
}

/// Guard point 11: how far apart (fastest over slowest) a slower-class device's packages may
/// run before it plans its packages at its slowest speed. Aho's CPU packages ran 3 500 times
/// apart; at 4, the simulated batel machine's CPU (BM3D, seed 7) was starved and its
/// efficiency fell from 0.959 to 0.914, at 16 no simulated scenario moves.
pub const SLOW_SPREAD: f64 = 16.0;

/// Guard point 12: how many times its largest completed package a slower-class device's next
/// package may be, until its speed is averaged over a full history. After a 16-work-group probe
/// on cheap Aho text, a PoCL CPU beside an H100 was handed 21 744 work-groups: 26 s at its mean
/// speed on Aho, in a run the H100 ends in 1.2 s. At 8, a repeated launch's plan from the
/// first launch's speeds fell from 0.981 to 0.911 on the simulated H200 + CPU's aho-random
/// (`tests/learned.rs`); at 32 it keeps up.
pub const SLOW_GROWTH: f64 = 32.0;

/// Seconds `running` is expected to need still, at `speed` work-groups per second. A package
/// already overdue has run into costlier work than the speed says; expect it to overrun by as
/// much again as it has overrun so far. (Expecting it to need its whole elapsed time again
/// made a package a few percent late on a kernel whose cost rises steadily, like RAP, look
/// busy for a whole package more, and the crumb rule then gave the last work-groups to one
/// device instead of splitting them with that one.)
fn remaining_seconds(running: Running, speed: f64, now: f64) -> f64 {
    let planned = running.package.len as f64 / speed;
    let elapsed = now - running.since;
    if elapsed <= planned {
        planned - elapsed
    } else {
        elapsed - planned
    }
}

/// [`TRANSFER_BOUND`] for a package of at most one fill. A one-fill probe of a compute-bound
/// kernel measured 1.5 to 5 times its kernel end to end on the machines simulated (the
/// per-package launch and wait); one of saxpy on an H200 about 180 times.
pub const PROBE_TRANSFER_BOUND: f64 = 10.0;

/// Packages in a row that must cost mostly transfers before a device's packages are sized by
/// the horizon alone (guard point 10): a single one-fill probe can cost mostly the fixed
/// per-package overhead on a compute-bound kernel.
pub const TRANSFER_STREAK: u32 = 2;
/// The share of the horizon's cap a transfer-bound device takes per package: taking it all in
/// one package left two GPUs 15 % apart with no package left to even them out.
pub const TRANSFER_CAP_SHARE: f64 = 0.75;

/// The span of a package (hand-out to completion: input writes, kernel, the read-back the
/// device did meanwhile, host copies) over its kernel time beyond which the span is what the
/// package cost the device, and so what its speed is measured from.
pub const TRANSFER_BOUND: f64 = 2.0;

/// Seconds `done` cost its device, as the guard plans with them. The kernel time, where the
/// kernel is most of the span: it leaves out the host's own delays. The whole span where
/// transfers dominate it ([`transfer_dominated`]): on a memory-bound kernel the transfers are
/// the package's cost, and a speed measured from a kernel a hundred times shorter has two
/// identical GPUs split the range unevenly and a slow CPU look worth feeding.
pub fn package_cost(done: &Completion, fill: u64) -> f64 {
    let kernel = done.kernel_seconds;
    if !(kernel.is_finite() && kernel > 0.0) || transfer_dominated(done, fill) {
        done.host_end - done.host_start
    } else {
        kernel
    }
}

/// Whether `done` spent more than [`TRANSFER_BOUND`] times its kernel time outside the kernel,
/// or [`PROBE_TRANSFER_BOUND`] times for a package of at most one fill (`fill` work-groups) of
/// its device, whose fixed per-package cost alone can outweigh a short kernel several times
/// over. Never when the device gave no kernel time: then nothing tells the two apart.
pub(super) fn transfer_dominated(done: &Completion, fill: u64) -> bool {
    let kernel = done.kernel_seconds;
    let bound = if done.package.len <= fill { PROBE_TRANSFER_BOUND } else { TRANSFER_BOUND };
    kernel.is_finite() && kernel > 0.0 && done.host_end - done.host_start > bound * kernel
}

impl Balancer for Sigmoid {
    fn name(&self) -> String {
        if self.guarded {
            "sigmoid".into()
        } else {
            "sigmoid-faithful".into()
        }
    }

    fn start(&mut self, setup: &Setup) -> Result<()> {
        check_setup(setup)?;
        let p = &self.params;
        let sane = |x: f64| x.is_finite() && x > 0.0;
        if !(sane(p.k_regular)
            && sane(p.k_irregular)
            && sane(p.irregularity)
            && p.max_imbalance >= 0.0)
            || p.history == 0
        {
            return Err(Error::BadBalancer(format!("sigmoid parameters out of range: {p:?}")));
        }
        let n = setup.devices.len();
        let nominal: Vec<f64> = setup.devices.iter().map(|d| d.nominal_gflops).collect();
        self.total = setup.total_groups;
        self.occupancy =
            setup.devices.iter().map(|d: &DeviceProfile| d.min_groups.max(1)).collect();
        self.left = Remaining::new(setup.total_groups);
        self.speeds = SpeedBook::new(&nominal, p.history);
        self.trend = CostTrend::new(&nominal, setup.total_groups, p.history);
        if self.guarded {
            self.speeds = std::mem::take(&mut self.speeds).harmonic();
        }
        self.irregular = false;
        self.alive = vec![true; n];
        self.running = vec![None; n];
        self.queued = vec![None; n];
        self.handed_first = vec![false; n];
        self.transfer_bound = vec![0; n];
        let fastest = nominal.iter().copied().fold(0.0, f64::max);
        self.slow_class = nominal.iter().map(|&g| g * SLOW_CLASS < fastest).collect();
        Ok(())
    }

    fn next(&mut self, device: usize, now: f64) -> Next {
        if !self.alive.get(device).copied().unwrap_or(false) || self.left.is_empty() {
            return Next::Done;
        }
        let size = if !self.guarded {
            if self.handed_first[device] {
                self.bounded_size(device, now)
            } else {
                self.curve_size(device)
            }
        } else if self.speeds.measured(device).is_none() {
            self.probe_size(device)
        } else {
            match self.guarded_size(device, now) {
                Some(size) => size,
                None => return Next::Wait,
            }
        };
        let len = if size.is_finite() { size.floor() as u64 } else { 1 };
        let Some(package) = self.left.take(len) else {
            return Next::Done;
        };
        self.handed_first[device] = true;
        self.running[device] = Some(Running { package, since: now });
        Next::Run(package)
    }

    fn completed(&mut self, done: &Completion) {
        let fill = self.occupancy.get(done.device).copied().unwrap_or(1);
        let seconds = match self.guarded {
            true => package_cost(done, fill),
            false if done.kernel_seconds > 0.0 => done.kernel_seconds,
            false => done.host_end - done.host_start,
        };
        if let Some(t) = self.transfer_bound.get_mut(done.device) {
            *t = if transfer_dominated(done, fill) { *t + 1 } else { 0 };
        }
        self.speeds.record(done.device, done.package.len, seconds);
        if self.guarded {
            let full = self.occupancy.get(done.device).is_some_and(|&oc| done.package.len >= oc);
            self.trend.record(done.device, done.package, seconds, full);
        }
        if let Some((mean, sd)) = self.speeds.measured(done.device) {
            if sd / mean > self.params.irregularity {
                self.irregular = true;
            }
        }
        self.promote(done.device, done.package, done.host_end);
    }

    fn next_ahead(&mut self, device: usize, now: f64) -> Next {
        self.ahead(device, now)
    }

    fn device_lost(&mut self, device: usize) {
        if let Some(a) = self.alive.get_mut(device) {
            *a = false;
            self.running[device] = None;
            self.queued[device] = None;
        }
    }
}

mod ahead;
#[cfg(test)]
mod tests;
