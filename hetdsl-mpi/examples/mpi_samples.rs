//! Three kernels co-executed across MPI ranks (one per node), each checked on rank 0 against a
//! CPU reference: saxpy (sliced input and inout), Mandelbrot (2-D, compute-bound, irregular)
//! and `weigh` (a `whole` input broadcast once). Prints the cluster report on rank 0.
//!
//! ```text
//! cargo build --release -p hetdsl-mpi --features mpi --example mpi_samples
//! mpirun -n 2 --hostfile hosts target/release/examples/mpi_samples [saxpy|mandelbrot|weigh|all] [--scale S] [--json FILE]
//! ```
//!
//! `--scale` multiplies the problem sizes (default 1: a few seconds on two CPU devices).
//! Each rank uses the devices `HETDSL_DEVICES` gives it. Exit status: 0 when every output is
//! right on rank 0 (the same on every rank), 1 otherwise.

use std::process::ExitCode;

use hetdsl::{KernelSource, Pattern, Program, Runtime};
use hetdsl_mpi::{reference, Cluster, ClusterReport};

fn main() -> ExitCode {
    let cluster = Cluster::init().unwrap_or_else(|e| {
        eprintln!("mpi_samples: {e}");
        std::process::exit(2)
    });
    let mut which = "all".to_string();
    let mut scale = 1usize;
    let mut json = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--scale" => scale = args.next().and_then(|s| s.parse().ok()).unwrap_or(0),
            "--json" => json = args.next(),
            s => which = s.to_string(),
        }
    }
    if scale == 0 || !["all", "saxpy", "mandelbrot", "weigh"].contains(&which.as_str()) {
        eprintln!("usage: mpi_samples [saxpy|mandelbrot|weigh|all] [--scale S] [--json FILE]");
        cluster.abort(2);
    }
    let program = match program() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("rank {}: {e}", cluster.rank());
            cluster.abort(2)
        }
    };
    if cluster.rank() == 0 {
        println!("{} ranks", cluster.size());
    }
    for d in program.devices() {
        println!(
            "rank {} @ {}: device {} {} [{:?}]",
            cluster.rank(),
            cluster.host(),
            d.index,
            d.name,
            d.kind
        );
    }
    let mut reports = Vec::new();
    let mut ok = true;
    for name in ["saxpy", "mandelbrot", "weigh"] {
        if which != "all" && which != name {
            continue;
        }
        let result = match name {
            "saxpy" => saxpy(&cluster, &program, scale),
            "mandelbrot" => mandelbrot(&cluster, &program, scale),
            _ => weigh(&cluster, &program, scale),
        };
        match result {
            Ok((report, verdict)) => {
                if cluster.rank() == 0 {
                    print!("{}", report.table());
                    println!("{name}: {verdict}\n");
                    ok &= verdict == "correct";
                    reports.push(report);
                }
            }
            Err(e) => {
                eprintln!("rank {}: {name}: {e}", cluster.rank());
                ok = false;
            }
        }
    }
    if let (Some(path), 0) = (json, cluster.rank()) {
        let text = serde_json::to_string_pretty(&reports).unwrap_or_default();
        if let Err(e) = std::fs::write(&path, text) {
            eprintln!("{path}: {e}");
        }
    }
    if cluster.all_agree(ok) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn program() -> hetdsl::Result<Program> {
    let source =
        KernelSource::from_text("cluster_tests.cl", include_str!("../kernels/cluster_tests.cl"));
    Runtime::new()?.program(&source)
}

type Outcome = hetdsl::Result<(ClusterReport, String)>;

fn verdict(wrong: Option<String>) -> String {
    wrong.unwrap_or_else(|| "correct".into())
}

fn saxpy(cluster: &Cluster, program: &Program, scale: usize) -> Outcome {
    let n = (1 << 22) * scale;
    let root = cluster.rank() == 0;
    let (x, y0) = reference::saxpy_inputs(n, root);
    let mut y = y0.clone();
    let report = cluster
        .launch(program, "saxpy")
        .global(&[n])
        .local(&[256])
        .scalar(2.5f32)
        .input(&x, Pattern::ONE_TO_ONE)
        .inout(&mut y, Pattern::ONE_TO_ONE)
        .run()?;
    let wrong = reference::saxpy_mismatch(2.5, &x, &y0, &y).map(|w| format!("WRONG: {w}"));
    Ok((report, verdict(wrong)))
}

fn mandelbrot(cluster: &Cluster, program: &Program, scale: usize) -> Outcome {
    let (width, height, max) = (2048 * scale, 1024 * scale, 1000u32);
    let (left, top, step) = (-2.0f32, 1.0f32, 2.0f32 / height as f32);
    let mut counts = vec![0u32; if cluster.rank() == 0 { width * height } else { 0 }];
    let report = cluster
        .launch(program, "mandelbrot")
        .global(&[width, height])
        .local(&[16, 4])
        .output(&mut counts, Pattern::ONE_TO_ONE)
        .scalar(left)
        .scalar(top)
        .scalar(step)
        .scalar(max)
        .run()?;
    // Every 16th row against the CPU (the whole image would take the CPU minutes at scale).
    let rows = (0..height).step_by(16).filter(|_| !counts.is_empty());
    let wrong = reference::mandelbrot_mismatch(&counts, width, rows, (left, top, step), max)
        .map(|w| format!("WRONG at {w}"));
    Ok((report, verdict(wrong)))
}

fn weigh(cluster: &Cluster, program: &Program, scale: usize) -> Outcome {
    let (n, t) = ((1 << 20) * scale, 4096usize);
    let root = cluster.rank() == 0;
    let table: Vec<u32> = if root {
        (0..t as u32).map(|j| j.wrapping_mul(2654435761) >> 7).collect()
    } else {
        Vec::new()
    };
    let x: Vec<u32> = if root {
        (0..n as u32).map(|i| i.wrapping_mul(40503) % 1009).collect()
    } else {
        Vec::new()
    };
    let mut out = vec![0u32; if root { n } else { 0 }];
    let report = cluster
        .launch(program, "weigh")
        .global(&[n])
        .local(&[256])
        .input(&table, Pattern::Whole)
        .scalar(t as u32)
        .input(&x, Pattern::ONE_TO_ONE)
        .output(&mut out, Pattern::ONE_TO_ONE)
        .run()?;
    let wrong = (0..out.len())
        .step_by(97)
        .find(|&i| out[i] != reference::weigh(&table, x[i]))
        .map(|i| format!("WRONG at out[{i}] = {}", out[i]));
    Ok((report, verdict(wrong)))
}
