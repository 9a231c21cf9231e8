//! The speculative back-up rule (as MapReduce does for stragglers), pure so that the engine and
//! the simulator decide alike: a device with nothing else to do runs a copy of a package another
//! device is still running when it would finish the copy well before that device is predicted
//! to finish the original. The first copy to complete wins.
//!
//! A copy that loses is not free: a GPU's kernel cannot be cancelled, so the copying device stays
//! busy after the run ends and the next call on it starts that much later. On an irregular
//! kernel (Mandelbrot's band) a package in an expensive region looks overdue by the speeds of
//! cheap ones; on two H200s an idle GPU then copied its twin's 0.69 s package, and the next call
//! waited 0.43-0.72 s for it. Between devices of the same model a copy can only win if the
//! original's device is slower than the idle one, so there the copy is taken to need at least
//! the `elapsed` seconds the original has run (fewer only where the original's device has
//! measurably kept a slower pace over the run). Between different devices the measured speeds
//! alone decide: their paces differ by region on such kernels (a CPU's one package on cheap
//! pixels ran faster than a GPU's block), so they cannot bound a copy.

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
    /// That device's pace over the run so far: work-groups kept per second of their spans
    /// (hand-out to completion), if it kept any.
    pub pace: Option<f64>,
    /// That device is the same model as the idle one (same name and nominal figures).
    pub alike: bool,
}

/// The idle device that would run the copy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Idle {
    /// Work-groups per second of its last kept package.
    pub speed: f64,
    /// Its pace over the run so far, as [`Running::pace`].
    pub pace: Option<f64>,
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

/// Seconds the copy would take `me`: the package at its speed, and between devices alike never
/// less than the `elapsed` seconds the original has run, scaled down only where the original's
/// device kept a slower pace over the run than `me`.
fn copy_seconds(me: &Idle, r: &Running) -> f64 {
    let at_speed = r.package.len as f64 / me.speed;
    if !r.alike {
        return at_speed;
    }
    let ratio = match (r.pace, me.pace) {
        (Some(theirs), Some(mine)) if theirs > 0.0 && mine > 0.0 => (theirs / mine).min(1.0),
        _ => 1.0,
    };
    at_speed.max(r.elapsed * ratio)
}

/// The package (and its device) that the idle device `me` should back up, if any: the one whose
/// copy would gain the most. `running` lists only packages not yet backed up nor merged.
pub fn choose(me: Idle, running: impl IntoIterator<Item = Running>) -> Option<Running> {
    if !(me.speed.is_finite() && me.speed > 0.0) {
        return None;
    }
    running
        .into_iter()
        .filter_map(|r| {
            let (left, mine) = (remaining(&r), copy_seconds(&me, &r));
            (mine * BACKUP_MARGIN < left).then_some((left - mine, r))
        })
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, r)| r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn running(device: usize, len: u64, elapsed: f64, speed: Option<f64>) -> Running {
        let package = Package { offset: 0, len };
        Running { device, package, elapsed, speed, pace: None, alike: false }
    }

    fn idle(speed: f64) -> Idle {
        Idle { speed, pace: None }
    }

    #[test]
    fn a_slow_device_s_package_is_backed_up_by_a_fast_one() {
        // 16 groups at 16/s (1 s), 0.1 s in: 0.9 s left; a GPU at 1000/s needs 16 ms.
        let r = running(0, 16, 0.1, Some(16.0));
        assert_eq!(choose(idle(1000.0), [r]), Some(r));
        // A device no faster than the original gains nothing.
        assert_eq!(choose(idle(16.0), [r]), None);
        // Nor one that would need more than 1/BACKUP_MARGIN of the time left.
        assert_eq!(choose(idle(16.0 / 0.9 * BACKUP_MARGIN * 0.99), [r]), None);
        // Between different devices the paces do not enter: a CPU's pace measured on cheap
        // work-groups (here above the GPU's) does not stop the GPU's copy.
        let paced = Running { pace: Some(2000.0), ..r };
        assert_eq!(choose(Idle { speed: 1000.0, pace: Some(1000.0) }, [paced]), Some(paced));
    }

    #[test]
    fn overdue_and_unmeasured_packages_count_as_long_again_and_the_largest_gain_wins() {
        // Planned 1 s, run 3 s: predicted to need 3 s more. Unmeasured, run 2 s: 2 s more.
        let overdue = running(0, 10, 3.0, Some(10.0));
        let unmeasured = running(1, 10, 2.0, None);
        assert_eq!(choose(idle(100.0), [unmeasured, overdue]), Some(overdue));
        assert_eq!(choose(idle(0.0), [overdue]), None);
    }

    #[test]
    fn an_expensive_package_of_a_twin_is_not_copied() {
        // Mandelbrot on two H200s (measured): device 0 planned 43 560 groups of the band at the
        // 152 000/s of a cheap package; 0.63 s in, device 1 is idle, its last (cheap) package
        // run at 5.1 million/s. By speeds alone the copy takes 9 ms of the 0.63 s left.
        let band = Running {
            device: 0,
            package: Package { offset: 101_376, len: 43_560 },
            elapsed: 0.63,
            speed: Some(152_000.0),
            pace: None,
            alike: false,
        };
        let fast_tail = idle(5.1e6);
        assert_eq!(choose(fast_tail, [band]), Some(band), "devices of different models");
        // The same model, no pace yet (one block each, a relaunch): the copy needs 0.63 s.
        let twin = Running { alike: true, ..band };
        assert_eq!(choose(fast_tail, [twin]), None);
        // Paces over the run of 316 000/s and 200 000/s: the original is no slower.
        let paced = Running { pace: Some(316_000.0), ..twin };
        assert_eq!(choose(Idle { pace: Some(200_000.0), ..fast_tail }, [paced]), None);
    }

    #[test]
    fn a_twin_that_kept_a_slower_pace_is_still_backed_up() {
        // Held up after each package: 100 groups/s over the run against the idle one's 10 000,
        // so 2 s of its work is 20 ms of the idle device's.
        let held = Running {
            device: 0,
            package: Package { offset: 0, len: 100 },
            elapsed: 2.0,
            speed: Some(10_000.0),
            pace: Some(100.0),
            alike: true,
        };
        assert_eq!(choose(Idle { speed: 10_000.0, pace: Some(10_000.0) }, [held]), Some(held));
        // At two thirds of the idle one's pace or more, no copy can end well before it.
        let close = Running { pace: Some(6_700.0), ..held };
        assert_eq!(choose(Idle { speed: 10_000.0, pace: Some(10_000.0) }, [close]), None);
    }
}
