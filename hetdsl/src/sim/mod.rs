//! A deterministic discrete-event simulator that drives the very balancer objects the engine
//! uses, under the same contract (see [`crate::balance`]): `start` once; `next` for a device only
//! while it runs nothing, after its previous package was reported through `completed`; a device
//! told `Wait` is asked again after the next completion or loss on any device; `Done` is final
//! until a device is lost, after which every device is asked again; `device_lost` when a device
//! fails, whose running package the driver (not the balancer) runs again on the first survivor
//! free (its completion is reported like any other, as the engine does).
//!
//! Each simulated device has a speed (work-groups of mean cost per second), a host-side
//! overhead per package, an occupancy bound below which a package runs proportionally slower
//! (it takes as long as a full one, cf. seed 003 Fig. 4) and a small per-package speed jitter.
//! Kernels have a cost profile over the work-group index ([`CostProfile`]).

mod profile;
mod replay;
mod rng;
pub mod scenario;

pub use profile::{CostProfile, CostTable};
pub use replay::replay;
pub use rng::SplitMix64;

use crate::balance::{
    backup, Balancer, Completion, DeviceKind, DeviceProfile, Next, Package, Setup,
};
use crate::error::{Error, Result};
use crate::report;

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
    /// Jitter only slows a package down (by `jitter / 2` on average).
    fn compute_seconds(&self, cost: f64, len: u64, jitter_draw: f64) -> f64 {
        let fill = (self.min_groups.max(1) as f64 / len as f64).max(1.0);
        cost * fill * (1.0 + self.jitter * jitter_draw) / self.speed
    }

    /// This device alone on the whole problem in one package, at its best: no jitter and full
    /// occupancy (the T_i of Smax). Taken at the best case so that the ideal makespan
    /// 1 / Σ_i 1/T_i is a true lower bound of every simulated makespan, and the efficiency
    /// therefore at most 1: a device that computes work costing c_i and ends by M needs
    /// M ≥ o_i + c_i/s_i, so c_i ≤ (M − o_i)·s_i ≤ M·W/T_i whenever M ≤ T_i (T_i = o_i + W/s_i),
    /// and summing over the devices, W ≤ M·W·Σ 1/T_i. (Timing the device alone at its mean
    /// jitter instead let a co-execution luckier than average score above 1.)
    pub fn alone_seconds(&self, work: &CostTable) -> f64 {
        let g = work.total_groups();
        self.overhead + work.cost(0, g) / self.speed
    }
}

/// A device failing for good at a given instant.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Loss {
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
    /// First device done / last device done (seed 001 §IV).
    pub balance: f64,
    /// 1 / Σ_i (1/T_i), T_i each device alone at its best: a lower bound of any makespan.
    pub ideal_makespan: f64,
    /// speedup / Smax = ideal makespan / makespan.
    pub efficiency: f64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum State {
    Idle,
    Waiting,
    Running {
        package: Package,
        start: f64,
        end: f64,
        rerun: bool,
        index: usize,
        /// The device running the other copy of a backed-up package.
        twin: Option<usize>,
        /// The other copy completed first: this one's result is thrown away.
        abandoned: bool,
    },
    Done,
    Lost,
}

struct Driver<'a> {
    devices: &'a [SimDevice],
    work: &'a CostTable,
    balancer: &'a mut dyn Balancer,
    seed: u64,
    now: f64,
    state: Vec<State>,
    said_done: Vec<bool>,
    reruns: Vec<Package>,
    packages: Vec<SimPackage>,
    finish: Vec<f64>,
    done_count: Vec<usize>,
    backups: bool,
    /// Work-groups per second over the host span of each device's last package.
    speed: Vec<Option<f64>>,
    backed_up: Vec<Package>,
}

impl Driver<'_> {
    fn launch(&mut self, device: usize, package: Package, rerun: bool) -> Result<()> {
        let g = self.work.total_groups();
        if package.len == 0 || package.end() > g {
            return Err(Error::BadBalancer(format!(
                "{} handed device {device} the package {package:?} outside 0..{g} or empty",
                self.balancer.name()
            )));
        }
        // More packages than work-groups means some group was handed out twice.
        if self.packages.len() as u64 > 2 * g + 2 * self.devices.len() as u64 {
            return Err(Error::BadBalancer(format!(
                "{} does not stop handing out work",
                self.balancer.name()
            )));
        }
        let dev = &self.devices[device];
        let draw =
            SplitMix64::keyed(self.seed, &[device as u64, self.packages.len() as u64]).unit();
        let compute =
            dev.compute_seconds(self.work.cost(package.offset, package.len), package.len, draw);
        let end = self.now + dev.overhead + compute;
        self.state[device] = State::Running {
            package,
            start: self.now,
            end,
            rerun,
            index: self.packages.len(),
            twin: None,
            abandoned: false,
        };
        self.packages.push(SimPackage {
            device,
            package,
            start: self.now,
            end,
            rerun,
            aborted: false,
            backup: false,
        });
        Ok(())
    }

    /// Give an idle device a driver re-run if one is pending, else ask the balancer.
    fn serve(&mut self, device: usize) -> Result<()> {
        if let Some(p) = self.reruns.pop() {
            return self.launch(device, p, true);
        }
        if self.said_done[device] {
            self.state[device] = State::Done;
            return Ok(());
        }
        match self.balancer.next(device, self.now) {
            Next::Run(p) => self.launch(device, p, false)?,
            Next::Wait => self.state[device] = State::Waiting,
            Next::Done => {
                self.said_done[device] = true;
                self.state[device] = State::Done;
            }
        }
        if matches!(self.state[device], State::Waiting | State::Done) {
            self.back_up(device)?;
        }
        Ok(())
    }

    /// With nothing else to do, `device` may run a copy of a straggler (see
    /// [`SimOptions::backups`]).
    fn back_up(&mut self, device: usize) -> Result<()> {
        let Some(my_speed) = self.speed[device].filter(|_| self.backups) else {
            return Ok(());
        };
        let running = self.state.iter().enumerate().filter_map(|(d, s)| match *s {
            State::Running { package, start, twin: None, abandoned: false, .. }
                if d != device && !self.backed_up.contains(&package) =>
            {
                Some(backup::Running {
                    device: d,
                    package,
                    elapsed: self.now - start,
                    speed: self.speed[d],
                })
            }
            _ => None,
        });
        let Some(chosen) = backup::choose(my_speed, running.collect::<Vec<_>>()) else {
            return Ok(());
        };
        self.backed_up.push(chosen.package);
        self.launch(device, chosen.package, false)?;
        if let Some(copy) = self.packages.last_mut() {
            copy.backup = true;
        }
        for (d, other) in [(device, chosen.device), (chosen.device, device)] {
            if let State::Running { twin, .. } = &mut self.state[d] {
                *twin = Some(other);
            }
        }
        Ok(())
    }

    /// After any completion or loss: waiting devices ask again, idle survivors take re-runs.
    fn wake(&mut self) -> Result<()> {
        for d in 0..self.state.len() {
            let free = matches!(self.state[d], State::Waiting | State::Idle)
                || (self.state[d] == State::Done && !self.reruns.is_empty());
            if free {
                self.serve(d)?;
            }
        }
        Ok(())
    }

    fn complete(&mut self, device: usize) -> Result<()> {
        let State::Running { package, start, end, twin, abandoned, .. } = self.state[device] else {
            return Ok(());
        };
        self.now = end;
        self.state[device] = State::Idle;
        if abandoned {
            // The other copy won: this one's result is thrown away, as the engine does with a
            // late copy, so neither the balancer nor the device's finish time hears of it.
            self.serve(device)?;
            return self.wake();
        }
        if let Some(t) = twin {
            if let State::Running { abandoned, index, .. } = &mut self.state[t] {
                *abandoned = true;
                self.packages[*index].aborted = true;
            }
        }
        self.speed[device] = Some(package.len as f64 / (end - start).max(f64::MIN_POSITIVE));
        self.finish[device] = end;
        self.done_count[device] += 1;
        // Re-runs are reported too, as the engine does: a balancer learns the speed from them
        // even though it handed that package to another device.
        let dev = &self.devices[device];
        self.balancer.completed(&Completion {
            device,
            package,
            kernel_seconds: (end - start - dev.overhead).max(0.0),
            host_start: start,
            host_end: end,
        });
        self.serve(device)?;
        self.wake()
    }

    fn lose(&mut self, loss: Loss) -> Result<()> {
        self.now = self.now.max(loss.at);
        if let State::Running { package, index, twin, abandoned, .. } = self.state[loss.device] {
            self.packages[index].aborted = true;
            // A copy still running elsewhere finishes the package; only a lost sole copy (or
            // the winner of a pair, which cannot be lost before it completes) is run again.
            match twin.filter(|_| !abandoned) {
                Some(t) => {
                    if let State::Running { twin, .. } = &mut self.state[t] {
                        *twin = None;
                    }
                }
                None if !abandoned => self.reruns.push(package),
                None => {}
            }
        }
        self.state[loss.device] = State::Lost;
        self.balancer.device_lost(loss.device);
        // The balancer may give the lost device's share to devices it had told `Done`: the
        // contract has every device asked again after a loss.
        for d in 0..self.state.len() {
            self.said_done[d] = false;
            if self.state[d] == State::Done {
                self.state[d] = State::Idle;
            }
        }
        self.wake()
    }

    /// When idle devices next look for a straggler: every [`backup::BACKUP_POLL_SECONDS`], as
    /// the engine's do, while one of them could back something up.
    fn next_poll(&self) -> Option<f64> {
        let running = self.state.iter().any(|s| matches!(s, State::Running { .. }));
        let idle = (0..self.state.len()).any(|d| {
            matches!(self.state[d], State::Waiting | State::Done) && self.speed[d].is_some()
        });
        (self.backups && running && idle).then_some(self.now + backup::BACKUP_POLL_SECONDS)
    }

    fn poll(&mut self, at: f64) -> Result<()> {
        self.now = at;
        for d in 0..self.state.len() {
            if matches!(self.state[d], State::Waiting | State::Done) {
                self.back_up(d)?;
            }
        }
        Ok(())
    }

    fn next_completion(&self) -> Option<(usize, f64)> {
        self.state
            .iter()
            .enumerate()
            .filter_map(|(d, s)| match s {
                State::Running { end, .. } => Some((d, *end)),
                _ => None,
            })
            .min_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)))
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
    balancer.start(&setup)?;
    let mut driver = Driver {
        devices,
        work,
        balancer,
        seed: options.seed,
        now: 0.0,
        state: vec![State::Idle; n],
        said_done: vec![false; n],
        reruns: Vec::new(),
        packages: Vec::new(),
        finish: vec![0.0; n],
        done_count: vec![0; n],
        backups: options.backups,
        speed: vec![None; n],
        backed_up: Vec::new(),
    };
    let mut loss = options.loss.filter(|l| l.device < n);
    for d in 0..n {
        driver.serve(d)?;
    }
    while let Some((d, end)) = driver.next_completion() {
        // The earliest event first: a device lost, idle devices looking for a straggler, or
        // a package completing.
        let poll = driver.next_poll().filter(|&t| t < end);
        match loss {
            Some(l) if l.at <= end && poll.is_none_or(|t| l.at <= t) => {
                loss = None;
                driver.lose(l)?;
            }
            _ => match poll {
                Some(t) => driver.poll(t)?,
                None => driver.complete(d)?,
            },
        }
    }
    let name = driver.balancer.name();
    if !driver.reruns.is_empty() {
        let faults = options.loss.iter().map(|l| crate::error::DeviceFault {
            device: l.device,
            name: devices[l.device].name.clone(),
            reason: format!("lost at {:.6} s with no other device left", l.at),
        });
        return Err(Error::AllDevicesFailed(faults.collect()));
    }
    if let Some(d) = driver.state.iter().position(|s| *s == State::Waiting) {
        return Err(Error::BadBalancer(format!(
            "{name} left device {d} waiting with nothing running"
        )));
    }
    let makespan = driver.finish.iter().copied().fold(0.0, f64::max);
    let alone: Vec<f64> = devices.iter().map(|d| d.alone_seconds(work)).collect();
    let ideal_makespan = 1.0 / alone.iter().map(|t| 1.0 / t).sum::<f64>();
    let efficiency = report::speedup(&alone, makespan) / report::smax(&alone);
    Ok(SimResult {
        balancer: name,
        balance: report::balance(&driver.finish),
        packages: driver.packages,
        device_packages: driver.done_count,
        finish: driver.finish,
        makespan,
        ideal_makespan,
        efficiency,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::balance::{Dynamic, Static};

    fn device(speed: f64, overhead: f64, min_groups: u64) -> SimDevice {
        SimDevice {
            name: "d".into(),
            kind: DeviceKind::Gpu,
            speed,
            overhead,
            min_groups,
            nominal_gflops: 1.0,
            jitter: 0.0,
        }
    }

    fn uniform(groups: u64) -> CostTable {
        CostTable::new(&CostProfile::Uniform, groups, 16)
    }

    fn run(
        devices: &[SimDevice],
        groups: u64,
        b: &mut dyn Balancer,
        loss: Option<Loss>,
    ) -> SimResult {
        simulate(devices, &uniform(groups), b, &SimOptions { seed: 1, loss, backups: false })
            .unwrap()
    }

    /// Every work-group covered exactly once by the packages whose copy counted.
    fn covered_once(r: &SimResult, groups: u64) -> bool {
        let mut seen = vec![0u32; groups as usize];
        for p in r.packages.iter().filter(|p| !p.aborted) {
            for g in p.package.offset..p.package.end() {
                seen[g as usize] += 1;
            }
        }
        seen.iter().all(|&c| c == 1)
    }

    #[test]
    fn a_straggler_is_backed_up_and_its_late_copy_ignored() {
        // Two packages of 100 groups each (Dynamic: first come, first served), on a device at
        // 10 groups/s and one at 1000: the fast one takes the second package and ends it at
        // 0.1 s. The slow one is unmeasured, so its package is predicted to need as long again
        // as it has run: once it has run BACKUP_MARGIN times the copy's 0.1 s (at 0.15 s, to
        // the next 5 ms poll), the fast one backs it up, ending near 0.25 s instead of 10 s.
        let devices = [device(10.0, 0.0, 1), device(1000.0, 0.0, 1)];
        let options = |backups| SimOptions { seed: 1, loss: None, backups };
        let work = uniform(200);
        let with = simulate(&devices, &work, &mut Dynamic::packages(2), &options(true)).unwrap();
        assert!(with.makespan > 0.249 && with.makespan < 0.256, "{}", with.makespan);
        assert!(covered_once(&with, 200));
        let late = with.packages.iter().find(|p| p.device == 0).unwrap();
        assert!(late.aborted, "the slow copy lost: {:?}", with.packages);
        assert_eq!(with.device_packages, vec![0, 2]);
        let without =
            simulate(&devices, &work, &mut Dynamic::packages(2), &options(false)).unwrap();
        assert!((without.makespan - 10.0).abs() < 1e-9, "{}", without.makespan);
    }

    #[test]
    fn a_backed_up_package_whose_device_is_lost_is_not_run_a_third_time() {
        // As above, the slow device lost at 0.2 s while the fast one runs its copy.
        let devices = [device(10.0, 0.0, 1), device(1000.0, 0.0, 1)];
        let loss = Some(Loss { device: 0, at: 0.2 });
        let options = SimOptions { seed: 1, loss, backups: true };
        let r = simulate(&devices, &uniform(200), &mut Dynamic::packages(2), &options).unwrap();
        assert!(r.packages.iter().all(|p| !p.rerun), "{:?}", r.packages);
        assert!(covered_once(&r, 200));
        assert!(r.makespan > 0.249 && r.makespan < 0.256, "{}", r.makespan);
    }

    #[test]
    fn one_package_takes_overhead_plus_work_over_speed() {
        // 1000 groups at 100/s plus 0.5 s of overhead: 10.5 s, which is also the ideal.
        let r = run(&[device(100.0, 0.5, 1)], 1000, &mut Static::nominal(), None);
        assert_eq!(r.packages.len(), 1);
        assert!((r.makespan - 10.5).abs() < 1e-9, "{}", r.makespan);
        assert!((r.efficiency - 1.0).abs() < 1e-9 && r.balance == 1.0);
    }

    #[test]
    fn packages_below_the_occupancy_bound_take_a_full_fill() {
        // Chunks of 100 groups on a device that fills with 400 at 100/s: 4 s each, 8 s in all.
        let r = run(&[device(100.0, 0.0, 400)], 200, &mut Dynamic::chunk(100), None);
        assert_eq!(r.packages.len(), 2);
        assert!((r.makespan - 8.0).abs() < 1e-9, "{}", r.makespan);
    }

    #[test]
    fn a_lost_device_s_package_is_run_again_by_a_survivor() {
        // Two devices at 10/s, 50 groups each (5 s). Device 1 fails at 2 s: device 0 runs its
        // 50 groups again after its own, ending at 10 s.
        let devices = [device(10.0, 0.0, 1), device(10.0, 0.0, 1)];
        let r = run(&devices, 100, &mut Static::nominal(), Some(Loss { device: 1, at: 2.0 }));
        let aborted: Vec<_> = r.packages.iter().filter(|p| p.aborted).collect();
        let rerun: Vec<_> = r.packages.iter().filter(|p| p.rerun).collect();
        assert_eq!(aborted.len(), 1);
        assert_eq!((aborted[0].device, aborted[0].package), (1, Package { offset: 50, len: 50 }));
        assert_eq!(
            (rerun[0].device, rerun[0].package, rerun[0].start),
            (0, aborted[0].package, 5.0)
        );
        assert!((r.makespan - 10.0).abs() < 1e-9);
    }

    /// Device 1 is told to wait until device 0 has finished its first package; after a loss it
    /// has work for a device it had told `Done`.
    #[derive(Default)]
    struct Scripted {
        first_done: bool,
        lost: bool,
        handed: u64,
    }

    impl Balancer for Scripted {
        fn name(&self) -> String {
            "scripted".into()
        }
        fn start(&mut self, _setup: &Setup) -> Result<()> {
            Ok(())
        }
        fn next(&mut self, device: usize, _now: f64) -> Next {
            let give = |s: &mut Self| {
                s.handed += 1;
                Next::Run(Package { offset: s.handed - 1, len: 1 })
            };
            match (device, self.handed) {
                (0, 0) => give(self),
                (1, 1) if self.first_done => give(self),
                (0, 2) if self.lost => give(self),
                (1, _) if !self.first_done => Next::Wait,
                _ => Next::Done,
            }
        }
        fn completed(&mut self, _done: &Completion) {
            self.first_done = true;
        }
        fn device_lost(&mut self, _device: usize) {
            self.lost = true;
        }
    }

    #[test]
    fn waiting_devices_are_asked_again_and_done_ones_after_a_loss() {
        // Device 0 runs group 0 (1 s); device 1 waits, then runs group 1 from 1 s to 2 s.
        // Device 0 was told Done at 1 s; device 2 is lost at 1.5 s, so device 0 is asked again
        // and runs group 2.
        let devices = [device(1.0, 0.0, 1), device(1.0, 0.0, 1), device(1.0, 0.0, 1)];
        let work = uniform(3);
        let loss = Some(Loss { device: 2, at: 1.5 });
        let r = simulate(
            &devices,
            &work,
            &mut Scripted::default(),
            &SimOptions { seed: 1, loss, backups: false },
        )
        .unwrap();
        let starts: Vec<(usize, u64, f64)> =
            r.packages.iter().map(|p| (p.device, p.package.offset, p.start)).collect();
        assert_eq!(starts, vec![(0, 0, 0.0), (1, 1, 1.0), (0, 2, 1.5)]);
    }

    struct Stalls;

    impl Balancer for Stalls {
        fn name(&self) -> String {
            "stalls".into()
        }
        fn start(&mut self, _setup: &Setup) -> Result<()> {
            Ok(())
        }
        fn next(&mut self, _device: usize, _now: f64) -> Next {
            Next::Wait
        }
        fn completed(&mut self, _done: &Completion) {}
        fn device_lost(&mut self, _device: usize) {}
    }

    #[test]
    fn a_balancer_that_never_hands_out_work_is_an_error_not_a_hang() {
        let err =
            simulate(&[device(1.0, 0.0, 1)], &uniform(4), &mut Stalls, &SimOptions::default())
                .unwrap_err();
        assert!(err.to_string().contains("waiting with nothing running"), "{err}");
    }
}
