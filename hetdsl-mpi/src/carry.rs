//! What a node remembers of its devices from one range to the next. Each range a rank gets is
//! a whole co-execution with a fresh balancer, which knows nothing of the devices' speeds and
//! so probes every device again: on a node of four H200s and a CPU 350 times slower than one,
//! the CPU's probe of one fill (32 work-groups) lasts 0.3–0.9 s, most of a one-second range,
//! and the range then waits for it (or for a back-up copy of it). Simulated on that node, ranges
//! of 16 fills per GPU ran at 0.93 of the node's ideal on a log-normal kernel, and at 0.79 on a
//! regular one with 4 fills per GPU, where the GPUs alone ran at 0.95 and 0.98.
//!
//! [`Carried`] wraps the node's balancer for one range: from the speeds measured on the
//! earlier ranges of this rank ([`NodeMemory`], shared by the rank's ranges), a device whose
//! single fill would take more than [`SIT_OUT`] of the range's predicted time sits the range out
//! (its share goes to the others from the start, as for a lost device). Pure: the MPI driver
//! and the cluster simulator both use it.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use hetdsl::balance::{Completion, Next, Setup};
use hetdsl::{Balancer, Package, Result};

/// A device sits a range out when its share of the node's speed is under this fraction of
/// the share of the range one fill of it (its occupancy bound) is predicted to last: it could
/// speed the range up by its share at most, while its one package, should it run slow (a
/// costly region, jitter), holds the whole range by up to a fill. A CPU 1 400 times slower than
/// a node's four GPUs with a fill of 32 work-groups sits out ranges of 70 000 work-groups
/// (its fill lasts 0.65 of the range) and runs in ranges of 16 million; a peer GPU, a quarter
/// of the node, runs in any range of more than a fortieth of its fill.
pub const SIT_OUT: f64 = 0.1;

/// Per device of a node (by index), its speed relative to the fastest device measured in the
/// same range, from the latest range it ran in. Shared by every range one rank runs.
#[derive(Debug, Clone, Default)]
pub struct NodeMemory(Arc<Mutex<Vec<Option<f64>>>>);

impl NodeMemory {
    pub fn new() -> Self {
        Self::default()
    }

    /// The relative speeds known so far.
    pub fn relative(&self) -> Vec<Option<f64>> {
        self.0.lock().map(|m| m.clone()).unwrap_or_default()
    }

    fn set(&self, device: usize, relative: f64) {
        if let Ok(mut m) = self.0.lock() {
            if m.len() <= device {
                m.resize(device + 1, None);
            }
            m[device] = Some(relative);
        }
    }
}

/// Which devices of `setup` sit a range out, given their relative speeds (see [`SIT_OUT`]).
/// Never the fastest, nor any device while one has no known speed (all are measured on this
/// range).
pub fn sitting_out(setup: &Setup, relative: &[Option<f64>]) -> Vec<bool> {
    let n = setup.devices.len();
    let rel: Vec<Option<f64>> = (0..n)
        .map(|j| relative.get(j).copied().flatten().filter(|r| r.is_finite() && *r > 0.0))
        .collect();
    let mut out = vec![false; n];
    if rel.iter().any(Option::is_none) {
        return out;
    }
    let rel: Vec<f64> = rel.into_iter().flatten().collect();
    let fastest = (0..n).max_by(|a, b| rel[*a].total_cmp(&rel[*b]));
    // Sit the slowest out first: each one out lengthens the range the others run.
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|a, b| rel[*a].total_cmp(&rel[*b]));
    for j in order {
        if Some(j) == fastest {
            continue;
        }
        let running: f64 = (0..n).filter(|i| !out[*i] && *i != j).map(|i| rel[i]).sum();
        // In units of the fastest device's seconds per work-group: the range's predicted time
        // without j, and one fill of j.
        let range = setup.total_groups as f64 / running.max(f64::MIN_POSITIVE);
        let fill = setup.devices[j].min_groups.max(1) as f64 / rel[j];
        let share = rel[j] / (running + rel[j]);
        if share < SIT_OUT * fill / range {
            out[j] = true;
        }
    }
    out
}

/// A node's balancer for one range, told what the node's earlier ranges measured.
pub struct Carried {
    inner: Box<dyn Balancer>,
    memory: NodeMemory,
    out: Vec<bool>,
    /// This range's (work-groups, seconds) per device.
    ran: Vec<(u64, f64)>,
    /// Per device, the package it runs: (work-groups, handed out at).
    running: Vec<Option<(u64, f64)>>,
    /// Work-groups in the range, handed out so far, and each device's occupancy bound.
    total: u64,
    handed: u64,
    fills: Vec<u64>,
    /// Packages handed out as one that the inner balancer handed out as several (by offset).
    pieces: HashMap<u64, Vec<Package>>,
    /// Packages of the inner balancer not yet handed out (see `next`).
    spares: VecDeque<Package>,
}

impl Carried {
    pub fn new(inner: Box<dyn Balancer>, memory: NodeMemory) -> Self {
        Carried {
            inner,
            memory,
            out: Vec::new(),
            ran: Vec::new(),
            running: Vec::new(),
            total: 0,
            handed: 0,
            fills: Vec::new(),
            pieces: HashMap::new(),
            spares: VecDeque::new(),
        }
    }
}

impl Carried {
    /// The inner balancer's next package for `device`, with the crumb it would leave behind:
    /// when fewer work-groups than one fill of the device would be left, the inner balancer is
    /// asked again and the pieces handed out as one package. A crumb on its own costs a whole
    /// fill of whichever device runs it, after the others have finished; in the tail of a short
    /// range on a kernel whose cost changes along the range, the shares planned from earlier
    /// speeds leave such crumbs. A piece that does not follow on is kept for the next ask.
    fn take(&mut self, device: usize, now: f64) -> Next {
        let first = self.inner.next(device, now);
        let Next::Run(p) = first else { return first };
        self.handed += p.len;
        let fill = self.fills.get(device).copied().unwrap_or(1);
        let mut whole = p;
        let mut pieces = vec![p];
        while self.handed < self.total && self.total - self.handed < fill {
            let Next::Run(q) = self.inner.next(device, now) else { break };
            self.handed += q.len;
            if q.offset == whole.end() {
                whole.len += q.len;
                pieces.push(q);
            } else {
                self.spares.push_back(q);
                break;
            }
        }
        if pieces.len() > 1 {
            self.pieces.insert(whole.offset, pieces);
        }
        Next::Run(whole)
    }
}

impl Balancer for Carried {
    fn name(&self) -> String {
        self.inner.name()
    }

    fn start(&mut self, setup: &Setup) -> Result<()> {
        self.inner.start(setup)?;
        self.out = sitting_out(setup, &self.memory.relative());
        self.ran = vec![(0, 0.0); setup.devices.len()];
        self.running = vec![None; setup.devices.len()];
        self.total = setup.total_groups;
        self.handed = 0;
        self.fills = setup.devices.iter().map(|d| d.min_groups.max(1)).collect();
        self.pieces.clear();
        self.spares.clear();
        for (j, out) in self.out.iter().enumerate() {
            if *out {
                self.inner.device_lost(j);
            }
        }
        Ok(())
    }

    fn next(&mut self, device: usize, now: f64) -> Next {
        if self.out.get(device).copied().unwrap_or(false) {
            return Next::Done;
        }
        let next = match self.spares.pop_front() {
            Some(p) => Next::Run(p),
            None => self.take(device, now),
        };
        if let (Next::Run(p), Some(slot)) = (next, self.running.get_mut(device)) {
            *slot = Some((p.len, now));
        }
        next
    }

    fn completed(&mut self, done: &Completion) {
        match self.pieces.remove(&done.package.offset).filter(|_| done.package.len > 0) {
            // Each piece as if run alone, the times shared out by length.
            Some(pieces) => {
                let (len, span) = (done.package.len as f64, done.host_end - done.host_start);
                let mut start = done.host_start;
                for piece in pieces {
                    let share = piece.len as f64 / len;
                    let end = start + span * share;
                    self.inner.completed(&Completion {
                        device: done.device,
                        package: piece,
                        kernel_seconds: done.kernel_seconds * share,
                        host_start: start,
                        host_end: end,
                    });
                    start = end;
                }
            }
            None => self.inner.completed(done),
        }
        let seconds = done.seconds();
        if let Some(r) = self.ran.get_mut(done.device) {
            r.0 += done.package.len;
            r.1 += seconds.max(0.0);
        }
        if let Some(slot) = self.running.get_mut(done.device) {
            *slot = None;
        }
        let speed = |(g, s): (u64, f64)| if s > 0.0 { g as f64 / s } else { 0.0 };
        let best = self.ran.iter().map(|r| speed(*r)).fold(0.0, f64::max);
        if best <= 0.0 {
            return;
        }
        for j in 0..self.ran.len() {
            let measured = speed(self.ran[j]);
            // A device whose first package is still running (or lost to a back-up copy, and so
            // never completes) is at most as fast as that package so far: a slow device is
            // known as slow even when a faster one always finishes its package for it.
            let bound = self.running[j]
                .filter(|(_, since)| done.host_end > *since)
                .map(|(len, since)| len as f64 / (done.host_end - since));
            let known = match (measured > 0.0, bound) {
                (true, _) => Some(measured),
                (false, Some(b)) => Some(b),
                (false, None) => None,
            };
            if let Some(s) = known {
                self.memory.set(j, (s / best).min(1.0));
            }
        }
    }

    fn device_lost(&mut self, device: usize) {
        self.inner.device_lost(device);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hetdsl::balance::{DeviceKind, DeviceProfile};

    fn setup(total: u64) -> Setup {
        let d = |kind, min_groups| DeviceProfile { kind, nominal_gflops: 1.0, min_groups };
        Setup {
            total_groups: total,
            devices: vec![
                d(DeviceKind::Cpu, 32),
                d(DeviceKind::Gpu, 1056),
                d(DeviceKind::Gpu, 1056),
            ],
        }
    }

    #[test]
    fn a_slow_device_sits_out_short_ranges_only() {
        let rel = [Some(1.0 / 350.0), Some(1.0), Some(0.98)];
        // 70 000 groups on two GPUs: 35 000 fastest-groups of time; a CPU fill 11 200.
        assert_eq!(sitting_out(&setup(70_000), &rel), vec![true, false, false]);
        // 16 million: the CPU's fill is 0.14 % of the range.
        assert_eq!(sitting_out(&setup(16_000_000), &rel), vec![false, false, false]);
        // Unknown speeds: everyone runs (and is measured).
        assert_eq!(sitting_out(&setup(70_000), &[None, Some(1.0), Some(1.0)]), vec![false; 3]);
        // Peer GPUs share a range of a few fills each...
        assert_eq!(sitting_out(&setup(4_000), &rel), vec![true, false, false]);
        // ...but a range of 10 work-groups, a hundredth of one fill, runs on the fastest alone.
        assert_eq!(sitting_out(&setup(10), &rel), vec![true, false, true]);
    }

    /// Through hetdsl's own dispatcher (the simulator): on a node's second short range, the CPU
    /// measured on the first gets nothing, every work-group still runs exactly once (the
    /// simulator errors otherwise), and the range ends sooner than the first.
    #[test]
    fn the_second_range_runs_without_the_measured_slow_device() {
        use hetdsl::sim::{simulate, CostProfile, CostTable, SimOptions};
        let c = crate::scenario::cluster(1, false, CostProfile::Uniform);
        let devices = &c.nodes[0].devices;
        let table = CostTable::new(&CostProfile::Uniform, 70_000, 64);
        let memory = NodeMemory::new();
        let options = SimOptions {
            seed: 3,
            loss: None,
            backups: true,
            waves: false,
            ..SimOptions::default()
        };
        let mut runs = Vec::new();
        for _ in 0..2 {
            let mut b = Carried::new(hetdsl::balance::default_balancer(), memory.clone());
            runs.push(simulate(devices, &table, &mut b, &options).unwrap());
        }
        assert!(runs[0].device_packages[0] > 0, "the CPU is probed on the first range");
        assert_eq!(runs[1].device_packages[0], 0, "{:?}", runs[1].device_packages);
        assert!(runs[1].device_packages[1..].iter().all(|n| *n > 0));
        assert!(runs[1].makespan < runs[0].makespan, "{} {}", runs[1].makespan, runs[0].makespan);
    }

    /// Hands out the sizes it is given, from the front, and records what it hears.
    struct Scripted {
        sizes: Vec<u64>,
        left: hetdsl::balance::Remaining,
        heard: Arc<Mutex<Vec<(usize, Package, f64)>>>,
    }

    impl Balancer for Scripted {
        fn name(&self) -> String {
            "scripted".into()
        }
        fn start(&mut self, setup: &Setup) -> Result<()> {
            self.left = hetdsl::balance::Remaining::new(setup.total_groups);
            Ok(())
        }
        fn next(&mut self, _device: usize, _now: f64) -> Next {
            let len = if self.sizes.is_empty() { 1 } else { self.sizes.remove(0) };
            self.left.take(len).map_or(Next::Done, Next::Run)
        }
        fn completed(&mut self, done: &Completion) {
            if let Ok(mut h) = self.heard.lock() {
                h.push((done.device, done.package, done.kernel_seconds));
            }
        }
        fn device_lost(&mut self, _device: usize) {}
    }

    /// A crumb under one fill that the inner balancer would leave is handed out with the
    /// package before it, and the inner balancer hears each of its own packages completed, the
    /// time shared by length.
    #[test]
    fn a_crumb_goes_out_with_the_package_before_it() {
        let heard = Arc::new(Mutex::new(Vec::new()));
        let scripted = Scripted {
            sizes: vec![1000, 1000, 30],
            left: hetdsl::balance::Remaining::new(0),
            heard: heard.clone(),
        };
        let mut c = Carried::new(Box::new(scripted), NodeMemory::new());
        let d =
            |min_groups| DeviceProfile { kind: DeviceKind::Gpu, nominal_gflops: 1.0, min_groups };
        c.start(&Setup { total_groups: 2030, devices: vec![d(100), d(100)] }).unwrap();
        assert_eq!(c.next(0, 0.0), Next::Run(Package { offset: 0, len: 1000 }));
        let merged = Package { offset: 1000, len: 1030 };
        assert_eq!(c.next(1, 0.0), Next::Run(merged));
        assert_eq!(c.next(0, 0.1), Next::Done);
        c.completed(&Completion {
            device: 1,
            package: merged,
            kernel_seconds: 1.03,
            host_start: 0.0,
            host_end: 1.03,
        });
        let heard = heard.lock().unwrap().clone();
        assert_eq!(heard.len(), 2, "{heard:?}");
        assert_eq!(heard[0].1, Package { offset: 1000, len: 1000 });
        assert_eq!(heard[1].1, Package { offset: 2000, len: 30 });
        assert!((heard[0].2 - 1.0).abs() < 1e-9 && (heard[1].2 - 0.03).abs() < 1e-9);
    }
}
