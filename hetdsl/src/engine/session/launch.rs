//! A session launch: the builder, its checks before anything runs (the kernel's signature, the
//! session of each buffer, lengths against patterns), and the run on the caller's thread — the
//! same dispatcher, shared state and coordinator as a one-shot run, with the session's
//! persistent device threads doing the work.

use std::marker::PhantomData;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::buffer::{Buffer, BufferCore};
use super::residency::RangeSet;
use super::split::{follow_latest, learned, recut, replayable};
use super::worker::{self, Plan as WorkPlan, SArg};
use super::{queued, staged, transfer, Session};
use crate::balance::{self, Balancer};
use crate::engine::geometry::Geometry;
use crate::engine::shared::{EndOfRun, Shared};
use crate::engine::worker::device_profile;
use crate::engine::{coordinator, Fault, WaitMode, WatchdogConfig};
use crate::error::{Error, Result};
use crate::pattern::{Direction, Pattern};
use crate::pod::{bytes_of, HostType, Pod};
use crate::report::{Moved, Report};

/// What identifies "the same launch again" for the learned split.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub(crate) struct HistoryKey {
    kernel: String,
    global: Vec<usize>,
    local: Vec<usize>,
    devices: Vec<usize>,
}

impl HistoryKey {
    fn of(plan: &WorkPlan, positions: &[usize]) -> HistoryKey {
        HistoryKey {
            kernel: plan.kernel.clone(),
            global: plan.geo.global.clone(),
            local: plan.geo.local.clone(),
            devices: positions.to_vec(),
        }
    }
}

/// One argument as the builder records it.
enum Given {
    Buffer { core: Arc<BufferCore>, pattern: Pattern, dir: Direction },
    Scalar(Vec<u8>),
    Local(usize),
}

/// A kernel launch over a session's devices; build it, then [`SessionLaunch::run`]. The buffers
/// it borrows (mutably for outputs) cannot be read or written from the host until it is done.
pub struct SessionLaunch<'s> {
    session: &'s Session,
    kernel: String,
    global: Vec<usize>,
    local: Vec<usize>,
    args: Vec<Given>,
    types: Vec<HostType>,
    balancer: Option<Box<dyn Balancer>>,
    faults: Vec<Fault>,
    watchdog: WatchdogConfig,
    warmup: bool,
    wait: WaitMode,
    /// The parameters' names as a `kernel!`/`#[coexec]` declaration spells them.
    arg_names: Option<&'static [&'static str]>,
    _borrows: PhantomData<&'s mut ()>,
}

impl<'s> SessionLaunch<'s> {
    pub(crate) fn new(session: &'s Session, kernel: &str) -> Self {
        SessionLaunch {
            session,
            kernel: kernel.to_string(),
            global: Vec::new(),
            local: Vec::new(),
            args: Vec::new(),
            types: Vec::new(),
            balancer: None,
            faults: Vec::new(),
            watchdog: WatchdogConfig::default(),
            warmup: true,
            wait: WaitMode::from_env(),
            arg_names: None,
            _borrows: PhantomData,
        }
    }

    /// The global NDRange: `[n]` or `[width, height]`.
    pub fn global(mut self, sizes: &[usize]) -> Self {
        self.global = sizes.to_vec();
        self
    }

    /// The work-group size, with as many dimensions as the NDRange.
    pub fn local(mut self, sizes: &[usize]) -> Self {
        self.local = sizes.to_vec();
        self
    }

    fn buffer<T: Pod>(mut self, core: Arc<BufferCore>, pattern: Pattern, dir: Direction) -> Self {
        self.args.push(Given::Buffer { core, pattern, dir });
        self.types.push(T::HOST_TYPE);
        self
    }

    /// A buffer the kernel reads, split by `pattern` ([`Pattern::Whole`] and
    /// [`Pattern::halo`] included).
    pub fn input<T: Pod>(self, data: &'s Buffer<T>, pattern: Pattern) -> Self {
        let core = data.core.clone();
        self.buffer::<T>(core, pattern, Direction::In)
    }

    /// A buffer the kernel writes, split by `pattern`; its outputs stay on the devices. The
    /// kernel must write every element of each package's range: one it does not write becomes
    /// undefined. Use [`SessionLaunch::inout`] for a kernel that leaves some as they were.
    pub fn output<T: Pod>(self, data: &'s mut Buffer<T>, pattern: Pattern) -> Self {
        let core = data.core.clone();
        self.buffer::<T>(core, pattern, Direction::Out)
    }

    /// A buffer the kernel reads and writes, split by `pattern`.
    pub fn inout<T: Pod>(self, data: &'s mut Buffer<T>, pattern: Pattern) -> Self {
        let core = data.core.clone();
        self.buffer::<T>(core, pattern, Direction::InOut)
    }

    /// A value passed by copy.
    pub fn scalar<T: Pod>(mut self, value: T) -> Self {
        self.args.push(Given::Scalar(bytes_of(std::slice::from_ref(&value)).to_vec()));
        self.types.push(T::HOST_TYPE);
        self
    }

    /// A `__local` buffer of `count` elements of `T` per work-group.
    pub fn local_buffer<T: Pod>(mut self, count: usize) -> Self {
        self.args.push(Given::Local(count.saturating_mul(size_of::<T>())));
        self.types.push(T::HOST_TYPE);
        self
    }

    /// The balancer; by default the split learned from this launch's previous run in the
    /// session, else a first launch's split ([`balance::Regions`]: one block per device, dynamic).
    pub fn balancer(mut self, balancer: Box<dyn Balancer>) -> Self {
        self.balancer = Some(balancer);
        self
    }

    /// Inject a fault (testing); `device` is a position among the launch's working devices.
    pub fn inject(mut self, fault: Fault) -> Self {
        self.faults.push(fault);
        self
    }

    /// How long a package may run before its device is declared hung.
    pub fn watchdog(mut self, config: WatchdogConfig) -> Self {
        self.watchdog = config;
        self
    }

    /// Whether a kernel's first launch on a device that compiles it at that launch (PoCL, CPUs)
    /// runs one work-group at each end of the range first, so its compilation does not skew
    /// balancing (default: yes). GPUs compile at the build and are not warmed up.
    pub fn warmup(mut self, on: bool) -> Self {
        self.warmup = on;
        self
    }

    /// How each device's thread waits for its kernels.
    pub fn wait(mut self, mode: WaitMode) -> Self {
        self.wait = mode;
        self
    }

    /// The parameters' names as declared (what `kernel!` and `#[coexec]` set), so that every
    /// argument error of [`SessionLaunch::run`] names the argument as the user wrote it.
    #[doc(hidden)]
    pub fn arg_names(mut self, names: &'static [&'static str]) -> Self {
        self.arg_names = Some(names);
        self
    }

    /// Run it; returns when the kernel has completed everywhere. Outputs stay on the devices
    /// that computed them until read or needed elsewhere.
    pub fn run(mut self) -> Result<Report> {
        let session = self.session;
        let kernel = self.kernel.clone();
        let balancer = self.balancer.take();
        let names = self.arg_names.take();
        let report =
            self.execute(balancer, false).map_err(|e| name_error(session, &kernel, names, e))?;
        report.ok_or_else(|| Error::Internal("a launch run to its end was queued".into()))
    }

    /// Start it, and return as soon as the host has nothing left to decide: a launch that
    /// repeats a balanced split of the same launch and finds every input it reads already on
    /// the device that reads it is queued on the devices and returns at once (the next
    /// launch, a buffer's read or write, [`Session::finish`] wait for it as they need); any
    /// other launch runs as [`SessionLaunch::run`] does. Reports wait in
    /// [`Session::finish`]; an error of a queued launch (a device failing) comes from the
    /// first call that waits for it, and that call does nothing of its own (a launch it
    /// starts does not run, a write it makes is not made): after the error, make it again.
    pub fn submit(mut self) -> Result<()> {
        let session = self.session;
        let kernel = self.kernel.clone();
        let balancer = self.balancer.take();
        let names = self.arg_names.take();
        match self.execute(balancer, true) {
            Ok(Some(report)) => {
                session.devices.launches.ended_elsewhere(report);
                Ok(())
            }
            Ok(None) => Ok(()),
            Err(e) => Err(name_error(session, &kernel, names, e)),
        }
    }

    /// Run the launch (`Some` report), or with `queue`, queue it where it qualifies (`None`).
    fn execute(self, balancer: Option<Box<dyn Balancer>>, queue: bool) -> Result<Option<Report>> {
        let session = self.session;
        let _one_at_a_time = crate::engine::opencl_lock();
        let t_binary = Instant::now();
        let (mut plan, positions) = self.plan()?;
        let key = HistoryKey::of(&plan, &positions);
        // A launch over a buffer held in windows is never queued (a queued block moves no
        // window) and keeps the learned split, which was chosen while packages had to fit a
        // window; they now run a window at a time, and this is not revisited yet.
        let windowed = plan.any_windowed();
        let previous = session.devices.launches.last(&key);
        // The launch's first run in the session checks each device's first package for
        // writes outside it (see `stray`).
        plan.check_writes = previous.is_none();
        let halos = plan.reads_halos();
        // What the previous run of this launch did, read once for every decision below.
        let history = previous.as_ref().map(balance::History::from_report);
        // A split whose replays lost more to its imbalance than a new cut costs is cut again.
        let owed = session.devices.launches.owed(&key);
        let recut = (previous.as_ref().zip(history.as_ref()))
            .filter(|_| balancer.is_none() && !windowed)
            .and_then(|(p, now)| recut(&plan, p, now, owed, positions.len()));
        // A device failing to enqueue, or hanging, are the faults a queued launch can show.
        let failing = |f: &Fault| matches!(f, Fault::Fail { .. } | Fault::Hang { .. });
        let quiet = plan.faults.iter().all(failing) && session.mirror.is_none() && !windowed;
        if let (true, None, Some(previous), Some(history)) =
            (queue && quiet && recut.is_none(), &balancer, &previous, &history)
        {
            if let Some(history) = replayable(previous, history, halos) {
                let history = follow_latest(history, previous, latest_other(session, &key));
                let blocks = queued::blocks(&history, plan.geo.units, positions.len());
                let needs = blocks.as_ref().and_then(|b| staged::needs(&plan, b));
                if let (Some(blocks), Some(needs)) = (blocks, needs) {
                    let limit = coordinator::replay_limit(plan.watchdog, previous.roi_seconds);
                    queued::submit(session, plan, key, blocks, needs, limit, t_binary)?;
                    return Ok(None);
                }
            }
        }
        // A first launch backs up a probe that outlasts everyone else's work (see `run_state`).
        let first = balancer.is_none() && recut.is_none() && previous.is_none();
        let backups = first && session.mirror.is_none() && !windowed && may_back_up(&plan);
        // Everything queued ends before a launch that may move data or wait for its devices.
        session.devices.drain()?;
        let recut = recut.map(|h| Box::new(balance::Replay::planned(h)) as Box<dyn Balancer>);
        let balancer = balancer.or(recut).unwrap_or_else(|| match (&previous, history) {
            (Some(previous), Some(history)) => learned(previous, history, !windowed, halos),
            // A first launch leaves each device one block, which the next launch can replay
            // where it lies (see `balance::Regions`).
            _ => Box::new(balance::Regions::default()),
        });
        let shared = run_state(session, &positions, balancer, backups);
        let n = positions.len();
        let plan = Arc::new(plan);
        let outcome = {
            let _end = EndOfRun(&shared);
            for (me, &slot) in positions.iter().enumerate() {
                session.workers[slot].send(worker::Task {
                    me,
                    shared: shared.clone(),
                    plan: plan.clone(),
                });
                post_profile_if_behind(session, &shared, &plan, me, slot);
            }
            let built: Vec<bool> = positions
                .iter()
                .map(|&d| !session.devices.list[d].device.info.compiles_at_first_launch())
                .collect();
            let outcome =
                coordinator::coordinate(&shared, n, plan.geo.units, plan.watchdog, &built);
            shared.close();
            outcome
        };
        let lost = settle(session, &shared, &positions, plan.watchdog);
        if outcome.is_err() || lost.is_some() {
            plan.forget_unwritten();
        }
        outcome.map_err(|e| session.devices.naming_other_losses(e))?;
        let mut report = crate::engine::run::report_of(
            &shared,
            &plan.kernel,
            0..plan.geo.units,
            positions.iter().map(|&d| &session.devices.list[d].device.info).collect(),
            t_binary,
        )?;
        report.transfers = plan.moved_per_argument();
        if let Some(e) = lost {
            return Err(session.devices.naming_other_losses(e));
        }
        let count = session.launches.fetch_add(1, Ordering::Relaxed) + 1;
        if session.mirror.is_some_and(|k| count.is_multiple_of(u64::from(k))) {
            report.transfers.extend(transfer::sync_all(&session.live_buffers())?);
        }
        let split = balance::History::from_report(&report);
        session.devices.launches.set_latest(key.clone(), split);
        session.devices.launches.ran(key, report.clone());
        Ok(Some(report))
    }

    /// Every argument checked (kernel signature, session, lengths and patterns) into the plan
    /// the device threads run, and the session positions of the launch's working devices.
    fn plan(self) -> Result<(WorkPlan, Vec<usize>)> {
        let session = self.session;
        let geo = Geometry::new(&self.global, &self.local)?;
        if !session.kernel_names.contains(&self.kernel) {
            return Err(Error::NoSuchKernel {
                name: self.kernel,
                file: session.source_name.clone(),
                available: session.kernel_names.join(", "),
            });
        }
        let host: Vec<_> =
            self.args.iter().zip(&self.types).map(|(a, t)| host_arg(a, *t)).collect();
        session.signatures.check(&self.kernel, &host)?;
        let positions: Vec<usize> =
            (0..session.devices.list.len()).filter(|&d| !session.devices.is_dead(d)).collect();
        if positions.is_empty() {
            return Err(Error::AllDevicesFailed(
                session
                    .failed_devices()
                    .into_iter()
                    .map(|(device, reason)| crate::error::DeviceFault {
                        device,
                        name: session.devices.list[device].device.info.name.clone(),
                        reason,
                    })
                    .collect(),
            ));
        }
        crate::engine::plan::validate(&self.watchdog, None, &self.faults, positions.len())?;
        if let Some(f) = self.faults.iter().find(|f| matches!(f, Fault::HangReadBack { .. })) {
            return Err(Error::BadConfig(format!(
                "fault {f:?}: a session launch reads nothing back (outputs stay on the devices)"
            )));
        }
        if let Some(f) = self.faults.iter().find(|f| matches!(f, Fault::SlowSetup { .. })) {
            return Err(Error::BadConfig(format!(
                "fault {f:?}: a session's devices are set up once, when the session starts"
            )));
        }
        let mut args = Vec::with_capacity(self.args.len() + 1);
        for (index, a) in self.args.into_iter().enumerate() {
            args.push(check_arg(session, &geo, index, a)?);
        }
        if session.ndrange_param.contains(&self.kernel) {
            let mut sizes = [1u64; 4];
            for (s, g) in sizes.iter_mut().zip(&geo.global) {
                *s = *g as u64;
            }
            args.push(SArg::Scalar { index: args.len(), bytes: bytes_of(&sizes).to_vec() });
        }
        // A halo of r reaches r rows (2-D) or r planes (3-D): every faster dimension whole.
        let row_len = geo.row_len();
        // Each `__global` pointer's hidden window offset comes after every other argument.
        let pointers = session.pointers.get(&self.kernel).cloned().unwrap_or_default();
        let offsets = pointers.iter().enumerate().map(|(k, &i)| (i, args.len() + k)).collect();
        let slots = positions.clone();
        let moved = Mutex::new(vec![Moved::default(); args.len()]);
        let wrote = Mutex::new(vec![RangeSet::new(); args.len()]);
        let plan = WorkPlan {
            kernel: self.kernel,
            geo,
            args,
            faults: self.faults,
            warmup: self.warmup,
            wait: self.wait,
            watchdog: self.watchdog,
            hold: session.mirror.is_some(),
            offsets,
            row_len,
            slots,
            devices: Arc::clone(&session.devices),
            moved,
            wrote,
            check_writes: false,
        };
        Ok((plan, positions))
    }
}

/// An argument's error named by the kernel's signature, and by the declaration's parameter
/// names where the DSL gave them.
fn name_error(
    session: &Session,
    kernel: &str,
    names: Option<&'static [&'static str]>,
    e: Error,
) -> Error {
    let e = session.signatures.name_argument(kernel, e);
    match names {
        Some(names) => crate::__private::name_argument(e, names),
        None => e,
    }
}

/// One argument checked: a buffer of this session whose length fits its pattern.
fn check_arg(session: &Session, geo: &Geometry, index: usize, a: Given) -> Result<SArg> {
    let bad = |reason: String| Error::BadArgument { index, reason };
    let (core, pattern, dir) = match a {
        Given::Scalar(bytes) => return Ok(SArg::Scalar { index, bytes }),
        Given::Local(0) => return Err(bad("a __local buffer of 0 bytes".into())),
        Given::Local(bytes) => return Ok(SArg::Local { index, bytes }),
        Given::Buffer { core, pattern, dir } => (core, pattern, dir),
    };
    if core.devices.id != session.devices.id {
        return Err(bad(format!(
            "session buffer {} belongs to another session; a buffer lives on its own session's \
             devices (read it with to_vec and make a buffer of this session)",
            core.index
        )));
    }
    let elems = core.len as u64;
    let total = geo.total_items();
    match pattern {
        Pattern::Whole if dir.writes() => return Err(bad(
            "an output cannot be `whole`: each device would write all of it; give it a pattern a:b"
                .into(),
        )),
        Pattern::Halo { .. } if dir.writes() => {
            return Err(bad(format!(
                "pattern {pattern} is read-only: a halo overlaps its neighbours' packages; give \
                 the output 1:1"
            )))
        }
        Pattern::Whole => {}
        Pattern::Ratio { .. } | Pattern::Halo { .. } => {
            pattern.check_granularity(geo.items_per_unit).map_err(bad)?;
            if let Some(need) = pattern.required_len(total).map_err(bad)?.filter(|&n| n != elems) {
                return Err(bad(format!(
                    "session buffer {} has {elems} elements but pattern {pattern} over {total} \
                     work-items needs {need}{}",
                    core.index,
                    crate::engine::plan::rounded_up(geo, pattern, elems, need)
                )));
            }
        }
    }
    Ok(SArg::Buffer { index, core, pattern, dir })
}

fn host_arg(a: &Given, ty: HostType) -> hetdsl_decl::argcheck::HostArg {
    use hetdsl_decl::argcheck::HostArg;
    match a {
        Given::Buffer { dir, .. } => {
            let (writes, reads) = (dir.writes(), dir.reads());
            HostArg::Buffer { ty: Some(ty), writes, reads, merged: None }
        }
        Given::Scalar(bytes) => HostArg::Scalar { ty: Some(ty), size: bytes.len() },
        Given::Local(_) => HostArg::Local { ty: Some(ty) },
    }
}

/// The split of the launch run or queued last in `session`, where it was of another kernel
/// over the same devices as `key`.
fn latest_other(session: &Session, key: &HistoryKey) -> Option<balance::History> {
    let (k, split) = session.devices.launches.latest()?;
    (k.kernel != key.kernel && k.devices == key.devices).then_some(split)
}

/// Whether a package may run twice at once: a back-up copy reads an in-place buffer's range
/// where it is fresh, and the running copy has begun to overwrite it on its own device, so
/// only the host's image can serve it.
fn may_back_up(plan: &WorkPlan) -> bool {
    let overwritten = |a: &SArg| match a {
        SArg::Buffer { core, dir: Direction::InOut, .. } => !core.fresh_on_host(),
        _ => false,
    };
    !plan.args.iter().any(overwritten)
}

/// The state a launch run to its end shares with its device threads. With `backups` (a
/// first launch) a device whose probe outlasts everyone else's work is backed up (a CPU's 32
/// NBody work-groups ran 92 ms, the two H100s' share 11 ms): the launch keeps the faster copy
/// and does not wait for the other. Later launches replay blocks.
fn run_state(
    session: &Session,
    positions: &[usize],
    balancer: Box<dyn Balancer>,
    backups: bool,
) -> Arc<Shared> {
    let name = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| balancer.name()))
        .unwrap_or_else(|_| "(a user balancer whose name() panicked)".into());
    let names: Vec<String> =
        positions.iter().map(|&d| session.devices.list[d].device.info.name.clone()).collect();
    // Only a faster device copies a slower one's package: the copy that matters is a GPU's of
    // a CPU's probe, and a CPU copying an uploading GPU's package kept working in a launch it
    // should have sat out (Jacobi then ran 0.64 ms a sweep, not 0.57).
    let backups = balance::dispatch::Config { backups, faster_only: true };
    Arc::new(Shared::new(names, balancer, name, backups, false))
}

/// A device whose thread still computes the losing copy of an earlier launch's back-up
/// reports its set-up, its profile with it, only once that copy ends (a CPU's NBody probe,
/// 80 ms after the GPUs' launch ended): its profile, made here from its description, lets the
/// launch start without it, and it joins when its thread is back (or never, if the launch
/// ended by then).
fn post_profile_if_behind(
    session: &Session,
    shared: &Shared,
    plan: &WorkPlan,
    me: usize,
    slot: usize,
) {
    let device = &session.devices.list[slot];
    if device.behind.lock().unwrap_or_else(|e| e.into_inner()).is_none() {
        return;
    }
    let local: u64 = (plan.args.iter())
        .map(|a| match a {
            SArg::Local { bytes, .. } => *bytes as u64,
            _ => 0,
        })
        .sum();
    let profile = device_profile(&device.device, &plan.geo, &plan.kernel, local);
    shared.profile_known(me, profile);
}

/// After a launch: wait (bounded) for every device thread to be back; a device that failed, or
/// whose thread is still out, leaves the session, and the ranges only it held are lost. Returns
/// the error naming them, if any.
fn settle(
    session: &Session,
    shared: &Shared,
    positions: &[usize],
    watchdog: WatchdogConfig,
) -> Option<Error> {
    let waited = Instant::now();
    let bound = watchdog.min.min(Duration::from_secs(10));
    // A thread computing the losing copy of a back-up (this launch's, or an earlier one's
    // that kept it from beginning this launch, within the bound) is not waited for: its
    // output is never merged, and whatever this device does next waits for it on its thread.
    let behind = |me: usize| {
        let device = &session.devices.list[positions[me]];
        let since = *device.behind.lock().unwrap_or_else(|e| e.into_inner());
        shared.left_behind(me, since.is_some_and(|t| t.elapsed() < bound))
    };
    let back = |me: usize| shared.quiet[me].load(Ordering::Acquire) || behind(me);
    while !(0..positions.len()).all(back) && waited.elapsed() < bound {
        // The threads are usually back within microseconds of the coordinator: a sleep here
        // (100 µs asked, more given) was a tenth of a millisecond-long sweep's launch.
        if waited.elapsed() < Duration::from_millis(2) {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(100));
        }
    }
    let mut error = None;
    for (me, &slot) in positions.iter().enumerate() {
        if shared.alive(me) && !shared.quiet[me].load(Ordering::Acquire) && behind(me) {
            let mut since =
                session.devices.list[slot].behind.lock().unwrap_or_else(|e| e.into_inner());
            since.get_or_insert_with(Instant::now);
            // The thread clears it after it is back: back already, it may have cleared it.
            if shared.quiet[me].load(Ordering::Acquire) {
                *since = None;
            }
            continue;
        }
        let reason = if !back(me) {
            Some("its host thread did not come back from its driver".to_string())
        } else if !shared.alive(me) {
            Some("it failed during a launch".to_string())
        } else {
            None
        };
        if let Some(e) = reason.and_then(|r| session.devices.drop_device(slot, r)) {
            error.get_or_insert(e);
        }
    }
    error
}
