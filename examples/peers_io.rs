//! Inputs and CPU references for the peers' drivers (EngineCL, StarPU): per kernel, a folder
//! with a plain-text description of the launch (`desc.txt`: the .cl file, the kernel's name,
//! global and local size, every argument in order with its data pattern) and raw little-endian
//! files: each input, and for each check the indices compared and the CPU reference there. The
//! drivers run the same .cl file on the same inputs and apply the same tolerance rule as the
//! suite; the references come from the samples' own CPU code, never from a device.
//!
//! ```text
//! cargo run --release --example peers_io -- --size small --out peers-data \
//!     [--kernels saxpy,binomial,gaussian,mandelbrot,nbody,rap,bm3d,ray1,ray2]
//! ```
//!
//! `desc.txt`, one item per line (`num den`: `num` elements per `den` work-items):
//! ```text
//! kernel <name>  | source <file.cl>  | function <cl name>  | global <items>  | local <lws>
//! options <build options>                                 (optional)
//! arg scalar <float|int> <value>
//! arg whole <cltype> <elem bytes> <count> <file>          (read by every work-item)
//! arg in|inout <cltype> <elem bytes> <count> <num> <den> <file>
//! arg out <cltype> <elem bytes> <count> <num> <den> -
//! arg local <cltype> <bytes>
//! check <close|l2|pixels|equal> <arg> <f32|u8|i32> <components> <idx file> <ref file> <p1> <p2>
//! ```
//!
//! `--summarize DIR` instead reads what `scripts/peers-run.sh` left in DIR (per kernel:
//! `hetdsl_<k>.json` from the suite or `hetdsl_saxpy.r<N>.json` from the saxpy example, `enginecl_<k>.jsonl` and
//! `starpu_<k>.jsonl` from the drivers), prints one row per kernel and peer (the peer's fastest
//! correct setting, its ROI and its ratio to hetdsl's) and writes `DIR/summary.json`.
//!
//! `source` names a file of `kernels/`, or with `./` one in the folder (a flattened source).
//! Rules: `close`: |out − ref| ≤ max(p1, p2·|ref|) everywhere; `l2`: relative L2 error < p1;
//! `pixels`: fewer than p2 of the checked pixels have a channel off by more than p1; `equal`.
//! Index files hold u64 element indices (in units of `components` scalars), reference files f64.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;
use hetdsl::Runtime;
use hetdsl_samples::samples::{
    binomial, bm3d, check, check_indices, gaussian, mandelbrot, nbody, rap, raytrace, Cover, Size,
};
use serde_json::json;

/// The kernels the peers run, in the order the runner uses.
const KERNELS: &[&str] =
    &["saxpy", "binomial", "gaussian", "mandelbrot", "nbody", "rap", "bm3d", "ray1", "ray2"];

/// Saxpy is not a suite sample: the sizes of the `saxpy` example (its default for `paper`).
pub fn saxpy_len(size: Size) -> usize {
    match size {
        Size::Small => 1 << 16,
        Size::Paper => 1 << 24,
    }
}

/// One kernel's folder being written.
struct Folder {
    dir: PathBuf,
    lines: Vec<String>,
}

impl Folder {
    fn new(root: &Path, kernel: &str, function: &str, global: usize, local: usize) -> Self {
        let lines = vec![
            format!("kernel {kernel}"),
            format!("source {kernel}.cl"),
            format!("function {function}"),
            format!("global {global}"),
            format!("local {local}"),
        ];
        Folder { dir: root.join(kernel), lines }
    }

    fn file(&self, name: &str, bytes: &[u8]) -> Result<(), String> {
        std::fs::create_dir_all(&self.dir).map_err(|e| format!("{}: {e}", self.dir.display()))?;
        let path = self.dir.join(name);
        std::fs::write(&path, bytes).map_err(|e| format!("{}: {e}", path.display()))
    }

    fn line(&mut self, text: String) {
        self.lines.push(text);
    }

    /// A buffer argument written to `name.bin`.
    fn buffer(
        &mut self,
        kind: &str,
        cltype: &str,
        elem: usize,
        data: &[u8],
        pattern: &str,
        name: &str,
    ) -> Result<(), String> {
        let file = format!("{name}.bin");
        self.file(&file, data)?;
        self.line(format!("arg {kind} {cltype} {elem} {} {pattern}{file}", data.len() / elem));
        Ok(())
    }

    /// A check of argument `arg`: the indices compared and the reference components there.
    #[allow(clippy::too_many_arguments)]
    fn check(
        &mut self,
        rule: &str,
        arg: usize,
        ty: &str,
        comp: usize,
        indices: &[usize],
        reference: &[f64],
        p: [f64; 2],
    ) -> Result<(), String> {
        let n = self.lines.iter().filter(|l| l.starts_with("check ")).count();
        let (idx, refs) = (format!("check{n}_idx.bin"), format!("check{n}_ref.bin"));
        let idx_bytes: Vec<u8> = indices.iter().flat_map(|&i| (i as u64).to_le_bytes()).collect();
        let ref_bytes: Vec<u8> = reference.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.file(&idx, &idx_bytes)?;
        self.file(&refs, &ref_bytes)?;
        self.line(format!("check {rule} {arg} {ty} {comp} {idx} {refs} {:e} {:e}", p[0], p[1]));
        Ok(())
    }

    fn finish(self) -> Result<(), String> {
        self.file("desc.txt", (self.lines.join("\n") + "\n").as_bytes())
    }
}

fn f32_bytes<const N: usize>(v: &[[f32; N]]) -> Vec<u8> {
    v.iter().flat_map(|a| a.iter().flat_map(|x| x.to_le_bytes())).collect()
}

fn saxpy(root: &Path, size: Size) -> Result<(), String> {
    // The `saxpy` example's inputs and rule.
    let n = saxpy_len(size);
    let a = 2.5f32;
    let x: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.001).collect();
    let y: Vec<f32> = (0..n).map(|i| (i % 77) as f32).collect();
    let mut f = Folder::new(root, "saxpy", "saxpy", n, 256);
    f.line(format!("arg scalar float {a:e}"));
    f.buffer(
        "in",
        "float",
        4,
        &f32_bytes(&x.iter().map(|v| [*v]).collect::<Vec<_>>()),
        "1 1 ",
        "x",
    )?;
    f.buffer(
        "inout",
        "float",
        4,
        &f32_bytes(&y.iter().map(|v| [*v]).collect::<Vec<_>>()),
        "1 1 ",
        "y",
    )?;
    let idx = check_indices(n, size, 10, Cover::Sample);
    let want: Vec<f64> = idx.iter().map(|&i| (a * x[i] + y[i]) as f64).collect();
    f.check("close", 2, "f32", 1, &idx, &want, [1e-6, 1e-6])?;
    f.finish()
}

fn binomial(root: &Path, size: Size, rt: &Runtime) -> Result<(), String> {
    let s = binomial::Binomial::new(size, rt).map_err(|e| e.to_string())?;
    let random = s.random();
    let lws = binomial::STEPS + 1;
    let mut f = Folder::new(root, "binomial", "binomial_options", random.len() * lws, lws);
    f.line(format!("arg scalar int {}", binomial::STEPS));
    f.buffer("in", "float4", 16, &f32_bytes(random), &format!("1 {lws} "), "rand")?;
    f.line(format!("arg out float4 16 {} 1 {lws} -", random.len()));
    f.line(format!("arg local float4 {}", 16 * lws));
    f.line(format!("arg local float4 {}", 16 * binomial::STEPS));
    let idx = check_indices(random.len() * 4, size, 11, Cover::Sample);
    let want =
        check::par_map(&idx, |k| binomial::reference_price(random[k / 4][k % 4], binomial::STEPS));
    // The suite's rule: relative L2 below 1e-3 and every price within 1e-3 of max(1, |price|).
    f.check("l2", 2, "f32", 1, &idx, &want, [1e-3, 0.0])?;
    f.check("close", 2, "f32", 1, &idx, &want, [1e-3, 1e-3])?;
    f.finish()
}

fn gaussian(root: &Path, size: Size, rt: &Runtime) -> Result<(), String> {
    let s = gaussian::Gaussian::new(size, rt).map_err(|e| e.to_string())?;
    let mut f = Folder::new(root, "gaussian", "gaussian_blur", s.rows * s.cols, gaussian::LWS);
    let image: Vec<u8> = s.image.iter().flatten().copied().collect();
    f.buffer("whole", "uchar4", 4, &image, "", "image")?;
    let filter: Vec<u8> = s.filter.iter().flat_map(|v| v.to_le_bytes()).collect();
    f.buffer("whole", "float", 4, &filter, "", "filter")?;
    f.line(format!("arg out uchar4 4 {} 1 1 -", s.rows * s.cols));
    for v in [s.rows, s.cols, s.filter_width] {
        f.line(format!("arg scalar int {v}"));
    }
    let idx = check_indices(s.rows * s.cols, size, 14, Cover::Sample);
    let want: Vec<f64> = check::par_map(&idx, |p| {
        gaussian::reference_pixel(
            &s.image,
            s.rows,
            s.cols,
            &s.filter,
            s.filter_width,
            p / s.cols,
            p % s.cols,
        )
    })
    .into_iter()
    .flat_map(|px| px.map(f64::from))
    .collect();
    // The suite's rule: every channel within 1 of the reference.
    f.check("close", 2, "u8", 4, &idx, &want, [1.0, 0.0])?;
    f.finish()
}

fn mandelbrot(root: &Path, size: Size, rt: &Runtime) -> Result<(), String> {
    let v = mandelbrot::Mandelbrot::new(size, rt).map_err(|e| e.to_string())?.view;
    let pixels = v.width * v.height;
    let mut f = Folder::new(root, "mandelbrot", "mandelbrot", pixels / 4, mandelbrot::LWS);
    f.line(format!("arg out uchar4 4 {pixels} 4 1 -"));
    for x in [v.left, v.top, v.step, -v.step] {
        f.line(format!("arg scalar float {x:e}"));
    }
    f.line(format!("arg scalar int {}", v.max_iterations));
    f.line(format!("arg scalar int {}", v.width));
    let idx = check_indices(pixels, size, 12, Cover::Sample);
    let want: Vec<f64> =
        check::par_map(&idx, |p| mandelbrot::reference_pixel(&v, p % v.width, p / v.width))
            .into_iter()
            .flat_map(|px| px.map(f64::from))
            .collect();
    // The SDK's rule, as the suite applies it.
    f.check("pixels", 0, "u8", 4, &idx, &want, [2.0, 0.002])?;
    f.finish()
}

fn nbody(root: &Path, size: Size, rt: &Runtime) -> Result<(), String> {
    let s = nbody::NBody::new(size, rt).map_err(|e| e.to_string())?;
    let n = s.position.len();
    let mut f = Folder::new(root, "nbody", "nbody_step", n, nbody::LWS);
    f.buffer("whole", "float4", 16, &f32_bytes(&s.position), "", "position")?;
    f.buffer("in", "float4", 16, &f32_bytes(&s.velocity), "1 1 ", "velocity")?;
    f.line(format!("arg scalar int {n}"));
    f.line(format!("arg scalar float {:e}", nbody::DT));
    f.line(format!("arg scalar float {:e}", nbody::SOFTENING2));
    f.line(format!("arg out float4 16 {n} 1 1 -"));
    f.line(format!("arg out float4 16 {n} 1 1 -"));
    let idx = check_indices(n, size, 13, Cover::Sample);
    let moved = check::par_map(&idx, |i| nbody::reference_body(&s.position, &s.velocity, i));
    let pos: Vec<f64> = moved.iter().flat_map(|m| m.0).collect();
    let vel: Vec<f64> = moved.iter().flat_map(|m| m.1).collect();
    f.check("l2", 5, "f32", 4, &idx, &pos, [1e-5, 0.0])?;
    f.check("l2", 6, "f32", 4, &idx, &vel, [1e-3, 0.0])?;
    f.finish()
}

fn rap(root: &Path, size: Size, rt: &Runtime) -> Result<(), String> {
    let s = rap::Rap::new(size, rt).map_err(|e| e.to_string())?;
    let n = s.previous.len();
    let mut f = Folder::new(root, "rap", "rap_stage", n, rap::LWS);
    let ints = |v: &[i32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    f.buffer("whole", "int", 4, &ints(&s.previous), "", "previous")?;
    f.buffer("whole", "int", 4, &ints(&s.profit), "", "profit")?;
    f.line(format!("arg out int 4 {n} 1 1 -"));
    let idx = check_indices(n, size, 17, Cover::Sample);
    let want: Vec<f64> =
        check::par_map(&idx, |j| rap::reference_stage_at(&s.previous, &s.profit, j) as f64);
    f.check("equal", 2, "i32", 1, &idx, &want, [0.0, 0.0])?;
    f.finish()
}

/// hetdsl's ROI and verdict for kernel `k` in the runner's folder: the co-executed row of the
/// suite's JSON, or the median of the saxpy example's reports `hetdsl_saxpy.r<N>.json` (whose
/// worst exit status the runner records in `hetdsl_saxpy.ok`).
fn hetdsl_row(dir: &Path, k: &str) -> Option<(f64, bool, String)> {
    let read = |path: PathBuf| -> Option<serde_json::Value> {
        serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
    };
    if let Some(doc) = read(dir.join(format!("hetdsl_{k}.json"))) {
        let row = doc["runs"].as_array()?.iter().find(|r| r["kernel"] == k && r["set"] != "-")?;
        let setting = row["balancer"].as_str().unwrap_or("?").to_string();
        return Some((row["roi_seconds"].as_f64()?, row["correct"].as_bool()?, setting));
    }
    let mut rois: Vec<f64> = (1..100)
        .map_while(|r| read(dir.join(format!("hetdsl_{k}.r{r}.json"))))
        .filter_map(|doc| doc["roi_seconds"].as_f64())
        .collect();
    rois.sort_by(f64::total_cmp);
    let median = match rois.len() {
        0 => return None,
        n if n % 2 == 1 => rois[n / 2],
        n => 0.5 * (rois[n / 2 - 1] + rois[n / 2]),
    };
    let ok = std::fs::read_to_string(dir.join(format!("hetdsl_{k}.ok"))).ok()?;
    Some((median, ok.trim() == "0", "default".to_string()))
}

/// The fastest correct setting of one peer's JSON lines, or why there is none.
fn best_line(dir: &Path, peer: &str, k: &str) -> serde_json::Value {
    let path = dir.join(format!("{peer}_{k}.jsonl"));
    let Ok(text) = std::fs::read_to_string(&path) else {
        return json!({"peer": peer, "kernel": k, "missing": "no output (not run, or it crashed)"});
    };
    let lines: Vec<serde_json::Value> =
        text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    if let Some(no) = lines.iter().find(|l| l["supported"] == false) {
        return no.clone();
    }
    let correct: Vec<&serde_json::Value> = lines.iter().filter(|l| l["ok"] == true).collect();
    let timed = correct.iter().filter(|l| l["roi_seconds"].as_f64().is_some_and(|t| t > 0.0));
    let best = timed.min_by(|a, b| {
        a["roi_seconds"]
            .as_f64()
            .unwrap_or(f64::MAX)
            .total_cmp(&b["roi_seconds"].as_f64().unwrap_or(f64::MAX))
    });
    match (best, correct.first()) {
        (Some(best), _) => (*best).clone(),
        // Correct, but quicker than the peer's clock tells (EngineCL's is in whole
        // milliseconds: RAP at the small size reads 0 ms now and then): no time to compare.
        (None, Some(untimed)) => {
            let mut row = (*untimed).clone();
            row["roi_seconds"] = serde_json::Value::Null;
            row["untimed"] = json!("under the peer's clock resolution");
            row
        }
        (None, None) => {
            json!({"peer": peer, "kernel": k, "missing": format!("no correct run among {} setting(s)", lines.len())})
        }
    }
}

fn summarize(dir: &Path) -> Result<(), String> {
    let mut rows = Vec::new();
    println!(
        "{:<11} {:<9} {:<22} {:>10} {:>11} {:>8}  correct",
        "kernel", "peer", "best setting", "ROI ms", "hetdsl ms", "ratio"
    );
    for k in KERNELS {
        // Kernels this folder holds nothing of were not run (KERNELS chose others).
        let ran =
            ["enginecl", "starpu"].iter().any(|p| dir.join(format!("{p}_{k}.jsonl")).exists())
                || hetdsl_row(dir, k).is_some();
        if !ran {
            continue;
        }
        let hetdsl = hetdsl_row(dir, k);
        let (h_roi, h_ok, setting) = hetdsl
            .map_or((None, None, "-".to_string()), |(t, ok, setting)| (Some(t), Some(ok), setting));
        let ms = |t: Option<f64>| t.map_or("-".to_string(), |t| format!("{:.2}", t * 1e3));
        println!(
            "{k:<11} {:<9} {:<22} {:>10} {:>11} {:>8}  {}",
            "hetdsl",
            setting,
            ms(h_roi),
            ms(h_roi),
            if h_roi.is_some() { "1.000" } else { "-" },
            h_ok.map_or("-".into(), |b| b.to_string())
        );
        rows.push(json!({"kernel": k, "peer": "hetdsl", "setting": setting, "roi_seconds": h_roi, "ok": h_ok}));
        for peer in ["enginecl", "starpu"] {
            let mut best = best_line(dir, peer, k);
            let roi = best["roi_seconds"].as_f64();
            let ratio = roi.zip(h_roi).map(|(p, h)| p / h);
            let setting = best["setting"].as_str().map(String::from).unwrap_or_else(|| {
                let why = best["reason"].as_str().or(best["missing"].as_str()).unwrap_or("?");
                format!("n/a: {why}")
            });
            // The table keeps its columns; summary.json has the whole reason.
            let shown: String = match setting.chars().count() > 22 {
                true => setting.chars().take(21).chain(std::iter::once('…')).collect(),
                false => setting.clone(),
            };
            println!(
                "{k:<11} {peer:<9} {:<22} {:>10} {:>11} {:>8}  {}",
                shown,
                ms(roi),
                ms(h_roi),
                ratio.map_or("-".into(), |r| format!("{r:.3}")),
                best["ok"].as_bool().map_or("-".into(), |b| b.to_string())
            );
            best["ratio_to_hetdsl"] = json!(ratio);
            rows.push(best);
        }
    }
    let path = dir.join("summary.json");
    let text = serde_json::to_string_pretty(&json!({"rows": rows})).map_err(|e| e.to_string())?;
    std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))
}

fn bm3d(root: &Path, size: Size, rt: &Runtime) -> Result<(), String> {
    let s = bm3d::Bm3d::new(size, rt).map_err(|e| e.to_string())?;
    let p = &s.problem;
    let n = p.rows * p.cols;
    let mut f = Folder::new(root, "bm3d", "block_match_filter", n, bm3d::LWS);
    f.buffer("whole", "uchar", 1, &p.noisy, "", "noisy")?;
    for v in [p.rows as i32, p.cols as i32, p.radius, p.threshold] {
        f.line(format!("arg scalar int {v}"));
    }
    f.line(format!("arg out uchar 1 {n} 1 1 -"));
    let idx = check_indices(n, size, 18, Cover::Sample);
    let want: Vec<f64> =
        check::par_map(&idx, |q| bm3d::reference_pixel(p, q / p.cols, q % p.cols) as f64);
    // The suite's rule: integers, exact.
    f.check("equal", 5, "u8", 1, &idx, &want, [0.0, 0.0])?;
    f.finish()
}

/// The tracer's scene as the kernel's `Primitive` array: 64 bytes each, fields in order.
fn primitive_bytes(scene: &[raytrace::Primitive]) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 * scene.len());
    for p in scene {
        let scalars = [p.size, p.reflection, p.refraction, p.refr_index, p.diffuse, p.specular];
        let floats = p.colour.iter().chain(&p.position).chain(&scalars);
        out.extend(floats.flat_map(|x| x.to_le_bytes()));
        out.extend(p.kind.to_le_bytes().into_iter().chain(p.is_light.to_le_bytes()));
    }
    out
}

fn ray(
    root: &Path,
    size: Size,
    rt: &Runtime,
    kernel: &str,
    scene: raytrace::Scene,
) -> Result<(), String> {
    let s = raytrace::RayTrace::new(size, scene, rt).map_err(|e| e.to_string())?;
    let v = s.view;
    let n = v.width * v.height;
    let mut f = Folder::new(root, kernel, "raytrace", n, raytrace::LWS);
    // The kernel includes its scene header: the folder holds the flattened source, built with
    // the sample's own options (correctly rounded division and square root).
    f.file("kernel.cl", raytrace::RayTraceKernel::source().text.as_bytes())?;
    f.lines[1] = "source ./kernel.cl".into();
    f.line(format!("options {}", raytrace::BUILD_OPTIONS));
    f.line(format!("arg out uchar4 4 {n} 1 1 -"));
    f.line(format!("arg scalar int {}", v.width));
    f.line(format!("arg scalar int {}", v.height));
    for x in [v.camera[0], v.camera[1], v.camera[2], v.view_width, v.view_height] {
        f.line(format!("arg scalar float {x:e}"));
    }
    f.buffer("whole", "Primitive", 64, &primitive_bytes(&s.scene), "", "scene")?;
    f.line(format!("arg scalar int {}", s.scene.len()));
    f.line(format!("arg local Primitive {}", 64 * raytrace::MAX_PRIMITIVES));
    let idx = check_indices(n, size, 19, Cover::Sample);
    let want: Vec<f64> =
        check::par_map(&idx, |p| raytrace::reference_pixel(&s.scene, &v, p % v.width, p / v.width))
            .into_iter()
            .flat_map(|px| px.map(f64::from))
            .collect();
    // The suite's rule for the tracer: channels within 2, mismatches below 0.5 %.
    f.check("pixels", 0, "u8", 4, &idx, &want, [2.0, 0.005])?;
    f.finish()
}

/// Inputs and CPU references for the peers' drivers, or the summary of a peers run.
#[derive(Debug, Parser)]
#[command(name = "peers_io")]
struct Args {
    /// Problem size.
    #[arg(long, default_value = "small", value_name = "small|paper")]
    size: Size,
    /// Folder to write the kernels' inputs and references into (required unless --summarize)
    #[arg(long, value_name = "DIR", required_unless_present = "summarize")]
    out: Option<PathBuf>,
    /// Comma-separated kernels, or `all`.
    #[arg(long, default_value = "all", value_name = "LIST")]
    kernels: String,
    /// Summarize what scripts/peers-run.sh left in DIR instead [default: none]
    #[arg(long, value_name = "DIR")]
    summarize: Option<PathBuf>,
}

fn run() -> Result<(), String> {
    let args = Args::parse();
    if let Some(dir) = &args.summarize {
        return summarize(dir);
    }
    let size = args.size;
    let root = args.out.clone().ok_or("--out DIR is required")?;
    let kernels: Vec<&str> = match args.kernels.as_str() {
        "all" => KERNELS.to_vec(),
        list => list.split(',').collect(),
    };
    // The samples build their kernels on construction: any OpenCL device will do.
    let rt = Runtime::new().map_err(|e| e.to_string())?;
    for k in kernels {
        let started = std::time::Instant::now();
        match k {
            "saxpy" => saxpy(&root, size),
            "binomial" => binomial(&root, size, &rt),
            "gaussian" => gaussian(&root, size, &rt),
            "mandelbrot" => mandelbrot(&root, size, &rt),
            "nbody" => nbody(&root, size, &rt),
            "rap" => rap(&root, size, &rt),
            "bm3d" => bm3d(&root, size, &rt),
            "ray1" => ray(&root, size, &rt, "ray1", raytrace::Scene::Clustered),
            "ray2" => ray(&root, size, &rt, "ray2", raytrace::Scene::Spread),
            other => Err(format!("no peers kernel `{other}`; kernels: {}", KERNELS.join(","))),
        }?;
        println!("peers_io: {k} ({size:?}) written in {:.1} s", started.elapsed().as_secs_f64());
        std::io::stdout().flush().ok();
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("peers_io: {e}");
            ExitCode::from(2)
        }
    }
}
