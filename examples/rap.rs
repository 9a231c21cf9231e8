//! The Resource Allocation Problem solved end to end: one co-executed launch per activity
//! (each stage reads the previous stage's row), the final row checked exactly against the
//! sequential dynamic programme. See `hetdsl_samples::samples::rap` and `kernels/rap.cl`.
//! Flags: `--size small|paper --balancer NAME --devices all|cpu|gpu|0,2`.

use std::process::ExitCode;

use clap::Parser;
use hetdsl::Runtime;
use hetdsl_samples::harness::cli::{select_devices, SampleFlags};
use hetdsl_samples::samples::check::all_equal;
use hetdsl_samples::samples::rap::{self, profit_table, RapKernel};
use hetdsl_samples::samples::rng::Rng;
use hetdsl_samples::samples::Size;

/// Solves the Resource Allocation Problem with one co-executed launch per activity, checked
/// against the sequential dynamic programme.
#[derive(Debug, Parser)]
#[command(name = "rap")]
struct Cli {
    #[command(flatten)]
    flags: SampleFlags,
}

fn run(flags: &SampleFlags) -> Result<bool, String> {
    let size: Size = flags.size;
    let (activities, units) = match size {
        Size::Small => (12, 4096),
        Size::Paper => (8, 1 << 17),
    };
    let runtime = Runtime::new().map_err(|e| e.to_string())?;
    // The stage kernel declared with `hetdsl::kernel!` in `samples::rap`, built once.
    let kernel = RapKernel::new(&runtime).map_err(|e| e.to_string())?;
    let devices = select_devices(&flags.devices, &kernel.program().devices())?;

    let mut rng = Rng::new(0x0AA9_0001);
    let profits: Vec<Vec<i32>> =
        (0..activities).map(|_| profit_table(units, 50, &mut rng)).collect();
    let mut best = vec![0i32; units];
    let mut seconds = 0.0;
    for (stage, profit) in profits.iter().enumerate() {
        let balancer = flags.balancer.as_ref().map(|b| b.build());
        let mut next = vec![i32::MIN; units];
        let report =
            rap::run_stage(&kernel, &best, profit, &mut next, Some(&devices), balancer, None)
                .map_err(|e| e.to_string())?;
        seconds += report.roi_seconds;
        let packages: Vec<usize> = report.devices.iter().map(|d| d.packages).collect();
        println!(
            "stage {stage:>2}: ROI {:.3} ms, balance {:.3}, packages {packages:?}",
            report.roi_seconds * 1e3,
            report.balance
        );
        best = next;
    }
    println!(
        "{activities} activities, {units} units: best total profit {} ({:.3} ms of ROI)",
        best[units - 1],
        seconds * 1e3
    );
    let verdict = all_equal("final row", &best, &rap::reference_solve(&profits));
    println!("check against the sequential programme: {}", verdict);
    Ok(verdict.correct)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    hetdsl_samples::harness::init_tracing();
    match run(&cli.flags) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("rap: {e}");
            ExitCode::from(2)
        }
    }
}
