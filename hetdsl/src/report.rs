//! What a run reports, and the metrics of the EngineCL optimisation study (§IV) and the Sigmoid
//! paper (§5). Pure: numbers in, numbers out; the engine fills a [`Report`], the simulator computes
//! the same metrics.

use crate::balance::dispatch::DeviceStats;
use crate::work::{DeviceKind, Package};

/// Bytes a package moved one way, and the device time that took (profiling).
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Transfer {
    pub bytes: u64,
    pub seconds: Option<f64>,
}

/// One package as it ran.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PackageTrace {
    pub device: usize,
    /// Work-groups (rows of work-groups for 2-D ranges, slabs for 3-D).
    pub package: Package,
    /// Host seconds since the run began: handed out, and completion seen.
    pub host_start: f64,
    pub host_end: f64,
    /// Kernel time measured by the device's profiling clock, in seconds.
    pub kernel_seconds: Option<f64>,
    /// Sliced inputs written before the kernel.
    pub written: Transfer,
    /// Outputs read back after it.
    pub read: Transfer,
    /// Its output is the one in the result. `false` for the losing copy of a package run twice
    /// (a speculative back-up, or a re-run after a fault) and for a failed device's package.
    /// Reports written before back-ups existed lack it: every package of theirs was merged.
    #[serde(default = "merged_by_default")]
    pub merged: bool,
    /// Seconds the device sat idle between its previous kernel's end and this one's start,
    /// by its profiling clock: the per-package cost the host did not hide. `None` for a
    /// device's first package, or without profiling.
    #[serde(default)]
    pub idle_before: Option<f64>,
}

/// One device's share of a run.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DeviceReport {
    pub index: usize,
    pub name: String,
    pub kind: DeviceKind,
    /// Packages whose kernel completed here, and their work-groups (a package run twice, as a
    /// back-up or a re-run, counts on both devices; the trace's `merged` says which copy won).
    pub packages: usize,
    pub groups: u64,
    /// Sum of kernel times of its packages, in seconds.
    pub busy_seconds: f64,
    /// When its last package completed, seconds since the run began (0 if it ran none).
    pub finish_seconds: f64,
    /// Why it stopped early, if it faulted.
    pub fault: Option<String>,
}

/// Everything a run measured. Serialisable to JSON.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Report {
    pub kernel: String,
    pub balancer: String,
    /// The first balancing unit of the run (0 unless `Launch::groups` chose a sub-range).
    #[serde(default)]
    pub first_group: u64,
    /// Balancing units in the run: work-groups, rows of work-groups for 2-D ranges, slabs for
    /// 3-D.
    pub total_groups: u64,
    pub devices: Vec<DeviceReport>,
    pub trace: Vec<PackageTrace>,
    /// Transfers + compute, seconds: from the first package handed out to the last output merged.
    pub roi_seconds: f64,
    /// When the region of interest began (this process's clock; not serialised): measurements
    /// that must cover the ROI alone, such as energy, are scoped with it.
    #[serde(skip)]
    pub roi_start: Option<std::time::Instant>,
    /// Whole call including set-up (queues, buffers, kernels) and release, seconds.
    pub binary_seconds: f64,
    /// T_first_device_done / T_last_device_done over the devices that ran work.
    pub balance: f64,
    /// Filled by [`Report::compare_with_single_device`] once single-device times are known.
    pub speedup: Option<f64>,
    pub smax: Option<f64>,
    pub efficiency: Option<f64>,
    /// Packages that failed and were run again elsewhere: (device, package, reason).
    pub faults: Vec<(usize, Package, String)>,
    /// Speculative back-ups of straggling packages: (from device, to device, package).
    #[serde(default)]
    pub backups: Vec<(usize, usize, Package)>,
    /// A session launch's data movement, per buffer argument (and the mirror's sync, if this
    /// launch ended with one); empty for one-shot launches, which move everything every time.
    #[serde(default)]
    pub transfers: Vec<BufferMoved>,
    /// Devices of the launch that sat it out because they cannot hold its buffers (position,
    /// why): the others ran it. A launch no device can hold is an error instead.
    #[serde(default)]
    pub sat_out: Vec<(usize, String)>,
}

/// Bytes a session moved, by direction. Device-to-device moves go through host staging and
/// count once, as device-to-device.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Moved {
    pub host_to_device: u64,
    pub device_to_host: u64,
    pub device_to_device: u64,
}

impl Moved {
    /// Every byte moved, whichever way.
    pub fn total(&self) -> u64 {
        self.host_to_device + self.device_to_host + self.device_to_device
    }
}

impl std::ops::AddAssign for Moved {
    fn add_assign(&mut self, o: Moved) {
        self.host_to_device += o.host_to_device;
        self.device_to_host += o.device_to_host;
        self.device_to_device += o.device_to_device;
    }
}

/// One session buffer's data movement in a launch.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BufferMoved {
    /// The buffer's index in its session (in creation order).
    pub buffer: usize,
    /// The launch argument it was, or `None` for the mirror's sync at the launch's end.
    pub arg: Option<usize>,
    pub moved: Moved,
}

fn merged_by_default() -> bool {
    true
}

/// balance = first device done / last device done (1 is perfect). Devices that finished at 0
/// (ran nothing) are ignored; with no finished device the balance is 1.
pub fn balance(finish_seconds: &[f64]) -> f64 {
    let done: Vec<f64> = finish_seconds.iter().copied().filter(|t| *t > 0.0).collect();
    if done.is_empty() {
        return 1.0;
    }
    let first = done.iter().copied().fold(f64::INFINITY, f64::min);
    let last = done.iter().copied().fold(0.0, f64::max);
    first / last
}

/// Smax = Σ_i T_fastest / T_i, with T_i each device alone on the whole problem.
pub fn smax(single_device_seconds: &[f64]) -> f64 {
    let fastest = single_device_seconds.iter().copied().fold(f64::INFINITY, f64::min);
    single_device_seconds.iter().map(|t| fastest / t).sum()
}

/// speedup = T_fastest_alone / T_coexec.
pub fn speedup(single_device_seconds: &[f64], coexec_seconds: f64) -> f64 {
    let fastest = single_device_seconds.iter().copied().fold(f64::INFINITY, f64::min);
    fastest / coexec_seconds
}

impl Report {
    /// Whether `t` is the copy a device ran of another device's package (a back-up).
    pub(crate) fn is_backup_copy(&self, t: &PackageTrace) -> bool {
        self.backups.iter().any(|b| b.1 == t.device && b.2 == t.package)
    }

    /// `t`'s kernel seconds, a back-up copy's at the rate its device ran its own packages (where
    /// it ran any): the copy is another device's package, sized for that device, and a CPU's
    /// 32 NBody work-groups, a partial wave on an H100, took 9.4 ms where its own 496 took 10.7.
    pub(crate) fn kernel_seconds_at_own_rate(&self, t: &PackageTrace) -> Option<f64> {
        if !self.is_backup_copy(t) {
            return t.kernel_seconds;
        }
        let own = self.trace.iter().filter(|o| o.device == t.device && !self.is_backup_copy(o));
        let (groups, seconds) = own
            .filter_map(|o| o.kernel_seconds.filter(|k| *k > 0.0).map(|k| (o.package.len, k)))
            .fold((0u64, 0.0), |(g, s), (og, os)| (g + og, s + os));
        if groups == 0 {
            return t.kernel_seconds;
        }
        Some(seconds * t.package.len as f64 / groups as f64)
    }

    /// Fill speedup, Smax and efficiency from each device's time alone on the whole problem
    /// (ROI times, indexed like `devices`). A time per device is needed, each positive; a
    /// device that cannot run the whole problem alone (it cannot hold it) is given as
    /// `f64::INFINITY` and adds nothing to Smax. At least one time must be finite: anything
    /// else would give figures that mean nothing.
    pub fn compare_with_single_device(
        &mut self,
        single_device_seconds: &[f64],
    ) -> crate::error::Result<()> {
        let n = self.devices.len();
        let valid = |t: &f64| *t > 0.0 && (t.is_finite() || *t == f64::INFINITY);
        if single_device_seconds.len() != n
            || !single_device_seconds.iter().all(valid)
            || !single_device_seconds.iter().any(|t| t.is_finite())
        {
            return Err(crate::error::Error::BadArgument {
                index: 0,
                reason: format!(
                    "{n} device(s) ran, so {n} positive single-device times are needed (infinite for \
                     a device that cannot run it alone, but not all), got \
                     {single_device_seconds:?}"
                ),
            });
        }
        let s = speedup(single_device_seconds, self.roi_seconds);
        let m = smax(single_device_seconds);
        self.speedup = Some(s);
        self.smax = Some(m);
        self.efficiency = Some(s / m);
        Ok(())
    }

    /// A plain-text table: one row per device, then the run's figures.
    pub fn table(&self) -> String {
        let mut out = format!(
            "kernel {} | balancer {} | {} work-groups\n{:<4} {:<44} {:>5} {:>9} {:>9} {:>11} {:>11}  {}\n",
            self.kernel,
            self.balancer,
            self.total_groups,
            "dev",
            "name",
            "kind",
            "packages",
            "groups",
            "busy ms",
            "finish ms",
            "fault"
        );
        for d in &self.devices {
            let name: String = d.name.chars().take(44).collect();
            out += &format!(
                "{:<4} {:<44} {:>5} {:>9} {:>9} {:>11.3} {:>11.3}  {}\n",
                d.index,
                name,
                format!("{:?}", d.kind).to_lowercase(),
                d.packages,
                d.groups,
                d.busy_seconds * 1e3,
                d.finish_seconds * 1e3,
                d.fault.as_deref().unwrap_or("-")
            );
        }
        for (d, why) in &self.sat_out {
            out += &format!("device {d} sat out: {why}\n");
        }
        out += &format!(
            "ROI {:.3} ms | binary {:.3} ms | balance {:.3}",
            self.roi_seconds * 1e3,
            self.binary_seconds * 1e3,
            self.balance
        );
        if let (Some(s), Some(m), Some(e)) = (self.speedup, self.smax, self.efficiency) {
            out += &format!(" | speedup {s:.3} | Smax {m:.3} | efficiency {e:.3}");
        }
        if !self.faults.is_empty() {
            out += &format!(" | {} package(s) re-run after faults", self.faults.len());
        }
        if !self.backups.is_empty() {
            out += &format!(" | {} straggler(s) backed up", self.backups.len());
        }
        out
    }

    /// Host overhead per package, seconds: the mean of (host span − input transfer − kernel
    /// time) over packages with device times. The span runs from handing the package out (for
    /// a package queued ahead, from its predecessor's completion) to seeing its kernel
    /// complete, so this is what the engine and driver add around each kernel (copying inputs
    /// into staging included, unless it overlapped the kernel before).
    pub fn host_overhead_per_package(&self) -> Option<f64> {
        let gaps = self.host_overheads();
        (!gaps.is_empty()).then(|| gaps.iter().sum::<f64>() / gaps.len() as f64)
    }

    /// Each package's host overhead (as in [`Report::host_overhead_per_package`]), in trace
    /// order, for the packages with device times.
    pub fn host_overheads(&self) -> Vec<f64> {
        self.trace
            .iter()
            .filter_map(|t| {
                let busy = t.kernel_seconds? + t.written.seconds?;
                Some((t.host_end - t.host_start - busy).max(0.0))
            })
            .collect()
    }

    /// Each package's idle time before its kernel on its device (`PackageTrace::idle_before`),
    /// in trace order, for the packages that have one: what the host did not hide between two
    /// kernels, whether or not the next package was queued ahead. Unlike
    /// [`Report::host_overheads`], it counts nothing that overlapped a kernel.
    pub fn device_idle_gaps(&self) -> Vec<f64> {
        self.trace.iter().filter_map(|t| t.idle_before).collect()
    }

    /// Read-back rate of one device over the run: bytes per second of device transfer time.
    pub fn read_rate(&self, device: usize) -> Option<f64> {
        let (bytes, secs) = self
            .trace
            .iter()
            .filter(|t| t.device == device)
            .filter_map(|t| t.read.seconds.map(|s| (t.read.bytes, s)))
            .fold((0u64, 0.0), |(b, s), (tb, ts)| (b + tb, s + ts));
        (bytes > 0 && secs > 0.0).then(|| bytes as f64 / secs)
    }

    /// The report as JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a report has no non-string map keys")
    }
}

/// A finished run as the engine saw it: what [`Report::of_run`] turns into a report.
pub(crate) struct RunRecord<'a> {
    pub(crate) kernel: String,
    pub(crate) balancer: String,
    /// The balancing units the run covered.
    pub(crate) groups: std::ops::Range<u64>,
    /// Per device, in the run's order: its name, its kind and what the dispatcher counted.
    pub(crate) devices: Vec<(String, DeviceKind, &'a DeviceStats)>,
    pub(crate) trace: Vec<PackageTrace>,
    pub(crate) roi_start: std::time::Instant,
    pub(crate) binary_seconds: f64,
    pub(crate) faults: Vec<(usize, Package, String)>,
    pub(crate) backups: Vec<(usize, usize, Package)>,
}

#[cfg(test)]
impl PackageTrace {
    /// A merged package of `device` over `len` groups from `offset`, handed out at 0 and seen
    /// to end at `end` seconds after `kernel` seconds of kernel: a fixture for tests.
    pub(crate) fn merged_fixture(
        device: usize,
        offset: u64,
        len: u64,
        kernel: f64,
        end: f64,
    ) -> Self {
        PackageTrace {
            device,
            package: Package { offset, len },
            host_start: 0.0,
            host_end: end,
            kernel_seconds: Some(kernel),
            written: Transfer::default(),
            read: Transfer::default(),
            merged: true,
            idle_before: None,
        }
    }
}

#[cfg(test)]
impl Report {
    /// A Sigmoid report of `total_groups` with these devices and packages, every other field
    /// at its plainest (1 s of ROI, balance 1, no faults): a fixture for tests.
    pub(crate) fn fixture(
        total_groups: u64,
        devices: Vec<DeviceReport>,
        trace: Vec<PackageTrace>,
    ) -> Report {
        Report {
            kernel: "k".into(),
            balancer: "sigmoid".into(),
            first_group: 0,
            total_groups,
            devices,
            trace,
            roi_seconds: 1.0,
            roi_start: None,
            binary_seconds: 1.0,
            balance: 1.0,
            speedup: None,
            smax: None,
            efficiency: None,
            faults: Vec::new(),
            backups: Vec::new(),
            transfers: Vec::new(),
            sat_out: Vec::new(),
        }
    }
}

impl Report {
    /// The report of a finished run: per-device shares, balance and the region of interest
    /// (up to the last device's last completion).
    pub(crate) fn of_run(r: RunRecord<'_>) -> Report {
        let devices: Vec<DeviceReport> = r
            .devices
            .into_iter()
            .enumerate()
            .map(|(i, (name, kind, st))| DeviceReport {
                index: i,
                name,
                kind,
                packages: st.ran,
                groups: st.ran_groups,
                busy_seconds: st.ran_busy,
                finish_seconds: st.finish,
                fault: st.fault.clone(),
            })
            .collect();
        let finish: Vec<f64> =
            devices.iter().filter(|d| d.fault.is_none()).map(|d| d.finish_seconds).collect();
        let roi = devices.iter().map(|d| d.finish_seconds).fold(0.0, f64::max);
        Report {
            kernel: r.kernel,
            balancer: r.balancer,
            first_group: r.groups.start,
            total_groups: r.groups.end - r.groups.start,
            balance: balance(&finish),
            devices,
            trace: r.trace,
            roi_seconds: roi,
            roi_start: Some(r.roi_start),
            binary_seconds: r.binary_seconds,
            speedup: None,
            smax: None,
            efficiency: None,
            faults: r.faults,
            backups: r.backups,
            transfers: Vec::new(),
            sat_out: Vec::new(),
        }
    }

    /// This report of a run on the devices at positions `taking` of a launch over `all`
    /// (name and kind of each), as a report of the launch: the devices that sat out are listed
    /// with nothing run, and every device position is the launch's.
    pub(crate) fn widened(mut self, taking: &[usize], all: &[(String, DeviceKind)]) -> Report {
        let at = |d: usize| taking.get(d).copied().unwrap_or(d);
        let mut ran: Vec<Option<DeviceReport>> = vec![None; all.len()];
        for d in std::mem::take(&mut self.devices) {
            let i = at(d.index);
            if let Some(slot) = ran.get_mut(i) {
                *slot = Some(DeviceReport { index: i, ..d });
            }
        }
        self.devices = ran
            .into_iter()
            .zip(all)
            .enumerate()
            .map(|(index, (r, (name, kind)))| {
                r.unwrap_or_else(|| DeviceReport {
                    index,
                    name: name.clone(),
                    kind: *kind,
                    packages: 0,
                    groups: 0,
                    busy_seconds: 0.0,
                    finish_seconds: 0.0,
                    fault: None,
                })
            })
            .collect();
        for t in &mut self.trace {
            t.device = at(t.device);
        }
        for f in &mut self.faults {
            f.0 = at(f.0);
        }
        for b in &mut self.backups {
            (b.0, b.1) = (at(b.0), at(b.1));
        }
        self
    }

    /// A session launch's bytes moved, in total (the mirror's sync included).
    pub fn moved(&self) -> Moved {
        let mut m = Moved::default();
        for b in &self.transfers {
            m += b.moved;
        }
        m
    }

    /// The bytes moved for launch argument `arg` (not counting the mirror's sync).
    pub fn moved_arg(&self, arg: usize) -> Moved {
        let mut m = Moved::default();
        for b in self.transfers.iter().filter(|b| b.arg == Some(arg)) {
            m += b.moved;
        }
        m
    }

    /// The bytes moved for the session buffer of index `buffer`, the mirror's sync included.
    pub fn moved_buffer(&self, buffer: usize) -> Moved {
        let mut m = Moved::default();
        for b in self.transfers.iter().filter(|b| b.buffer == buffer) {
            m += b.moved;
        }
        m
    }
}

/// Microseconds, the Chrome trace format's unit.
fn micros(seconds: f64) -> f64 {
    (seconds * 1e6 * 1000.0).round() / 1000.0
}

impl Report {
    /// The per-package trace as Chrome trace-event JSON, for Perfetto (ui.perfetto.dev) or
    /// chrome://tracing: one track per device; each package a slice spanning the time it was out
    /// (handed out to completion seen) with its input writes, kernel and read-back nested in it,
    /// laid out in that order from the device's own profiled times (the engine records their
    /// durations, not their instants). Back-up copies, losing copies and faulted packages are
    /// marked in the slice's category and arguments.
    pub fn chrome_trace(&self) -> String {
        use serde_json::json;
        let mut events = vec![json!({"ph": "M", "name": "process_name", "pid": 0, "tid": 0,
            "args": {"name": format!("{} ({})", self.kernel, self.balancer)}})];
        for d in &self.devices {
            events.push(json!({"ph": "M", "name": "thread_name", "pid": 0, "tid": d.index,
                "args": {"name": format!("device {}: {}", d.index, d.name)}}));
        }
        let mut order: Vec<&PackageTrace> = self.trace.iter().collect();
        order.sort_by(|a, b| a.device.cmp(&b.device).then(a.host_start.total_cmp(&b.host_start)));
        // A device runs its packages one after another; its slices are kept from overlapping
        // where two host readings of the clock straddle each other by rounding.
        let mut previous_end: Option<(usize, f64)> = None;
        for t in order {
            let start = match previous_end {
                Some((device, end)) if device == t.device => t.host_start.max(end),
                _ => t.host_start,
            };
            let end = t.host_end.max(start);
            previous_end = Some((t.device, end));
            let backup = self.backups.iter().find(|b| b.1 == t.device && b.2 == t.package);
            let fault = self.faults.iter().find(|f| f.0 == t.device && f.1 == t.package);
            let cat = match (backup.is_some(), t.merged) {
                (true, _) => "package,backup",
                (false, false) => "package,discarded",
                (false, true) => "package",
            };
            let p = t.package;
            let name = match backup {
                Some(_) => format!("backup {}+{}", p.offset, p.len),
                None => format!("package {}+{}", p.offset, p.len),
            };
            events.push(json!({"ph": "X", "name": name, "cat": cat, "pid": 0, "tid": t.device,
                "ts": micros(start), "dur": micros(end) - micros(start),
                "args": {"offset": p.offset, "len": p.len, "merged": t.merged,
                    "backup_of_device": backup.map(|b| b.0),
                    "fault": fault.map(|f| f.2.clone()),
                    "bytes_written": t.written.bytes, "bytes_read": t.read.bytes}}));
            // Write, kernel and read-back nested in the package, in the order they ran, each
            // cut to what is left of the package's span.
            let mut at = start;
            let write = t.written.seconds.unwrap_or(0.0);
            let read = t.read.seconds.unwrap_or(0.0);
            let kernel = t.kernel_seconds.unwrap_or((end - start - write - read).max(0.0));
            for (what, cat, seconds) in [
                ("write", "transfer", write),
                ("kernel", "kernel", kernel),
                ("read", "transfer", read),
            ] {
                let dur = seconds.min(end - at).max(0.0);
                if dur > 0.0 {
                    events.push(json!({"ph": "X", "name": what, "cat": cat, "pid": 0,
                        "tid": t.device, "ts": micros(at), "dur": micros(at + dur) - micros(at),
                        "args": {"offset": p.offset, "len": p.len}}));
                }
                at += dur;
            }
        }
        let doc = json!({"traceEvents": events, "displayTimeUnit": "ms"});
        serde_json::to_string(&doc).expect("a trace has no non-string map keys")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_follow_the_definitions() {
        assert_eq!(balance(&[2.0, 4.0]), 0.5);
        assert_eq!(balance(&[0.0, 4.0]), 1.0);
        assert_eq!(balance(&[]), 1.0);
        // Device 0 alone 1 s, device 1 alone 3 s: Smax = 1 + 1/3.
        assert!((smax(&[1.0, 3.0]) - 4.0 / 3.0).abs() < 1e-12);
        assert!((speedup(&[1.0, 3.0], 0.8) - 1.25).abs() < 1e-12);
    }
}
