//! The device threads' side of a queued launch (see `queued`): each thread sets its kernel's
//! arguments, writes the moves into its device on its upload queue and enqueues its blocks on
//! its compute queue, the first waiting for those writes, and answers with their events at
//! once; it never waits for a kernel.

use std::sync::mpsc::{channel, Sender};
use std::sync::Arc;
use std::time::Instant;

use opencl3::event::Event;
use opencl3::kernel::Kernel;
use opencl3::types::cl_event;

use super::poll::recv_soon;
use super::staged;
use super::worker::{bind_windows, enqueue_kernel, set_up, PackageError, Plan, Worker};
use super::Session;
use crate::engine::Fault;
use crate::work::Package;

/// What a device thread enqueues for a queued launch.
pub(crate) struct Job {
    plan: Arc<Plan>,
    me: usize,
    packages: Vec<Package>,
    /// The moves into this device's memory, which its first kernel waits for.
    writes: Vec<staged::Write>,
    /// An injected failure (testing): the device cannot enqueue.
    fail: bool,
    reply: Sender<std::result::Result<Enqueued, String>>,
    /// When the host handed it over (the thread's wake-up is traced from it).
    sent: Instant,
}

/// A device's answer to a queued launch: its kernels' events, then its moves'.
type Enqueued = (Vec<Event>, Vec<Event>);

/// On the device thread: set the kernel's arguments, enqueue every package, answer with their
/// events; never wait for a kernel.
pub(super) fn run_job(w: Option<&mut Worker>, job: Job) {
    let answer = match w {
        None => Err("its compute queue could not be made".to_string()),
        Some(w) => enqueue(w, &job),
    };
    // The plan's hold on the buffers goes before the caller hears back: a buffer's last
    // holder releases it under the OpenCL lock, which the session's end holds while it joins
    // this thread.
    let Job { plan, writes, reply, .. } = job;
    drop((plan, writes));
    let _ = reply.send(answer);
}

fn enqueue(w: &mut Worker, job: &Job) -> std::result::Result<Enqueued, String> {
    let plan = &job.plan;
    let kernel = match w.kernels.remove(&plan.kernel) {
        Some(k) => k,
        None => {
            Kernel::create(&w.program, &plan.kernel).map_err(|e| format!("clCreateKernel: {e}"))?
        }
    };
    let out = enqueue_packages(w, job, &kernel);
    w.kernels.insert(plan.kernel.clone(), kernel);
    out
}

fn enqueue_packages(
    w: &mut Worker,
    job: &Job,
    kernel: &Kernel,
) -> std::result::Result<Enqueued, String> {
    let plan = &job.plan;
    if job.fail {
        return Err("injected failure (CL_OUT_OF_RESOURCES)".into());
    }
    let woke = job.sent.elapsed();
    set_up(w, job.me, plan, kernel).map_err(|e| e.to_string())?;
    let set = job.sent.elapsed();
    let upload = w.upload.as_ref().unwrap_or(&w.compute);
    let moves = staged::enqueue_writes(upload, w.slot, &job.writes).map_err(|e| e.to_string())?;
    if !job.writes.is_empty() {
        upload.flush().map_err(|e| format!("flush failed: {e}"))?;
    }
    let written = job.sent.elapsed();
    let moved: Vec<cl_event> = moves.iter().map(Event::get).collect();
    let why = |e: PackageError| match e {
        PackageError::Device(r) => r,
        PackageError::Run(e) => e.to_string(),
        PackageError::Over => "the launch ended".to_string(),
    };
    let mut events = Vec::with_capacity(job.packages.len());
    let mut bound = None;
    for (i, &p) in job.packages.iter().enumerate() {
        bind_windows(w, plan, kernel, p).map_err(why)?;
        bound.get_or_insert_with(|| job.sent.elapsed());
        // The first kernel waits for the moves; the rest follow it on the in-order queue.
        let wait = if i == 0 { &moved[..] } else { &[] };
        events.push(enqueue_kernel(w, plan, kernel, p, wait)?);
    }
    let kernels = job.sent.elapsed();
    w.compute.flush().map_err(|e| format!("flush failed: {e}"))?;
    trace_job(w.slot, [woke, set, written, bound.unwrap_or(written), kernels, job.sent.elapsed()]);
    Ok((events, moves))
}

/// A device thread's time on a queued launch, phase by phase, as a debug event (microseconds
/// from the host's hand-over): woken, arguments set, moves written, the first package's buffers
/// bound, kernels enqueued, flushed.
fn trace_job(slot: usize, at: [std::time::Duration; 6]) {
    let us = |i: usize| at[i].as_secs_f64() * 1e6;
    let _ = std::panic::catch_unwind(|| {
        tracing::debug!(
            slot,
            woke_us = us(0),
            set_up_us = us(1),
            written_us = us(2),
            bound_us = us(3),
            enqueued_us = us(4),
            flushed_us = us(5),
            "queued job"
        )
    });
}

/// Every device's answer to a queued launch, per launch position.
pub(super) struct Answers {
    /// Its kernels' events.
    pub(super) events: Vec<Vec<Event>>,
    /// Its moves' writes.
    pub(super) moves: Vec<Vec<Event>>,
    /// The positions that could not enqueue, with why.
    pub(super) failed: Vec<(usize, String)>,
}

/// Hand every device thread its writes and blocks and collect the answers.
pub(super) fn everywhere(
    session: &Session,
    plan: &Arc<Plan>,
    blocks: &[Vec<Package>],
    writes: Vec<Vec<staged::Write>>,
) -> Answers {
    let slots = &plan.slots;
    let mut replies = Vec::new();
    let each = slots.iter().zip(blocks).zip(writes);
    for (me, ((&slot, packages), writes)) in each.enumerate() {
        let (reply, answer) = channel();
        let mine = |f: &&Fault| crate::engine::plan::fault_device(f) == me;
        let fail = plan.faults.iter().filter(mine).any(|f| matches!(f, Fault::Fail { .. }));
        // A device with nothing to run or receive is not woken (its answer, no events, is
        // given here): its thread's round trip and its driver's flush would only lengthen the
        // host's time per launch.
        if packages.is_empty() && writes.is_empty() && !fail {
            let _ = reply.send(Ok((Vec::new(), Vec::new())));
            replies.push(Some(answer));
            continue;
        }
        let packages = packages.clone();
        let job =
            Job { plan: plan.clone(), me, packages, writes, fail, reply, sent: Instant::now() };
        let sent = session.workers[slot].enqueue(job);
        replies.push(if sent { Some(answer) } else { None });
    }
    let (mut events, mut moves) = (Vec::new(), Vec::new());
    let mut failed = Vec::new();
    for (pos, answer) in replies.into_iter().enumerate() {
        let got = answer.map_or(Err("its host thread is gone".to_string()), |a| {
            recv_soon(&a).unwrap_or_else(|_| Err("its host thread is gone".to_string()))
        });
        let (evs, mvs) = got.unwrap_or_else(|reason| {
            failed.push((pos, reason));
            (Vec::new(), Vec::new())
        });
        events.push(evs);
        moves.push(mvs);
    }
    Answers { events, moves, failed }
}
