//! Ray (the papers' "Ray", after the ray tracer EngineCL used; our own code): a Whitted-style
//! tracer with a user struct (`Primitive`, mirrored by `kernels/include/raytrace_scene.h`) and
//! the scene cached in local memory. Two scenes with the same room but differently placed
//! mirror and glass spheres: clustered at the bottom (Ray1) or spread over the view (Ray2).

use hetdsl::{Launch, Program, Runtime};

use super::check::{decided_by_an_ulp, nudge, ImageCheck, Verdict};
use super::rng::Rng;
use super::{group_picks, run_seed, Sample, Size};

pub const LWS: usize = 64;
/// Must match the defines of kernels/raytrace.cl.
const MAX_DEPTH: i32 = 4;
const MAX_RAYS: usize = 6;
const SAMPLES_PER_AXIS: usize = 2;
const EPSILON: f32 = 1e-3;
const SHININESS: f32 = 20.0;
pub const PLANE: i32 = 0;
pub const SPHERE: i32 = 1;

/// One scene object, laid out like the OpenCL `Primitive` (64 bytes, 16-byte aligned).
#[repr(C, align(16))]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Primitive {
    pub colour: [f32; 4],
    /// Sphere centre, or plane unit normal.
    pub position: [f32; 4],
    /// Sphere radius, or plane offset d of n·p = d.
    pub size: f32,
    pub reflection: f32,
    pub refraction: f32,
    pub refr_index: f32,
    pub diffuse: f32,
    pub specular: f32,
    pub kind: i32,
    pub is_light: i32,
}

// SAFETY: #[repr(C)], only f32/i32 fields, no padding (64 bytes = 16 + 16 + 8 × 4, checked
// below), and every bit pattern is a valid value.
unsafe impl hetdsl::Pod for Primitive {}
const _: () =
    assert!(std::mem::size_of::<Primitive>() == 64 && std::mem::align_of::<Primitive>() == 16);

impl Primitive {
    fn plane(
        normal: [f32; 3],
        offset: f32,
        colour: [f32; 3],
        diffuse: f32,
        reflection: f32,
    ) -> Self {
        Primitive {
            colour: [colour[0], colour[1], colour[2], 0.0],
            position: [normal[0], normal[1], normal[2], 0.0],
            size: offset,
            reflection,
            refraction: 0.0,
            refr_index: 1.0,
            diffuse,
            specular: 0.0,
            kind: PLANE,
            is_light: 0,
        }
    }

    fn sphere(centre: [f32; 3], radius: f32, colour: [f32; 3]) -> Self {
        Primitive {
            colour: [colour[0], colour[1], colour[2], 0.0],
            position: [centre[0], centre[1], centre[2], 0.0],
            size: radius,
            reflection: 0.0,
            refraction: 0.0,
            refr_index: 1.0,
            diffuse: 0.7,
            specular: 0.5,
            kind: SPHERE,
            is_light: 0,
        }
    }

    fn light(centre: [f32; 3], brightness: f32) -> Self {
        Primitive {
            is_light: 1,
            diffuse: 0.0,
            specular: 0.0,
            ..Self::sphere(centre, 0.15, [brightness; 3])
        }
    }
}

/// Which scene to render.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scene {
    /// Ray1: mirror and glass spheres clustered on the floor (the lower bands are costly).
    Clustered,
    /// Ray2: the same number of spheres spread over the whole view.
    Spread,
}

/// A room of five planes, three lights, and `spheres` spheres placed as `scene` says: a third
/// mirrors, a third glass, a third matt.
pub fn build_scene(scene: Scene, spheres: usize) -> Vec<Primitive> {
    let mut prims = vec![
        Primitive::plane([0.0, 1.0, 0.0], -3.0, [0.8, 0.8, 0.75], 0.8, 0.1), // floor y = -3
        Primitive::plane([0.0, -1.0, 0.0], -3.0, [0.7, 0.7, 0.8], 0.8, 0.0), // ceiling y = 3
        Primitive::plane([0.0, 0.0, -1.0], -9.0, [0.6, 0.7, 0.6], 0.8, 0.0), // back wall z = 9
        Primitive::plane([1.0, 0.0, 0.0], -5.5, [0.8, 0.4, 0.4], 0.8, 0.0),  // left wall x = -5.5
        Primitive::plane([-1.0, 0.0, 0.0], -5.5, [0.4, 0.4, 0.8], 0.8, 0.0), // right wall x = 5.5
        Primitive::light([0.0, 2.6, 3.0], 0.6),
        Primitive::light([-3.5, 2.5, 1.0], 0.4),
        Primitive::light([3.5, 2.5, 6.0], 0.4),
    ];
    let mut rng = Rng::new(0x5CE7E);
    // The spread scene's grid: about 4:3 like the view.
    let columns = ((spheres as f32 * 4.0 / 3.0).sqrt().ceil() as usize).max(1);
    let rows = spheres.div_ceil(columns);
    let cell = (8.8 / columns as f32).min(5.4 / rows as f32);
    for k in 0..spheres {
        let radius = match scene {
            Scene::Clustered => rng.range_f32(0.45, 0.8),
            Scene::Spread => rng.range_f32(0.3, 0.45) * cell,
        };
        let centre = match scene {
            Scene::Clustered => [rng.range_f32(-4.0, 4.0), -3.0 + radius, rng.range_f32(1.0, 7.0)],
            Scene::Spread => {
                let (cx, cy) = ((k % columns) as f32 + 0.5, (k / columns) as f32 + 0.5);
                [
                    -4.4 + cx * 8.8 / columns as f32,
                    -2.7 + cy * 5.4 / rows as f32,
                    rng.range_f32(2.0, 6.0),
                ]
            }
        };
        let colour = [rng.range_f32(0.3, 1.0), rng.range_f32(0.3, 1.0), rng.range_f32(0.3, 1.0)];
        let mut s = Primitive::sphere(centre, radius, colour);
        match k % 3 {
            0 => {
                s.reflection = 0.6;
                s.diffuse = 0.3;
            }
            1 => {
                s.refraction = 0.8;
                s.refr_index = 1.5;
                s.diffuse = 0.1;
            }
            _ => s.reflection = 0.15,
        }
        prims.push(s);
    }
    prims
}

type V3 = [f32; 3];
fn add(a: V3, b: V3) -> V3 {
    [a[0] + b[0], a[1] + b[1], a[2] + b[2]]
}
fn sub(a: V3, b: V3) -> V3 {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}
fn scale(a: V3, s: f32) -> V3 {
    [a[0] * s, a[1] * s, a[2] * s]
}
fn mul(a: V3, b: V3) -> V3 {
    [a[0] * b[0], a[1] * b[1], a[2] * b[2]]
}
fn dot(a: V3, b: V3) -> f32 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}
fn div(a: V3, s: f32) -> V3 {
    [a[0] / s, a[1] / s, a[2] / s]
}
fn normalize(a: V3) -> V3 {
    scale(a, 1.0 / dot(a, a).sqrt())
}
fn xyz(v: [f32; 4]) -> V3 {
    [v[0], v[1], v[2]]
}

/// Distance to `p` along the ray, or None; the flag says the ray starts inside a sphere.
fn intersect(p: &Primitive, origin: V3, direction: V3) -> Option<(f32, bool)> {
    if p.kind == PLANE {
        let n = xyz(p.position);
        let facing = dot(n, direction);
        if facing == 0.0 {
            return None;
        }
        let t = (p.size - dot(n, origin)) / facing;
        return (t > EPSILON).then_some((t, false));
    }
    let oc = sub(origin, xyz(p.position));
    let b = dot(oc, direction);
    let c = dot(oc, oc) - p.size * p.size;
    let discriminant = b * b - c;
    if discriminant < 0.0 {
        return None;
    }
    let root = discriminant.sqrt();
    if -b - root > EPSILON {
        Some((-b - root, false))
    } else if -b + root > EPSILON {
        Some((-b + root, true))
    } else {
        None
    }
}

struct Ray {
    origin: V3,
    direction: V3,
    weight: V3,
    depth: i32,
}

/// CPU reference: the colour one primary ray gathers (same algorithm as the kernel).
fn trace(scene: &[Primitive], origin: V3, direction: V3) -> V3 {
    let mut stack = vec![Ray { origin, direction, weight: [1.0; 3], depth: 0 }];
    let mut colour = [0.0f32; 3];
    while let Some(ray) = stack.pop() {
        let mut nearest: Option<(usize, f32, bool)> = None;
        for (i, p) in scene.iter().enumerate() {
            if let Some((t, inside)) = intersect(p, ray.origin, ray.direction) {
                if nearest.is_none_or(|n| t < n.1) {
                    nearest = Some((i, t, inside));
                }
            }
        }
        let Some((index, t, inside)) = nearest else {
            continue;
        };
        let hit = &scene[index];
        if hit.is_light != 0 {
            colour = add(colour, mul(ray.weight, xyz(hit.colour)));
            continue;
        }
        let point = add(ray.origin, scale(ray.direction, t));
        let mut normal = if hit.kind == SPHERE {
            div(sub(point, xyz(hit.position)), hit.size)
        } else {
            xyz(hit.position)
        };
        if inside {
            normal = scale(normal, -1.0);
        }
        for light in scene.iter().filter(|l| l.is_light != 0) {
            let to_light = sub(xyz(light.position), point);
            let distance = dot(to_light, to_light).sqrt();
            let to_light = div(to_light, distance);
            let from = add(point, scale(normal, EPSILON));
            let blocked = scene
                .iter()
                .filter(|p| p.is_light == 0)
                .any(|p| intersect(p, from, to_light).is_some_and(|(t, _)| t < distance));
            if blocked {
                continue;
            }
            let lambert = dot(normal, to_light);
            if lambert > 0.0 {
                colour = add(
                    colour,
                    mul(
                        mul(scale(ray.weight, hit.diffuse * lambert), xyz(hit.colour)),
                        xyz(light.colour),
                    ),
                );
            }
            let mirrored = sub(to_light, scale(normal, 2.0 * lambert));
            let highlight = dot(ray.direction, mirrored);
            if highlight > 0.0 {
                colour = add(
                    colour,
                    mul(
                        scale(ray.weight, hit.specular * highlight.powf(SHININESS)),
                        xyz(light.colour),
                    ),
                );
            }
        }
        if ray.depth >= MAX_DEPTH {
            continue;
        }
        let cos_in = -dot(normal, ray.direction);
        if hit.reflection > 0.0 && stack.len() < MAX_RAYS {
            stack.push(Ray {
                direction: add(ray.direction, scale(normal, 2.0 * cos_in)),
                origin: add(point, scale(normal, EPSILON)),
                weight: mul(scale(ray.weight, hit.reflection), xyz(hit.colour)),
                depth: ray.depth + 1,
            });
        }
        if hit.refraction > 0.0 && stack.len() < MAX_RAYS {
            let eta = if inside { hit.refr_index } else { 1.0 / hit.refr_index };
            let k = 1.0 - eta * eta * (1.0 - cos_in * cos_in);
            if k >= 0.0 {
                stack.push(Ray {
                    direction: normalize(add(
                        scale(ray.direction, eta),
                        scale(normal, eta * cos_in - k.sqrt()),
                    )),
                    origin: sub(point, scale(normal, EPSILON)),
                    weight: scale(ray.weight, hit.refraction),
                    depth: ray.depth + 1,
                });
            }
        }
    }
    colour
}

/// Camera and image.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct View {
    pub width: usize,
    pub height: usize,
    pub camera: [f32; 3],
    pub view_width: f32,
    pub view_height: f32,
}

/// CPU reference for one pixel.
pub fn reference_pixel(scene: &[Primitive], view: &View, px: usize, py: usize) -> [u8; 4] {
    pixel_nudged(scene, view, px, py, [0, 0])
}

/// The pixel with every sample's screen position (u, v) moved by `ulps` representable floats.
fn pixel_nudged(scene: &[Primitive], view: &View, px: usize, py: usize, ulps: [i32; 2]) -> [u8; 4] {
    let mut colour = [0.0f32; 3];
    let n = SAMPLES_PER_AXIS as f32;
    for sy in 0..SAMPLES_PER_AXIS {
        for sx in 0..SAMPLES_PER_AXIS {
            let u = nudge((px as f32 + (sx as f32 + 0.5) / n) / view.width as f32, ulps[0]);
            let v = nudge((py as f32 + (sy as f32 + 0.5) / n) / view.height as f32, ulps[1]);
            let on_screen = [(u - 0.5) * view.view_width, (0.5 - v) * view.view_height, 0.0];
            colour = add(colour, trace(scene, view.camera, normalize(sub(on_screen, view.camera))));
        }
    }
    let c = scale(colour, 255.0 / (n * n));
    [c[0] as u8, c[1] as u8, c[2] as u8, 255]
}

/// The SDK Mandelbrot's tolerance for a channel.
const CHANNEL_DIFF: u8 = 2;

/// Whether pixel `p` lies where an ulp decides: moving its samples' screen positions by 1 or 16
/// ulps along either axis changes its reference colour beyond the channel tolerance (a
/// silhouette, a grazing or refracted ray). Devices that contract multiply-adds or round pow
/// differently can disagree there and nowhere else.
pub fn on_an_edge(scene: &[Primitive], view: &View, p: usize) -> bool {
    let (px, py) = (p % view.width, p / view.width);
    let at = |ulps| pixel_nudged(scene, view, px, py, ulps);
    decided_by_an_ulp(at, [1, 16], CHANNEL_DIFF)
}

/// The pixels at `picks` (sorted) against the reference: channels within 2, and mismatches
/// (below 0.5 % of the picks, as suggested for this tracer) excused only where an ulp decides
/// ([`on_an_edge`]) and 8 other pixels of the work-group (drawn with `seed`) match or are edges
/// too: a wrong group fails on its one pick.
pub fn check(
    scene: &[Primitive],
    view: &View,
    pixels: &[[u8; 4]],
    picks: &[usize],
    seed: u64,
) -> Verdict {
    ImageCheck {
        image: pixels,
        len: view.width * view.height,
        picks,
        group: LWS,
        seed,
        max_channel_diff: CHANNEL_DIFF,
        max_fraction: 0.005,
        reference: |p| reference_pixel(scene, view, p % view.width, p / view.width),
        on_edge: |p| on_an_edge(scene, view, p),
    }
    .verdict()
}

/// Room for the largest scene (the paper size's 144 spheres, 5 planes, 3 lights) in local memory.
pub const MAX_PRIMITIVES: usize = 152;

hetdsl::kernel! {
    /// One pixel per work-item (1:1); the scene is read whole and cached per work-group in
    /// local memory. `Primitive` is checked field by field against the OpenCL typedef.
    #[kernel(file = "kernels/raytrace.cl", local = 64)]
    pub struct RayTraceKernel {
        fn raytrace(
            #[output(1:1)] pixels: &mut [[u8; 4]],
            width: i32,
            height: i32,
            camera_x: f32,
            camera_y: f32,
            camera_z: f32,
            view_width: f32,
            view_height: f32,
            #[input(whole)] primitives: &[Primitive],
            primitive_count: i32,
            #[local] scene: [Primitive; MAX_PRIMITIVES],
        );
    }
}

/// OpenCL lets `/` and `sqrt` be off by 2.5–3 ulp (NVIDIA's are); a ray bouncing among many
/// spheres turns that into different pixels on 1 % of a busy scene. Correct rounding keeps every
/// device on the CPU reference's rays. (`kernel!` has no build-option setting, so the program
/// is built here from the source the macro embedded.)
pub const BUILD_OPTIONS: &str = "-cl-fp32-correctly-rounded-divide-sqrt";

impl RayTraceKernel {
    fn with_exact_division(runtime: &Runtime) -> hetdsl::Result<Self> {
        Ok(RayTraceKernel {
            program: runtime.program_with_options(&Self::source(), BUILD_OPTIONS)?,
        })
    }
}

pub struct RayTrace {
    size: Size,
    kernel: RayTraceKernel,
    scene_kind: Scene,
    pub scene: Vec<Primitive>,
    pub view: View,
    pixels: Vec<[u8; 4]>,
    /// Checks so far: each draws its own pixels.
    checks: u64,
}

impl RayTrace {
    pub fn new(size: Size, scene_kind: Scene, runtime: &Runtime) -> hetdsl::Result<Self> {
        let (width, height, spheres) = match size {
            Size::Small => (96, 64, 12),
            Size::Paper => (16384, 12288, 144),
        };
        let view =
            View { width, height, camera: [0.0, 0.25, -7.0], view_width: 6.0, view_height: 4.5 };
        let scene = build_scene(scene_kind, spheres);
        if scene.len() > MAX_PRIMITIVES {
            return Err(hetdsl::Error::BadArgument {
                index: 8,
                reason: format!("{} primitives, room for {MAX_PRIMITIVES}", scene.len()),
            });
        }
        Ok(RayTrace {
            size,
            kernel: RayTraceKernel::with_exact_division(runtime)?,
            scene_kind,
            scene,
            view,
            pixels: vec![[0; 4]; width * height],
            checks: 0,
        })
    }
}

impl Sample for RayTrace {
    fn name(&self) -> &str {
        match self.scene_kind {
            Scene::Clustered => "ray1",
            Scene::Spread => "ray2",
        }
    }

    fn describe(&self) -> String {
        format!(
            "{}x{} px, {} primitives ({:?}), depth {MAX_DEPTH}, lws {LWS}",
            self.view.width,
            self.view.height,
            self.scene.len(),
            self.scene_kind
        )
    }

    fn program(&self) -> &Program {
        self.kernel.program()
    }

    fn launch(&mut self) -> hetdsl::Result<Launch<'_>> {
        self.pixels.fill([0, 0, 0, 0]);
        let v = self.view;
        self.kernel.launch(
            v.width * v.height,
            &mut self.pixels,
            v.width as i32,
            v.height as i32,
            v.camera[0],
            v.camera[1],
            v.camera[2],
            v.view_width,
            v.view_height,
            &self.scene,
            self.scene.len() as i32,
        )
    }

    fn verify(&mut self) -> Verdict {
        self.checks += 1;
        let seed = run_seed(19, self.checks);
        let picks = group_picks(self.pixels.len(), self.size, LWS, seed);
        check(&self.scene, &self.view, &self.pixels, &picks, seed)
    }

    fn image(&self) -> Option<(usize, usize, Vec<[u8; 4]>)> {
        Some((self.view.width, self.view.height, self.pixels.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::super::check::{par_map, pixel_differs};
    use super::*;

    /// A way a work-group can be wrong: its name and the pixel it puts at each position.
    type Wrong<'a> = (&'a str, &'a dyn Fn(usize) -> [u8; 4]);

    #[test]
    fn one_wrong_work_group_fails_the_per_group_check() {
        for kind in [Scene::Clustered, Scene::Spread] {
            let scene = build_scene(kind, 12);
            let view = View {
                width: 96,
                height: 64,
                camera: [0.0, 0.25, -7.0],
                view_width: 6.0,
                view_height: 4.5,
            };
            let n = view.width * view.height;
            let all: Vec<usize> = (0..n).collect();
            let good =
                par_map(&all, |p| reference_pixel(&scene, &view, p % view.width, p / view.width));
            let stale_scene = build_scene(kind, 9);
            let wrong: [Wrong; 5] = [
                ("black", &|_| [0, 0, 0, 255]),
                ("shifted by a work-item", &|p| good[p + 1]),
                ("shifted by a work-group", &|p| good[p + LWS]),
                ("another package's", &|p| good[(p + 29 * LWS) % n]),
                ("stale scene", &|p| {
                    reference_pixel(&stale_scene, &view, p % view.width, p / view.width)
                }),
            ];
            let groups = n / LWS;
            for (what, value) in wrong {
                // The two groups this makes wrong at most pixels: every draw whose pick lands on
                // a wrong pixel fails (all draws, for a group wrong everywhere; an edge pixel
                // only if its group is wrong elsewhere too).
                let wrong_at = |p: usize| pixel_differs(good[p], value(p), CHANNEL_DIFF);
                let mut order: Vec<usize> = (0..groups - 1).collect();
                order.sort_by_key(|g| {
                    std::cmp::Reverse((g * LWS..(g + 1) * LWS).filter(|&p| wrong_at(p)).count())
                });
                let hit = &order[..2];
                let everywhere = hit.iter().all(|g| (g * LWS..(g + 1) * LWS).all(wrong_at));
                let mut caught = 0;
                for seed in 0..6 {
                    let picks = super::super::group_picks(n, Size::Paper, LWS, seed);
                    assert_eq!(picks.len(), groups);
                    assert!(check(&scene, &view, &good, &picks, seed).correct);
                    for &g in hit {
                        let mut o = good.clone();
                        (g * LWS..(g + 1) * LWS).for_each(|p| o[p] = value(p));
                        let v = check(&scene, &view, &o, &picks, seed);
                        if wrong_at(picks[g])
                            && (everywhere || !on_an_edge(&scene, &view, picks[g]))
                        {
                            assert!(!v.correct, "{kind:?}, {what}, group {g}: {v}");
                            caught += 1;
                        }
                    }
                }
                assert!(caught >= 1, "{kind:?}, {what}: {caught}");
            }
        }
    }
}
