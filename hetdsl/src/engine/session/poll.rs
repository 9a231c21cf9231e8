//! How the session's threads wait for what they expect soon: by polling first, then sleeping.
//! A sleeping thread wakes tens of microseconds late, which a loop of sub-millisecond queued
//! launches would pay at every hand-over and at its end.

use std::sync::mpsc::{Receiver, RecvError, TryRecvError};
use std::time::{Duration, Instant};

use opencl3::event::Event;

/// How long a thread waiting for a message it expects soon polls for it before it sleeps. A
/// sleeping thread wakes tens of microseconds after the message: a loop of queued launches
/// would pay it at each hand-over, and its first kernel would start that much later.
const RECV_SPIN: Duration = Duration::from_millis(1);

/// `rx.recv()`, polling for [`RECV_SPIN`] before it sleeps.
pub(super) fn recv_soon<T>(rx: &Receiver<T>) -> std::result::Result<T, RecvError> {
    let began = Instant::now();
    loop {
        match rx.try_recv() {
            Ok(m) => return Ok(m),
            Err(TryRecvError::Disconnected) => return Err(RecvError),
            Err(TryRecvError::Empty) if began.elapsed() < RECV_SPIN => std::thread::yield_now(),
            Err(TryRecvError::Empty) => return rx.recv(),
        }
    }
}

/// How waiting for a device's queued kernels ended, where it did not end well.
pub(super) enum Waited {
    Failed(String),
    Hung,
}

/// The longest nap between two looks at a queued launch's events: the host sees the end of a
/// session's last launch at most this late, and a ten-step Black-Scholes loop over two H100s
/// runs 0.26 ms kernels (a nap of 200 us cost it up to 8 %).
const MAX_NAP: Duration = Duration::from_micros(50);

/// How long a wait for a queued launch polls without sleeping: a loop of kernels under a
/// millisecond is seen to end within microseconds, where a nap would add up to [`MAX_NAP`] to
/// its last step.
const WAIT_SPIN: Duration = Duration::from_millis(1);

/// Wait for `events` until `limit` has passed `since`, polling (a blocking wait could last as
/// long as a hung driver does): without sleeping for [`WAIT_SPIN`], then in naps.
pub(super) fn wait_bounded(
    events: &[Event],
    limit: Duration,
    since: Instant,
) -> std::result::Result<(), Waited> {
    let spin_until = Instant::now() + WAIT_SPIN;
    let mut nap = Duration::from_micros(10);
    for ev in events {
        loop {
            match ev.command_execution_status() {
                Ok(s) if s.0 == opencl3::event::CL_COMPLETE => break,
                Ok(s) if s.0 < 0 => {
                    return Err(Waited::Failed(format!("execution status {}", s.0)))
                }
                Err(e) => return Err(Waited::Failed(e.to_string())),
                Ok(_) => {}
            }
            if since.elapsed() > limit {
                return Err(Waited::Hung);
            }
            if Instant::now() < spin_until {
                std::thread::yield_now();
                continue;
            }
            std::thread::sleep(nap);
            nap = (nap * 2).min(MAX_NAP);
        }
    }
    Ok(())
}

pub(super) fn complete(ev: &Event) -> bool {
    // CL_COMPLETE is 0; an error status (negative) has ended too.
    ev.command_execution_status().map_or(true, |s| s.0 <= 0)
}
