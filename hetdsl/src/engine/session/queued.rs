//! Queued launches: [`SessionLaunch::submit`](super::SessionLaunch::submit) of a launch that
//! replays the previous balanced split of the same launch needs no decision while it runs.
//! The input ranges its devices lack are staged first (see `staged`: from the host image, or
//! read from the device holding them once that device's last queued kernel has ended); then
//! every device thread enqueues its writes and its blocks on its in-order queue and `submit`
//! returns, so the devices run launch after launch with no host round trip between them where
//! nothing moves (a loop of such launches runs like a hand-written enqueue loop), and with one
//! wait for the sources' last kernels where halos or gathered inputs move.
//!
//! Why it stays correct without waiting for the launch:
//! - the residency is updated when the launch is queued (moved ranges fresh where they went,
//!   outputs fresh only on the device that computes them); a later kernel on that device is
//!   ordered after it by the queue, and a later move out of it waits for its last kernel;
//! - anything else that touches device memory (a launch run to its end, a host read or write,
//!   `sync`, `finish`, the session's end) first waits for every queued launch (`drain`);
//! - a device whose queued kernel fails leaves the session, and what only it held (its queued
//!   outputs included) is reported lost by the next of those calls, never served stale.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use opencl3::event::Event;
use opencl3::types::cl_event;

use super::buffer::BufferCore;
use super::enqueue::{self, Answers};
use super::launch::HistoryKey;
use super::order;
use super::poll::{complete, wait_bounded, Waited};
use super::staged::{self, InFlight, Need};
use super::worker::{Plan, SArg};
use super::{Devices, Session};
use crate::balance::dispatch::DeviceStats;
use crate::engine::Fault;
use crate::error::{Error, Result};
use crate::report::{BufferMoved, Moved, PackageTrace, Report, RunRecord, Transfer};
use crate::work::Package;

/// The balancer a queued launch's report names: its split is the replayed one.
const BALANCER: &str = "replay(queued)";

/// Launches queued and not yet drained beyond which `submit` waits for the oldest: bounds the
/// events and reports held, and how far the host runs ahead of the devices.
const MAX_QUEUED: usize = 32;

/// Reports kept for [`Session::finish`](super::Session::finish); older ones are dropped (a
/// loop of a million submits must not keep a million reports).
const MAX_REPORTS: usize = 4096;

/// A session's launches: those queued on the devices, the reports not yet taken, and the last
/// report of each launch (what the next one learns from).
#[derive(Default)]
pub(crate) struct Launches {
    pending: Mutex<VecDeque<Queued>>,
    reports: Mutex<VecDeque<Report>>,
    pub(crate) history: Mutex<HashMap<HistoryKey, Report>>,
    /// Per launch, the kernel time its replays have lost to their split's imbalance since the
    /// split was last cut (`split::recut`).
    owed: Mutex<HashMap<HistoryKey, f64>>,
    /// The split of the launch run or queued last, whichever kernel (`split::follow_latest`).
    latest: Mutex<Option<(HistoryKey, crate::balance::History)>>,
}

impl Launches {
    pub(crate) fn last(&self, key: &HistoryKey) -> Option<Report> {
        self.history.lock().unwrap_or_else(|e| e.into_inner()).get(key).cloned()
    }

    /// A launch ended: it is what the next one of the same key learns from, and `finish`
    /// hands its report out.
    fn ended(&self, key: HistoryKey, report: Report) {
        self.ran(key, report.clone());
        self.ended_elsewhere(report);
    }

    /// The split of the launch run or queued last, and its key.
    pub(crate) fn latest(&self) -> Option<(HistoryKey, crate::balance::History)> {
        self.latest.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// `key`'s launch was just run, or queued, with `split`.
    pub(crate) fn set_latest(&self, key: HistoryKey, split: crate::balance::History) {
        *self.latest.lock().unwrap_or_else(|e| e.into_inner()) = Some((key, split));
    }

    /// What the replays of `key`'s split have lost to its imbalance since it was cut.
    pub(crate) fn owed(&self, key: &HistoryKey) -> f64 {
        self.owed.lock().unwrap_or_else(|e| e.into_inner()).get(key).copied().unwrap_or(0.0)
    }

    /// A launch ran: the next one of the same key learns from it, and what it lost to its
    /// split's imbalance is counted (a replay adds to it; a split cut afresh clears it).
    pub(crate) fn ran(&self, key: HistoryKey, report: Report) {
        {
            let mut owed = self.owed.lock().unwrap_or_else(|e| e.into_inner());
            if report.balancer.starts_with("replay") {
                *owed.entry(key.clone()).or_default() += super::split::imbalance_loss(&report);
            } else {
                owed.remove(&key);
            }
        }
        self.remember(key, report);
    }

    /// A launch run to its end: the next one of the same key learns from it.
    pub(crate) fn remember(&self, key: HistoryKey, report: Report) {
        self.history.lock().unwrap_or_else(|e| e.into_inner()).insert(key, report);
    }

    /// A submitted launch that ran to its end (it did not qualify to be queued): its report
    /// waits in line for `finish` with the queued ones.
    pub(crate) fn ended_elsewhere(&self, report: Report) {
        let mut reports = self.reports.lock().unwrap_or_else(|e| e.into_inner());
        if reports.len() == MAX_REPORTS {
            reports.pop_front();
        }
        reports.push_back(report);
    }

    pub(crate) fn take_reports(&self) -> Vec<Report> {
        self.reports.lock().unwrap_or_else(|e| e.into_inner()).drain(..).collect()
    }
}

/// One queued launch, until it is seen to end.
struct Queued {
    key: HistoryKey,
    kernel: String,
    balancer: String,
    units: u64,
    /// Session position of each launch position.
    slots: Vec<usize>,
    packages: Vec<Vec<Package>>,
    events: Vec<Vec<Event>>,
    /// Per launch position, its moves' writes (its first kernel waits for them).
    moves: Vec<Vec<Event>>,
    /// The earlier launches' events those writes wait for, retained until this one ends (only
    /// held, never read).
    _held: Vec<Event>,
    transfers: Vec<BufferMoved>,
    /// The moves' host memory, which the devices' writes read until the launch has ended;
    /// its pinned part goes back to the session's pool then.
    staging: InFlight,
    /// The buffers whose host image a write reads directly (no pinned staging was idle): the
    /// caller may drop its `Buffer` once `submit` returns, and the write may still be reading.
    _sources: Vec<Arc<BufferCore>>,
    /// What it made fresh where, and after which package: what a later move waits for.
    touched: Vec<order::Touch>,
    /// What its packages read, and which: a later move into those ranges waits for them.
    reads: Vec<order::Touch>,
    /// How long the host waits for its kernels before it judges a device hung: the
    /// watchdog's floor plus its factor times the replayed launch's time.
    limit: Duration,
    /// Per launch position: an injected hang (testing), its kernels never seen to end.
    hangs: Vec<bool>,
    submitted: Instant,
    binary_seconds: f64,
}

impl Devices {
    /// Wait for every queued launch to end (the caller holds the OpenCL lock). A device whose
    /// kernel failed leaves the session; the error names what only it held.
    pub(crate) fn drain(&self) -> Result<()> {
        self.settle(usize::MAX, true)
    }

    /// Settle the queued launches that have ended, without waiting, then wait for the oldest
    /// while more than `keep` are queued.
    fn settle(&self, keep: usize, wait_all: bool) -> Result<()> {
        let mut first_error = None;
        loop {
            let next = {
                let mut pending = self.launches.pending.lock().unwrap_or_else(|e| e.into_inner());
                let ended = pending.front().is_some_and(|q| {
                    let mut all = q.events.iter().chain(&q.moves).flatten();
                    wait_all || pending.len() > keep || all.all(complete)
                });
                if ended {
                    pending.pop_front()
                } else {
                    None
                }
            };
            let Some(q) = next else { break };
            if let Err(e) = self.end_queued(q) {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Wait for a queued launch's kernels; its report (device time) goes to the history.
    fn end_queued(&self, mut q: Queued) -> Result<()> {
        let mut error = None;
        let mut failed = Vec::new();
        let since = Instant::now();
        let mut hung = false;
        for (pos, events) in q.events.iter().enumerate() {
            // An injected hang (testing) is a device whose kernels the host never sees end.
            let waited = if q.hangs[pos] {
                std::thread::sleep(q.limit.saturating_sub(since.elapsed()));
                Err(Waited::Hung)
            } else {
                wait_bounded(events, q.limit, since)
                    .and_then(|()| wait_bounded(&q.moves[pos], q.limit, since))
            };
            match waited {
                Ok(()) => {}
                Err(Waited::Failed(e)) => {
                    failed.push((pos, format!("a queued kernel failed: {e}")))
                }
                Err(Waited::Hung) => {
                    hung = true;
                    let s = q.limit.as_secs_f64();
                    let why = format!("a queued kernel did not end {s:.1} s after the host began waiting for it (hung in its driver?)");
                    failed.push((pos, why));
                }
            }
        }
        if hung || !failed.is_empty() {
            // Its writes may still read the staged bytes whenever the device moves again.
            std::mem::forget(std::mem::take(&mut q.staging));
        } else {
            // Every write has ended: each position's kernels follow its writes in its queue.
            self.pinned.give_back(self, std::mem::take(&mut q.staging));
        }

        for (pos, reason) in &failed {
            if let Some(e) = self.drop_device(q.slots[*pos], reason.clone()) {
                error.get_or_insert(e);
            }
        }
        if !failed.is_empty() {
            let error = error.map(|e| self.naming_other_losses(e));
            return Err(error.unwrap_or_else(|| {
                Error::AllDevicesFailed(
                    failed
                        .into_iter()
                        .map(|(pos, reason)| crate::error::DeviceFault {
                            device: q.slots[pos],
                            name: self.list[q.slots[pos]].device.info.name.clone(),
                            reason,
                        })
                        .collect(),
                )
            }));
        }
        let report = self.report_of(&q);
        self.launches.ended(q.key, report);
        Ok(())
    }

    /// A queued launch's report, from the devices' profiling clocks: each device's packages
    /// laid out from its first kernel's start (clocks of different devices do not compare).
    fn report_of(&self, q: &Queued) -> Report {
        let mut stats = Vec::new();
        let mut trace = Vec::new();
        for (pos, (packages, events)) in q.packages.iter().zip(&q.events).enumerate() {
            let times: Vec<Option<(u64, u64)>> = events.iter().map(profile).collect();
            let first = times.iter().flatten().map(|t| t.0).min().unwrap_or(0);
            if let Some(last) = times.iter().flatten().map(|t| t.1).max() {
                trace_kernels(q.slots[pos], events, first, last);
            }
            let mut st = DeviceStats::default();
            for (p, t) in packages.iter().zip(&times) {
                let (start, end) = t.map_or((0.0, 0.0), |(s, e)| {
                    ((s - first) as f64 * 1e-9, (e.max(s) - first) as f64 * 1e-9)
                });
                let seconds = t.map(|_| end - start);
                st.packages += 1;
                st.ran += 1;
                st.groups += p.len;
                st.ran_groups += p.len;
                st.busy += seconds.unwrap_or(0.0);
                st.ran_busy += seconds.unwrap_or(0.0);
                st.finish = st.finish.max(end);
                trace.push(PackageTrace {
                    device: pos,
                    package: *p,
                    host_start: start,
                    host_end: end,
                    kernel_seconds: seconds,
                    written: Transfer::default(),
                    read: Transfer::default(),
                    merged: true,
                    idle_before: None,
                });
            }
            st.speed = (st.busy > 0.0).then(|| st.groups as f64 / st.busy);
            stats.push(st);
        }
        let mut report = Report::of_run(RunRecord {
            kernel: q.kernel.clone(),
            balancer: q.balancer.clone(),
            groups: 0..q.units,
            devices: q
                .slots
                .iter()
                .zip(&stats)
                .map(|(&s, st)| {
                    let info = &self.list[s].device.info;
                    (info.name.clone(), info.kind, st)
                })
                .collect(),
            trace,
            roi_start: q.submitted,
            binary_seconds: q.binary_seconds,
            faults: Vec::new(),
            backups: Vec::new(),
        });
        report.transfers = q.transfers.clone();
        report
    }
}

/// A queued launch's kernels on one device as a debug event, on the device's clock (clocks of
/// different devices do not compare): their span (from one launch's end to the next one's
/// start, what the device idled between queued launches), and from the first one's enqueue to
/// its start (what the driver adds once the host has enqueued; after a busy queue, the wait).
fn trace_kernels(slot: usize, events: &[Event], first: u64, last: u64) {
    if !tracing::enabled!(tracing::Level::DEBUG) {
        return;
    }
    let queued_ns = events.first().and_then(|e| e.profiling_command_queued().ok());
    let to_start_ns = queued_ns.map_or(0, |q| first.saturating_sub(q));
    let _ = std::panic::catch_unwind(|| {
        tracing::debug!(
            slot,
            first_start_ns = first,
            last_end_ns = last,
            to_start_ns,
            "queued kernels"
        );
    });
}

fn profile(ev: &Event) -> Option<(u64, u64)> {
    let start = ev.profiling_command_start().ok()?;
    let end = ev.profiling_command_end().ok()?;
    (start > 0).then_some((start, end))
}

/// The split to queue a repeated launch with: the previous run's blocks, one package each,
/// when they tile the range over the same devices.
pub(super) fn blocks(
    history: &crate::balance::History,
    units: u64,
    devices: usize,
) -> Option<Vec<Vec<Package>>> {
    if !crate::balance::replay::tiles(history, units, devices) {
        return None;
    }
    Some(
        history
            .devices
            .iter()
            .map(|d| {
                d.owned.iter().map(|r| Package { offset: r.start, len: r.end - r.start }).collect()
            })
            .collect(),
    )
}

/// `blocks` (one package per block, per device) as a history of `units`, with no speeds.
fn split_of(blocks: &[Vec<Package>], units: u64) -> crate::balance::History {
    let runs = blocks.iter().enumerate().flat_map(|(device, b)| {
        b.iter().map(move |&package| crate::balance::Ran {
            device,
            package,
            seconds: 0.0,
            merged: true,
        })
    });
    crate::balance::History::from_runs(units, blocks.len(), runs)
}

/// Queue the launch: the moves its devices need start (see `staged`), every device thread
/// enqueues its writes and blocks; then the moved ranges are fresh where they went and the
/// outputs fresh only where they are computed. A device that cannot enqueue leaves the session
/// (what only it held is lost, its blocks' outputs included) after the others' work ends.
pub(super) fn submit(
    session: &Session,
    plan: Plan,
    key: HistoryKey,
    blocks: Vec<Vec<Package>>,
    needs: Vec<Need>,
    limit: Duration,
    t_binary: Instant,
) -> Result<()> {
    let devices = &session.devices;
    let began = Instant::now();
    devices.settle(MAX_QUEUED - 1, false)?;
    devices.launches.set_latest(key.clone(), split_of(&blocks, plan.geo.units));
    let settled = began.elapsed();
    let blocks = order::edges_first(&plan, blocks);
    let plan = Arc::new(plan);
    let slots = plan.slots.clone();
    let arrivals: Vec<_> = needs.iter().map(|n| (n.core.clone(), n.pos, n.range.clone())).collect();
    // The moves are staged, and each made to wait for what still uses its range on its device,
    // under one look at the queued launches.
    let started = {
        let pending = devices.launches.pending.lock().unwrap_or_else(|e| e.into_inner());
        let producer = |slot, buffer, range: &_| producer(&pending, slot, buffer, range);
        staged::start(devices, &slots, needs, producer).map(|mut s| {
            let held = after_users(&pending, &slots, &mut s.writes);
            (s, held)
        })
    };
    let (staged::Started { flight, writes, moved }, held) = match started {
        Ok(s) => s,
        Err((from, e)) => {
            devices.drain()?;
            let lost = devices.drop_device(from, format!("cannot read a move from it: {e}"));
            return Err(lost.map_or(e, |l| devices.naming_other_losses(l)));
        }
    };
    let staged_at = began.elapsed();
    let sources: Vec<Arc<BufferCore>> = writes.iter().flatten().map(|w| w.core.clone()).collect();
    let Answers { events, moves, failed } = enqueue::everywhere(session, &plan, &blocks, writes);
    let enqueued_at = began.elapsed();
    let moved_in = arrivals.iter().map(|(core, pos, range)| (*pos, core.index, range.clone()));
    let touched = order::touches(&plan, &blocks, moved_in);
    let reads = order::reads(&plan, &blocks);
    order::mark_fresh(&plan, &blocks, arrivals);
    let mut transfers = zero_moved(&plan);
    for (arg, m) in moved {
        if let Some(t) = transfers.iter_mut().find(|t| t.arg == Some(arg)) {
            t.moved += m;
        }
    }
    devices.launches.pending.lock().unwrap_or_else(|e| e.into_inner()).push_back(Queued {
        key,
        kernel: plan.kernel.clone(),
        balancer: BALANCER.to_string(),
        units: plan.geo.units,
        slots: slots.clone(),
        packages: blocks,
        events,
        moves,
        _held: held,
        transfers,
        staging: kept_for_writes(failed.is_empty(), flight),
        _sources: kept_for_writes(failed.is_empty(), sources),
        touched,
        reads,
        limit,
        hangs: (0..slots.len())
            .map(|me| {
                let mine = |f: &&Fault| crate::engine::plan::fault_device(f) == me;
                plan.faults.iter().filter(mine).any(|f| matches!(f, Fault::Hang { .. }))
            })
            .collect(),
        submitted: t_binary,
        binary_seconds: t_binary.elapsed().as_secs_f64(),
    });
    trace_submit(began - t_binary, began, settled, staged_at, enqueued_at);
    if failed.is_empty() {
        return Ok(());
    }
    // The others' work ends first; then the failed devices go, with what only they held.
    let drained = devices.drain();
    let mut error = None;
    for (pos, reason) in failed {
        if let Some(e) = devices.drop_device(slots[pos], format!("cannot enqueue: {reason}")) {
            error.get_or_insert(e);
        }
    }
    drained?;
    error.map_or(Ok(()), |e| Err(devices.naming_other_losses(e)))
}

/// Host memory the devices' writes read, kept by the queued launch until it is drained. A
/// device that failed to enqueue may still have some of its writes in flight, with no event to
/// wait for (and waiting could hang on a dead device): the driver may copy from these bytes at
/// any time, so they are never freed then (a bounded leak, only on a device's failure) rather
/// than freed under a transfer.
fn kept_for_writes<T: Default>(enqueued: bool, memory: T) -> T {
    if enqueued {
        memory
    } else {
        std::mem::forget(memory);
        T::default()
    }
}

/// The host's time per queued launch, phase by phase, as a debug event in milliseconds:
/// deciding to queue it (from the launch's start), then from the submit's start: waiting for
/// the oldest launches to end, staging moves, the devices' enqueues, the whole submit.
fn trace_submit(
    decided: Duration,
    began: Instant,
    settled: Duration,
    staged: Duration,
    enqueued: Duration,
) {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let _ = std::panic::catch_unwind(|| {
        tracing::debug!(
            decided_ms = ms(decided),
            settle_ms = ms(settled),
            staged_ms = ms(staged),
            enqueued_ms = ms(enqueued),
            total_ms = ms(began.elapsed()),
            "queued launch"
        )
    });
}

/// Each write of `writes` (per launch position, of session devices `slots`) made to wait for
/// the queued package on its device that last reads or writes the range it fills. Returns
/// those events, retained: the launch they belong to may end before the writes run.
fn after_users(
    pending: &VecDeque<Queued>,
    slots: &[usize],
    writes: &mut [Vec<staged::Write>],
) -> Vec<Event> {
    let mut held = Vec::new();
    for (pos, ws) in writes.iter_mut().enumerate() {
        for w in ws {
            let Some(ev) = last_user(pending, slots[pos], w.core.index, &w.range) else { continue };
            // SAFETY: `ev` is an event of a launch in `pending`, alive while its lock is held.
            match unsafe { opencl3::event::retain_event(ev) } {
                Ok(()) => {
                    held.push(Event::new(ev));
                    w.after.push(ev);
                }
                // Not retained: wait for it here, as the write would have on one queue.
                Err(_) => {
                    let _ = opencl3::event::wait_for_events(&[ev]);
                }
            }
        }
    }
    held
}

/// The queued kernel on session device `slot` after which nothing queued there reads or
/// writes `range` of `buffer` any more (the newest queued launch that touched it there, its
/// last package that did). `None` when no queued launch touched it there.
fn last_user(
    pending: &VecDeque<Queued>,
    slot: usize,
    buffer: usize,
    range: &std::ops::Range<u64>,
) -> Option<cl_event> {
    newest(pending, slot, |q, pos| order::last_access(&q.touched, &q.reads, pos, buffer, range))
}

/// The queued kernel on session device `slot` after which `range` of buffer `buffer` is final
/// there: in the newest queued launch that wrote or moved in part of it there. `None` when no
/// queued launch touched it there (what made it fresh has ended).
fn producer(
    pending: &VecDeque<Queued>,
    slot: usize,
    buffer: usize,
    range: &std::ops::Range<u64>,
) -> Option<cl_event> {
    newest(pending, slot, |q, pos| order::last_touch(&q.touched, pos, buffer, range))
}

/// The event of the package `which` names (its index among session device `slot`'s packages)
/// in the newest queued launch where it names one.
fn newest(
    pending: &VecDeque<Queued>,
    slot: usize,
    which: impl Fn(&Queued, usize) -> Option<usize>,
) -> Option<cl_event> {
    pending.iter().rev().find_map(|q| {
        let pos = q.slots.iter().position(|&s| s == slot)?;
        let k = which(q, pos)?;
        q.events[pos].get(k).or(q.events[pos].last()).map(Event::get)
    })
}

fn zero_moved(plan: &Plan) -> Vec<BufferMoved> {
    plan.args
        .iter()
        .filter_map(|a| match a {
            SArg::Buffer { index, core, .. } => {
                Some(BufferMoved { buffer: core.index, arg: Some(*index), moved: Moved::default() })
            }
            _ => None,
        })
        .collect()
}
