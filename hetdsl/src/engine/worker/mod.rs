//! One host thread per device: it owns the device's queues, its own `Kernel` (opencl3's `Kernel`
//! is not `Sync`), its buffers and their host staging, and runs packages until the coordinator
//! has nothing left for it.
//!
//! Per package: copy the package's slice of each sliced input into host staging, write it to the
//! device, launch the kernel over the package with a global work offset, and read the output
//! slices back into staging on a second queue; the next package is launched before that
//! read-back is waited for, so the device computes while the previous output returns. Outputs
//! reach the caller's memory only through [`Shared::merge`], inputs only through
//! [`Shared::with_caller_memory`]: both inside the run's gate.
//!
//! A device thread talks to the rest of the run only through [`Shared`]; it knows nothing of
//! the coordinator. Its parts: `setup` (queues, kernel, arguments, limits, buffers, warm-up),
//! `buffers` (device buffers and staging), `ring` (the pinned slots packages are staged
//! through), `prestage` (a GPU's queues and slots made while its program builds), `package` (one package's writes, launch, read-back
//! and merge), `job` (what the thread is given and what it owns).
//!
//! [`Shared`]: super::shared::Shared
//! [`Shared::merge`]: super::shared::Shared::merge
//! [`Shared::with_caller_memory`]: super::shared::Shared::with_caller_memory

mod buffers;
mod job;
mod package;
mod parked;
mod prestage;
mod ring;
mod setup;
pub(super) mod stray;

use std::time::Duration;

pub(super) use self::buffers::Staging;
use self::job::Device;
pub(crate) use self::job::Job;
pub(super) use self::package::{device_seconds, wait_kernel};
use self::package::{device_span, finish, launch, read_back, transfer, InFlight, Launched};
pub(crate) use self::parked::{Park, Parked};
pub(crate) use self::prestage::{
    beside_build, profiling_queue, stage, wanted as stage_wanted, VALUES as STAGE_VALUES,
    VARIABLE as STAGE_VARIABLE,
};
pub(in crate::engine) use self::ring::{
    pieces, slot_bytes, Ring, MAX_SLOT_MIB, SLOTS, SLOT_VARIABLE,
};
pub(super) use self::setup::{device_profile, fill_units};
pub(crate) use self::setup::{set_local, set_scalar};
use super::shared::{panic_message, Ask, Release};
use super::Fault;
use crate::error::{ClError, Error};
use crate::work::Package;

/// The thread's body. A panic in it (a bug) is caught and turned into this device's failure,
/// so the run never waits for a thread that is gone.
pub(crate) fn run(job: Job) {
    let me = job.me;
    let shared = job.shared.clone();
    let (device, clean, joined) =
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(&job))) {
            Ok(ended) => ended,
            Err(payload) => {
                shared.thread_panicked(me, panic_message(&*payload));
                (None, false, true)
            }
        };
    // A device whose set-up ended after the run did ran nothing: it parks its objects now, so
    // its warm-up serves the next run. Parking into the empty slot releases nothing, so it
    // needs no OpenCL lock, and the next run on this device waits for this thread to be quiet.
    let device = match device {
        Some(d) if clean && !joined => {
            job.device.park.put_if_empty(d.park(&job.kernel)).map(Ended::Parked)
        }
        Some(d) => Some(Ended::Device(d)),
        None => None,
    };
    // Its device has no command left: park its objects for the next run if it ended cleanly,
    // else release them, under the OpenCL lock unless the caller's thread, which holds it, is
    // joining this one.
    match shared.release_turn(me) {
        Release::LeftBehind => {
            let _one_at_a_time = super::opencl_lock();
            match device {
                Some(Ended::Device(d)) => d.release(),
                Some(Ended::Parked(p)) => drop(p),
                None => {}
            }
            drop(job);
        }
        _ => {
            match device {
                Some(Ended::Device(d)) if clean => job.device.park.put(d.park(&job.kernel)),
                Some(Ended::Device(d)) => d.release(),
                Some(Ended::Parked(p)) => drop(p),
                None => {}
            }
            drop(job);
        }
    }
}

/// What a thread holds once its work is over: its device, or the objects it could not park.
enum Ended {
    Device(Device),
    Parked(parked::Parked),
}

/// Set up, run packages, then let every queued command complete. Returns the device, whose
/// objects the caller parks or releases, whether it ended cleanly (it may park: no failure, no
/// injected fault but a slow set-up, every command completed), and whether it joined the run.
fn body(job: &Job) -> (Option<Device>, bool, bool) {
    let me = job.me;
    let shared = &job.shared;
    if job.faults.iter().any(|f| matches!(f, Fault::HangSetup { .. })) {
        // Behave like a driver that never answers, until the run goes on without this device.
        while shared.alive(me) && !shared.run_over() {
            std::thread::sleep(Duration::from_millis(5));
        }
        shared.setup_done(me, Err(Error::Cl { call: "injected set-up hang", code: ClError(-5) }));
        return (None, false, true);
    }
    if !job.predecessors.is_empty() && !await_predecessors(job) {
        return (None, false, true);
    }
    let mut device = match setup::set_up(job) {
        Ok(d) => d,
        Err(e) => {
            shared.setup_done(me, Err(e));
            return (None, false, true);
        }
    };
    let mut clean = job.faults.iter().all(|f| matches!(f, Fault::SlowSetup { .. }));
    let joined = shared.setup_done(me, Ok(device.profile.clone()));
    if joined {
        if let Err(reason) = work(job, &mut device) {
            shared.device_failed(me, reason);
            clean = false;
        }
    }
    // Let every command this device queued complete before anything is released: releasing a
    // kernel or buffer with commands in flight trips PoCL (`pocl_release_dlhandle_cache`
    // assertion). A device truly hung in its driver never gets past here, and is never joined.
    let finished = device.compute.finish().is_ok()
        & device.transfer.finish().is_ok()
        & device.upload.finish().is_ok();
    (Some(device), clean && finished && shared.alive(me), joined)
}

/// Waits for this device's threads of earlier runs to come back, having posted a provisional
/// profile so that the run starts without this device and it joins late. Returns whether to
/// set up: not if the run ended or dropped the device meanwhile, nor if a thread stayed out
/// past its watchdog limit (the device is then quarantined, and leaves the run).
fn await_predecessors(job: &Job) -> bool {
    let (me, shared) = (job.me, &job.shared);
    shared.profile_known(me, setup::provisional_profile(job));
    let give_up = || !shared.alive(me) || shared.run_over();
    for p in &job.predecessors {
        if let Err(reason) = p.wait(give_up) {
            shared.setup_failed(me, reason);
            return false;
        }
    }
    if give_up() {
        shared.setup_failed(me, "its thread of an earlier run was still out".into());
        return false;
    }
    true
}

/// A package whose inputs are written and whose kernel is queued.
struct Queued {
    package: Package,
    /// Its place among this device's packages (for injected faults).
    index: usize,
    launched: Launched,
    /// The first package's bytes checked for stray writes.
    probe: Option<stray::Probe>,
}

/// The package loop. `Err` carries the reason this device must leave the run.
///
/// While a kernel runs, the next package (if the balancer gives one ahead) is launched behind
/// it and the previous package's output is merged, so the device goes from one kernel to the
/// next without waiting for the host. Reduced outputs share one staging between packages, so
/// such launches never queue ahead.
fn work(job: &Job, d: &mut Device) -> std::result::Result<(), String> {
    let me = job.me;
    // An injected slowdown sleeps after each kernel to model a slower device: a kernel
    // queued behind would run during that sleep and undo it.
    let ahead = job.pipeline
        && d.buffers.iter().all(|b| b.reduce.is_none())
        && Fault::sleep_after(&job.faults, None).is_none();
    let mut previous: Option<InFlight> = None;
    let mut queued: Option<Queued> = None;
    let mut count = 0usize;
    let mut last_end: Option<u64> = None;
    loop {
        let current = match queued.take() {
            Some(q) => q,
            None => match job.shared.next_package(me, previous.is_none()) {
                Ask::Run(p) => start(job, d, p, &mut count, &mut previous)?,
                Ask::Stop => break,
                Ask::Later => {
                    if let Some(f) = previous.take() {
                        finish(job, d, f)?;
                    }
                    continue;
                }
            },
        };
        // A package checked for stray writes into a buffer the host also writes runs alone:
        // the next package's input writes could reach its marked bytes.
        if ahead && !current.probe.as_ref().is_some_and(|p| p.inout) {
            if let Some(q) = job.shared.ahead(me) {
                queued = Some(start(job, d, q, &mut count, &mut previous)?);
            }
        }
        if let Some(f) = previous.take() {
            finish(job, d, f)?;
        }
        let Queued { package: p, index, launched, probe } = current;
        if injected_hang(job, index) {
            // Behave like a device that never answers: block until dropped from the run.
            while job.shared.alive(me) {
                std::thread::sleep(Duration::from_millis(5));
            }
            return Ok(());
        }
        let expected = d.per_unit.map(|s| s * p.len as f64);
        wait_kernel(&launched.kernel, expected, job.wait)
            .map_err(|e| format!("kernel on package {p:?} failed: {e}"))?;
        if let Some(probe) = &probe {
            if let Err(e) = stray::check(job, d, probe) {
                job.shared.refuse(e);
                return Ok(());
            }
        }
        let seconds = device_seconds(&launched.kernel);
        let span = device_span(&launched.kernel);
        let idle_before = match (last_end, span) {
            (Some(e), Some((s, _))) => Some(s.saturating_sub(e) as f64 * 1e-9),
            _ => None,
        };
        last_end = span.map(|(_, e)| e).or(last_end);
        if let Some(s) = seconds {
            d.per_unit = Some(s / p.len.max(1) as f64);
        }
        if let Some(t) = Fault::sleep_after(&job.faults, seconds) {
            std::thread::sleep(t);
        }
        let written = transfer(&launched.writes, launched.write_bytes);
        if !job.shared.kernel_done(me, p, seconds, written, idle_before) {
            return Ok(());
        }
        let in_flight = read_back(job, d, p, index, &launched.kernel)
            .map_err(|e| format!("read-back of package {p:?} failed: {e}"))?;
        previous = Some(in_flight);
    }
    if let Some(f) = previous.take() {
        finish(job, d, f)?;
    }
    Ok(())
}

/// Count `p` among this device's packages, apply the faults injected at it, and launch it.
fn start(
    job: &Job,
    d: &mut Device,
    p: Package,
    count: &mut usize,
    previous: &mut Option<InFlight>,
) -> std::result::Result<Queued, String> {
    let index = *count;
    *count += 1;
    if job.faults.iter().any(|f| matches!(*f, Fault::Panic { package, .. } if package == index)) {
        panic!("injected panic at package {index}");
    }
    if let Some(reason) = injected_failure(job, index) {
        if let Some(f) = previous.take() {
            finish(job, d, f)?;
        }
        return Err(reason);
    }
    let mut probe = match index == 0 && job.check_writes {
        true => stray::arm(job, d, p).map_err(|e| format!("cannot mark package {p:?}: {e}"))?,
        false => None,
    };
    let launched = launch(job, d, p, previous.as_mut())
        .map_err(|e| format!("launch of package {p:?} failed: {e}"))?;
    if let Some(probe) = probe.as_mut() {
        stray::capture(d, probe).map_err(|e| format!("cannot read package {p:?}'s marks: {e}"))?;
    }
    // While its kernel runs (the first package's, on a new ring's first run).
    d.rings.make_output(&d.transfer, &job.device.shared.context);
    Ok(Queued { package: p, index, launched, probe })
}

fn injected_failure(job: &Job, index: usize) -> Option<String> {
    job.faults.iter().find_map(|f| match *f {
        Fault::Fail { package, .. } if package == index => {
            Some(format!("injected failure at its package {index} (CL_OUT_OF_RESOURCES)"))
        }
        _ => None,
    })
}

fn injected_hang(job: &Job, index: usize) -> bool {
    job.faults.iter().any(|f| matches!(*f, Fault::Hang { package, .. } if package == index))
}
