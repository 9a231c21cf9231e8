//! A user's balancer that reaches beyond deciding packages: one that owns a session buffer
//! (dropped with its launch, while the launch holds the OpenCL lock), one that reads a session
//! buffer while its launch runs, one that panics halfway or when dropped. Each ends in a result
//! or an error naming the cause, never a hang or a panic, and the session goes on.

mod common;

use std::sync::mpsc;
use std::time::Duration;

use hetdsl::balance::{Balancer, Completion, Dynamic, Next, Setup};
use hetdsl::{Buffer, Error, Pattern};

/// Runs `f` on a thread of its own; a test that hangs fails here instead of stalling the run.
fn within<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(60)).unwrap_or_else(|_| panic!("{what}: hung for 60 s"))
}

/// `Dynamic` with 8 packages, plus a session buffer it may read in `next`, and a panic after
/// some calls if asked.
struct Wrapped {
    inner: Dynamic,
    buffer: Option<Buffer<f32>>,
    read_it: bool,
    panic_after: Option<usize>,
    panic_on_drop: bool,
    calls: usize,
}

impl Drop for Wrapped {
    fn drop(&mut self) {
        if self.panic_on_drop {
            panic!("a bug in the user's balancer's drop");
        }
    }
}

impl Wrapped {
    fn new(buffer: Option<Buffer<f32>>) -> Self {
        Wrapped {
            inner: Dynamic::packages(8),
            buffer,
            read_it: false,
            panic_after: None,
            panic_on_drop: false,
            calls: 0,
        }
    }
}

impl Balancer for Wrapped {
    fn name(&self) -> String {
        "wrapped".into()
    }
    fn start(&mut self, setup: &Setup) -> hetdsl::Result<()> {
        self.inner.start(setup)
    }
    fn next(&mut self, device: usize, now: f64) -> Next {
        self.calls += 1;
        if self.panic_after.is_some_and(|n| self.calls > n) {
            panic!("a bug in the user's balancer");
        }
        if let (true, Some(b)) = (self.read_it, &self.buffer) {
            let _ = b.read(0..1);
        }
        self.inner.next(device, now)
    }
    fn completed(&mut self, done: &Completion) {
        self.inner.completed(done)
    }
    fn device_lost(&mut self, device: usize) {
        self.inner.device_lost(device)
    }
}

fn affine_cpu(v: &mut [f32], times: usize) {
    for _ in 0..times {
        v.iter_mut().for_each(|e| *e = *e * 2.0 + 1.0);
    }
}

#[test]
fn a_balancer_owning_a_session_buffer_is_dropped_with_its_launch() {
    within("session and one-shot launches whose balancer owns a buffer", || {
        let p = common::program("session.cl");
        let s = p.session().unwrap();
        let n = 4096;
        let mut x = s.buffer_from(&vec![1.0f32; n]).unwrap();
        let mut host = vec![1.0f32; n];
        for _ in 0..3 {
            let owned = Wrapped::new(Some(s.buffer_from(&[1.0f32; 64]).unwrap()));
            common::affine_launch(&s, &mut x, 2.0f32, 1.0f32)
                .balancer(Box::new(owned))
                .run()
                .expect("a session launch");
            let owned = Wrapped::new(Some(s.buffer_from(&[1.0f32; 64]).unwrap()));
            p.launch("affine")
                .global(&[n])
                .local(&[64])
                .inout(&mut host, Pattern::ONE_TO_ONE)
                .scalar(2.0f32)
                .scalar(1.0f32)
                .balancer(Box::new(owned))
                .run()
                .expect("a one-shot launch");
        }
        let mut want = vec![1.0f32; n];
        affine_cpu(&mut want, 3);
        common::close(&x.to_vec().unwrap(), &want, "session buffer");
        common::close(&host, &want, "one-shot output");
    });
}

#[test]
fn a_balancer_reading_a_session_buffer_is_refused_and_the_session_goes_on() {
    within("a launch whose balancer reads a buffer", || {
        let p = common::program("session.cl");
        let other = p.session().unwrap();
        let s = p.session().unwrap();
        let n = 4096;
        let mut x = s.buffer_from(&vec![1.0f32; n]).unwrap();
        let mut reader = Wrapped::new(Some(other.buffer_from(&[1.0f32; 64]).unwrap()));
        reader.read_it = true;
        let r = common::affine_launch(&s, &mut x, 2.0f32, 1.0f32).balancer(Box::new(reader)).run();
        match r {
            Err(Error::BadBalancer(m)) => assert!(m.contains("may only decide packages"), "{m}"),
            other => panic!("expected BadBalancer, got {other:?}"),
        }
        // The buffer is written again and the next launches run as usual.
        x.write(0, &vec![1.0f32; n]).unwrap();
        for _ in 0..2 {
            let l = s.launch("affine").global(&[n]).local(&[64]);
            l.inout(&mut x, Pattern::ONE_TO_ONE).scalar(2.0f32).scalar(1.0f32).run().unwrap();
        }
        let mut want = vec![1.0f32; n];
        affine_cpu(&mut want, 2);
        common::close(&x.to_vec().unwrap(), &want, "after the refused launch");
    });
}

#[test]
fn after_a_balancer_panics_a_lost_range_does_not_blame_a_failed_device() {
    let p = common::program("session.cl");
    let n = 1 << 14;
    for _ in 0..6 {
        let s = p.session().unwrap();
        let mut x = s.buffer_from(&vec![1.0f32; n]).unwrap();
        let mut panicky = Wrapped::new(None);
        panicky.panic_after = Some(6);
        let r = common::affine_launch(&s, &mut x, 2.0f32, 1.0f32).balancer(Box::new(panicky)).run();
        assert!(matches!(r, Err(Error::BadBalancer(_))), "{r:?}");
        assert!(s.failed_devices().is_empty());
        // Each element holds its old value or its new one, or its range is reported lost for
        // what happened: a launch writing it in place ended before its result was kept.
        match x.to_vec() {
            Ok(v) => assert!(v.iter().all(|&e| e == 1.0 || e == 3.0), "neither old nor new"),
            Err(Error::Lost { reason, .. }) => {
                assert!(reason.contains("ended with an error"), "{reason}")
            }
            Err(e) => panic!("{e}"),
        }
    }
}

#[test]
fn a_balancer_panicking_when_dropped_is_an_error_and_the_session_goes_on() {
    let p = common::program("session.cl");
    let s = p.session().unwrap();
    let n = 4096;
    let mut x = s.buffer_from(&vec![1.0f32; n]).unwrap();
    let mut bad = Wrapped::new(None);
    bad.panic_on_drop = true;
    let l = s.launch("affine").global(&[n]).local(&[64]).inout(&mut x, Pattern::ONE_TO_ONE);
    let r = l.scalar(2.0f32).scalar(1.0f32).balancer(Box::new(bad)).run();
    match r {
        Err(Error::BadBalancer(m)) => {
            assert!(m.contains("panicked when dropped") && m.contains("outputs are written"), "{m}")
        }
        other => panic!("expected BadBalancer, got {other:?}"),
    }
    // Every package ran and was kept before the balancer went: the launch's result stands.
    let l = s.launch("affine").global(&[n]).local(&[64]).inout(&mut x, Pattern::ONE_TO_ONE);
    l.scalar(2.0f32).scalar(1.0f32).run().unwrap();
    let mut want = vec![1.0f32; n];
    affine_cpu(&mut want, 2);
    common::close(&x.to_vec().unwrap(), &want, "after the balancer's drop");
}
