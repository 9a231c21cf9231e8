//! The process-wide lock around OpenCL object lifetimes (see [`opencl_lock`]).

use std::cell::Cell;
use std::sync::{Mutex, MutexGuard, TryLockError};

/// Held across every program build and every run in the process. A run already uses every
/// device, so little is lost by running them one at a time; and PoCL (3.1 and 5 at least)
/// aborts on an internal assertion (`pocl_release_dlhandle_cache`) now and then when kernels
/// of different contexts build, complete and release concurrently — seen in 1 of 8 runs of the
/// integration tests, whose tests run in parallel threads, before this lock.
///
/// A thread that already holds it takes it again at no cost: a user's balancer or one of its
/// fields (a session buffer, say) may be dropped while its launch holds the lock. Inside a
/// user balancer's call the lock is refused with a panic, which the dispatcher reports as
/// [`Error::BadBalancer`]: the launch calling the balancer holds the lock on another thread,
/// and would wait for the balancer forever.
pub(crate) fn opencl_lock() -> OpenClLock {
    if crate::balance::dispatch::in_user_balancer() {
        panic!(
            "a balancer used a hetdsl program, session or session buffer while its launch \
             runs; a balancer may only decide packages"
        );
    }
    if HOLDS_OPENCL_LOCK.get() {
        return OpenClLock { guard: None };
    }
    let guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    HOLDS_OPENCL_LOCK.set(true);
    OpenClLock { guard: Some(guard) }
}

static LOCK: Mutex<()> = Mutex::new(());

/// OpenCL objects whose last holder could not wait for the lock (see [`drop_under_lock`]),
/// dropped by the thread holding it as it lets the lock go.
static LEFT_FOR_HOLDER: Mutex<Vec<Box<dyn Send>>> = Mutex::new(Vec::new());

/// Whether this thread holds [`opencl_lock`]: it must then not wait for a thread that may take
/// it.
pub(crate) fn opencl_lock_held_here() -> bool {
    HOLDS_OPENCL_LOCK.get()
}

/// This thread never waits for [`opencl_lock`] in [`drop_under_lock`]: a session's device
/// thread, which the lock's holder may be waiting for (a launch's end, a session's drop) while
/// the thread lets go of a task that held a buffer's last reference.
pub(crate) fn never_wait_to_drop() {
    NEVER_WAITS.set(true);
}

/// Drop `objects` (OpenCL objects, or what owns them) under the OpenCL lock. A thread marked by
/// [`never_wait_to_drop`] that finds the lock taken hands them to its holder instead.
pub(crate) fn drop_under_lock(objects: Box<dyn Send>) {
    if !NEVER_WAITS.get() || HOLDS_OPENCL_LOCK.get() {
        let _one_at_a_time = opencl_lock();
        drop(objects);
        return;
    }
    if let Some(guard) = try_take() {
        drop(OpenClLock::took(guard, objects));
        return;
    }
    left_for_holder().push(objects);
    // The holder may have let the lock go before the push: whoever takes it next (here, if no
    // one holds it now) drops what was left.
    if let Some(guard) = try_take() {
        drop(OpenClLock::took(guard, Box::new(())));
    }
}

/// The lock if no one holds it.
fn try_take() -> Option<MutexGuard<'static, ()>> {
    match LOCK.try_lock() {
        Ok(guard) => Some(guard),
        Err(TryLockError::Poisoned(e)) => Some(e.into_inner()),
        Err(TryLockError::WouldBlock) => None,
    }
}

fn left_for_holder() -> MutexGuard<'static, Vec<Box<dyn Send>>> {
    LEFT_FOR_HOLDER.lock().unwrap_or_else(|e| e.into_inner())
}

thread_local! {
    /// This thread holds [`opencl_lock`].
    static HOLDS_OPENCL_LOCK: Cell<bool> = const { Cell::new(false) };
    /// See [`never_wait_to_drop`].
    static NEVER_WAITS: Cell<bool> = const { Cell::new(false) };
}

/// [`opencl_lock`] held: released when the outermost one on this thread drops.
pub(crate) struct OpenClLock {
    guard: Option<MutexGuard<'static, ()>>,
}

impl OpenClLock {
    /// The lock just taken by `try_lock`, `objects` dropped under it.
    fn took(guard: MutexGuard<'static, ()>, objects: Box<dyn Send>) -> OpenClLock {
        HOLDS_OPENCL_LOCK.set(true);
        drop(objects);
        OpenClLock { guard: Some(guard) }
    }
}

impl Drop for OpenClLock {
    fn drop(&mut self) {
        if self.guard.is_none() {
            return;
        }
        loop {
            // Dropped while the lock is still held (and this thread still marked as holding
            // it, so what they drop in turn takes it at no cost).
            let left = std::mem::take(&mut *left_for_holder());
            drop(left);
            if left_for_holder().is_empty() {
                break;
            }
        }
        HOLDS_OPENCL_LOCK.set(false);
        self.guard = None;
        // Left by a thread that found the lock taken just before it was let go.
        if !left_for_holder().is_empty() {
            if let Some(guard) = try_take() {
                drop(OpenClLock::took(guard, Box::new(())));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    struct Flag(Arc<AtomicBool>);

    impl Drop for Flag {
        fn drop(&mut self) {
            assert!(HOLDS_OPENCL_LOCK.get(), "dropped without the lock");
            self.0.store(true, Ordering::SeqCst);
        }
    }

    #[test]
    fn a_thread_that_never_waits_leaves_its_objects_to_the_lock_holder() {
        let dropped = Arc::new(AtomicBool::new(false));
        let held = opencl_lock();
        let flag = Flag(dropped.clone());
        // A thread waiting for the lock would never end while this one holds it.
        std::thread::spawn(move || {
            never_wait_to_drop();
            drop_under_lock(Box::new(flag));
        })
        .join()
        .unwrap();
        assert!(!dropped.load(Ordering::SeqCst), "dropped while another thread held the lock");
        drop(held);
        assert!(dropped.load(Ordering::SeqCst), "not dropped when the lock was let go");
    }
}
