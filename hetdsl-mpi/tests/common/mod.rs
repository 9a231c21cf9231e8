//! What the MPI test programs share: their kernels' program, and the loop that runs named
//! cases on every rank, with a time limit each, and prints one verdict the ranks agree on.

// Each test program includes this module and uses part of it.
#![allow(dead_code)]

use std::process::ExitCode;
use std::time::Duration;

use hetdsl::{KernelSource, Pattern, Program, Runtime};
use hetdsl_mpi::{Cluster, ClusterLaunch};

/// A case still running after this long is taken as a hang: the rank says so and exits with a
/// failure, which makes `mpirun` end the whole job instead of leaving it waiting.
pub const CASE_LIMIT: Duration = Duration::from_secs(60);

pub type Outcome = Result<(), String>;
pub type Case = fn(&Cluster, &Program) -> Outcome;

/// `kernels/<file>` built for every device of this rank; the job ends if it does not build.
pub fn program(cluster: &Cluster, file: &str, text: &str) -> Program {
    let source = KernelSource::from_text(file, text);
    match Runtime::new().and_then(|rt| rt.program(&source)) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("rank {}: {e}", cluster.rank());
            cluster.abort(2)
        }
    }
}

/// The edge cases' kernels (`kernels/edge_tests.cl`).
pub fn edge_program(cluster: &Cluster) -> Program {
    program(cluster, "edge_tests.cl", include_str!("../../kernels/edge_tests.cl"))
}

/// Runs each case whose name holds the value of the environment variable `only` (all when it
/// is unset) on every rank, through `run`; every rank agrees on each verdict, rank 0 prints
/// them as cargo's harness does, and the exit status is the same everywhere.
pub fn run_cases(
    cluster: &Cluster,
    cases: Vec<(&str, Case)>,
    only: &str,
    run: impl Fn(Case) -> Outcome,
) -> ExitCode {
    let only = std::env::var(only).unwrap_or_default();
    let cases: Vec<_> = cases.into_iter().filter(|(name, _)| name.contains(&only)).collect();
    let (total, mut failed) = (cases.len(), 0);
    for (name, case) in cases {
        let outcome = within_limit(name, cluster.rank(), || run(case));
        let ok = cluster.all_agree(outcome.is_ok());
        match &outcome {
            Ok(()) if cluster.rank() == 0 => {
                println!("test {name} ... {}", if ok { "ok" } else { "FAILED elsewhere" })
            }
            Ok(()) => {}
            Err(e) => println!("test {name} ... FAILED on rank {}: {e}", cluster.rank()),
        }
        failed += usize::from(!ok);
    }
    if cluster.rank() == 0 {
        let verdict = if failed == 0 { "ok" } else { "FAILED" };
        println!("test result: {verdict}. {} passed; {failed} failed", total - failed);
    }
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Runs `case`, ending the process with a failure if it outlives [`CASE_LIMIT`].
pub fn within_limit(name: &str, rank: usize, case: impl FnOnce() -> Outcome) -> Outcome {
    let (done, watch) = std::sync::mpsc::channel::<()>();
    let name = name.to_string();
    std::thread::spawn(move || {
        if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = watch.recv_timeout(CASE_LIMIT) {
            println!("test {name} ... FAILED on rank {rank}: still running after {CASE_LIMIT:?}");
            std::process::exit(124);
        }
    });
    let outcome = case();
    let _ = done.send(());
    outcome
}

/// A launch of `kernel` (`spread4`'s parameters) over `n` items in groups of 64: `x` in (1:1),
/// `out` out (4:1), `salt` its scalar.
pub fn spread4_launch<'a>(
    cluster: &'a Cluster,
    program: &'a Program,
    kernel: &str,
    n: usize,
    (x, out): (&'a [u32], &'a mut [u32]),
    salt: u32,
) -> ClusterLaunch<'a> {
    cluster
        .launch(program, kernel)
        .global(&[n])
        .local(&[64])
        .input(x, Pattern::ONE_TO_ONE)
        .output(out, Pattern::ratio(4, 1).unwrap())
        .scalar(salt)
}

/// `spread4` on the CPU: four words from each input, salted.
pub fn spread4_cpu(x: &[u32], salt: u32) -> Vec<u32> {
    let mut out = Vec::with_capacity(4 * x.len());
    for &v in x {
        let v = v.wrapping_mul(2654435761).wrapping_add(salt);
        for k in 0..4u32 {
            out.push(v ^ k.wrapping_mul(40503));
        }
    }
    out
}
