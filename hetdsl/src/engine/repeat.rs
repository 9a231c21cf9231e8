//! What a program's one-shot runs learn from each other: the report of the last clean run of
//! each launch (kernel, range, work-group size, devices), so that a launch given no balancer and
//! run again over the same range starts from what the last one measured rather than from
//! nominal figures (`balance::relaunch`: one block per device for a regular kernel). A launch
//! with a balancer of its own uses that balancer; an irregular kernel keeps the default.
//!
//! A repeated launch can take several [`Form`]s: the planned split whole or in pieces, or the
//! fastest device alone where the others would add little. Each is tried once (one slower than
//! the fastest, twice), then the one with the shortest region of interest (the median of its
//! last three) is kept, until its own time grows past another's. A plan that
//! ends just short of balance (or far from it, once a plan of the launch has run well) runs
//! once more as it is; one that ends unbalanced again, or far from balance, is judged by time: kept where it ran
//! faster than the default, struck where it ran slower (the launch then keeps the default), and
//! planned again after one more default run where no default time is known yet. A device the
//! chosen form gives nothing sits the launch out: it is not set
//! up at all, so it neither costs the caller its set-up nor shares the host with the others.

use std::ops::Range;
use std::sync::{Arc, Mutex};

use super::plan::Plan;
use crate::balance::relaunch::RecentTimes;
use crate::balance::{self, Balancer, DeviceHistory, History};
use crate::report::Report;

/// Launches remembered per program: a program rarely runs more kernels at more sizes than this,
/// and the oldest is forgotten first.
const REMEMBERED: usize = 32;

/// The alone form is tried where the device that ran the most work-groups ran at least this
/// share of them (so never among peers that split the work). Co-executing can cost the fast
/// device more than the others bring: on an H200 + 16-core CPU a matrix-vector product
/// co-executed took 1.12 times the H200 alone; on an H100 + CPU a reduction's planned split
/// ran 11, 32 and 40 ms in three calls against 11 ms for the H100 alone. A split's own
/// measurements do not show what the fast device would do without the others; only a call
/// without them does, and it costs one call.
pub(crate) const ALONE_SHARE: f64 = 0.5;

/// A launch, as far as its split is concerned.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LaunchKey {
    kernel: String,
    global: Vec<usize>,
    local: Vec<usize>,
    devices: Vec<usize>,
    span: Range<u64>,
}

impl LaunchKey {
    pub(crate) fn of(plan: &Plan) -> LaunchKey {
        LaunchKey {
            kernel: plan.kernel.clone(),
            global: plan.geo.global.clone(),
            local: plan.geo.local.clone(),
            devices: plan.devices.iter().map(|d| d.info.index).collect(),
            span: plan.span.clone(),
        }
    }
}

/// How a launch given no balancer runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Form {
    /// The default balancer (Sigmoid), learning the devices afresh.
    Default,
    /// The planned split, one package per device.
    Whole,
    /// The planned split, each block in up to `balance::PIECES` packages.
    Pieces,
    /// The device that ran the most work alone.
    Alone,
}

impl Form {
    /// Learned from earlier runs of the launch (a plan, or the fastest device alone).
    pub(crate) fn is_learned(self) -> bool {
        matches!(self, Form::Whole | Form::Pieces | Form::Alone)
    }

    /// The form of a run under a balancer the caller chose: its default balancer is the
    /// default form (its time counts as that form's), any other none.
    pub(crate) fn given(balancer: &dyn Balancer) -> Option<Form> {
        // A caller's balancer is foreign code: a panicking name() names no form.
        let name = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| balancer.name()));
        (name.ok()? == balance::default_balancer().name()).then_some(Form::Default)
    }
}

/// The balancer a launch runs with, and the positions of the devices that take part (`None`:
/// all of them; the others sit out, and the balancer sees only those taking part, in order).
pub(crate) struct Choice {
    pub(crate) balancer: Box<dyn Balancer>,
    pub(crate) taking: Option<Vec<usize>>,
    pub(crate) form: Option<Form>,
}

impl Choice {
    fn default_form() -> Choice {
        Choice::default_on(None)
    }

    /// The default balancer on the devices at positions `taking` (all if `None`).
    pub(crate) fn default_on(taking: Option<Vec<usize>>) -> Choice {
        Choice { balancer: balance::default_balancer(), taking, form: Some(Form::Default) }
    }

    /// `plan` replayed, in pieces or not, by the devices it gives work to; in pieces, each
    /// block whose cost falls along it (as `shape` measured it) from its end.
    fn planned(plan: History, pieces: bool, form: Form, shape: &Report) -> Choice {
        let taking: Vec<usize> =
            (0..plan.devices.len()).filter(|&d| !plan.devices[d].owned.is_empty()).collect();
        let (plan, taking) = if taking.len() < plan.devices.len() {
            let devices = taking.iter().map(|&d| plan.devices[d].clone()).collect();
            (History { devices, ..plan }, Some(taking))
        } else {
            (plan, None)
        };
        let backwards = pieces.then(|| balance::relaunch::falling_blocks(shape, &plan));
        let mut replay = balance::Replay::planned(plan);
        if let Some(backwards) = backwards {
            replay = replay.in_pieces().backwards(backwards);
        }
        if form == Form::Alone {
            replay = replay.alone();
        }
        Choice { balancer: Box::new(replay), taking, form: Some(form) }
    }
}

/// What a program remembers of one launch.
#[derive(Debug)]
struct Remembered {
    key: LaunchKey,
    /// Its last clean report that planning can start from (a run in the alone form is not).
    last: Option<Arc<Report>>,
    /// Its last clean report with a device that ran more than one package: the cost along
    /// each block that orders a plan's pieces. A plan run whole measures one package per
    /// device, a flat map, and the next run in pieces would lose its order (on two H200s
    /// Mandelbrot's second GPU then ran its block forwards and the call ended 5 ms later).
    shape: Option<Arc<Report>>,
    /// A relaunch of it ended far from balance and slower than the default: its plans
    /// misjudge this launch (a device whose speed depends on the others', a cost that moves
    /// with the data), so it keeps the default balancer, rather than alternating between a bad
    /// plan and the default run it learns from.
    struck: bool,
    /// The last planned run ended just short of balance ([`NEAR_SETTLED`]), or far from it
    /// after plans had run well, and its plan was given one more run before being judged.
    missed_once: bool,
    /// A plan of this launch has run balanced, or faster than the default: one far miss of it
    /// is then as likely the host's noise as the plan's fault, and runs once more.
    proven: bool,
    /// Runs recorded (clean or not).
    runs: u32,
    /// A run of it checked its first packages for stray writes and ended cleanly
    /// (`worker::stray`): later runs are not checked.
    writes_checked: bool,
    /// The ROIs of its last clean runs in each form (indexed by `Form as usize`).
    times: [RecentTimes; 4],
}

impl Remembered {
    /// The form of the next run among `forms`: the first not tried yet, else one timed once
    /// and slower than the fastest, else the fastest.
    ///
    /// A form slower on its one run runs once more before it is judged (its better time
    /// counts): one call cannot rank forms that differ by 10 % on a host whose memory-bound
    /// calls vary by 20-40 % from call to call, and a first run may pay what later ones do
    /// not. On an H200 + 16-core CPU elementwise's plan whole first ran 64 ms against 54 in
    /// pieces, and pieces were kept for good although over 11 alternated rounds they took
    /// 61.6 ms to the H200's 55.2 in one package; on an H100 + CPU its plan whole first ran
    /// 65 ms, then pieces 33-35 ms, where the H100 in one package ran 28. A form slower twice
    /// is not tried a third time, so this costs at most one call per form.
    fn pick(&self, forms: &[Form]) -> Form {
        let roi = |f: Form| self.times[f as usize].median();
        if let Some(f) = forms.iter().copied().find(|&f| roi(f).is_none()) {
            return f;
        }
        let mut best = forms[0];
        for &f in forms {
            if roi(f) < roi(best) {
                best = f;
            }
        }
        let fastest = roi(best).unwrap_or(0.0);
        let once_slow = |f: &Form| {
            let times = self.times[*f as usize].times();
            times.len() == 1 && times[0] > fastest
        };
        forms.iter().copied().find(once_slow).unwrap_or(best)
    }

    /// The next run's choice (see the module's documentation).
    fn choose(&self) -> Choice {
        let Some(last) = &self.last else { return Choice::default_form() };
        let plan = match self.struck {
            true => None,
            false => balance::relaunch::one_block_per_device(last),
        };
        let takers =
            plan.as_ref().map(|p| p.devices.iter().filter(|d| !d.owned.is_empty()).count());
        // A plan that already leaves one device alone makes the alone form the same run.
        let alone = alone_candidate(last).filter(|_| takers != Some(1));
        let mut forms = match plan {
            Some(_) => vec![Form::Whole, Form::Pieces],
            None => vec![Form::Default],
        };
        forms.extend(alone.map(|_| Form::Alone));
        let form = self.pick(&forms);
        let shape = self.shape.as_deref().unwrap_or(last);
        let planned = |plan: History, pieces: bool| Choice::planned(plan, pieces, form, shape);
        match (form, plan, alone) {
            (Form::Whole, Some(p), _) => planned(p, false),
            (Form::Pieces, Some(p), _) => planned(p, true),
            (Form::Alone, _, Some(d)) => {
                // Alone in pieces unless whole blocks were measured faster (as for NBody,
                // whose packages each pay a fixed cost).
                let whole_faster = matches!(
                    (self.times[Form::Whole as usize].median(), self.times[Form::Pieces as usize].median()),
                    (Some(w), Some(p)) if w < p
                );
                planned(alone_plan(last, d), !whole_faster)
            }
            _ => Choice::default_form(),
        }
    }
}

/// The device that ran the most work-groups in `last`, where it ran more than [`ALONE_SHARE`]
/// of them and there is another device to leave out.
fn alone_candidate(last: &Report) -> Option<usize> {
    if last.devices.len() < 2 || last.total_groups == 0 {
        return None;
    }
    let total = last.total_groups as f64;
    let top = last.devices.iter().max_by_key(|d| d.groups)?;
    // Peers (devices of one model) that both ran a real share split the work between them.
    let peer = last.devices.iter().any(|d| {
        d.index != top.index && d.name == top.name && d.groups as f64 >= PEER_SHARE * total
    });
    (!peer && top.groups as f64 > ALONE_SHARE * total).then_some(top.index)
}

/// A planned run that ends unbalanced ([`balance::relaunch::SETTLED`]) but at this balance or
/// above runs its plan once more before the miss counts: on two H200s stencil3d's plan ended
/// at 0.884 in one call and 0.992 in the next, and the default run that the first miss asked
/// for took 21.5 ms against the plan's 18; a call later, one plan run slowed by the host
/// struck the plan for good. Two misses in a row are judged as one was before.
const NEAR_SETTLED: f64 = 0.8;

/// A device of the top device's model that ran this share of the work makes the two peers.
const PEER_SHARE: f64 = 0.1;

/// The whole range on device `d` of `last`'s devices.
fn alone_plan(last: &Report, d: usize) -> History {
    let devices = (0..last.devices.len())
        .map(|i| DeviceHistory {
            speed: if i == d { 1.0 } else { 0.0 },
            owned: (i == d).then_some(0..last.total_groups).into_iter().collect(),
        })
        .collect();
    History { total_groups: last.total_groups, devices }
}

/// The last clean report of each launch of a program.
#[derive(Debug, Default)]
pub(crate) struct LastRuns(Mutex<Vec<Remembered>>);

impl LastRuns {
    /// How a launch given no balancer runs: from what its last runs measured where they
    /// qualify, else with the default balancer.
    pub(crate) fn choose(&self, key: &LaunchKey) -> Choice {
        let runs = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match runs.iter().find(|r| r.key == *key) {
            Some(r) => r.choose(),
            None => Choice::default_form(),
        }
    }

    /// Remember `report` (a run in `form`, if any) for `key`. A run with a fault makes the
    /// next one start afresh; a run in the alone form only adds its time.
    pub(crate) fn record(&self, key: LaunchKey, report: &Report, form: Option<Form>) {
        let mut runs = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let at = runs.iter().position(|r| r.key == key);
        let mut entry = match at {
            Some(i) => runs.remove(i),
            None => {
                let times = Default::default();
                let (struck, missed_once, proven) = (false, false, false);
                let (shape, writes_checked) = (None, false);
                Remembered {
                    key,
                    last: None,
                    shape,
                    struck,
                    missed_once,
                    proven,
                    runs: 0,
                    times,
                    writes_checked,
                }
            }
        };
        // A launch's first run pays its devices' first use (kernels compiled for the sizes,
        // buffers touched first) inside its ROI: its time would keep the default from ever
        // being chosen again, so it is not compared.
        let first = entry.runs == 0;
        entry.runs = entry.runs.saturating_add(1);
        let planned = matches!(form, Some(Form::Whole | Form::Pieces));
        let unbalanced = planned && report.balance < balance::relaunch::SETTLED;
        let clean = report.faults.is_empty() && report.devices.iter().all(|d| d.fault.is_none());
        // One copy serves as both the plan's source and the map of its pieces' order.
        let kept = clean.then(|| Arc::new(report.clone()));
        if kept.is_some() && report.devices.iter().any(|d| d.packages > 1) {
            entry.shape = kept.clone();
        }
        let near = report.balance >= NEAR_SETTLED || entry.proven;
        if unbalanced && clean && near && !entry.missed_once {
            // Once, the same plan again (`last` stays the report it came from), its time
            // counted: a near miss is as often the host's noise as the plan's fault.
            entry.missed_once = true;
            if let (Some(f), false) = (form, first) {
                entry.times[f as usize].push(report.roi_seconds);
            }
            runs.push(entry);
            return;
        }
        if planned && !unbalanced {
            entry.missed_once = false;
            entry.proven |= clean;
        }
        let default_time = entry.times[Form::Default as usize].median();
        if unbalanced && default_time.is_none() {
            // Nothing to judge the plan by: it may come from the launch's first run, whose costs
            // include the devices' first use (on two H100s + CPU Mandelbrot's first call gave a
            // plan that ran 0.37 s on one GPU and 1.10 s on the other, where a plan from a
            // later run balanced). The default runs once more and the next plan comes from
            // that run; this plan's times go with it.
            entry.last = None;
            entry.times[Form::Whole as usize] = RecentTimes::default();
            entry.times[Form::Pieces as usize] = RecentTimes::default();
            runs.push(entry);
            return;
        }
        if let (true, true, Some(f), Some(default)) = (unbalanced, clean, form, default_time) {
            if report.roi_seconds < default {
                // Unbalanced, yet faster than the default: a memory-bound launch's balance is
                // its transfers' noise (stencil3d on two H100s: plans at 0.84-0.86 ran 7.6-8.3
                // ms, Sigmoid 11-12 ms, one H100 alone 9.8). The plan is kept, replayed from the
                // measurements it came from, and the times choose among the forms.
                entry.times[f as usize].push(report.roi_seconds);
                // A good run: the next miss gets its second run again.
                (entry.missed_once, entry.proven) = (false, true);
                runs.push(entry);
                return;
            }
        }
        entry.struck |= unbalanced;
        if let (Some(f), true, false) = (form, clean, first) {
            entry.times[f as usize].push(report.roi_seconds);
        }
        if form != Some(Form::Alone) {
            entry.last = kept;
        }
        runs.push(entry);
        if runs.len() > REMEMBERED {
            runs.remove(0);
        }
    }

    /// Whether a run of the launch `key` had its writes checked (see [`Self::writes_checked_by`]).
    pub(crate) fn writes_checked(&self, key: &LaunchKey) -> bool {
        let runs = self.0.lock().unwrap_or_else(|e| e.into_inner());
        runs.iter().any(|r| r.key == *key && r.writes_checked)
    }

    /// The run of `key` just recorded checked its writes; a launch forgotten (cleared, or the
    /// oldest of more than [`REMEMBERED`]) is checked again.
    pub(crate) fn writes_checked_by(&self, key: &LaunchKey) {
        let mut runs = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(r) = runs.iter_mut().find(|r| r.key == *key) {
            r.writes_checked = true;
        }
    }

    /// Forget every launch.
    pub(crate) fn clear(&self) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }
}

#[cfg(test)]
mod tests;
