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

/// `picks` (sorted) completed so that every `tile` of a row-major `dims` grid (a work-group's
/// elements) holds at least one pick: a random element of each tile that held none. A package
/// as small as one work-group then cannot fall between the samples.
pub fn cover_tiles(
    mut picks: Vec<usize>,
    dims: [usize; 2],
    tile: [usize; 2],
    seed: u64,
) -> Vec<usize> {
    let ([w, h], [tw, th]) = (dims, [tile[0].max(1), tile[1].max(1)]);
    if tw * th == 1 {
        return (0..w * h).collect();
    }
    let tiles_x = w.div_ceil(tw);
    let mut seen = vec![false; tiles_x * h.div_ceil(th)];
    for &p in &picks {
        seen[(p / w / th) * tiles_x + (p % w) / tw] = true;
    }
    let mut rng = super::rng::Rng::new(seed);
    for (t, _) in seen.iter().enumerate().filter(|(_, s)| !**s) {
        let (x0, y0) = ((t % tiles_x) * tw, (t / tiles_x) * th);
        let x = x0 + rng.below((tw.min(w - x0)) as u64) as usize;
        let y = y0 + rng.below((th.min(h - y0)) as u64) as usize;
        picks.push(y * w + x);
    }
    picks.sort_unstable();
    picks
}

/// One element drawn at random from every group of `group` consecutive elements of `total` (the
/// last group may be shorter), in order: a package as small as one work-group always has an
/// element compared. A new `seed` per run keeps a wrong group that happens to agree at one
/// element from passing run after run.
pub fn one_per_group(total: usize, group: usize, seed: u64) -> Vec<usize> {
    let group = group.max(1);
    let mut rng = super::rng::Rng::new(seed);
    (0..total)
        .step_by(group)
        .map(|start| start + rng.below(group.min(total - start) as u64) as usize)
        .collect()
}

/// Pixels whose channels differ by more than `max_channel_diff`.
pub fn pixel_differs(a: [u8; 4], b: [u8; 4], max_channel_diff: u8) -> bool {
    a.iter().zip(b.iter()).any(|(x, y)| x.abs_diff(*y) > max_channel_diff)
}

/// Image check for kernels whose pixels may legitimately differ between devices where a float
/// ulp changes the outcome (a chaotic orbit, a grazing ray). `out[picks[k]]` is compared with
/// `reference[k]`; a mismatch counts as such an edge only when `excused(p)` says so (an ulp-sized
/// change of the input changes the reference's own pixel, and other pixels of its work-group
/// agree), and at most `max_fraction` of the picks may be excused. So one wrong work-group fails.
pub fn pixels_match_near_edges(
    name: &str,
    out: &[[u8; 4]],
    (picks, reference): (&[usize], &[[u8; 4]]),
    max_channel_diff: u8,
    max_fraction: f64,
    excused: impl Fn(usize) -> bool + Sync,
) -> Verdict {
    let mismatched: Vec<usize> = picks
        .iter()
        .zip(reference)
        .filter(|(&p, r)| pixel_differs(out[p], **r, max_channel_diff))
        .map(|(&p, _)| p)
        .collect();
    let excuses = par_map(&mismatched, &excused);
    let count = excuses.iter().filter(|e| **e).count();
    let limit = (max_fraction * picks.len() as f64).floor() as usize;
    let first =
        mismatched.iter().zip(&excuses).find(|(_, e)| !**e).map_or(String::new(), |(p, _)| {
            let k = picks.iter().position(|q| q == p).unwrap_or(0);
            format!(", first not excused #{p}: out {:?} ref {:?}", out[*p], reference[k])
        });
    Verdict::new(
        count == mismatched.len() && count <= limit && !picks.is_empty(),
        picks.len(),
        format!(
            "{name}: {} of {} compared pixel(s) differ by more than {max_channel_diff}, {count} \
             on an edge an ulp moves (limit {limit}){first}",
            mismatched.len(),
            picks.len()
        ),
    )
}

/// `count` pixels of `p`'s work-group (`group` consecutive elements of `total`), drawn with
/// `seed`: the pixels that must agree before a mismatch at `p` is excused as an edge.
pub fn group_mates(p: usize, group: usize, total: usize, count: usize, seed: u64) -> Vec<usize> {
    let start = p / group * group;
    let len = group.min(total - start) as u64;
    let mut rng = super::rng::Rng::new(seed ^ p as u64);
    (0..count).map(|_| start + rng.below(len) as usize).filter(|&q| q != p).collect()
}

/// `x` moved by `ulps` representable floats (down for negative).
pub fn nudge(x: f32, ulps: i32) -> f32 {
    let step = if ulps < 0 { f32::next_down } else { f32::next_up };
    (0..ulps.unsigned_abs()).fold(x, |x, _| step(x))
}

/// Whether a pixel lies where an ulp decides: `at([du, dv])` is its reference colour with its
/// two inputs moved by `du` and `dv` ulps, and moving either by `±steps[0]` or `±steps[1]`
/// changes it beyond `max_channel_diff`. Devices that round or contract differently can
/// disagree there and nowhere else.
pub fn decided_by_an_ulp(
    at: impl Fn([i32; 2]) -> [u8; 4],
    steps: [i32; 2],
    max_channel_diff: u8,
) -> bool {
    let here = at([0, 0]);
    let [a, b] = steps;
    [a, -a, b, -b].iter().any(|&u| {
        pixel_differs(at([u, 0]), here, max_channel_diff)
            || pixel_differs(at([0, u]), here, max_channel_diff)
    })
}

/// The per-group image check of a sample whose pixels may differ between devices where an ulp
/// decides: `image` must hold `len` pixels; those at `picks` are compared with `reference`
/// ([`pixels_match_near_edges`]), a mismatch excused only where `on_edge` and 8 other pixels of
/// its work-group of `group` (drawn with `seed`) match or are edges too; and every pixel must
/// have been written (alpha 0 is the fill).
pub struct ImageCheck<'a, R, E> {
    pub image: &'a [[u8; 4]],
    pub len: usize,
    pub picks: &'a [usize],
    pub group: usize,
    pub seed: u64,
    pub max_channel_diff: u8,
    pub max_fraction: f64,
    pub reference: R,
    pub on_edge: E,
}

impl<R, E> ImageCheck<'_, R, E>
where
    R: Fn(usize) -> [u8; 4] + Sync,
    E: Fn(usize) -> bool + Sync,
{
    pub fn verdict(&self) -> Verdict {
        let (image, n) = (self.image, self.len);
        if image.len() != n {
            return Verdict::new(false, n, format!("{} of {n} pixels", image.len()));
        }
        let expected = par_map(self.picks, &self.reference);
        let agrees = |q: usize| {
            let want = (self.reference)(q);
            !pixel_differs(image[q], want, self.max_channel_diff) || (self.on_edge)(q)
        };
        let excused = |p: usize| {
            (self.on_edge)(p) && group_mates(p, self.group, n, 8, self.seed).into_iter().all(agrees)
        };
        let (diff, fraction) = (self.max_channel_diff, self.max_fraction);
        pixels_match_near_edges("pixels", image, (self.picks, &expected), diff, fraction, excused)
            .and(all_written("alpha", image, |p| p[3] == 0))
    }
}

/// Element-wise closeness over `n` elements computed on all cores without holding them: `f(k)`
/// gives output, reference and tolerance. For checks cheap enough to cover every element.
pub fn par_all_close(name: &str, n: usize, f: impl Fn(usize) -> (f64, f64, f64) + Sync) -> Verdict {
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
    let chunk = n.div_ceil(threads).max(1);
    let starts: Vec<usize> = (0..n).step_by(chunk).collect();
    // Per chunk: the count out of tolerance and the worst (index, excess, out, ref).
    let parts = par_map(&starts, |start| {
        let mut bad = 0usize;
        let mut worst = (start, f64::NEG_INFINITY, 0.0, 0.0);
        for k in start..(start + chunk).min(n) {
            let (o, r, tol) = f(k);
            let excess = (o - r).abs() / tol;
            let out = excess.is_nan() || excess > 1.0;
            bad += usize::from(out);
            if excess.is_nan() && !worst.1.is_nan() || excess > worst.1 {
                worst = (k, excess, o, r);
            }
        }
        (bad, worst)
    });
    let bad: usize = parts.iter().map(|p| p.0).sum();
    let worst = parts.iter().map(|p| p.1).fold((0, f64::NEG_INFINITY, 0.0, 0.0), |a, b| {
        if b.1.is_nan() && !a.1.is_nan() || b.1 > a.1 {
            b
        } else {
            a
        }
    });
    let (k, e, o, r) = worst;
    let detail = format!(
        "{name} (every element): {bad} out of tolerance, worst #{k} out {o} ref {r} ({e:.2} x tolerance)"
    );
    Verdict::new(bad == 0 && n > 0, n, detail)
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

/// Every element of `out` written: none still holds the value the sample filled the output with
/// before the run (`unwritten`). Cheap enough for every element at any size, so a package left
/// unmerged fails even where the reference is only sampled.
pub fn all_written<T: Sync>(
    name: &str,
    out: &[T],
    unwritten: impl Fn(&T) -> bool + Sync,
) -> Verdict {
    let starts: Vec<usize> = (0..out.len()).step_by(1 << 20).collect();
    let counts = par_map(&starts, |s| {
        out[s..(s + (1 << 20)).min(out.len())].iter().filter(|v| unwritten(v)).count()
    });
    let left: usize = counts.iter().sum();
    let first = out.iter().position(&unwritten).map_or(String::new(), |i| format!(", first #{i}"));
    let detail = format!("{name}: {left} of {} element(s) never written{first}", out.len());
    Verdict::new(left == 0 && !out.is_empty(), out.len(), detail)
}

/// Exact equality of integer outputs; reports the first difference.
pub fn all_equal<T: PartialEq + fmt::Debug>(name: &str, out: &[T], reference: &[T]) -> Verdict {
    let bad = out.iter().zip(reference).filter(|(o, r)| o != r).count();
    let first = out.iter().zip(reference).position(|(o, r)| o != r);
    let detail = match first {
        Some(k) => {
            format!("{name}: {bad} differ, first #{k}: out {:?} ref {:?}", out[k], reference[k])
        }
        None => format!("{name}: all {} compared equal", out.len()),
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
    fn every_tile_gets_a_pick() {
        let (w, h, tile) = (1000, 64, [16, 8]);
        let picks = cover_tiles(sample_indices(w * h, 50, 2), [w, h], tile, 9);
        assert!(picks.windows(2).all(|p| p[0] < p[1]));
        for ty in 0..h / 8 {
            for tx in 0..w.div_ceil(16) {
                let inside = |p: &&usize| (*p / w) / 8 == ty && (*p % w) / 16 == tx;
                assert!(picks.iter().any(|p| inside(&p)), "tile ({tx}, {ty})");
            }
        }
        assert_eq!(cover_tiles(vec![3], [10, 1], [1, 1], 0), (0..10).collect::<Vec<_>>());
        // Groups already sampled get nothing more.
        assert_eq!(cover_tiles((0..100).collect(), [100, 1], [10, 1], 0).len(), 100);
    }

    #[test]
    fn the_parallel_check_finds_one_bad_element() {
        let out: Vec<f64> = (0..100_000).map(f64::from).collect();
        let f = |o: &[f64], k: usize| (o[k], k as f64, 1e-9);
        assert!(par_all_close("x", out.len(), |k| f(&out, k)).correct);
        for bad in [0.5, f64::NAN, f64::INFINITY] {
            let mut o = out.clone();
            o[77_777] = bad;
            let v = par_all_close("x", o.len(), |k| f(&o, k));
            assert!(!v.correct && v.detail.contains("#77777"), "{v}");
        }
    }

    #[test]
    fn an_element_never_written_fails_the_scan() {
        let mut out = vec![1.0f32; 3 << 20];
        assert!(all_written("x", &out, |v| v.is_nan()).correct);
        out[(2 << 20) + 5] = f32::NAN;
        let v = all_written("x", &out, |v| v.is_nan());
        assert!(!v.correct && v.detail.contains("1 of") && v.detail.contains("#2097157"), "{v}");
        assert!(!all_written("x", &[] as &[f32], |v| v.is_nan()).correct);
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
