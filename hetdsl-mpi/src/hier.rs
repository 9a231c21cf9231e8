//! The upper level of the hierarchical balancing: every rank is one "device" of an ordinary
//! [`Balancer`] driven by hetdsl's own dispatcher, so every rule the dispatcher enforces on a
//! node's devices (each unit handed out and merged exactly once, a lost device's work re-run,
//! a stalled balancer an error, the watchdog's verdict) holds across ranks too. Within a rank,
//! the node runs each range it gets with `Launch::groups` and its own balancer.
//!
//! Pure: the MPI driver and the cluster simulator both feed it events with their instant.

use hetdsl::balance::dispatch::{Config, Decision, Dispatcher, Verdict, WatchdogRule};
use hetdsl::balance::{DeviceKind, DeviceProfile, Setup, Sigmoid, SigmoidParams};
use hetdsl::{Balancer, Package, Result};

use crate::finish::Deliveries;

/// Fills of every device of a node that the smallest range holds. A range is a whole
/// co-execution on the node, which its own balancer splits again; with only a fill or two per
/// device, packages fall under the devices' occupancy bounds and the node idles at the range's
/// end. Simulated on a node of four H200s and a CPU with Sigmoid inside, a range of 1 fill per
/// GPU ran at 0.47 of the node's ideal, 4 fills at 0.79, 15 fills at 0.98, most of it lost to
/// the CPU's probe of every range; with the node carrying its devices' speeds from range to
/// range (`carry`), the CPU sits short ranges out and 4 fills ran at 0.98 on a regular kernel
/// (on a log-normal one, ranges of 8 fills ran at 0.92: `guided` says why). The guided balancer
/// across ranks hands out ranges this small only at the end of a run, where they shorten the
/// cross-rank tail: simulated on 64 nodes of four H200s on a regular kernel, 0.96 with 4 fills,
/// 0.95 with 8, 0.93 with 16.
pub const RANGE_FILLS: u64 = 4;

/// A rank seen as one device: the kind of its fastest class, the sum of its devices' nominal
/// speeds (what they achieve together, as far as is known before the run), and as its
/// occupancy bound [`RANGE_FILLS`] times the sum of its devices' (see there).
pub fn rank_profile(devices: &[DeviceProfile]) -> DeviceProfile {
    let kind = if devices.iter().any(|d| d.kind == DeviceKind::Gpu) {
        DeviceKind::Gpu
    } else {
        devices.first().map_or(DeviceKind::Other, |d| d.kind)
    };
    DeviceProfile {
        kind,
        nominal_gflops: devices.iter().map(|d| d.nominal_gflops).sum(),
        min_groups: (RANGE_FILLS * devices.iter().map(|d| d.min_groups).sum::<u64>()).max(1),
    }
}

/// Sigmoid's bound on the imbalance one range may cause, at the rank level, in
/// [`sigmoid_rank_balancer`]: a range holds at least this fraction of the time elapsed times the
/// rank's speed. The paper's 0.05 suits a few devices; across ranks the last ranges then run
/// seconds into a minute-long run while the other ranks idle (simulated, 16 nodes of four H200s
/// on a regular kernel: balance across ranks 0.96 at 0.05, 0.995 at 0.01, nothing more gained
/// below).
pub const RANK_MAX_IMBALANCE: f64 = 0.01;

/// The default balancer across ranks: guided self-scheduling over the ranks' measured speeds
/// ([`crate::guided::RankGuided`], k = [`crate::guided::RANK_GUIDED_K`]). [`Ranks::start`]
/// given no balancer uses it and tells it when each range's outputs arrive; this one, handed
/// to it as any balancer, hears nothing of that.
pub fn default_rank_balancer() -> Box<dyn Balancer> {
    Box::new(crate::guided::RankGuided::default())
}

/// The balancer across ranks before [`crate::guided`]: Sigmoid (with its guard), its imbalance
/// bound set to [`RANK_MAX_IMBALANCE`]; for comparisons.
pub fn sigmoid_rank_balancer() -> Box<dyn Balancer> {
    let params = SigmoidParams { max_imbalance: RANK_MAX_IMBALANCE, ..SigmoidParams::default() };
    Box::new(Sigmoid::new(params, true))
}

/// What rank 0 tells a rank that asked for work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    Run(Package),
    /// The run is over for this rank: every unit is merged, or it was lost.
    Stop,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum State {
    /// Has nothing running and has not been answered yet.
    Asking,
    /// Told to wait (or idle): asked again when the dispatcher says something changed.
    Waiting,
    Running,
    Stopped,
}

/// How long a rank's range may run before the rank is declared lost: a factor over what its
/// measured speed predicts, never under a floor (a first range, measured by nobody, only gets
/// the floor when no other rank has a speed yet).
pub const RANK_WATCHDOG: WatchdogRule = WatchdogRule { factor: 20.0, min_seconds: 120.0 };

/// Refuses a rank watchdog rule that means nothing, as hetdsl refuses its own: with a factor
/// or floor of zero, below it or not finite, every rank would be dropped as hung the moment
/// another idled (or none ever), and the run would still return `Ok`.
pub fn check_watchdog(rule: WatchdogRule) -> Result<()> {
    let usable = |x: f64| x.is_finite() && x > 0.0;
    if usable(rule.factor) && usable(rule.min_seconds) {
        return Ok(());
    }
    Err(hetdsl::Error::BadConfig(format!(
        "rank watchdog factor {} and floor {} s must both be finite numbers above 0 (how many \
         times its predicted time a rank's range may run, and the least time it may run)",
        rule.factor, rule.min_seconds
    )))
}

/// The ranks' dispatcher and what each rank is doing.
pub struct Ranks {
    dispatch: Dispatcher<Box<dyn Balancer>>,
    state: Vec<State>,
    watchdog: WatchdogRule,
    /// Where to record when each range's outputs were merged after its rank's answer.
    deliveries: Option<Deliveries>,
    /// Queue a rank's next range behind the one it runs ([`Ranks::queue_ahead`]).
    queue_ahead: bool,
    /// Per rank: a range has just started running and the balancer has not been asked for
    /// one to queue behind it yet.
    started: Vec<bool>,
}

impl Ranks {
    /// Starts `balancer` (`None`: [`default_rank_balancer`], told when outputs arrive) over
    /// `total` units on ranks with these profiles; `names` label faults.
    pub fn start(
        balancer: Option<Box<dyn Balancer>>,
        total: u64,
        profiles: Vec<DeviceProfile>,
        names: Vec<String>,
    ) -> Result<Self> {
        let n = profiles.len();
        let setup = Setup { total_groups: total, devices: profiles };
        let (balancer, deliveries) = match balancer {
            Some(b) => (b, None),
            None => {
                let guided = crate::guided::RankGuided::default();
                let deliveries = guided.deliveries();
                (Box::new(guided) as Box<dyn Balancer>, Some(deliveries))
            }
        };
        // No speculative back-ups across ranks: a copy would move a range's data over the
        // network twice and keep two nodes busy; a lost rank's range is re-run instead.
        let dispatch = Dispatcher::start(balancer, setup, names, Config::default())?;
        Ok(Ranks {
            dispatch,
            state: vec![State::Asking; n],
            watchdog: RANK_WATCHDOG,
            deliveries,
            queue_ahead: false,
            started: vec![false; n],
        })
    }

    /// Hand each rank its next range while it computes the one before, once, as that one
    /// starts (if the balancer has one to queue, [`Balancer::next_ahead`]): its inputs then
    /// travel while the rank computes, and its node starts it as soon as the last one ends.
    /// Asked only as a range starts, so that a queued range's order always reaches a rank long
    /// before the rank can end the range before it: a rank that leaves on an error after a
    /// range takes (and drops) every order still on its way.
    pub fn queue_ahead(&mut self, on: bool) {
        self.queue_ahead = on;
        if on {
            self.dispatch.queue_unmeasured();
        }
    }

    /// Record in `deliveries` when each range's outputs are merged after its rank's answer
    /// (for a balancer given as such, e.g. [`crate::guided::RankGuided::deliveries`]).
    pub fn record_deliveries(&mut self, deliveries: Deliveries) {
        self.deliveries = Some(deliveries);
    }

    /// Replace the rule that declares a rank lost (see [`RANK_WATCHDOG`]).
    pub fn set_watchdog(&mut self, rule: WatchdogRule) {
        self.watchdog = rule;
    }

    pub fn balancer_name(&self) -> String {
        self.dispatch.balancer_name().to_string()
    }

    /// Answers every rank that waits for an answer and should ask now: the orders to send.
    pub fn hand_out(&mut self, now: f64) -> Result<Vec<(usize, Order)>> {
        let mut orders = Vec::new();
        for r in 0..self.state.len() {
            let asks = match self.state[r] {
                State::Asking => true,
                State::Waiting => self.dispatch.should_ask(r) || self.dispatch.is_over(),
                State::Running | State::Stopped => false,
            };
            if !asks {
                continue;
            }
            match self.dispatch.ask(r, now)? {
                Decision::Run(a) => {
                    self.state[r] = State::Running;
                    self.started[r] = true;
                    orders.push((r, Order::Run(a.package)));
                }
                Decision::Wait | Decision::Idle => self.state[r] = State::Waiting,
                Decision::Stop => {
                    self.state[r] = State::Stopped;
                    orders.push((r, Order::Stop));
                }
            }
        }
        for r in 0..self.state.len() {
            if std::mem::take(&mut self.started[r]) && self.queue_ahead {
                if let Some(a) = self.dispatch.ask_ahead(r, now)? {
                    orders.push((r, Order::Run(a.package)));
                }
            }
        }
        Ok(orders)
    }

    /// Rank `rank` finished `package` at `now`, after `seconds` of its own time. `true`: merge
    /// its output, then call [`Ranks::merged`]; `false`: throw it away (a lost rank's).
    pub fn finished(
        &mut self,
        rank: usize,
        package: Package,
        now: f64,
        seconds: f64,
    ) -> Result<bool> {
        let verdict = self.dispatch.kernel_done(rank, package, now, Some(seconds))?;
        if self.state[rank] == State::Running {
            // A range queued behind this one runs now: the rank is still busy.
            match self.dispatch.running(rank) {
                Some(_) => self.started[rank] = true,
                None => self.state[rank] = State::Asking,
            }
        }
        let keep = matches!(verdict, Verdict::Keep { .. });
        if let (true, Some(d)) = (keep, &self.deliveries) {
            d.answered(rank, package, now);
        }
        Ok(keep)
    }

    /// The output of `package`, kept from `rank`, is in rank 0's buffers.
    pub fn merged(&mut self, rank: usize, package: Package, now: f64) -> Result<()> {
        if let Some(d) = &self.deliveries {
            d.arrived(rank, package, now);
        }
        self.dispatch.merged(rank, package, now)
    }

    /// Rank `rank` is lost (its devices all failed, or it outlived the watchdog): its range
    /// goes back to the pool. An error when no rank is left.
    pub fn lost(&mut self, rank: usize, now: f64, reason: String) -> Result<()> {
        self.state[rank] = State::Stopped;
        self.dispatch.fail(rank, now, reason).map(|_| ())
    }

    /// Ranks the watchdog declares lost at `now`, with the reason.
    pub fn hung(&self, now: f64) -> Vec<(usize, String)> {
        self.dispatch.hung(now, self.watchdog).into_iter().map(|h| (h.device, h.reason())).collect()
    }

    pub fn is_over(&self) -> bool {
        self.dispatch.is_over()
    }

    pub fn is_lost(&self, rank: usize) -> bool {
        self.dispatch.is_lost(rank)
    }

    /// Whether `rank` still expects an order from rank 0.
    pub fn expects_order(&self, rank: usize) -> bool {
        self.state[rank] != State::Stopped
    }

    /// The run's outcome once nothing runs: an error if work is left.
    pub fn outcome(&self) -> Result<()> {
        self.dispatch.outcome()
    }

    /// (rank lost, range, reason) for each range a lost rank had not returned.
    pub fn faults(&self) -> Vec<(usize, Package, String)> {
        self.dispatch.faults().to_vec()
    }

    /// When each rank's last range was merged (0 if none).
    pub fn finish_times(&self) -> Vec<f64> {
        self.dispatch.stats().iter().map(|s| s.finish).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_watchdog_rule_that_means_nothing_is_refused() {
        check_watchdog(RANK_WATCHDOG).unwrap();
        check_watchdog(WatchdogRule { factor: 0.5, min_seconds: 1e-3 }).unwrap();
        let (nan, inf) = (f64::NAN, f64::INFINITY);
        for (factor, min_seconds) in [(0.0, 1.0), (-1.0, 1.0), (nan, 1.0), (inf, 1.0)]
            .into_iter()
            .chain([(20.0, 0.0), (20.0, -1.0), (20.0, nan), (20.0, inf)])
        {
            let e = check_watchdog(WatchdogRule { factor, min_seconds }).unwrap_err();
            assert!(
                matches!(&e, hetdsl::Error::BadConfig(m) if m.contains("watchdog")),
                "{factor} {min_seconds}: {e}"
            );
        }
    }

    fn gpu(gflops: f64, min_groups: u64) -> DeviceProfile {
        DeviceProfile { kind: DeviceKind::Gpu, nominal_gflops: gflops, min_groups }
    }

    #[test]
    fn a_rank_is_the_sum_of_its_devices() {
        let cpu = DeviceProfile { kind: DeviceKind::Cpu, nominal_gflops: 1.0, min_groups: 16 };
        let r = rank_profile(&[cpu.clone(), gpu(10.0, 100), gpu(10.0, 100)]);
        assert_eq!(r, gpu(21.0, 216 * RANGE_FILLS));
        assert_eq!(rank_profile(std::slice::from_ref(&cpu)).kind, DeviceKind::Cpu);
    }

    /// Rank `r` ends `p` at `now`: its units count in `covered` where its output is kept.
    fn end(ranks: &mut Ranks, (r, p): (usize, Package), now: f64, covered: &mut [u8]) {
        if ranks.finished(r, p, now, 0.01).unwrap() {
            for u in p.offset..p.end() {
                covered[u as usize] += 1;
            }
            ranks.merged(r, p, now).unwrap();
        }
    }

    /// Ranks given their next range while they compute get every unit exactly once; a rank
    /// lost with a range queued has both re-run.
    #[test]
    fn queued_ranges_tile_the_range_and_a_lost_rank_hands_both_back() {
        let total = 10_000;
        let names = vec!["r0".into(), "r1".into(), "r2".into()];
        let mut ranks = Ranks::start(None, total, vec![gpu(10.0, 50); 3], names).unwrap();
        ranks.queue_ahead(true);
        let mut covered = vec![0u8; total as usize];
        let mut orders: Vec<std::collections::VecDeque<Package>> = vec![Default::default(); 3];
        let (mut now, mut turn, mut queued, mut lost_with) = (0.0, 0, 0, 0);
        while !ranks.is_over() {
            for (r, o) in ranks.hand_out(now).unwrap() {
                if let Order::Run(p) = o {
                    queued += usize::from(!orders[r].is_empty());
                    orders[r].push_back(p);
                }
            }
            now += 0.01;
            turn += 1;
            let r = (0..3).map(|i| (turn + i) % 3).find(|r| !orders[*r].is_empty());
            let r = r.expect("someone runs while work is left");
            let p = orders[r].pop_front().unwrap();
            if r == 1 && lost_with == 0 && !orders[1].is_empty() {
                lost_with = orders[1].len() + 1;
                orders[1].clear();
                ranks.lost(1, now, "devices failed".into()).unwrap();
                continue;
            }
            end(&mut ranks, (r, p), now, &mut covered);
        }
        assert!(covered.iter().all(|c| *c == 1));
        assert!(queued > 0, "no range was queued ahead");
        assert_eq!(lost_with, 2, "rank 1 was lost with a range running and one queued");
        ranks.outcome().unwrap();
    }

    /// Ranks finishing in turn get every unit exactly once; a rank lost mid-range has it re-run.
    #[test]
    fn ranges_tile_the_range_and_a_lost_rank_hands_its_range_back() {
        let total = 10_000;
        let mut ranks = Ranks::start(
            Some(hetdsl::balance::default_balancer()),
            total,
            vec![gpu(10.0, 50); 3],
            vec!["r0".into(), "r1".into(), "r2".into()],
        )
        .unwrap();
        let mut covered = vec![0u8; total as usize];
        let mut now = 0.0;
        let mut running: Vec<Option<Package>> = vec![None; 3];
        let mut lost_once = false;
        while !ranks.is_over() {
            for (r, o) in ranks.hand_out(now).unwrap() {
                if let Order::Run(p) = o {
                    running[r] = Some(p);
                }
            }
            now += 0.01;
            let r =
                (0..3).find(|r| running[*r].is_some()).expect("someone runs while work is left");
            let p = running[r].take().unwrap();
            if r == 1 && !lost_once {
                lost_once = true;
                ranks.lost(1, now, "devices failed".into()).unwrap();
                continue;
            }
            end(&mut ranks, (r, p), now, &mut covered);
        }
        assert!(covered.iter().all(|c| *c == 1));
        assert_eq!(ranks.faults().len(), 1);
        ranks.outcome().unwrap();
    }
}
