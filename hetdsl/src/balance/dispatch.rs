//! The one driver of a balancer: a pure state machine that the engine (with real devices and
//! a clock) and the simulator (with modelled devices and simulated time) both feed with events,
//! so what the simulator shows is what runs on the devices.
//!
//! Events carry their instant (seconds since the run began); nothing here reads a clock, starts
//! a thread or touches OpenCL. The driver reports, in any order that respects each device's
//! own sequence:
//! - [`Dispatcher::ask`]: a device has nothing running and wants work. The answer
//!   ([`Decision`]) is a package to run (the balancer's, a re-run of a lost device's, or a
//!   speculative back-up of a straggler), [`Decision::Wait`], [`Decision::Idle`] or
//!   [`Decision::Stop`].
//! - [`Dispatcher::kernel_done`]: a device's package finished, with its measured time. The
//!   first copy of a package to finish is kept ([`Verdict::Keep`]), a later copy discarded.
//! - [`Dispatcher::merged`]: a kept package's output is in the caller's memory. The run is over
//!   when every work-group is merged ([`Dispatcher::is_over`]).
//! - [`Dispatcher::fail`]: a device is lost. In one step its running and kept-but-unmerged
//!   packages go to the re-run list (unless another copy still runs), the balancer hears of the
//!   loss, and every device may be asked again.
//! - [`Dispatcher::tick`]: time passes; devices waiting for work may back up stragglers.
//!   [`Dispatcher::hung`] says, from the same state and instant, which devices the watchdog
//!   declares hung.
//!
//! What it guarantees whatever the balancer does: every work-group is handed out by the
//! balancer exactly once (checked with a bitmap: a package out of range, empty or overlapping
//! earlier work is an error naming the balancer), merged exactly once, and a balancer that
//! stops handing out work with work left, or panics, ends the run with an error naming it
//! instead of a hang.

use std::collections::HashSet;
use std::ops::DerefMut;
use std::panic::{catch_unwind, AssertUnwindSafe};

use super::{backup, Balancer, Completion, Next, Package, Setup};
use crate::error::{DeviceFault, Error, Result};

/// Knobs of a dispatcher.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Config {
    /// Speculative back-ups of stragglers with the rule [`backup::choose`].
    pub backups: bool,
}

/// Why a device runs a package.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// Handed out by the balancer.
    Balancer,
    /// Run again: the device that had it was lost before its output was merged.
    Retry,
    /// A speculative copy of the package device `of` is still running.
    Backup { of: usize },
}

/// A package a device is told to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Assignment {
    pub package: Package,
    pub origin: Origin,
}

/// What a device that asked for work does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Run(Assignment),
    /// Nothing now: ask again after the next completion or loss on any device.
    Wait,
    /// The balancer has nothing more for this device; only a re-run after a loss or a back-up
    /// (offered at a [`Dispatcher::tick`]) can still come.
    Idle,
    /// Leave the run: every work-group is merged, or this device was lost.
    Stop,
}

/// What becomes of a finished package's output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The first copy to finish: merge it, then report [`Dispatcher::merged`]. `abandoned`
    /// names the device running the other copy of a backed-up package, whose result will be
    /// discarded.
    Keep { abandoned: Option<usize> },
    /// Another copy finished first (or this device was lost): throw the output away.
    Discard,
}

/// The watchdog's rule: a package may run `factor` times what its device's measured speed
/// predicts, and never less than `min_seconds`, before the device is declared hung.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WatchdogRule {
    pub factor: f64,
    pub min_seconds: f64,
}

/// A device the watchdog declares hung.
#[derive(Debug, Clone, PartialEq)]
pub struct Hung {
    pub device: usize,
    /// `"package"` (its kernel) or `"read-back of package"` (a kept output never merged).
    pub what: &'static str,
    pub package: Package,
    pub elapsed: f64,
    pub limit: f64,
}

impl Hung {
    /// The fault reason the engine records.
    pub fn reason(&self) -> String {
        format!(
            "hung: {} {:?} ran {:.3} s, limit {:.3} s",
            self.what, self.package, self.elapsed, self.limit
        )
    }
}

/// What a device did in the run, as the report shows it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeviceStats {
    /// Packages whose output was kept (re-runs and winning back-ups included).
    pub packages: usize,
    pub groups: u64,
    /// Kernel seconds of the kept packages.
    pub busy: f64,
    /// When its last output was merged (0 if none).
    pub finish: f64,
    /// Work-groups per second over the host span (hand-out to completion) of its last kept
    /// package.
    pub speed: Option<f64>,
    pub fault: Option<String>,
    /// Every package whose kernel completed here while the device was in the run, kept or
    /// discarded (the losing copy of a back-up), its work-groups and kernel seconds: what the
    /// device computed, as the engine's report counts it.
    pub ran: usize,
    pub ran_groups: u64,
    pub ran_busy: f64,
}

/// One copy of a package running on a device.
#[derive(Debug, Clone, Copy)]
struct Copy {
    package: Package,
    since: f64,
    /// The device running the other copy of a backed-up package.
    twin: Option<usize>,
    /// The other copy finished first: this one's output will be discarded.
    abandoned: bool,
}

#[derive(Debug, Default)]
struct Dev {
    running: Option<Copy>,
    /// Kept but not merged yet: the package, the device whose copy was abandoned for it, and
    /// when its kernel finished (a read-back that never ends is a hang too).
    kept: Vec<(Package, Option<usize>, f64)>,
    /// Answered `Wait` or `Idle` at this epoch and has not asked since.
    waiting: Option<u64>,
    /// The balancer said `Done` (until the next loss).
    balancer_done: bool,
    lost: bool,
    stats: DeviceStats,
}

/// The balancer-driving state machine. `B` is how it holds the balancer: `&mut dyn Balancer`
/// (the simulator) or `Box<dyn Balancer>` (the engine).
pub struct Dispatcher<B> {
    balancer: B,
    name: String,
    names: Vec<String>,
    nominal: Vec<f64>,
    config: Config,
    devices: Vec<Dev>,
    retry: Vec<Package>,
    /// Work-groups the balancer has handed out, one bit each.
    handed: Vec<u64>,
    /// Work-groups merged, one bit each.
    merged: Vec<u64>,
    total: u64,
    unmerged: u64,
    /// Bumped by every completion and loss: a `Wait` given before is stale.
    epoch: u64,
    backed_up: HashSet<Package>,
    backups: Vec<(usize, usize, Package)>,
    faults: Vec<(usize, Package, String)>,
    /// Set once the run cannot go on; every later call returns it.
    fatal: Option<Fatal>,
}

#[derive(Debug, Clone)]
enum Fatal {
    Balancer(String),
    AllFailed(Vec<DeviceFault>),
}

impl Fatal {
    fn error(&self) -> Error {
        match self {
            Fatal::Balancer(m) => Error::BadBalancer(m.clone()),
            Fatal::AllFailed(f) => Error::AllDevicesFailed(f.clone()),
        }
    }
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a non-text panic".into())
}

/// The mask of bits `lo..hi` (within one word, `hi <= 64`).
fn mask(lo: u64, hi: u64) -> u64 {
    let upper = if hi >= 64 { u64::MAX } else { (1u64 << hi) - 1 };
    upper & !((1u64 << lo) - 1)
}

/// The first set bit of `map` in `range`, a word at a time.
fn first_set(map: &[u64], range: std::ops::Range<u64>) -> Option<u64> {
    let mut u = range.start;
    while u < range.end {
        let (w, lo) = (u / 64, u % 64);
        let hi = (range.end - w * 64).min(64);
        let hits = map[w as usize] & mask(lo, hi);
        if hits != 0 {
            return Some(w * 64 + hits.trailing_zeros() as u64);
        }
        u = (w + 1) * 64;
    }
    None
}

/// Set the bits of `range`, a word at a time.
fn set_range(map: &mut [u64], range: std::ops::Range<u64>) {
    let mut u = range.start;
    while u < range.end {
        let (w, lo) = (u / 64, u % 64);
        let hi = (range.end - w * 64).min(64);
        map[w as usize] |= mask(lo, hi);
        u = (w + 1) * 64;
    }
}

impl<'d, B: DerefMut<Target = dyn Balancer + 'd>> Dispatcher<B> {
    /// Start the balancer on `setup`; `names` (one per device) label faults.
    pub fn start(
        mut balancer: B,
        setup: Setup,
        names: Vec<String>,
        config: Config,
    ) -> Result<Self> {
        let name = catch_unwind(AssertUnwindSafe(|| balancer.name()))
            .unwrap_or_else(|_| "(a user balancer whose name() panicked)".to_string());
        let n = setup.devices.len();
        let total = setup.total_groups;
        let nominal = setup.devices.iter().map(|d| d.nominal_gflops).collect();
        match catch_unwind(AssertUnwindSafe(|| balancer.start(&setup))) {
            Ok(r) => r?,
            Err(p) => {
                return Err(Error::BadBalancer(format!(
                    "balancer `{name}` panicked in start(): {}",
                    panic_message(p.as_ref())
                )))
            }
        }
        let words = total.div_ceil(64) as usize;
        Ok(Dispatcher {
            balancer,
            name,
            names: (0..n).map(|d| names.get(d).cloned().unwrap_or_default()).collect(),
            nominal,
            config,
            devices: (0..n).map(|_| Dev::default()).collect(),
            retry: Vec::new(),
            handed: vec![0; words],
            merged: vec![0; words],
            total,
            unmerged: total,
            epoch: 0,
            backed_up: HashSet::new(),
            backups: Vec::new(),
            faults: Vec::new(),
            fatal: None,
        })
    }

    /// Run one balancer call; a panic poisons the dispatcher with an error naming the balancer
    /// (its state may be half-updated, so it is never called again).
    fn call<T>(&mut self, what: &str, f: impl FnOnce(&mut (dyn Balancer + 'd)) -> T) -> Result<T> {
        if let Some(f) = &self.fatal {
            return Err(f.error());
        }
        let balancer = &mut *self.balancer;
        match catch_unwind(AssertUnwindSafe(|| f(balancer))) {
            Ok(v) => Ok(v),
            Err(p) => {
                let m = format!(
                    "balancer `{}` panicked in {what}(): {}",
                    self.name,
                    panic_message(p.as_ref())
                );
                Err(self.poison(Fatal::Balancer(m)))
            }
        }
    }

    fn poison(&mut self, f: Fatal) -> Error {
        let e = f.error();
        self.fatal.get_or_insert(f);
        e
    }

    fn misuse(&mut self, what: String) -> Error {
        self.poison(Fatal::Balancer(format!("dispatcher misused: {what}")))
    }

    /// The balancer's name, as reports show it.
    pub fn balancer_name(&self) -> &str {
        &self.name
    }

    /// `device` has nothing running and wants work.
    pub fn ask(&mut self, device: usize, at: f64) -> Result<Decision> {
        if let Some(f) = &self.fatal {
            return Err(f.error());
        }
        if device >= self.devices.len() || self.devices[device].running.is_some() {
            return Err(self.misuse(format!("device {device} asked for work while running")));
        }
        if self.devices[device].lost || self.unmerged == 0 {
            self.devices[device].waiting = None;
            return Ok(Decision::Stop);
        }
        if let Some(package) = self.retry.pop() {
            return Ok(self.hand_out(device, at, package, Origin::Retry, None));
        }
        if !self.devices[device].balancer_done {
            match self.call("next", |b| b.next(device, at))? {
                Next::Run(p) => {
                    self.check_fresh(p)?;
                    return Ok(self.hand_out(device, at, p, Origin::Balancer, None));
                }
                Next::Wait => {}
                Next::Done => self.devices[device].balancer_done = true,
            }
        }
        if let Some(d) = self.backup_for(device, at) {
            return Ok(d);
        }
        let d = &mut self.devices[device];
        d.waiting = Some(self.epoch);
        let answer = if d.balancer_done { Decision::Idle } else { Decision::Wait };
        self.check_stall()?;
        Ok(answer)
    }

    fn hand_out(
        &mut self,
        device: usize,
        at: f64,
        package: Package,
        origin: Origin,
        twin: Option<usize>,
    ) -> Decision {
        let d = &mut self.devices[device];
        d.waiting = None;
        d.running = Some(Copy { package, since: at, twin, abandoned: false });
        Decision::Run(Assignment { package, origin })
    }

    /// A package from the balancer must lie inside the range and cover only work-groups never
    /// handed out before.
    fn check_fresh(&mut self, p: Package) -> Result<()> {
        let name = &self.name;
        let bad = if p.len == 0 || p.end() > self.total {
            Some(format!(
                "balancer `{name}` returned package {p:?} outside the range 0..{} or empty",
                self.total
            ))
        } else {
            first_set(&self.handed, p.offset..p.end()).map(|u| {
                format!("balancer `{name}` handed out work-group {u} twice (package {p:?})")
            })
        };
        if let Some(m) = bad {
            return Err(self.poison(Fatal::Balancer(m)));
        }
        set_range(&mut self.handed, p.offset..p.end());
        Ok(())
    }

    /// With nothing else to do, `me` may run a copy of a straggler (rule: [`backup::choose`]);
    /// each package is backed up once.
    fn backup_for(&mut self, me: usize, at: f64) -> Option<Decision> {
        if !self.config.backups {
            return None;
        }
        let my_speed = self.devices[me].stats.speed?;
        let running = self.devices.iter().enumerate().filter_map(|(d, dev)| match dev.running {
            Some(Copy { package, since, twin: None, abandoned: false })
                if d != me && !dev.lost && !self.backed_up.contains(&package) =>
            {
                Some(backup::Running {
                    device: d,
                    package,
                    elapsed: at - since,
                    speed: dev.stats.speed,
                })
            }
            _ => None,
        });
        let chosen = backup::choose(my_speed, running.collect::<Vec<_>>())?;
        self.backed_up.insert(chosen.package);
        self.backups.push((chosen.device, me, chosen.package));
        if let Some(c) = self.devices[chosen.device].running.as_mut() {
            c.twin = Some(me);
        }
        let origin = Origin::Backup { of: chosen.device };
        Some(self.hand_out(me, at, chosen.package, origin, Some(chosen.device)))
    }

    /// Every live device has been asked since the last completion or loss and has nothing to
    /// run, nothing runs or waits to be merged, no re-run is pending, yet work is left: the
    /// balancer will never hand it out.
    fn check_stall(&mut self) -> Result<()> {
        let epoch = self.epoch;
        let settled = self.devices.iter().filter(|d| !d.lost).all(|d| {
            d.running.is_none()
                && d.kept.is_empty()
                && d.waiting.is_some_and(|e| e == epoch || d.balancer_done)
        });
        if settled && self.retry.is_empty() && self.unmerged > 0 {
            let m = self.stalled();
            return Err(self.poison(Fatal::Balancer(m)));
        }
        Ok(())
    }

    fn stalled(&self) -> String {
        format!(
            "balancer `{}` stopped handing out work with {} unit(s) left",
            self.name, self.unmerged
        )
    }

    /// The kernel of `package` finished on `device` at `at`; `kernel_seconds` is its device
    /// time if measured (else the host span counts). The first copy to finish is kept and the
    /// balancer hears of it; a later copy is discarded unheard.
    pub fn kernel_done(
        &mut self,
        device: usize,
        package: Package,
        at: f64,
        kernel_seconds: Option<f64>,
    ) -> Result<Verdict> {
        if let Some(f) = &self.fatal {
            return Err(f.error());
        }
        if self.devices.get(device).is_some_and(|d| d.lost) {
            return Ok(Verdict::Discard);
        }
        let copy = match self.devices.get_mut(device).and_then(|d| d.running.take()) {
            Some(c) if c.package == package => c,
            other => {
                if let Some(d) = self.devices.get_mut(device) {
                    d.running = other;
                }
                return Err(
                    self.misuse(format!("device {device} finished {package:?} not running"))
                );
            }
        };
        self.epoch += 1;
        let host = at - copy.since;
        let kernel_seconds = kernel_seconds.unwrap_or(host.max(0.0));
        let d = &mut self.devices[device].stats;
        d.ran += 1;
        d.ran_groups += package.len;
        d.ran_busy += kernel_seconds;
        if copy.abandoned {
            return Ok(Verdict::Discard);
        }
        if let Some(t) = copy.twin {
            if let Some(c) = self.devices[t].running.as_mut() {
                c.abandoned = true;
            }
        }
        let done =
            Completion { device, package, kernel_seconds, host_start: copy.since, host_end: at };
        self.call("completed", |b| b.completed(&done))?;
        let d = &mut self.devices[device];
        d.stats.speed = Some(package.len as f64 / host.max(f64::MIN_POSITIVE));
        d.stats.packages += 1;
        d.stats.groups += package.len;
        d.stats.busy += kernel_seconds;
        d.kept.push((package, copy.twin, at));
        Ok(Verdict::Keep { abandoned: copy.twin })
    }

    /// The output of `package`, kept from `device`, is in the caller's memory.
    pub fn merged(&mut self, device: usize, package: Package, at: f64) -> Result<()> {
        let Some(i) = self
            .devices
            .get(device)
            .and_then(|d| d.kept.iter().position(|(p, _, _)| *p == package))
        else {
            return Err(self.misuse(format!("device {device} merged {package:?} never kept")));
        };
        if let Some(u) = first_set(&self.merged, package.offset..package.end()) {
            return Err(self.misuse(format!("work-group {u} merged twice ({package:?})")));
        }
        set_range(&mut self.merged, package.offset..package.end());
        let d = &mut self.devices[device];
        d.kept.remove(i);
        d.stats.finish = at;
        self.unmerged -= package.len;
        Ok(())
    }

    /// `device` is lost at `at` for `reason`. One step: its running package and its kept but
    /// unmerged ones go to the re-run list, except where another copy still runs (that copy
    /// then counts alone) or already won; the balancer hears of the loss; every device may be
    /// asked again. Returns the packages put up for re-running, or an error when no device is
    /// left to run them.
    pub fn fail(&mut self, device: usize, at: f64, reason: String) -> Result<Vec<Package>> {
        let _ = at;
        if let Some(f) = &self.fatal {
            return Err(f.error());
        }
        let Some(d) = self.devices.get_mut(device) else {
            return Err(self.misuse(format!("no device {device} to fail")));
        };
        if d.lost {
            return Ok(Vec::new());
        }
        d.lost = true;
        d.waiting = None;
        d.stats.fault = Some(reason.clone());
        let running = d.running.take();
        let kept: Vec<_> = d.kept.drain(..).collect();
        self.epoch += 1;
        let mut lost = Vec::new();
        let mut requeue = Vec::new();
        if let Some(c) = running {
            lost.push(c.package);
            match c.twin {
                _ if c.abandoned => {}
                Some(t) => {
                    if let Some(other) = self.devices[t].running.as_mut() {
                        other.twin = None;
                    }
                }
                None => requeue.push(c.package),
            }
        }
        for (p, twin, _) in kept {
            lost.push(p);
            let revived = twin
                .and_then(|t| self.devices[t].running.as_mut())
                .filter(|c| c.package == p && c.abandoned);
            match revived {
                Some(c) => {
                    c.abandoned = false;
                    c.twin = None;
                }
                None => requeue.push(p),
            }
        }
        for p in &lost {
            self.faults.push((device, *p, reason.clone()));
        }
        self.retry.extend(requeue.iter().copied());
        self.call("device_lost", |b| b.device_lost(device))?;
        for d in &mut self.devices {
            d.balancer_done = false;
        }
        if self.unmerged > 0 && self.devices.iter().all(|d| d.lost) {
            let faults = self.fault_list();
            return Err(self.poison(Fatal::AllFailed(faults)));
        }
        Ok(requeue)
    }

    fn fault_list(&self) -> Vec<DeviceFault> {
        self.devices
            .iter()
            .enumerate()
            .filter_map(|(i, d)| {
                d.stats.fault.as_ref().map(|r| DeviceFault {
                    device: i,
                    name: self.names[i].clone(),
                    reason: r.clone(),
                })
            })
            .collect()
    }

    /// Time passes: each device waiting for work (in device order) may back up a straggler.
    /// Returns the devices given a copy to run.
    pub fn tick(&mut self, at: f64) -> Result<Vec<(usize, Assignment)>> {
        if let Some(f) = &self.fatal {
            return Err(f.error());
        }
        let mut given = Vec::new();
        for d in 0..self.devices.len() {
            let dev = &self.devices[d];
            if dev.lost || dev.running.is_some() || dev.waiting.is_none() {
                continue;
            }
            if let Some(Decision::Run(a)) = self.backup_for(d, at) {
                given.push((d, a));
            }
        }
        Ok(given)
    }

    /// Whether a [`tick`](Self::tick) could give a back-up now: back-ups are on, something
    /// runs, and a waiting device has a measured speed.
    pub fn could_back_up(&self) -> bool {
        self.config.backups
            && self.devices.iter().any(|d| d.running.is_some())
            && self
                .devices
                .iter()
                .any(|d| !d.lost && d.waiting.is_some() && d.stats.speed.is_some())
    }

    /// Whether `device`, waiting, should ask again: something it waits for happened since its
    /// answer (a completion or loss after a `Wait`, a loss after an `Idle`), or a lost
    /// device's package waits to be re-run, or the run is over.
    pub fn should_ask(&self, device: usize) -> bool {
        let Some(d) = self.devices.get(device) else { return false };
        if d.lost || d.running.is_some() {
            return false;
        }
        match d.waiting {
            None => true,
            Some(e) => {
                (e != self.epoch && !d.balancer_done)
                    || !self.retry.is_empty()
                    || self.unmerged == 0
            }
        }
    }

    /// Whether lost devices' packages wait for a device to re-run them.
    pub fn retries_pending(&self) -> bool {
        !self.retry.is_empty()
    }

    /// The devices the watchdog declares hung at `at`: those whose running package has run
    /// longer than `rule` allows for it (see [`Self::watchdog_limit`]). A package is judged only
    /// while another live device sits idle (waiting, nothing running or left to merge) and
    /// could take its work over: with every device busy nobody waits for it, and a long
    /// package is not a hung one; nor is the last device standing, which may merely be slow.
    pub fn hung(&self, at: f64, rule: WatchdogRule) -> Vec<Hung> {
        let idle =
            |d: &Dev| !d.lost && d.waiting.is_some() && d.running.is_none() && d.kept.is_empty();
        self.devices
            .iter()
            .enumerate()
            .filter(|(i, d)| {
                !d.lost && self.devices.iter().enumerate().any(|(o, other)| o != *i && idle(other))
            })
            .filter_map(|(i, d)| {
                // The kernel running, else the oldest output kept but not merged, which is
                // given as long as a kernel of its size from when that kernel ended.
                let (what, package, since) = match (d.running, d.kept.first()) {
                    (Some(c), _) => ("package", c.package, c.since),
                    (None, Some(&(p, _, done))) => ("read-back of package", p, done),
                    (None, None) => return None,
                };
                let elapsed = at - since;
                let limit = self.watchdog_limit(i, package, rule);
                (elapsed > limit).then_some(Hung { device: i, what, package, elapsed, limit })
            })
            .collect()
    }

    /// How long `p` may run on `device`: `rule.factor` times what its measured speed predicts.
    /// A device with no measurement yet is predicted from the fastest measured device scaled by
    /// nominal speeds, with `UNMEASURED` times more slack, because nominal figures can be far
    /// off (a 16-core CPU is 31x below an H200 nominally, 700x in fact); with nothing measured
    /// anywhere only the floor applies. Never less than `rule.min_seconds`.
    pub fn watchdog_limit(&self, device: usize, p: Package, rule: WatchdogRule) -> f64 {
        const UNMEASURED: f64 = 10.0;
        let nominal = |d: usize| self.nominal.get(d).copied().unwrap_or(0.0);
        let (speed, slack) = match self.devices[device].stats.speed {
            Some(v) => (Some(v), rule.factor),
            None => {
                let guess = (0..self.devices.len())
                    .filter_map(|m| {
                        let v = self.devices[m].stats.speed?;
                        (nominal(m) > 0.0).then(|| v * nominal(device) / nominal(m))
                    })
                    .fold(None, |best: Option<f64>, v| Some(best.map_or(v, |b| b.max(v))));
                (guess.filter(|v| *v > 0.0), rule.factor * UNMEASURED)
            }
        };
        match speed {
            Some(v) => (slack * p.len as f64 / v).max(rule.min_seconds),
            None => rule.min_seconds,
        }
    }

    /// The balancer back, once the run is over.
    pub fn into_balancer(self) -> B {
        self.balancer
    }

    /// Every work-group's output is merged.
    pub fn is_over(&self) -> bool {
        self.unmerged == 0
    }

    /// Work-groups whose output is not merged yet.
    pub fn unmerged(&self) -> u64 {
        self.unmerged
    }

    /// The run's outcome once nothing runs any more: the error that ended it, or an error if
    /// work is left (every device lost, or a balancer that stopped handing out work).
    pub fn outcome(&self) -> Result<()> {
        if let Some(f) = &self.fatal {
            return Err(f.error());
        }
        if self.unmerged == 0 {
            return Ok(());
        }
        if self.devices.iter().all(|d| d.lost) {
            return Err(Error::AllDevicesFailed(self.fault_list()));
        }
        Err(Error::BadBalancer(self.stalled()))
    }

    pub fn stats(&self) -> Vec<&DeviceStats> {
        self.devices.iter().map(|d| &d.stats).collect()
    }

    pub fn device(&self, device: usize) -> &DeviceStats {
        &self.devices[device].stats
    }

    pub fn is_lost(&self, device: usize) -> bool {
        self.devices[device].lost
    }

    /// The package `device` runs and when it was handed out.
    pub fn running(&self, device: usize) -> Option<(Package, f64)> {
        self.devices[device].running.map(|c| (c.package, c.since))
    }

    /// Whether `device` runs the losing copy of a package whose other copy already won.
    pub fn runs_abandoned(&self, device: usize) -> bool {
        self.devices[device].running.is_some_and(|c| c.abandoned)
    }

    /// (device lost, package, reason) for each package a lost device had not merged.
    pub fn faults(&self) -> &[(usize, Package, String)] {
        &self.faults
    }

    /// (from, to, package) of each back-up.
    pub fn backups(&self) -> &[(usize, usize, Package)] {
        &self.backups
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::balance::{DeviceKind, DeviceProfile, Dynamic, HGuided, Sigmoid, Static};
    use crate::sim::SplitMix64;

    fn setup(n: usize, groups: u64) -> Setup {
        Setup {
            total_groups: groups,
            devices: (0..n)
                .map(|_| DeviceProfile {
                    kind: DeviceKind::Gpu,
                    nominal_gflops: 1.0,
                    min_groups: 1,
                })
                .collect(),
        }
    }

    fn names(n: usize) -> Vec<String> {
        (0..n).map(|d| format!("dev{d}")).collect()
    }

    fn start(
        b: &mut dyn Balancer,
        n: usize,
        groups: u64,
        backups: bool,
    ) -> Dispatcher<&mut dyn Balancer> {
        Dispatcher::start(b, setup(n, groups), names(n), Config { backups }).unwrap()
    }

    fn run(d: Decision) -> Assignment {
        match d {
            Decision::Run(a) => a,
            other => panic!("expected a package, got {other:?}"),
        }
    }

    /// A scripted balancer: answers from a list per device, counts what it hears.
    #[derive(Default)]
    struct Script {
        answers: Vec<Vec<Next>>,
        completed: Vec<Package>,
        lost: Vec<usize>,
        panic_in: Option<&'static str>,
    }

    impl Balancer for Script {
        fn name(&self) -> String {
            "script".into()
        }
        fn start(&mut self, _setup: &Setup) -> Result<()> {
            assert!(self.panic_in != Some("start"), "boom in start");
            Ok(())
        }
        fn next(&mut self, device: usize, _now: f64) -> Next {
            assert!(self.panic_in != Some("next"), "boom in next");
            let list = &mut self.answers[device];
            if list.is_empty() {
                Next::Done
            } else {
                list.remove(0)
            }
        }
        fn completed(&mut self, done: &Completion) {
            assert!(self.panic_in != Some("completed"), "boom in completed");
            self.completed.push(done.package);
        }
        fn device_lost(&mut self, device: usize) {
            assert!(self.panic_in != Some("device_lost"), "boom in device_lost");
            self.lost.push(device);
        }
    }

    fn pkg(offset: u64, len: u64) -> Package {
        Package { offset, len }
    }

    #[test]
    fn packages_are_checked_against_the_range_and_earlier_hand_outs() {
        for (bad, says) in [
            (pkg(0, 0), "outside the range 0..8 or empty"),
            (pkg(6, 3), "outside the range 0..8 or empty"),
            (pkg(3, 2), "handed out work-group 3 twice"),
        ] {
            let mut b = Script {
                answers: vec![vec![Next::Run(pkg(0, 4)), Next::Run(bad)]],
                ..Script::default()
            };
            let mut d = start(&mut b, 1, 8, false);
            let p = run(d.ask(0, 0.0).unwrap()).package;
            d.kernel_done(0, p, 1.0, None).unwrap();
            d.merged(0, p, 1.0).unwrap();
            let err = d.ask(0, 1.0).unwrap_err().to_string();
            assert!(err.contains("balancer `script`") && err.contains(says), "{err}");
            // Poisoned: every later call says the same.
            assert_eq!(d.ask(0, 2.0).unwrap_err().to_string(), err);
        }
    }

    #[test]
    fn the_bitmaps_work_across_word_boundaries() {
        let mut map = vec![0u64; 3];
        set_range(&mut map, 60..130);
        assert_eq!(first_set(&map, 0..60), None);
        assert_eq!(first_set(&map, 0..61), Some(60));
        assert_eq!(first_set(&map, 130..192), None);
        assert_eq!(first_set(&map, 129..192), Some(129));
        assert_eq!(first_set(&map, 64..65), Some(64));
        assert_eq!(map[1], u64::MAX);
        assert_eq!(map[0], mask(60, 64));
        assert_eq!(map[2], 0b11);
    }

    #[test]
    fn a_balancer_that_stops_handing_out_work_is_an_error_naming_it() {
        // Every device told to wait, nothing running: the second answer closes the loop.
        let mut b =
            Script { answers: vec![vec![Next::Wait], vec![Next::Wait]], ..Default::default() };
        let mut d = start(&mut b, 2, 8, false);
        assert_eq!(d.ask(0, 0.0).unwrap(), Decision::Wait);
        let err = d.ask(1, 0.0).unwrap_err().to_string();
        assert!(err.contains("`script` stopped handing out work with 8 unit(s) left"), "{err}");
        // `Done` for everyone with work left, likewise.
        let mut b = Script { answers: vec![vec![], vec![]], ..Default::default() };
        let mut d = start(&mut b, 2, 8, false);
        assert_eq!(d.ask(0, 0.0).unwrap(), Decision::Idle);
        assert!(d.ask(1, 0.0).is_err());
    }

    #[test]
    fn a_wait_given_before_a_completion_is_not_taken_for_a_stall() {
        // Device 1 waits until device 0's package completes. When device 0 then asks and is
        // told Done, device 1 has not been asked since the completion: no stall yet, and
        // asked again it gets the rest.
        let mut b = Script {
            answers: vec![
                vec![Next::Run(pkg(0, 4)), Next::Done],
                vec![Next::Wait, Next::Run(pkg(4, 4))],
            ],
            ..Default::default()
        };
        let mut d = start(&mut b, 2, 8, false);
        let p = run(d.ask(0, 0.0).unwrap()).package;
        assert_eq!(d.ask(1, 0.0).unwrap(), Decision::Wait);
        d.kernel_done(0, p, 1.0, None).unwrap();
        d.merged(0, p, 1.0).unwrap();
        assert_eq!(d.ask(0, 1.0).unwrap(), Decision::Idle);
        let q = run(d.ask(1, 1.0).unwrap()).package;
        assert_eq!(q, pkg(4, 4));
        d.kernel_done(1, q, 2.0, None).unwrap();
        d.merged(1, q, 2.0).unwrap();
        assert!(d.is_over());
        assert_eq!(d.ask(1, 2.0).unwrap(), Decision::Stop);
        d.outcome().unwrap();
    }

    #[test]
    fn a_panicking_balancer_is_an_error_naming_it_wherever_it_panics() {
        for place in ["start", "next", "completed", "device_lost"] {
            let mut b = Script {
                answers: vec![vec![Next::Run(pkg(0, 2))], vec![Next::Run(pkg(2, 2))]],
                panic_in: Some(place),
                ..Default::default()
            };
            let err = match Dispatcher::start(
                &mut b as &mut dyn Balancer,
                setup(2, 4),
                names(2),
                Config::default(),
            ) {
                Err(e) => e,
                Ok(mut d) => (|| -> Result<()> {
                    let p = run(d.ask(0, 0.0)?).package;
                    d.ask(1, 0.0)?;
                    d.kernel_done(0, p, 1.0, None)?;
                    d.fail(1, 1.5, "gone".into())?;
                    Ok(())
                })()
                .unwrap_err(),
            };
            let text = err.to_string();
            assert!(
                text.contains(&format!("balancer `script` panicked in {place}(): boom in {place}")),
                "{place}: {text}"
            );
        }
    }

    #[test]
    fn a_loss_re_runs_exactly_the_device_s_unfinished_packages() {
        // Device 0: [0,2) merged, [2,4) kept but not merged (its read-back pending), [4,6)
        // running. Lost: [2,4) and [4,6) are re-run, [0,2) is not; the balancer hears of it
        // and may hand out again to a device it had told Done.
        let mut b = Script {
            answers: vec![
                vec![Next::Run(pkg(0, 2)), Next::Run(pkg(2, 2)), Next::Run(pkg(4, 2))],
                vec![Next::Run(pkg(6, 2))],
            ],
            ..Default::default()
        };
        let mut d = start(&mut b, 2, 8, false);
        let a = run(d.ask(0, 0.0).unwrap()).package;
        let other = run(d.ask(1, 0.0).unwrap()).package;
        d.kernel_done(0, a, 1.0, None).unwrap();
        let b2 = run(d.ask(0, 1.0).unwrap()).package;
        d.merged(0, a, 1.1).unwrap();
        d.kernel_done(0, b2, 2.0, None).unwrap();
        let c = run(d.ask(0, 2.0).unwrap()).package;
        d.kernel_done(1, other, 2.5, None).unwrap();
        d.merged(1, other, 2.5).unwrap();
        assert_eq!(d.ask(1, 2.5).unwrap(), Decision::Idle);
        let mut requeued = d.fail(0, 3.0, "gone".into()).unwrap();
        requeued.sort_by_key(|p| p.offset);
        assert_eq!(requeued, vec![pkg(2, 2), pkg(4, 2)]);
        assert!(d.retries_pending());
        // The lost device's late completion is discarded; it is told to stop.
        assert_eq!(d.kernel_done(0, c, 3.5, None).unwrap(), Verdict::Discard);
        assert_eq!(d.ask(0, 3.5).unwrap(), Decision::Stop);
        let mut reran = Vec::new();
        for t in [4.0, 5.0] {
            let a = run(d.ask(1, t).unwrap());
            assert_eq!(a.origin, Origin::Retry);
            d.kernel_done(1, a.package, t + 0.5, None).unwrap();
            d.merged(1, a.package, t + 0.5).unwrap();
            reran.push(a.package);
        }
        reran.sort_by_key(|p| p.offset);
        assert_eq!(reran, requeued);
        assert!(d.is_over());
        d.outcome().unwrap();
        let faults: Vec<Package> = d.faults().iter().map(|f| f.1).collect();
        assert_eq!(faults.len(), 2);
        drop(d);
        assert_eq!(b.lost, vec![0]);
    }

    /// Device 0 slow (10 groups/s), device 1 fast (1000/s); the fast one measured first.
    fn straggler(b: &mut dyn Balancer) -> (Dispatcher<&mut dyn Balancer>, Package) {
        let mut d = start(b, 2, 200, true);
        let slow = run(d.ask(0, 0.0).unwrap()).package;
        let fast = run(d.ask(1, 0.0).unwrap()).package;
        d.kernel_done(1, fast, 0.1, None).unwrap();
        d.merged(1, fast, 0.1).unwrap();
        // Not yet a straggler at 0.1 s (needs BACKUP_MARGIN times the copy's 0.1 s).
        assert_eq!(d.ask(1, 0.1).unwrap(), Decision::Idle);
        assert!(d.tick(0.12).unwrap().is_empty());
        let given = d.tick(0.2).unwrap();
        assert_eq!(given.len(), 1);
        assert_eq!(given[0], (1, Assignment { package: slow, origin: Origin::Backup { of: 0 } }));
        (d, slow)
    }

    #[test]
    fn the_first_copy_wins_and_the_balancer_hears_of_it_once() {
        let mut b = Script {
            answers: vec![vec![Next::Run(pkg(0, 100))], vec![Next::Run(pkg(100, 100))]],
            ..Default::default()
        };
        let (mut d, slow) = straggler(&mut b);
        assert_eq!(
            d.kernel_done(1, slow, 0.3, None).unwrap(),
            Verdict::Keep { abandoned: Some(0) }
        );
        assert!(d.runs_abandoned(0));
        d.merged(1, slow, 0.3).unwrap();
        assert!(d.is_over());
        assert_eq!(d.kernel_done(0, slow, 10.0, None).unwrap(), Verdict::Discard);
        assert_eq!(d.backups(), &[(0, 1, slow)]);
        d.outcome().unwrap();
        assert_eq!(d.device(0).packages, 0);
        assert_eq!(d.device(1).packages, 2);
        // What each device computed counts the losing copy too.
        assert_eq!((d.device(0).ran, d.device(0).ran_groups), (1, 100));
        assert_eq!(d.device(1).ran, 2);
        drop(d);
        assert_eq!(b.completed, vec![pkg(100, 100), slow]);
    }

    #[test]
    fn losing_one_copy_of_a_backed_up_package_leaves_the_other_to_finish_it() {
        // The original's device is lost while the copy runs: nothing is re-run.
        let mut b = Script {
            answers: vec![vec![Next::Run(pkg(0, 100))], vec![Next::Run(pkg(100, 100))]],
            ..Default::default()
        };
        let (mut d, slow) = straggler(&mut b);
        assert!(d.fail(0, 0.25, "gone".into()).unwrap().is_empty());
        assert_eq!(d.kernel_done(1, slow, 0.3, None).unwrap(), Verdict::Keep { abandoned: None });
        d.merged(1, slow, 0.3).unwrap();
        assert!(d.is_over());
        // The winner lost after its kernel but before its merge: the abandoned copy counts
        // again, and no third copy is made.
        let mut b = Script {
            answers: vec![vec![Next::Run(pkg(0, 100))], vec![Next::Run(pkg(100, 100))]],
            ..Default::default()
        };
        let (mut d, slow) = straggler(&mut b);
        d.kernel_done(1, slow, 0.3, None).unwrap();
        assert!(d.fail(1, 0.31, "gone".into()).unwrap().is_empty());
        assert!(!d.runs_abandoned(0));
        assert_eq!(d.kernel_done(0, slow, 10.0, None).unwrap(), Verdict::Keep { abandoned: None });
        d.merged(0, slow, 10.0).unwrap();
        assert!(d.is_over());
        d.outcome().unwrap();
    }

    #[test]
    fn losing_every_device_is_an_error_listing_each_fault() {
        let mut b = Dynamic::packages(4);
        let mut d = start(&mut b, 2, 8, false);
        run(d.ask(0, 0.0).unwrap());
        run(d.ask(1, 0.0).unwrap());
        d.fail(0, 1.0, "first".into()).unwrap();
        let err = d.fail(1, 2.0, "second".into()).unwrap_err().to_string();
        assert!(err.contains("dev0): first") && err.contains("dev1): second"), "{err}");
    }

    #[test]
    fn the_watchdog_is_a_function_of_the_state_and_the_instant() {
        let rule = WatchdogRule { factor: 4.0, min_seconds: 0.5 };
        let mut b = Script {
            answers: vec![
                vec![Next::Run(pkg(0, 100)), Next::Run(pkg(100, 100))],
                vec![Next::Run(pkg(200, 100))],
                vec![Next::Run(pkg(300, 9700))],
            ],
            ..Default::default()
        };
        let mut d = start(&mut b, 3, 10_000, false);
        let p0 = run(d.ask(0, 0.0).unwrap()).package;
        let p1 = run(d.ask(1, 0.0).unwrap()).package;
        run(d.ask(2, 0.0).unwrap());
        // Every device busy: nobody could take a package over, so none is judged.
        assert!(d.hung(100.0, rule).is_empty());
        // Device 1 measured at 200 groups/s, then idle.
        d.kernel_done(1, p1, 0.5, None).unwrap();
        assert!(d.hung(100.0, rule).is_empty(), "device 1 still has an output to merge");
        d.merged(1, p1, 0.5).unwrap();
        assert_eq!(d.ask(1, 0.5).unwrap(), Decision::Idle);
        // Device 0, unmeasured: 10x the slack over the fastest measured speed scaled by
        // nominal figures (equal here): 4 * 10 * 100 / 200 = 20 s.
        assert!((d.watchdog_limit(0, p0, rule) - 20.0).abs() < 1e-9);
        assert!(d.hung(0.51, rule).is_empty());
        // Measured at 100 groups/s, its next 100 groups may take 4 s.
        d.kernel_done(0, p0, 1.0, None).unwrap();
        d.merged(0, p0, 1.0).unwrap();
        let p = run(d.ask(0, 1.0).unwrap()).package;
        assert!((d.watchdog_limit(0, p, rule) - 4.0).abs() < 1e-9);
        assert!(d.hung(4.99, rule).is_empty());
        let hung = d.hung(5.01, rule);
        assert_eq!(hung.iter().map(|h| h.device).collect::<Vec<_>>(), vec![0]);
        assert!(hung[0].reason().starts_with("hung: package"), "{}", hung[0].reason());
        // Device 2's 9700 groups may take 4 * 10 * 9700 / 200 s.
        assert!(d.hung(1940.0, rule).iter().all(|h| h.device != 2));
        assert!(d.hung(1941.5, rule).iter().any(|h| h.device == 2));
        // Nobody idle any more: nothing is judged, however long.
        d.fail(1, 6.0, "x".into()).unwrap();
        assert!(d.hung(1e9, rule).is_empty());
    }

    #[test]
    fn a_read_back_that_never_ends_is_a_hang_too() {
        // Device 0 kept [0,100) at 1 s (measured 100 groups/s) but never merges it; device 1
        // waits idle. The read-back is given as long as a kernel of its size: 4 s from 1 s.
        let rule = WatchdogRule { factor: 4.0, min_seconds: 0.5 };
        let mut b = Script {
            answers: vec![vec![Next::Run(pkg(0, 100))], vec![Next::Wait, Next::Wait]],
            ..Default::default()
        };
        let mut d = start(&mut b, 2, 200, false);
        let p = run(d.ask(0, 0.0).unwrap()).package;
        assert_eq!(d.ask(1, 0.0).unwrap(), Decision::Wait);
        d.kernel_done(0, p, 1.0, None).unwrap();
        assert_eq!(d.ask(1, 1.0).unwrap(), Decision::Wait);
        assert!(d.hung(4.99, rule).is_empty());
        let hung = d.hung(5.01, rule);
        assert_eq!(hung.len(), 1);
        assert!(hung[0].reason().starts_with("hung: read-back of package"), "{}", hung[0].reason());
        // Lost, its kept package is re-run.
        assert_eq!(d.fail(0, 5.01, hung[0].reason()).unwrap(), vec![p]);
    }

    /// Random drivers: devices ask, finish, merge late (as the engine's read-back does), are
    /// lost and tick in random orders. Whatever happens, the balancer hands each work-group
    /// out once, each is merged once, each loss re-runs exactly the lost device's packages
    /// that have no other copy left, and the run ends (or, every device lost, fails).
    #[test]
    fn random_event_orders_merge_every_work_group_exactly_once() {
        let cases = std::env::var("HETDSL_PROPERTY_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(3000u64);
        let mut backed_up = 0;
        for seed in 0..cases {
            backed_up += random_run(seed).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        }
        assert!(backed_up > 0, "no case made a back-up");
    }

    fn random_balancer(g: &mut SplitMix64, n: usize) -> Box<dyn Balancer> {
        match g.range(0, 4) {
            0 => Box::new(Dynamic::chunk(g.range(1, 50))),
            1 => Box::new(HGuided::uniform(2.0, None)),
            2 => Box::new(Sigmoid::guarded()),
            3 => Box::new(Static::with_weights((0..n).map(|_| g.unit() + 0.1).collect())),
            _ => Box::new(Dynamic::packages(g.range(1, 20))),
        }
    }

    /// One random run; returns the number of back-ups made.
    fn random_run(seed: u64) -> std::result::Result<usize, String> {
        let mut g = SplitMix64::new(seed);
        let n = g.range(1, 5) as usize;
        let groups = g.range(1, 600);
        let mut balancer = random_balancer(&mut g, n);
        let mut d = Dispatcher::start(
            balancer.as_mut(),
            setup(n, groups),
            names(n),
            Config { backups: g.unit() < 0.6 },
        )
        .map_err(|e| e.to_string())?;
        // The test's own view: what each device runs, what waits to be merged, what merged.
        let mut running: Vec<Option<Package>> = vec![None; n];
        let mut pending: Vec<(usize, Package)> = Vec::new();
        let mut lost = vec![false; n];
        let mut merged_count = vec![0u32; groups as usize];
        let mut handed_count = vec![0u32; groups as usize];
        let mut now = 0.0;
        let mut stopped = vec![false; n];
        for _step in 0..200_000 {
            if d.is_over() {
                break;
            }
            now += g.unit() * 0.01;
            let action = g.range(0, 9);
            let dev = g.range(0, n as u64 - 1) as usize;
            let result: Result<()> = (|| {
                match action {
                    // Ask (only while running nothing).
                    0..=2 if running[dev].is_none() && !stopped[dev] => match d.ask(dev, now)? {
                        Decision::Run(a) => {
                            if a.origin == Origin::Balancer {
                                for u in a.package.offset..a.package.end() {
                                    handed_count[u as usize] += 1;
                                }
                            }
                            running[dev] = Some(a.package);
                        }
                        Decision::Stop => stopped[dev] = true,
                        Decision::Wait | Decision::Idle => {}
                    },
                    // Finish the running package.
                    3..=5 => {
                        if let Some(p) = running[dev].take() {
                            if let Verdict::Keep { .. } = d.kernel_done(dev, p, now, None)? {
                                pending.push((dev, p));
                            }
                        }
                    }
                    // Merge a kept output.
                    6 if !pending.is_empty() => {
                        let i = g.range(0, pending.len() as u64 - 1) as usize;
                        let (owner, p) = pending.swap_remove(i);
                        d.merged(owner, p, now)?;
                        for u in p.offset..p.end() {
                            merged_count[u as usize] += 1;
                        }
                    }
                    7 => {
                        d.tick(now)?.into_iter().for_each(|(t, a)| running[t] = Some(a.package));
                    }
                    8 if g.unit() < 0.05 && !lost[dev] => {
                        // Expected re-runs: each of the device's running or kept packages
                        // with no other copy running, kept or merged.
                        let mine: Vec<Package> = running[dev]
                            .iter()
                            .copied()
                            .chain(pending.iter().filter(|(o, _)| *o == dev).map(|(_, p)| *p))
                            .collect();
                        let elsewhere = |p: &Package| {
                            (0..n).any(|o| o != dev && !lost[o] && running[o] == Some(*p))
                                || pending.iter().any(|(o, q)| *o != dev && q == p)
                                || merged_count[p.offset as usize] > 0
                        };
                        let mut expected: Vec<Package> =
                            mine.iter().filter(|p| !elsewhere(p)).copied().collect();
                        lost[dev] = true;
                        running[dev] = None;
                        pending.retain(|(o, _)| *o != dev);
                        let got = d.fail(dev, now, "random".into());
                        let mut got = match got {
                            Ok(v) => v,
                            Err(e) if lost.iter().all(|l| *l) => return Err(e),
                            Err(e) => panic!("a loss with devices left failed: {e}"),
                        };
                        expected.sort_by_key(|p| p.offset);
                        got.sort_by_key(|p| p.offset);
                        assert_eq!(got, expected, "re-runs after losing device {dev}");
                    }
                    _ => {}
                }
                Ok(())
            })();
            if let Err(e) = result {
                if lost.iter().all(|l| *l) && matches!(e, Error::AllDevicesFailed(_)) {
                    return Ok(0);
                }
                return Err(format!("unexpected error: {e}"));
            }
            // A device told to stop while others still work is fine; the driver only needs
            // someone alive and not stopped while work is left.
            if !d.is_over() && (0..n).all(|x| lost[x] || stopped[x]) {
                return Err("every device stopped with work left".into());
            }
        }
        if !d.is_over() {
            return Err(format!("not over after 200000 steps: {} left", d.unmerged()));
        }
        d.outcome().map_err(|e| e.to_string())?;
        if handed_count.iter().any(|&c| c != 1) {
            return Err("a work-group handed out other than once".into());
        }
        if merged_count.iter().any(|&c| c != 1) {
            return Err("a work-group merged other than once".into());
        }
        Ok(d.backups().len())
    }
}
