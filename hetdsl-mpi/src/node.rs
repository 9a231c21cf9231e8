//! One node's share: the ranges rank 0 hands this rank, each run on the node's own devices
//! with `Launch::groups` and the node's balancer, over staging buffers that hold the range's
//! bytes of each sliced argument (the engine sees a window of the argument,
//! `HostRegion::window`). A range's inputs arrive in such buffers, which the node swaps in, and
//! its outputs leave in them, lent: the node never copies a range's bytes, and gets buffers
//! back through its [`Spares`]. Rank 0's own node works in the caller's buffers in place
//! instead, where it can (`crate::caller`).

use std::sync::{Arc, Mutex};
use std::time::Instant;

use hetdsl::balance::{DeviceHistory, History, Replay};
use hetdsl::engine::{Arg, HostRegion};
use hetdsl::report::DeviceReport;
use hetdsl::{Balancer, Direction, Error, Fault, Package, Pattern, Program};

use crate::carry::{Carried, NodeMemory};
use crate::payload::Spares;
use crate::recall::{CutRan, Measured, NodeForm, NodeRecall, PieceRule};
use crate::spec::{ArgKind, LaunchSpec};

/// Builds a node's balancer for each range (a balancer serves one run).
pub type BalancerFactory = Arc<dyn Fn() -> Box<dyn Balancer> + Send + Sync>;

/// Why a range could not run on this node.
#[derive(Debug)]
pub enum Failure {
    /// A mistake in the launch itself, which every rank would make: the run ends with it.
    User(Error),
    /// This node's devices could not run it: the range goes to another rank.
    Devices(Error),
}

impl Failure {
    fn of(e: Error) -> Failure {
        match e {
            Error::BadRange(_)
            | Error::BadArgument { .. }
            | Error::BadConfig(_)
            | Error::BadBalancer(_)
            | Error::NoSuchKernel { .. } => Failure::User(e),
            _ => Failure::Devices(e),
        }
    }
}

/// A finished range: each output's staging buffer (in argument order, holding the range's
/// bytes of it from its start, empty for one worked in place; give it back to
/// [`Node::spares`] once they are sent or merged), the seconds the whole run took and the seconds its devices
/// computed (the engine's ROI: the run less its set-up of queues, buffers and threads).
#[derive(Debug)]
pub struct Finished {
    pub outputs: Vec<Vec<u8>>,
    pub seconds: f64,
    pub compute_seconds: f64,
}

/// The node executor of one rank.
pub struct Node<'p> {
    program: &'p Program,
    spec: LaunchSpec,
    /// One staging buffer per buffer argument: a `whole` input's, all of it, from the start;
    /// a sliced input's as its range arrives and an output's taken for its range, each holding
    /// the range's bytes from its start (empty until then, while an output's is lent with a
    /// finished range's bytes, for the other arguments and for one worked in place).
    buffers: Vec<Vec<u8>>,
    /// Per argument, the caller's memory worked in place (rank 0's node; empty elsewhere).
    in_place: Vec<Option<HostRegion<'p>>>,
    spares: Spares,
    balancer: BalancerFactory,
    /// Faults injected into the ranges from the given one on (0-based), for testing.
    faults: Vec<(usize, Fault)>,
    /// Ranges this node has started.
    ranges: usize,
    warm: bool,
    /// What the node's earlier ranges measured of its devices (`None`: each range's balancer
    /// starts from nothing).
    memory: Option<NodeMemory>,
    /// What earlier calls of this launch measured of the node's devices (`None`: every range
    /// runs with the node's balancer).
    recall: Option<Arc<Mutex<NodeRecall>>>,
    /// Ranges of this call cut from `recall`, one package per device that got work.
    pub planned_ranges: usize,
    /// Of those, the ranges run with each device's block in pieces ([`NodeForm::Pieces`]).
    pub pieces_ranges: usize,
    /// When a cut range runs in pieces.
    piece_rule: PieceRule,
    /// Seconds of every range's run outside the engine's ROI (set-up, joining), added up.
    pub setup_seconds: f64,
    /// Every device's share over every range, as the engine reported it.
    pub devices: Vec<DeviceReport>,
}

impl<'p> Node<'p> {
    pub fn new(program: &'p Program, spec: LaunchSpec, balancer: BalancerFactory) -> Self {
        Node::with_spares(program, spec, balancer, Spares::default())
    }

    /// A node whose staging buffers come from `spares` and go back to it when the node is
    /// dropped, so that the next call's node finds them already written to (a
    /// [`crate::Cluster`] keeps one pool across calls).
    pub fn with_spares(
        program: &'p Program,
        spec: LaunchSpec,
        balancer: BalancerFactory,
        spares: Spares,
    ) -> Self {
        // A `whole` input's arrives once, all of it; the others arrive or are taken per range.
        let buffers = (spec.args.iter())
            .map(|a| match a.pattern {
                Some(Pattern::Whole) if a.kind.is_buffer() => spares.take(a.bytes() as usize),
                _ => Vec::new(),
            })
            .collect();
        Node {
            program,
            spec,
            buffers,
            in_place: Vec::new(),
            spares,
            balancer,
            faults: Vec::new(),
            ranges: 0,
            warm: false,
            memory: Some(NodeMemory::new()),
            recall: None,
            planned_ranges: 0,
            pieces_ranges: 0,
            piece_rule: PieceRule::default(),
            setup_seconds: 0.0,
            devices: Vec::new(),
        }
    }

    /// Faults injected into every range this node runs (testing).
    pub fn inject(&mut self, faults: Vec<Fault>) {
        self.faults = faults.into_iter().map(|f| (0, f)).collect();
    }

    /// Faults injected into the ranges this node runs from the given one on (testing a node
    /// whose devices fail after some of its ranges succeeded).
    pub fn inject_from(&mut self, faults: Vec<(usize, Fault)>) {
        self.faults = faults;
    }

    /// Whether each range's balancer is told the devices' speeds measured on the node's
    /// earlier ranges (`crate::carry`; on by default).
    pub fn carry_speeds(&mut self, on: bool) {
        self.memory = on.then(NodeMemory::new);
    }

    /// Cut each range of this call from what the earlier calls of the same launch measured
    /// (`crate::recall::NodeRecall`), which this call's ranges then add to.
    pub fn recall(&mut self, recall: Arc<Mutex<NodeRecall>>) {
        lock(&recall).begin_call(self.program.devices().len());
        self.recall = Some(recall);
    }

    /// When a cut range runs with each device's block in pieces ([`NodeForm`]).
    pub fn piece_rule(&mut self, rule: PieceRule) {
        self.piece_rule = rule;
    }

    /// Works in the caller's memory in place, per argument where given (rank 0's node): its
    /// ranges' inputs are read and outputs written there, neither arriving nor leaving in
    /// staging buffers. `crate::caller` says why nothing else touches those bytes meanwhile.
    pub(crate) fn work_in_place(&mut self, regions: Vec<Option<HostRegion<'p>>>) {
        for (buffer, region) in self.buffers.iter_mut().zip(&regions) {
            if region.is_some() {
                *buffer = Vec::new();
            }
        }
        self.in_place = regions;
    }

    fn region(&self, arg: usize) -> Option<HostRegion<'p>> {
        self.in_place.get(arg).copied().flatten()
    }

    /// The staging buffer of a `Whole` input `arg`, as long as the argument (to receive it
    /// once).
    pub fn buffer_mut(&mut self, arg: usize) -> &mut [u8] {
        let full = self.spec.args[arg].bytes() as usize;
        let buffer = &mut self.buffers[arg];
        let full = full.min(buffer.len());
        &mut buffer[..full]
    }

    pub fn spec(&self) -> &LaunchSpec {
        &self.spec
    }

    /// The pool this node takes staging buffers from: give back the buffers of a finished
    /// range once its outputs are sent or merged, and take from it the buffers an order's
    /// inputs arrive in.
    pub fn spares(&self) -> Spares {
        self.spares.clone()
    }

    /// Runs `package` with `inputs`: one buffer per sliced input not worked in place (in
    /// argument order), holding the range's bytes of it from its start; each replaces the
    /// node's staging buffer, which goes to the spares.
    pub fn run(&mut self, package: Package, inputs: Vec<Vec<u8>>) -> Result<Finished, Failure> {
        let mut next = inputs.into_iter();
        for (i, a) in self.spec.args.iter().enumerate() {
            let whole = a.pattern == Some(Pattern::Whole);
            if self.region(i).is_some() || !a.kind.is_buffer() || whole {
                continue;
            }
            let need = self.spec.byte_range(i, package).map_err(Failure::User)?.len();
            if a.kind.reads() {
                let part = next.next().filter(|p| p.len() >= need).ok_or_else(|| {
                    Failure::User(Error::BadConfig(format!(
                        "argument {i}: the input of {package:?} did not arrive whole"
                    )))
                })?;
                self.spares.give(std::mem::replace(&mut self.buffers[i], part));
            } else if self.buffers[i].len() < need {
                // None yet, lent with an earlier range's outputs, or too short for this one.
                let longer = self.spares.take(need);
                self.spares.give(std::mem::replace(&mut self.buffers[i], longer));
            }
        }
        let start = Instant::now();
        let report = self.launch(package);
        self.ranges += 1;
        let report = report.map_err(Failure::of)?;
        let seconds = start.elapsed().as_secs_f64();
        let compute_seconds = report.roi_seconds.clamp(0.0, seconds);
        self.setup_seconds += seconds - compute_seconds;
        self.warm = true;
        self.add(&report.devices);
        let outputs = (self.spec.args.iter().zip(self.buffers.iter_mut()))
            .filter(|(a, _)| a.kind.writes())
            .map(|(_, b)| std::mem::take(b))
            .collect();
        Ok(Finished { outputs, seconds, compute_seconds })
    }

    fn launch(&mut self, package: Package) -> hetdsl::Result<hetdsl::Report> {
        let range = package.offset..package.end();
        // Injected faults name devices by their place in the program, which a cut that leaves
        // devices out would shift: such a range runs with every device.
        let faulted = self.faults.iter().any(|(from, _)| self.ranges >= *from);
        let split = match &self.recall {
            Some(r) if !faulted => lock(r).split(range.clone(), self.piece_rule),
            _ => None,
        };
        let spec = &self.spec;
        let mut launch = self
            .program
            .launch(&spec.kernel)
            .global(&spec.global)
            .local(&spec.local)
            .groups(range.clone())
            .warmup(!self.warm);
        // The devices a cut gives work to, by position; the others are not set up at all.
        let taking: Option<Vec<usize>> = split
            .as_ref()
            .map(|cut| (0..cut.blocks.len()).filter(|&d| cut.blocks[d].is_some()).collect());
        launch = match (&split, &taking) {
            (Some(cut), Some(taking)) => {
                let blocks = &cut.blocks;
                let devices = taking
                    .iter()
                    .filter_map(|&d| blocks[d].clone())
                    .map(|b| DeviceHistory {
                        speed: 1.0,
                        owned: std::iter::once(b.start - range.start..b.end - range.start)
                            .collect(),
                    })
                    .collect();
                let history = History { total_groups: package.len, devices };
                let replay = match cut.form {
                    NodeForm::Whole => Replay::planned(history),
                    NodeForm::Pieces => Replay::planned(history).in_pieces(),
                };
                launch.on_devices(taking).balancer(Box::new(replay))
            }
            _ => {
                let made = self.make_balancer()?;
                launch.balancer(match &self.memory {
                    Some(m) => Box::new(Carried::new(made, m.clone())),
                    None => made,
                })
            }
        };
        for (_, f) in self.faults.iter().filter(|(from, _)| self.ranges >= *from) {
            launch = launch.inject(*f);
        }
        for arg in kernel_args(spec, &mut self.buffers, &self.in_place, package)? {
            launch = launch.arg(arg);
        }
        let ran = launch.run();
        let Some(recall) = &self.recall else { return ran };
        let mut report = match ran {
            Ok(r) => r,
            Err(e) => {
                let ran = CutRan { seconds: 0.0, busiest: 0.0 };
                lock(recall).ran(split.as_ref().map(|c| (c, ran)), Vec::new(), false, 0.0);
                return Err(e);
            }
        };
        // Positions in the launch back to the node's devices.
        let position = |d: usize| taking.as_ref().map_or(Some(d), |t| t.get(d).copied());
        for d in &mut report.devices {
            d.index = position(d.index).unwrap_or(d.index);
        }
        let measured = report
            .trace
            .iter()
            .filter(|t| t.merged)
            .filter_map(|t| {
                Some(Measured {
                    lane: position(t.device)?,
                    offset: report.first_group + t.package.offset,
                    len: t.package.len,
                    seconds: t
                        .kernel_seconds
                        .filter(|k| *k > 0.0)
                        .unwrap_or(t.host_end - t.host_start),
                })
            })
            .collect();
        let clean = report.faults.is_empty() && report.devices.iter().all(|d| d.fault.is_none());
        let busiest = report.devices.iter().map(|d| d.busy_seconds).fold(0.0, f64::max);
        let ran = CutRan { seconds: report.roi_seconds, busiest };
        lock(recall).ran(split.as_ref().map(|c| (c, ran)), measured, clean, report.balance);
        self.planned_ranges += usize::from(split.is_some());
        self.pieces_ranges += usize::from(split.is_some_and(|c| c.form == NodeForm::Pieces));
        Ok(report)
    }

    /// The node's balancer for one range, from the caller's factory. A panic there is the
    /// caller's mistake, an error as a balancer's own panic is in hetdsl: unwinding, it ended
    /// the node's thread, and rank 0 waited for its node's answer for ever.
    fn make_balancer(&self) -> hetdsl::Result<Box<dyn Balancer>> {
        let made = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (self.balancer)()));
        made.map_err(|p| {
            let why = crate::given::panic_text(&*p);
            Error::BadBalancer(format!("the node balancer's factory panicked: {why}"))
        })
    }

    /// Adds one range's device reports to the node's totals (matched by device index).
    fn add(&mut self, ran: &[DeviceReport]) {
        for d in ran {
            match self.devices.iter_mut().find(|t| t.index == d.index && t.name == d.name) {
                Some(t) => {
                    t.packages += d.packages;
                    t.groups += d.groups;
                    t.busy_seconds += d.busy_seconds;
                    t.fault = d.fault.clone().or(t.fault.take());
                }
                None => self.devices.push(d.clone()),
            }
        }
    }
}

impl Drop for Node<'_> {
    /// The staging buffers go back to the pool, for the next call's node.
    fn drop(&mut self) {
        self.spares.give_all(self.buffers.drain(..));
    }
}

/// The launch's arguments over `package`: the caller's memory in place, or the node's staging
/// buffers, a sliced one as a window of the range's bytes.
fn kernel_args<'s>(
    spec: &'s LaunchSpec,
    buffers: &'s mut [Vec<u8>],
    in_place: &[Option<HostRegion<'s>>],
    package: Package,
) -> hetdsl::Result<Vec<Arg<'s>>> {
    let mut args = Vec::with_capacity(spec.args.len());
    for (i, (a, buf)) in spec.args.iter().zip(buffers.iter_mut()).enumerate() {
        let (elem, pattern) = (a.elem as usize, a.pattern.unwrap_or(Pattern::Whole));
        let word = || u64::from_le_bytes(a.value.get(..8)?.try_into().ok()?).try_into().ok();
        let dir = match a.kind {
            ArgKind::In => Direction::In,
            ArgKind::Out => Direction::Out,
            ArgKind::InOut => Direction::InOut,
            ArgKind::Scalar => {
                args.push(Arg::Scalar(a.value.clone()));
                continue;
            }
            ArgKind::Local => {
                args.push(Arg::Local(word().unwrap_or(usize::MAX)));
                continue;
            }
            ArgKind::LocalPerItem => {
                args.push(Arg::LocalPerItem(word().unwrap_or(usize::MAX)));
                continue;
            }
        };
        let full = a.bytes() as usize;
        if let Some(region) = in_place.get(i).copied().flatten() {
            args.push(Arg::Region { region, elem, pattern, dir });
        } else if pattern == Pattern::Whole {
            let whole: &'s Vec<u8> = buf;
            args.push(Arg::In { bytes: &whole[..full.min(whole.len())], elem, pattern });
        } else {
            let bytes = spec.byte_range(i, package)?;
            if buf.len() < bytes.len() {
                return Err(Error::BadConfig(format!(
                    "argument {i}: a staging buffer of {} bytes for bytes {bytes:?}",
                    buf.len()
                )));
            }
            // SAFETY: the node's own buffer, borrowed for as long as the launch: nothing else
            // touches it meanwhile, and the launch only the window's bytes (the engine refuses
            // a window that misses any its work-groups touch).
            let region =
                unsafe { HostRegion::window(buf.as_mut_ptr(), bytes.len(), bytes.start, full) };
            args.push(Arg::Region { region, elem, pattern, dir });
        }
    }
    Ok(args)
}

fn lock(recall: &Mutex<NodeRecall>) -> std::sync::MutexGuard<'_, NodeRecall> {
    recall.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::ArgSpec;
    use hetdsl::{KernelSource, Pattern, Runtime};

    const SOURCE: &str = "__kernel void twice(__global const uint* x, __global uint* y) {
        size_t i = get_global_id(0);
        y[i] = 2u * x[i] + 1u;
    }";

    fn buffer(kind: ArgKind, len: u64) -> ArgSpec {
        ArgSpec { kind, elem: 4, len, pattern: Some(Pattern::ONE_TO_ONE), value: Vec::new() }
    }

    /// A dropped node's staging buffers go back to its pool, and the next call's node takes a
    /// range's buffers from there (pages written before) as long as one is long enough, else
    /// grows one; its outputs still come out right, whatever the last call left there.
    #[test]
    fn a_nodes_staging_outlives_it_for_the_next_call() {
        let rt = Runtime::new().expect("an OpenCL runtime (install pocl-opencl-icd)");
        let program = rt.program(&KernelSource::from_text("twice.cl", SOURCE)).expect("builds");
        let n = 1usize << 12;
        let spec = LaunchSpec {
            kernel: "twice".into(),
            global: vec![n],
            local: vec![64],
            args: vec![buffer(ArgKind::In, n as u64), buffer(ArgKind::Out, n as u64)],
        };
        let balancer: BalancerFactory = Arc::new(hetdsl::balance::default_balancer);
        let pool = Spares::default();
        let input: Vec<u8> = (0..n as u32).flat_map(|i| (i * 3).to_le_bytes()).collect();
        // Groups 0..40 fresh; as long and shorter from the pool; longer: a buffer grown.
        for (call, groups) in [(0, 0..40u64), (1, 20..60), (2, 30..35), (3, 10..64)] {
            let pooled: Vec<Vec<u8>> = (0..pool.len()).map(|_| pool.take(0)).collect();
            let was: Vec<usize> = pooled.iter().map(|b| b.as_ptr() as usize).collect();
            pool.give_all(pooled);
            let mut node =
                Node::with_spares(&program, spec.clone(), balancer.clone(), pool.clone());
            assert!(node.buffers.iter().all(Vec::is_empty), "call {call}: taken per range");
            let package = Package { offset: groups.start, len: groups.end - groups.start };
            let bytes = 256 * groups.start as usize..256 * groups.end as usize;
            let finished = node.run(package, vec![input[bytes.clone()].to_vec()]).unwrap();
            let out = &finished.outputs[0];
            assert!(out.len() >= bytes.len(), "call {call}: the range's bytes from the start");
            for (k, i) in (groups.start * 64..groups.end * 64).enumerate() {
                let got = u32::from_le_bytes(out[4 * k..4 * k + 4].try_into().unwrap());
                assert_eq!(got, 2 * (3 * i as u32) + 1, "call {call}, element {i}");
            }
            if call == 1 || call == 2 {
                assert!(was.contains(&(out.as_ptr() as usize)), "call {call}: from the pool");
            }
            node.spares().give_all(finished.outputs);
            drop(node);
            // The output lent, and the input (which arrives in a buffer of its own).
            assert!(pool.len() >= 2, "call {call}: every buffer back in the pool");
        }
    }
}
