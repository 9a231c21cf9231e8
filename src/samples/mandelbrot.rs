//! Mandelbrot (AMD APP SDK `Mandelbrot`): four pixels per work-item (output 4:1), escape-time
//! iteration with smooth colouring. Irregular: interior pixels iterate to the limit.

use hetdsl::{Launch, Program, Runtime};

use super::check::{decided_by_an_ulp, nudge, ImageCheck, Verdict};
use super::{group_picks, run_seed, Sample, Size};

pub const LWS: usize = 256;

/// The image and the part of the plane it shows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct View {
    pub width: usize,
    pub height: usize,
    pub left: f32,
    pub top: f32,
    /// Plane units per pixel (y decreases downwards).
    pub step: f32,
    pub max_iterations: i32,
}

impl View {
    /// The whole set: x in [-2.25, 0.75], centred vertically on the real axis.
    pub fn whole_set(width: usize, height: usize, max_iterations: i32) -> Self {
        let step = 3.0 / width as f32;
        View { width, height, left: -2.25, top: step * height as f32 / 2.0, step, max_iterations }
    }
}

/// The colour of one pixel: black inside, a cosine palette of the smooth escape count outside.
pub fn shade(iterations: i32, radius2: f32, max_iterations: i32) -> [u8; 4] {
    if iterations >= max_iterations {
        return [0, 0, 0, 255];
    }
    let two_pi = std::f32::consts::TAU;
    let smooth = iterations as f32 + 1.0 - (radius2.log2() * 0.5).log2();
    let phase = smooth * two_pi / 256.0;
    let third = two_pi / 3.0;
    let channel = |angle: f32| ((1.0 + angle.cos()) * 0.5 * 255.0) as u8;
    [channel(phase), channel(2.0 * phase + third), channel(phase - third), 255]
}

/// CPU reference for pixel (column, row): the plain scalar escape-time loop in f32.
pub fn reference_pixel(view: &View, column: usize, row: usize) -> [u8; 4] {
    pixel_at(view, view.left + column as f32 * view.step, view.top - row as f32 * view.step)
}

/// The escape-time colour of the point c = (cx, cy).
fn pixel_at(view: &View, cx: f32, cy: f32) -> [u8; 4] {
    let (mut x, mut y, mut radius2) = (0.0f32, 0.0f32, 0.0f32);
    let mut iterations = 0;
    while iterations < view.max_iterations {
        let new_x = x * x - y * y + cx;
        y = 2.0 * x * y + cy;
        x = new_x;
        iterations += 1;
        radius2 = x * x + y * y;
        if radius2 > 4.0 {
            break;
        }
    }
    shade(iterations, radius2, view.max_iterations)
}

/// Whether pixel `p` lies where an ulp decides: moving c by 1 or 4 ulps along either axis
/// changes its reference colour beyond the channel tolerance.
pub fn on_an_edge(view: &View, p: usize) -> bool {
    let (column, row) = (p % view.width, p / view.width);
    let (cx, cy) = (view.left + column as f32 * view.step, view.top - row as f32 * view.step);
    let at = |[du, dv]: [i32; 2]| pixel_at(view, nudge(cx, du), nudge(cy, dv));
    decided_by_an_ulp(at, [1, 4], CHANNEL_DIFF)
}

/// The SDK's tolerance for a channel.
const CHANNEL_DIFF: u8 = 2;
/// Pixels of a work-group (four per work-item).
pub const GROUP_PIXELS: usize = 4 * LWS;

/// The pixels at `picks` (sorted) against the reference. The SDK's rule lets a channel be off by
/// 2 (cos/log2 ulps) and 0.2 % of the pixels mismatch: orbits on the set's boundary are
/// chaotic, so an ulp (a contracted multiply-add, another rounding) changes their escape count.
/// Here a mismatch is excused only where that holds ([`on_an_edge`]) and 8 other pixels of its
/// work-group (drawn with `seed`) match or are edges too: a wrong group fails on its one pick.
pub fn check(view: &View, image: &[[u8; 4]], picks: &[usize], seed: u64) -> Verdict {
    ImageCheck {
        image,
        len: view.width * view.height,
        picks,
        group: GROUP_PIXELS,
        seed,
        max_channel_diff: CHANNEL_DIFF,
        max_fraction: 0.002,
        reference: |p| reference_pixel(view, p % view.width, p / view.width),
        on_edge: |p| on_an_edge(view, p),
    }
    .verdict()
}

hetdsl::kernel! {
    /// Four pixels per work-item: output pattern 4:1.
    #[kernel(file = "kernels/mandelbrot.cl", local = 256)]
    pub struct MandelbrotKernel {
        fn mandelbrot(
            #[output(4:1)] image: &mut [[u8; 4]],
            left: f32,
            top: f32,
            step_x: f32,
            step_y: f32,
            max_iterations: i32,
            width: i32,
        );
    }
}

pub struct Mandelbrot {
    size: Size,
    kernel: MandelbrotKernel,
    pub view: View,
    image: Vec<[u8; 4]>,
    /// Checks so far: each draws its own pixels.
    checks: u64,
}

impl Mandelbrot {
    pub fn new(size: Size, runtime: &Runtime) -> hetdsl::Result<Self> {
        let view = match size {
            Size::Small => View::whole_set(256, 192, 256),
            Size::Paper => View::whole_set(16384, 16384, 57344),
        };
        let kernel = MandelbrotKernel::new(runtime)?;
        let image = vec![[0; 4]; view.width * view.height];
        Ok(Mandelbrot { size, kernel, view, image, checks: 0 })
    }
}

impl Sample for Mandelbrot {
    fn name(&self) -> &str {
        "mandelbrot"
    }

    fn describe(&self) -> String {
        format!(
            "{}x{} px, {} iterations, lws {LWS}",
            self.view.width, self.view.height, self.view.max_iterations
        )
    }

    fn program(&self) -> &Program {
        self.kernel.program()
    }

    fn launch(&mut self) -> hetdsl::Result<Launch<'_>> {
        // Alpha is always 255 in a computed pixel.
        self.image.fill([0, 0, 0, 0]);
        let v = self.view;
        self.kernel.launch(
            v.width * v.height / 4,
            &mut self.image,
            v.left,
            v.top,
            v.step,
            -v.step,
            v.max_iterations,
            v.width as i32,
        )
    }

    fn verify(&mut self) -> Verdict {
        self.checks += 1;
        let seed = run_seed(12, self.checks);
        let picks = group_picks(self.image.len(), self.size, GROUP_PIXELS, seed);
        check(&self.view, &self.image, &picks, seed)
    }

    fn image(&self) -> Option<(usize, usize, Vec<[u8; 4]>)> {
        Some((self.view.width, self.view.height, self.image.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::super::check::pixel_differs;
    use super::*;

    /// A way a work-group can be wrong: its name and the pixel it puts at each position.
    type Wrong<'a> = (&'a str, &'a dyn Fn(usize) -> [u8; 4]);

    #[test]
    fn one_wrong_work_group_fails_the_per_group_check() {
        let view = View::whole_set(256, 192, 256);
        let n = view.width * view.height;
        let good: Vec<[u8; 4]> =
            (0..n).map(|p| reference_pixel(&view, p % view.width, p / view.width)).collect();
        let stale_view = View { left: view.left + 0.37, ..view };
        let wrong: [Wrong; 5] = [
            ("black", &|_| [0, 0, 0, 255]),
            ("shifted by a work-item", &|p| good[p + 4]),
            ("shifted by a work-group", &|p| good[p + GROUP_PIXELS]),
            ("another package's", &|p| good[(p + 17 * GROUP_PIXELS) % n]),
            ("stale parameters", &|p| reference_pixel(&stale_view, p % view.width, p / view.width)),
        ];
        let groups = n / GROUP_PIXELS;
        for (what, value) in wrong {
            // The two groups this makes wrong at most pixels: every draw whose pick lands on a
            // wrong pixel fails (all draws, for a group wrong everywhere; an edge pixel only if
            // its group is wrong elsewhere too).
            let wrong_at = |p: usize| pixel_differs(good[p], value(p), CHANNEL_DIFF);
            let mut order: Vec<usize> = (0..groups - 1).collect();
            order.sort_by_key(|g| {
                std::cmp::Reverse(
                    (g * GROUP_PIXELS..(g + 1) * GROUP_PIXELS).filter(|&p| wrong_at(p)).count(),
                )
            });
            let hit = &order[..2];
            let everywhere =
                hit.iter().all(|g| (g * GROUP_PIXELS..(g + 1) * GROUP_PIXELS).all(wrong_at));
            let mut caught = 0;
            for seed in 0..6 {
                let picks = super::super::group_picks(n, Size::Paper, GROUP_PIXELS, seed);
                assert_eq!(picks.len(), groups);
                assert!(check(&view, &good, &picks, seed).correct);
                for &g in hit {
                    let mut o = good.clone();
                    (g * GROUP_PIXELS..(g + 1) * GROUP_PIXELS).for_each(|p| o[p] = value(p));
                    let v = check(&view, &o, &picks, seed);
                    if wrong_at(picks[g]) && (everywhere || !on_an_edge(&view, picks[g])) {
                        assert!(!v.correct, "{what}, group {g}: {v}");
                        caught += 1;
                    }
                }
            }
            assert!(caught >= 1, "{what}: {caught}");
        }
    }

    #[test]
    fn a_mismatch_is_excused_only_on_an_edge_with_its_group_right() {
        let view = View::whole_set(256, 192, 256);
        let n = view.width * view.height;
        let good: Vec<[u8; 4]> =
            (0..n).map(|p| reference_pixel(&view, p % view.width, p / view.width)).collect();
        let edges: Vec<usize> = (0..n).filter(|&p| on_an_edge(&view, p)).collect();
        assert!(!edges.is_empty() && edges.len() < n / 100, "{} edge pixels", edges.len());
        let all: Vec<usize> = (0..n).collect();
        // An edge pixel as a device that rounds differently may give it: what one ulp gives.
        let e = edges[edges.len() / 2];
        let (cx, cy) = (
            view.left + (e % view.width) as f32 * view.step,
            view.top - (e / view.width) as f32 * view.step,
        );
        let moved = [1, -1, 4, -4]
            .iter()
            .flat_map(|&u| [pixel_at(&view, nudge(cx, u), cy), pixel_at(&view, cx, nudge(cy, u))])
            .find(|m| pixel_differs(*m, good[e], CHANNEL_DIFF))
            .expect("an edge pixel changes");
        let mut o = good.clone();
        o[e] = moved;
        assert!(check(&view, &o, &all, 1).correct, "{}", check(&view, &o, &all, 1));
        // The same change on a pixel an ulp does not decide is wrong.
        let calm =
            (0..n).find(|&p| pixel_differs(good[p], moved, CHANNEL_DIFF) && !on_an_edge(&view, p));
        let mut o = good.clone();
        o[calm.expect("a pixel off the edges")] = moved;
        assert!(!check(&view, &o, &all, 1).correct);
        // And an edge pixel whose group is wrong elsewhere is not excused.
        let mut o = good.clone();
        let g = e / GROUP_PIXELS * GROUP_PIXELS;
        (g..g + GROUP_PIXELS).filter(|&p| p != e).for_each(|p| o[p] = [1, 2, 3, 255]);
        o[e] = moved;
        let others: Vec<usize> =
            (0..n).filter(|&p| p / GROUP_PIXELS != e / GROUP_PIXELS || p == e).collect();
        assert!(!check(&view, &o, &others, 1).correct);
    }
}
