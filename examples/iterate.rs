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

use clap::Parser;
use hetdsl::Runtime;
use hetdsl_samples::harness::cli::select_devices;
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

/// The iterative benchmarks, each variant side by side and checked against a CPU reference.
#[derive(Debug, Parser)]
#[command(name = "iterate")]
struct Args {
    /// nbody, jacobi, blackscholes, chain, or all.
    bench: String,
    /// Steps per loop [default: the benchmark's own]
    #[arg(long)]
    steps: Option<usize>,
    /// Problem size: tiny, small, large, or a number.
    #[arg(long, default_value = "large")]
    size: String,
    /// Devices: all, cpu, gpu, or positions such as 0,2.
    #[arg(long, default_value = "all")]
    devices: String,
    /// Write the results as JSON [default: none]
    #[arg(long, value_name = "FILE")]
    json: Option<String>,
    /// Seconds a loop may run before it stops early (after at least two steps).
    #[arg(long, default_value_t = 120.0)]
    budget: f64,
    /// Steps of the one-shot loop [default: as --steps]
    #[arg(long)]
    oneshot_steps: Option<usize>,
    /// Comma-separated variants: single, oneshot, session, opencl3 [default: all of them]
    #[arg(long)]
    variants: Option<String>,
    /// Submit session launches (queued where a relaunch replays its split) instead of running
    /// each to its end; a step after the first then counts the mean of those steps.
    #[arg(long)]
    submit: bool,
}

fn run() -> Result<bool, String> {
    let args = Args::parse();
    // RUST_LOG=hetdsl=debug shows, among others, the host's time per queued launch.
    hetdsl_samples::harness::init_tracing();
    let benches: Vec<&str> = match args.bench.as_str() {
        "all" => NAMES.to_vec(),
        name if NAMES.contains(&name) => {
            vec![NAMES[NAMES.iter().position(|n| *n == name).unwrap_or(0)]]
        }
        other => return Err(format!("unknown benchmark `{other}`: {} or all", NAMES.join(", "))),
    };
    let positive = |name: &str, v: Option<usize>| match v {
        Some(0) => Err(format!("`--{name} 0`: not a positive count")),
        v => Ok(v),
    };
    let scale: Scale = args.size.parse()?;
    if !args.budget.is_finite() || args.budget <= 0.0 {
        return Err(format!("`--budget {}`: not a positive number", args.budget));
    }
    let budget_seconds = args.budget;
    let variants: Vec<String> =
        args.variants.as_deref().map_or(VARIANTS.iter().map(|v| v.to_string()).collect(), |v| {
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
    let devices = select_devices(&args.devices, &found)?;
    let cfg = Config {
        scale,
        steps: positive("steps", args.steps)?,
        devices,
        budget_seconds,
        submit: args.submit,
        oneshot_steps: positive("oneshot-steps", args.oneshot_steps)?,
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
        if let Some(path) = &args.json {
            let text = serde_json::to_string_pretty(&results).map_err(|e| e.to_string())?;
            std::fs::write(path, text).map_err(|e| format!("{path}: {e}"))?;
        }
    }
    if let Some(path) = &args.json {
        println!("wrote {path}");
    }
    Ok(correct)
}
