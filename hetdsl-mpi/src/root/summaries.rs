//! Rank 0 at the end of a run: every other rank's summary, and the outputs still on their way,
//! each waited for a bounded time.

use std::time::{Duration, Instant};

use crate::payload::{layout, Incoming, Side};
use crate::report::RankReport;
use crate::run::pause;
use crate::transfer::probe;
use crate::wire::{Kind, Msg};

use super::{Root, SHORT_SUMMARY_WAIT};

impl Root<'_, '_> {
    /// Every other rank's summary (its devices) and any outputs it still sends, each rank
    /// waited for a bounded time: the rank watchdog's floor (at least 2 s) after a run that
    /// ended well, when every rank was stopped idle and answers at once; 2 s for a rank the
    /// watchdog dropped, and for every rank after a failed run (one may still be inside a
    /// range, and the run's error is what matters). Outputs on their way are always received
    /// within the longer bound. Ranks not heard from are the launch's stragglers; after a run
    /// that ended well, each one's report says so.
    pub(super) fn collect_summaries(&mut self, failed: bool) {
        let floor = self.launch.watchdog.min_seconds;
        let floor = if floor.is_finite() && floor > 0.0 { floor.min(3600.0) } else { 0.0 };
        let long = Duration::from_secs_f64(floor).max(SHORT_SUMMARY_WAIT);
        let bound = |root: &Self, r: usize| {
            if root.incoming[r].is_some() || !(failed || root.dropped[r]) {
                long
            } else {
                SHORT_SUMMARY_WAIT
            }
        };
        let start = Instant::now();
        while self.unheard().into_iter().any(|r| start.elapsed() < bound(self, r)) {
            let Some(probed) = probe(&self.launch.cluster.world, self.tag) else {
                pause();
                continue;
            };
            let r = probed.rank;
            if let Some(incoming) = &mut self.incoming[r] {
                // The run is over: announced outputs are only taken, so that the rank can go.
                incoming.keep = false;
                let _ = self.receive_piece(probed);
                continue;
            }
            match Msg::decode(&probed.into_bytes()) {
                Ok(m) if m.kind == Kind::Summary => self.summarised(r, &m),
                Ok(m) if m.kind == Kind::Done => {
                    let pieces = layout(&self.launch.spec, m.package, Side::Outputs);
                    let pieces = pieces.unwrap_or_default();
                    self.incoming[r] = Some(Incoming::new(m.package, pieces, false));
                    let _ = self.received(r);
                }
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
        (1..self.stopped.len())
            .filter(|r| !self.summarised[*r] || self.incoming[*r].is_some())
            .collect()
    }

    pub(super) fn summarised(&mut self, r: usize, m: &Msg) {
        let sent: Option<RankReport> = m.parts.first().and_then(|p| serde_json::from_slice(p).ok());
        if let Some(s) = sent {
            self.reports[r].devices = s.devices;
            self.reports[r].setup_seconds = s.setup_seconds;
            self.reports[r].planned_ranges = s.planned_ranges;
            self.reports[r].pieces_ranges = s.pieces_ranges;
        }
        self.summarised[r] = true;
    }
}
