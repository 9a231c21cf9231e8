//! The smallest co-executed kernel: y = a·x + y on every device found, written against the
//! runtime API. Verifies against a CPU loop, prints the report, exits non-zero on a wrong result.
//!
//! `cargo run --release --example saxpy -- [N] [--balancer SPEC] [--json FILE] [--calls K]
//! [--no-keep]`: with `--calls`, the same call K times, each one's ROI and wall time printed
//! (the program's devices keep their buffers between calls unless `--no-keep`)
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
    /// Calls of the same launch, each timed and verified [default: 1]
    #[arg(long, default_value_t = 1)]
    calls: usize,
    /// Free the devices' buffers after every call instead of keeping them for the next
    #[arg(long)]
    no_keep: bool,
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
    let Cli { n, balancer, json, calls, no_keep } = cli;
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

    program.keep_buffers(!no_keep);
    let a = 2.5f32;
    let x: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.001).collect();
    let y0: Vec<f32> = (0..n).map(|i| (i % 77) as f32).collect();
    let mut y = y0.clone();
    let mut wrong = 0;
    for call in 0..calls.max(1) {
        y.copy_from_slice(&y0);
        let t = std::time::Instant::now();
        let report = program
            .launch("saxpy")
            .global(&[n])
            .local(&[lws])
            .scalar(a)
            .input(&x, Pattern::ONE_TO_ONE)
            .inout(&mut y, Pattern::ONE_TO_ONE)
            .balancer(
                balancer.clone().map_or_else(hetdsl::balance::default_balancer, |b| b.build()),
            )
            .run()?;
        let wall = t.elapsed().as_secs_f64();
        wrong += count_wrong(a, &x, &y0, &y);
        if call == 0 || call + 1 == calls {
            print_report(&report);
        }
        // x in, y in and out: 12 bytes per element between the host and the devices.
        let bytes = 12.0 * n as f64;
        println!(
            "call {call}: ROI {:.3} ms ({:.1} GB/s end to end), run() {:.3} ms ({:.1} GB/s), \
             set-up outside the ROI {:.1} % of it{}",
            report.roi_seconds * 1e3,
            bytes / report.roi_seconds / 1e9,
            wall * 1e3,
            bytes / wall / 1e9,
            (wall - report.roi_seconds) / report.roi_seconds * 100.0,
            if no_keep { ", buffers freed after each call" } else { "" }
        );
        if let Some(path) = json.as_ref().filter(|_| call + 1 == calls.max(1)) {
            std::fs::write(path, report.to_json())?;
        }
    }
    if wrong == 0 {
        println!(
            "verified: {n} elements equal the CPU reference in each of {} calls",
            calls.max(1)
        );
        Ok(true)
    } else {
        println!(
            "WRONG: {wrong} elements differ from the CPU reference over {} calls",
            calls.max(1)
        );
        Ok(false)
    }
}

fn print_report(report: &hetdsl::Report) {
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
    let mut idle = report.device_idle_gaps();
    if !idle.is_empty() {
        idle.sort_by(f64::total_cmp);
        println!(
            "device idle between kernels: median {:.1} µs, 90th percentile {:.1} µs over {} packages",
            idle[idle.len() / 2] * 1e6,
            idle[idle.len() * 9 / 10] * 1e6,
            idle.len()
        );
    }
}

/// Elements of `y` that differ from a·x + y0 computed here. The reference computes the same
/// single-precision expression; FMA contraction on a device may differ in the last bit, hence
/// the relative tolerance.
fn count_wrong(a: f32, x: &[f32], y0: &[f32], y: &[f32]) -> usize {
    y.iter()
        .zip(x.iter().zip(y0))
        .filter(|(got, (x, y0))| {
            let want = a * **x + **y0;
            (**got - want).abs() > 1e-6 * want.abs().max(1.0)
        })
        .count()
}
