//! The process-wide lock around OpenCL object lifetimes (see [`opencl_lock`]).

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
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
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

thread_local! {
    /// This thread holds [`opencl_lock`].
    static HOLDS_OPENCL_LOCK: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// [`opencl_lock`] held: released when the outermost one on this thread drops.
pub(crate) struct OpenClLock {
    guard: Option<std::sync::MutexGuard<'static, ()>>,
}

impl Drop for OpenClLock {
    fn drop(&mut self) {
        if self.guard.take().is_some() {
            HOLDS_OPENCL_LOCK.set(false);
        }
    }
}
