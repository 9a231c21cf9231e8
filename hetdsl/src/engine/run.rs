//! Executes a launch, start to end, on the caller's thread: checks it into a [`Plan`] before
//! anything starts, settles threads left behind by earlier runs, starts one host thread per
//! device, lets the coordinator run it, ends it and assembles the report.
//!
//! This module only sequences the others: the decisions are the dispatcher's (reached through
//! [`Shared`]), the waiting and watching the coordinator's, the OpenCL work the device threads'.
//! It never touches the caller's memory, and the gate is shut on every way out of [`execute`],
//! a panic included ([`EndOfRun`]), before the caller's slices can go.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use super::coordinator;
use super::plan::Plan;
pub use super::quarantine::quarantined_devices;
use super::quarantine::{self, Settled};
use super::repeat::{Choice, Form, LaunchKey};
use super::shared::{EndOfRun, SetupError, Shared};
use super::worker;
use super::Launch;
use crate::balance::dispatch::Config;
use crate::balance::Balancer;
use crate::device::DeviceInfo;
use crate::error::{Error, Result};
use crate::report::{Report, RunRecord};

/// Runs `launch` with `balancer`, or, given none, with what the program's last clean run of the
/// same launch suggests (see `repeat`).
pub(crate) fn execute(launch: Launch<'_>, balancer: Option<Box<dyn Balancer>>) -> Result<Report> {
    let _one_at_a_time = super::opencl_lock();
    let t_binary = Instant::now();
    let program = launch.program;
    let mut plan = Plan::new(launch)?;
    let key = LaunchKey::of(&plan);
    plan.check_writes &= !program.last_runs.writes_checked(&key);
    let choice = match balancer {
        Some(b) => Choice { form: Form::given(b.as_ref()), balancer: b, taking: None },
        None => program.last_runs.choose(&key),
    };
    let (Choice { mut balancer, mut taking, mut form }, sat_out) =
        leave_out_unfit(plan.devices.len(), plan.unfit(), choice)?;
    // Devices the chosen form gives nothing sit out: no thread, no set-up. The report still
    // lists every device of the launch, the others with nothing run.
    let everyone: Vec<DeviceInfo> = plan.devices.iter().map(|d| d.info.clone()).collect();
    // Kept only where the plan narrows, for the quarantine fallback below.
    let whole_launch = taking.is_some().then(|| (plan.devices.clone(), plan.faults.clone()));
    if let Some(taking) = &taking {
        plan.narrow(taking);
    }
    let mut settled = quarantine::settle_left_behind(&plan.devices);
    // A form learned from earlier runs that chose only quarantined devices: the launch runs
    // under the default balancer on every device that can hold it, as it would have before
    // devices sat out (a caller's own balancer and a plain launch are not second-guessed).
    let learned = form.is_some_and(Form::is_learned);
    if learned && settled.iter().all(|s| matches!(s, Settled::Quarantined(_))) {
        if let Some(whole) = whole_launch {
            (plan.devices, plan.faults) = whole;
        }
        let fit = fit_devices(plan.devices.len(), &sat_out);
        let fit = (fit.len() < plan.devices.len()).then_some(fit);
        Choice { balancer, taking, form } = Choice::default_on(fit);
        if let Some(taking) = &taking {
            plan.narrow(taking);
        }
        settled = quarantine::settle_left_behind(&plan.devices);
    }
    let n = plan.devices.len();
    // The run's span; the dispatcher's events carry their device (its position in the launch,
    // also where others sit out), so those of device threads (outside it) still tell whose
    // they are.
    let span = tracing::info_span!("launch", kernel = %plan.kernel, devices = n, taking = ?taking);
    let _in_launch = span.enter();
    let balancer_name = catch_unwind(AssertUnwindSafe(|| balancer.name()))
        .unwrap_or_else(|_| "(a user balancer whose name() panicked)".into());

    let names: Vec<String> = plan.devices.iter().map(|d| d.info.name.clone()).collect();
    let backups = Config { backups: plan.backups, ..Config::default() };
    let mut shared = Shared::new(names, balancer, balancer_name, backups, plan.reduces());
    if let Some(taking) = &taking {
        shared.labels = taking.clone();
        // A device left alone by a learned form is judged by the watchdog, not waited for.
        shared.spares = form.is_some_and(Form::is_learned);
    }
    let shared = Arc::new(shared);
    // From here on, however `execute` is left, the gate shuts before the caller's slices can go.
    let end_of_run = EndOfRun(&shared);

    let planned = t_binary.elapsed();
    let mut handles = spawn_workers(&plan, &shared, settled);
    let spawned = t_binary.elapsed();
    let built: Vec<bool> =
        plan.devices.iter().map(|d| !d.info.compiles_at_first_launch()).collect();
    let outcome = coordinator::coordinate(&shared, n, plan.units(), plan.watchdog, &built);
    // Where the time before the ROI goes: checking the launch, starting the threads (the rest
    // is their set-up, and the wait for the slowest of them).
    let _ = catch_unwind(|| {
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
        tracing::debug!(planned_ms = ms(planned), spawned_ms = ms(spawned), "run started");
    });
    let machine: Vec<usize> = plan.devices.iter().map(|d| d.info.index).collect();
    let joined = coordinator::end_run(&shared, &mut handles, &machine, plan.watchdog);
    drop(end_of_run);
    // Each joined thread only releases its objects now (its device has no command left).
    for h in joined {
        let _ = h.join();
    }
    outcome?;
    let infos: Vec<&DeviceInfo> = plan.devices.iter().map(|d| &d.info).collect();
    let mut report = report_of(&shared, &plan.kernel, plan.span.clone(), infos, t_binary)?;
    if let Some(taking) = &taking {
        let all: Vec<(String, crate::work::DeviceKind)> =
            everyone.iter().map(|d| (d.name.clone(), d.kind)).collect();
        report = report.widened(taking, &all);
    }
    report.sat_out = sat_out;
    let checked = plan.check_writes.then(|| key.clone());
    program.last_runs.record(key, &report, form);
    if let Some(key) = checked {
        program.last_runs.writes_checked_by(&key);
    }
    Ok(report)
}

/// `choice` with the devices that cannot hold the launch's buffers left out, and those
/// devices with why. Where a device the choice gives work cannot take part, the launch runs
/// under the default balancer on the devices that can (a balancer of the caller's own keeps
/// running, on those devices). `Err` when no device can: the first device's reason.
fn leave_out_unfit(
    devices: usize,
    unfit: Vec<(usize, Error)>,
    choice: Choice,
) -> Result<(Choice, Vec<(usize, String)>)> {
    if unfit.is_empty() {
        return Ok((choice, Vec::new()));
    }
    if unfit.len() == devices {
        return Err(unfit.into_iter().next().map(|u| u.1).expect("a device"));
    }
    let why: Vec<(usize, String)> = unfit.into_iter().map(|(d, e)| (d, e.to_string())).collect();
    let fit = fit_devices(devices, &why);
    let within = choice.taking.as_ref().is_some_and(|t| t.iter().all(|d| fit.contains(d)));
    let choice = match (within, choice.form) {
        (true, _) => choice,
        // A plan, or the fastest device alone, made for devices that cannot all take part.
        (false, Some(f)) if f.is_learned() => Choice::default_on(Some(fit)),
        (false, _) => Choice { taking: Some(fit), ..choice },
    };
    Ok((choice, why))
}

/// The positions of `devices` not in `sat_out`.
fn fit_devices(devices: usize, sat_out: &[(usize, String)]) -> Vec<usize> {
    (0..devices).filter(|d| !sat_out.iter().any(|s| s.0 == *d)).collect()
}

/// The report of a run that ended well: the dispatcher's statistics per device, the trace.
pub(super) fn report_of(
    shared: &Shared,
    kernel: &str,
    span: std::ops::Range<u64>,
    devices: Vec<&DeviceInfo>,
    t_binary: Instant,
) -> Result<Report> {
    let mut s = shared.lock();
    let Some(dispatch) = s.dispatch.take() else {
        return Err(Error::BadBalancer("the run ended before it started".into()));
    };
    // Where a call's time outside its ROI lies: before the first package (set-up) or after.
    let before_roi = s.t0.saturating_duration_since(t_binary).as_secs_f64() * 1e3;
    let report = Report::of_run(RunRecord {
        kernel: kernel.to_string(),
        balancer: s.balancer_name.clone(),
        groups: span,
        devices: devices
            .iter()
            .zip(dispatch.stats())
            .map(|(d, st)| (d.name.clone(), d.kind, st))
            .collect(),
        trace: std::mem::take(&mut s.trace),
        roi_start: s.t0,
        binary_seconds: t_binary.elapsed().as_secs_f64(),
        faults: dispatch.faults().to_vec(),
        backups: dispatch.backups().to_vec(),
    });
    let _ = std::panic::catch_unwind(|| {
        let call_ms = t_binary.elapsed().as_secs_f64() * 1e3;
        let roi_ms = report.roi_seconds * 1e3;
        let after_roi_ms = call_ms - before_roi - roi_ms;
        tracing::debug!(
            kernel,
            before_roi_ms = before_roi,
            roi_ms,
            after_roi_ms,
            call_ms,
            "run ended"
        );
    });
    let name = s.balancer_name.clone();
    drop(s);
    // The balancer goes with the dispatcher: a panic in a user balancer's `drop` is its fault.
    catch_unwind(AssertUnwindSafe(|| drop(dispatch))).map_err(|p| {
        let why = super::shared::panic_message(&*p);
        Error::BadBalancer(format!(
            "balancer `{name}` panicked when dropped, after the launch had completed (its \
             outputs are written): {why}"
        ))
    })?;
    Ok(report)
}

/// One host thread per device of the plan, but none for a quarantined device or one whose
/// thread cannot start: such a device has already reported a failed set-up, and is quiet. A
/// device with a thread of an earlier run still out gets a thread that waits for it first.
fn spawn_workers(
    plan: &Plan,
    shared: &Arc<Shared>,
    settled: Vec<Settled>,
) -> Vec<Option<JoinHandle<()>>> {
    let mut handles = Vec::with_capacity(plan.devices.len());
    for (me, settled) in settled.into_iter().enumerate() {
        let predecessors = match settled {
            Settled::Quarantined(reason) => {
                shared.quiet[me].store(true, Ordering::Release);
                shared.lock().setup[me] = Some(Err(SetupError::Device(reason)));
                handles.push(None);
                continue;
            }
            Settled::Out(threads) => threads,
            Settled::Free => Vec::new(),
        };
        let job = worker::Job::new(me, plan, shared.clone(), predecessors);
        let spawned = std::thread::Builder::new()
            .name(format!("hetdsl-dev{me}"))
            .spawn(move || worker::run(job));
        match spawned {
            Ok(h) => handles.push(Some(h)),
            Err(e) => {
                shared.quiet[me].store(true, Ordering::Release);
                shared.lock().setup[me] =
                    Some(Err(SetupError::Device(format!("cannot start its host thread: {e}"))));
                handles.push(None);
            }
        }
    }
    handles
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::balance::{self, DeviceHistory, History};

    fn limit(device: usize) -> (usize, Error) {
        let reason = "argument 5: a buffer of 2147483648 bytes exceeds ...".to_string();
        (device, Error::DeviceLimit { device, name: "cpu".into(), reason })
    }

    fn whole_plan() -> Choice {
        let owned = |r: std::ops::Range<u64>| DeviceHistory { speed: 1.0, owned: vec![r] };
        let plan = History { total_groups: 10, devices: vec![owned(0..2), owned(2..10)] };
        Choice {
            balancer: Box::new(balance::Replay::planned(plan)),
            taking: None,
            form: Some(Form::Whole),
        }
    }

    #[test]
    fn a_device_that_cannot_hold_the_buffers_sits_out_and_says_why() {
        // Nothing unfit: the choice stands.
        let (c, why) = leave_out_unfit(2, vec![], whole_plan()).unwrap();
        assert_eq!((c.balancer.name(), c.taking, why.len()), ("relaunch".into(), None, 0));
        // A plan that gives device 0 work: the default balancer runs on device 1.
        let (c, why) = leave_out_unfit(2, vec![limit(0)], whole_plan()).unwrap();
        assert_eq!(
            (c.balancer.name(), c.taking, c.form),
            ("sigmoid".into(), Some(vec![1]), Some(Form::Default))
        );
        assert_eq!(why.len(), 1);
        assert!(why[0].1.contains("argument 5"), "{why:?}");
        // A choice already without device 0 stands.
        let alone = Choice { taking: Some(vec![1]), ..whole_plan() };
        let (c, _) = leave_out_unfit(2, vec![limit(0)], alone).unwrap();
        assert_eq!((c.balancer.name(), c.taking), ("relaunch".into(), Some(vec![1])));
        // The caller's own balancer keeps running, on the devices that can.
        let own =
            Choice { balancer: Box::new(balance::Dynamic::packages(4)), taking: None, form: None };
        let (c, _) = leave_out_unfit(2, vec![limit(0)], own).unwrap();
        assert_eq!(
            (c.balancer.name(), c.taking),
            (balance::Dynamic::packages(4).name(), Some(vec![1]))
        );
    }

    #[test]
    fn a_launch_no_device_can_hold_is_the_first_device_s_error() {
        let e = leave_out_unfit(2, vec![limit(0), limit(1)], whole_plan()).err().unwrap();
        assert!(matches!(e, Error::DeviceLimit { device: 0, .. }), "{e}");
    }
}
