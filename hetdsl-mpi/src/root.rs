//! Rank 0 during a run: balances the ranks through [`Ranks`], sends each range's inputs to the
//! rank that runs it straight from the caller's buffers, receives each range's outputs
//! straight into them as they arrive (its own node works in them in place, `crate::caller`;
//! only an inout's ranges are copied from the node's staging),
//! drops a rank whose devices all failed or that outlives the watchdog (its range is re-run
//! elsewhere), and ends by collecting every rank's summary.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use mpi::traits::*;

use hetdsl::{Error, Package, Result};

use crate::caller::CallerMemory;
use crate::cluster::{sendable, ClusterLaunch};
use crate::hier::{Order, Ranks};
use crate::node::Node;
use crate::payload::{fits, layout, total, windows, Incoming, Piece, Side, Spares};
use crate::plan::{CallOutcome, Form, PlannedRanks, RangeRun};
use crate::report::{ClusterReport, RankReport};
use crate::run::{pause, rank_report, since, Joined};
use crate::serve::{serve, ChannelLink};
use crate::transfer::{probe, Probed};
use crate::wire::{Kind, Msg};
use hetdsl::engine::copy::copy;

mod summaries;

/// How long rank 0 waits for the summary of a rank the watchdog dropped (it may never answer),
/// or, after a failed run, of a rank that may still be inside a range: the error is what
/// matters then, and such a rank leaves by itself when its range ends.
const SHORT_SUMMARY_WAIT: Duration = Duration::from_secs(2);

pub(crate) struct Root<'l, 'a> {
    launch: ClusterLaunch<'a>,
    /// The caller's buffers, which rank 0's node works in in place.
    memory: CallerMemory<'a>,
    ranks: Ranks,
    tag: i32,
    t0: Instant,
    to_local: Option<mpsc::Sender<Msg>>,
    from_local: &'l mpsc::Receiver<Msg>,
    reports: Vec<RankReport>,
    stopped: Vec<bool>,
    /// The rank still waits for the run's verdict (every rank but rank 0, until it is sent or
    /// the rank leaves the launch on an error of its own).
    verdict_due: Vec<bool>,
    dropped: Vec<bool>,
    /// The rank's summary has arrived.
    summarised: Vec<bool>,
    /// The outputs a rank announced (its `Done`) and still sends: it waits until rank 0 has
    /// received them, so they are received on every way out.
    incoming: Vec<Option<Incoming>>,
    /// Rank 0's own node's pool of staging buffers.
    local_spares: Spares,
    /// Where pieces nobody keeps are received.
    scratch: Vec<u8>,
    /// How this call runs across ranks, and the key it is remembered by (`None`: it is not).
    form: Form,
    key: Option<String>,
    /// Per rank: the ranges handed out whose outputs are not merged yet (the next is handed
    /// out while the last one's outputs still travel, or queued while it computes).
    handed: Vec<Vec<Handed>>,
    /// The ranges merged, and each rank's nominal GFLOP/s, for the next call of the launch.
    ranges: Vec<RangeRun>,
    nominal: Vec<f64>,
}

/// A range handed out to a rank, until its outputs are merged.
#[derive(Debug, Clone, Copy)]
struct Handed {
    package: Package,
    /// When it was handed out, or, queued behind another range, when that one was answered.
    start: f64,
    /// Handed out while the rank ran another range.
    queued: bool,
    /// The seconds its node took for it, once answered.
    seconds: Option<f64>,
}

/// What rank 0 heard.
enum Heard {
    /// A message from a rank (rank 0's own node included).
    Msg(usize, Msg),
    /// A piece of a payload, received where it belongs.
    Piece,
    /// Nothing for a short while.
    Nothing,
}

impl<'a> Root<'_, 'a> {
    /// The whole of rank 0's side of a run.
    pub(crate) fn run(
        mut launch: ClusterLaunch<'a>,
        mut node: Node<'a>,
        joined: Vec<Joined>,
        tag: i32,
        whole: u64,
    ) -> Result<ClusterReport> {
        let n = joined.len();
        let names =
            joined.iter().enumerate().map(|(r, j)| format!("rank {r} @ {}", j.host)).collect();
        let profiles: Vec<_> = joined.iter().map(|j| j.profile.clone()).collect();
        let nominal = profiles.iter().map(|p| p.nominal_gflops).collect();
        let balancer = launch.balancer.take();
        // A call of a launch run before starts from its last call, unless the caller chose the
        // ranks' balancer.
        let key = (launch.remember && balancer.is_none()).then(|| launch.key());
        let plan = match (&key, launch.spec.units()) {
            (Some(k), Ok((units, _))) => launch.cluster.rank_plan(k, n, units, launch.plan_tail),
            _ => None,
        };
        let form = if plan.is_some() { Form::Planned } else { Form::Fresh };
        let balancer = match plan {
            Some(p) => Some(Box::new(PlannedRanks::new(p)) as Box<dyn hetdsl::Balancer>),
            None => balancer,
        };
        let started = crate::hier::check_watchdog(launch.watchdog)
            .and_then(|()| launch.spec.units())
            .and_then(|(total, _)| Ranks::start(balancer, total, profiles, names));
        let mut ranks = match started {
            Ok(r) => r,
            Err(e) => {
                // Every other rank waits for its first order: tell it the run failed.
                stop_ranks(&launch.cluster.world, tag, n, &e);
                return Err(e);
            }
        };
        ranks.set_watchdog(launch.watchdog);
        ranks.queue_ahead(launch.queue_ahead);
        let reports = joined
            .iter()
            .enumerate()
            .map(|(r, j)| RankReport { bytes_sent: whole, ..rank_report(&[], r, &j.host) })
            .collect();
        let (to_local, local_rx) = mpsc::channel();
        let (local_tx, from_local) = mpsc::channel();
        let local_spares = node.spares();
        let memory = CallerMemory::new(std::mem::take(&mut launch.host), &launch.spec);
        node.work_in_place(memory.node_regions());
        std::thread::scope(|s| {
            let worker = s.spawn(move || {
                let mut link = ChannelLink::new(local_tx, local_rx);
                let served = serve(&mut node, &mut link);
                (node, served)
            });
            let mut root = Root {
                launch,
                memory,
                ranks,
                tag,
                t0: Instant::now(),
                to_local: Some(to_local),
                from_local: &from_local,
                reports,
                stopped: vec![false; n],
                verdict_due: (0..n).map(|r| r != 0).collect(),
                dropped: vec![false; n],
                summarised: vec![false; n],
                incoming: vec![None; n],
                local_spares,
                scratch: Vec::new(),
                form,
                key,
                handed: vec![Vec::new(); n],
                ranges: Vec::new(),
                nominal,
            };
            let outcome = root.coordinate();
            root.stop_all(outcome.as_ref().err());
            root.to_local = None;
            let (node, served) = worker.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
            let served = served.map(|_| ());
            root.reports[0].devices = rank_report(&node.devices, 0, &root.reports[0].host).devices;
            root.reports[0].setup_seconds = node.setup_seconds;
            root.reports[0].planned_ranges = node.planned_ranges;
            root.reports[0].pieces_ranges = node.pieces_ranges;
            root.collect_summaries(outcome.is_err() || served.is_err());
            let ended = outcome.and(served);
            let report = root.report();
            root.remember(ended.is_ok(), &report);
            ended?;
            Ok(report)
        })
    }

    fn now(&self) -> f64 {
        since(self.t0)
    }

    fn coordinate(&mut self) -> Result<()> {
        loop {
            for (r, order) in self.ranks.hand_out(self.now())? {
                self.order(r, order)?;
            }
            if self.stopped.iter().all(|s| *s) {
                return self.ranks.outcome();
            }
            match self.next_message()? {
                Heard::Msg(r, msg) => self.handle(r, msg)?,
                Heard::Piece => {}
                Heard::Nothing => {
                    // Never rank 0: its node works in the caller's buffers, so its ranges may
                    // not be run elsewhere while its launch still could write them; that
                    // launch has a watchdog of its own, and ends with an answer.
                    let hung = self.ranks.hung(self.now()).into_iter().filter(|(r, _)| *r != 0);
                    for (r, reason) in hung {
                        self.dropped[r] = true;
                        self.lose(r, reason)?;
                    }
                }
            }
        }
    }

    /// The next answer from any rank (rank 0's node included), or a piece of a payload
    /// received, or nothing after a short wait.
    fn next_message(&mut self) -> Result<Heard> {
        let deadline = Instant::now() + Duration::from_millis(20);
        loop {
            match self.from_local.try_recv() {
                Ok(m) => return Ok(Heard::Msg(0, m)),
                // Its thread ended before its stop (a panic, shown at the join): no answer comes,
                // and no watchdog judges rank 0's ranges.
                Err(mpsc::TryRecvError::Disconnected) if !self.stopped[0] => {
                    return Err(Error::Internal("rank 0's node stopped answering".into()))
                }
                Err(_) => {}
            }
            if let Some(probed) = probe(&self.launch.cluster.world, self.tag) {
                let r = probed.rank;
                if self.incoming[r].is_some() {
                    self.receive_piece(probed)?;
                    return Ok(Heard::Piece);
                }
                return Ok(Heard::Msg(
                    r,
                    Msg::decode(&probed.into_bytes()).unwrap_or_else(|e| {
                        let mut m = Msg::unranged(Kind::Failed);
                        m.parts = vec![e.to_string().into_bytes()];
                        m
                    }),
                ));
            }
            if Instant::now() >= deadline {
                return Ok(Heard::Nothing);
            }
            pause();
        }
    }

    /// Sends a message (no payload) to rank `r`.
    fn send(&mut self, r: usize, msg: Msg) -> Result<()> {
        if r == 0 {
            if let Some(tx) = &self.to_local {
                // The local node ended (a panic shows at the join): nothing to send it.
                let _ = tx.send(msg);
            }
            return Ok(());
        }
        let bytes = msg.encode();
        self.launch
            .cluster
            .world
            .process_at_rank(r as i32)
            .send_with_tag(sendable(&bytes)?, self.tag);
        Ok(())
    }

    /// The caller's bytes of an input piece.
    fn host_piece(&self, piece: &Piece) -> Result<&[u8]> {
        self.memory.read(piece).ok_or_else(|| {
            Error::BadConfig(format!("argument {}: no bytes {:?} to send", piece.arg, piece.bytes))
        })
    }

    fn order(&mut self, r: usize, order: Order) -> Result<()> {
        match order {
            Order::Run(p) => {
                let now = self.now();
                // Queued: the rank still runs a range handed out before, not answered yet.
                let queued = self.handed[r].iter().any(|h| h.seconds.is_none());
                self.handed[r].push(Handed { package: p, start: now, queued, seconds: None });
                let mut pieces = layout(&self.launch.spec, p, Side::Inputs)?;
                let mut m = Msg::new(Kind::Run, p);
                if r == 0 {
                    // The node reads the others in place; these it swaps in as its staging:
                    // one copy, from the caller's.
                    pieces.retain(|piece| !self.memory.in_place(piece.arg));
                    self.reports[r].bytes_sent += total(&pieces);
                    for piece in &pieces {
                        let mut buffer = self.local_spares.take(piece.bytes.len());
                        copy(&mut buffer[..piece.bytes.len()], self.host_piece(piece)?);
                        m.parts.push(buffer);
                    }
                    return self.send(0, m);
                }
                self.reports[r].bytes_sent += total(&pieces);
                // Checked before the order: once it is sent, the rank waits for every piece.
                fits(&pieces)?;
                let sources = pieces
                    .iter()
                    .map(|piece| self.host_piece(piece))
                    .collect::<Result<Vec<_>>>()?;
                let bytes = m.encode();
                let to = self.launch.cluster.world.process_at_rank(r as i32);
                to.send_with_tag(sendable(&bytes)?, self.tag);
                for source in sources {
                    to.send_with_tag(source, self.tag);
                }
                Ok(())
            }
            // A remote rank's stop waits for the run's end and carries its verdict: the run may
            // still fail, and the rank must return what rank 0 returns. It costs no message.
            Order::Stop => {
                self.stopped[r] = true;
                if r == 0 {
                    return self.send(0, Msg::unranged(Kind::Stop));
                }
                Ok(())
            }
        }
    }

    fn handle(&mut self, r: usize, msg: Msg) -> Result<()> {
        let reason = || msg.parts.first().map(|p| crate::carried::text(p));
        match msg.kind {
            Kind::Done => {
                let pieces = layout(&self.launch.spec, msg.package, Side::Outputs)?;
                if r != 0 {
                    // A remote rank's outputs follow, piece by piece: they are received
                    // (kept or not) whatever happens next.
                    self.incoming[r] = Some(Incoming::new(msg.package, pieces.clone(), false));
                }
                let now = self.now();
                let keep = self.ranks.finished(r, msg.package, now, msg.seconds)?;
                if keep {
                    self.reports[r].compute_seconds += msg.seconds;
                }
                if let Some(h) = self.handed[r].iter_mut().find(|h| h.package == msg.package) {
                    h.seconds = Some(msg.seconds);
                }
                // A range queued behind it starts now.
                if let Some(h) = self.handed[r].iter_mut().find(|h| h.seconds.is_none()) {
                    h.start = h.start.max(now);
                }
                if let Some(incoming) = &mut self.incoming[r] {
                    incoming.keep = keep;
                    return self.received(r);
                }
                // Rank 0's own node wrote its in-place outputs already, and lent its staging
                // buffers for the others (an inout's): copied now, then given back.
                let (pieces, parts): (Vec<Piece>, Vec<Vec<u8>>) = (pieces.into_iter())
                    .zip(msg.parts)
                    .filter(|(piece, _)| !self.memory.in_place(piece.arg))
                    .unzip();
                let merged =
                    if keep { self.merge_local(msg.package, &pieces, &parts) } else { Ok(()) };
                self.local_spares.give_all(parts);
                merged?;
                if keep {
                    self.reports[0].bytes_received += total(&pieces);
                    self.take_outputs(0, msg.package)?;
                }
                Ok(())
            }
            // A rank already dropped: its queued range failed too, or came late.
            Kind::Failed if self.ranks.is_lost(r) => Ok(()),
            // The error as the rank found it, of its kind, saying which rank.
            Kind::Failed if msg.flag => Err(crate::carried::decode(
                msg.parts.first().map_or(&[][..], |p| &p[..]),
                &format!("rank {r} refused the launch"),
            )),
            Kind::Failed => self.lose(
                r,
                format!("its node could not run a range: {}", reason().unwrap_or_default()),
            ),
            // A rank dropped early summarises while the others still run.
            Kind::Summary if self.stopped[r] => {
                self.summarised(r, &msg);
                Ok(())
            }
            // A summary nobody asked for: the rank left the launch on an error of its own (its
            // outputs over MPI's message limit, an order it could not read). It waits for
            // nothing more, so it is lost now rather than when the watchdog gives up on it.
            Kind::Summary => {
                self.summarised(r, &msg);
                self.stopped[r] = true;
                self.verdict_due[r] = false;
                let why = msg.parts.get(1).map(|p| String::from_utf8_lossy(p).into_owned());
                let why = why.unwrap_or_else(|| "no reason given".into());
                self.lose(r, format!("rank {r} left the launch: {why}"))
            }
            // A stale answer from a rank already dropped.
            _ => Ok(()),
        }
    }

    /// Records the outputs of `package`, kept from rank `r`, as merged.
    fn take_outputs(&mut self, r: usize, package: Package) -> Result<()> {
        // After the copy: a large range's merge is part of the time its outputs take to land.
        let now = self.now();
        self.ranks.merged(r, package, now)?;
        let at = self.handed[r].iter().position(|h| h.package == package);
        if let Some(h) = at.map(|i| self.handed[r].remove(i)) {
            self.reports[r].queued_ranges += usize::from(h.queued);
            let seconds = h.seconds.unwrap_or(0.0);
            self.ranges.push(RangeRun {
                rank: r,
                package: h.package,
                seconds,
                overhead: now - h.start - seconds,
                handed: h.start,
                queued: h.queued,
            });
        }
        self.reports[r].packages.push(package);
        self.reports[r].finish_seconds = now;
        Ok(())
    }

    /// Copies a range's outputs from rank 0's own node's staging buffers into the caller's.
    fn merge_local(&mut self, p: Package, pieces: &[Piece], staging: &[Vec<u8>]) -> Result<()> {
        let incomplete = |arg: usize| {
            Error::BadConfig(format!("argument {arg}: the output of {p:?} came back incomplete"))
        };
        let sources = windows(pieces, staging)?;
        for (piece, src) in pieces.iter().zip(sources) {
            copy(self.memory.write(piece).ok_or_else(|| incomplete(piece.arg))?, src);
        }
        Ok(())
    }

    /// Receives the next piece of rank `probed.rank`'s outputs: straight into the caller's
    /// buffer while its range is kept, else into scratch memory (a dropped rank's range was put
    /// up for re-running: its late outputs are not used). The whole payload in, the range
    /// counts as merged.
    fn receive_piece(&mut self, probed: Probed) -> Result<()> {
        let r = probed.rank;
        let lost = self.ranks.is_lost(r);
        let Some(incoming) = self.incoming[r].as_mut() else {
            probed.discard(&mut self.scratch);
            return Ok(());
        };
        let (accepted, keep) = (incoming.accept(probed.len), incoming.keep && !lost);
        self.reports[r].bytes_received += probed.len as u64;
        let dst = match &accepted {
            Ok(piece) if keep => self.memory.write(piece),
            _ => None,
        };
        let placed = dst.is_some();
        match dst {
            Some(dst) => probed.into_slice(dst),
            None => probed.discard(&mut self.scratch),
        }
        let piece = accepted?;
        if keep && !placed {
            return Err(Error::BadConfig(format!(
                "argument {}: the caller's buffer holds no bytes {:?}",
                piece.arg, piece.bytes
            )));
        }
        self.received(r)
    }

    /// Once rank `r`'s announced outputs are all in: records a kept range as merged.
    fn received(&mut self, r: usize) -> Result<()> {
        match self.incoming[r].take_if(|i| i.is_complete()) {
            Some(i) if i.keep && !self.ranks.is_lost(r) => self.take_outputs(r, i.package),
            _ => Ok(()),
        }
    }

    /// Drops rank `r` from the run; its unreturned range goes back to the pool.
    fn lose(&mut self, r: usize, reason: String) -> Result<()> {
        self.reports[r].fault = Some(reason.clone());
        let lost = self.ranks.lost(r, self.now(), reason);
        if !self.stopped[r] {
            self.stopped[r] = true;
            let kind = if r == 0 { Kind::Stop } else { Kind::Dropped };
            self.send(r, Msg::unranged(kind))?;
        }
        lost
    }

    /// Tells every rank the run's verdict (with `error`, that the run failed): those still
    /// running, those stopped idle and those dropped alike, so that every rank returns the
    /// same. Rank 0's own node is only stopped.
    fn stop_all(&mut self, error: Option<&Error>) {
        if !self.stopped[0] {
            self.stopped[0] = true;
            let _ = self.send(0, Msg::unranged(Kind::Stop));
        }
        for r in 1..self.stopped.len() {
            if std::mem::take(&mut self.verdict_due[r]) {
                self.stopped[r] = true;
                let m = error.map_or_else(|| Msg::unranged(Kind::Stop), Msg::stop_failed);
                let _ = self.send(r, m);
            }
        }
    }

    /// Remembers how this call went, for the next call of the same launch (a call that
    /// failed, lost a rank or re-ran a range makes the next one learn afresh).
    fn remember(&self, ended_well: bool, report: &ClusterReport) {
        let Some(key) = &self.key else { return };
        let clean = ended_well
            && report.faults.is_empty()
            && report.ranks.iter().all(|r| r.fault.is_none());
        let outcome = CallOutcome {
            clean,
            roi_seconds: report.roi_seconds,
            balance: report.balance,
            ranges: self.ranges.clone(),
            nominal: self.nominal.clone(),
            output_share: self.output_share(report.total_units),
            queue_ahead: self.launch.queue_ahead,
            in_place: (0..self.reports.len()).map(|r| r == 0 && self.all_in_place()).collect(),
        };
        self.launch.cluster.remember_call(key, self.reports.len(), self.form, &outcome);
    }

    /// Whether rank 0's node works on every argument a range carries (its sliced inputs and
    /// its outputs) in place, so that its ranges move no bytes.
    fn all_in_place(&self) -> bool {
        let none = Package { offset: 0, len: 0 };
        [Side::Inputs, Side::Outputs]
            .into_iter()
            .flat_map(|side| layout(&self.launch.spec, none, side).unwrap_or_default())
            .all(|piece| self.memory.in_place(piece.arg))
    }

    /// Of the bytes the launch's ranges move over `units`, the share that are outputs.
    fn output_share(&self, units: u64) -> f64 {
        let all = Package { offset: 0, len: units };
        let bytes = |side| layout(&self.launch.spec, all, side).map_or(0.0, |p| total(&p) as f64);
        let (inputs, outputs) = (bytes(Side::Inputs), bytes(Side::Outputs));
        if inputs + outputs > 0.0 {
            outputs / (inputs + outputs)
        } else {
            0.5
        }
    }

    fn report(&self) -> ClusterReport {
        let finish = self.ranks.finish_times();
        ClusterReport {
            kernel: self.launch.spec.kernel.clone(),
            balancer: self.ranks.balancer_name(),
            form: self.form.name().into(),
            total_units: self.launch.spec.units().map_or(0, |u| u.0),
            ranks: self.reports.clone(),
            roi_seconds: finish.iter().copied().fold(0.0, f64::max),
            balance: hetdsl::report::balance(&finish),
            faults: self.ranks.faults(),
            measured_units: self.ranges.iter().map(|r| r.package.len).sum(),
        }
    }
}

/// Tells every rank but rank 0 that the run failed with `error` before it began: each waits
/// for its first order, and would otherwise wait for ever.
pub(crate) fn stop_ranks(
    world: &mpi::topology::SimpleCommunicator,
    tag: i32,
    n: usize,
    error: &Error,
) {
    let bytes = Msg::stop_failed(error).encode();
    for r in 1..n {
        world.process_at_rank(r as i32).send_with_tag(&bytes[..], tag);
    }
}
