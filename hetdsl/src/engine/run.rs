//! Executes a launch: checks it, starts one host thread per device, hands packages out through
//! the balancer, watches for hung devices, and assembles the report.
//!
//! Every decision (which package a device runs, re-runs after a loss, back-ups, which copy's
//! output is kept, a stalled balancer, a hung device) is the [`Dispatcher`]'s, the same state
//! machine the simulator drives; this module feeds it events with the clock's time and carries
//! its answers to the device threads.
//!
//! Who owns what:
//! - [`Shared::state`] (one mutex, with a condition variable) holds the dispatcher, which holds
//!   the balancer; device threads take it only to ask for work and to report, never across an
//!   OpenCL wait.
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

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock};
use std::time::{Duration, Instant};

use super::geometry::Geometry;
use super::program::ProgramDevice;
use super::worker::{self, ArgPlan, HostPtr};
use super::{Arg, Fault, Launch, WatchdogConfig};
use crate::balance::dispatch::{Config, Decision, Dispatcher, Verdict, WatchdogRule};
use crate::balance::{backup, Balancer, DeviceKind, DeviceProfile, Package, Setup};
use crate::error::{Error, Result};
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
    /// The balancer until the run starts; from then on the dispatcher holds it and is the only
    /// one to call it.
    balancer: Option<Box<dyn Balancer>>,
    /// Every hand-out, re-run, back-up, merge decision, stall and watchdog verdict of the run.
    dispatch: Option<Dispatcher<Box<dyn Balancer>>>,
    /// The balancer's name, asked once (a user balancer's `name` may panic too).
    balancer_name: String,
    /// Per device: what its host thread does at the end.
    release: Vec<Release>,
    /// Per device: a back-up copy the coordinator's tick gave it while it waited.
    given: Vec<Option<Package>>,
    /// Finished copies whose output the dispatcher discarded (another copy finished first).
    discarded: Vec<(usize, Package)>,
    trace: Vec<PackageTrace>,
    t0: Instant,
    fatal: Option<Error>,
    backups_enabled: bool,
}

/// The least time a device's set-up may take beyond the first ready device's.
const SETUP_GRACE_FLOOR: Duration = Duration::from_secs(10);

/// How long a waiting device thread sleeps at most before it re-checks whether something it
/// waits for happened (it is woken at once by every completion, loss or back-up given).
const RECHECK: Duration = Duration::from_millis(50);

/// How often the coordinator lets idle devices look for a straggler to back up.
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
    /// before it waits, or the run could never end). A waiting device asks the dispatcher
    /// again only when something it waits for happened (a completion for `Wait`, a loss for
    /// `Idle`), and takes a back-up copy the coordinator's tick gave it.
    pub fn next_package(&self, me: usize, block: bool) -> Ask {
        let mut s = self.lock();
        let mut first = true;
        loop {
            if s.phase != Phase::Running || !self.alive(me) {
                return Ask::Stop;
            }
            if let Some(p) = s.given[me].take() {
                return Ask::Run(p);
            }
            let now = self.now(&s);
            let Some(d) = s.dispatch.as_mut() else { return Ask::Stop };
            if first || d.should_ask(me) {
                match d.ask(me, now) {
                    Ok(Decision::Run(a)) => return Ask::Run(a.package),
                    Ok(Decision::Stop) => return Ask::Stop,
                    Ok(Decision::Wait | Decision::Idle) => {}
                    Err(e) => {
                        self.abort(&mut s, e);
                        return Ask::Stop;
                    }
                }
            }
            first = false;
            if !block {
                return Ask::Later;
            }
            // Woken by any completion, loss or back-up given; the time-out only re-checks.
            s = self.wake.wait_timeout(s, RECHECK).unwrap_or_else(|e| e.into_inner()).0;
        }
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
        let Some(d) = s.dispatch.as_mut() else { return false };
        let started = d.running(me).map_or(now, |(_, since)| since);
        match d.kernel_done(me, p, now, kernel_seconds) {
            Ok(Verdict::Keep { .. }) => {}
            // Another copy finished first: its output is not merged (see `merge`).
            Ok(Verdict::Discard) => s.discarded.push((me, p)),
            Err(e) => {
                self.abort(&mut s, e);
                return false;
            }
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
        self.wake.notify_all();
        true
    }

    /// Copy a finished package's output into the caller's memory with `merge`, unless the run
    /// is over, `me` was dropped from it, or the dispatcher kept another copy of the package.
    pub fn merge(&self, me: usize, p: Package, read: Transfer, merge: impl FnOnce()) -> bool {
        let _commit = self.commit[me].lock().unwrap_or_else(|e| e.into_inner());
        let closed = self.gate.read().unwrap_or_else(|e| e.into_inner());
        if *closed || !self.alive(me) {
            return false;
        }
        {
            // A package run twice (a back-up, or a re-run after a fault) is merged once: the
            // dispatcher kept the first copy to finish and discarded this one.
            let mut s = self.lock();
            if let Some(i) = s.discarded.iter().position(|x| *x == (me, p)) {
                s.discarded.swap_remove(i);
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
        let now = self.now(&s);
        if let Some(t) = s.trace.iter_mut().rev().find(|t| t.device == me && t.package == p) {
            t.merged = true;
            t.read = read;
        }
        if let Some(Err(e)) = s.dispatch.as_mut().map(|d| d.merged(me, p, now)) {
            self.abort(&mut s, e);
        }
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

    /// One step under the state lock: the dispatcher moves `me`'s running and unmerged packages
    /// to its re-run list (unless another copy covers them) and tells the balancer.
    fn lose(&self, s: &mut State, me: usize, reason: String) {
        s.given[me] = None;
        let now = self.now(s);
        if let Some(Err(e)) = s.dispatch.as_mut().map(|d| d.fail(me, now, reason)) {
            self.abort(s, e);
        }
        self.wake.notify_all();
    }
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
            balancer: Some(balancer),
            dispatch: None,
            balancer_name,
            release: vec![Release::Undecided; n],
            given: vec![None; n],
            discarded: Vec::new(),
            trace: Vec::new(),
            t0: Instant::now(),
            fatal: None,
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
                !s.dispatch.as_ref().is_some_and(|x| x.runs_abandoned(d))
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
                let rule = watchdog_rule(watchdog);
                let out = s.dispatch.as_ref().and_then(|x| {
                    let (p, since) = x.running(d)?;
                    Some(Duration::from_secs_f64(since + x.watchdog_limit(d, p, rule)))
                });
                let deadline = match out {
                    Some(at) => s.t0 + at,
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
    let Some(dispatch) = s.dispatch.take() else {
        return Err(Error::BadBalancer("the run ended before it started".into()));
    };
    let devices: Vec<DeviceReport> = chosen
        .iter()
        .zip(dispatch.stats())
        .enumerate()
        .map(|(i, (d, st))| DeviceReport {
            index: i,
            name: d.info.name.clone(),
            kind: d.info.kind,
            packages: st.ran,
            groups: st.ran_groups,
            busy_seconds: st.ran_busy,
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
        faults: dispatch.faults().to_vec(),
        backups: dispatch.backups().to_vec(),
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

/// The dispatcher's form of the launch's watchdog settings.
fn watchdog_rule(w: WatchdogConfig) -> WatchdogRule {
    WatchdogRule { factor: w.factor, min_seconds: w.min.as_secs_f64() }
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
    let setup = Setup { total_groups: units, devices: profiles };
    let Some(balancer) = s.balancer.take() else {
        return Err(Error::BadBalancer("the balancer was already used".into()));
    };
    let config = Config { backups: s.backups_enabled };
    match Dispatcher::start(balancer, setup, shared.names.clone(), config) {
        Ok(d) => s.dispatch = Some(d),
        Err(e) => {
            s.phase = Phase::Over;
            shared.wake.notify_all();
            return Err(e);
        }
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
    if let Some(e) = s.fatal.take() {
        s.phase = Phase::Over;
        shared.wake.notify_all();
        return Err(e);
    }
    s.t0 = Instant::now();
    s.phase = Phase::Running;
    shared.wake.notify_all();
    let rule = watchdog_rule(watchdog);
    let poll = if s.backups_enabled { BACKUP_POLL } else { Duration::from_millis(20) };
    loop {
        if let Some(e) = s.fatal.take() {
            return Err(e);
        }
        let Some(d) = s.dispatch.as_mut() else {
            return Err(Error::BadBalancer("the run ended before it started".into()));
        };
        if d.is_over() {
            return Ok(());
        }
        if s.phase == Phase::Over {
            return Err(Error::BadBalancer("the run ended with work left".into()));
        }
        let now = shared.now(&s);
        // The dispatcher's verdict (see `Dispatcher::hung`): only a device whose package
        // another, idle device could take over.
        let hung = s.dispatch.as_ref().map_or(Vec::new(), |d| d.hung(now, rule));
        for h in hung {
            drop(s);
            shared.device_failed(h.device, h.reason());
            s = shared.lock();
        }
        // Idle devices look for a straggler to back up.
        let now = shared.now(&s);
        match s.dispatch.as_mut().map(|d| d.tick(now)) {
            Some(Ok(given)) if !given.is_empty() => {
                for (d, a) in given {
                    s.given[d] = Some(a.package);
                }
                shared.wake.notify_all();
            }
            Some(Err(e)) => return Err(e),
            _ => {}
        }
        s = shared.wake.wait_timeout(s, poll).unwrap_or_else(|e| e.into_inner()).0;
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
                balancer: Some(Box::new(crate::balance::Static::nominal())),
                dispatch: None,
                balancer_name: "static".into(),
                release: vec![Release::Undecided; n],
                given: vec![None; n],
                discarded: Vec::new(),
                trace: Vec::new(),
                t0: Instant::now(),
                fatal: None,
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
}
