//! A session device's persistent host thread and the session's handle on it: launches hand it
//! tasks (a synchronous launch's share, see `worker`) and queued launches' packages (see
//! `enqueue`) through a channel, in order; the session's drop ends it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;

use opencl3::program::Program as ClProgram;

use super::worker::{task, Task, Worker};
use crate::engine::program::ProgramDevice;
use crate::engine::shared::panic_message;
use crate::error::{Error, Result};

enum Msg {
    Task(Box<Task>),
    /// A queued launch's packages: enqueue them and answer at once (see `queued`).
    Enqueue(Box<super::enqueue::Job>),
    Quit,
}

/// The session's end of a device thread.
pub(crate) struct Handle {
    tx: Option<Sender<Msg>>,
    thread: Option<JoinHandle<()>>,
    /// Messages handed to the thread and not yet done with: a count, since a thread an earlier
    /// launch left behind may have this launch's task queued behind the one it is on.
    busy: Arc<AtomicUsize>,
}

impl Handle {
    pub(crate) fn start(
        slot: usize,
        device: ProgramDevice,
        program: Arc<ClProgram>,
    ) -> Result<Handle> {
        let (tx, rx) = channel();
        let busy = Arc::new(AtomicUsize::new(0));
        let b = busy.clone();
        let thread = std::thread::Builder::new()
            .name(format!("hetdsl-session-dev{slot}"))
            .spawn(move || thread_main(slot, device, program, rx, b))
            .map_err(|e| Error::BadConfig(format!("cannot start a device thread: {e}")))?;
        Ok(Handle { tx: Some(tx), thread: Some(thread), busy })
    }

    /// Hand the thread a task; a thread that is gone sets up as failed, so the run goes on.
    pub(crate) fn send(&self, task: Task) {
        let (me, shared) = (task.me, task.shared.clone());
        if !self.hand(Msg::Task(Box::new(task))) {
            shared.quiet[me].store(true, Ordering::Release);
            shared.setup_failed(me, "its host thread is gone".into());
        }
    }

    /// Hand the thread a queued launch's packages; `false` if the thread is gone.
    pub(super) fn enqueue(&self, job: super::enqueue::Job) -> bool {
        self.hand(Msg::Enqueue(Box::new(job)))
    }

    /// Send `msg`, counted busy until the thread is done with it; `false` if the thread is gone.
    fn hand(&self, msg: Msg) -> bool {
        self.busy.fetch_add(1, Ordering::AcqRel);
        let sent = self.tx.as_ref().is_some_and(|tx| tx.send(msg).is_ok());
        if !sent {
            self.busy.fetch_sub(1, Ordering::AcqRel);
        }
        sent
    }

    /// Whether the thread has done with every message handed to it.
    pub(crate) fn idle(&self) -> bool {
        self.busy.load(Ordering::Acquire) == 0
    }

    /// End the thread: joined if idle and `may_join`, else left to end on its own (it may still
    /// be out in a driver). Whether it was joined. Only a caller not holding the OpenCL lock
    /// may join: the thread takes it to release its objects, and so may a task it is still
    /// letting go of (a buffer's last holder releases the buffer under that lock).
    pub(crate) fn stop(&mut self, may_join: bool) -> bool {
        let Some(tx) = self.tx.take() else { return true };
        if !may_join || !self.idle() {
            drop(tx);
            drop(self.thread.take());
            return false;
        }
        let _ = tx.send(Msg::Quit);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        true
    }
}

fn thread_main(
    slot: usize,
    device: ProgramDevice,
    program: Arc<ClProgram>,
    rx: Receiver<Msg>,
    busy: Arc<AtomicUsize>,
) {
    // The caller may hold the OpenCL lock while it waits for this thread.
    crate::engine::lock::never_wait_to_drop();
    let mut w = Worker::new(slot, device, program);
    loop {
        match super::poll::recv_soon(&rx) {
            Ok(Msg::Task(t)) => {
                run_task(w.as_mut(), *t);
                busy.fetch_sub(1, Ordering::AcqRel);
            }
            Ok(Msg::Enqueue(job)) => {
                super::enqueue::run_job(w.as_mut(), *job);
                busy.fetch_sub(1, Ordering::AcqRel);
            }
            // Joined by the session's drop, or left behind by a session that is gone: either
            // way its objects are released under the lock, which the session's drop does not
            // hold while it joins.
            Ok(Msg::Quit) | Err(_) => {
                let _one_at_a_time = crate::engine::opencl_lock();
                drop(w);
                return;
            }
        }
    }
}

fn run_task(w: Option<&mut Worker>, t: Task) {
    let (me, shared) = (t.me, t.shared.clone());
    let (devices, slot) = (Arc::clone(&t.plan.devices), t.plan.slots[me]);
    match w {
        None => shared.setup_failed(me, "its compute queue could not be made".into()),
        Some(w) => {
            let body = std::panic::AssertUnwindSafe(|| task(w, &t));
            if let Err(payload) = std::panic::catch_unwind(body) {
                shared.thread_panicked(me, panic_message(&*payload));
            }
            let _ = w.compute.finish();
        }
    }
    // The task's buffers are let go before the caller hears the thread is back.
    drop(t);
    shared.release_turn(me);
    // Whatever an earlier launch left this thread computing (see `launch::settle`) is done.
    *devices.list[slot].behind.lock().unwrap_or_else(|e| e.into_inner()) = None;
}
