//! The speculative back-up rule (as MapReduce does for stragglers), pure so that the engine and
//! the simulator decide alike: a device with nothing else to do runs a copy of a package another
//! device is still running when it would finish the copy well before that device is predicted
//! to finish the original. The first copy to complete wins.

use super::Package;

/// A copy must be predicted to end this many times sooner than the original has left, so that
/// noise in the measured speeds does not duplicate work for nothing.
pub const BACKUP_MARGIN: f64 = 1.5;
/// How often a device with nothing to do looks for a straggler, seconds.
pub const BACKUP_POLL_SECONDS: f64 = 5e-3;

/// A package running on another device, as the idle device sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Running {
    pub device: usize,
    pub package: Package,
    /// Seconds since it was handed out.
    pub elapsed: f64,
    /// That device's measured speed, work-groups per second, if it has one.
    pub speed: Option<f64>,
}

/// Seconds the original is predicted to need still: as planned at its device's speed; an
/// overdue or unmeasured one as long again as it has run.
fn remaining(r: &Running) -> f64 {
    let expected = r.speed.filter(|v| *v > 0.0).map_or(0.0, |v| r.package.len as f64 / v);
    if expected > r.elapsed {
        expected - r.elapsed
    } else {
        r.elapsed
    }
}

/// The package (and its device) that a device running `my_speed` work-groups per second should
/// back up, if any: the one whose copy would gain the most. `running` lists only packages not
/// yet backed up nor merged.
pub fn choose(my_speed: f64, running: impl IntoIterator<Item = Running>) -> Option<Running> {
    if !(my_speed.is_finite() && my_speed > 0.0) {
        return None;
    }
    running
        .into_iter()
        .filter_map(|r| {
            let (left, mine) = (remaining(&r), r.package.len as f64 / my_speed);
            (mine * BACKUP_MARGIN < left).then_some((left - mine, r))
        })
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, r)| r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn running(device: usize, len: u64, elapsed: f64, speed: Option<f64>) -> Running {
        Running { device, package: Package { offset: 0, len }, elapsed, speed }
    }

    #[test]
    fn a_slow_device_s_package_is_backed_up_by_a_fast_one() {
        // 16 groups at 16/s (1 s), 0.1 s in: 0.9 s left; a GPU at 1000/s needs 16 ms.
        let r = running(0, 16, 0.1, Some(16.0));
        assert_eq!(choose(1000.0, [r]), Some(r));
        // A device no faster than the original gains nothing.
        assert_eq!(choose(16.0, [r]), None);
        // Nor one that would need more than 1/BACKUP_MARGIN of the time left.
        assert_eq!(choose(16.0 / 0.9 * BACKUP_MARGIN * 0.99, [r]), None);
    }

    #[test]
    fn overdue_and_unmeasured_packages_count_as_long_again_and_the_largest_gain_wins() {
        // Planned 1 s, run 3 s: predicted to need 3 s more. Unmeasured, run 2 s: 2 s more.
        let overdue = running(0, 10, 3.0, Some(10.0));
        let unmeasured = running(1, 10, 2.0, None);
        assert_eq!(choose(100.0, [unmeasured, overdue]), Some(overdue));
        assert_eq!(choose(0.0, [overdue]), None);
    }
}
