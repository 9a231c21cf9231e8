//! The iterative benchmarks: kernels launched many times over the same data, measured side by
//! side as (a) a session on each device alone (the fastest is the baseline), (b) one-shot
//! `Launch::run` per launch, (c) a session over every device, and for jacobi (d) the same
//! kernel enqueued by hand with opencl3. Every variant is checked against a CPU reference.
//!
//! `cargo run --release --example iterate -- <nbody|jacobi|blackscholes|chain|all>
//! [--steps N] [--size tiny|small|large|N] [--devices all|cpu|gpu|0,2] [--json FILE]
//! [--budget SECONDS] [--oneshot-steps N] [--variants single,oneshot,session,opencl3]`
//!
//! `--size` defaults to `large` (two H200s and a many-core CPU); use `small` on PoCL.
//! `--budget` (default 120) stops a loop early, after at least two steps, once it has run that
//! long (the steps run are reported and checked). Exits 1 when a check fails, 2 on bad usage.

use std::process::ExitCode;

use hetdsl::Runtime;
use hetdsl_samples::harness::cli::{parse_flags, select_devices};
use hetdsl_samples::iterate::{self, Config, Scale, NAMES, VARIANTS};

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("iterate: {e}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<bool, String> {
    let mut args = std::env::args().skip(1);
    let which =
        args.next().ok_or_else(|| format!("name a benchmark: {} or all", NAMES.join(", ")))?;
    let benches: Vec<&str> = match which.as_str() {
        "all" => NAMES.to_vec(),
        name if NAMES.contains(&name) => {
            vec![NAMES[NAMES.iter().position(|n| *n == name).unwrap_or(0)]]
        }
        other => return Err(format!("unknown benchmark `{other}`: {} or all", NAMES.join(", "))),
    };
    let known = ["steps", "size", "devices", "json", "budget", "oneshot-steps", "variants"];
    let flags = parse_flags(args, &known)?;
    let number = |name: &str| -> Result<Option<usize>, String> {
        flags
            .get(name)
            .map(|v| {
                v.parse::<usize>()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or(format!("`--{name} {v}`: not a positive count"))
            })
            .transpose()
    };
    let scale: Scale = flags.get("size").map_or(Ok(Scale::Large), |s| s.parse())?;
    let budget_seconds = match flags.get("budget") {
        Some(b) => b
            .parse::<f64>()
            .ok()
            .filter(|b| *b > 0.0)
            .ok_or(format!("`--budget {b}`: not a positive number"))?,
        None => 120.0,
    };
    let variants: Vec<String> =
        flags.get("variants").map_or(VARIANTS.iter().map(|v| v.to_string()).collect(), |v| {
            v.split(',').map(|s| s.trim().to_string()).collect()
        });
    if let Some(bad) = variants.iter().find(|v| !VARIANTS.contains(&v.as_str())) {
        return Err(format!("unknown variant `{bad}`: {}", VARIANTS.join(", ")));
    }

    let runtime = Runtime::new().map_err(|e| e.to_string())?;
    let program = iterate::program(&runtime).map_err(|e| e.to_string())?;
    let found = program.devices();
    for (i, d) in found.iter().enumerate() {
        println!("device {i}: {} [{:?}, {} compute units]", d.name, d.kind, d.compute_units);
    }
    let devices = select_devices(flags.get("devices").map_or("all", String::as_str), &found)?;
    let cfg = Config {
        scale,
        steps: number("steps")?,
        devices,
        budget_seconds,
        oneshot_steps: number("oneshot-steps")?,
        variants,
    };

    let mut results = Vec::new();
    let mut correct = true;
    for name in benches {
        let mut bench = iterate::create(name, cfg.scale, cfg.steps)?;
        let result = iterate::run_bench(bench.as_mut(), &program, &cfg);
        iterate::print_result(&result);
        correct &= result.variants.iter().all(|v| v.verdict.correct);
        results.push(result);
        // After every benchmark, so that a run cut short keeps what it measured.
        if let Some(path) = flags.get("json") {
            let text = serde_json::to_string_pretty(&results).map_err(|e| e.to_string())?;
            std::fs::write(path, text).map_err(|e| format!("{path}: {e}"))?;
        }
    }
    if let Some(path) = flags.get("json") {
        println!("wrote {path}");
    }
    Ok(correct)
}
