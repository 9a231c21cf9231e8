//! The ray tracer on its own, both scenes: Ray1 (spheres clustered on the floor) and Ray2
//! (spheres spread over the view), each co-executed on every device, checked against the CPU
//! reference, and saved as `ray1.png` / `ray2.png`. The kernel is declared with `hetdsl::kernel!`
//! as `RayTraceKernel` in `src/samples/raytrace.rs`, with the user struct `Primitive` checked
//! field by field against `kernels/include/raytrace_scene.h`.
//! Flags: `--size small|paper --balancer NAME --devices all|cpu|gpu|0,2`.

use std::process::ExitCode;

use clap::Parser;
use hetdsl_samples::harness::cli::SampleFlags;

/// Runs the ray tracer's two scenes co-executed on the chosen devices, each checked against the
/// CPU reference and saved as `ray1.png` and `ray2.png`.
#[derive(Debug, Parser)]
#[command(name = "raytrace")]
struct Cli {
    #[command(flatten)]
    flags: SampleFlags,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    hetdsl_samples::harness::init_tracing();
    let mut all_correct = true;
    for scene in ["ray1", "ray2"] {
        match hetdsl_samples::harness::example::run(scene, &cli.flags, None) {
            Ok(correct) => all_correct &= correct,
            Err(e) => {
                eprintln!("{scene}: {e}");
                return ExitCode::from(2);
            }
        }
    }
    if all_correct {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
