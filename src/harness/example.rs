//! The body of each sample's stand-alone example (`cargo run --release --example mandelbrot`):
//! run the sample once, co-executed on the chosen devices, print the run's report and the
//! check against the CPU reference, and save the output image where the sample makes one.
//!
//! Flags (`--help` lists them with their defaults): `--size small|paper`, `--balancer SPEC`,
//! `--devices all|cpu|gpu|0,2`, `--out FILE.png`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, FromArgMatches};
use hetdsl::Runtime;

use crate::harness::cli::{select_devices, SampleFlags};
use crate::samples::{self, Size};

// The command line of a sample's example (no doc comment: clap would take it for the about).
#[derive(Debug, clap::Args)]
pub struct ExampleArgs {
    #[command(flatten)]
    pub flags: SampleFlags,
    /// Where the output image goes, for the samples that make one [default: the sample's name with .png]
    #[arg(long, value_name = "FILE.png")]
    pub out: Option<PathBuf>,
}

/// Parse the process's arguments as command `name`'s: `--help` prints every flag with its
/// default and exits, a mistake prints clap's message and exits with status 2.
pub fn parse_args<A: Args + FromArgMatches>(name: &'static str, about: &'static str) -> A {
    let command = A::augment_args(clap::Command::new(name).about(about));
    let matches = command.get_matches();
    A::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
}

const ABOUT: &str =
    "Runs one sample co-executed on the chosen devices and checks it against its CPU reference";

/// Run the example of sample `name` with the process's arguments.
pub fn main_for(name: &'static str) -> ExitCode {
    let args: ExampleArgs = parse_args(name, ABOUT);
    crate::harness::init_tracing();
    match run(name, &args.flags, args.out) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("{name}: {e}");
            ExitCode::from(2)
        }
    }
}

/// Returns whether the output matched the reference.
pub fn run(name: &str, flags: &SampleFlags, out: Option<PathBuf>) -> Result<bool, String> {
    let size: Size = flags.size;
    let balancer = flags.balancer.as_ref().map(|b| b.build());
    let runtime = Runtime::new().map_err(|e| e.to_string())?;
    let mut sample = samples::create(name, size, &runtime)?;
    let devices = select_devices(&flags.devices, &sample.devices())?;

    println!("{name}: {}", sample.describe());
    let report = sample.run(Some(&devices), balancer, None).map_err(|e| e.to_string())?;
    println!("{}", report.table());
    let verdict = sample.verify();
    println!("check against the CPU reference: {verdict}");
    if let Some((width, height, pixels)) = sample.image() {
        let path = out.unwrap_or_else(|| PathBuf::from(format!("{name}.png")));
        crate::harness::png::write_rgba(&path, width, height, &pixels)
            .map_err(|e| format!("writing {}: {e}", path.display()))?;
        println!("wrote {} ({width}x{height})", path.display());
    }
    Ok(verdict.correct)
}
