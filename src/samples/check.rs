//! Tolerance rules of the samples (the AMD APP SDK's where one exists) and the helpers that
//! compare a device's output with a CPU reference. A paper-sized problem is checked on a
//! deterministic sample of its work-items, so that the reference takes seconds, not hours.

use std::fmt;

/// The outcome of comparing one run's output with the CPU reference.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Verdict {
    pub correct: bool,
    /// How many output elements were compared.
    pub checked: usize,
    /// The figures the rule was applied to, for people.
    pub detail: String,
}

impl Verdict {
    pub fn new(correct: bool, checked: usize, detail: impl Into<String>) -> Self {
        Verdict { correct, checked, detail: detail.into() }
    }

    /// Both verdicts must hold.
    pub fn and(self, other: Verdict) -> Verdict {
        Verdict {
            correct: self.correct && other.correct,
            checked: self.checked.max(other.checked),
            detail: format!("{}; {}", self.detail, other.detail),
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let word = if self.correct { "correct" } else { "WRONG" };
        write!(f, "{word} ({} checked: {})", self.checked, self.detail)
    }
}

/// The work-items to check: all of them when there are at most `budget`, otherwise `budget`
/// of them spread evenly with a random jitter inside each stride, so that every region of the
/// output (and so every package) is visited. Sorted and distinct.
pub fn sample_indices(total: usize, budget: usize, seed: u64) -> Vec<usize> {
    if total <= budget {
        return (0..total).collect();
    }
    let mut rng = super::rng::Rng::new(seed);
    let stride = total as f64 / budget as f64;
    (0..budget)
        .map(|k| {
            let lo = (k as f64 * stride) as usize;
            let hi = (((k + 1) as f64 * stride) as usize).min(total).max(lo + 1);
            lo + rng.below((hi - lo) as u64) as usize
        })
        .collect()
}

/// `f` applied to every index, computed on all cores (CPU references are the slow part of a
/// check).
pub fn par_map<T: Send>(indices: &[usize], f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunk = indices.len().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        let handles: Vec<_> = indices
            .chunks(chunk)
            .map(|part| {
                let f = &f;
                scope.spawn(move || part.iter().map(|&i| f(i)).collect::<Vec<T>>())
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap_or_default()).collect()
    })
}

/// The AMD APP SDK's `compare`: relative L2 norm ‖out − ref‖ / ‖ref‖ below `limit`. Like the
/// SDK, a reference with ‖ref‖² < 1e-7 fails (the ratio would mean nothing).
pub fn relative_l2(name: &str, out: &[f64], reference: &[f64], limit: f64) -> Verdict {
    let diff: f64 = out.iter().zip(reference).map(|(o, r)| (o - r) * (o - r)).sum();
    let norm: f64 = reference.iter().map(|r| r * r).sum();
    let error = (diff / norm).sqrt();
    let correct =
        norm >= 1e-7 && error.is_finite() && error < limit && out.len() == reference.len();
    Verdict::new(
        correct,
        out.len(),
        format!("{name} relative L2 error {error:.2e} (limit {limit:.0e})"),
    )
}

/// Element-wise closeness: every `|out[k] − ref[k]| ≤ tolerance(k, ref[k])`. Reports the worst
/// element.
pub fn all_close(
    name: &str,
    out: &[f64],
    reference: &[f64],
    tolerance: impl Fn(usize, f64) -> f64,
) -> Verdict {
    let mut worst: Option<(usize, f64)> = None;
    let mut bad = 0usize;
    for (k, (o, r)) in out.iter().zip(reference).enumerate() {
        let excess = (o - r).abs() / tolerance(k, *r);
        // NaN counts as out of tolerance.
        if excess.is_nan() || excess > 1.0 {
            bad += 1;
        }
        if worst.is_none_or(|(_, w)| excess.is_nan() || excess > w) {
            worst = Some((k, excess));
        }
    }
    let detail = match worst {
        Some((k, e)) => format!(
            "{name}: {bad} element(s) out of tolerance, worst #{k} out {} ref {} ({e:.2} x tolerance)",
            out[k], reference[k]
        ),
        None => format!("{name}: nothing to compare"),
    };
    Verdict::new(bad == 0 && out.len() == reference.len() && !out.is_empty(), out.len(), detail)
}

/// Exact equality of integer outputs; reports the first difference.
pub fn all_equal<T: PartialEq + fmt::Debug>(name: &str, out: &[T], reference: &[T]) -> Verdict {
    let bad = out.iter().zip(reference).filter(|(o, r)| o != r).count();
    let first = out.iter().zip(reference).position(|(o, r)| o != r);
    let detail = match first {
        Some(k) => {
            format!("{name}: {bad} differ, first #{k}: out {:?} ref {:?}", out[k], reference[k])
        }
        None => format!("{name}: all equal"),
    };
    Verdict::new(bad == 0 && out.len() == reference.len() && !out.is_empty(), out.len(), detail)
}

/// The AMD SDK Mandelbrot rule, also used for the ray tracer: a pixel mismatches when any
/// channel differs by more than `max_channel_diff`; the check passes when mismatching pixels
/// are fewer than `max_fraction` of those compared.
pub fn pixels_match(
    name: &str,
    out: &[[u8; 4]],
    reference: &[[u8; 4]],
    max_channel_diff: u8,
    max_fraction: f64,
) -> Verdict {
    let bad = out
        .iter()
        .zip(reference)
        .filter(|(o, r)| o.iter().zip(r.iter()).any(|(a, b)| a.abs_diff(*b) > max_channel_diff))
        .count();
    let fraction = bad as f64 / out.len().max(1) as f64;
    Verdict::new(
        fraction < max_fraction && out.len() == reference.len() && !out.is_empty(),
        out.len(),
        format!(
            "{name}: {bad} pixel(s) ({:.3} %) differ by more than {max_channel_diff} (limit {:.2} %)",
            fraction * 100.0,
            max_fraction * 100.0
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sampled_indices_cover_the_range_in_order() {
        assert_eq!(sample_indices(5, 10, 1), vec![0, 1, 2, 3, 4]);
        let s = sample_indices(1_000_000, 1000, 3);
        assert_eq!(s.len(), 1000);
        assert!(s.windows(2).all(|w| w[0] < w[1]));
        assert!(s[0] < 1000 && *s.last().unwrap() >= 999_000);
    }

    #[test]
    fn par_map_keeps_order() {
        let idx: Vec<usize> = (0..1000).collect();
        assert_eq!(par_map(&idx, |i| i * 2), idx.iter().map(|i| i * 2).collect::<Vec<_>>());
    }

    #[test]
    fn rules_accept_close_and_reject_far() {
        assert!(relative_l2("x", &[1.0, 2.0], &[1.0, 2.0 + 1e-6], 1e-5).correct);
        assert!(!relative_l2("x", &[1.0, 2.5], &[1.0, 2.0], 1e-3).correct);
        assert!(!relative_l2("x", &[0.0], &[0.0], 1e-3).correct);
        assert!(
            all_close("x", &[1.0, 100.0], &[1.0005, 100.05], |_, r| 1e-3 * r.abs().max(1.0))
                .correct
        );
        assert!(!all_close("x", &[1.0, f64::NAN], &[1.0, 1.0], |_, _| 1.0).correct);
        assert!(all_equal("x", &[1, 2], &[1, 2]).correct);
        assert!(!all_equal("x", &[1, 3], &[1, 2]).correct);
        let a = vec![[10u8, 10, 10, 255]; 1000];
        let mut b = a.clone();
        b[0] = [13, 10, 10, 255];
        assert!(pixels_match("x", &a, &b, 2, 0.002).correct);
        b[1] = [13, 10, 10, 255];
        b[2] = [13, 10, 10, 255];
        assert!(!pixels_match("x", &a, &b, 2, 0.002).correct);
    }
}
