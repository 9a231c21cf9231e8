//! How fast a range's data moves between rank 0 and another rank: one kernel over 2^k
//! work-items, the whole range run by rank 1 (a static split across ranks, rank 0 given
//! nothing). `saxpy`: rank 0 sends `x` and `y` (4 bytes each per item) and receives `y` back;
//! `image`: a Mandelbrot image of few iterations, nothing sent and 4 bytes per item back (the
//! output path alone). Everything of the run that is not rank 1's node running the range (its
//! compute and set-up, as it timed them) is the data's path: orders, the inputs out, the
//! outputs back and in the caller's buffer. `--rank 0` gives the range to rank 0's own node
//! instead (the data then moves between threads of rank 0).
//!
//! ```text
//! cargo build --release -p hetdsl-mpi --features mpi --example mpi_transfer
//! mpirun -n 2 --oversubscribe target/release/examples/mpi_transfer [saxpy|image] [--log2 26] [--reps 5] [--rank 1]
//! ```
//!
//! Prints, per run and as the median: the run's ROI, rank 1's node time, the rest (the path)
//! and the bytes moved each way over it in GB/s. Exit status 0 when every output is right.

use std::process::ExitCode;

use hetdsl::balance::Static;
use hetdsl::{KernelSource, Pattern, Program, Runtime};
use hetdsl_mpi::{reference, Cluster, ClusterReport};

/// A run's report and, on rank 0, what was wrong with its outputs.
type Ran = hetdsl::Result<(ClusterReport, Option<String>)>;

fn main() -> ExitCode {
    let cluster = Cluster::init().unwrap_or_else(|e| {
        eprintln!("mpi_transfer: {e}");
        std::process::exit(2)
    });
    let (mut log2, mut reps, mut kernel, mut to) = (26u32, 5usize, "saxpy".to_string(), 1usize);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "saxpy" || a == "image" {
            kernel = a;
            continue;
        }
        let value = args.next().and_then(|v| v.parse::<usize>().ok());
        match (a.as_str(), value) {
            ("--log2", Some(v)) if (12..=29).contains(&v) => log2 = v as u32,
            ("--reps", Some(v)) if v > 0 => reps = v,
            ("--rank", Some(v)) if v < 2 => to = v,
            _ => {
                eprintln!(
                    "usage: mpi_transfer [saxpy|image] [--log2 12..29] [--reps N] [--rank 0|1]"
                );
                cluster.abort(2)
            }
        }
    }
    if cluster.size() != 2 {
        eprintln!("mpi_transfer: run it as two ranks (mpirun -n 2)");
        cluster.abort(2);
    }
    let source =
        KernelSource::from_text("cluster_tests.cl", include_str!("../kernels/cluster_tests.cl"));
    let program = match Runtime::new().and_then(|rt| rt.program(&source)) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("rank {}: {e}", cluster.rank());
            cluster.abort(2)
        }
    };
    let root = cluster.rank() == 0;
    let mut ok = true;
    let mut rates = Vec::new();
    for rep in 0..reps {
        let ran = match kernel.as_str() {
            "saxpy" => saxpy(&cluster, &program, 1 << log2, to),
            _ => image(&cluster, &program, 1 << log2, to),
        };
        let report = match ran {
            Ok((r, None)) => r,
            Ok((_, Some(w))) => {
                eprintln!("run {rep}: WRONG: {w}");
                ok = false;
                break;
            }
            Err(e) => {
                eprintln!("rank {}: {e}", cluster.rank());
                ok = false;
                break;
            }
        };
        if !root {
            continue;
        }
        let ran = &report.ranks[to];
        let node = ran.compute_seconds + ran.setup_seconds;
        let path = report.roi_seconds - node;
        let bytes = (ran.bytes_sent + ran.bytes_received) as f64;
        println!(
            "run {rep}: roi {:.3} s, rank {to}'s node {node:.3} s, path {path:.3} s: {} MB out, \
             {} MB back, {:.2} GB/s",
            report.roi_seconds,
            ran.bytes_sent >> 20,
            ran.bytes_received >> 20,
            bytes / path / 1e9
        );
        rates.push(bytes / path / 1e9);
    }
    if root && !rates.is_empty() {
        rates.sort_by(f64::total_cmp);
        println!("median over {} runs: {:.2} GB/s", rates.len(), rates[rates.len() / 2]);
    }
    if cluster.all_agree(ok) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Every range to rank `to`.
fn only(to: usize) -> Box<Static> {
    Box::new(Static::with_weights(if to == 0 { vec![1.0, 0.0] } else { vec![0.0, 1.0] }))
}

fn saxpy(cluster: &Cluster, program: &Program, n: usize, to: usize) -> Ran {
    let root = cluster.rank() == 0;
    let (x, y0) = reference::saxpy_inputs(n, root);
    let mut y = y0.clone();
    let report = cluster
        .launch(program, "saxpy")
        .global(&[n])
        .local(&[256])
        .balancer(only(to))
        .scalar(2.5f32)
        .input(&x, Pattern::ONE_TO_ONE)
        .inout(&mut y, Pattern::ONE_TO_ONE)
        .run()?;
    Ok((report, reference::saxpy_mismatch(2.5, &x, &y0, &y)))
}

fn image(cluster: &Cluster, program: &Program, n: usize, to: usize) -> Ran {
    let width = 1usize << (n.trailing_zeros() / 2);
    let (height, max) = (n / width, 4u32);
    let (left, top, step) = (-2.0f32, 1.0f32, 2.0f32 / height as f32);
    // Written through beforehand, as a buffer used again is: the path, not the first touch of
    // fresh memory, is timed (and a pixel never written fails the check).
    let mut counts = vec![u32::MAX; if cluster.rank() == 0 { n } else { 0 }];
    let report = cluster
        .launch(program, "mandelbrot")
        .global(&[width, height])
        .local(&[16, 4])
        .balancer(only(to))
        .output(&mut counts, Pattern::ONE_TO_ONE)
        .scalar(left)
        .scalar(top)
        .scalar(step)
        .scalar(max)
        .run()?;
    let rows = (0..height).step_by(7).filter(|_| !counts.is_empty());
    Ok((report, reference::mandelbrot_mismatch(&counts, width, rows, (left, top, step), max)))
}
