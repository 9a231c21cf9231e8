//! The caller's thread during a run: it waits for the devices' set-up (not for one far slower
//! than the first ready: that one joins later), starts the dispatcher, watches for hung devices
//! and hands back-up copies to idle ones until every unit's output is merged or the run fails;
//! then it ends the run — shuts the gate, and decides which host threads it joins and which it
//! leaves behind.
//!
//! It touches the run only through [`Shared`] and never the caller's memory. A host thread is
//! joined only once its device has no command left (it says so through [`Shared::quiet`]); a
//! thread still computing when the run ends is left behind (see the quarantine module), so the
//! caller's thread never waits under the OpenCL lock for a driver that may never answer.

use std::sync::atomic::Ordering;
use std::sync::{Arc, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::quarantine::{self, LeftBehind};
use super::shared::{Phase, Release, SetupError, Shared, State};
use super::WatchdogConfig;
use crate::balance::backup;
use crate::balance::dispatch::{Dispatcher, WatchdogRule};
use crate::error::{Error, Result};
use crate::work::{DeviceKind, DeviceProfile, Setup};

/// The least time a device's set-up may take beyond the first ready device's.
const SETUP_GRACE_FLOOR: Duration = Duration::from_secs(10);

/// How often the coordinator lets idle devices look for a straggler to back up.
const BACKUP_POLL: Duration = Duration::from_micros((backup::BACKUP_POLL_SECONDS * 1e6) as u64);

/// The dispatcher's form of the launch's watchdog settings.
fn watchdog_rule(w: WatchdogConfig) -> WatchdogRule {
    WatchdogRule { factor: w.factor, min_seconds: w.min.as_secs_f64() }
}

/// The caller's thread: waits for set-up, starts the run, then watches for hung devices until
/// every unit's output is merged or the run fails.
/// `built[d]`: device `d`'s driver compiled the kernel at the program's build (a GPU), so its
/// set-up takes no compilation.
pub(super) fn coordinate(
    shared: &Shared,
    n: usize,
    units: u64,
    watchdog: WatchdogConfig,
    built: &[bool],
) -> Result<()> {
    let s = await_setup(shared, shared.lock(), n, watchdog, built);
    let s = start(shared, s, n, units)?;
    watch(shared, s, watchdog)
}

/// Wait until every device has reported its set-up; or, once one device is ready, until the
/// others have had a moment more and have each posted their profile (they then join the run
/// late, when their set-up ends: a CPU's warm-up on a heavy kernel can take seconds, which
/// the fast devices need not wait for); or drop those far behind.
fn await_setup<'a>(
    shared: &'a Shared,
    mut s: MutexGuard<'a, State>,
    n: usize,
    watchdog: WatchdogConfig,
    built: &[bool],
) -> MutexGuard<'a, State> {
    // A device whose set-up (queues, buffers, the warm-up's compilation) has not finished long
    // after another device's is ready is dropped rather than waited for: its driver may never
    // answer. The grace is generous, because a first launch compiles the kernel.
    let grace = setup_grace(watchdog);
    let began = Instant::now();
    let mut first_ready: Option<(Instant, Duration)> = None;
    while s.setup.iter().any(Option::is_none) {
        if first_ready.is_none() && s.setup.iter().any(|r| matches!(r, Some(Ok(_)))) {
            first_ready = Some((Instant::now(), began.elapsed()));
            s.setup_deadline = Some(after(Instant::now(), grace));
        }
        let mut wait = Duration::from_millis(50);
        if let Some((at, took)) = first_ready {
            if at.elapsed() > grace {
                for d in 0..n {
                    if s.setup[d].is_none() {
                        shared.alive[d].store(false, Ordering::Release);
                        s.setup[d] = Some(Err(SetupError::Device(not_set_up(grace))));
                    }
                }
                break;
            }
            let profiled = (0..n).all(|d| s.setup[d].is_some() || s.provisional[d].is_some());
            let gather = late_join_after(took);
            let ready: Vec<bool> = s.setup.iter().map(|r| matches!(r, Some(Ok(_)))).collect();
            let reported: Vec<bool> = s.setup.iter().map(Option::is_some).collect();
            if profiled && (at.elapsed() >= gather || only_compiling_left(built, &ready, &reported))
            {
                break;
            }
            wait = wait.min(gather.saturating_sub(at.elapsed()).max(Duration::from_millis(1)));
        }
        s = shared.wake.wait_timeout(s, wait).unwrap_or_else(|e| e.into_inner()).0;
    }
    s
}

/// `d` after `from`, or far in the future where that is past what an `Instant` holds: a
/// watchdog's limit the user set huge means "never", not a panic.
pub(crate) fn after(from: Instant, d: Duration) -> Instant {
    from.checked_add(d).or_else(|| from.checked_add(NEVER)).unwrap_or(from)
}

/// `x` seconds as a `Duration`: [`NEVER`] past what one holds (or for NaN), zero below zero.
pub(crate) fn seconds(x: f64) -> Duration {
    Duration::try_from_secs_f64(x).unwrap_or(if x > 0.0 || x.is_nan() {
        NEVER
    } else {
        Duration::ZERO
    })
}

/// How long a queued replay of a run that took `seconds` may go before its device is judged
/// hung: the watchdog's floor plus its factor times that run.
pub(crate) fn replay_limit(watchdog: WatchdogConfig, seconds_run: f64) -> Duration {
    watchdog.min.saturating_add(seconds(watchdog.factor * seconds_run))
}

/// A deadline too far to matter: about 136 years.
const NEVER: Duration = Duration::from_secs(1 << 32);

/// The set-up grace: how long after the first ready device another may still be setting up.
fn setup_grace(watchdog: WatchdogConfig) -> Duration {
    watchdog.min.saturating_mul(3).max(SETUP_GRACE_FLOOR)
}

fn not_set_up(grace: Duration) -> String {
    format!(
        "set-up did not finish {:.1} s after another device's (hung in its driver?)",
        grace.as_secs_f64()
    )
}

/// Whether the run may start now without the devices still setting up: one whose driver
/// compiled the kernel at the build is ready, and every device still setting up compiles it
/// at its first launch (PoCL, CPUs), which its warm-up does: 170-350 ms for the suite's
/// kernels on a 16-core CPU beside an H200 whose set-up took 25-55 ms. Between devices that
/// all compile at their first launch (several CPUs) the run waits as before.
fn only_compiling_left(built: &[bool], ready: &[bool], reported: &[bool]) -> bool {
    let lead = built.iter().zip(ready).any(|(&b, &r)| b && r);
    lead && built.iter().zip(reported).all(|(&b, &r)| r || !b)
}

/// How long the run waits, once a device is ready (after `took`), for the others to be ready
/// too before it starts without them: devices set up in comparable times start together, while
/// one many times slower (a CPU warming up a heavy kernel, seconds) joins when it can.
fn late_join_after(took: Duration) -> Duration {
    took.max(LATE_JOIN_FLOOR)
}

/// The least wait for the other devices once one is ready: a host thread scheduled late on a
/// loaded machine is not a slow device, and a device that starts late may see its packages
/// backed up by one that has already finished its own.
const LATE_JOIN_FLOOR: Duration = Duration::from_millis(100);

/// Start the dispatcher over the devices that set up; the run's phase turns to running.
fn start<'a>(
    shared: &'a Shared,
    mut s: MutexGuard<'a, State>,
    n: usize,
    units: u64,
) -> Result<MutexGuard<'a, State>> {
    // A user error found while setting up (limits, arguments) is reported as such; a device that
    // merely failed to set up is dropped from the run.
    let mut user_error = None;
    let mut dropped = Vec::new();
    let mut profiles = Vec::with_capacity(n);
    for d in 0..n {
        let outcome = s.setup[d].take();
        match outcome {
            Some(Ok(profile)) => profiles.push(profile),
            // Still setting up, its profile known: it joins the run when it is ready.
            None if s.provisional[d].is_some() => {
                s.late[d] = true;
                profiles.push(s.provisional[d].clone().unwrap_or_else(nothing));
            }
            Some(Err(e)) => {
                // A device that could not set up still has a slot; it never asks for work.
                profiles.push(nothing());
                match e {
                    SetupError::User(e) => user_error = user_error.or(Some(e)),
                    SetupError::Device(reason) => dropped.push((d, reason)),
                }
            }
            None => unreachable!("every device reported its set-up or its profile"),
        }
    }
    let setup = Setup { total_groups: units, devices: profiles };
    let Some(balancer) = s.balancer.take() else {
        return Err(Error::BadBalancer("the balancer was already used".into()));
    };
    match Dispatcher::start(balancer, setup, shared.names.clone(), s.backups) {
        Ok(mut d) => {
            d.label_devices(shared.labels.clone());
            s.dispatch = Some(d);
        }
        Err(e) => {
            s.phase = Phase::Over;
            shared.wake.notify_all();
            return Err(e);
        }
    }
    if let Some(e) = user_error {
        s.phase = Phase::Over;
        shared.wake.notify_all();
        return Err(e);
    }
    for (d, reason) in dropped {
        shared.alive[d].store(false, Ordering::Release);
        shared.lose(&mut s, d, reason);
    }
    if let Some(e) = s.fatal.take() {
        s.phase = Phase::Over;
        shared.wake.notify_all();
        return Err(e);
    }
    s.t0 = Instant::now();
    s.phase = Phase::Running;
    shared.wake.notify_all();
    Ok(s)
}

/// The profile of a device that never asks for work.
fn nothing() -> DeviceProfile {
    DeviceProfile { kind: DeviceKind::Other, nominal_gflops: 0.0, min_groups: 1 }
}

/// Watch the running run: a fatal error, the end of the work, hung devices, back-ups.
fn watch<'a>(
    shared: &'a Shared,
    mut s: MutexGuard<'a, State>,
    watchdog: WatchdogConfig,
) -> Result<()> {
    let rule = watchdog_rule(watchdog);
    let poll = if s.backups.backups { BACKUP_POLL } else { Duration::from_millis(20) };
    loop {
        if let Some(e) = s.fatal.take() {
            return Err(e);
        }
        // The dispatcher's verdict on hung devices (see `Dispatcher::hung`): only a device
        // whose package another, idle device could take over.
        let Some((over, hung)) = shared.dispatch(&mut s, "hung", |d, now| match shared.spares {
            true => (d.is_over(), d.hung_with_spares(now, rule)),
            false => (d.is_over(), d.hung(now, rule)),
        }) else {
            let e = s.fatal.take();
            return Err(e.unwrap_or(Error::BadBalancer("the run ended before it started".into())));
        };
        if over {
            return Ok(());
        }
        if s.phase == Phase::Over {
            return Err(Error::BadBalancer("the run ended with work left".into()));
        }
        for h in hung {
            drop(s);
            shared.device_failed(h.device, h.reason());
            s = shared.lock();
        }
        if s.setup_deadline.is_some_and(|t| Instant::now() > t) {
            for d in 0..s.late.len() {
                if s.late[d] && s.setup[d].is_none() && shared.alive(d) {
                    shared.alive[d].store(false, Ordering::Release);
                    shared.lose(&mut s, d, not_set_up(setup_grace(watchdog)));
                }
            }
        }
        // Idle devices look for a straggler to back up.
        match shared.dispatch(&mut s, "tick", |d, now| d.tick(now)) {
            Some(Ok(given)) if !given.is_empty() => {
                for (d, a) in given {
                    s.given[d] = Some(a.package);
                }
                shared.wake.notify_all();
            }
            Some(Err(e)) => return Err(e),
            _ => {}
        }
        s = shared.wake.wait_timeout(s, poll).unwrap_or_else(|e| e.into_inner()).0;
    }
}

/// End the run once [`coordinate`] has returned: shut the gate, end the phase, give the threads
/// of devices still in the run a moment to see it, then decide for each thread whether the
/// caller joins it (its device has no command left) or leaves it behind. Returns the threads
/// to join; `machine` is each device's index in the machine's list.
pub(super) fn end_run(
    shared: &Arc<Shared>,
    handles: &mut [Option<JoinHandle<()>>],
    machine: &[usize],
    watchdog: WatchdogConfig,
) -> Vec<JoinHandle<()>> {
    let n = handles.len();
    // Close the gate: from here on no device thread touches the caller's memory.
    *shared.gate.write().unwrap_or_else(|e| e.into_inner()) = true;
    {
        let mut s = shared.lock();
        s.phase = Phase::Over;
        shared.wake.notify_all();
    }
    // The threads of devices still in the run end promptly (their next question gets `Stop`);
    // a device still computing a package nobody needs (the losing copy of a back-up) or hung,
    // or one dropped from the run, is not waited for beyond the watchdog's floor.
    // A thread going quiet wakes this wait (`release_turn`), so the caller gets its results as
    // soon as the last thread is done; a 200 µs sleep here cost two devices 0.2-0.4 ms a call.
    let waited = Instant::now();
    let bound = watchdog.min.min(Duration::from_secs(10));
    let mut s = shared.lock();
    loop {
        let pending = (0..n).any(|d| {
            handles[d].is_some() && shared.alive(d) && !shared.quiet[d].load(Ordering::Acquire) && {
                let setting_up = s.late[d] && s.setup[d].is_none();
                !setting_up && !s.dispatch.as_ref().is_some_and(|x| x.runs_abandoned(d))
            }
        });
        let left = bound.saturating_sub(waited.elapsed());
        if !pending || left.is_zero() {
            break;
        }
        // Bounded too: a device dropped from the run (`alive`) wakes no one.
        let wait = left.min(Duration::from_millis(2));
        s = shared.wake.wait_timeout(s, wait).unwrap_or_else(|e| e.into_inner()).0;
    }
    let mut joined = Vec::new();
    for d in 0..n {
        let Some(h) = handles[d].take() else { continue };
        if shared.quiet[d].load(Ordering::Acquire) {
            s.release[d] = Release::Joined;
            joined.push(h);
        } else {
            s.release[d] = Release::LeftBehind;
            // Hung by the watchdog's own measure if still out past the limit of its package.
            let rule = watchdog_rule(watchdog);
            let out = s.dispatch.as_ref().and_then(|x| {
                let (p, since) = x.running(d)?;
                Some(seconds(since + x.watchdog_limit(d, p, rule)))
            });
            // One still setting up has the set-up's own grace.
            let deadline = match (out, s.late[d] && s.setup[d].is_none()) {
                (Some(at), _) => after(s.t0, at),
                (None, true) => s.setup_deadline.unwrap_or_else(Instant::now),
                (None, false) => after(Instant::now(), watchdog.min),
            };
            quarantine::leave_behind(LeftBehind {
                device: machine[d],
                name: shared.names[d].clone(),
                shared: shared.clone(),
                position: d,
                deadline,
            });
            // Detached: it releases its objects under the OpenCL lock when it comes back.
            drop(h);
        }
    }
    shared.wake.notify_all();
    drop(s);
    joined
}

#[cfg(test)]
mod tests {
    use super::only_compiling_left;

    #[test]
    fn a_ready_gpu_does_not_wait_for_a_cpu_compiling_its_kernel() {
        // Device 0 a CPU still warming up, device 1 a GPU ready.
        assert!(only_compiling_left(&[false, true], &[false, true], &[false, true]));
        // Two GPUs and a CPU: not while the second GPU is still setting up.
        let built = [false, true, true];
        assert!(!only_compiling_left(&built, &[false, true, false], &[false, true, false]));
        assert!(only_compiling_left(&built, &[false, true, true], &[false, true, true]));
        // A GPU that failed its set-up leads nothing.
        assert!(!only_compiling_left(&[false, true], &[false, false], &[false, true]));
        // Devices that all compile at their first launch wait for each other as before.
        assert!(!only_compiling_left(&[false, false], &[true, false], &[true, false]));
    }
}
