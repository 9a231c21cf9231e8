//! The balancer across ranks the caller gave (`ClusterLaunch::balancer`). Its methods run
//! inside hetdsl's dispatcher, which turns their panics into errors; its `drop` is the
//! caller's code too, and runs wherever the launch lets it go: with rank 0's dispatcher once
//! the run is over, unused on every other rank, or on an early error. A panic there ended the
//! rank's process (and `mpirun` the job); it is caught here and kept for `run` to return.

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};

use hetdsl::balance::{Completion, Next, Setup};
use hetdsl::{Balancer, Result};

/// Why a dropped balancer panicked, once it did.
pub(crate) type DropPanic = Arc<Mutex<Option<String>>>;

/// A panic's message, as far as it has one.
pub(crate) fn panic_text(p: &(dyn Any + Send)) -> String {
    (p.downcast_ref::<&str>().map(|s| s.to_string()))
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}

/// `inner`, whose drop's panic is caught and recorded in `panicked`.
pub(crate) struct Given {
    inner: Option<Box<dyn Balancer>>,
    panicked: DropPanic,
}

impl Given {
    pub(crate) fn new(inner: Box<dyn Balancer>, panicked: DropPanic) -> Self {
        Given { inner: Some(inner), panicked }
    }

    fn inner(&mut self) -> &mut dyn Balancer {
        self.inner.as_deref_mut().expect("only `drop` takes the balancer")
    }
}

impl Balancer for Given {
    fn name(&self) -> String {
        self.inner.as_ref().map_or_else(String::new, |b| b.name())
    }
    fn start(&mut self, setup: &Setup) -> Result<()> {
        self.inner().start(setup)
    }
    fn next(&mut self, device: usize, now: f64) -> Next {
        self.inner().next(device, now)
    }
    fn next_ahead(&mut self, device: usize, now: f64) -> Next {
        self.inner().next_ahead(device, now)
    }
    fn completed(&mut self, done: &Completion) {
        self.inner().completed(done)
    }
    fn device_lost(&mut self, device: usize) {
        self.inner().device_lost(device)
    }
}

impl Drop for Given {
    fn drop(&mut self) {
        let inner = self.inner.take();
        if let Err(p) = catch_unwind(AssertUnwindSafe(|| drop(inner))) {
            let mut why = self.panicked.lock().unwrap_or_else(|e| e.into_inner());
            why.get_or_insert_with(|| panic_text(&*p));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Panics;

    impl Balancer for Panics {
        fn name(&self) -> String {
            "panics".into()
        }
        fn start(&mut self, _: &Setup) -> Result<()> {
            Ok(())
        }
        fn next(&mut self, _: usize, _: f64) -> Next {
            Next::Done
        }
        fn completed(&mut self, _: &Completion) {}
        fn device_lost(&mut self, _: usize) {}
    }

    impl Drop for Panics {
        fn drop(&mut self) {
            panic!("dropped");
        }
    }

    #[test]
    fn a_drop_that_panics_is_recorded_not_unwound() {
        let panicked = DropPanic::default();
        let given = Given::new(Box::new(Panics), panicked.clone());
        assert_eq!(given.name(), "panics");
        drop(given);
        assert_eq!(panicked.lock().unwrap().as_deref(), Some("dropped"));
    }
}
