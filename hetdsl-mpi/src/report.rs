//! What a cluster run reports: every rank's devices (named by rank and host), the ranges each
//! rank ran, the bytes moved to and from each rank, and the ranks lost. Pure.

use hetdsl::report::DeviceReport;
use hetdsl::Package;

/// One rank's share of a run.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RankReport {
    pub rank: usize,
    pub host: String,
    /// The node's devices over every range it ran; names read `r<rank>@<host>: <device>`.
    pub devices: Vec<DeviceReport>,
    /// The ranges whose output rank 0 merged from this rank, in order.
    pub packages: Vec<Package>,
    /// Payload bytes rank 0 sent this rank (its ranges' inputs, and `whole` inputs once) and
    /// received from it (its ranges' outputs). Rank 0's own ranges move through memory and
    /// count the same, so the figures compare across ranks.
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// Seconds since the run began when its last range was merged (0 if none).
    pub finish_seconds: f64,
    /// Seconds the rank's node spent running the ranges rank 0 merged from it, as the rank
    /// timed them; `finish_seconds` less this is what the rank spent waiting for orders and
    /// inputs, and for its last outputs to reach rank 0.
    #[serde(default)]
    pub compute_seconds: f64,
    /// Seconds the rank's node spent setting up each range's run (queues, buffers, threads:
    /// the run's wall time less the engine's ROI), added up; part of `finish_seconds` less
    /// `compute_seconds`, the rest being messages and waiting.
    #[serde(default)]
    pub setup_seconds: f64,
    /// Ranges the node cut from what earlier calls of the launch measured of its devices, one
    /// package per device that got work (the others ran with the node's balancer).
    #[serde(default)]
    pub planned_ranges: usize,
    /// Ranges handed out while the rank ran the one before (their inputs travelled meanwhile;
    /// `ClusterLaunch::queue_ahead`).
    #[serde(default)]
    pub queued_ranges: usize,
    /// Of the ranges cut from memory, those the node ran with each device's block in pieces
    /// (`recall::NodeForm`).
    #[serde(default)]
    pub pieces_ranges: usize,
    /// Why the rank was dropped from the run, if it was.
    pub fault: Option<String>,
}

/// A whole cluster run, as rank 0 sees it (another rank's report holds only its own rank).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ClusterReport {
    pub kernel: String,
    /// The ranks' balancer (guided over measured speeds unless the launch chose another, or
    /// a remembered plan).
    pub balancer: String,
    /// How this call ran across ranks: `fresh` (the ranks' balancer, learning the ranks
    /// afresh) or `remembered plan` (one range per rank from the last call of the same launch,
    /// `crate::plan`).
    #[serde(default)]
    pub form: String,
    /// Balancing units of the NDRange (work-groups, or rows of work-groups in 2-D).
    pub total_units: u64,
    pub ranks: Vec<RankReport>,
    /// From the first range handed out to the last output merged, seconds.
    pub roi_seconds: f64,
    /// First rank done / last rank done over the ranks that ran work.
    pub balance: f64,
    /// (rank, range, reason) for each range a lost rank had not returned; each was re-run.
    pub faults: Vec<(usize, Package, String)>,
    /// Units of the merged ranges whose node time rank 0 recorded for the next call of the
    /// launch: every unit, in a call that ran well (rank 0 only).
    #[serde(default)]
    pub measured_units: u64,
}

impl ClusterReport {
    /// Whether the ranges of every rank cover `0..total_units` exactly once.
    pub fn tiles_exactly_once(&self) -> bool {
        let all: Vec<_> =
            self.ranks.iter().flat_map(|r| &r.packages).map(|p| p.offset..p.end()).collect();
        crate::recall::tiles(&all, 0..self.total_units)
    }

    /// A table: one line per rank, then one per device.
    pub fn table(&self) -> String {
        let mut s = format!(
            "kernel {} over {} units, {} call, ranks balanced by {}: {:.4} s, balance {:.3}\n",
            self.kernel, self.total_units, self.form, self.balancer, self.roi_seconds, self.balance
        );
        for r in &self.ranks {
            let groups: u64 = r.packages.iter().map(|p| p.len).sum();
            s += &format!(
                "rank {} @ {}: {} ranges ({} cut from memory, {} of them in pieces, {} queued), \
                 {} units, sent {} B, received {} B, done at {:.4} s{}\n",
                r.rank,
                r.host,
                r.packages.len(),
                r.planned_ranges,
                r.pieces_ranges,
                r.queued_ranges,
                groups,
                r.bytes_sent,
                r.bytes_received,
                r.finish_seconds,
                r.fault.as_ref().map(|f| format!(", LOST: {f}")).unwrap_or_default()
            );
            for d in &r.devices {
                s += &format!(
                    "    {} [{:?}]: {} packages, {} units, busy {:.4} s{}\n",
                    d.name,
                    d.kind,
                    d.packages,
                    d.groups,
                    d.busy_seconds,
                    d.fault.as_ref().map(|f| format!(", fault: {f}")).unwrap_or_default()
                );
            }
        }
        s
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rank(rank: usize, packages: Vec<Package>) -> RankReport {
        RankReport {
            rank,
            host: "h".into(),
            devices: Vec::new(),
            packages,
            bytes_sent: 0,
            bytes_received: 0,
            finish_seconds: 0.0,
            compute_seconds: 0.0,
            setup_seconds: 0.0,
            planned_ranges: 0,
            queued_ranges: 0,
            pieces_ranges: 0,
            fault: None,
        }
    }

    #[test]
    fn tiling_catches_gaps_overlaps_and_short_covers() {
        let p = |offset, len| Package { offset, len };
        let mut r = ClusterReport {
            kernel: "k".into(),
            balancer: "b".into(),
            form: "fresh".into(),
            total_units: 10,
            ranks: vec![rank(0, vec![p(0, 4), p(7, 3)]), rank(1, vec![p(4, 3)])],
            roi_seconds: 0.0,
            balance: 1.0,
            faults: Vec::new(),
            measured_units: 0,
        };
        assert!(r.tiles_exactly_once());
        r.ranks[1].packages = vec![p(4, 2)];
        assert!(!r.tiles_exactly_once(), "gap");
        r.ranks[1].packages = vec![p(4, 4)];
        assert!(!r.tiles_exactly_once(), "overlap");
        r.ranks[1].packages = vec![p(4, 3)];
        r.total_units = 11;
        assert!(!r.tiles_exactly_once(), "short");
    }
}
