use super::bitmap::mask;
use super::*;
use crate::balance::{DeviceKind, DeviceProfile, Dynamic, HGuided, Sigmoid, Static};
use crate::sim::SplitMix64;

fn setup(n: usize, groups: u64) -> Setup {
    Setup {
        total_groups: groups,
        devices: (0..n)
            .map(|_| DeviceProfile { kind: DeviceKind::Gpu, nominal_gflops: 1.0, min_groups: 1 })
            .collect(),
    }
}

fn names(n: usize) -> Vec<String> {
    (0..n).map(|d| format!("dev{d}")).collect()
}

pub(super) fn start(
    b: &mut dyn Balancer,
    n: usize,
    groups: u64,
    backups: bool,
) -> Dispatcher<&mut dyn Balancer> {
    Dispatcher::start(b, setup(n, groups), names(n), Config { backups, ..Config::default() })
        .unwrap()
}

pub(super) fn run(d: Decision) -> Assignment {
    match d {
        Decision::Run(a) => a,
        other => panic!("expected a package, got {other:?}"),
    }
}

/// A scripted balancer: answers from a list per device, counts what it hears.
#[derive(Default)]
struct Script {
    answers: Vec<Vec<Next>>,
    completed: Vec<Package>,
    lost: Vec<usize>,
    panic_in: Option<&'static str>,
}

impl Balancer for Script {
    fn name(&self) -> String {
        "script".into()
    }
    fn start(&mut self, _setup: &Setup) -> Result<()> {
        assert!(self.panic_in != Some("start"), "boom in start");
        Ok(())
    }
    fn next(&mut self, device: usize, _now: f64) -> Next {
        assert!(self.panic_in != Some("next"), "boom in next");
        let list = &mut self.answers[device];
        if list.is_empty() {
            Next::Done
        } else {
            list.remove(0)
        }
    }
    fn completed(&mut self, done: &Completion) {
        assert!(self.panic_in != Some("completed"), "boom in completed");
        self.completed.push(done.package);
    }
    fn device_lost(&mut self, device: usize) {
        assert!(self.panic_in != Some("device_lost"), "boom in device_lost");
        self.lost.push(device);
    }
}

fn pkg(offset: u64, len: u64) -> Package {
    Package { offset, len }
}

#[test]
fn packages_are_checked_against_the_range_and_earlier_hand_outs() {
    for (bad, says) in [
        (pkg(0, 0), "outside the range 0..8 or empty"),
        (pkg(6, 3), "outside the range 0..8 or empty"),
        (pkg(5, u64::MAX), "outside the range 0..8 or empty"),
        (pkg(u64::MAX, 2), "outside the range 0..8 or empty"),
        (pkg(3, 2), "handed out work-group 3 twice"),
    ] {
        let mut b = Script {
            answers: vec![vec![Next::Run(pkg(0, 4)), Next::Run(bad)]],
            ..Script::default()
        };
        let mut d = start(&mut b, 1, 8, false);
        let p = run(d.ask(0, 0.0).unwrap()).package;
        d.kernel_done(0, p, 1.0, None).unwrap();
        d.merged(0, p, 1.0).unwrap();
        let err = d.ask(0, 1.0).unwrap_err().to_string();
        assert!(err.contains("balancer `script`") && err.contains(says), "{err}");
        // Poisoned: every later call says the same.
        assert_eq!(d.ask(0, 2.0).unwrap_err().to_string(), err);
    }
}

#[test]
fn the_bitmaps_work_across_word_boundaries() {
    let mut map = vec![0u64; 3];
    set_range(&mut map, 60..130);
    assert_eq!(first_set(&map, 0..60), None);
    assert_eq!(first_set(&map, 0..61), Some(60));
    assert_eq!(first_set(&map, 130..192), None);
    assert_eq!(first_set(&map, 129..192), Some(129));
    assert_eq!(first_set(&map, 64..65), Some(64));
    assert_eq!(map[1], u64::MAX);
    assert_eq!(map[0], mask(60, 64));
    assert_eq!(map[2], 0b11);
}

#[test]
fn a_balancer_that_stops_handing_out_work_is_an_error_naming_it() {
    // Every device told to wait, nothing running: the second answer closes the loop.
    let mut b = Script { answers: vec![vec![Next::Wait], vec![Next::Wait]], ..Default::default() };
    let mut d = start(&mut b, 2, 8, false);
    assert_eq!(d.ask(0, 0.0).unwrap(), Decision::Wait);
    let err = d.ask(1, 0.0).unwrap_err().to_string();
    assert!(err.contains("`script` stopped handing out work with 8 unit(s) left"), "{err}");
    // `Done` for everyone with work left, likewise.
    let mut b = Script { answers: vec![vec![], vec![]], ..Default::default() };
    let mut d = start(&mut b, 2, 8, false);
    assert_eq!(d.ask(0, 0.0).unwrap(), Decision::Idle);
    assert!(d.ask(1, 0.0).is_err());
}

#[test]
fn a_wait_given_before_a_completion_is_not_taken_for_a_stall() {
    // Device 1 waits until device 0's package completes. When device 0 then asks and is
    // told Done, device 1 has not been asked since the completion: no stall yet, and
    // asked again it gets the rest.
    let mut b = Script {
        answers: vec![
            vec![Next::Run(pkg(0, 4)), Next::Done],
            vec![Next::Wait, Next::Run(pkg(4, 4))],
        ],
        ..Default::default()
    };
    let mut d = start(&mut b, 2, 8, false);
    let p = run(d.ask(0, 0.0).unwrap()).package;
    assert_eq!(d.ask(1, 0.0).unwrap(), Decision::Wait);
    d.kernel_done(0, p, 1.0, None).unwrap();
    d.merged(0, p, 1.0).unwrap();
    assert_eq!(d.ask(0, 1.0).unwrap(), Decision::Idle);
    let q = run(d.ask(1, 1.0).unwrap()).package;
    assert_eq!(q, pkg(4, 4));
    d.kernel_done(1, q, 2.0, None).unwrap();
    d.merged(1, q, 2.0).unwrap();
    assert!(d.is_over());
    assert_eq!(d.ask(1, 2.0).unwrap(), Decision::Stop);
    d.outcome().unwrap();
}

#[test]
fn a_panicking_balancer_is_an_error_naming_it_wherever_it_panics() {
    for place in ["start", "next", "completed", "device_lost"] {
        let mut b = Script {
            answers: vec![vec![Next::Run(pkg(0, 2))], vec![Next::Run(pkg(2, 2))]],
            panic_in: Some(place),
            ..Default::default()
        };
        let err = match Dispatcher::start(
            &mut b as &mut dyn Balancer,
            setup(2, 4),
            names(2),
            Config::default(),
        ) {
            Err(e) => e,
            Ok(mut d) => (|| -> Result<()> {
                let p = run(d.ask(0, 0.0)?).package;
                d.ask(1, 0.0)?;
                d.kernel_done(0, p, 1.0, None)?;
                d.fail(1, 1.5, "gone".into())?;
                Ok(())
            })()
            .unwrap_err(),
        };
        let text = err.to_string();
        assert!(
            text.contains(&format!("balancer `script` panicked in {place}(): boom in {place}")),
            "{place}: {text}"
        );
    }
}

#[test]
fn a_loss_re_runs_exactly_the_device_s_unfinished_packages() {
    // Device 0: [0,2) merged, [2,4) kept but not merged (its read-back pending), [4,6)
    // running. Lost: [2,4) and [4,6) are re-run, [0,2) is not; the balancer hears of it
    // and may hand out again to a device it had told Done.
    let mut b = Script {
        answers: vec![
            vec![Next::Run(pkg(0, 2)), Next::Run(pkg(2, 2)), Next::Run(pkg(4, 2))],
            vec![Next::Run(pkg(6, 2))],
        ],
        ..Default::default()
    };
    let mut d = start(&mut b, 2, 8, false);
    let a = run(d.ask(0, 0.0).unwrap()).package;
    let other = run(d.ask(1, 0.0).unwrap()).package;
    d.kernel_done(0, a, 1.0, None).unwrap();
    let b2 = run(d.ask(0, 1.0).unwrap()).package;
    d.merged(0, a, 1.1).unwrap();
    d.kernel_done(0, b2, 2.0, None).unwrap();
    let c = run(d.ask(0, 2.0).unwrap()).package;
    d.kernel_done(1, other, 2.5, None).unwrap();
    d.merged(1, other, 2.5).unwrap();
    assert_eq!(d.ask(1, 2.5).unwrap(), Decision::Idle);
    let mut requeued = d.fail(0, 3.0, "gone".into()).unwrap();
    requeued.sort_by_key(|p| p.offset);
    assert_eq!(requeued, vec![pkg(2, 2), pkg(4, 2)]);
    assert!(d.retries_pending());
    // The lost device's late completion is discarded; it is told to stop.
    assert_eq!(d.kernel_done(0, c, 3.5, None).unwrap(), Verdict::Discard);
    assert_eq!(d.ask(0, 3.5).unwrap(), Decision::Stop);
    let mut reran = Vec::new();
    for t in [4.0, 5.0] {
        let a = run(d.ask(1, t).unwrap());
        assert_eq!(a.origin, Origin::Retry);
        d.kernel_done(1, a.package, t + 0.5, None).unwrap();
        d.merged(1, a.package, t + 0.5).unwrap();
        reran.push(a.package);
    }
    reran.sort_by_key(|p| p.offset);
    assert_eq!(reran, requeued);
    assert!(d.is_over());
    d.outcome().unwrap();
    let faults: Vec<Package> = d.faults().iter().map(|f| f.1).collect();
    assert_eq!(faults.len(), 2);
    drop(d);
    assert_eq!(b.lost, vec![0]);
}

/// Device 0 slow (10 groups/s), device 1 fast (1000/s); the fast one measured first.
fn straggler(b: &mut dyn Balancer) -> (Dispatcher<&mut dyn Balancer>, Package) {
    let mut d = start(b, 2, 200, true);
    let slow = run(d.ask(0, 0.0).unwrap()).package;
    let fast = run(d.ask(1, 0.0).unwrap()).package;
    d.kernel_done(1, fast, 0.1, None).unwrap();
    d.merged(1, fast, 0.1).unwrap();
    // Not yet a straggler at 0.1 s (needs BACKUP_MARGIN times the copy's 0.1 s).
    assert_eq!(d.ask(1, 0.1).unwrap(), Decision::Idle);
    assert!(d.tick(0.12).unwrap().is_empty());
    let given = d.tick(0.2).unwrap();
    assert_eq!(given.len(), 1);
    assert_eq!(given[0], (1, Assignment { package: slow, origin: Origin::Backup { of: 0 } }));
    (d, slow)
}

#[test]
fn the_first_copy_wins_and_the_balancer_hears_of_it_once() {
    let mut b = Script {
        answers: vec![vec![Next::Run(pkg(0, 100))], vec![Next::Run(pkg(100, 100))]],
        ..Default::default()
    };
    let (mut d, slow) = straggler(&mut b);
    assert_eq!(d.kernel_done(1, slow, 0.3, None).unwrap(), Verdict::Keep { abandoned: Some(0) });
    assert!(d.runs_abandoned(0));
    d.merged(1, slow, 0.3).unwrap();
    assert!(d.is_over());
    assert_eq!(d.kernel_done(0, slow, 10.0, None).unwrap(), Verdict::Discard);
    assert_eq!(d.backups(), &[(0, 1, slow)]);
    d.outcome().unwrap();
    assert_eq!(d.device(0).packages, 0);
    assert_eq!(d.device(1).packages, 2);
    // What each device computed counts the losing copy too.
    assert_eq!((d.device(0).ran, d.device(0).ran_groups), (1, 100));
    assert_eq!(d.device(1).ran, 2);
    drop(d);
    assert_eq!(b.completed, vec![pkg(100, 100), slow]);
}

#[test]
fn losing_one_copy_of_a_backed_up_package_leaves_the_other_to_finish_it() {
    // The original's device is lost while the copy runs: nothing is re-run.
    let mut b = Script {
        answers: vec![vec![Next::Run(pkg(0, 100))], vec![Next::Run(pkg(100, 100))]],
        ..Default::default()
    };
    let (mut d, slow) = straggler(&mut b);
    assert!(d.fail(0, 0.25, "gone".into()).unwrap().is_empty());
    assert_eq!(d.kernel_done(1, slow, 0.3, None).unwrap(), Verdict::Keep { abandoned: None });
    d.merged(1, slow, 0.3).unwrap();
    assert!(d.is_over());
    // The winner lost after its kernel but before its merge: the abandoned copy counts
    // again, and no third copy is made.
    let mut b = Script {
        answers: vec![vec![Next::Run(pkg(0, 100))], vec![Next::Run(pkg(100, 100))]],
        ..Default::default()
    };
    let (mut d, slow) = straggler(&mut b);
    d.kernel_done(1, slow, 0.3, None).unwrap();
    assert!(d.fail(1, 0.31, "gone".into()).unwrap().is_empty());
    assert!(!d.runs_abandoned(0));
    assert_eq!(d.kernel_done(0, slow, 10.0, None).unwrap(), Verdict::Keep { abandoned: None });
    d.merged(0, slow, 10.0).unwrap();
    assert!(d.is_over());
    d.outcome().unwrap();
}

#[test]
fn losing_every_device_is_an_error_listing_each_fault() {
    let mut b = Dynamic::packages(4);
    let mut d = start(&mut b, 2, 8, false);
    run(d.ask(0, 0.0).unwrap());
    run(d.ask(1, 0.0).unwrap());
    d.fail(0, 1.0, "first".into()).unwrap();
    let err = d.fail(1, 2.0, "second".into()).unwrap_err().to_string();
    assert!(err.contains("dev0): first") && err.contains("dev1): second"), "{err}");
}

#[test]
fn the_watchdog_is_a_function_of_the_state_and_the_instant() {
    let rule = WatchdogRule { factor: 4.0, min_seconds: 0.5 };
    let mut b = Script {
        answers: vec![
            vec![Next::Run(pkg(0, 100)), Next::Run(pkg(100, 100))],
            vec![Next::Run(pkg(200, 100))],
            vec![Next::Run(pkg(300, 9700))],
        ],
        ..Default::default()
    };
    let mut d = start(&mut b, 3, 10_000, false);
    let p0 = run(d.ask(0, 0.0).unwrap()).package;
    let p1 = run(d.ask(1, 0.0).unwrap()).package;
    run(d.ask(2, 0.0).unwrap());
    // Every device busy: nobody could take a package over, so none is judged.
    assert!(d.hung(100.0, rule).is_empty());
    // Device 1 measured at 200 groups/s, then idle.
    d.kernel_done(1, p1, 0.5, None).unwrap();
    assert!(d.hung(100.0, rule).is_empty(), "device 1 still has an output to merge");
    d.merged(1, p1, 0.5).unwrap();
    assert_eq!(d.ask(1, 0.5).unwrap(), Decision::Idle);
    // Device 0, unmeasured: 10x the slack over the fastest measured speed scaled by
    // nominal figures (equal here): 4 * 10 * 100 / 200 = 20 s.
    assert!((d.watchdog_limit(0, p0, rule) - 20.0).abs() < 1e-9);
    assert!(d.hung(0.51, rule).is_empty());
    // Measured at 100 groups/s, its next 100 groups may take 4 s.
    d.kernel_done(0, p0, 1.0, None).unwrap();
    d.merged(0, p0, 1.0).unwrap();
    let p = run(d.ask(0, 1.0).unwrap()).package;
    assert!((d.watchdog_limit(0, p, rule) - 4.0).abs() < 1e-9);
    assert!(d.hung(4.99, rule).is_empty());
    let hung = d.hung(5.01, rule);
    assert_eq!(hung.iter().map(|h| h.device).collect::<Vec<_>>(), vec![0]);
    assert!(hung[0].reason().starts_with("hung: package"), "{}", hung[0].reason());
    // Device 2's 9700 groups may take 4 * 10 * 9700 / 200 s.
    assert!(d.hung(1940.0, rule).iter().all(|h| h.device != 2));
    assert!(d.hung(1941.5, rule).iter().any(|h| h.device == 2));
    // Nobody idle any more: nothing is judged, however long.
    d.fail(1, 6.0, "x".into()).unwrap();
    assert!(d.hung(1e9, rule).is_empty());
}

#[test]
fn a_read_back_that_never_ends_is_a_hang_too() {
    // Device 0 kept [0,100) at 1 s (measured 100 groups/s) but never merges it; device 1
    // waits idle. The read-back is given as long as a kernel of its size: 4 s from 1 s.
    let rule = WatchdogRule { factor: 4.0, min_seconds: 0.5 };
    let mut b = Script {
        answers: vec![vec![Next::Run(pkg(0, 100))], vec![Next::Wait, Next::Wait]],
        ..Default::default()
    };
    let mut d = start(&mut b, 2, 200, false);
    let p = run(d.ask(0, 0.0).unwrap()).package;
    assert_eq!(d.ask(1, 0.0).unwrap(), Decision::Wait);
    d.kernel_done(0, p, 1.0, None).unwrap();
    assert_eq!(d.ask(1, 1.0).unwrap(), Decision::Wait);
    assert!(d.hung(4.99, rule).is_empty());
    let hung = d.hung(5.01, rule);
    assert_eq!(hung.len(), 1);
    assert!(hung[0].reason().starts_with("hung: read-back of package"), "{}", hung[0].reason());
    // Lost, its kept package is re-run.
    assert_eq!(d.fail(0, 5.01, hung[0].reason()).unwrap(), vec![p]);
}

/// Random drivers: devices ask, finish, merge late (as the engine's read-back does), are
/// lost and tick in random orders. Whatever happens, the balancer hands each work-group
/// out once, each is merged once, each loss re-runs exactly the lost device's packages
/// that have no other copy left, and the run ends (or, every device lost, fails).
#[test]
fn random_event_orders_merge_every_work_group_exactly_once() {
    let cases =
        std::env::var("HETDSL_PROPERTY_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(3000u64);
    let (mut backed_up, mut queued) = (0, 0);
    for seed in 0..cases {
        let (b, q) = random_run(seed).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        backed_up += b;
        queued += q;
    }
    assert!(backed_up > 0, "no case made a back-up");
    assert!(queued > 0, "no case queued a package ahead");
}

fn random_balancer(g: &mut SplitMix64, n: usize) -> Box<dyn Balancer> {
    match g.range(0, 4) {
        0 => Box::new(Dynamic::chunk(g.range(1, 50))),
        1 => Box::new(HGuided::uniform(2.0, None)),
        2 => Box::new(Sigmoid::guarded()),
        3 => Box::new(Static::with_weights((0..n).map(|_| g.unit() + 0.1).collect())),
        _ => Box::new(Dynamic::packages(g.range(1, 20))),
    }
}

/// The test's own view of a random run: what each device runs, what waits to be merged, what
/// merged, and how often each work-group was handed out and merged.
struct View {
    n: usize,
    running: Vec<Option<Package>>,
    /// Queued behind `running` by `ask_ahead`.
    queued: Vec<Option<Package>>,
    queued_count: usize,
    pending: Vec<(usize, Package)>,
    lost: Vec<bool>,
    stopped: Vec<bool>,
    merged_count: Vec<u32>,
    handed_count: Vec<u32>,
}

impl View {
    fn new(n: usize, groups: u64) -> View {
        View {
            n,
            running: vec![None; n],
            queued: vec![None; n],
            queued_count: 0,
            pending: Vec::new(),
            lost: vec![false; n],
            stopped: vec![false; n],
            merged_count: vec![0; groups as usize],
            handed_count: vec![0; groups as usize],
        }
    }

    /// One random event (`action`, on device `dev`) fed to the dispatcher and to the view.
    fn step<'d, B: DerefMut<Target = dyn Balancer + 'd>>(
        &mut self,
        d: &mut Dispatcher<B>,
        g: &mut SplitMix64,
        action: u64,
        dev: usize,
        now: f64,
    ) -> Result<()> {
        match action {
            // Ask (only while running nothing).
            0..=2 if self.running[dev].is_none() && !self.stopped[dev] => match d.ask(dev, now)? {
                Decision::Run(a) => {
                    if a.origin == Origin::Balancer {
                        for u in a.package.offset..a.package.end() {
                            self.handed_count[u as usize] += 1;
                        }
                    }
                    self.running[dev] = Some(a.package);
                }
                Decision::Stop => self.stopped[dev] = true,
                Decision::Wait | Decision::Idle => {}
            },
            // Finish the running package.
            3..=5 => {
                if let Some(p) = self.running[dev].take() {
                    self.running[dev] = self.queued[dev].take();
                    if let Verdict::Keep { .. } = d.kernel_done(dev, p, now, None)? {
                        self.pending.push((dev, p));
                    }
                }
            }
            // Merge a kept output.
            6 if !self.pending.is_empty() => {
                let i = g.range(0, self.pending.len() as u64 - 1) as usize;
                let (owner, p) = self.pending.swap_remove(i);
                d.merged(owner, p, now)?;
                for u in p.offset..p.end() {
                    self.merged_count[u as usize] += 1;
                }
            }
            7 => {
                d.tick(now)?.into_iter().for_each(|(t, a)| self.running[t] = Some(a.package));
            }
            8 if g.unit() < 0.05 && !self.lost[dev] => self.lose(d, dev, now)?,
            // Queue a package behind the running one.
            9 if self.running[dev].is_some() && self.queued[dev].is_none() => {
                if let Some(a) = d.ask_ahead(dev, now)? {
                    assert_eq!(a.origin, Origin::Balancer);
                    for u in a.package.offset..a.package.end() {
                        self.handed_count[u as usize] += 1;
                    }
                    self.queued[dev] = Some(a.package);
                    self.queued_count += 1;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Lose `dev`, and check the re-runs the dispatcher gives back: each of the device's
    /// running or kept packages with no other copy running, kept or merged.
    fn lose<'d, B: DerefMut<Target = dyn Balancer + 'd>>(
        &mut self,
        d: &mut Dispatcher<B>,
        dev: usize,
        now: f64,
    ) -> Result<()> {
        let mine: Vec<Package> = self.running[dev]
            .iter()
            .chain(self.queued[dev].iter())
            .copied()
            .chain(self.pending.iter().filter(|(o, _)| *o == dev).map(|(_, p)| *p))
            .collect();
        let elsewhere = |p: &Package| {
            (0..self.n).any(|o| o != dev && !self.lost[o] && self.running[o] == Some(*p))
                || self.pending.iter().any(|(o, q)| *o != dev && q == p)
                || self.merged_count[p.offset as usize] > 0
        };
        let mut expected: Vec<Package> = mine.iter().filter(|p| !elsewhere(p)).copied().collect();
        self.lost[dev] = true;
        self.running[dev] = None;
        self.queued[dev] = None;
        self.pending.retain(|(o, _)| *o != dev);
        let got = d.fail(dev, now, "random".into());
        let mut got = match got {
            Ok(v) => v,
            Err(e) if self.lost.iter().all(|l| *l) => return Err(e),
            Err(e) => panic!("a loss with devices left failed: {e}"),
        };
        expected.sort_by_key(|p| p.offset);
        got.sort_by_key(|p| p.offset);
        assert_eq!(got, expected, "re-runs after losing device {dev}");
        Ok(())
    }
}

/// One random run; returns the number of back-ups made and of packages queued ahead.
fn random_run(seed: u64) -> std::result::Result<(usize, usize), String> {
    let mut g = SplitMix64::new(seed);
    let n = g.range(1, 5) as usize;
    let groups = g.range(1, 600);
    let mut balancer = random_balancer(&mut g, n);
    let mut d = Dispatcher::start(
        balancer.as_mut(),
        setup(n, groups),
        names(n),
        Config { backups: g.unit() < 0.6, ..Config::default() },
    )
    .map_err(|e| e.to_string())?;
    let mut view = View::new(n, groups);
    let mut now = 0.0;
    for _step in 0..200_000 {
        if d.is_over() {
            break;
        }
        now += g.unit() * 0.01;
        let action = g.range(0, 9);
        let dev = g.range(0, n as u64 - 1) as usize;
        if let Err(e) = view.step(&mut d, &mut g, action, dev, now) {
            if view.lost.iter().all(|l| *l) && matches!(e, Error::AllDevicesFailed(_)) {
                return Ok((0, view.queued_count));
            }
            return Err(format!("unexpected error: {e}"));
        }
        // A device told to stop while others still work is fine; the driver only needs
        // someone alive and not stopped while work is left.
        if !d.is_over() && (0..n).all(|x| view.lost[x] || view.stopped[x]) {
            return Err("every device stopped with work left".into());
        }
    }
    if !d.is_over() {
        return Err(format!("not over after 200000 steps: {} left", d.unmerged()));
    }
    d.outcome().map_err(|e| e.to_string())?;
    if view.handed_count.iter().any(|&c| c != 1) {
        return Err("a work-group handed out other than once".into());
    }
    if view.merged_count.iter().any(|&c| c != 1) {
        return Err("a work-group merged other than once".into());
    }
    Ok((d.backups().len(), view.queued_count))
}
