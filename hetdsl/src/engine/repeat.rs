//! What a program's one-shot runs learn from each other: the report of the last clean run of
//! each launch (kernel, range, work-group size, devices), so that a launch given no balancer and
//! run again over the same range starts from what the last one measured rather than from
//! nominal figures (`balance::relaunch`: one block per device for a regular kernel). A launch
//! with a balancer of its own uses that balancer; an irregular kernel keeps the default.
//!
//! A repeated launch can take several [`Form`]s: the planned split whole or in pieces, or the
//! fastest device alone where the others would add little. Each is tried once, then the one
//! with the shortest region of interest (the median of its last three) is kept, until its own
//! time grows past another's. A plan that ends unbalanced is judged by time: kept where it ran
//! faster than the default, struck where it ran slower (the launch then keeps the default), and
//! planned again after one more default run where no default time is known yet. A device the
//! chosen form gives nothing sits the launch out: it is not set
//! up at all, so it neither costs the caller its set-up nor shares the host with the others.

use std::ops::Range;
use std::sync::Mutex;

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
    /// block whose cost falls along it (as `last` measured it) from its end.
    fn planned(plan: History, pieces: bool, form: Form, last: &Report) -> Choice {
        let taking: Vec<usize> =
            (0..plan.devices.len()).filter(|&d| !plan.devices[d].owned.is_empty()).collect();
        let (plan, taking) = if taking.len() < plan.devices.len() {
            let devices = taking.iter().map(|&d| plan.devices[d].clone()).collect();
            (History { devices, ..plan }, Some(taking))
        } else {
            (plan, None)
        };
        let backwards = pieces.then(|| balance::relaunch::falling_blocks(last, &plan));
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
    last: Option<Report>,
    /// A relaunch of it ended far from balance and slower than the default: its plans
    /// misjudge this launch (a device whose speed depends on the others', a cost that moves
    /// with the data), so it keeps the default balancer, rather than alternating between a bad
    /// plan and the default run it learns from.
    struck: bool,
    /// Runs recorded (clean or not).
    runs: u32,
    /// The ROIs of its last clean runs in each form (indexed by `Form as usize`).
    times: [RecentTimes; 4],
}

impl Remembered {
    /// The form of the next run among `forms`: the first not tried yet, else the fastest.
    fn pick(&self, forms: &[Form]) -> Form {
        let roi = |f: Form| self.times[f as usize].median();
        forms.iter().copied().find(|&f| roi(f).is_none()).unwrap_or_else(|| {
            let mut best = forms[0];
            for &f in forms {
                if roi(f) < roi(best) {
                    best = f;
                }
            }
            best
        })
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
        let planned = |plan: History, pieces: bool| Choice::planned(plan, pieces, form, last);
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
                Remembered { key, last: None, struck: false, runs: 0, times: Default::default() }
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
                runs.push(entry);
                return;
            }
        }
        entry.struck |= unbalanced;
        if let (Some(f), true, false) = (form, clean, first) {
            entry.times[f as usize].push(report.roi_seconds);
        }
        if form != Some(Form::Alone) {
            entry.last = clean.then(|| report.clone());
        }
        runs.push(entry);
        if runs.len() > REMEMBERED {
            runs.remove(0);
        }
    }

    /// Forget every launch.
    pub(crate) fn clear(&self) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{DeviceReport, PackageTrace, Transfer};
    use crate::work::{DeviceKind, Package};

    const TOTAL: u64 = 2048;

    fn key() -> LaunchKey {
        LaunchKey {
            kernel: "k".into(),
            global: vec![TOTAL as usize],
            local: vec![1],
            devices: vec![0, 1],
            span: 0..TOTAL,
        }
    }

    /// A CPU (device 0) and a GPU: the CPU ran one package of `groups0` groups and the GPU the
    /// rest, in `seconds` each.
    fn split(balancer: &str, groups0: u64, seconds: [f64; 2]) -> Report {
        named(["C", "G"], balancer, groups0, seconds)
    }

    /// [`split`] over devices named `names`.
    fn named(names: [&str; 2], balancer: &str, groups0: u64, seconds: [f64; 2]) -> Report {
        let groups = [groups0, TOTAL - groups0];
        let devices = (0..2)
            .map(|index| DeviceReport {
                index,
                name: names[index].into(),
                kind: DeviceKind::Gpu,
                packages: 1,
                groups: groups[index],
                busy_seconds: seconds[index],
                finish_seconds: seconds[index],
                fault: None,
            })
            .collect();
        let trace = (0..2)
            .map(|d| PackageTrace {
                device: d,
                package: Package { offset: [0, groups0][d], len: groups[d] },
                host_start: 0.0,
                host_end: seconds[d],
                kernel_seconds: Some(seconds[d]),
                written: Transfer::default(),
                read: Transfer::default(),
                merged: true,
                idle_before: None,
            })
            .collect();
        let balance = seconds[0].min(seconds[1]) / seconds[0].max(seconds[1]);
        Report { balancer: balancer.into(), balance, ..Report::fixture(TOTAL, devices, trace) }
    }

    /// Two identical devices, each ran one package of half the range in `seconds`.
    fn report(balancer: &str, seconds: [f64; 2]) -> Report {
        named(["G", "G"], balancer, TOTAL / 2, seconds)
    }

    fn timed(r: Report, roi: f64) -> Report {
        Report { roi_seconds: roi, ..r }
    }

    /// The form a balancer of that name runs.
    fn form_of(name: &str) -> Option<Form> {
        match name {
            "sigmoid" => Some(Form::Default),
            "relaunch" => Some(Form::Whole),
            "relaunch-pieces" => Some(Form::Pieces),
            n if n.starts_with("relaunch-alone") => Some(Form::Alone),
            _ => None,
        }
    }

    fn record(runs: &LastRuns, r: Report) {
        let form = form_of(&r.balancer);
        runs.record(key(), &r, form);
    }

    /// The next run's balancer and the devices taking part.
    fn next(runs: &LastRuns) -> (String, Option<Vec<usize>>) {
        let c = runs.choose(&key());
        assert_eq!(c.form, form_of(&c.balancer.name()));
        (c.balancer.name(), c.taking)
    }

    fn name(runs: &LastRuns) -> String {
        next(runs).0
    }

    #[test]
    fn a_relaunch_far_from_balance_makes_the_launch_keep_the_default() {
        let runs = LastRuns::default();
        assert_eq!(name(&runs), "sigmoid", "nothing remembered");
        record(&runs, report("sigmoid", [1.0, 1.0]));
        assert_eq!(name(&runs), "relaunch");
        // The plan (from the first run) ran 1 : 2: the default runs again, and the next plan
        // comes from that run.
        record(&runs, report("relaunch", [1.0, 2.0]));
        assert_eq!(name(&runs), "sigmoid");
        record(&runs, report("sigmoid", [1.0, 1.0]));
        assert_eq!(name(&runs), "relaunch");
        // That one ran 1 : 2 too: the default runs, and so does every run after it, even from
        // a balanced default run.
        record(&runs, report("relaunch", [1.0, 2.0]));
        assert_eq!(name(&runs), "sigmoid");
        record(&runs, report("sigmoid", [1.0, 1.0]));
        assert_eq!(name(&runs), "sigmoid");
        runs.clear();
        record(&runs, report("sigmoid", [1.0, 1.0]));
        assert_eq!(name(&runs), "relaunch", "forgotten");
    }

    #[test]
    fn an_unbalanced_plan_faster_than_the_default_is_kept() {
        let runs = LastRuns::default();
        record(&runs, timed(report("sigmoid", [1.0, 1.0]), 5.0));
        record(&runs, timed(report("relaunch", [1.0, 2.0]), 0.8));
        assert_eq!(name(&runs), "sigmoid", "the first run's plan missed: the default again");
        record(&runs, timed(report("sigmoid", [1.0, 1.0]), 1.1));
        // Unbalanced (1 : 1.25), but 0.8 s against the default's 1.1 s: planned again, from the
        // same default run, and pieces are tried.
        record(&runs, timed(report("relaunch", [1.0, 1.25]), 0.8));
        assert_eq!(name(&runs), "relaunch-pieces");
        record(&runs, timed(report("relaunch-pieces", [1.0, 1.25]), 0.9));
        assert_eq!(name(&runs), "relaunch", "the faster form");
        // Unbalanced and slower than the default: struck.
        record(&runs, timed(report("relaunch", [1.0, 1.25]), 1.2));
        record(&runs, timed(report("relaunch", [1.0, 1.25]), 1.2));
        assert_eq!(name(&runs), "sigmoid");
        record(&runs, timed(report("sigmoid", [1.0, 1.0]), 1.1));
        assert_eq!(name(&runs), "sigmoid");
    }

    #[test]
    fn an_unbalanced_plan_with_no_default_time_to_judge_it_by_runs_the_default_first() {
        let runs = LastRuns::default();
        record(&runs, timed(report("sigmoid", [1.0, 1.0]), 5.0));
        record(&runs, timed(report("relaunch", [1.0, 1.0]), 0.9));
        assert_eq!(name(&runs), "relaunch-pieces");
        // Pieces ended at 1 : 1.25 (a reduction's noise on two H100s): the default's time is
        // not known yet (the first run's is not compared), so the default runs, then the launch
        // is planned again from it and both forms are tried anew.
        record(&runs, timed(report("relaunch-pieces", [1.0, 1.25]), 1.1));
        assert_eq!(name(&runs), "sigmoid");
        record(&runs, timed(report("sigmoid", [1.0, 1.0]), 1.0));
        assert_eq!(name(&runs), "relaunch");
        record(&runs, timed(report("relaunch", [1.0, 1.0]), 0.9));
        assert_eq!(name(&runs), "relaunch-pieces");
    }

    #[test]
    fn a_relaunch_tries_whole_then_pieces_then_keeps_the_faster() {
        let runs = LastRuns::default();
        record(&runs, report("sigmoid", [1.0, 1.0]));
        assert_eq!(next(&runs), ("relaunch".into(), None));
        record(&runs, timed(report("relaunch", [1.0, 1.0]), 1.0));
        assert_eq!(name(&runs), "relaunch-pieces");
        record(&runs, timed(report("relaunch-pieces", [1.0, 1.0]), 0.9));
        assert_eq!(name(&runs), "relaunch-pieces");
        // One slow call (the median of 0.9 and 1.1 is 0.9) does not switch; a second does.
        record(&runs, timed(report("relaunch-pieces", [1.0, 1.0]), 1.1));
        assert_eq!(name(&runs), "relaunch-pieces");
        record(&runs, timed(report("relaunch-pieces", [1.0, 1.0]), 1.1));
        assert_eq!(name(&runs), "relaunch");
    }

    #[test]
    fn a_device_the_plan_gives_nothing_sits_the_launch_out() {
        let runs = LastRuns::default();
        // Device 0 merged 1 % of the range, under the share a plan keeps.
        record(&runs, split("sigmoid", 20, [1.0, 1.0]));
        assert_eq!(next(&runs), ("relaunch".into(), Some(vec![1])));
    }

    #[test]
    fn where_one_device_ran_most_of_the_work_it_is_tried_alone_and_kept_if_faster() {
        let runs = LastRuns::default();
        // The GPU ran 90 %: the plan keeps the CPU (10 %), and the alone form is a third.
        record(&runs, split("sigmoid", 205, [1.0, 1.0]));
        assert_eq!(next(&runs), ("relaunch".into(), None));
        record(&runs, timed(split("relaunch", 205, [1.0, 1.0]), 1.0));
        assert_eq!(next(&runs), ("relaunch-pieces".into(), None));
        record(&runs, timed(split("relaunch-pieces", 205, [1.0, 1.0]), 1.1));
        // Whole beat pieces: alone runs whole too.
        assert_eq!(next(&runs), ("relaunch-alone".into(), Some(vec![1])));
        let alone = timed(split("relaunch-alone", 0, [0.0, 0.95]), 0.95);
        record(&runs, alone.clone());
        assert_eq!(next(&runs), ("relaunch-alone".into(), Some(vec![1])));
        // Its own time grew past the plan's (twice: the median moves): back to the plan, which
        // the alone runs left as it was (they are not planned from).
        record(&runs, timed(alone.clone(), 1.05));
        assert_eq!(next(&runs), ("relaunch-alone".into(), Some(vec![1])));
        record(&runs, timed(alone, 1.05));
        assert_eq!(next(&runs), ("relaunch".into(), None));
    }

    #[test]
    fn a_launch_whose_plans_misjudge_it_tries_the_default_and_the_fastest_device_alone() {
        let runs = LastRuns::default();
        // The first run's time is not compared (it pays the devices' first use).
        record(&runs, timed(split("sigmoid", 100, [1.0, 1.0]), 5.0));
        assert_eq!(name(&runs), "relaunch");
        // The plan ended far from balance: from the first run, so the default runs and the
        // launch is planned again; the second plan misses as well, and runs slower than the
        // default (struck): the default's time is known, so alone is tried next.
        record(&runs, timed(split("relaunch", 100, [0.3, 1.0]), 1.0));
        assert_eq!(name(&runs), "sigmoid");
        record(&runs, timed(split("sigmoid", 100, [1.0, 1.0]), 1.2));
        assert_eq!(name(&runs), "relaunch");
        record(&runs, timed(split("relaunch", 100, [0.3, 1.0]), 1.4));
        // Alone, in pieces (whole and pieces were never compared).
        assert_eq!(next(&runs), ("relaunch-alone-pieces".into(), Some(vec![1])));
        record(&runs, timed(split("relaunch-alone-pieces", 0, [0.0, 1.0]), 1.0));
        assert_eq!(name(&runs), "relaunch-alone-pieces");
        for expected in ["relaunch-alone-pieces", "sigmoid"] {
            record(&runs, timed(split("relaunch-alone-pieces", 0, [0.0, 1.0]), 1.3));
            assert_eq!(name(&runs), expected);
        }
    }

    #[test]
    fn peers_sharing_the_work_and_devices_of_equal_shares_are_never_tried_alone() {
        // Two GPUs of one model, 29 % and 71 % (the cost lay unevenly); a CPU and a GPU with
        // half each.
        for (names, groups0) in [(["G", "G"], 600), (["C", "G"], 1024)] {
            let runs = LastRuns::default();
            record(&runs, named(names, "sigmoid", groups0, [1.0, 1.0]));
            for (name, roi) in [("relaunch", 1.0), ("relaunch-pieces", 1.1), ("relaunch", 1.0)] {
                assert_eq!(next(&runs), (name.into(), None), "{names:?}");
                record(&runs, timed(named(names, name, groups0, [1.0, 1.0]), roi));
            }
        }
    }

    #[test]
    fn in_pieces_a_block_whose_cost_falls_runs_from_its_end() {
        use crate::balance::{DeviceProfile, Next, Setup};
        // Two GPUs, four packages each, a costly band across the middle (Mandelbrot's image).
        let costs = [0.001, 0.05, 0.2, 0.5, 0.5, 0.2, 0.05, 0.001];
        let mut r = report("sigmoid", [1.0, 1.0]);
        r.trace = (0..8)
            .map(|i| PackageTrace {
                device: i / 4,
                package: Package { offset: i as u64 * 256, len: 256 },
                kernel_seconds: Some(costs[i]),
                host_end: costs[i],
                ..r.trace[0].clone()
            })
            .collect();
        let runs = LastRuns::default();
        record(&runs, r.clone());
        record(&runs, timed(Report { balancer: "relaunch".into(), ..r }, 1.0));
        let mut choice = runs.choose(&key());
        assert_eq!(choice.balancer.name(), "relaunch-pieces");
        let gpu = DeviceProfile { kind: DeviceKind::Gpu, nominal_gflops: 1.0, min_groups: 1 };
        choice.balancer.start(&Setup { total_groups: TOTAL, devices: vec![gpu; 2] }).unwrap();
        // The first block's cost rises along it, the second's falls: each ends at the middle.
        let mut first = |d| match choice.balancer.next(d, 0.0) {
            Next::Run(p) => p,
            other => panic!("{other:?}"),
        };
        assert_eq!(first(0), Package { offset: 0, len: 128 });
        assert_eq!(first(1), Package { offset: 1920, len: 128 });
    }

    #[test]
    fn a_run_with_a_fault_leaves_nothing_to_plan_from() {
        let runs = LastRuns::default();
        let mut r = report("sigmoid", [1.0, 1.0]);
        r.devices[1].fault = Some("lost".into());
        record(&runs, r);
        assert_eq!(name(&runs), "sigmoid");
    }
}
