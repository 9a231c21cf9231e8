//! A deterministic discrete-event simulator that drives the very balancer objects the engine
//! uses through the same [`Dispatcher`] (crate::balance::dispatch): what packages are handed
//! out, re-run after a loss, backed up, kept or discarded, and when the run is stalled, is
//! decided there. The simulator only models time and devices: when each package ends, when a
//! device is lost, and when devices ask: a device told `Wait` asks again after the next
//! completion or loss on any device; one told `Idle` after a loss or while a lost device's
//! package waits for a re-run; idle devices look for a straggler every
//! [`backup::BACKUP_POLL_SECONDS`], as the engine's do.
//!
//! Each simulated device has a speed (work-groups of mean cost per second), a host-side
//! overhead per package, an occupancy bound below which a package runs proportionally slower
//! (it takes as long as a full one, as the sparse-grid paper's Fig. 4 measures) and a small
//! per-package speed jitter.
//! Kernels have a cost profile over the work-group index ([`CostProfile`]) and may move bytes
//! per work-group ([`Traffic`]); a device with a [`Link`] then pays, per package, the write of
//! its inputs and the read-back of its outputs on top of the kernel. The balancer hears the
//! kernel's seconds as the kernel time (as the engine's profiling reports it) and the whole
//! span, transfers included, through the package's hand-out and completion instants.

mod membound;
mod profile;
mod replay;
mod rng;
pub mod scenario;

pub use profile::{CostProfile, CostTable, Traffic};
pub use replay::replay;
pub use rng::SplitMix64;

use crate::balance::dispatch::{Assignment, Config, Decision, Dispatcher, Origin, Verdict};
use crate::balance::{backup, Balancer, History, Ran};
use crate::error::Result;
use crate::report;
use crate::work::{DeviceKind, DeviceProfile, Package, Setup};

/// One simulated device.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SimDevice {
    pub name: String,
    pub kind: DeviceKind,
    /// Work-groups of mean cost per second, at full occupancy.
    pub speed: f64,
    /// Host seconds per package: launch, transfers, synchronisation.
    pub overhead: f64,
    /// Fewest work-groups that fill the device; balancers see it as `min_groups`.
    pub min_groups: u64,
    /// What the balancers are told the device's peak is.
    pub nominal_gflops: f64,
    /// Each package takes longer by a factor uniform in `[1, 1 + jitter)`.
    pub jitter: f64,
    /// How data reaches the device (a GPU's PCIe link, a CPU device's host copy); `None`:
    /// transfers cost nothing beyond `overhead`.
    #[serde(default)]
    pub link: Option<Link>,
}

/// The path between the caller's memory and a device. A package writes its inputs and then,
/// after the kernel, reads its outputs back, one after the other on this link.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Link {
    /// Effective bytes per second, host copies into staging included.
    pub bytes_per_second: f64,
    /// Seconds each transfer (the write, the read-back) costs whatever its size.
    pub latency: f64,
}

impl SimDevice {
    fn profile(&self) -> DeviceProfile {
        DeviceProfile {
            kind: self.kind,
            nominal_gflops: self.nominal_gflops,
            min_groups: self.min_groups.max(1),
        }
    }

    /// Seconds of device time for a package costing `cost` mean work-groups over `len` groups.
    /// Jitter only slows a package down (by `jitter / 2` on average). A package smaller than
    /// one fill costs a whole fill; with `waves`, so does the partial last wave of any package
    /// (a GPU runs `min_groups` work-groups at a time, and the groups of a last, partial wave
    /// take as long as a full one while the rest of the device idles).
    fn compute_seconds(&self, cost: f64, len: u64, jitter_draw: f64, waves: bool) -> f64 {
        let f = self.min_groups.max(1);
        let fill = if waves {
            len.div_ceil(f) as f64 * f as f64 / len as f64
        } else {
            (f as f64 / len as f64).max(1.0)
        };
        cost * fill * (1.0 + self.jitter * jitter_draw) / self.speed
    }

    /// Seconds `len` work-groups moving `traffic` spend on this device's link: the write of
    /// their inputs and the read-back of their outputs, each only if it moves any bytes.
    pub fn transfer_seconds(&self, len: u64, traffic: Traffic) -> f64 {
        let Some(link) = self.link else { return 0.0 };
        let one = |bytes: f64| {
            if bytes > 0.0 {
                link.latency + len as f64 * bytes / link.bytes_per_second
            } else {
                0.0
            }
        };
        one(traffic.bytes_in) + one(traffic.bytes_out)
    }

    /// This device alone on the whole problem in one package, at its best: no jitter and full
    /// occupancy (the T_i of Smax). Taken at the best case so that the ideal makespan
    /// 1 / Σ_i 1/T_i is a true lower bound of every simulated makespan, and the efficiency
    /// therefore at most 1: a device that computes work costing c_i and ends by M needs
    /// M ≥ o_i + c_i/s_i, so c_i ≤ (M − o_i)·s_i ≤ M·W/T_i whenever M ≤ T_i (T_i = o_i + W/s_i),
    /// and summing over the devices, W ≤ M·W·Σ 1/T_i. (Timing the device alone at its mean
    /// jitter instead let a co-execution luckier than average score above 1.) Transfers are
    /// per work-group, so the bound holds with them where cost is per work-group too (a
    /// uniform profile, as every memory-bound scenario has).
    pub fn alone_seconds(&self, work: &CostTable) -> f64 {
        let g = work.total_groups();
        self.overhead + self.transfer_seconds(g, work.traffic()) + work.cost(0, g) / self.speed
    }
}

/// A device failing for good at a given instant.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Loss {
    pub device: usize,
    pub at: f64,
}

/// A device whose set-up ends late: it asks for work first at `at`, as the engine lets a
/// device far slower to set up than the first ready one join the run when it is ready.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Join {
    pub device: usize,
    pub at: f64,
}

/// Knobs of one simulation.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SimOptions {
    /// Seeds the per-package jitter.
    pub seed: u64,
    pub loss: Option<Loss>,
    /// Speculative back-ups of stragglers, as the engine makes them (`Launch::backups`, on by
    /// default there) with the same rule ([`crate::balance::backup::choose`]). The engine
    /// looks for a straggler every few milliseconds; the simulator at each completion.
    pub backups: bool,
    /// Wave quantisation: a package's partial last wave of `min_groups` work-groups costs a
    /// whole wave, as on a GPU whose work-groups cost alike. Off, only a package smaller than
    /// one fill pays for a whole one.
    pub waves: bool,
    /// Devices that join the run late (the others ask for work at 0).
    pub joins: Vec<Join>,
    /// Packages queued ahead, as the engine queues them (`Launch::pipeline`, on by default
    /// there) when the balancer offers one ([`Balancer::next_ahead`]): a device running a
    /// package asks for the next as soon as it has launched it, and the next one's host
    /// overhead is paid while the running one computes. Off, each package pays its overhead
    /// after the one before has ended.
    pub pipeline: bool,
}

/// One package as it ran in the simulation.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SimPackage {
    pub device: usize,
    pub package: Package,
    pub start: f64,
    pub end: f64,
    /// Run again by the driver after its first device was lost.
    pub rerun: bool,
    /// Cut short by the loss of its device (its work-groups are in a later `rerun` package),
    /// or the losing copy of a backed-up package.
    pub aborted: bool,
    /// A speculative copy of a package another device was running (`SimOptions::backups`).
    pub backup: bool,
    /// Queued behind the device's package before it (`SimOptions::pipeline`): `start` is when
    /// its transfers and kernel began, its host overhead paid before then.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub queued: bool,
}

/// What a simulation measured.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SimResult {
    pub balancer: String,
    /// Every package in hand-out order, aborted ones included.
    pub packages: Vec<SimPackage>,
    /// Packages each device completed (re-runs included).
    pub device_packages: Vec<usize>,
    /// When each device completed its last package (0 if none).
    pub finish: Vec<f64>,
    pub makespan: f64,
    /// First device done / last device done (EngineCL optimisation study, §IV).
    pub balance: f64,
    /// 1 / Σ_i (1/T_i), T_i each device alone at its best: a lower bound of any makespan.
    pub ideal_makespan: f64,
    /// speedup / Smax = ideal makespan / makespan.
    pub efficiency: f64,
}

impl SimResult {
    /// What a [`crate::balance::Learned`] balancer learns from this run, as
    /// [`crate::balance::History::from_report`] reads an engine report: every completed package
    /// with its compute time (the span less the device's per-package overhead; where the work
    /// moves bytes over a [`Link`], its transfers stay in, unlike the engine's kernel time: the
    /// relaunch scenarios move none); a cut-short or
    /// losing copy ran only in part and counts for neither speed nor ownership.
    pub fn history(&self, devices: &[SimDevice], total_groups: u64) -> History {
        let runs = self.packages.iter().filter(|p| !p.aborted).map(|p| Ran {
            device: p.device,
            package: p.package,
            seconds: p.end
                - p.start
                - if p.queued { 0.0 } else { devices.get(p.device).map_or(0.0, |d| d.overhead) },
            merged: true,
        });
        History::from_runs(total_groups, devices.len(), runs)
    }
}

/// What the simulator models of a device; every decision is the dispatcher's.
#[derive(Debug, Clone, Copy, PartialEq)]
enum State {
    Idle,
    /// Told to wait: asked again after the next completion or loss.
    Waiting,
    /// Nothing more from the balancer (or the run is over for it): asked again after a loss or
    /// when a lost device's package waits to be re-run; may back up a straggler at a poll.
    Done,
    Running {
        package: Package,
        end: f64,
        index: usize,
        /// Queued behind it, and when the host had it launched.
        queued: Option<(Assignment, f64)>,
    },
    /// Still setting up: asks for work first at `at`.
    Joining {
        at: f64,
    },
    Lost,
}

/// Models time and devices around the shared [`Dispatcher`]: when each package ends, when a
/// device is lost, when idle devices look for a straggler (the engine's poll).
struct Driver<'a, 'b> {
    devices: &'a [SimDevice],
    work: &'a CostTable,
    dispatch: Dispatcher<&'b mut dyn Balancer>,
    seed: u64,
    waves: bool,
    pipeline: bool,
    now: f64,
    state: Vec<State>,
    packages: Vec<SimPackage>,
}

impl Driver<'_, '_> {
    fn launch(&mut self, device: usize, a: Assignment) -> Result<()> {
        self.start(device, a, None)
    }

    /// `device` starts `a` now, or, with `ready`, once the host has launched it (`ready`) and
    /// the package before it has ended (now): its overhead is then behind it. With pipelining,
    /// the device then asks for a package to queue behind this one.
    fn start(&mut self, device: usize, a: Assignment, ready: Option<f64>) -> Result<()> {
        let package = a.package;
        let dev = &self.devices[device];
        let draw =
            SplitMix64::keyed(self.seed, &[device as u64, self.packages.len() as u64]).unit();
        let cost = self.work.cost(package.offset, package.len);
        let compute = dev.compute_seconds(cost, package.len, draw, self.waves);
        let transfer = dev.transfer_seconds(package.len, self.work.traffic());
        let (start, end) = match ready {
            Some(r) => {
                let start = self.now.max(r);
                (start, start + transfer + compute)
            }
            None => (self.now, self.now + dev.overhead + transfer + compute),
        };
        let index = self.packages.len();
        self.state[device] = State::Running { package, end, index, queued: None };
        self.packages.push(SimPackage {
            device,
            package,
            start,
            end,
            rerun: a.origin == Origin::Retry,
            aborted: false,
            backup: matches!(a.origin, Origin::Backup { .. }),
            queued: ready.is_some(),
        });
        if self.pipeline {
            if let Some(q) = self.dispatch.ask_ahead(device, self.now)? {
                let ready = self.now.max(start) + dev.overhead;
                if let State::Running { queued, .. } = &mut self.state[device] {
                    *queued = Some((q, ready));
                }
            }
        }
        Ok(())
    }

    /// A free device asks the dispatcher for work.
    fn serve(&mut self, device: usize) -> Result<()> {
        match self.dispatch.ask(device, self.now)? {
            Decision::Run(a) => self.launch(device, a)?,
            Decision::Wait => self.state[device] = State::Waiting,
            Decision::Idle | Decision::Stop => self.state[device] = State::Done,
        }
        Ok(())
    }

    /// After any completion or loss: waiting devices ask again, idle survivors take re-runs.
    fn wake(&mut self) -> Result<()> {
        for d in 0..self.state.len() {
            let free = matches!(self.state[d], State::Waiting | State::Idle)
                || (self.state[d] == State::Done && self.dispatch.retries_pending());
            if free {
                self.serve(d)?;
            }
        }
        Ok(())
    }

    fn complete(&mut self, device: usize) -> Result<()> {
        let State::Running { package, end, index, queued } = self.state[device] else {
            return Ok(());
        };
        self.now = end;
        self.state[device] = State::Idle;
        let (start, ahead) = (self.packages[index].start, self.packages[index].queued);
        let dev = &self.devices[device];
        let overhead = if ahead { 0.0 } else { dev.overhead };
        let transfer = dev.transfer_seconds(package.len, self.work.traffic());
        let kernel = (end - start - overhead - transfer).max(0.0);
        match self.dispatch.kernel_done(device, package, end, Some(kernel))? {
            // The other copy won: this one's result is thrown away, as the engine does with a
            // late copy, so neither the balancer nor the device's finish time hears of it.
            Verdict::Discard => {}
            Verdict::Keep { abandoned } => {
                if let Some(State::Running { index, .. }) = abandoned.map(|t| self.state[t]) {
                    self.packages[index].aborted = true;
                }
                self.dispatch.merged(device, package, end)?;
            }
        }
        match queued {
            Some((q, ready)) => self.start(device, q, Some(ready))?,
            None => self.serve(device)?,
        }
        self.wake()
    }

    fn lose(&mut self, loss: Loss) -> Result<()> {
        self.now = self.now.max(loss.at);
        if let State::Running { index, queued, .. } = self.state[loss.device] {
            let p = &mut self.packages[index];
            p.aborted = true;
            // A queued package still waiting for its host launch never began.
            if p.start > self.now {
                (p.start, p.end) = (self.now, self.now);
            }
            // Handed out but never started: recorded, cut short before it began.
            if let Some((q, _)) = queued {
                self.packages.push(SimPackage {
                    device: loss.device,
                    package: q.package,
                    start: self.now,
                    end: self.now,
                    rerun: false,
                    aborted: true,
                    backup: false,
                    queued: true,
                });
            }
        }
        self.state[loss.device] = State::Lost;
        let alone = self.state.iter().all(|s| *s == State::Lost);
        let reason = if alone {
            format!("lost at {:.6} s with no other device left", loss.at)
        } else {
            format!("lost at {:.6} s", loss.at)
        };
        self.dispatch.fail(loss.device, self.now, reason)?;
        // The contract has every device asked again after a loss.
        for s in &mut self.state {
            if *s == State::Done {
                *s = State::Idle;
            }
        }
        self.wake()
    }

    /// When idle devices next look for a straggler: every [`backup::BACKUP_POLL_SECONDS`], as
    /// the engine's do, while one of them could back something up.
    fn next_poll(&self) -> Option<f64> {
        self.dispatch.could_back_up().then_some(self.now + backup::BACKUP_POLL_SECONDS)
    }

    fn poll(&mut self, at: f64) -> Result<()> {
        self.now = at;
        for (d, a) in self.dispatch.tick(at)? {
            self.launch(d, a)?;
        }
        Ok(())
    }

    /// The device still setting up that joins first, and when.
    fn next_join(&self) -> Option<(usize, f64)> {
        self.earliest(|s| match s {
            State::Joining { at } => Some(*at),
            _ => None,
        })
    }

    /// The device whose state `at` dates earliest (the lower index on a tie), and when.
    fn earliest(&self, at: impl Fn(&State) -> Option<f64>) -> Option<(usize, f64)> {
        self.state
            .iter()
            .enumerate()
            .filter_map(|(d, s)| at(s).map(|t| (d, t)))
            .min_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)))
    }

    /// `device`'s set-up ends: it asks for work like any free device.
    fn join(&mut self, device: usize, at: f64) -> Result<()> {
        self.now = self.now.max(at);
        self.state[device] = State::Idle;
        self.serve(device)
    }

    fn next_completion(&self) -> Option<(usize, f64)> {
        self.earliest(|s| match s {
            State::Running { end, .. } => Some(*end),
            _ => None,
        })
    }
}

/// Run `balancer` over `work` on `devices`.
pub fn simulate(
    devices: &[SimDevice],
    work: &CostTable,
    balancer: &mut dyn Balancer,
    options: &SimOptions,
) -> Result<SimResult> {
    let n = devices.len();
    let setup = Setup {
        total_groups: work.total_groups(),
        devices: devices.iter().map(SimDevice::profile).collect(),
    };
    let names = devices.iter().map(|d| d.name.clone()).collect();
    let config = Config { backups: options.backups, ..Config::default() };
    let mut driver = Driver {
        devices,
        work,
        dispatch: Dispatcher::start(balancer, setup, names, config)?,
        seed: options.seed,
        waves: options.waves,
        pipeline: options.pipeline,
        now: 0.0,
        state: vec![State::Idle; n],
        packages: Vec::new(),
    };
    let mut loss = options.loss.filter(|l| l.device < n);
    for d in 0..n {
        match options.joins.iter().find(|j| j.device == d) {
            Some(j) => driver.state[d] = State::Joining { at: j.at.max(0.0) },
            None => driver.serve(d)?,
        }
    }
    loop {
        // The earliest event first: a device lost, idle devices looking for a straggler, a
        // device joining, or a package completing. A device that would join after the work is
        // done never does.
        let (d, end, joins) = match (driver.next_completion(), driver.next_join()) {
            (Some((_, end)), Some((j, at))) if at <= end => (j, at, true),
            (Some((d, end)), _) => (d, end, false),
            (None, Some((j, at))) if !driver.dispatch.is_over() => (j, at, true),
            _ => break,
        };
        let poll = driver.next_poll().filter(|&t| t < end);
        match loss {
            Some(l) if l.at <= end && poll.is_none_or(|t| l.at <= t) => {
                loss = None;
                driver.lose(l)?;
            }
            _ => match poll {
                Some(t) => driver.poll(t)?,
                None if joins => driver.join(d, end)?,
                None => driver.complete(d)?,
            },
        }
    }
    driver.dispatch.outcome()?;
    let stats = driver.dispatch.stats();
    let finish: Vec<f64> = stats.iter().map(|s| s.finish).collect();
    let device_packages = stats.iter().map(|s| s.packages).collect();
    let makespan = finish.iter().copied().fold(0.0, f64::max);
    let alone: Vec<f64> = devices.iter().map(|d| d.alone_seconds(work)).collect();
    let ideal_makespan = 1.0 / alone.iter().map(|t| 1.0 / t).sum::<f64>();
    let efficiency = report::speedup(&alone, makespan) / report::smax(&alone);
    Ok(SimResult {
        balancer: driver.dispatch.into_balancer().name(),
        balance: report::balance(&finish),
        packages: driver.packages,
        device_packages,
        finish,
        makespan,
        ideal_makespan,
        efficiency,
    })
}

#[cfg(test)]
mod tests;
