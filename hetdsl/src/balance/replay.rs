//! Replay: run a launch exactly as the previous one was split, when that split was balanced.
//!
//! # Why
//! With device-resident data, every work-group that changes device moves its data, and moving
//! it through the host costs far more than computing it: on two H200s a saxpy chain whose split
//! shifted by a few hundred work-groups per launch moved 17 MiB per step, which took longer
//! than the step's kernels. [`Learned`](super::Learned) keeps blocks where they were but still
//! lets the tail move a little at each launch, by the jitter of the measured speeds. When the
//! previous launch ended balanced, its split is as good as any a balancer could find from the
//! same measurements, so Replay hands every device exactly the ranges it ran, one package per
//! range: nothing moves and each device runs one package. A change in cost shows in the
//! replayed launch's balance, and the session then goes back to `Learned` for the next launch.
//!
//! A history that does not tile the range exactly (another size, another device count, work
//! lost with a device) makes Replay behave exactly like `Learned` on it. A device lost during a
//! replay hands its ranges not yet started to whichever device asks next.

use std::collections::VecDeque;

use super::{check_setup, Balancer, Completion, History, Learned, Next, Package, Setup};
use crate::error::Result;

/// Hands each device the ranges it ran in a [`History`], one package per range.
#[derive(Debug)]
pub struct Replay {
    history: History,
    /// Set at `start` when the history does not tile the range.
    fallback: Option<Learned>,
    own: Vec<VecDeque<Package>>,
    /// Ranges of lost devices, for any device that asks.
    orphans: VecDeque<Package>,
    alive: Vec<bool>,
    /// Per device: it was handed a package in this run.
    started: Vec<bool>,
    /// The history is a plan for this launch (`relaunch`), not the ranges a launch ran.
    planned: bool,
    /// Each range runs as up to this many packages, in order (see [`Replay::in_pieces`]).
    pieces: u64,
    /// The plan is the fastest device's alone (see [`Replay::alone`]); only its name says so.
    alone: bool,
    /// Per device, its pieces run in reverse order, from its block's end (see
    /// [`Replay::backwards`]); empty: every device in order.
    backwards: Vec<bool>,
}

/// How many packages [`Replay::in_pieces`] cuts a range into: with two in flight, a device reads
/// back each piece while it computes the next, so all but the last piece's read-back (an
/// eighth of the range's, see `cut`) hides behind compute.
pub const PIECES: u64 = 4;

impl Replay {
    pub fn new(history: History) -> Replay {
        Replay {
            history,
            fallback: None,
            own: Vec::new(),
            orphans: VecDeque::new(),
            alive: Vec::new(),
            started: Vec::new(),
            planned: false,
            pieces: 1,
            alone: false,
            backwards: Vec::new(),
        }
    }

    /// Runs each range as [`PIECES`] packages (fewer where the range holds fewer than that many
    /// of the device's fills), each a whole number of fills but the last. One package per range
    /// reads its whole output back after its kernel; pieces overlap that read-back with the next
    /// piece's kernel (measured on an H100 alone: Mandelbrot 1.7 % and Aho 5 % faster in several
    /// packages than in one), while a kernel whose packages pay a fixed cost each (NBody: 8 %
    /// slower) is better whole. The engine tries both on repeated calls and keeps the faster.
    pub fn in_pieces(self) -> Replay {
        Replay { pieces: PIECES, ..self }
    }

    /// Runs the pieces of the devices marked in `backwards` (in the history's device order)
    /// from the end of their blocks: a block whose cost falls along it would otherwise end with
    /// its cheapest pieces, whose short kernels cannot hide the read-back and merge of the
    /// pieces before them (on two H100s, Mandelbrot's second block ended 11-14 ms after its
    /// last costly kernel, the first 3-6 ms). Run backwards, it ends with costly ones.
    pub(crate) fn backwards(self, backwards: Vec<bool>) -> Replay {
        Replay { backwards, ..self }
    }

    /// Runs a planned split (`super::relaunch`) the way a replay runs a past one, one package
    /// per range; named `relaunch`, since its ranges may differ from the last launch's.
    pub fn planned(history: History) -> Replay {
        Replay { planned: true, ..Replay::new(history) }
    }

    /// Names a planned split that gives the whole range to one device, tried on repeated calls
    /// beside the co-executed plan: where the other devices add little, their share can cost
    /// more than it brings (the host's memory and cores they use slow the fast device's
    /// transfers), and only running both forms tells.
    pub fn alone(self) -> Replay {
        Replay { alone: true, ..self }
    }

    /// Whether the history's ranges cover `0..total_groups` of `setup` exactly once.
    fn tiles(&self, setup: &Setup) -> bool {
        tiles(&self.history, setup.total_groups, setup.devices.len())
    }
}

/// Whether `history` is of `devices` devices and its ranges cover `0..total_groups` exactly
/// once (what a replay of it runs).
pub(crate) fn tiles(history: &History, total_groups: u64, devices: usize) -> bool {
    if history.total_groups != total_groups || history.devices.len() != devices {
        return false;
    }
    let mut ranges: Vec<_> = history.devices.iter().flat_map(|d| d.owned.iter().cloned()).collect();
    ranges.sort_by_key(|r| r.start);
    let mut next = 0;
    for r in ranges {
        if r.start != next || r.end <= r.start {
            return false;
        }
        next = r.end;
    }
    next == total_groups
}

impl Balancer for Replay {
    fn name(&self) -> String {
        let form = match (self.alone, self.pieces > 1) {
            (false, false) => "relaunch",
            (false, true) => "relaunch-pieces",
            (true, false) => "relaunch-alone",
            (true, true) => "relaunch-alone-pieces",
        };
        match (self.fallback.is_some(), self.planned) {
            (true, _) => "replay(learned)".into(),
            (false, true) => form.into(),
            (false, false) => "replay".into(),
        }
    }

    fn start(&mut self, setup: &Setup) -> Result<()> {
        check_setup(setup)?;
        if !self.tiles(setup) {
            let mut learned = Learned::new(self.history.clone());
            learned.start(setup)?;
            self.fallback = Some(learned);
            return Ok(());
        }
        let pieces = self.pieces;
        let backwards = &self.backwards;
        self.own = (self.history.devices.iter().zip(&setup.devices).enumerate())
            .map(|(i, (d, profile))| {
                let fill = profile.min_groups.max(1);
                let mut own: VecDeque<Package> =
                    d.owned.iter().flat_map(|r| cut(r.start..r.end, pieces, fill)).collect();
                if backwards.get(i).copied().unwrap_or(false) {
                    own.make_contiguous().reverse();
                }
                own
            })
            .collect();
        self.alive = vec![true; setup.devices.len()];
        self.started = vec![false; setup.devices.len()];
        self.orphans.clear();
        Ok(())
    }

    fn next(&mut self, device: usize, now: f64) -> Next {
        if let Some(f) = &mut self.fallback {
            return f.next(device, now);
        }
        if !self.alive.get(device).copied().unwrap_or(false) {
            return Next::Done;
        }
        let own = self.own[device].pop_front().or_else(|| self.orphans.pop_front());
        match own.or_else(|| self.late_device_s(device)) {
            Some(p) => {
                self.started[device] = true;
                Next::Run(p)
            }
            None => Next::Done,
        }
    }

    /// A device's next range of the plan, queued behind the one it runs: the plan gives it
    /// that range whenever it asks, so committing it early costs nothing, and its input copy
    /// and launch then hide behind the running kernel. Never a lost device's range (whoever
    /// is idle first should take those), nor under the `Learned` fallback.
    fn next_ahead(&mut self, device: usize, _now: f64) -> Next {
        if self.fallback.is_some() || !self.alive.get(device).copied().unwrap_or(false) {
            return Next::Wait;
        }
        let next = self.own[device].pop_front();
        self.started[device] |= next.is_some();
        next.map_or(Next::Wait, Next::Run)
    }

    fn completed(&mut self, done: &Completion) {
        if let Some(f) = &mut self.fallback {
            f.completed(done);
        }
    }

    fn device_lost(&mut self, device: usize) {
        if let Some(f) = &mut self.fallback {
            return f.device_lost(device);
        }
        if let Some(a) = self.alive.get_mut(device) {
            *a = false;
            let left: Vec<Package> = self.own[device].drain(..).collect();
            self.orphans.extend(left);
        }
    }
}

impl Replay {
    /// For `device`, idle with nothing of its own left: in a plan, a range of a device that has
    /// not started yet. Such a device joins the run late, its thread still waiting for one of an
    /// earlier run that is out on it (the losing copy of a backed-up package, which cannot be
    /// cancelled): a node of two H100 ranks waited 6 and 59 s for its CPU's share of a cut range
    /// while its CPU finished an earlier Mandelbrot package. A replay of a session keeps its
    /// ranges where their data is, and a device the plan gave nothing takes nothing: a session
    /// over a CPU and two H100s planned NBody's forces on the GPUs alone, and the CPU, first
    /// to ask, took the first GPU's half (1.43 s of CPU kernel against 11 ms), that GPU the
    /// second's, and the second GPU idled.
    fn late_device_s(&mut self, device: usize) -> Option<Package> {
        let sharing = self.history.devices.get(device).is_some_and(|d| !d.owned.is_empty());
        if !self.planned || !sharing {
            return None;
        }
        let late = (0..self.own.len()).find(|&d| {
            d != device && self.alive[d] && !self.started[d] && !self.own[d].is_empty()
        })?;
        self.own[late].pop_front()
    }
}

/// `range` as up to `pieces` consecutive packages of whole `fill`s (the last takes the rest),
/// the first and the last a third the size of those between. The device writes the first
/// piece's inputs before any kernel and reads the last piece's outputs after every kernel;
/// small end pieces leave less of either exposed, while the pieces between have kernels long
/// enough to hide their neighbours' transfers.
fn cut(range: std::ops::Range<u64>, pieces: u64, fill: u64) -> Vec<Package> {
    let len = range.end - range.start;
    let n = pieces.min(len / fill).max(1);
    let weight = |i: u64| if n > 2 && i > 0 && i + 1 < n { 3 } else { 1 };
    let total: u64 = (0..n).map(weight).sum();
    let mut out = Vec::new();
    let (mut at, mut sum) = (range.start, 0);
    for i in 0..n {
        sum += weight(i);
        let end = if i + 1 == n {
            range.end
        } else {
            let fills = (len as f64 * sum as f64 / total as f64 / fill as f64).round() as u64;
            (range.start + fills * fill).clamp(at, range.end)
        };
        if end > at {
            out.push(Package { offset: at, len: end - at });
            at = end;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::balance::{DeviceHistory, DeviceKind, DeviceProfile};

    fn setup(devices: usize, total: u64) -> Setup {
        let d = DeviceProfile { kind: DeviceKind::Gpu, nominal_gflops: 1.0, min_groups: 1 };
        Setup { total_groups: total, devices: vec![d; devices] }
    }

    fn history(owned: Vec<Vec<std::ops::Range<u64>>>, total: u64) -> History {
        History {
            total_groups: total,
            devices: owned.into_iter().map(|owned| DeviceHistory { speed: 1.0, owned }).collect(),
        }
    }

    /// Every device's packages until `Done`.
    fn drain(b: &mut Replay, device: usize) -> Vec<Package> {
        let mut out = Vec::new();
        while let Next::Run(p) = b.next(device, 0.0) {
            out.push(p);
        }
        out
    }

    #[test]
    fn each_device_runs_exactly_its_previous_ranges() {
        let mut b = Replay::new(history(vec![vec![0..40, 90..100], vec![40..90]], 100));
        b.start(&setup(2, 100)).unwrap();
        assert_eq!(b.name(), "replay");
        assert_eq!(
            drain(&mut b, 0),
            vec![Package { offset: 0, len: 40 }, Package { offset: 90, len: 10 }]
        );
        assert_eq!(drain(&mut b, 1), vec![Package { offset: 40, len: 50 }]);
    }

    #[test]
    fn in_pieces_each_range_runs_as_whole_fills_in_order() {
        let mut s = setup(2, 1000);
        s.devices[1].min_groups = 64;
        let mut b = Replay::planned(history(vec![vec![0..100], vec![100..1000]], 1000)).in_pieces();
        b.start(&s).unwrap();
        assert_eq!(b.name(), "relaunch-pieces");
        let p = |offset, len| Package { offset, len };
        // Both started (an idle device may take the ranges of one that has not).
        assert_eq!(b.next(1, 0.0), Next::Run(p(100, 128)));
        // An eighth, three eighths, three eighths, an eighth.
        assert_eq!(drain(&mut b, 0), vec![p(0, 13), p(13, 37), p(50, 38), p(88, 12)]);
        // 900 groups in fills of 64: the cuts at 112.5, 450 and 787.5 rounded to fills.
        assert_eq!(drain(&mut b, 1), vec![p(228, 320), p(548, 320), p(868, 132)]);
        // A range under two fills stays whole; two fills make two pieces alike.
        assert_eq!(cut(0..100, PIECES, 64), vec![p(0, 100)]);
        assert_eq!(cut(0..128, PIECES, 64), vec![p(0, 64), p(64, 64)]);
        assert_eq!(cut(0..3, PIECES, 1), vec![p(0, 1), p(1, 1), p(2, 1)]);
    }

    #[test]
    fn a_device_marked_backwards_runs_its_pieces_from_its_block_s_end() {
        let p = |offset, len| Package { offset, len };
        let plan = history(vec![vec![0..80], vec![80..160]], 160);
        let mut b = Replay::planned(plan).in_pieces().backwards(vec![false, true]);
        b.start(&setup(2, 160)).unwrap();
        assert_eq!(b.next(1, 0.0), Next::Run(p(150, 10)));
        assert_eq!(drain(&mut b, 0), vec![p(0, 10), p(10, 30), p(40, 30), p(70, 10)]);
        assert_eq!(drain(&mut b, 1), vec![p(120, 30), p(90, 30), p(80, 10)]);
    }

    #[test]
    fn a_lost_device_s_ranges_go_to_the_next_device_that_asks() {
        let mut b = Replay::new(history(vec![vec![0..30, 60..100], vec![30..60]], 100));
        b.start(&setup(2, 100)).unwrap();
        assert_eq!(b.next(0, 0.0), Next::Run(Package { offset: 0, len: 30 }));
        b.device_lost(0);
        assert_eq!(b.next(0, 0.0), Next::Done);
        assert_eq!(
            drain(&mut b, 1),
            vec![Package { offset: 30, len: 30 }, Package { offset: 60, len: 40 }]
        );
    }

    #[test]
    fn a_device_s_own_next_range_is_queued_ahead_never_a_lost_device_s() {
        let mut b = Replay::new(history(vec![vec![0..30, 60..100], vec![30..60]], 100));
        b.start(&setup(2, 100)).unwrap();
        let p = |offset, len| Package { offset, len };
        assert_eq!(b.next(0, 0.0), Next::Run(p(0, 30)));
        assert_eq!(b.next_ahead(0, 0.0), Next::Run(p(60, 40)));
        assert_eq!(b.next_ahead(0, 0.0), Next::Wait, "nothing of its own left");
        assert_eq!(b.next(1, 0.0), Next::Run(p(30, 30)));
        b.device_lost(0);
        // Device 0's ranges are the driver's to re-run; nothing of device 1's own is left, and
        // an orphan is for whoever is idle first.
        assert_eq!(b.next_ahead(1, 0.0), Next::Wait);
        // Under the Learned fallback nothing is queued.
        let mut f = Replay::new(history(vec![vec![0..50], vec![60..100]], 100));
        f.start(&setup(2, 100)).unwrap();
        assert!(matches!(f.next(0, 0.0), Next::Run(_)));
        assert_eq!(f.next_ahead(0, 0.0), Next::Wait);
    }

    /// In a plan, a device idle with nothing of its own left takes the ranges of a device that
    /// has not started (late to join), one at a time, never those of one that has; the late
    /// device then gets what is left. A replay of a session does not.
    #[test]
    fn a_plan_s_idle_device_takes_a_late_device_s_ranges() {
        let p = |offset, len| Package { offset, len };
        let owned = vec![vec![0..30], vec![30..60, 60..100]];
        let mut b = Replay::planned(history(owned.clone(), 100));
        b.start(&setup(2, 100)).unwrap();
        assert_eq!(b.next(0, 0.0), Next::Run(p(0, 30)));
        assert_eq!(b.next(0, 0.0), Next::Run(p(30, 30)), "device 1 has not started");
        assert_eq!(b.next(1, 0.0), Next::Run(p(60, 40)), "what is left of its own");
        assert_eq!(b.next(0, 0.0), Next::Done);
        assert_eq!(b.next(1, 0.0), Next::Done);
        // Once device 1 started, its ranges stay its own.
        let mut b = Replay::planned(history(owned.clone(), 100));
        b.start(&setup(2, 100)).unwrap();
        assert_eq!(b.next(1, 0.0), Next::Run(p(30, 30)));
        assert_eq!(b.next(0, 0.0), Next::Run(p(0, 30)));
        assert_eq!(b.next(0, 0.0), Next::Done);
        assert_eq!(drain(&mut b, 1), vec![p(60, 40)]);
        // A session's replay waits for the late device.
        let mut b = Replay::new(history(owned, 100));
        b.start(&setup(2, 100)).unwrap();
        assert_eq!(b.next(0, 0.0), Next::Run(p(0, 30)));
        assert_eq!(b.next(0, 0.0), Next::Done);
    }

    /// A device the plan gives nothing (a CPU too slow to be worth a block) asks first and is
    /// done: it never takes the block of a device that has not started.
    #[test]
    fn a_device_the_plan_gives_nothing_takes_nothing() {
        let p = |offset, len| Package { offset, len };
        let owned = vec![vec![], vec![0..50], vec![50..100]];
        let mut b = Replay::planned(history(owned, 100));
        b.start(&setup(3, 100)).unwrap();
        assert_eq!(b.next(0, 0.0), Next::Done, "neither device has started");
        assert_eq!(b.next(1, 0.0), Next::Run(p(0, 50)));
        assert_eq!(b.next(0, 0.0), Next::Done);
        assert_eq!(b.next(2, 0.0), Next::Run(p(50, 50)));
        assert_eq!((b.next(1, 0.0), b.next(2, 0.0)), (Next::Done, Next::Done));
    }

    #[test]
    fn a_history_that_does_not_tile_the_range_falls_back_to_learned() {
        // A gap (50..60 ran nowhere), an overlap, another size, another device count.
        for (owned, total, devices) in [
            (vec![vec![0..50], vec![60..100]], 100, 2),
            (vec![vec![0..60], vec![50..100]], 100, 2),
            (vec![vec![0..50], vec![50..100]], 120, 2),
            (vec![vec![0..50], vec![50..100]], 100, 3),
        ] {
            let h = history(owned, 100);
            let mut b = Replay::new(h.clone());
            b.start(&setup(devices, total)).unwrap();
            assert_eq!(b.name(), "replay(learned)");
            let mut learned = Learned::new(h);
            learned.start(&setup(devices, total)).unwrap();
            for d in 0..devices {
                assert_eq!(b.next(d, 0.0), learned.next(d, 0.0));
            }
        }
    }
}
