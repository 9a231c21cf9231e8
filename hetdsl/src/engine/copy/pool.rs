//! The copy pool: threads kept for the process's large host copies, so that a copy split in
//! parts pays no thread start (tens of microseconds a thread, against the 0.6 ms sixteen
//! threads take to copy a 32 MiB staging slot). A caller waiting for its parts copies queued
//! parts itself, so a copy finishes even where the pool has no thread.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How long an idle pool thread polls for a part before it sleeps: a staging ring's next slot
/// comes within it, where a woken thread starts tens of microseconds late. Short, since
/// polling threads take cores from a CPU device's kernels.
const IDLE_SPIN: Duration = Duration::from_micros(50);

/// How long a caller whose parts others copy polls before it sleeps (it has nothing else to
/// do, and a part takes a fraction of a millisecond).
const WAIT_SPIN: Duration = Duration::from_micros(200);

/// One part of a copy: raw, since it crosses threads.
pub(super) struct Part {
    dst: *mut u8,
    src: *const u8,
    len: usize,
    done: Arc<Latch>,
}

// SAFETY: the pointers are only used to copy `len` bytes between memory the caller keeps
// borrowed until the part's latch is down (see `Part::new`).
unsafe impl Send for Part {}

impl Part {
    /// # Safety
    /// `src` and `dst` must be valid for `len` bytes, not overlap each other or any other
    /// part's, and stay valid and untouched by anything else until `done` reaches zero.
    pub(super) unsafe fn new(dst: *mut u8, src: *const u8, len: usize, done: Arc<Latch>) -> Part {
        Part { dst, src, len, done }
    }

    fn copy(self) {
        // SAFETY: as `new` requires.
        unsafe { std::ptr::copy_nonoverlapping(self.src, self.dst, self.len) };
        self.done.count_down();
    }
}

/// How many parts of a copy are still to be copied; its caller waits for zero.
pub(super) struct Latch {
    left: AtomicUsize,
    lock: Mutex<()>,
    zero: Condvar,
}

impl Latch {
    pub(super) fn new(parts: usize) -> Latch {
        Latch { left: AtomicUsize::new(parts), lock: Mutex::new(()), zero: Condvar::new() }
    }

    fn count_down(&self) {
        if self.left.fetch_sub(1, Ordering::AcqRel) == 1 {
            let _held = self.lock.lock().unwrap_or_else(|e| e.into_inner());
            self.zero.notify_all();
        }
    }

    fn is_down(&self) -> bool {
        self.left.load(Ordering::Acquire) == 0
    }
}

struct Pool {
    parts: Mutex<VecDeque<Part>>,
    /// `parts.len()`, set under its lock: polling threads look here, not at the lock.
    queued: AtomicUsize,
    ready: Condvar,
}

impl Pool {
    fn pop(&self) -> Option<Part> {
        if self.queued.load(Ordering::Acquire) == 0 {
            return None;
        }
        let mut parts = self.parts.lock().unwrap_or_else(|e| e.into_inner());
        let part = parts.pop_front();
        self.queued.store(parts.len(), Ordering::Release);
        part
    }
}

/// The pool, its threads started at the first large copy: one fewer than a copy's most
/// threads, the caller being one.
fn pool() -> &'static Pool {
    static POOL: OnceLock<&'static Pool> = OnceLock::new();
    POOL.get_or_init(|| {
        let pool: &'static Pool = Box::leak(Box::new(Pool {
            parts: Mutex::new(VecDeque::new()),
            queued: AtomicUsize::new(0),
            ready: Condvar::new(),
        }));
        for k in 1..super::most_threads() {
            // A thread that cannot start leaves its parts to the callers.
            let _ = std::thread::Builder::new()
                .name(format!("hetdsl-copy{k}"))
                .spawn(move || serve(pool));
        }
        pool
    })
}

fn serve(pool: &'static Pool) {
    loop {
        let idle = Instant::now();
        let part = loop {
            if let Some(p) = pool.pop() {
                break p;
            }
            if idle.elapsed() < IDLE_SPIN {
                std::thread::yield_now();
                continue;
            }
            let parts = pool.parts.lock().unwrap_or_else(|e| e.into_inner());
            if parts.is_empty() {
                drop(pool.ready.wait(parts));
            }
        };
        part.copy();
    }
}

/// Queue a part for the pool's threads.
pub(super) fn give(part: Part) {
    let pool = pool();
    let mut parts = pool.parts.lock().unwrap_or_else(|e| e.into_inner());
    parts.push_back(part);
    pool.queued.store(parts.len(), Ordering::Release);
    drop(parts);
    pool.ready.notify_one();
}

/// Waits, when dropped, for every part counted by its latch: made before the parts are given,
/// it holds the caller's borrows even if the caller unwinds.
pub(super) struct WaitAll<'a>(pub(super) &'a Latch);

impl Drop for WaitAll<'_> {
    fn drop(&mut self) {
        wait(self.0);
    }
}

/// Wait until every part counted by `done` has been copied, copying queued parts meanwhile.
fn wait(done: &Latch) {
    let pool = pool();
    let began = Instant::now();
    while !done.is_down() {
        if let Some(p) = pool.pop() {
            p.copy();
        } else if began.elapsed() < WAIT_SPIN {
            std::thread::yield_now();
        } else {
            let held = done.lock.lock().unwrap_or_else(|e| e.into_inner());
            if !done.is_down() {
                // Bounded, so a part queued meanwhile is taken up by this thread too.
                drop(done.zero.wait_timeout(held, Duration::from_millis(1)));
            }
        }
    }
}
