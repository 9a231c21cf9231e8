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
    handed_first: Vec<bool>,
    /// Devices nominally far slower than the fastest (see [`SLOW_CLASS`]): only they may be
    /// told to wait.
    slow_class: Vec<bool>,
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
            handed_first: Vec::new(),
            slow_class: Vec::new(),
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
                    next_speed: measured / next,
                    best: self.speeds.fastest(d).unwrap_or(measured),
                    busy_for,
                    occupancy: self.occupancy[d] as f64,
                }
            })
            .collect()
    }
}

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
        self.handed_first = vec![false; n];
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
            self.occupancy[device] as f64
        } else {
            let views = self.device_views(device, now);
            let outlook = Outlook {
                devices: &views,
                left: self.left.left() as f64,
                variability: self.speeds.variability(),
                tolerated: self.params.max_imbalance * now,
            };
            match outlook.cap(device) {
                Some(cap) => {
                    // In the tail the cap is the device's share of the common end; earlier,
                    // it only trims Sigmoid's own size.
                    let size = if outlook.in_tail(device) && cap.is_finite() {
                        cap.floor()
                    } else {
                        self.whole_fills(device, self.bounded_size(device, now).min(cap).floor())
                    };
                    if outlook.takes_all(device, size) {
                        outlook.left
                    } else {
                        size
                    }
                }
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
        let seconds = if done.kernel_seconds > 0.0 {
            done.kernel_seconds
        } else {
            done.host_end - done.host_start
        };
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
        if let Some(slot) = self.running.get_mut(done.device) {
            if slot.is_some_and(|r| r.package == done.package) {
                *slot = None;
            }
        }
    }

    fn device_lost(&mut self, device: usize) {
        if let Some(a) = self.alive.get_mut(device) {
            *a = false;
            self.running[device] = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::balance::DeviceKind;

    fn setup(total_groups: u64, devices: &[(f64, u64)]) -> Setup {
        Setup {
            total_groups,
            devices: devices
                .iter()
                .map(|&(nominal_gflops, min_groups)| DeviceProfile {
                    kind: DeviceKind::Gpu,
                    nominal_gflops,
                    min_groups,
                })
                .collect(),
        }
    }

    fn run(b: &mut Sigmoid, device: usize, now: f64) -> Package {
        match b.next(device, now) {
            Next::Run(p) => p,
            other => panic!("device {device} at {now}: expected a package, got {other:?}"),
        }
    }

    /// Report `p` finished by `device` at `speed` work-groups per second, ending at `now`.
    fn finish(b: &mut Sigmoid, device: usize, p: Package, speed: f64, now: f64) {
        let secs = p.len as f64 / speed;
        b.completed(&Completion {
            device,
            package: p,
            kernel_seconds: secs,
            host_start: now - secs,
            host_end: now,
        });
    }

    #[test]
    fn first_packages_and_line_16_match_hand_computation() {
        // G = 1000, N = 2, nominal 3:1, k_r = 2.
        // Line 5, device 0: ⌊1000/4 · tanh(6) · 3/4⌋ = ⌊187.498⌋ = 187; x = 813.
        // Line 5, device 1: ⌊1000/4 · tanh(6·0.813) · 1/4⌋ = 62; x = 751.
        let mut b = Sigmoid::faithful();
        b.start(&setup(1000, &[(3000.0, 10), (1000.0, 2)])).unwrap();
        assert_eq!(run(&mut b, 0, 0.0), Package { offset: 0, len: 187 });
        assert_eq!(run(&mut b, 1, 0.0), Package { offset: 187, len: 62 });
        // Device 0 ran 187 groups in 1 s: S_0 = 187, S_1 (unmeasured) = 1000 · 187/3000.
        // Line 16 at t = 1: max(250 · tanh(6·0.751) · 0.75, 0.05·1·187, 10) = max(187.45, 9.35, 10).
        finish(&mut b, 0, Package { offset: 0, len: 187 }, 187.0, 1.0);
        assert_eq!(run(&mut b, 0, 1.0), Package { offset: 249, len: 187 });
    }

    #[test]
    fn imbalance_bound_p_t_s() {
        // G = 100 000, two equal devices: first packages ⌊25 000 · tanh(6) / 2⌋ = 12 499 and
        // ⌊25 000 · tanh(6 · 0.87501) / 2⌋ = 12 499; x = 75 002.
        let mut b = Sigmoid::faithful();
        b.start(&setup(100_000, &[(1.0, 1), (1.0, 1)])).unwrap();
        let first = run(&mut b, 0, 0.0);
        assert_eq!((first.len, run(&mut b, 1, 0.0).len), (12_499, 12_499));
        // Device 0 needed 100 s: S = 124.99/s. At t = 4000 s the curve gives 12 496.9 but
        // p·t·S = 0.05 · 4000 · 124.99 = 24 998 wins.
        finish(&mut b, 0, first, 124.99, 4000.0);
        assert_eq!(run(&mut b, 0, 4000.0).len, 24_998);
    }

    #[test]
    fn occupancy_bound_applies_from_the_second_package() {
        // G = 1000, two equal devices, device 0 fills only with 300 groups. Line 5 ignores the
        // bound: ⌊250 · tanh(6) / 2⌋ = 124. Line 16: max(≤ 125, 0.05·1·124, 300) = 300.
        let mut b = Sigmoid::faithful();
        b.start(&setup(1000, &[(1.0, 300), (1.0, 1)])).unwrap();
        let first = run(&mut b, 0, 0.0);
        assert_eq!(first.len, 124);
        run(&mut b, 1, 0.0);
        finish(&mut b, 0, first, 124.0, 1.0);
        assert_eq!(run(&mut b, 0, 1.0).len, 300);
    }

    /// Device 0 reports speeds 100, 100, `third`; returns the three sizes it gets after each
    /// report, then three more after reports of a steady 120/s.
    fn sizes_after_speeds(third: f64) -> Vec<u64> {
        let mut b = Sigmoid::faithful();
        b.start(&setup(100_000, &[(1.0, 1), (1.0, 1)])).unwrap();
        let mut current = run(&mut b, 0, 0.0);
        run(&mut b, 1, 0.0);
        let mut sizes = Vec::new();
        for speed in [100.0, 100.0, third, 120.0, 120.0, 120.0] {
            finish(&mut b, 0, current, speed, 1.0);
            current = run(&mut b, 0, 1.0);
            sizes.push(current.len);
        }
        sizes
    }

    #[test]
    fn switches_to_k_i_for_good_once_sigma_over_s_exceeds_d() {
        // Speeds 100, 100, 160: σ/S = 28.28/120 = 0.236 ≤ 0.25, k stays 2: the third package is
        // ⌊25 000 · tanh(6 · 50 020/100 000) / 2⌋ = 12 438.
        assert_eq!(sizes_after_speeds(160.0)[..3], [12_496, 12_486, 12_438]);
        // Speeds 100, 100, 170: σ/S = 33.0/123.3 = 0.268 > 0.25, k becomes 0.5:
        // ⌊25 000 · tanh(1.5 · 50 020/100 000) / 2⌋ = 7 941.
        let irregular = sizes_after_speeds(170.0);
        assert_eq!(irregular[..3], [12_496, 12_486, 7_941]);
        // Three steady speeds later σ = 0, yet k stays 0.5: 6 985, 6 032, 5 128 (with k = 2 they
        // would be 12 340, 11 814, 9 894).
        assert_eq!(irregular[3..], [6_985, 6_032, 5_128]);
    }

    #[test]
    fn guard_probes_at_the_occupancy_bound_first() {
        // Nominal says device 1 is a third of device 0; the faithful form commits 62 groups to
        // it at once, the guarded form only its occupancy bound.
        let mut b = Sigmoid::guarded();
        b.start(&setup(1000, &[(3000.0, 10), (1000.0, 2)])).unwrap();
        assert_eq!(run(&mut b, 0, 0.0).len, 10);
        assert_eq!(run(&mut b, 1, 0.0).len, 2);
    }

    #[test]
    fn guard_keeps_a_very_slow_device_off_the_end_of_the_run() {
        // Device 0: 1000 groups/s, fills with 10. Device 1: 1 group/s, fills with 4, so any
        // package takes it at least 4 s. Nominal speeds put device 1 in a slower class (31x
        // below, like a 16-core CPU beside an H200) but understate the real gap.
        const G: u64 = 6000;
        let mut b = Sigmoid::guarded();
        b.start(&setup(G, &[(31.0, 10), (1.0, 4)])).unwrap();
        let mut current = run(&mut b, 0, 0.0);
        let probe = run(&mut b, 1, 0.0);
        // Device 0 works alone until device 1's probe ends at 4 s.
        let mut now = 0.0;
        while now + current.len as f64 / 1000.0 < 4.0 {
            now += current.len as f64 / 1000.0;
            finish(&mut b, 0, current, 1000.0, now);
            current = run(&mut b, 0, now);
        }
        finish(&mut b, 1, probe, 1.0, 4.0);
        // Device 0 is still running and fewer than 4000 groups (4 s of its work) are left, so
        // even an occupancy-bound package for device 1 would end after everything else.
        let left = G - current.end();
        assert!(left > 0 && left < 4000, "precondition: {left} groups left");
        assert_eq!(b.next(1, 4.0), Next::Wait);
        // With nothing else running, device 1 must take work rather than stall the run.
        let end = now + current.len as f64 / 1000.0;
        finish(&mut b, 0, current, 1000.0, end);
        assert!(matches!(b.next(1, end), Next::Run(_)));
    }

    #[test]
    fn a_running_package_is_expected_to_end_on_time_or_overrun_as_much_again() {
        let r = Running { package: Package { offset: 0, len: 100 }, since: 1.0 };
        // 100 groups at 50/s: planned 2 s. At 1.5 s, 1.5 s are left.
        assert_eq!(remaining_seconds(r, 50.0, 1.5), 1.5);
        // At 3.5 s it is 0.5 s late: expect 0.5 s more, not the 2.5 s it has taken.
        assert_eq!(remaining_seconds(r, 50.0, 3.5), 0.5);
    }

    #[test]
    fn a_lost_device_leaves_the_share_to_the_others() {
        let mut b = Sigmoid::faithful();
        b.start(&setup(100, &[(1.0, 1), (1.0, 1)])).unwrap();
        let p0 = run(&mut b, 0, 0.0);
        b.device_lost(1);
        assert_eq!(b.next(1, 0.0), Next::Done);
        finish(&mut b, 0, p0, 10.0, 1.0);
        let mut handed = p0.len;
        while let Next::Run(p) = b.next(0, 1.0) {
            handed += p.len;
            finish(&mut b, 0, p, 10.0, 1.0);
        }
        assert_eq!(handed, 100);
    }
}
