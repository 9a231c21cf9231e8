//! Lists the devices hetdsl sees (every OpenCL platform, after `HETDSL_DEVICES`), with the
//! figures the balancers start from. Exits with status 2 and the error when there are none.
//!
//! `cargo run --example devices`

use clap::Parser;
use hetdsl::occupancy::nominal_gflops;
use hetdsl::Runtime;
use std::process::ExitCode;

/// Lists the devices hetdsl sees (after `HETDSL_DEVICES`), with the figures the balancers start
/// from.
#[derive(Debug, Parser)]
#[command(name = "devices")]
struct Cli {}

fn main() -> ExitCode {
    Cli::parse();
    let rt = match Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    for d in rt.devices() {
        println!(
            "{}: {} | {} | {:?} | {} CUs @ {} MHz | {:.0} GFLOP/s nominal | {} MiB global, {} KiB local, max alloc {} MiB{}",
            d.index,
            d.name,
            d.platform,
            d.kind,
            d.compute_units,
            d.clock_mhz,
            nominal_gflops(&d),
            d.global_mem_bytes >> 20,
            d.local_mem_bytes >> 10,
            d.max_alloc_bytes >> 20,
            d.nvidia
                .as_ref()
                .map(|nv| format!(" | CC {}.{}", nv.compute_capability.0, nv.compute_capability.1))
                .unwrap_or_default()
        );
    }
    ExitCode::SUCCESS
}
