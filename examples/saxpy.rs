//! The smallest co-executed kernel: y = a·x + y on every device found, written against the
//! runtime API. Verifies against a CPU loop, prints the report, exits non-zero on a wrong result.
//!
//! `cargo run --release --example saxpy -- [N] [--balancer SPEC] [--json FILE]`
//! (`HETDSL_WAIT=poll` to poll kernel completion instead of blocking; see `Launch::wait`)

use hetdsl::{KernelSource, Pattern, Runtime};
use std::process::ExitCode;

use clap::Parser;

/// y = a·x + y co-executed on every device found, checked against a CPU loop.
#[derive(Debug, Parser)]
#[command(name = "saxpy")]
struct Cli {
    /// Elements, a positive multiple of 256.
    #[arg(default_value_t = 1 << 24)]
    n: usize,
    /// Balancer spec (`sigmoid`, `dynamic:64`, ...) [default: sigmoid]
    #[arg(long, value_name = "SPEC")]
    balancer: Option<hetdsl::balance::BalancerSpec>,
    /// The run's report as JSON [default: none]
    #[arg(long, value_name = "FILE")]
    json: Option<String>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    hetdsl_samples::harness::init_tracing();
    match run(cli) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("saxpy: {e}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> Result<bool, Box<dyn std::error::Error>> {
    let Cli { n, balancer, json } = cli;
    let lws = 256;
    if n == 0 || !n.is_multiple_of(lws) {
        return Err(format!("N must be a positive multiple of {lws}").into());
    }

    let rt = Runtime::new()?;
    for d in rt.devices() {
        println!(
            "device {}: {} [{:?}, {} compute units]",
            d.index, d.name, d.kind, d.compute_units
        );
    }
    let source = KernelSource::from_file(hetdsl_samples::kernel_path("saxpy.cl"), &[])?;
    let program = rt.program(&source)?;

    let a = 2.5f32;
    let x: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.001).collect();
    let y0: Vec<f32> = (0..n).map(|i| (i % 77) as f32).collect();
    let mut y = y0.clone();
    let report = program
        .launch("saxpy")
        .global(&[n])
        .local(&[lws])
        .scalar(a)
        .input(&x, Pattern::ONE_TO_ONE)
        .inout(&mut y, Pattern::ONE_TO_ONE)
        .balancer(balancer.map_or_else(hetdsl::balance::default_balancer, |b| b.build()))
        .run()?;
    println!("{}", report.table());
    for d in &report.devices {
        if let Some(rate) = report.read_rate(d.index) {
            println!(
                "device {} read-back: {:.2} GB/s of device transfer time",
                d.index,
                rate / 1e9
            );
        }
    }
    if let Some(o) = report.host_overhead_per_package() {
        let mut each = report.host_overheads();
        each.sort_by(f64::total_cmp);
        println!(
            "host overhead per package: mean {:.1} µs, median {:.1} µs over {} packages ({:?} wait)",
            o * 1e6,
            each[each.len() / 2] * 1e6,
            each.len(),
            hetdsl::WaitMode::from_env()
        );
    }

    // The reference computes the same single-precision expression; FMA contraction on a device
    // may differ in the last bit, hence the relative tolerance.
    let wrong = y
        .iter()
        .zip(x.iter().zip(&y0))
        .filter(|(got, (x, y0))| {
            let want = a * **x + **y0;
            (**got - want).abs() > 1e-6 * want.abs().max(1.0)
        })
        .count();
    if let Some(path) = json {
        std::fs::write(&path, report.to_json())?;
    }
    if wrong == 0 {
        println!("verified: {n} elements equal the CPU reference");
        Ok(true)
    } else {
        println!("WRONG: {wrong} of {n} elements differ from the CPU reference");
        Ok(false)
    }
}
