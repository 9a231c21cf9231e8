//! The default balancer across ranks: guided self-scheduling weighted by each rank's measured
//! speed. Rank j asking with Gr work-groups left gets
//!
//! ```text
//! ⌊ Gr · S_j / (max(k · N, 2) · Σ S) ⌋,   never below its smallest range (`min_groups`) nor
//!                                          20 times its fixed cost per range, never above Gr
//! ```
//!
//! with N live ranks, S their speeds (work-groups per second over every range each has run,
//! a rank not measured yet counted at its nominal GFLOP/s put on the measured ranks' scale)
//! and k = [`RANK_GUIDED_K`]. It is HGuided (EngineCL optimisation study) with measured
//! instead of nominal powers.
//!
//! Why not Sigmoid across ranks: a range is a whole co-execution on its node, whose last wave
//! of work-groups on each GPU misaligns with the others' by a fraction of a wave on a kernel
//! whose cost varies, so a node loses about half a wave per range: 8 % of a range of 8 waves per
//! GPU, 4 % of 16, 3.5 % of 32 (simulated, four H200s on the log-normal kernel). Ranges must
//! therefore be long through most of the run and short only at its end. Sigmoid's sizes across
//! N ranks are G/(2N²) at best and shrink with its gentle slope once the ranks' measured speeds
//! differ (they do, range by range, on an irregular kernel): at 16 nodes most ranges were at the
//! floor of 8 waves, and the log-normal kernel ran at 0.92 of the ideal. Guided sizes start at
//! 4·G/N² (k = 0.25) and shrink geometrically with the work left, so the bulk runs in long
//! ranges and the tail in short ones (`hier::RANGE_FILLS`, 4 waves): 0.95–0.96.

use hetdsl::balance::{Completion, Next, Remaining, Setup};
use hetdsl::{Balancer, Error, Result};

/// Guided's k across ranks: the first ranges hold 1/(k·N) of the work left, shared by speed.
/// Simulated on 16 nodes of four H200s, log-normal kernel, ranges of at least 4 waves per GPU:
/// 0.949 with k = 0.5, 0.957 with 0.25 (seeds 1–4: 0.954–0.957); smaller k lengthens the first
/// ranges past what the tail can even out on 64 nodes.
pub const RANK_GUIDED_K: f64 = 0.25;

/// A range holds at least this many times its rank's fixed cost per range (set-up of the
/// node's run, messages: what rank 0 measures between handing a range out and hearing it done,
/// less what the rank computed) in work: that cost is then at most 5 % of each range. In the
/// simulated clusters (5 ms of set-up) this is below the occupancy floor; on a machine where a
/// range's run takes long to set up (device buffers and pinned staging allocated per run), it
/// keeps the ranges few. A rank's first range is not counted: it also pays what the rank pays
/// once (its devices' first use, a CPU's warm-up), which on two H200s as two ranks made rank
/// 0's second range everything left while rank 1 had run one range (balance 0.42–0.67).
pub const AMORTISE: f64 = 20.0;

/// Whatever k and the number of ranks, a range holds at most half of its rank's share of the
/// work left: with k·N under 1 the formula would hand the first rank everything (simulated,
/// 2 nodes of four H200s at k = 0.25: 0.49 of the ideal, against 0.97 with this bound).
pub const MIN_DIVISOR: f64 = 2.0;

/// Guided self-scheduling over measured speeds (see the module's documentation).
#[derive(Debug, Clone)]
pub struct RankGuided {
    k: f64,
    left: Remaining,
    min_groups: Vec<u64>,
    nominal: Vec<f64>,
    /// Per rank: work-groups and seconds of every range it completed.
    ran: Vec<(u64, f64)>,
    /// Per rank: seconds each range after its first cost besides its computation (the span
    /// from hand-out to the answer, less the seconds computed: set-up, messages), added up,
    /// and ranges.
    fixed: Vec<(f64, u32)>,
    /// Per rank: ranges completed.
    completed: Vec<u32>,
    alive: Vec<bool>,
}

impl RankGuided {
    pub fn new(k: f64) -> Self {
        RankGuided {
            k,
            left: Remaining::new(0),
            min_groups: Vec::new(),
            nominal: Vec::new(),
            ran: Vec::new(),
            fixed: Vec::new(),
            completed: Vec::new(),
            alive: Vec::new(),
        }
    }

    /// The fewest work-groups a range of rank `j` may hold so that its fixed cost (measured,
    /// or the other ranks' mean before its first range) is at most 1/[`AMORTISE`] of it.
    fn amortised(&self, j: usize, speed: f64) -> u64 {
        let mean = |(sum, n): (f64, u32)| (n > 0).then(|| sum / n as f64);
        let others = self.fixed.iter().fold((0.0, 0), |(s, n), f| (s + f.0, n + f.1));
        let fixed = mean(self.fixed[j]).or(mean(others)).unwrap_or(0.0);
        let groups = AMORTISE * fixed * speed;
        if groups.is_finite() {
            groups as u64
        } else {
            0
        }
    }

    /// Each rank's speed: measured where it has completed a range, else its nominal GFLOP/s
    /// times the measured ranks' work-groups per second per GFLOP/s (1 before any measurement).
    fn speeds(&self) -> Vec<f64> {
        let measured = |j: usize| {
            let (g, s) = self.ran[j];
            (g > 0 && s > 0.0).then(|| g as f64 / s)
        };
        let (per_flop, seen): (f64, f64) = (0..self.ran.len())
            .filter_map(|j| measured(j).map(|s| (s, self.nominal[j])))
            .fold((0.0, 0.0), |(a, b), (s, n)| (a + s, b + n));
        let scale = if per_flop > 0.0 && seen > 0.0 { per_flop / seen } else { 1.0 };
        (0..self.ran.len()).map(|j| measured(j).unwrap_or(self.nominal[j] * scale)).collect()
    }
}

impl Default for RankGuided {
    fn default() -> Self {
        RankGuided::new(RANK_GUIDED_K)
    }
}

impl Balancer for RankGuided {
    fn name(&self) -> String {
        format!("guided(k={}, measured)", self.k)
    }

    fn start(&mut self, setup: &Setup) -> Result<()> {
        if !(self.k.is_finite() && self.k > 0.0) {
            return Err(Error::BadBalancer(format!("guided k must be positive, got {}", self.k)));
        }
        if setup.devices.is_empty() {
            return Err(Error::BadBalancer("no rank to balance".into()));
        }
        let n = setup.devices.len();
        self.left = Remaining::new(setup.total_groups);
        self.min_groups = setup.devices.iter().map(|d| d.min_groups.max(1)).collect();
        // A rank with no usable nominal speed counts as the mean of the others (or 1).
        let usable: Vec<f64> = setup
            .devices
            .iter()
            .map(|d| d.nominal_gflops)
            .filter(|g| g.is_finite() && *g > 0.0)
            .collect();
        let mean =
            if usable.is_empty() { 1.0 } else { usable.iter().sum::<f64>() / usable.len() as f64 };
        self.nominal = setup
            .devices
            .iter()
            .map(|d| {
                if d.nominal_gflops.is_finite() && d.nominal_gflops > 0.0 {
                    d.nominal_gflops
                } else {
                    mean
                }
            })
            .collect();
        self.ran = vec![(0, 0.0); n];
        self.fixed = vec![(0.0, 0); n];
        self.completed = vec![0; n];
        self.alive = vec![true; n];
        Ok(())
    }

    fn next(&mut self, device: usize, _now: f64) -> Next {
        if !self.alive.get(device).copied().unwrap_or(false) || self.left.is_empty() {
            return Next::Done;
        }
        let speeds = self.speeds();
        let live: Vec<usize> = (0..self.alive.len()).filter(|j| self.alive[*j]).collect();
        let total: f64 = live.iter().map(|j| speeds[*j]).sum();
        let gr = self.left.left() as f64;
        let divisor = (self.k * live.len() as f64).max(MIN_DIVISOR);
        let size = gr * speeds[device] / (divisor * total.max(f64::MIN_POSITIVE));
        let len = if size.is_finite() { size.floor() as u64 } else { 0 };
        let least = self.min_groups[device].max(self.amortised(device, speeds[device]));
        self.left.take(len.max(least)).map_or(Next::Done, Next::Run)
    }

    fn completed(&mut self, done: &Completion) {
        let seconds = done.seconds();
        if let Some(r) = self.ran.get_mut(done.device) {
            r.0 += done.package.len;
            r.1 += seconds.max(0.0);
        }
        let first = self.completed.get(done.device).is_some_and(|&c| c == 0);
        if let Some(c) = self.completed.get_mut(done.device) {
            *c += 1;
        }
        if let (false, Some(f)) = (first, self.fixed.get_mut(done.device)) {
            f.0 += (done.host_end - done.host_start - seconds).max(0.0);
            f.1 += 1;
        }
    }

    fn device_lost(&mut self, device: usize) {
        if let Some(a) = self.alive.get_mut(device) {
            *a = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hetdsl::balance::{DeviceKind, DeviceProfile};
    use hetdsl::Package;

    fn setup(total: u64, gflops: &[f64]) -> Setup {
        let d = |g| DeviceProfile { kind: DeviceKind::Gpu, nominal_gflops: g, min_groups: 10 };
        Setup { total_groups: total, devices: gflops.iter().map(|g| d(*g)).collect() }
    }

    fn done(device: usize, package: Package, seconds: f64) -> Completion {
        Completion { device, package, kernel_seconds: seconds, host_start: 0.0, host_end: seconds }
    }

    /// Sizes follow the work left and the measured speeds, not the nominal ones once measured.
    #[test]
    fn sizes_follow_the_work_left_and_measured_speeds() {
        let mut g = RankGuided::new(0.5);
        g.start(&setup(4000, &[1.0, 1.0])).unwrap();
        // k·N = 1 is under the bound of 2: ⌊4000 · 1/2 / 2⌋ = 1000, then ⌊3000 / 4⌋ = 750.
        let a = Package { offset: 0, len: 1000 };
        let b = Package { offset: 1000, len: 750 };
        assert_eq!(g.next(0, 0.0), Next::Run(a));
        assert_eq!(g.next(1, 0.0), Next::Run(b));
        // Rank 0 ran 1000 in 1 s; rank 1, not measured yet, counts at rank 0's speed per
        // GFLOP/s: both at 1000/s, and rank 0 gets ⌊2250 / 4⌋ = 562.
        g.completed(&done(0, a, 1.0));
        let c = Package { offset: 1750, len: 562 };
        assert_eq!(g.next(0, 1.0), Next::Run(c));
        // Rank 1 measures 750 in 1.5 s, rank 0 its 562 in 1/16 s: rank 0 is now the faster
        // by its own measurements and gets the larger share of the 1688 left.
        g.completed(&done(1, b, 1.5));
        g.completed(&done(0, c, 0.0625));
        let (s0, s1) = (1562.0 / 1.0625, 750.0 / 1.5);
        let Next::Run(p) = g.next(0, 2.0) else { panic!("rank 0 gets work") };
        assert_eq!(p, Package { offset: 2312, len: (1688.0 * s0 / (2.0 * (s0 + s1))) as u64 });
        // The last groups come out at the minimum, then nothing.
        let mut end = p.end();
        while let Next::Run(q) = g.next(1, 3.0) {
            assert_eq!(q.offset, end);
            assert!(q.len >= 10 || q.end() == 4000);
            end = q.end();
        }
        assert_eq!(end, 4000);
        assert_eq!(g.next(0, 3.0), Next::Done);
    }

    /// Two ranks at k = 0.25: k·N = 0.5 would give the first rank twice its share, all of it;
    /// the bound keeps it to half its share.
    #[test]
    fn few_ranks_never_take_more_than_half_their_share() {
        let mut g = RankGuided::new(0.25);
        g.start(&setup(4000, &[1.0, 1.0])).unwrap();
        assert_eq!(g.next(0, 0.0), Next::Run(Package { offset: 0, len: 1000 }));
        assert_eq!(g.next(1, 0.0), Next::Run(Package { offset: 1000, len: 750 }));
    }

    /// A rank whose ranges each cost 0.05 s besides their computing gets ranges of at least
    /// 20 × 0.05 s of its work, and a rank not measured yet is held to the others' cost; what
    /// a rank's first range cost besides (its one-time set-up) does not count.
    #[test]
    fn ranges_amortise_their_fixed_cost() {
        let mut g = RankGuided::new(0.25);
        g.start(&setup(2_000_000, &[1.0, 1.0])).unwrap();
        let answered = |package: Package, start: f64, computed: f64, span: f64| Completion {
            device: 0,
            package,
            kernel_seconds: computed,
            host_start: start,
            host_end: start + span,
        };
        let a = Package { offset: 0, len: 500_000 };
        assert_eq!(g.next(0, 0.0), Next::Run(a));
        // 500 000 groups computed in 2 s, answered 4 s after the hand-out: 2 s of first use,
        // which would make the floor 20 · 2 s · 250 000/s, everything left.
        g.completed(&answered(a, 0.0, 2.0, 4.0));
        // No floor yet: ⌊1 500 000 / 4⌋.
        let b = Package { offset: 500_000, len: 375_000 };
        assert_eq!(g.next(0, 4.0), Next::Run(b));
        // 375 000 groups in 1.5 s, answered after 1.5625 s: 1/16 s per range from now on.
        g.completed(&answered(b, 4.0, 1.5, 1.5625));
        // Without the floor ⌊1 125 000 / 4⌋ = 281 250; with it 20 · 1/16 s · 250 000/s.
        let c = Package { offset: 875_000, len: 312_500 };
        assert_eq!(g.next(0, 5.5625), Next::Run(c));
        // Rank 1, at the same nominal speed, unmeasured: ⌊812 500 / 4⌋ = 203 125 without.
        assert_eq!(g.next(1, 5.5625), Next::Run(Package { offset: 1_187_500, len: 312_500 }));
    }

    #[test]
    fn refuses_a_bad_k_and_no_ranks() {
        assert!(RankGuided::new(0.0).start(&setup(10, &[1.0])).is_err());
        assert!(RankGuided::new(f64::NAN).start(&setup(10, &[1.0])).is_err());
        assert!(RankGuided::default().start(&setup(10, &[])).is_err());
    }
}
