//! The horizon rule of Sigmoid's guard (see `sigmoid.rs`): how large a package a device may
//! take so that it is predicted to end by the predicted end of the whole run, or whether it
//! should wait. Pure: a snapshot of the devices in, a decision out.

use super::model::{common_finish, LinearTime};

/// The fraction of its occupancy bound below which a device is taken to run no faster: a
/// package of fewer work-groups takes as long as this many would (see `Outlook::cap`): below a
/// third of a fill a GPU's time stops shrinking much (measured: docs/RESULTS.md); the simulator
/// is harsher (a partial fill costs a whole one).
pub(crate) const PARTIAL_FILL: f64 = 0.33;

/// The tail is the last rounds: with fewer than two fills per device left, Sigmoid's sizes
/// (never below a fill) leave one device a fill behind the others.
const TAIL_FILLS: f64 = 2.0;

/// Seconds a device needs for `groups` work-groups, counting a partial fill as
/// [`PARTIAL_FILL`] of a full one.
fn fill_seconds(v: &DeviceView, groups: f64) -> f64 {
    groups.max(v.occupancy * PARTIAL_FILL) / v.speed
}

/// What the rule knows of one device.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct DeviceView {
    /// Nominally of a slower class than the fastest device (`sigmoid::SLOW_CLASS`): only such
    /// a device may be told to wait.
    pub(crate) guarded: bool,
    pub(crate) alive: bool,
    /// Planning speed over the work left, work-groups per second (recent mean, slowed down by
    /// the cost trend where the work ahead costs more).
    pub(crate) speed: f64,
    /// Planning speed on the work-groups the device would take next (at the front of the
    /// range): its own package is sized with it.
    pub(crate) next_speed: f64,
    /// Best speed shown in this run (its class: the mean dips on costly regions).
    pub(crate) best: f64,
    /// Seconds until its running package is expected to end; `None` when it runs nothing.
    pub(crate) busy_for: Option<f64>,
    /// Occupancy bound, work-groups.
    pub(crate) occupancy: f64,
}

/// The snapshot the rule decides on.
#[derive(Debug, Clone)]
pub(crate) struct Outlook<'a> {
    pub(crate) devices: &'a [DeviceView],
    /// Work-groups not handed out yet.
    pub(crate) left: f64,
    /// Widest ratio of fastest to slowest speed any device has shown (1: regular).
    pub(crate) variability: f64,
    /// Seconds of imbalance the paper tolerates now (p·t); the cap keeps p·t/v seconds of
    /// work at least.
    pub(crate) tolerated: f64,
}

impl Outlook<'_> {
    /// The irregularity margin of each device. On an irregular kernel the next work-groups may
    /// cost v times what earlier ones did, and the run may end sooner than predicted. A device
    /// at least as fast as the mean device needs no margin: Sigmoid's own slope k_i handles
    /// irregularity there, as in the paper. A slower one risks idling the machine for an
    /// overrun while adding little, so its margin grows to the full v as its relative speed (N
    /// times its best speed over the sum of the devices' best speeds) falls to zero. Only a
    /// device of a slower class is "slower" in that sense; a peer gets no margin.
    fn margins(&self) -> Vec<f64> {
        let live = self.devices.iter().filter(|d| d.alive).count() as f64;
        let total: f64 = self.devices.iter().filter(|d| d.alive).map(|d| d.best).sum();
        self.devices
            .iter()
            .map(|d| match d.guarded {
                true => self.variability.powf((1.0 - live * d.best / total).max(0.0)),
                // A peer's speed differs from the others' by the region it ran, not by what
                // it is: a margin would shrink its packages below what hides its slowest
                // work-groups.
                false => 1.0,
            })
            .collect()
    }

    /// Less than [`TAIL_FILLS`] fills per live device are left and `device` is a peer of the
    /// fastest (not of a slower class): its package is its share of the common end
    /// ([`Outlook::cap`]).
    pub(crate) fn in_tail(&self, device: usize) -> bool {
        let fill: f64 = self.devices.iter().filter(|d| d.alive).map(|d| d.occupancy).sum();
        !self.devices[device].guarded && self.left < TAIL_FILLS * fill
    }

    /// `Some(cap)` on the package of `device`, or `None`: wait.
    pub(crate) fn cap(&self, device: usize) -> Option<f64> {
        let margins = self.margins();
        let me = self.devices[device];
        let plain: Vec<Option<LinearTime>> = self
            .devices
            .iter()
            .enumerate()
            .map(|(d, v)| {
                // Every other device counts at the speed it plans with itself (under its
                // margin): a CPU measured on cheap work would otherwise look like one more GPU,
                // and hold the real ones to their bound for it.
                let ready = if d == device { 0.0 } else { v.busy_for.unwrap_or(0.0) };
                let margin = if d == device { 1.0 } else { margins[d] };
                v.alive.then_some(LinearTime { ready, fixed: 0.0, per_group: margin / v.speed })
            })
            .collect();
        let Some(end) = common_finish(self.left, &plain) else {
            return Some(f64::INFINITY);
        };
        // The run may end `margin` times sooner and this package take `margin` times longer,
        // but the cap never goes below the p·t seconds of imbalance the paper itself tolerates,
        // counted at the worst cost seen: a package of p·t seconds at the measured speed may
        // take v times as long (on a bursty kernel the speed was measured on cheap work), so
        // p·t/v seconds of work keep the overrun within the paper's p·t.
        let careful = me.next_speed / margins[device];
        let floor = self.tolerated / self.variability;
        // A device of a slower class must also leave time for its package to be backed up: if
        // it is late, a fast device re-runs it (the engine's speculative back-up), which takes
        // that device a fill at least. Ending by E minus that, a late package still ends by E.
        let deadline = if me.guarded { end - self.backup_seconds(device) } else { end };
        let cap = ((deadline / margins[device]).max(floor) * careful).floor();
        // In the tail, a peer takes exactly its share of the common end, even below its
        // occupancy bound (down to PARTIAL_FILL of it): with 1.3 fills left for two GPUs, a
        // whole fill here and a crumb there end a fill apart, while two shares end together.
        // A partly filled GPU is not as slow per group as a full one, which PARTIAL_FILL stands
        // for.
        if self.in_tail(device) {
            return Some(cap.max(me.occupancy * PARTIAL_FILL));
        }
        // Before the tail, a peer never waits: its speed measured on other work-groups says
        // little about the rest, and idling it can cost most of the run.
        if cap >= me.occupancy || !me.guarded {
            return Some(cap.max(me.occupancy));
        }
        // Even a full-occupancy package overruns the predicted end. Wait only if the devices
        // already running could, once free, finish everything left (at their careful speeds)
        // before this device would finish its smallest package (which takes as long as a full
        // one, being below the occupancy bound). Devices idle or waiting themselves do not
        // count, so a device waits only on one that will report back.
        let running: Vec<Option<LinearTime>> = self
            .devices
            .iter()
            .enumerate()
            .map(|(d, v)| {
                let ready = v.busy_for.filter(|_| d != device && v.alive)?;
                Some(LinearTime { ready, fixed: 0.0, per_group: margins[d] / v.speed })
            })
            .collect();
        let others_end = common_finish(self.left, &running).unwrap_or(f64::INFINITY);
        // Waiting idles this device, so it needs strong evidence: even at the best speed it has
        // shown (under its margin), its package must end after the others finish everything.
        let hopeful = (me.best / margins[device]).max(careful);
        (me.occupancy / hopeful < others_end).then_some(me.occupancy)
    }
}

impl Outlook<'_> {
    /// Seconds the fastest other live device needs for one fill: the least a back-up of a
    /// slow device's package costs it.
    fn backup_seconds(&self, device: usize) -> f64 {
        let fastest_fill = self
            .devices
            .iter()
            .enumerate()
            .filter(|(d, v)| *d != device && v.alive && !v.guarded)
            .map(|(_, v)| fill_seconds(v, 0.0))
            .fold(f64::INFINITY, f64::min);
        if fastest_fill.is_finite() {
            fastest_fill
        } else {
            0.0
        }
    }

    /// With a package of `size` for `device` leaving less than its occupancy bound behind:
    /// whether it should take everything instead. That crumb would cost a whole fill, so it
    /// pays to take it unless another device could run it in parallel and end sooner.
    pub(crate) fn takes_all(&self, device: usize, size: f64) -> bool {
        let me = self.devices[device];
        let rest = self.left - size;
        if rest <= 0.0 || rest >= me.occupancy {
            return false;
        }
        let time = |v: &DeviceView, groups: f64| fill_seconds(v, groups);
        let all_here = time(&me, self.left);
        let mine = time(&me, size);
        let crumb_elsewhere = self
            .devices
            .iter()
            .enumerate()
            .filter(|(d, v)| *d != device && v.alive)
            .map(|(_, v)| v.busy_for.unwrap_or(0.0) + time(v, rest))
            .fold(mine + time(&me, rest), f64::min);
        all_here <= mine.max(crumb_elsewhere)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(speed: f64, busy_for: Option<f64>, occupancy: f64) -> DeviceView {
        DeviceView {
            guarded: true,
            alive: true,
            speed,
            next_speed: speed,
            best: speed,
            busy_for,
            occupancy,
        }
    }

    #[test]
    fn only_a_slower_class_device_may_wait() {
        // The snapshot of two H200s on Mandelbrot's band: device 0 measured 7.5 M groups/s on
        // cheap work and runs a large package; device 1 measured 43 k/s on costly work, and the
        // spread of speeds seen is 175x. As a device of a slower class, device 1 would wait;
        // as a nominal peer of device 0 it gets a package.
        let fast = view(7.5e6, Some(0.4), 792.0);
        let slow = view(4.3e4, None, 792.0);
        let cap = |guarded| {
            let devices = [fast, DeviceView { guarded, ..slow }];
            let outlook = Outlook {
                devices: &devices,
                left: 174_000.0,
                variability: 175.0,
                tolerated: 0.0055,
            };
            outlook.cap(1)
        };
        assert_eq!(cap(true), None, "a slower-class device waits");
        let cap = cap(false).expect("a peer never waits");
        assert!(cap >= 792.0, "a peer gets at least its occupancy bound: {cap}");
    }

    #[test]
    fn a_package_is_cut_at_the_common_end() {
        // 1000 groups left, two idle devices at 100/s and 300/s: all end at 2.5 s, so the slow
        // one may take 250.
        let devices = [view(100.0, None, 10.0), view(300.0, None, 10.0)];
        let o = Outlook { devices: &devices, left: 1000.0, variability: 1.0, tolerated: 0.0 };
        assert_eq!(o.cap(0), Some(250.0));
        assert_eq!(o.cap(1), Some(750.0));
    }

    #[test]
    fn a_slow_device_waits_only_for_a_running_one_that_finishes_first() {
        // Device 0 fills with 100 groups (1 s at 100/s); device 1 runs at 10 000/s and 1000
        // groups are left: it will be done in 0.1 s, so device 0 waits.
        let busy = [view(100.0, None, 100.0), view(10_000.0, Some(0.0), 10.0)];
        let o = Outlook { devices: &busy, left: 1000.0, variability: 1.0, tolerated: 0.0 };
        assert_eq!(o.cap(0), None);
        // The same fast device idle (not running): nobody will report back, so no waiting.
        let idle = [view(100.0, None, 100.0), view(10_000.0, None, 10.0)];
        let o = Outlook { devices: &idle, left: 1000.0, variability: 1.0, tolerated: 0.0 };
        assert_eq!(o.cap(0), Some(100.0));
    }

    #[test]
    fn a_crumb_goes_to_a_free_peer_but_not_to_a_slow_device() {
        // 300 groups left, 200 planned for device 0 (fills with 200, 1000/s): the 100-group
        // crumb costs a whole fill (0.2 s) wherever it runs.
        let peer = [view(1000.0, None, 200.0), view(1000.0, Some(0.0), 200.0)];
        let o = Outlook { devices: &peer, left: 300.0, variability: 1.0, tolerated: 0.0 };
        // A free equal device runs it beside device 0: both end at 0.2 s, against 0.3 s.
        assert!(!o.takes_all(0, 200.0));
        // A device 100 times slower would need 20 s: device 0 takes all 300 (0.3 s).
        let slow = [view(1000.0, None, 200.0), view(10.0, None, 200.0)];
        let o = Outlook { devices: &slow, ..o };
        assert!(o.takes_all(0, 200.0));
        // No crumb, no question.
        assert!(!o.takes_all(0, 50.0));
    }

    #[test]
    fn in_the_tail_peers_split_the_rest_below_their_bound() {
        // H200 NBody's last round: 2816 groups left, two idle peers filling with 2112 each. The
        // bound would give 2112 + 704 (ending a fill apart); the tail gives each half.
        let peer = |d: f64| DeviceView { guarded: false, ..view(6000.0, Some(d), 2112.0) };
        let devices = [DeviceView { busy_for: None, ..peer(0.0) }, peer(0.0)];
        let o = Outlook { devices: &devices, left: 2816.0, variability: 1.0, tolerated: 0.0 };
        assert!(o.in_tail(0));
        assert_eq!(o.cap(0), Some(1408.0));
        // Never below PARTIAL_FILL of a fill: with 1000 left, each would get 500.
        let o = Outlook { left: 1000.0, ..o };
        assert_eq!(o.cap(0), Some(2112.0 * PARTIAL_FILL));
        // Earlier (two fills per device or more left) the bound holds.
        let o = Outlook { left: 9000.0, ..o };
        assert!(!o.in_tail(0));
    }

    #[test]
    fn a_slow_device_leaves_time_for_its_back_up() {
        // A GPU (10 000 groups/s, fills with 1000: a back-up costs it a partial fill, at least
        // PARTIAL_FILL of 0.1 s) runs; a CPU of a slower class at 100 groups/s. 10 000 groups
        // left: they end together at E = 10 000 / 10 100 s, and the CPU's package must end that
        // partial fill before.
        let gpu = DeviceView { guarded: false, ..view(10_000.0, Some(0.0), 1000.0) };
        let cpu = view(100.0, None, 1.0);
        let devices = [cpu, gpu];
        let o = Outlook { devices: &devices, left: 10_000.0, variability: 1.0, tolerated: 0.0 };
        let end = 10_000.0 / 10_100.0;
        assert_eq!(o.cap(0), Some(((end - 0.1 * PARTIAL_FILL) * 100.0_f64).floor()));
    }

    #[test]
    fn a_peer_gets_no_irregularity_margin() {
        // As below, speeds 100 and 900, v = 4, but both devices peers (two GPUs whose speeds
        // differ by the region each ran): the slow one's share is its plain share of E = 1 s.
        let peer = |speed| DeviceView { guarded: false, ..view(speed, None, 1.0) };
        let devices = [peer(100.0), peer(900.0)];
        let o = Outlook { devices: &devices, left: 1000.0, variability: 4.0, tolerated: 0.0 };
        assert_eq!(o.margins(), vec![1.0, 1.0]);
        assert_eq!(o.cap(0), Some(100.0));
    }

    #[test]
    fn irregularity_shrinks_only_the_slow_devices_share() {
        // Speeds 100 and 900 (mean 500); idle; 1000 groups: E = 1 s. With v = 4 the slow
        // device (relative speed 0.2) gets a margin 4^0.8 on both E and its speed; the fast one
        // (relative 1.8) none.
        let devices = [view(100.0, None, 1.0), view(900.0, None, 1.0)];
        let o = Outlook { devices: &devices, left: 1000.0, variability: 4.0, tolerated: 0.0 };
        let m = 4f64.powf(0.8);
        assert_eq!(o.cap(0), Some((100.0 / (m * m)).floor()));
        // The fast one counts the slow one at the careful speed it plans with, 100/m, so the
        // common end is later and its own share larger than 900.
        let end = 1000.0 / (900.0 + 100.0 / m);
        assert_eq!(o.cap(1), Some((end * 900.0).floor()));
        assert!(o.cap(1) > Some(900.0));
        // The paper's p·t tolerance is a floor: at v = 1 (no margin then either) 1.5 s, above
        // E = 1 s, of the slow device's speed...
        let o = Outlook { tolerated: 1.5, variability: 1.0, ..o };
        assert_eq!(o.cap(0), Some(150.0));
        // ...and p·t/v at v = 4: max(E/m, 2.4/4) = 0.6 s at the careful speed 100/m.
        let o = Outlook { tolerated: 2.4, variability: 4.0, ..o };
        assert!(1.0 / m < 0.6);
        assert_eq!(o.cap(0), Some((0.6 * 100.0 / m).floor()));
    }
}
