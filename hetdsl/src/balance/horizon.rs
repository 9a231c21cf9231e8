//! The horizon rule of Sigmoid's guard (see `sigmoid.rs`): how large a package a device may
//! take so that it is predicted to end by the predicted end of the whole run, or whether it
//! should wait. Pure: a snapshot of the devices in, a decision out.

use super::model::{common_finish, LinearTime};

/// What the rule knows of one device.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct DeviceView {
    pub alive: bool,
    /// Planning speed, work-groups per second (recent mean).
    pub speed: f64,
    /// Best speed shown in this run (its class: the mean dips on costly regions).
    pub best: f64,
    /// Seconds until its running package is expected to end; `None` when it runs nothing.
    pub busy_for: Option<f64>,
    /// Occupancy bound, work-groups.
    pub occupancy: f64,
}

/// The snapshot the rule decides on.
#[derive(Debug, Clone)]
pub(crate) struct Outlook<'a> {
    pub devices: &'a [DeviceView],
    /// Work-groups not handed out yet.
    pub left: f64,
    /// Widest ratio of fastest to slowest speed any device has shown (1: regular).
    pub variability: f64,
    /// Seconds of imbalance the paper tolerates now (p·t).
    pub tolerated: f64,
}

impl Outlook<'_> {
    /// The irregularity margin of each device. On an irregular kernel the next work-groups may
    /// cost v times what earlier ones did, and the run may end sooner than predicted. A device
    /// at least as fast as the mean device needs no margin: Sigmoid's own slope k_i handles
    /// irregularity there, as in the paper. A slower one risks idling the machine for an
    /// overrun while adding little, so its margin grows to the full v as its relative speed (N
    /// times its best speed over the sum of the devices' best speeds) falls to zero.
    fn margins(&self) -> Vec<f64> {
        let live = self.devices.iter().filter(|d| d.alive).count() as f64;
        let total: f64 = self.devices.iter().filter(|d| d.alive).map(|d| d.best).sum();
        self.devices
            .iter()
            .map(|d| self.variability.powf((1.0 - live * d.best / total).max(0.0)))
            .collect()
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
                let ready = if d == device { 0.0 } else { v.busy_for.unwrap_or(0.0) };
                v.alive.then_some(LinearTime { ready, fixed: 0.0, per_group: 1.0 / v.speed })
            })
            .collect();
        let Some(end) = common_finish(self.left, &plain) else {
            return Some(f64::INFINITY);
        };
        // The run may end `margin` times sooner and this package take `margin` times longer,
        // but never below the p·t seconds of imbalance the paper itself tolerates.
        let careful = me.speed / margins[device];
        let cap = ((end / margins[device]).max(self.tolerated) * careful).floor();
        if cap >= me.occupancy {
            return Some(cap);
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
    /// With a package of `size` for `device` leaving less than its occupancy bound behind:
    /// whether it should take everything instead. That crumb would cost a whole fill, so it
    /// pays to take it unless another device could run it in parallel and end sooner.
    pub(crate) fn takes_all(&self, device: usize, size: f64) -> bool {
        let me = self.devices[device];
        let rest = self.left - size;
        if rest <= 0.0 || rest >= me.occupancy {
            return false;
        }
        // A package below the occupancy bound takes as long as a full one.
        let time = |v: &DeviceView, groups: f64| groups.max(v.occupancy) / v.speed;
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
        DeviceView { alive: true, speed, best: speed, busy_for, occupancy }
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
    fn irregularity_shrinks_only_the_slow_devices_share() {
        // Speeds 100 and 900 (mean 500); idle; 1000 groups: E = 1 s. With v = 4 the slow
        // device (relative speed 0.2) gets a margin 4^0.8 on both E and its speed; the fast one
        // (relative 1.8) none.
        let devices = [view(100.0, None, 1.0), view(900.0, None, 1.0)];
        let o = Outlook { devices: &devices, left: 1000.0, variability: 4.0, tolerated: 0.0 };
        let m = 4f64.powf(0.8);
        assert_eq!(o.cap(0), Some((100.0 / (m * m)).floor()));
        assert_eq!(o.cap(1), Some(900.0));
        // The paper's p·t tolerance is a floor: 0.5 s of the slow device's careful speed.
        let o = Outlook { tolerated: 0.5, ..o };
        assert_eq!(o.cap(0), Some((0.5 * 100.0 / m).floor()));
    }
}
