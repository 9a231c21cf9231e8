//! What a launch leaves for the next: per device its speed and the groups it holds, read from
//! an engine report or a simulation, kept as JSON between processes if wanted.

use std::ops::Range;
use std::path::Path;

use super::layout;
use crate::error::{Error, Result};
use crate::report::Report;
use crate::work::Package;

/// What the previous launch measured, per device. Serialisable, so a session can keep it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct History {
    /// Balancing units of the launch it came from.
    pub total_groups: u64,
    pub devices: Vec<DeviceHistory>,
}

/// One device's part of a [`History`].
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DeviceHistory {
    /// Work-groups per second over its packages; 0 when unknown or the device was lost.
    pub speed: f64,
    /// The groups whose output it produced (merged), as sorted, merged ranges.
    pub owned: Vec<Range<u64>>,
}

/// One package of a finished launch, as [`History::from_runs`] reads it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ran {
    pub device: usize,
    pub package: Package,
    /// Seconds the device computed it (kernel time, or the host span without one).
    pub seconds: f64,
    /// Its output is the one kept (not the losing copy of a back-up or re-run).
    pub merged: bool,
}

impl History {
    /// The history of a launch from its report: per device, work-groups per second of kernel
    /// time over every package it completed (the host span where the device gave no kernel
    /// time), and the groups of its merged packages. A device that faulted gets speed 0.
    ///
    /// A back-up's copy is costed at the rate its device ran its own packages (where it ran any
    /// with a kernel time), so it does not change that device's speed: it is another device's
    /// package, sized for that device (a CPU's 32 NBody work-groups, a partial wave on an H100,
    /// ran 9.4 ms where 496 took 10.7, and the next launch, taking that GPU for 2.3 times
    /// slower, gave it 30 % of the range).
    pub fn from_report(report: &Report) -> History {
        let runs = report.trace.iter().map(|t| Ran {
            device: t.device,
            package: t.package,
            seconds: (report.kernel_seconds_at_own_rate(t).filter(|s| *s > 0.0))
                .unwrap_or(t.host_end - t.host_start),
            merged: t.merged,
        });
        let mut h = History::from_runs(report.total_groups, report.devices.len(), runs);
        for d in report.devices.iter().filter(|d| d.fault.is_some()) {
            if let Some(dh) = h.devices.get_mut(d.index) {
                dh.speed = 0.0;
            }
        }
        h
    }

    /// The history of `devices` devices over `total_groups` from the packages they ran.
    /// Packages of a device outside `0..devices` are ignored.
    pub fn from_runs(
        total_groups: u64,
        devices: usize,
        runs: impl IntoIterator<Item = Ran>,
    ) -> History {
        let mut groups = vec![(0u64, 0.0f64); devices];
        let mut owned = vec![Vec::new(); devices];
        for r in runs.into_iter().filter(|r| r.device < devices) {
            if r.seconds.is_finite() && r.seconds > 0.0 {
                groups[r.device].0 += r.package.len;
                groups[r.device].1 += r.seconds;
            }
            if r.merged {
                owned[r.device].push(r.package.offset..r.package.end());
            }
        }
        let devices = groups
            .into_iter()
            .zip(owned)
            .map(|((g, s), owned)| DeviceHistory {
                speed: if s > 0.0 { g as f64 / s } else { 0.0 },
                owned: layout::merged(owned, total_groups),
            })
            .collect();
        History { total_groups, devices }
    }

    /// Work-groups that `next` places on another device than this history did: what a launch
    /// planned from this history moved (groups neither history places are not counted).
    pub fn moved(&self, next: &History) -> u64 {
        next.devices
            .iter()
            .enumerate()
            .map(|(d, n)| {
                let before = self.devices.get(d).map_or(&[][..], |h| &h.owned[..]);
                n.owned.iter().map(|r| (r.end - r.start) - layout::overlap(r, before)).sum::<u64>()
            })
            .sum()
    }

    /// Write the history as JSON (for a cache kept between processes).
    pub fn save(&self, path: &Path) -> Result<()> {
        let text = serde_json::to_string_pretty(self).map_err(|e| io_error(path, e))?;
        std::fs::write(path, text).map_err(|e| io_error(path, e))
    }

    /// Read a history written by [`History::save`]. A missing or unreadable file is an
    /// [`Error::Io`] naming it.
    pub fn load(path: &Path) -> Result<History> {
        let text = std::fs::read_to_string(path).map_err(|e| io_error(path, e))?;
        serde_json::from_str(&text).map_err(|e| io_error(path, format!("not a history: {e}")))
    }
}

fn io_error(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::Io { path: path.display().to_string(), reason: e.to_string() }
}

// Owned ranges are lists of ranges; a list of one range is what these tests mean.
#[allow(clippy::single_range_in_vec_init)]
#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{DeviceReport, PackageTrace, Transfer};
    use crate::work::DeviceKind;

    fn trace(
        device: usize,
        offset: u64,
        len: u64,
        kernel: Option<f64>,
        merged: bool,
    ) -> PackageTrace {
        PackageTrace {
            device,
            package: Package { offset, len },
            host_start: 1.0,
            host_end: 3.0,
            kernel_seconds: kernel,
            written: Transfer::default(),
            read: Transfer::default(),
            merged,
            idle_before: None,
        }
    }

    fn report(trace: Vec<PackageTrace>, faulted: Option<usize>) -> Report {
        let devices = (0..3)
            .map(|i| DeviceReport {
                index: i,
                name: format!("dev{i}"),
                kind: DeviceKind::Gpu,
                packages: 0,
                groups: 0,
                busy_seconds: 0.0,
                finish_seconds: 0.0,
                fault: (faulted == Some(i)).then(|| "lost".to_string()),
            })
            .collect();
        Report { roi_seconds: 3.0, binary_seconds: 3.0, ..Report::fixture(100, devices, trace) }
    }

    #[test]
    fn a_report_gives_speeds_over_kernel_time_and_the_merged_ranges() {
        let r = report(
            vec![
                trace(0, 0, 20, Some(0.5), true),
                trace(0, 20, 20, Some(0.5), true),
                // A losing back-up copy: it ran (its time counts) but its groups are device 1's.
                trace(0, 60, 10, Some(0.25), false),
                trace(1, 40, 30, Some(1.0), true),
                // No kernel time: the host span (2 s) counts.
                trace(1, 70, 10, None, true),
                trace(2, 80, 20, Some(0.1), true),
            ],
            Some(2),
        );
        let h = History::from_report(&r);
        assert_eq!(h.total_groups, 100);
        assert_eq!(h.devices[0], DeviceHistory { speed: 50.0 / 1.25, owned: vec![0..40] });
        assert_eq!(h.devices[1], DeviceHistory { speed: 40.0 / 3.0, owned: vec![40..80] });
        // A device that faulted has no usable speed; what it merged before stays its own.
        assert_eq!(h.devices[2], DeviceHistory { speed: 0.0, owned: vec![80..100] });
    }

    #[test]
    fn a_back_up_copy_counts_in_a_speed_only_where_the_device_ran_nothing_else() {
        // Device 1 backed up device 0's probe (0..4, a partial wave: 0.9 s) after its own 96
        // groups in 1 s; device 2 ran nothing but a copy of device 0's second package.
        let mut r = report(
            vec![
                trace(1, 4, 96, Some(1.0), true),
                trace(1, 0, 4, Some(0.9), true),
                trace(2, 50, 10, Some(0.5), false),
            ],
            None,
        );
        r.backups =
            vec![(0, 1, Package { offset: 0, len: 4 }), (0, 2, Package { offset: 50, len: 10 })];
        let h = History::from_report(&r);
        assert_eq!(h.devices[1], DeviceHistory { speed: 96.0, owned: vec![0..100] });
        assert_eq!(h.devices[2].speed, 20.0);
    }

    #[test]
    fn moved_counts_the_groups_that_changed_device() {
        let before = History {
            total_groups: 100,
            devices: vec![
                DeviceHistory { speed: 1.0, owned: vec![0..50] },
                DeviceHistory { speed: 1.0, owned: vec![50..100] },
            ],
        };
        let mut after = before.clone();
        assert_eq!(before.moved(&after), 0);
        after.devices[0].owned = vec![0..60];
        after.devices[1].owned = vec![60..100];
        assert_eq!(before.moved(&after), 10);
    }

    #[test]
    fn a_history_survives_a_file_and_a_bad_file_is_an_error_naming_it() {
        let dir = std::env::temp_dir().join(format!("hetdsl-history-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("history.json");
        let h = History::from_report(&report(vec![trace(1, 0, 100, Some(2.0), true)], None));
        h.save(&path).unwrap();
        assert_eq!(History::load(&path).unwrap(), h);
        std::fs::write(&path, "{\"total_groups\": 3}").unwrap();
        let err = History::load(&path).unwrap_err().to_string();
        assert!(err.contains("history.json") && err.contains("not a history"), "{err}");
        let missing = dir.join("missing.json");
        let err = History::load(&missing).unwrap_err().to_string();
        assert!(err.contains("missing.json"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
