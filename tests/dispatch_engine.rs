//! The engine through the dispatcher: a balancer that hands one device work only after another
//! device's package completed. A device told to wait before that completion has not been asked
//! since; taking its stale answer for "nothing left to give" once blamed the balancer for a stall
//! whenever the other device finished and asked before the waiting thread woke up.

mod common;

use common::{lcg, program};
use hetdsl::balance::{Balancer, Completion, Next, Package, Setup};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Device 0 gets the first half at once, device 1 the second half only once a package has
/// completed: until then it is told to wait. Everything else is `Done`.
struct Relay {
    total: u64,
    first: bool,
    second: bool,
    completed: bool,
    /// Set when device 1 asked after the completion (it was woken and asked again).
    asked_after: Arc<AtomicBool>,
}

impl Balancer for Relay {
    fn name(&self) -> String {
        "relay".into()
    }
    fn start(&mut self, setup: &Setup) -> hetdsl::Result<()> {
        self.total = setup.total_groups;
        Ok(())
    }
    fn next(&mut self, device: usize, _now: f64) -> Next {
        let half = self.total / 2;
        match device {
            0 if !self.first => {
                self.first = true;
                Next::Run(Package { offset: 0, len: half })
            }
            1 if !self.completed => Next::Wait,
            1 if !self.second => {
                self.asked_after.store(true, Ordering::Relaxed);
                self.second = true;
                Next::Run(Package { offset: half, len: self.total - half })
            }
            _ => Next::Done,
        }
    }
    fn completed(&mut self, _done: &Completion) {
        self.completed = true;
    }
    fn device_lost(&mut self, _device: usize) {}
}

#[test]
fn a_device_told_to_wait_is_asked_again_after_a_completion_never_taken_for_a_stall() {
    const SMALL: usize = 4096;
    const RUNS: u32 = 2000;
    let p = program("engine.cl");
    let input = lcg(7, SMALL);
    let expected = common::expand4_reference(&input);
    let started = std::time::Instant::now();
    for run in 0..RUNS {
        let asked_after = Arc::new(AtomicBool::new(false));
        let relay = Relay {
            total: 0,
            first: false,
            second: false,
            completed: false,
            asked_after: asked_after.clone(),
        };
        let mut out = vec![0u32; 4 * SMALL];
        let r = common::expand4(&p, SMALL, &input, &mut out)
            .balancer(Box::new(relay))
            .backups(false)
            .warmup(false)
            .run()
            .unwrap_or_else(|e| panic!("run {run}: {e}"));
        assert_eq!(out, expected, "run {run}");
        assert!(asked_after.load(Ordering::Relaxed), "run {run}");
        assert_eq!((r.devices[0].packages, r.devices[1].packages), (1, 1), "run {run}");
        common::assert_coexecuted_once(&r);
        assert!(started.elapsed() < Duration::from_secs(150), "too slow: {run} runs so far");
    }
}
