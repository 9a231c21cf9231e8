//! Executes a launch: checks it, starts one host thread per device, hands packages out through
//! the balancer, watches for hung devices, and assembles the report.
//!
//! Who owns what:
//! - [`Shared::state`] (one mutex) holds the balancer and all bookkeeping; device threads take it
//!   only to ask for work and to report, never across an OpenCL wait.
//! - The caller's slices are touched only by device threads copying whole packages in or out,
//!   each under the [`Shared::gate`] read lock and its device's commit lock. When the run ends the
//!   gate is closed for good, on every way out of `run` including a panic unwinding through it
//!   ([`EndOfRun`]), so a device left behind (hung in a driver call) can never touch the
//!   caller's memory after `run` returns.
//! - Lock order: a device's commit lock, then the gate, then the state (taken and let go), then
//!   the fold lock of reduced outputs. Nothing waits on another thread while holding the state
//!   lock except through its condition variable; a poisoned lock is recovered, never unwrapped.
//! - A host thread is joined only once its device has no command left (it says so through
//!   [`Shared::quiet`]) and then only releases OpenCL objects. A thread that is still computing
//!   when the run ends (the losing copy of a backed-up package, or a device stuck in its driver)
//!   is left behind: it releases its objects under the process-wide OpenCL lock when it comes
//!   back, and its device is quarantined for the rest of the process if it has not come back by
//!   the time the watchdog would call it hung (see [`settle_left_behind`]).

use std::collections::HashSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock};
use std::time::{Duration, Instant};

use super::geometry::Geometry;
use super::program::ProgramDevice;
use super::worker::{self, ArgPlan, HostPtr};
use super::{Arg, Fault, Launch, WatchdogConfig};
use crate::balance::{
    backup, Balancer, Completion, DeviceKind, DeviceProfile, Next, Package, Setup,
};
use crate::error::{DeviceFault, Error, Result};
use crate::pattern::{Direction, Pattern};
use crate::report::{self, DeviceReport, PackageTrace, Report, Transfer};

/// What a device is told when it asks for work.
pub(crate) enum Ask {
    Run(Package),
    /// Nothing now; ask again (only when not blocking).
    Later,
    /// Leave the run.
    Stop,
}

/// Per-device bookkeeping.
#[derive(Debug, Default)]
struct DeviceState {
    /// Answered `Done` by the balancer: only re-runs of failed packages are left for it.
    balancer_done: bool,
    /// Blocked waiting for work.
    waiting: bool,
    /// The package whose kernel is running, and when it was handed out.
    running: Option<(Package, Instant)>,
    /// Packages whose kernel finished but whose output is not merged yet.
    /// With when each kernel finished: a read-back that never ends is a hang too.
    unmerged: Vec<(Package, Instant)>,
    packages: usize,
    groups: u64,
    busy: f64,
    finish: f64,
    /// Measured balancing units per second (host time of the last package).
    speed: Option<f64>,
    fault: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Setup,
    Running,
    Over,
}

/// Why a device did not set up: the user's mistake (reported as the run's error) or the
/// device's own failure (the device is dropped, the run goes on without it).
pub(crate) enum SetupError {
    User(Error),
    Device(String),
}

/// What a host thread does with its OpenCL objects once its work is over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Release {
    /// Not decided yet: the run is still on.
    Undecided,
    /// Release them now: the caller's thread holds the OpenCL lock and joins this thread.
    Joined,
    /// Nobody waits for this thread: take the OpenCL lock to release them.
    LeftBehind,
}

pub(crate) struct State {
    phase: Phase,
    setup: Vec<Option<std::result::Result<DeviceProfile, SetupError>>>,
    balancer: Box<dyn Balancer>,
    /// The balancer's name, asked once (a user balancer's `name` may panic too).
    balancer_name: String,
    /// The balancer panicked once: it is never called again.
    balancer_broken: bool,
    /// Per device: what its host thread does at the end.
    release: Vec<Release>,
    /// Packages of failed devices, to run again on any device left.
    retry: Vec<Package>,
    /// Which balancing units the balancer has handed out (guards against a faulty balancer).
    handed: Vec<u64>,
    /// G, the run's balancing units.
    total_units: u64,
    /// Units whose output is not merged yet; the run is over at zero.
    unmerged_units: u64,
    devices: Vec<DeviceState>,
    trace: Vec<PackageTrace>,
    faults: Vec<(usize, Package, String)>,
    t0: Instant,
    fatal: Option<Error>,
    /// Nominal GFLOP/s per device, for the watchdog's first guess.
    nominal: Vec<f64>,
    /// Packages whose output is merged (or being merged).
    merged: HashSet<Package>,
    /// Packages with a speculative back-up running or done, and (from, to, package) of each.
    backed_up: HashSet<Package>,
    backups: Vec<(usize, usize, Package)>,
    backups_enabled: bool,
}

/// The least time a device's set-up may take beyond the first ready device's.
const SETUP_GRACE_FLOOR: Duration = Duration::from_secs(10);

/// How often an idle device looks for a straggler to back up.
const BACKUP_POLL: Duration = Duration::from_micros((backup::BACKUP_POLL_SECONDS * 1e6) as u64);

pub(crate) struct Shared {
    state: Mutex<State>,
    wake: Condvar,
    /// `true` once the run is over: the caller's memory is off limits.
    pub gate: RwLock<bool>,
    /// Per device: still part of the run. Read without the state lock.
    alive: Vec<AtomicBool>,
    /// Per device: held while merging a package into the caller's memory.
    commit: Vec<Mutex<()>>,
    /// Held while merging when the launch has reduced outputs: every package folds into the
    /// whole of them, so two devices must not fold at once (sliced outputs are disjoint).
    fold: Option<Mutex<()>>,
    /// Per device: its host thread has no command left on the device (its queues are finished,
    /// or it never started): all it may still do is release objects.
    pub quiet: Vec<AtomicBool>,
    names: Vec<String>,
}

/// Closes the run on every way out of `execute`, a panic included: the gate shuts (no device
/// thread touches the caller's memory after this), the phase ends, and a thread nobody has
/// decided to join is left behind to release its objects under the OpenCL lock.
struct EndOfRun<'a>(&'a Shared);

impl Drop for EndOfRun<'_> {
    fn drop(&mut self) {
        self.0.close();
    }
}

/// Call into the balancer, turning a panic into an error that names it. A balancer that panicked
/// is never called again: its state is unknown.
fn call_balancer<R>(
    s: &mut State,
    call: &str,
    f: impl FnOnce(&mut dyn Balancer) -> R,
) -> std::result::Result<R, Error> {
    if s.balancer_broken {
        return Err(Error::BadBalancer(format!(
            "balancer `{}` panicked earlier in the run",
            s.balancer_name
        )));
    }
    let balancer = &mut *s.balancer;
    match catch_unwind(AssertUnwindSafe(|| f(balancer))) {
        Ok(r) => Ok(r),
        Err(payload) => {
            s.balancer_broken = true;
            Err(Error::BadBalancer(format!(
                "balancer `{}` panicked in {call}(): {}",
                s.balancer_name,
                panic_message(&*payload)
            )))
        }
    }
}

/// The message of a panic payload, when it is a string.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|m| m.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic with no message".into())
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A device thread that panicked cannot leave the state half-updated in a way that
        // matters more than losing the run; recover the guard rather than propagate the panic.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The run has ended (the caller's thread closed it).
    pub fn run_over(&self) -> bool {
        *self.gate.read().unwrap_or_else(|e| e.into_inner())
    }

    pub fn alive(&self, me: usize) -> bool {
        self.alive[me].load(Ordering::Acquire)
    }

    /// Seconds since the run began.
    fn now(&self, s: &State) -> f64 {
        s.t0.elapsed().as_secs_f64()
    }

    /// A device finished (or failed) its set-up; then waits until every device has.
    /// Returns whether to go on.
    pub fn setup_done(&self, me: usize, result: Result<DeviceProfile>) -> bool {
        let result = result.map_err(|e| match e {
            Error::Cl { .. } => SetupError::Device(format!("set-up failed: {e}")),
            e => SetupError::User(e),
        });
        let mut s = self.lock();
        s.setup[me] = Some(result);
        self.wake.notify_all();
        while s.phase == Phase::Setup {
            s = self.wake.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        s.phase == Phase::Running && self.alive(me)
    }

    /// The next package for `me`. With `block`, waits until there is one; without, answers
    /// [`Ask::Later`] instead of waiting (a device with an output still to merge must merge it
    /// before it waits, or the run could never end).
    pub fn next_package(&self, me: usize, block: bool) -> Ask {
        let mut s = self.lock();
        loop {
            if s.phase != Phase::Running || !self.alive(me) || s.unmerged_units == 0 {
                return Ask::Stop;
            }
            if let Some(p) = s.retry.pop() {
                return Ask::Run(self.hand_out(&mut s, me, p));
            }
            if !s.devices[me].balancer_done {
                let now = self.now(&s);
                let total = s.total_units;
                match call_balancer(&mut s, "next", |b| b.next(me, now)) {
                    Ok(Next::Run(p)) => match check_fresh(&mut s.handed, total, p) {
                        Ok(()) => return Ask::Run(self.hand_out(&mut s, me, p)),
                        Err(e) => {
                            self.abort(&mut s, e);
                            return Ask::Stop;
                        }
                    },
                    Ok(Next::Wait) => {}
                    Ok(Next::Done) => s.devices[me].balancer_done = true,
                    Err(e) => {
                        self.abort(&mut s, e);
                        return Ask::Stop;
                    }
                }
            }
            if let Some(p) = self.backup_for(&mut s, me) {
                return Ask::Run(self.hand_out(&mut s, me, p));
            }
            if !block {
                return Ask::Later;
            }
            s.devices[me].waiting = true;
            if let Some(e) = self.stalled(&s) {
                self.abort(&mut s, e);
                return Ask::Stop;
            }
            // Woken by any completion; also every few milliseconds, to see whether a package
            // still running elsewhere has become a straggler worth backing up.
            s = self.wake.wait_timeout(s, BACKUP_POLL).unwrap_or_else(|e| e.into_inner()).0;
            s.devices[me].waiting = false;
        }
    }

    /// Speculative back-up of a straggler (see `Launch::backups` and the rule in
    /// [`backup::choose`]): with nothing else to do, `me` runs a copy of a package another
    /// device is still running. The first copy merged wins (see [`Shared::merge`]); each
    /// package is backed up once.
    fn backup_for(&self, s: &mut State, me: usize) -> Option<Package> {
        if !s.backups_enabled {
            return None;
        }
        let my_speed = s.devices[me].speed?;
        let running = (0..s.devices.len())
            .filter(|&d| d != me && self.alive(d))
            .filter_map(|d| {
                let (q, since) = s.devices[d].running?;
                (!s.backed_up.contains(&q) && !s.merged.contains(&q)).then(|| backup::Running {
                    device: d,
                    package: q,
                    elapsed: since.elapsed().as_secs_f64(),
                    speed: s.devices[d].speed,
                })
            })
            .collect::<Vec<_>>();
        let chosen = backup::choose(my_speed, running)?;
        s.backed_up.insert(chosen.package);
        s.backups.push((chosen.device, me, chosen.package));
        Some(chosen.package)
    }

    fn hand_out(&self, s: &mut State, me: usize, p: Package) -> Package {
        s.devices[me].running = Some((p, Instant::now()));
        p
    }

    /// Every live device waits, nothing runs, yet work is left: the balancer will never hand it
    /// out. That is a balancer bug; end the run with an error instead of hanging.
    fn stalled(&self, s: &State) -> Option<Error> {
        let live = (0..s.devices.len()).filter(|&d| self.alive(d));
        let mut any = false;
        for d in live {
            any = true;
            let st = &s.devices[d];
            if !st.waiting || st.running.is_some() || !st.unmerged.is_empty() {
                return None;
            }
        }
        if !any || !s.retry.is_empty() || s.unmerged_units == 0 {
            return None;
        }
        Some(Error::BadBalancer(format!(
            "balancer `{}` stopped handing out work with {} unit(s) left",
            s.balancer_name, s.unmerged_units
        )))
    }

    fn abort(&self, s: &mut State, e: Error) {
        if s.fatal.is_none() {
            s.fatal = Some(e);
        }
        s.phase = Phase::Over;
        self.wake.notify_all();
    }

    /// The kernel of `p` finished on `me` after `kernel_seconds` of device time.
    /// Returns whether `me` is still part of the run.
    pub fn kernel_done(
        &self,
        me: usize,
        p: Package,
        kernel_seconds: Option<f64>,
        written: Transfer,
    ) -> bool {
        let mut s = self.lock();
        if !self.alive(me) || s.phase != Phase::Running {
            return false;
        }
        let now = self.now(&s);
        let started = match s.devices[me].running.take() {
            Some((_, at)) => at.duration_since(s.t0).as_secs_f64(),
            None => now,
        };
        let host = (now - started).max(1e-9);
        let done = Completion {
            device: me,
            package: p,
            kernel_seconds: kernel_seconds.unwrap_or(host),
            host_start: started,
            host_end: now,
        };
        if let Err(e) = call_balancer(&mut s, "completed", |b| b.completed(&done)) {
            self.abort(&mut s, e);
            return false;
        }
        s.trace.push(PackageTrace {
            device: me,
            package: p,
            host_start: started,
            host_end: now,
            kernel_seconds,
            written,
            read: Transfer::default(),
            merged: false,
        });
        let d = &mut s.devices[me];
        d.unmerged.push((p, Instant::now()));
        d.packages += 1;
        d.groups += p.len;
        d.busy += done.kernel_seconds;
        d.speed = Some(p.len as f64 / host);
        self.wake.notify_all();
        true
    }

    /// Copy a finished package's output into the caller's memory with `merge`, unless the run
    /// is over or `me` was dropped from it.
    pub fn merge(&self, me: usize, p: Package, read: Transfer, merge: impl FnOnce()) -> bool {
        let _commit = self.commit[me].lock().unwrap_or_else(|e| e.into_inner());
        let closed = self.gate.read().unwrap_or_else(|e| e.into_inner());
        if *closed || !self.alive(me) {
            return false;
        }
        {
            // A package run twice (a back-up, or a re-run after a fault) is merged once: the
            // first copy reserves it, a later one is dropped.
            let mut s = self.lock();
            if !s.merged.insert(p) {
                s.devices[me].unmerged.retain(|q| q.0 != p);
                self.wake.notify_all();
                return true;
            }
        }
        {
            let _one_fold_at_a_time =
                self.fold.as_ref().map(|m| m.lock().unwrap_or_else(|e| e.into_inner()));
            merge();
        }
        drop(closed);
        let mut s = self.lock();
        if let Some(t) = s.trace.iter_mut().rev().find(|t| t.device == me && t.package == p) {
            t.merged = true;
        }
        let now = self.now(&s);
        if let Some(t) = s.trace.iter_mut().rev().find(|t| t.device == me && t.package == p) {
            t.read = read;
        }
        let d = &mut s.devices[me];
        d.unmerged.retain(|q| q.0 != p);
        d.finish = now;
        s.unmerged_units -= p.len;
        self.wake.notify_all();
        true
    }

    /// Read the caller's memory (input slices) under the gate. `false` if the run is over.
    pub fn with_caller_memory(&self, read: impl FnOnce()) -> bool {
        let closed = self.gate.read().unwrap_or_else(|e| e.into_inner());
        if *closed {
            return false;
        }
        read();
        true
    }

    /// `me` failed: its running and unmerged packages go back to the pool.
    pub fn device_failed(&self, me: usize, reason: String) {
        // The commit lock waits for a merge in progress to end, so none starts after this. The
        // device leaves the run and its packages reach the retry list under one state lock: a
        // device that looked lost while its packages were nowhere to be run would let another
        // thread conclude that work was left which no one would ever run (the stall check).
        let _commit = self.commit[me].lock().unwrap_or_else(|e| e.into_inner());
        let mut s = self.lock();
        self.alive[me].store(false, Ordering::Release);
        self.lose(&mut s, me, reason);
    }

    /// The host thread of `me` panicked (a bug, not a device fault the engine knows of): during
    /// set-up the device counts as failing to set up, later as failing mid-run. Either way the
    /// run goes on without it rather than wait for it for ever.
    pub fn thread_panicked(&self, me: usize, message: String) {
        let reason = format!("its host thread panicked: {message}");
        {
            let mut s = self.lock();
            if s.phase == Phase::Setup && s.setup[me].is_none() {
                s.setup[me] = Some(Err(SetupError::Device(reason)));
                self.wake.notify_all();
                return;
            }
        }
        self.device_failed(me, reason);
    }

    /// Called by a host thread once its device has no command left; waits until the run is over
    /// and the caller's thread has said whether it joins this thread.
    pub fn release_turn(&self, me: usize) -> Release {
        self.quiet[me].store(true, Ordering::Release);
        let mut s = self.lock();
        self.wake.notify_all();
        while s.release[me] == Release::Undecided {
            s = self.wake.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        s.release[me]
    }

    /// End the run (idempotent): shut the gate, end the phase, leave behind every thread not
    /// decided yet.
    fn close(&self) {
        // No state lock held here: a merge holds the gate while it takes the state lock.
        *self.gate.write().unwrap_or_else(|e| e.into_inner()) = true;
        let mut s = self.lock();
        s.phase = Phase::Over;
        for r in s.release.iter_mut() {
            if *r == Release::Undecided {
                *r = Release::LeftBehind;
            }
        }
        self.wake.notify_all();
    }

    fn lose(&self, s: &mut State, me: usize, reason: String) {
        let d = &mut s.devices[me];
        if d.fault.is_some() {
            return;
        }
        d.fault = Some(reason.clone());
        let mut lost: Vec<Package> = d.unmerged.drain(..).map(|(p, _)| p).collect();
        lost.extend(d.running.take().map(|(p, _)| p));
        for p in &lost {
            s.faults.push((me, *p, reason.clone()));
        }
        s.retry.extend(lost);
        if let Err(e) = call_balancer(s, "device_lost", |b| b.device_lost(me)) {
            self.abort(s, e);
        }
        // The balancer may have given the lost device's share to devices it had told `Done`.
        for d in s.devices.iter_mut() {
            d.balancer_done = false;
        }
        if !(0..s.devices.len()).any(|d| self.alive(d)) && s.unmerged_units > 0 {
            let faults = fault_list(s, &self.names);
            self.abort(s, Error::AllDevicesFailed(faults));
        }
        self.wake.notify_all();
    }
}

fn fault_list(s: &State, names: &[String]) -> Vec<DeviceFault> {
    s.devices
        .iter()
        .enumerate()
        .filter_map(|(i, d)| {
            d.fault.as_ref().map(|r| DeviceFault {
                device: i,
                name: names[i].clone(),
                reason: r.clone(),
            })
        })
        .collect()
}

/// A package from the balancer must lie inside the range and cover only units never handed out.
fn check_fresh(handed: &mut [u64], total: u64, p: Package) -> Result<()> {
    if p.len == 0 || p.end() > total {
        return Err(Error::BadBalancer(format!(
            "balancer returned package {p:?} outside the range"
        )));
    }
    for u in p.offset..p.end() {
        let (w, b) = ((u / 64) as usize, u % 64);
        if handed[w] & (1 << b) != 0 {
            return Err(Error::BadBalancer(format!(
                "balancer handed out work-group {u} twice (package {p:?})"
            )));
        }
        handed[w] |= 1 << b;
    }
    Ok(())
}

/// Everything a launch asks for, checked against the kernel's geometry.
fn plan_arguments(args: Vec<Arg<'_>>, geo: &Geometry) -> Result<Vec<ArgPlan>> {
    let total_items = geo.total_items();
    let mut plans = Vec::with_capacity(args.len());
    for (index, arg) in args.into_iter().enumerate() {
        let bad = |reason: String| Error::BadArgument { index, reason };
        let (ptr, len, elem, pattern, dir) = match arg {
            Arg::Scalar(bytes) => {
                plans.push(ArgPlan::Scalar { index, bytes });
                continue;
            }
            Arg::Local(bytes) => {
                if bytes == 0 {
                    return Err(bad("a __local buffer of 0 bytes".into()));
                }
                plans.push(ArgPlan::Local { index, bytes });
                continue;
            }
            Arg::LocalPerItem(per_item) => {
                if per_item == 0 {
                    return Err(bad("a __local buffer of 0 bytes per work-item".into()));
                }
                // Saturated: too large a product is refused against the device's local memory.
                let bytes = per_item.saturating_mul(geo.items_per_group as usize);
                plans.push(ArgPlan::Local { index, bytes });
                continue;
            }
            Arg::Reduce { bytes, elem, merge, ops } => {
                let len = bytes.len();
                if len == 0 {
                    return Err(bad("an empty buffer (OpenCL cannot allocate 0 bytes)".into()));
                }
                if elem == 0 || len % elem != 0 {
                    return Err(bad(format!(
                        "{len} bytes is not a whole number of {elem}-byte elements"
                    )));
                }
                if !(ops.supported)(merge) {
                    return Err(bad(format!(
                        "merge `{merge}` applies to integers only, and this output holds {ops:?}; \
                         use sum, max or min"
                    )));
                }
                let host = HostPtr { ptr: bytes.as_mut_ptr(), len };
                plans.push(ArgPlan::Reduce { index, host, elem, merge, ops });
                continue;
            }
            Arg::In { bytes, elem, pattern } => {
                (bytes.as_ptr() as *mut u8, bytes.len(), elem, pattern, Direction::In)
            }
            Arg::Out { bytes, elem, pattern, dir } => {
                (bytes.as_mut_ptr(), bytes.len(), elem, pattern, dir)
            }
        };
        if len == 0 {
            return Err(bad("an empty buffer (OpenCL cannot allocate 0 bytes)".into()));
        }
        if elem == 0 || len % elem != 0 {
            return Err(bad(format!("{len} bytes is not a whole number of {elem}-byte elements")));
        }
        let elems = (len / elem) as u64;
        match pattern {
            Pattern::Whole if dir.writes() => {
                return Err(bad(
                    "an output cannot be `whole`: each device would write all of it; give it a pattern a:b".into(),
                ))
            }
            Pattern::Whole => {}
            Pattern::Ratio { .. } => {
                pattern.check_granularity(geo.items_per_unit).map_err(bad)?;
                let Some(need) = pattern.required_len(total_items) else {
                    return Err(bad(format!(
                        "pattern {pattern} does not give a whole number of elements for {total_items} work-items"
                    )));
                };
                if need != elems {
                    return Err(bad(format!(
                        "buffer has {elems} elements but pattern {pattern} over {total_items} work-items needs {need}",
                    )));
                }
            }
        }
        plans.push(ArgPlan::Buffer { index, host: HostPtr { ptr, len }, elem, pattern, dir });
    }
    Ok(plans)
}

/// Every setting of a launch that is not an argument or the geometry, checked before anything
/// starts: a value that means nothing is an error naming it, never a panic mid-run.
fn validate(
    watchdog: &WatchdogConfig,
    devices: Option<&[usize]>,
    faults: &[Fault],
    run_devices: usize,
) -> Result<()> {
    let bad = |m: String| Err(Error::BadConfig(m));
    if !(watchdog.factor.is_finite() && watchdog.factor > 0.0) {
        return bad(format!(
            "watchdog factor {} must be a finite number above 0 (how many times its predicted \
             time a package may run)",
            watchdog.factor
        ));
    }
    if watchdog.min.is_zero() {
        return bad("watchdog min must be above zero (the shortest time before a device may be \
                    declared hung)"
            .into());
    }
    if let Some(ix) = devices {
        for (k, i) in ix.iter().enumerate() {
            if ix[..k].contains(i) {
                return bad(format!(
                    "device position {i} given twice in on_devices({ix:?}): a device runs once"
                ));
            }
        }
    }
    for f in faults {
        if fault_device(f) >= run_devices {
            return bad(format!(
                "fault {f:?} aims at device {} but the run has {run_devices} device(s)",
                fault_device(f)
            ));
        }
        if let Fault::Slow { factor: 0, .. } = f {
            return bad(format!("fault {f:?}: a slow-down factor of 0"));
        }
    }
    Ok(())
}

/// A host thread of an earlier run nobody waited for, still computing when its run ended.
struct LeftBehind {
    /// The device's index in the machine's list, and its name.
    device: usize,
    name: String,
    shared: Arc<Shared>,
    position: usize,
    /// When it is hung by the watchdog's own measure if it has not come back.
    deadline: Instant,
}

/// Threads left behind by earlier runs, and devices quarantined for the rest of the process
/// (machine index, reason). Touched only under the OpenCL lock.
static LEFT_BEHIND: Mutex<Vec<LeftBehind>> = Mutex::new(Vec::new());
static QUARANTINE: Mutex<Vec<(usize, String)>> = Mutex::new(Vec::new());

/// Before a run: forget the threads left behind that have come back; wait for those still out
/// on a device this run uses until their deadline, and quarantine the device if they are still
/// out then. Returns each of `chosen`'s quarantine reason, if any. A thread stuck in its driver
/// is never joined: it may never return.
fn settle_left_behind(chosen: &[ProgramDevice]) -> Vec<Option<String>> {
    let mut left = LEFT_BEHIND.lock().unwrap_or_else(|e| e.into_inner());
    let mut quarantine = QUARANTINE.lock().unwrap_or_else(|e| e.into_inner());
    let back = |l: &LeftBehind| l.shared.quiet[l.position].load(Ordering::Acquire);
    left.retain(|l| !back(l));
    for l in left.iter() {
        let used = chosen.iter().any(|d| d.info.index == l.device);
        if !used || quarantine.iter().any(|(i, _)| *i == l.device) {
            continue;
        }
        while !back(l) && Instant::now() < l.deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        if !back(l) {
            quarantine.push((
                l.device,
                format!(
                    "quarantined: device {} ({}) has not come back from a package of an earlier \
                     run past its watchdog limit; it is left out for the rest of the process",
                    l.device, l.name
                ),
            ));
        }
    }
    left.retain(|l| !back(l));
    chosen
        .iter()
        .map(|d| quarantine.iter().find(|(i, _)| *i == d.info.index).map(|(_, r)| r.clone()))
        .collect()
}

/// The devices quarantined in this process (machine index, reason): each has a host thread that
/// never came back from its driver. Later runs leave them out.
pub fn quarantined_devices() -> Vec<(usize, String)> {
    QUARANTINE.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

pub(crate) fn execute(launch: Launch<'_>, balancer: Box<dyn Balancer>) -> Result<Report> {
    let _one_at_a_time = super::opencl_lock();
    let t_binary = Instant::now();
    let Launch {
        program,
        kernel,
        global,
        local,
        args,
        devices,
        faults,
        watchdog,
        warmup,
        groups,
        backups,
        wait,
        env_wait,
        env_backups,
        ..
    } = launch;
    if let Some(m) = env_wait.or(env_backups) {
        return Err(Error::BadConfig(m));
    }
    let geo = Geometry::new(&global, &local)?;
    let span = groups.unwrap_or(0..geo.units);
    if span.start >= span.end || span.end > geo.units {
        return Err(Error::BadRange(format!(
            "work-group range {span:?} is empty or outside the NDRange's 0..{}",
            geo.units
        )));
    }
    let units = span.end - span.start;
    if !program.kernel_names.contains(&kernel) {
        return Err(Error::NoSuchKernel {
            name: kernel,
            file: program.source_name.clone(),
            available: program.kernel_names.join(", "),
        });
    }
    let run_devices = devices.as_ref().map_or(program.devices.len(), Vec::len);
    validate(&watchdog, devices.as_deref(), &faults, run_devices)?;
    let chosen: Vec<ProgramDevice> = match &devices {
        None => program.devices.clone(),
        Some(ix) => {
            let mut v = Vec::new();
            for &i in ix {
                let d = program.devices.get(i).ok_or_else(|| Error::NoDeviceMatches {
                    filter: format!("device position {i}"),
                    found: format!("{} device(s) in the program", program.devices.len()),
                })?;
                v.push(d.clone());
            }
            v
        }
    };
    if chosen.is_empty() {
        return Err(Error::NoDeviceMatches {
            filter: "an empty device list".into(),
            found: String::new(),
        });
    }
    let plans = plan_arguments(args, &geo)?;
    let n = chosen.len();
    let quarantined = settle_left_behind(&chosen);
    let balancer_name = catch_unwind(AssertUnwindSafe(|| balancer.name()))
        .unwrap_or_else(|_| "(a user balancer whose name() panicked)".into());

    let names: Vec<String> = chosen.iter().map(|d| d.info.name.clone()).collect();
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            phase: Phase::Setup,
            setup: (0..n).map(|_| None).collect(),
            balancer,
            balancer_name,
            balancer_broken: false,
            release: vec![Release::Undecided; n],
            retry: Vec::new(),
            handed: vec![0; units.div_ceil(64) as usize],
            total_units: units,
            unmerged_units: units,
            devices: (0..n).map(|_| DeviceState::default()).collect(),
            trace: Vec::new(),
            faults: Vec::new(),
            t0: Instant::now(),
            fatal: None,
            nominal: Vec::new(),
            merged: HashSet::new(),
            backed_up: HashSet::new(),
            backups: Vec::new(),
            backups_enabled: backups,
        }),
        wake: Condvar::new(),
        gate: RwLock::new(false),
        alive: (0..n).map(|_| AtomicBool::new(true)).collect(),
        commit: (0..n).map(|_| Mutex::new(())).collect(),
        fold: plans.iter().any(|p| matches!(p, ArgPlan::Reduce { .. })).then(|| Mutex::new(())),
        quiet: (0..n).map(|_| AtomicBool::new(false)).collect(),
        names: names.clone(),
    });
    // From here on, however `execute` is left, the gate shuts before the caller's slices can go.
    let end_of_run = EndOfRun(&shared);

    let mut handles = Vec::with_capacity(n);
    for (me, dev) in chosen.iter().enumerate() {
        if let Some(reason) = &quarantined[me] {
            shared.quiet[me].store(true, Ordering::Release);
            shared.lock().setup[me] = Some(Err(SetupError::Device(reason.clone())));
            handles.push(None);
            continue;
        }
        let job = worker::Job {
            me,
            device: dev.clone(),
            kernel: kernel.clone(),
            geo: geo.clone(),
            args: plans.clone(),
            faults: faults.iter().copied().filter(|f| fault_device(f) == me).collect(),
            warmup,
            wait,
            first_unit: span.start,
            units,
            shared: shared.clone(),
        };
        let spawned = std::thread::Builder::new()
            .name(format!("hetdsl-dev{me}"))
            .spawn(move || worker::run(job));
        match spawned {
            Ok(h) => handles.push(Some(h)),
            Err(e) => {
                shared.quiet[me].store(true, Ordering::Release);
                shared.lock().setup[me] =
                    Some(Err(SetupError::Device(format!("cannot start its host thread: {e}"))));
                handles.push(None);
            }
        }
    }

    let outcome = coordinate(&shared, n, units, watchdog);
    // Close the gate: from here on no device thread touches the caller's memory.
    *shared.gate.write().unwrap_or_else(|e| e.into_inner()) = true;
    {
        let mut s = shared.lock();
        s.phase = Phase::Over;
        shared.wake.notify_all();
    }
    // The threads of devices still in the run end promptly (their next question gets `Stop`);
    // a device still computing a package nobody needs (the losing copy of a back-up) or hung,
    // or one dropped from the run, is not waited for beyond the watchdog's floor.
    let waited = Instant::now();
    let bound = watchdog.min.min(Duration::from_secs(10));
    loop {
        let pending = (0..n).any(|d| {
            handles[d].is_some() && shared.alive(d) && !shared.quiet[d].load(Ordering::Acquire) && {
                let s = shared.lock();
                !matches!(s.devices[d].running, Some((q, _)) if s.merged.contains(&q))
            }
        });
        if !pending || waited.elapsed() > bound {
            break;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    let mut joined = Vec::new();
    {
        let mut s = shared.lock();
        for d in 0..n {
            let Some(h) = handles[d].take() else { continue };
            if shared.quiet[d].load(Ordering::Acquire) {
                s.release[d] = Release::Joined;
                joined.push(h);
            } else {
                s.release[d] = Release::LeftBehind;
                // Hung by the watchdog's own measure if still out past the limit of its package.
                let deadline = match s.devices[d].running {
                    Some((p, since)) => since + watchdog_limit(&s, d, p, watchdog),
                    None => Instant::now() + watchdog.min,
                };
                LEFT_BEHIND.lock().unwrap_or_else(|e| e.into_inner()).push(LeftBehind {
                    device: chosen[d].info.index,
                    name: names[d].clone(),
                    shared: shared.clone(),
                    position: d,
                    deadline,
                });
                // Detached: it releases its objects under the OpenCL lock when it comes back.
                drop(h);
            }
        }
        shared.wake.notify_all();
    }
    drop(end_of_run);
    // Each joined thread only releases its objects now (its device has no command left).
    for h in joined {
        let _ = h.join();
    }
    outcome?;
    let mut s = shared.lock();
    let devices: Vec<DeviceReport> = chosen
        .iter()
        .zip(&s.devices)
        .enumerate()
        .map(|(i, (d, st))| DeviceReport {
            index: i,
            name: d.info.name.clone(),
            kind: d.info.kind,
            packages: st.packages,
            groups: st.groups,
            busy_seconds: st.busy,
            finish_seconds: st.finish,
            fault: st.fault.clone(),
        })
        .collect();
    let finish: Vec<f64> =
        devices.iter().filter(|d| d.fault.is_none()).map(|d| d.finish_seconds).collect();
    let roi = devices.iter().map(|d| d.finish_seconds).fold(0.0, f64::max);
    Ok(Report {
        kernel,
        balancer: s.balancer_name.clone(),
        first_group: span.start,
        total_groups: units,
        balance: report::balance(&finish),
        devices,
        trace: std::mem::take(&mut s.trace),
        roi_seconds: roi,
        roi_start: Some(s.t0),
        binary_seconds: t_binary.elapsed().as_secs_f64(),
        speedup: None,
        smax: None,
        efficiency: None,
        faults: std::mem::take(&mut s.faults),
        backups: std::mem::take(&mut s.backups),
    })
}

fn fault_device(f: &Fault) -> usize {
    match *f {
        Fault::Fail { device, .. }
        | Fault::Hang { device, .. }
        | Fault::Slow { device, .. }
        | Fault::Panic { device, .. }
        | Fault::HangSetup { device }
        | Fault::HangReadBack { device, .. } => device,
    }
}

/// How long `p` may run on `device` before the device is declared hung: `factor` times what
/// its measured speed predicts. A device with no measurement yet is predicted from the fastest
/// measured device scaled by nominal speeds, with `UNMEASURED` times more slack, because nominal
/// figures can be far off (a 16-core CPU is 31x below an H200 nominally, 700x in fact); with
/// nothing measured anywhere only `min` applies. Never less than `min`.
fn watchdog_limit(s: &State, device: usize, p: Package, watchdog: WatchdogConfig) -> Duration {
    const UNMEASURED: f64 = 10.0;
    let st = &s.devices[device];
    let nominal = |d: usize| s.nominal.get(d).copied().unwrap_or(0.0);
    let (speed, slack) = match st.speed {
        Some(v) => (Some(v), watchdog.factor),
        None => {
            let guess = (0..s.devices.len())
                .filter_map(|m| {
                    let v = s.devices[m].speed?;
                    (nominal(m) > 0.0).then(|| v * nominal(device) / nominal(m))
                })
                .fold(None, |best: Option<f64>, v| Some(best.map_or(v, |b| b.max(v))));
            (guess.filter(|v| *v > 0.0), watchdog.factor * UNMEASURED)
        }
    };
    match speed {
        Some(v) => Duration::from_secs_f64(slack * p.len as f64 / v).max(watchdog.min),
        None => watchdog.min,
    }
}

/// The caller's thread: waits for set-up, starts the run, then watches for hung devices until
/// every unit's output is merged or the run fails.
fn coordinate(shared: &Shared, n: usize, units: u64, watchdog: WatchdogConfig) -> Result<()> {
    let mut s = shared.lock();
    // A device whose set-up (queues, buffers, the warm-up's compilation) has not finished long
    // after another device's is ready is dropped rather than waited for: its driver may never
    // answer. The grace is generous, because a first launch compiles the kernel.
    let grace = (watchdog.min * 3).max(SETUP_GRACE_FLOOR);
    let mut first_ready: Option<Instant> = None;
    while s.setup.iter().any(Option::is_none) {
        if first_ready.is_none() && s.setup.iter().any(|r| matches!(r, Some(Ok(_)))) {
            first_ready = Some(Instant::now());
        }
        if first_ready.is_some_and(|t| t.elapsed() > grace) {
            for d in 0..n {
                if s.setup[d].is_none() {
                    shared.alive[d].store(false, Ordering::Release);
                    s.setup[d] = Some(Err(SetupError::Device(format!(
                        "set-up did not finish {:.1} s after another device's (hung in its \
                         driver?)",
                        grace.as_secs_f64()
                    ))));
                }
            }
            break;
        }
        s = shared
            .wake
            .wait_timeout(s, Duration::from_millis(50))
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
    // A user error found while setting up (limits, arguments) is reported as such; a device that
    // merely failed to set up is dropped from the run.
    let mut user_error = None;
    let mut dropped = Vec::new();
    let mut profiles = Vec::with_capacity(n);
    for d in 0..n {
        let outcome = s.setup[d].take();
        match outcome {
            Some(Ok(profile)) => profiles.push(profile),
            Some(Err(e)) => {
                // A device that could not set up still has a slot; it never asks for work.
                profiles.push(DeviceProfile {
                    kind: DeviceKind::Other,
                    nominal_gflops: 0.0,
                    min_groups: 1,
                });
                match e {
                    SetupError::User(e) => user_error = user_error.or(Some(e)),
                    SetupError::Device(reason) => dropped.push((d, reason)),
                }
            }
            None => unreachable!("every device reported its set-up"),
        }
    }
    s.nominal = profiles.iter().map(|p| p.nominal_gflops).collect();
    let setup = Setup { total_groups: units, devices: profiles };
    let started = call_balancer(&mut s, "start", |b| b.start(&setup)).and_then(|r| r);
    if let Err(e) = started {
        s.phase = Phase::Over;
        shared.wake.notify_all();
        return Err(e);
    }
    if let Some(e) = user_error {
        s.phase = Phase::Over;
        shared.wake.notify_all();
        return Err(e);
    }
    for (d, reason) in dropped {
        shared.alive[d].store(false, Ordering::Release);
        shared.lose(&mut s, d, reason);
    }
    if !(0..n).any(|d| shared.alive(d)) {
        s.phase = Phase::Over;
        shared.wake.notify_all();
        return Err(Error::AllDevicesFailed(fault_list(&s, &shared.names)));
    }
    s.t0 = Instant::now();
    s.phase = Phase::Running;
    shared.wake.notify_all();
    loop {
        if let Some(e) = s.fatal.take() {
            return Err(e);
        }
        if s.unmerged_units == 0 {
            return Ok(());
        }
        if s.phase == Phase::Over {
            return Err(Error::BadBalancer("the run ended with work left".into()));
        }
        // A package is judged only while another live device sits idle and could take its work
        // over. With every device busy nobody waits for it, and a long package is not a hung
        // one (one 22 s package per device was once declared hung at the 10 s floor on both,
        // failing a healthy run); nor is the last device standing, which may merely be slow.
        let idle = |o: usize| {
            let st = &s.devices[o];
            shared.alive(o) && st.waiting && st.running.is_none() && st.unmerged.is_empty()
        };
        let hung: Vec<(usize, String)> = (0..n)
            .filter(|&d| shared.alive(d) && (0..n).any(|o| o != d && idle(o)))
            .filter_map(|d| {
                let st = &s.devices[d];
                // The kernel running, else the oldest read-back not merged yet, which is given
                // as long as a kernel of its size from when that kernel ended.
                let (what, p, since) = match (st.running, st.unmerged.first()) {
                    (Some((p, since)), _) => ("package", p, since),
                    (None, Some(&(p, since))) => ("read-back of package", p, since),
                    (None, None) => return None,
                };
                let elapsed = since.elapsed();
                let limit = watchdog_limit(&s, d, p, watchdog);
                (elapsed > limit).then(|| {
                    (
                        d,
                        format!(
                            "hung: {what} {p:?} ran {:.3} s, limit {:.3} s",
                            elapsed.as_secs_f64(),
                            limit.as_secs_f64()
                        ),
                    )
                })
            })
            .collect();
        for (d, reason) in hung {
            drop(s);
            shared.device_failed(d, reason);
            s = shared.lock();
        }
        s = shared
            .wake
            .wait_timeout(s, Duration::from_millis(20))
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_checked_against_patterns() {
        let geo = Geometry::new(&[256], &[64]).unwrap();
        let x = vec![0f32; 256];
        let short = vec![0f32; 255];
        let mut out = vec![0f32; 4];
        let ok = plan_arguments(
            vec![
                Arg::In { bytes: crate::pod::bytes_of(&x), elem: 4, pattern: Pattern::ONE_TO_ONE },
                Arg::Out {
                    bytes: crate::pod::bytes_of_mut(&mut out),
                    elem: 4,
                    pattern: Pattern::ratio(1, 64).unwrap(),
                    dir: Direction::Out,
                },
                Arg::Scalar(vec![0; 4]),
            ],
            &geo,
        );
        assert_eq!(ok.unwrap().len(), 3);
        let bad = plan_arguments(
            vec![Arg::In {
                bytes: crate::pod::bytes_of(&short),
                elem: 4,
                pattern: Pattern::ONE_TO_ONE,
            }],
            &geo,
        );
        assert!(matches!(bad, Err(Error::BadArgument { index: 0, .. })));
        let whole_out = plan_arguments(
            vec![Arg::Out {
                bytes: crate::pod::bytes_of_mut(&mut out),
                elem: 4,
                pattern: Pattern::Whole,
                dir: Direction::Out,
            }],
            &geo,
        );
        assert!(matches!(whole_out, Err(Error::BadArgument { .. })));
        let split = plan_arguments(
            vec![Arg::In {
                bytes: crate::pod::bytes_of(&x),
                elem: 4,
                pattern: Pattern::ratio(1, 128).unwrap(),
            }],
            &geo,
        );
        assert!(matches!(split, Err(Error::BadArgument { .. })), "1:128 cannot split groups of 64");
    }

    /// The bookkeeping of a run of `n` devices, with no device thread.
    fn bare(n: usize) -> Shared {
        Shared {
            state: Mutex::new(State {
                phase: Phase::Running,
                setup: (0..n).map(|_| None).collect(),
                balancer: Box::new(crate::balance::Static::nominal()),
                balancer_name: "static".into(),
                balancer_broken: false,
                release: vec![Release::Undecided; n],
                retry: Vec::new(),
                handed: vec![0; 1],
                total_units: 8,
                unmerged_units: 8,
                devices: (0..n).map(|_| DeviceState::default()).collect(),
                trace: Vec::new(),
                faults: Vec::new(),
                t0: Instant::now(),
                fatal: None,
                nominal: Vec::new(),
                merged: HashSet::new(),
                backed_up: HashSet::new(),
                backups: Vec::new(),
                backups_enabled: false,
            }),
            wake: Condvar::new(),
            gate: RwLock::new(false),
            alive: (0..n).map(|_| AtomicBool::new(true)).collect(),
            commit: (0..n).map(|_| Mutex::new(())).collect(),
            fold: None,
            quiet: (0..n).map(|_| AtomicBool::new(false)).collect(),
            names: vec!["dev".into(); n],
        }
    }

    #[test]
    fn the_gate_shuts_when_the_callers_thread_unwinds() {
        let shared = bare(2);
        let unwound = catch_unwind(AssertUnwindSafe(|| {
            let _end = EndOfRun(&shared);
            panic!("a bug on the caller's thread mid-run");
        }));
        assert!(unwound.is_err());
        // No device thread may read or write the caller's memory any more, and every thread
        // is told to release its objects on its own.
        assert!(!shared.with_caller_memory(|| panic!("read after the run")));
        let p = Package { offset: 0, len: 4 };
        assert!(!shared.merge(0, p, Transfer::default(), || panic!("merged after the run")));
        assert_eq!(shared.release_turn(1), Release::LeftBehind);
        assert!(matches!(shared.next_package(0, true), Ask::Stop));
    }

    #[test]
    fn handed_out_work_is_checked() {
        let mut handed = vec![0u64; 2];
        assert!(check_fresh(&mut handed, 128, Package { offset: 0, len: 70 }).is_ok());
        assert!(check_fresh(&mut handed, 128, Package { offset: 69, len: 2 }).is_err());
        assert!(check_fresh(&mut handed, 128, Package { offset: 100, len: 0 }).is_err());
        assert!(check_fresh(&mut handed, 128, Package { offset: 120, len: 9 }).is_err());
    }
}
