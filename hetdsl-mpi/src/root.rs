//! Rank 0 during a run: balances the ranks through [`Ranks`], sends each range's inputs to the
//! rank that runs it, merges each range's outputs into the caller's buffers as they arrive,
//! drops a rank whose devices all failed or that outlives the watchdog (its range is re-run
//! elsewhere), and ends by collecting every rank's summary.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use mpi::traits::*;

use hetdsl::{Error, Package, Pattern, Result};

use crate::cluster::{sendable, ClusterLaunch, HostBuf};
use crate::hier::{Order, Ranks};
use crate::node::Node;
use crate::report::{ClusterReport, RankReport};
use crate::run::{pause, poll_mpi, rank_report, since, Joined};
use crate::serve::{serve, ChannelLink};
use crate::wire::{Kind, Msg};

/// How long rank 0 waits for the summary of a rank the watchdog dropped (it may never answer),
/// or, after a failed run, of a rank that may still be inside a range: the error is what
/// matters then, and such a rank leaves by itself when its range ends.
const SHORT_SUMMARY_WAIT: Duration = Duration::from_secs(2);

pub(crate) struct Root<'l, 'a> {
    launch: ClusterLaunch<'a>,
    ranks: Ranks,
    tag: i32,
    t0: Instant,
    to_local: Option<mpsc::Sender<Msg>>,
    from_local: &'l mpsc::Receiver<Msg>,
    reports: Vec<RankReport>,
    stopped: Vec<bool>,
    dropped: Vec<bool>,
    /// The rank's summary has arrived.
    summarised: Vec<bool>,
    /// The rank announced a range's outputs (`Done` with its flag set) that have not arrived:
    /// it waits until rank 0 receives them, so they are received on every way out.
    owed: Vec<bool>,
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
        let profiles = joined.iter().map(|j| j.profile.clone()).collect();
        let balancer = launch.balancer.take();
        let started = launch
            .spec
            .units()
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
        let reports = joined
            .iter()
            .enumerate()
            .map(|(r, j)| RankReport { bytes_sent: whole, ..rank_report(&[], r, &j.host) })
            .collect();
        let (to_local, local_rx) = mpsc::channel();
        let (local_tx, from_local) = mpsc::channel();
        std::thread::scope(|s| {
            let worker = s.spawn(move || {
                let mut link = ChannelLink { to_root: local_tx, from_root: local_rx };
                let served = serve(&mut node, &mut link);
                (node, served)
            });
            let mut root = Root {
                launch,
                ranks,
                tag,
                t0: Instant::now(),
                to_local: Some(to_local),
                from_local: &from_local,
                reports,
                stopped: vec![false; n],
                dropped: vec![false; n],
                summarised: vec![false; n],
                owed: vec![false; n],
            };
            let outcome = root.coordinate();
            root.stop_all(outcome.as_ref().err());
            root.to_local = None;
            let (node, served) = worker.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
            let served = served.map(|_| ());
            root.reports[0].devices = rank_report(&node.devices, 0, &root.reports[0].host).devices;
            root.reports[0].setup_seconds = node.setup_seconds;
            root.collect_summaries(outcome.is_err() || served.is_err());
            outcome.and(served)?;
            Ok(root.report())
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
            match self.next_message() {
                Some((r, msg)) => self.handle(r, msg)?,
                None => {
                    for (r, reason) in self.ranks.hung(self.now()) {
                        self.dropped[r] = true;
                        self.lose(r, reason)?;
                    }
                }
            }
        }
    }

    /// The next answer from any rank (rank 0's node included), or `None` after a short wait.
    fn next_message(&mut self) -> Option<(usize, Msg)> {
        let deadline = Instant::now() + Duration::from_millis(20);
        loop {
            if let Ok(m) = self.from_local.try_recv() {
                return Some((0, m));
            }
            if let Some((r, bytes)) = poll_mpi(&self.launch.cluster.world, self.tag) {
                match Msg::decode(&bytes) {
                    Ok(m) => return Some((r, m)),
                    Err(e) => {
                        let mut m = Msg::new(Kind::Failed, Package { offset: 0, len: 0 });
                        m.parts = vec![e.to_string().into_bytes()];
                        return Some((r, m));
                    }
                }
            }
            if Instant::now() >= deadline {
                return None;
            }
            pause();
        }
    }

    fn send(&mut self, r: usize, msg: Msg) -> Result<()> {
        self.reports[r].bytes_sent += msg.payload();
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

    fn order(&mut self, r: usize, order: Order) -> Result<()> {
        match order {
            Order::Run(p) => {
                let mut m = Msg::new(Kind::Run, p);
                for (i, a) in self.launch.spec.args.iter().enumerate() {
                    if a.kind.reads() && a.pattern != Some(Pattern::Whole) {
                        let range = self.launch.spec.byte_range(i, p)?;
                        m.parts.push(match &self.launch.host[i] {
                            HostBuf::In(b) => b[range].to_vec(),
                            HostBuf::Out(b) => b[range].to_vec(),
                            HostBuf::None => Vec::new(),
                        });
                    }
                }
                self.send(r, m)
            }
            Order::Stop => {
                self.stopped[r] = true;
                self.send(r, Msg::new(Kind::Stop, Package { offset: 0, len: 0 }))
            }
        }
    }

    fn handle(&mut self, r: usize, msg: Msg) -> Result<()> {
        let reason = || msg.parts.first().map(|p| String::from_utf8_lossy(p).into_owned());
        match msg.kind {
            Kind::Done => {
                self.owed[r] = r != 0 && msg.flag;
                let now = self.now();
                let keep = self.ranks.finished(r, msg.package, now, msg.seconds)?;
                if keep {
                    self.reports[r].compute_seconds += msg.seconds;
                }
                // Inline outputs (rank 0's own node) are merged now; a remote rank's follow.
                if keep && !msg.flag {
                    self.reports[r].bytes_received += msg.payload();
                    self.take_outputs(r, msg.package, &msg.parts)?;
                }
                Ok(())
            }
            Kind::Outputs => {
                self.owed[r] = false;
                self.reports[r].bytes_received += msg.payload();
                // A dropped rank's range was put up for re-running: its late outputs are not used.
                if self.ranks.is_lost(r) {
                    return Ok(());
                }
                self.take_outputs(r, msg.package, &msg.parts)
            }
            Kind::Failed if msg.flag => Err(Error::BadConfig(format!(
                "rank {r} refused the launch: {}",
                reason().unwrap_or_default()
            ))),
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
                let why = msg.parts.get(1).map(|p| String::from_utf8_lossy(p).into_owned());
                let why = why.unwrap_or_else(|| "no reason given".into());
                self.lose(r, format!("rank {r} left the launch: {why}"))
            }
            // A stale answer from a rank already dropped.
            _ => Ok(()),
        }
    }

    /// Merges the outputs of `package`, kept from rank `r`, and records it.
    fn take_outputs(&mut self, r: usize, package: Package, parts: &[Vec<u8>]) -> Result<()> {
        self.merge(package, parts)?;
        // After the copy: a large range's merge is part of the time its outputs take to land.
        let now = self.now();
        self.ranks.merged(r, package, now)?;
        self.reports[r].packages.push(package);
        self.reports[r].finish_seconds = now;
        Ok(())
    }

    /// Copies a range's outputs into the caller's buffers.
    fn merge(&mut self, p: Package, parts: &[Vec<u8>]) -> Result<()> {
        let mut parts = parts.iter();
        for (i, a) in self.launch.spec.args.iter().enumerate() {
            if !a.kind.writes() {
                continue;
            }
            let range = self.launch.spec.byte_range(i, p)?;
            let part = parts.next().filter(|b| b.len() == range.len());
            match (&mut self.launch.host[i], part) {
                (HostBuf::Out(dst), Some(src)) => dst[range].copy_from_slice(src),
                _ => {
                    return Err(Error::BadConfig(format!(
                        "argument {i}: the output of {p:?} came back incomplete"
                    )))
                }
            }
        }
        Ok(())
    }

    /// Drops rank `r` from the run; its unreturned range goes back to the pool.
    fn lose(&mut self, r: usize, reason: String) -> Result<()> {
        self.reports[r].fault = Some(reason.clone());
        let lost = self.ranks.lost(r, self.now(), reason);
        if !self.stopped[r] {
            self.stopped[r] = true;
            self.send(r, Msg::new(Kind::Stop, Package { offset: 0, len: 0 }))?;
        }
        lost
    }

    /// Tells every rank still waiting for an order to stop; with `error`, that the run failed.
    fn stop_all(&mut self, error: Option<&Error>) {
        for r in 0..self.stopped.len() {
            if !self.stopped[r] {
                self.stopped[r] = true;
                let mut m = Msg::new(Kind::Stop, Package { offset: 0, len: 0 });
                if let Some(e) = error {
                    m.flag = true;
                    m.parts = vec![e.to_string().into_bytes()];
                }
                let _ = self.send(r, m);
            }
        }
    }

    /// Every other rank's summary (its devices) and any outputs it still sends, each rank
    /// waited for a bounded time: the rank watchdog's floor (at least 2 s) after a run that
    /// ended well, when every rank was stopped idle and answers at once; 2 s for a rank the
    /// watchdog dropped, and for every rank after a failed run (one may still be inside a
    /// range, and the run's error is what matters). Outputs on their way are always received
    /// within the longer bound. Ranks not heard from are the launch's stragglers; after a run
    /// that ended well, each one's report says so.
    fn collect_summaries(&mut self, failed: bool) {
        let floor = self.launch.watchdog.min_seconds;
        let floor = if floor.is_finite() && floor > 0.0 { floor.min(3600.0) } else { 0.0 };
        let long = Duration::from_secs_f64(floor).max(SHORT_SUMMARY_WAIT);
        let bound = |root: &Self, r: usize| {
            if root.owed[r] || !(failed || root.dropped[r]) {
                long
            } else {
                SHORT_SUMMARY_WAIT
            }
        };
        let start = Instant::now();
        while self.unheard().into_iter().any(|r| start.elapsed() < bound(self, r)) {
            let Some((r, bytes)) = poll_mpi(&self.launch.cluster.world, self.tag) else {
                pause();
                continue;
            };
            match Msg::decode(&bytes) {
                Ok(m) if m.kind == Kind::Summary => self.summarised(r, &m),
                Ok(m) if m.kind == Kind::Done => self.owed[r] = m.flag,
                Ok(m) if m.kind == Kind::Outputs => self.owed[r] = false,
                _ => {}
            }
        }
        let late = self.unheard();
        for &r in &late {
            if !failed && self.reports[r].fault.is_none() {
                self.reports[r].fault = Some(format!(
                    "no summary {:.0} s after the run ended: the rank may be stuck (its devices \
                     are missing from this report)",
                    long.as_secs_f64()
                ));
            }
        }
        *self.launch.cluster.stragglers.borrow_mut() = late;
    }

    /// The ranks whose summary, or outputs announced, have not arrived.
    fn unheard(&self) -> Vec<usize> {
        (1..self.stopped.len()).filter(|r| !self.summarised[*r] || self.owed[*r]).collect()
    }

    fn summarised(&mut self, r: usize, m: &Msg) {
        let sent: Option<RankReport> = m.parts.first().and_then(|p| serde_json::from_slice(p).ok());
        if let Some(s) = sent {
            self.reports[r].devices = s.devices;
            self.reports[r].setup_seconds = s.setup_seconds;
        }
        self.summarised[r] = true;
    }

    fn report(&self) -> ClusterReport {
        let finish = self.ranks.finish_times();
        ClusterReport {
            kernel: self.launch.spec.kernel.clone(),
            balancer: self.ranks.balancer_name(),
            total_units: self.launch.spec.units().map_or(0, |u| u.0),
            ranks: self.reports.clone(),
            roi_seconds: finish.iter().copied().fold(0.0, f64::max),
            balance: hetdsl::report::balance(&finish),
            faults: self.ranks.faults(),
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
    let mut m = Msg::new(Kind::Stop, Package { offset: 0, len: 0 });
    m.flag = true;
    m.parts = vec![error.to_string().into_bytes()];
    let bytes = m.encode();
    for r in 1..n {
        world.process_at_rank(r as i32).send_with_tag(&bytes[..], tag);
    }
}
