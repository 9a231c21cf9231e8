//! The body of each sample's stand-alone example (`cargo run --release --example mandelbrot`):
//! run the sample once, co-executed on the chosen devices, print the run's report and the
//! check against the CPU reference, and save the output image where the sample makes one.
//!
//! Flags: `--size small|paper` (small), `--balancer NAME` (the kernel's declared one: Sigmoid),
//! `--devices all|cpu|gpu|0,2` (all), `--out FILE.png` (`<sample>.png`).

use std::path::PathBuf;
use std::process::ExitCode;

use hetdsl::Runtime;

use crate::harness::cli::{parse_flags, select_devices};
use crate::samples::{self, Size};

/// Run the example of sample `name` with the process's arguments.
pub fn main_for(name: &str) -> ExitCode {
    match run(name, std::env::args().skip(1)) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("{name}: {e}");
            ExitCode::from(2)
        }
    }
}

/// Returns whether the output matched the reference.
pub fn run(name: &str, args: impl Iterator<Item = String>) -> Result<bool, String> {
    let flags = parse_flags(args, &["size", "balancer", "devices", "out"])?;
    let size: Size = flags.get("size").map_or(Ok(Size::Small), |s| s.parse())?;
    let balancer =
        flags.get("balancer").map(|b| crate::harness::balancers::parse(b)).transpose()?;
    let runtime = Runtime::new().map_err(|e| e.to_string())?;
    let mut sample = samples::create(name, size, &runtime)?;
    let devices =
        select_devices(flags.get("devices").map_or("all", String::as_str), &sample.devices())?;

    println!("{name}: {}", sample.describe());
    let report = sample.run(Some(&devices), balancer, None).map_err(|e| e.to_string())?;
    println!("{}", report.table());
    let verdict = sample.verify();
    println!("check against the CPU reference: {verdict}");
    if let Some((width, height, pixels)) = sample.image() {
        let path =
            flags.get("out").map_or_else(|| PathBuf::from(format!("{name}.png")), PathBuf::from);
        crate::harness::png::write_rgba(&path, width, height, &pixels)
            .map_err(|e| format!("writing {}: {e}", path.display()))?;
        println!("wrote {} ({width}x{height})", path.display());
    }
    Ok(verdict.correct)
}
