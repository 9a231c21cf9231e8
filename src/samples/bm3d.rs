//! BM3D (the papers' "BM3D", one filter of the denoiser; ours, after the grouping step of Dabov
//! et al.): block matching around every pixel, then the mean of the matched blocks' centres.
//! Integer arithmetic throughout, so the check is exact. Irregular: flat regions keep many
//! candidates (full cost), textured ones drop them early.

use hetdsl::{Launch, Program, Runtime};

use super::check::{all_equal, all_written, par_map, Verdict};
use super::rng::Rng;
use super::{group_picks, run_seed, Sample, Size};

pub const LWS: usize = 64;
/// Must match BLOCK and MAX_MATCHES in kernels/bm3d.cl.
pub const BLOCK: usize = 8;
pub const MAX_MATCHES: usize = 16;

/// The image and the matching parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    pub rows: usize,
    pub cols: usize,
    pub radius: i32,
    pub threshold: i32,
    pub clean: Vec<u8>,
    pub noisy: Vec<u8>,
}

/// A synthetic scene: the left part flat tiles and gradients, the right part fine texture, and
/// Gaussian-like noise of standard deviation `sigma` everywhere.
pub fn make_problem(rows: usize, cols: usize, radius: i32, sigma: f64, seed: u64) -> Problem {
    let mut rng = Rng::new(seed);
    let clean: Vec<u8> = (0..rows * cols)
        .map(|p| {
            let (y, x) = (p / cols, p % cols);
            let v = if x < cols * 3 / 5 {
                // Flat tiles of 24 px with a gentle gradient.
                let tile = ((y / 24) * 7 + (x / 24) * 13) % 5;
                60 + 30 * tile + y % 24
            } else {
                // Texture: a fine checker with random grey levels.
                if (x / 2 + y / 2) % 2 == 0 {
                    40 + rng.below(60) as usize
                } else {
                    170 + rng.below(60) as usize
                }
            };
            v.min(255) as u8
        })
        .collect();
    // Sum of 4 uniforms: approximately normal, variance 4/12 per unit of scale.
    let scale = sigma / (4.0f64 / 12.0).sqrt();
    let noisy = clean
        .iter()
        .map(|&c| {
            let n: f64 = (0..4).map(|_| rng.unit_f32() as f64 - 0.5).sum::<f64>() * scale;
            (c as f64 + n).round().clamp(0.0, 255.0) as u8
        })
        .collect();
    // Two blocks of one flat region differ by noise alone: expected SSD 2·σ²·BLOCK²; accept up
    // to 1.5 times that.
    let threshold = (1.5 * 2.0 * sigma * sigma * (BLOCK * BLOCK) as f64) as i32;
    Problem { rows, cols, radius, threshold, clean, noisy }
}

fn at(p: &Problem, y: isize, x: isize) -> i32 {
    p.noisy[y.clamp(0, p.rows as isize - 1) as usize * p.cols
        + x.clamp(0, p.cols as isize - 1) as usize] as i32
}

/// CPU reference for one pixel, from the definition: the SSD of every candidate, keep those
/// within the threshold, a stable sort by SSD (ties in scan order), the first MAX_MATCHES, and
/// the rounded mean of their centres. The search window (edges clamped) is copied out first so
/// that each SSD runs over contiguous rows: fast enough for a pixel of every work-group.
pub fn reference_pixel(p: &Problem, row: usize, col: usize) -> u8 {
    let (r, half) = (p.radius as isize, (BLOCK / 2) as isize);
    let side = 2 * r as usize + BLOCK;
    let (top, left) = (row as isize - r - half, col as isize - r - half);
    // i16 rows: the squared differences then map onto multiply-add instructions.
    let window: Vec<i16> = (0..side * side)
        .map(|k| at(p, top + (k / side) as isize, left + (k % side) as isize) as i16)
        .collect();
    let row_at = |y: usize, x: usize| -> [i16; BLOCK] {
        window[y * side + x..y * side + x + BLOCK].try_into().unwrap_or([0; BLOCK])
    };
    let centre = r as usize;
    let block: [[i16; BLOCK]; BLOCK] = std::array::from_fn(|b| row_at(centre + b, centre));
    // (SSD, scan position, centre value): ordering by the first two is the stable sort by SSD.
    let mut candidates: Vec<(i32, usize, i32)> = Vec::new();
    for y in 0..=2 * centre {
        for x in 0..=2 * centre {
            let mut ssd = 0;
            for (b, c) in block.iter().enumerate() {
                let a = row_at(y + b, x);
                ssd += (0..BLOCK)
                    .map(|i| i32::from(a[i] - c[i]) * i32::from(a[i] - c[i]))
                    .sum::<i32>();
                // Squares only add: past the threshold the candidate is out whatever follows.
                if ssd > p.threshold {
                    break;
                }
            }
            if ssd <= p.threshold {
                let centre_value =
                    i32::from(window[(y + half as usize) * side + x + half as usize]);
                candidates.push((ssd, candidates.len(), centre_value));
            }
        }
    }
    if candidates.len() > MAX_MATCHES {
        candidates.select_nth_unstable(MAX_MATCHES - 1);
        candidates.truncate(MAX_MATCHES);
    }
    let kept = candidates.len() as i32;
    let sum: i32 = candidates.iter().map(|c| c.2).sum();
    ((sum + kept / 2) / kept) as u8
}

/// The filtered pixels at `picks` (sorted) against the reference, exactly (integers: SSDs,
/// sums, integer division), and every pixel written. With one pick in every work-group, drawn
/// afresh per run, a wrong group fails as soon as its values differ at the pixel drawn.
pub fn check(p: &Problem, filtered: &[u8], picks: &[usize]) -> Verdict {
    let expected = par_map(picks, |q| reference_pixel(p, q / p.cols, q % p.cols));
    let got: Vec<u8> = picks.iter().map(|&q| filtered[q]).collect();
    let n = p.rows * p.cols;
    let whole = Verdict::new(filtered.len() == n, n, format!("{} of {n} pixels", filtered.len()));
    // No noisy pixel is near 0, so neither is a mean of them: 0 marks an unwritten pixel.
    all_equal("filtered pixels", &got, &expected).and(whole).and(all_written(
        "filtered pixels",
        filtered,
        |&v| v == 0,
    ))
}

/// Peak signal-to-noise ratio of `image` against `clean`, in dB.
pub fn psnr(image: &[u8], clean: &[u8]) -> f64 {
    let mse = image.iter().zip(clean).map(|(a, b)| (*a as f64 - *b as f64).powi(2)).sum::<f64>()
        / clean.len() as f64;
    10.0 * (255.0 * 255.0 / mse).log10()
}

hetdsl::kernel! {
    /// One pixel per work-item; the search window needs a halo of rows, so the image is whole.
    #[kernel(file = "kernels/bm3d.cl", local = 64)]
    pub struct Bm3dKernel {
        fn block_match_filter(
            #[input(whole)] noisy: &[u8],
            rows: i32,
            cols: i32,
            radius: i32,
            threshold: i32,
            #[output(1:1)] filtered: &mut [u8],
        );
    }
}

pub struct Bm3d {
    size: Size,
    kernel: Bm3dKernel,
    pub problem: Problem,
    filtered: Vec<u8>,
    /// Checks so far: each draws its own pixels.
    checks: u64,
}

impl Bm3d {
    pub fn new(size: Size, runtime: &Runtime) -> hetdsl::Result<Self> {
        let problem = match size {
            Size::Small => make_problem(48, 64, 4, 12.0, 0xB3D),
            Size::Paper => make_problem(8192, 8192, 19, 12.0, 0xB3D),
        };
        let filtered = vec![0; problem.rows * problem.cols];
        let kernel = Bm3dKernel::new(runtime)?;
        Ok(Bm3d { size, kernel, problem, filtered, checks: 0 })
    }

    /// The denoised image of the last run.
    pub fn filtered(&self) -> &[u8] {
        &self.filtered
    }
}

impl Sample for Bm3d {
    fn name(&self) -> &str {
        "bm3d"
    }

    fn describe(&self) -> String {
        let p = &self.problem;
        format!(
            "{}x{} px, {BLOCK}x{BLOCK} blocks, search ±{}, up to {MAX_MATCHES} matches, lws {LWS}",
            p.cols, p.rows, p.radius
        )
    }

    fn program(&self) -> &Program {
        self.kernel.program()
    }

    fn launch(&mut self) -> hetdsl::Result<Launch<'_>> {
        // No noisy pixel is near 0, so neither is a mean of them: 0 marks an unwritten pixel.
        self.filtered.fill(0);
        let p = &self.problem;
        self.kernel.launch(
            p.rows * p.cols,
            &p.noisy,
            p.rows as i32,
            p.cols as i32,
            p.radius,
            p.threshold,
            &mut self.filtered,
        )
    }

    fn verify(&mut self) -> Verdict {
        self.checks += 1;
        let n = self.problem.rows * self.problem.cols;
        let picks = group_picks(n, self.size, LWS, run_seed(18, self.checks));
        check(&self.problem, &self.filtered, &picks)
    }

    fn image(&self) -> Option<(usize, usize, Vec<[u8; 4]>)> {
        let grey = self.filtered.iter().map(|&v| [v, v, v, 255]).collect();
        Some((self.problem.cols, self.problem.rows, grey))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_filter_denoises() {
        let p = make_problem(32, 48, 4, 12.0, 5);
        let filtered: Vec<u8> =
            (0..p.rows * p.cols).map(|q| reference_pixel(&p, q / p.cols, q % p.cols)).collect();
        // On the flat part the mean of matched blocks must beat the noisy image clearly.
        let flat = |img: &[u8]| -> Vec<u8> {
            (0..p.rows * p.cols).filter(|q| q % p.cols < p.cols / 2).map(|q| img[q]).collect()
        };
        let clean = flat(&p.clean);
        let (before, after) = (psnr(&flat(&p.noisy), &clean), psnr(&flat(&filtered), &clean));
        assert!(after > before + 3.0, "PSNR {before:.1} dB -> {after:.1} dB");
    }

    /// The definition written out with clamped reads at every step, as the kernel reads.
    fn naive_pixel(p: &Problem, row: usize, col: usize) -> u8 {
        let (row, col, half, r) =
            (row as isize, col as isize, (BLOCK / 2) as isize, p.radius as isize);
        let mut candidates: Vec<(i32, i32)> = Vec::new();
        for dy in -r..=r {
            for dx in -r..=r {
                let mut ssd = 0;
                for by in 0..BLOCK as isize {
                    for bx in 0..BLOCK as isize {
                        let d = at(p, row + dy + by - half, col + dx + bx - half)
                            - at(p, row + by - half, col + bx - half);
                        ssd += d * d;
                    }
                }
                if ssd <= p.threshold {
                    candidates.push((ssd, at(p, row + dy, col + dx)));
                }
            }
        }
        candidates.sort_by_key(|c| c.0);
        candidates.truncate(MAX_MATCHES);
        let kept = candidates.len() as i32;
        ((candidates.iter().map(|c| c.1).sum::<i32>() + kept / 2) / kept) as u8
    }

    #[test]
    fn the_windowed_reference_is_the_definition() {
        let p = make_problem(24, 40, 5, 12.0, 9);
        for q in 0..p.rows * p.cols {
            assert_eq!(
                reference_pixel(&p, q / p.cols, q % p.cols),
                naive_pixel(&p, q / p.cols, q % p.cols),
                "pixel {q}"
            );
        }
    }

    #[test]
    fn one_wrong_work_group_fails_the_per_group_check() {
        let p = make_problem(32, 64, 4, 12.0, 0xB3D);
        let n = p.rows * p.cols;
        let good: Vec<u8> = (0..n).map(|q| naive_pixel(&p, q / p.cols, q % p.cols)).collect();
        let stale_problem = make_problem(32, 64, 4, 12.0, 0xB3E);
        let stale: Vec<u8> =
            (0..n).map(|q| naive_pixel(&stale_problem, q / p.cols, q % p.cols)).collect();
        let wrong: [(&str, &dyn Fn(usize) -> u8); 5] = [
            ("a constant", &|_| 128),
            ("shifted by a work-item", &|q| good[q + 1]),
            ("shifted by a work-group", &|q| good[q + LWS]),
            ("another package's", &|q| good[(q + 11 * LWS) % n]),
            ("stale input", &|q| stale[q]),
        ];
        for (what, value) in wrong {
            // The two groups this makes wrong at most pixels: every draw whose pick lands on a
            // wrong pixel fails (all draws, for a group wrong everywhere).
            let wrong_at = |q: usize| good[q] != value(q);
            let mut groups: Vec<usize> = (0..n / LWS - 1).collect();
            groups.sort_by_key(|g| {
                std::cmp::Reverse((g * LWS..(g + 1) * LWS).filter(|&q| wrong_at(q)).count())
            });
            let hit = &groups[..2];
            let mut caught = 0;
            for seed in 0..10 {
                let picks = super::super::group_picks(n, Size::Paper, LWS, seed);
                assert_eq!(picks.len(), n / LWS);
                assert!(check(&p, &good, &picks).correct);
                for &g in hit {
                    let mut o = good.clone();
                    (g * LWS..(g + 1) * LWS).for_each(|q| o[q] = value(q));
                    let v = check(&p, &o, &picks);
                    if wrong_at(picks[g]) {
                        assert!(!v.correct, "{what}, group {g}: {v}");
                        caught += 1;
                    }
                }
            }
            assert!(caught >= 1, "{what}: {caught}");
        }
    }
}
