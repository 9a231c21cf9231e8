//! The speculative back-up rule (as MapReduce does for stragglers), pure so that the engine and
//! the simulator decide alike: a device with nothing else to do runs a copy of a package another
//! device is still running when it would finish the copy well before that device is predicted
//! to finish the original. The first copy to complete wins.
//!
//! A copy that loses is not free: a GPU's kernel cannot be cancelled, so the copying device stays
//! busy after the run ends and the next call on it starts that much later. On an irregular
//! kernel a package in an expensive region looks overdue by the speeds of cheap ones: on two
//! H200s an idle GPU copied its twin's 0.69 s Mandelbrot package, and the next call waited
//! 0.43-0.72 s for it. Between devices of the same model, running at the same pace, a copy can
//! never end first, so it is taken to need at least the seconds the original has already run.
//! Paces measured over the run do not tell a slowed twin from one in a dearer region (on two
//! H100s RAP's rising cost made a healthy twin look 0.43 times as fast, and its copy lost again).
//! Between different devices the measured speeds alone decide.

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
    /// That device is the same model as the idle one (same name and nominal figures).
    pub alike: bool,
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

/// Seconds the copy would take a device of `my_speed`: the package at that speed, and for a
/// device of the original's model never less than the seconds the original has run.
fn copy_seconds(my_speed: f64, r: &Running) -> f64 {
    let at_speed = r.package.len as f64 / my_speed;
    if r.alike {
        at_speed.max(r.elapsed)
    } else {
        at_speed
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
            let (left, mine) = (remaining(&r), copy_seconds(my_speed, &r));
            (mine * BACKUP_MARGIN < left).then_some((left - mine, r))
        })
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, r)| r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn running(device: usize, len: u64, elapsed: f64, speed: Option<f64>) -> Running {
        Running { device, package: Package { offset: 0, len }, elapsed, speed, alike: false }
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

    #[test]
    fn an_expensive_package_of_a_device_of_the_same_model_is_not_copied() {
        // Mandelbrot on two H200s (measured): device 0 planned 43 560 groups of the band at the
        // 152 000/s of a cheap package; 0.63 s in, device 1 is idle, its last (cheap) package
        // run at 5.1 million/s. By speeds alone the copy takes 9 ms of the 0.63 s left.
        let band = Running {
            device: 0,
            package: Package { offset: 101_376, len: 43_560 },
            elapsed: 0.63,
            speed: Some(152_000.0),
            alike: false,
        };
        assert_eq!(choose(5.1e6, [band]), Some(band), "devices of different models");
        // The same model: the copy needs the 0.63 s the original has run, at least.
        assert_eq!(choose(5.1e6, [Running { alike: true, ..band }]), None);
        // A package of the same model barely started, whose device measured far slower than
        // the idle one, is still copied: 0.01 s in, 1 s left by its speed, 0.1 s for the copy.
        let early = Running { elapsed: 0.01, speed: Some(43_560.0 / 1.01), alike: true, ..band };
        assert_eq!(choose(435_600.0, [early]), Some(early));
    }
}
