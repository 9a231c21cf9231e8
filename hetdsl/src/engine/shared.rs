//! The state shared by the caller's thread and the device threads of one run, and the only
//! way either touches it.
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
//! - The caller's slices are touched only by device threads copying packages (or parts of a
//!   package's output) in or out, each under the [`Shared::gate`] read lock and its device's
//!   commit lock. When the run ends the gate is closed for good, on every way out of `run`
//!   including a panic unwinding through it ([`EndOfRun`]), so a device left behind (hung in a
//!   driver call) can never touch the caller's memory after `run` returns.
//! - Lock order: a device's commit lock, then the gate, then the state (taken and let go), then
//!   the fold lock of reduced outputs. Nothing waits on another thread while holding the state
//!   lock except through its condition variable; a poisoned lock is recovered, never unwrapped.
//! - A host thread is joined only once its device has no command left (it says so through
//!   [`Shared::quiet`]) and then only releases OpenCL objects; see the coordinator for who is
//!   joined and who is left behind.
//!
//! This module knows neither the device threads' OpenCL work nor the coordinator's loop: both
//! depend on it, and it on neither.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, RwLock};
use std::time::{Duration, Instant};

use crate::balance::dispatch::{Config, Decision, Dispatcher, Verdict};
use crate::balance::Balancer;
use crate::error::{DeviceFault, Error};
use crate::report::{PackageTrace, Transfer};
use crate::work::{DeviceProfile, Package};

/// What a device is told when it asks for work.
pub(crate) enum Ask {
    Run(Package),
    /// Nothing now; ask again (only when not blocking).
    Later,
    /// Leave the run.
    Stop,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
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
    pub(super) phase: Phase,
    pub(super) setup: Vec<Option<std::result::Result<DeviceProfile, SetupError>>>,
    /// Per device: its profile, posted once its kernel and limits are known and before the
    /// slow part of its set-up (buffers, warm-up), so the run can start without it.
    pub(super) provisional: Vec<Option<DeviceProfile>>,
    /// Per device: the run started before it had set up; it joins when it has (see
    /// [`Shared::setup_done`]).
    pub(super) late: Vec<bool>,
    /// A late device whose set-up has not ended by then is dropped (hung in its driver?).
    pub(super) setup_deadline: Option<Instant>,
    /// The balancer until the run starts; from then on the dispatcher holds it and is the only
    /// one to call it.
    pub(super) balancer: Option<Box<dyn Balancer>>,
    /// Every hand-out, re-run, back-up, merge decision, stall and watchdog verdict of the run.
    pub(super) dispatch: Option<Dispatcher<Box<dyn Balancer>>>,
    /// The balancer's name, asked once (a user balancer's `name` may panic too).
    pub(super) balancer_name: String,
    /// Per device: what its host thread does at the end.
    pub(super) release: Vec<Release>,
    /// Per device: a back-up copy the coordinator's tick gave it while it waited.
    pub(super) given: Vec<Option<Package>>,
    /// Finished copies whose output the dispatcher discarded (another copy finished first).
    pub(super) discarded: Vec<(usize, Package)>,
    pub(super) trace: Vec<PackageTrace>,
    pub(super) t0: Instant,
    pub(super) fatal: Option<Error>,
    /// The dispatcher's back-up rules.
    pub(super) backups: Config,
}

/// How long a waiting device thread sleeps at most before it re-checks whether something it
/// waits for happened (it is woken at once by every completion, loss or back-up given).
const RECHECK: Duration = Duration::from_millis(50);

/// How long a session device waits for more work while holding uncommitted outputs.
const HOLD: Duration = Duration::from_secs(1);

/// How long a device asking for work waits for it.
enum Until {
    /// Not at all: [`Ask::Later`] at once.
    Now,
    /// Until there is work, or the run ends.
    Work,
    /// Holding uncommitted outputs since then: until the balancer has nothing more for this
    /// device, or [`HOLD`] has passed.
    Held(Instant),
}

pub(crate) struct Shared {
    pub(super) state: Mutex<State>,
    pub(super) wake: Condvar,
    /// `true` once the run is over: the caller's memory is off limits.
    pub(super) gate: RwLock<bool>,
    /// Per device: still part of the run. Read without the state lock.
    pub(super) alive: Vec<AtomicBool>,
    /// Per device: held while merging a package into the caller's memory.
    pub(super) commit: Vec<Mutex<()>>,
    /// Per device: the package whose `inout` output it is writing to the caller (`device_failed`).
    pub(super) half_merged: Vec<Mutex<Option<Package>>>,
    /// Held while merging when the launch has reduced outputs: every package folds into the
    /// whole of them, so two devices must not fold at once (sliced outputs are disjoint).
    pub(super) fold: Option<Mutex<()>>,
    /// Per device: its host thread has no command left on the device (its queues are finished,
    /// or it never started): all it may still do is release objects.
    pub(super) quiet: Vec<AtomicBool>,
    pub(super) names: Vec<String>,
    /// The number each device goes by in events: its position in the launch, which differs
    /// from its position here when devices sit out.
    pub(super) labels: Vec<usize>,
    /// Devices of the launch sit it out by a learned form, and could have run its work.
    pub(super) spares: bool,
}

/// Closes the run on every way out of `execute`, a panic included: the gate shuts (no device
/// thread touches the caller's memory after this), the phase ends, and a thread nobody has
/// decided to join is left behind to release its objects under the OpenCL lock.
pub(crate) struct EndOfRun<'a>(pub &'a Shared);

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
    /// The bookkeeping of a run of `names.len()` devices, in its set-up phase, whose dispatcher
    /// backs up stragglers as `backups` says. `fold`: some output is merged by reduction, so
    /// merges take the fold lock.
    pub(super) fn new(
        names: Vec<String>,
        balancer: Box<dyn Balancer>,
        balancer_name: String,
        backups: Config,
        fold: bool,
    ) -> Shared {
        let n = names.len();
        Shared {
            state: Mutex::new(State {
                phase: Phase::Setup,
                setup: (0..n).map(|_| None).collect(),
                provisional: vec![None; n],
                late: vec![false; n],
                setup_deadline: None,
                balancer: Some(balancer),
                dispatch: None,
                balancer_name,
                release: vec![Release::Undecided; n],
                given: vec![None; n],
                discarded: Vec::new(),
                trace: Vec::new(),
                t0: Instant::now(),
                fatal: None,
                backups,
            }),
            wake: Condvar::new(),
            gate: RwLock::new(false),
            alive: (0..n).map(|_| AtomicBool::new(true)).collect(),
            commit: (0..n).map(|_| Mutex::new(())).collect(),
            half_merged: (0..n).map(|_| Mutex::new(None)).collect(),
            fold: fold.then(|| Mutex::new(())),
            quiet: (0..n).map(|_| AtomicBool::new(false)).collect(),
            names,
            labels: (0..n).collect(),
            spares: false,
        }
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        // A device thread that panicked cannot leave the state half-updated in a way that
        // matters more than losing the run; recover the guard rather than propagate the panic.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether `me` is left with nothing of the run to do but what no one needs: the losing
    /// copy of a backed-up package, or (`never_began`) a thread that has not begun this run
    /// because it still computes such a copy from an earlier one.
    pub(super) fn left_behind(&self, me: usize, never_began: bool) -> bool {
        let s = self.lock();
        s.dispatch.as_ref().is_some_and(|d| d.runs_abandoned(me))
            || (never_began && s.setup[me].is_none())
    }

    /// The run has ended (the caller's thread closed it).
    pub(super) fn run_over(&self) -> bool {
        *self.gate.read().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn alive(&self, me: usize) -> bool {
        self.alive[me].load(Ordering::Acquire)
    }

    /// Seconds since the run began.
    pub(super) fn now(&self, s: &State) -> f64 {
        s.t0.elapsed().as_secs_f64()
    }

    /// The next package for `me`. With `block`, waits until there is one; without, answers
    /// [`Ask::Later`] instead of waiting (a device with an output still to merge must merge it
    /// before it waits, or the run could never end). A waiting device asks the dispatcher
    /// again only when something it waits for happened (a completion for `Wait`, a loss for
    /// `Idle`), and takes a back-up copy the coordinator's tick gave it.
    pub(super) fn next_package(&self, me: usize, block: bool) -> Ask {
        self.ask(me, if block { Until::Work } else { Until::Now })
    }

    /// A package to queue behind the one `me` runs, if the balancer gives one now (never
    /// waits; see [`Dispatcher::ask_ahead`]).
    pub(super) fn ahead(&self, me: usize) -> Option<Package> {
        let mut s = self.lock();
        if s.phase != Phase::Running || !self.alive(me) {
            return None;
        }
        match self.dispatch(&mut s, "ask_ahead", |d, now| d.ask_ahead(me, now))? {
            Ok(a) => a.map(|a| a.package),
            Err(e) => {
                self.abort(&mut s, e);
                None
            }
        }
    }

    /// For a session device holding outputs it has not committed (`holding`): like a blocking
    /// [`Shared::next_package`], but answers [`Ask::Later`] once the dispatcher says `Idle`
    /// (the balancer has nothing more for it), or after [`HOLD`] with no answer, so the device
    /// commits then. Committing only when its share is done keeps every package it ran
    /// re-runnable elsewhere should it fail before; the bound keeps a balancer that waits for
    /// merges from hanging the run (the dispatcher's stall check needs the commits).
    pub(super) fn next_package_held(&self, me: usize, holding: bool) -> Ask {
        self.ask(me, if holding { Until::Held(Instant::now()) } else { Until::Work })
    }

    fn ask(&self, me: usize, until: Until) -> Ask {
        let mut s = self.lock();
        let mut first = true;
        loop {
            if s.phase != Phase::Running || !self.alive(me) {
                return Ask::Stop;
            }
            if let Some(p) = s.given[me].take() {
                return Ask::Run(p);
            }
            let asked = self.dispatch(&mut s, "ask", |d, now| {
                (first || d.should_ask(me)).then(|| d.ask(me, now))
            });
            let Some(asked) = asked else { return Ask::Stop };
            if let Some(answer) = asked {
                match answer {
                    Ok(Decision::Run(a)) => return Ask::Run(a.package),
                    Ok(Decision::Stop) => return Ask::Stop,
                    Ok(Decision::Idle) if matches!(until, Until::Held(_)) => return Ask::Later,
                    Ok(Decision::Wait | Decision::Idle) => {}
                    Err(e) => {
                        self.abort(&mut s, e);
                        return Ask::Stop;
                    }
                }
            }
            first = false;
            match until {
                Until::Now => return Ask::Later,
                Until::Held(since) if since.elapsed() > HOLD => return Ask::Later,
                _ => {}
            }
            // Woken by any completion, loss or back-up given; the time-out only re-checks.
            s = self.wake.wait_timeout(s, RECHECK).unwrap_or_else(|e| e.into_inner()).0;
        }
    }

    /// A mistake of the caller's found by a device thread mid-run: the run ends with it.
    pub(super) fn refuse(&self, e: Error) {
        self.abort(&mut self.lock(), e);
    }

    fn abort(&self, s: &mut State, e: Error) {
        if s.fatal.is_none() {
            s.fatal = Some(e);
        }
        s.phase = Phase::Over;
        self.wake.notify_all();
    }

    /// One call into the dispatcher, under the state lock, with the run's clock. A panic in it
    /// is a bug in hetdsl (a balancer's own panics the dispatcher catches): its books may be
    /// half-updated, so they are dropped and the run ends with [`Error::Internal`] rather than
    /// go on from them or leave the other threads waiting. `None` when the run has no
    /// dispatcher (not started yet, or ended that way).
    pub(super) fn dispatch<R>(
        &self,
        s: &mut State,
        what: &str,
        f: impl FnOnce(&mut Dispatcher<Box<dyn Balancer>>, f64) -> R,
    ) -> Option<R> {
        let now = self.now(s);
        let d = s.dispatch.as_mut()?;
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(d, now))) {
            Ok(r) => Some(r),
            Err(payload) => {
                s.dispatch = None;
                let m = format!("the dispatcher panicked in {what}: {}", panic_message(&*payload));
                self.abort(s, Error::Internal(m));
                None
            }
        }
    }

    /// The kernel of `p` finished on `me` after `kernel_seconds` of device time, `idle_before`
    /// seconds after the device's previous kernel ended (device clock).
    /// Returns whether `me` is still part of the run.
    pub(super) fn kernel_done(
        &self,
        me: usize,
        p: Package,
        kernel_seconds: Option<f64>,
        written: Transfer,
        idle_before: Option<f64>,
    ) -> bool {
        let mut s = self.lock();
        if !self.alive(me) || s.phase != Phase::Running {
            return false;
        }
        // The trace's instants are the dispatcher's, so that a package queued behind this one
        // starts its span exactly where this one's ends.
        let done = self.dispatch(&mut s, "kernel_done", |d, now| {
            let started = d.running(me).map_or(now, |(_, since)| since);
            (started, now, d.kernel_done(me, p, now, kernel_seconds))
        });
        let Some((started, now, verdict)) = done else { return false };
        match verdict {
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
            idle_before,
        });
        self.wake.notify_all();
        true
    }

    /// Copy a finished package's output into the caller's memory with `merge`, unless the run
    /// is over, `me` was dropped from it, or the dispatcher kept another copy of the package.
    pub(super) fn merge(
        &self,
        me: usize,
        p: Package,
        read: Transfer,
        merge: impl FnOnce(),
    ) -> bool {
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
        *self.half_merged[me].lock().unwrap_or_else(|e| e.into_inner()) = None;
        drop(closed);
        let mut s = self.lock();
        if let Some(t) = s.trace.iter_mut().rev().find(|t| t.device == me && t.package == p) {
            t.merged = true;
            t.read = read;
        }
        if let Some(Err(e)) = self.dispatch(&mut s, "merged", |d, now| d.merged(me, p, now)) {
            self.abort(&mut s, e);
        }
        self.wake.notify_all();
        true
    }

    /// Copy a part of a finished package's output into the caller's memory with `write`, under
    /// the same conditions as [`Shared::merge`], which counts the package merged once every
    /// part is in. A copy the dispatcher discarded writes nothing. `false` if the run is over
    /// for `me`.
    pub(super) fn merge_part(&self, me: usize, p: Package, write: impl FnOnce()) -> bool {
        let _commit = self.commit[me].lock().unwrap_or_else(|e| e.into_inner());
        let closed = self.gate.read().unwrap_or_else(|e| e.into_inner());
        if *closed || !self.alive(me) {
            return false;
        }
        if !self.lock().discarded.contains(&(me, p)) {
            write();
        }
        true
    }

    /// Read the caller's memory (input slices) under the gate. `false` if the run is over.
    pub(super) fn with_caller_memory(&self, read: impl FnOnce()) -> bool {
        let closed = self.gate.read().unwrap_or_else(|e| e.into_inner());
        if *closed {
            return false;
        }
        read();
        true
    }

    /// `me` failed: its running and unmerged packages go back to the pool.
    pub(super) fn device_failed(&self, me: usize, reason: String) {
        // The commit lock waits for a merge in progress to end, so none starts after this. The
        // device leaves the run and its packages reach the retry list under one state lock: a
        // device that looked lost while its packages were nowhere to be run would let another
        // thread conclude that work was left which no one would ever run (the stall check).
        let _commit = self.commit[me].lock().unwrap_or_else(|e| e.into_inner());
        // A package whose inout output is partly written back cannot be run again: its inputs
        // there are gone. Saving them at every merge would cost each inout byte one more host
        // copy (saxpy's calls took 1.6 times as long), for a fault that needs a device to fail
        // between two parts of one read-back.
        let half = self.half_merged[me].lock().unwrap_or_else(|e| e.into_inner()).take();
        let mut s = self.lock();
        self.alive[me].store(false, Ordering::Release);
        let running = s.phase == Phase::Running;
        self.lose(&mut s, me, reason.clone());
        if let Some(groups) = half.filter(|_| running) {
            let (device, name) = (self.labels[me], self.names[me].clone());
            let fault = DeviceFault { device, name, reason };
            let groups = groups.offset..groups.end();
            self.abort(&mut s, Error::PartlyMerged { fault, groups });
        }
    }

    /// Called by a host thread once its device has no command left; waits until the run is over
    /// and the caller's thread has said whether it joins this thread.
    pub(super) fn release_turn(&self, me: usize) -> Release {
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
    pub(super) fn close(&self) {
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
    pub(super) fn lose(&self, s: &mut State, me: usize, reason: String) {
        s.given[me] = None;
        if let Some(Err(e)) = self.dispatch(s, "fail", |d, now| d.fail(me, now, reason)) {
            self.abort(s, e);
        }
        self.wake.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use std::panic::{catch_unwind, AssertUnwindSafe};

    use super::*;

    /// The bookkeeping of a run of `n` devices, with no device thread.
    fn bare(n: usize) -> Shared {
        let balancer = Box::new(crate::balance::Static::nominal());
        let no_backups = Config::default();
        let shared =
            Shared::new(vec!["dev".into(); n], balancer, "static".into(), no_backups, false);
        shared.lock().phase = Phase::Running;
        shared
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

    /// A panic inside the dispatcher (a bug of ours, not the balancer's) on one device's
    /// thread ends the run with an error and wakes a device waiting for work, which then
    /// leaves: before, it unwound with the dispatcher's books half-updated and `run` hung.
    #[test]
    fn a_panic_in_the_dispatcher_ends_the_run_and_wakes_the_waiting() {
        use crate::balance::dispatch::Config;
        use crate::work::{DeviceKind, Setup};
        let shared = std::sync::Arc::new(bare(2));
        let profile = DeviceProfile { kind: DeviceKind::Cpu, nominal_gflops: 1.0, min_groups: 1 };
        let setup = Setup { total_groups: 8, devices: vec![profile; 2] };
        let balancer: Box<dyn Balancer> = Box::new(crate::balance::Static::nominal());
        let names = vec!["a".into(), "b".into()];
        let d = Dispatcher::start(balancer, setup, names, Config::default()).unwrap();
        shared.lock().dispatch = Some(d);
        // Device 0 runs its static share; asking again, it must wait for device 1's share.
        assert!(matches!(shared.next_package(0, true), Ask::Run(_)));
        let (tx, rx) = std::sync::mpsc::channel();
        let waiter = shared.clone();
        let t = std::thread::spawn(move || {
            let _ = waiter.kernel_done(
                0,
                Package { offset: 0, len: 4 },
                Some(0.1),
                Transfer::default(),
                None,
            );
            tx.send(matches!(waiter.next_package(0, true), Ask::Stop)).unwrap();
        });
        std::thread::sleep(Duration::from_millis(50));
        let unwound = catch_unwind(AssertUnwindSafe(|| {
            let mut s = shared.lock();
            shared.dispatch(&mut s, "a test", |_, _| -> () { panic!("a bookkeeping bug") })
        }));
        assert!(matches!(unwound, Ok(None)), "the panic must not escape");
        let stopped = rx.recv_timeout(Duration::from_secs(5)).expect("the waiting device hung");
        assert!(stopped);
        t.join().unwrap();
        let s = shared.lock();
        assert_eq!(s.phase, Phase::Over);
        assert!(s.dispatch.is_none(), "nobody may consult the half-updated books");
        let e = s.fatal.as_ref().expect("the run's error").to_string();
        assert!(e.contains("internal error") && e.contains("a bookkeeping bug"), "{e}");
    }
}
