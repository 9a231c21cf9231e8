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
//! - [`Dispatcher::ask_ahead`]: a device running one package wants a second queued behind it,
//!   so that its launch hides behind the running kernel. Only the balancer gives one
//!   ([`Balancer::next_ahead`]); it runs once its predecessor's kernel is done.
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

pub use self::ahead::{QUEUE_CLASS, QUEUE_KERNEL_SHARE};
use self::bitmap::{first_set, set_range};
pub(crate) use self::user_code::in_user_balancer;
use self::user_code::user_code;
pub use self::watchdog::{Hung, WatchdogRule};
use super::{Balancer, Completion, Next, Package, Setup};
use crate::error::{DeviceFault, Error, Result};

mod ahead;
mod backups;
mod bitmap;
mod events;
mod user_code;
mod view;
mod watchdog;

/// Knobs of a dispatcher.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Config {
    /// Speculative back-ups of stragglers with the rule [`backup::choose`](super::backup::choose).
    pub backups: bool,
    /// Back-ups only of packages held by devices nominally slower than the copying one (a
    /// session's first launch: a CPU waiting to learn whether it sits out copied an uploading
    /// GPU's Jacobi package and kept running packages it should have left).
    pub faster_only: bool,
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
    /// Queued behind `running` ([`Dispatcher::ask_ahead`]); it becomes `running` when that
    /// one's kernel is done, its `since` then that instant.
    queued: Option<Copy>,
    /// The share of its last kept package's span (hand-out to completion) spent in the kernel.
    kernel_share: Option<f64>,
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
    /// The number each device goes by in the events (its position; see
    /// [`Dispatcher::label_devices`]).
    labels: Vec<usize>,
    /// Queue ahead on devices not measured yet ([`Dispatcher::queue_unmeasured`]).
    queue_unmeasured: bool,
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

impl<'d, B: DerefMut<Target = dyn Balancer + 'd>> Dispatcher<B> {
    /// Number the devices `labels` in the events and in the errors naming them, rather than by
    /// their positions here: a launch some of whose devices sit out runs the others at other
    /// positions, and what it reports keeps the launch's numbers.
    pub fn label_devices(&mut self, labels: Vec<usize>) {
        if labels.len() == self.labels.len() {
            self.labels = labels;
        }
    }

    /// The number `device` goes by in the events.
    fn label(&self, device: usize) -> usize {
        self.labels.get(device).copied().unwrap_or(device)
    }

    /// Start the balancer on `setup`; `names` (one per device) label faults.
    pub fn start(
        mut balancer: B,
        setup: Setup,
        names: Vec<String>,
        config: Config,
    ) -> Result<Self> {
        let name = catch_unwind(AssertUnwindSafe(|| user_code(|| balancer.name())))
            .unwrap_or_else(|_| "(a user balancer whose name() panicked)".to_string());
        let n = setup.devices.len();
        let total = setup.total_groups;
        let nominal = setup.devices.iter().map(|d| d.nominal_gflops).collect();
        match catch_unwind(AssertUnwindSafe(|| user_code(|| balancer.start(&setup)))) {
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
            labels: (0..n).collect(),
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
            queue_unmeasured: false,
        })
    }

    /// Run one balancer call; a panic poisons the dispatcher with an error naming the balancer
    /// (its state may be half-updated, so it is never called again).
    fn call<T>(&mut self, what: &str, f: impl FnOnce(&mut (dyn Balancer + 'd)) -> T) -> Result<T> {
        if let Some(f) = &self.fatal {
            return Err(f.error());
        }
        let balancer = &mut *self.balancer;
        match catch_unwind(AssertUnwindSafe(|| user_code(|| f(balancer)))) {
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
        events::stopped(&e.to_string());
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
        let shown = match origin {
            Origin::Backup { of } => Origin::Backup { of: self.label(of) },
            other => other,
        };
        events::handed_out(self.label(device), at, package, shown);
        Decision::Run(Assignment { package, origin })
    }

    /// A package from the balancer must lie inside the range and cover only work-groups never
    /// handed out before.
    fn check_fresh(&mut self, p: Package) -> Result<()> {
        let name = &self.name;
        // A balancer's offset and length may add past u64: a wrapped end looked inside the range.
        let past = p.offset.checked_add(p.len).is_none_or(|end| end > self.total);
        let bad = if p.len == 0 || past {
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
        // The queued package runs from now: its span, as the balancer hears it, starts here.
        let d = &mut self.devices[device];
        d.running = d.queued.take().map(|c| Copy { since: c.since.max(at), ..c });
        self.epoch += 1;
        let host = at - copy.since;
        let kernel_seconds = kernel_seconds.unwrap_or(host.max(0.0));
        let d = &mut self.devices[device].stats;
        d.ran += 1;
        d.ran_groups += package.len;
        d.ran_busy += kernel_seconds;
        events::completed(self.label(device), at, package, kernel_seconds, !copy.abandoned);
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
        d.kernel_share = Some(kernel_seconds / host.max(f64::MIN_POSITIVE));
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
        events::merged(self.label(device), at, package);
        Ok(())
    }

    /// `device` is lost at `at` for `reason`. One step: its running package and its kept but
    /// unmerged ones go to the re-run list, except where another copy still runs (that copy
    /// then counts alone) or already won; the balancer hears of the loss; every device may be
    /// asked again. Returns the packages put up for re-running, or an error when no device is
    /// left to run them.
    pub fn fail(&mut self, device: usize, at: f64, reason: String) -> Result<Vec<Package>> {
        if let Some(f) = &self.fatal {
            return Err(f.error());
        }
        events::lost(self.label(device), at, &reason);
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
        let queued = d.queued.take();
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
        if let Some(c) = queued {
            lost.push(c.package);
            requeue.push(c.package);
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
                    device: self.label(i),
                    name: self.names[i].clone(),
                    reason: r.clone(),
                })
            })
            .collect()
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
}

#[cfg(test)]
mod tests;
