//! Which thread is running a balancer's own code: the engine refuses its locks there.

thread_local! {
    /// This thread is running a balancer's method (see [`in_user_balancer`]).
    static IN_BALANCER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether this thread is inside a balancer's method: the engine refuses its locks there,
/// since the launch that called the balancer holds them.
pub(crate) fn in_user_balancer() -> bool {
    IN_BALANCER.get()
}

/// Run `f` (a balancer's method) with [`in_user_balancer`] true, restored even if it panics.
pub(super) fn user_code<T>(f: impl FnOnce() -> T) -> T {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            IN_BALANCER.set(self.0);
        }
    }
    let _restore = Restore(IN_BALANCER.replace(true));
    f()
}
