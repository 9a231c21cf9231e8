//! An iterative computation whose data stays on the devices: `y = a·x + y`, `steps` times, in
//! one session. Only the first launch moves `x` and `y` to the devices; later launches move
//! nothing, and the result comes home once at the end. Verifies against a CPU loop and exits
//! non-zero on a wrong result.
//!
//! `cargo run --release --example session_saxpy -- [N] [STEPS]`

use hetdsl::{KernelSource, Pattern, Runtime};
use std::process::ExitCode;

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("session_saxpy: {e}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<bool, Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().map_or(Ok(1 << 20), |s| s.parse())?;
    let steps: usize = args.next().map_or(Ok(20), |s| s.parse())?;
    if n == 0 || !n.is_multiple_of(256) {
        return Err("N must be a positive multiple of 256".into());
    }
    let rt = Runtime::new()?;
    let source = KernelSource::from_file(hetdsl_samples::kernel_path("saxpy.cl"), &[])?;
    let program = rt.program(&source)?;

    let a = 0.5f32;
    let x0: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.001).collect();
    let y0: Vec<f32> = (0..n).map(|i| (i % 77) as f32).collect();

    // The session keeps each device's queues, kernel and buffers between launches.
    let session = program.session()?;
    let x = session.buffer_from(&x0)?;
    let mut y = session.buffer_from(&y0)?;
    for step in 0..steps {
        let report = session
            .launch("saxpy")
            .global(&[n])
            .local(&[256])
            .scalar(a)
            .input(&x, Pattern::ONE_TO_ONE)
            .inout(&mut y, Pattern::ONE_TO_ONE)
            .run()?;
        let m = report.moved();
        println!(
            "step {step:2}: {:8.3} ms, moved {} B to devices, {} B between them",
            report.roi_seconds * 1e3,
            m.host_to_device,
            m.device_to_device
        );
    }
    let got = y.to_vec()?; // the only trip home

    let mut want = y0;
    for _ in 0..steps {
        for (y, x) in want.iter_mut().zip(&x0) {
            *y += a * x;
        }
    }
    let bad = got.iter().zip(&want).filter(|(g, w)| (*g - *w).abs() > 1e-3 * (1.0 + w.abs()));
    let bad = bad.count();
    println!("{n} elements, {steps} steps: {bad} wrong");
    Ok(bad == 0)
}
