//! A rank that leaves the job on an error of its own, the way a Rust program does (`main`
//! returns its error, which drops its `Cluster` and finalises MPI there), while the other
//! ranks go on to their next launch: they must get an error, not wait for it for ever (Open
//! MPI's finalisation waits for every rank, so before, the whole job hung). Run by
//! `.ci/mpi.sh` under `mpirun -n 3`, which checks that the job ends before its timeout and that
//! every other rank printed its verdict. Run alone it simply succeeds.

mod common;

use std::process::ExitCode;

use hetdsl::{Error, Program};
use hetdsl_mpi::Cluster;

fn main() -> ExitCode {
    let Ok(cluster) = Cluster::init() else { return ExitCode::FAILURE };
    let program = common::edge_program(&cluster);
    let (me, last) = (cluster.rank(), cluster.size() - 1);
    if let Err(e) = launch(&cluster, &program) {
        println!("mpi_left_rank: FAILED on rank {me}: the first launch: {e}");
        return ExitCode::FAILURE;
    }
    if last == 0 {
        return ExitCode::SUCCESS;
    }
    if me == last {
        // What `?` in `main` does: the cluster goes, and the process ends with a failure.
        drop(cluster);
        return ExitCode::FAILURE;
    }
    let began = std::time::Instant::now();
    let second = launch(&cluster, &program);
    let took = began.elapsed();
    let verdict = match second {
        // A rank that left before this launch is known at once from its notice, which says
        // the last step it made (before, every rank waited half a second for the step).
        Err(Error::BadConfig(_)) if took.as_millis() >= 400 => {
            Err(format!("the launch took {took:?} to learn that a rank had left"))
        }
        // The rank that left, or one that already ended after learning it: both are gone.
        Err(Error::BadConfig(m)) if m.contains("left the job") => {
            if cluster.all_agree(true) {
                Err("all_agree said every rank agrees, one of them gone".to_string())
            } else {
                Ok(())
            }
        }
        other => Err(format!("expected to hear that a rank left, got {other:?}")),
    };
    match verdict {
        Ok(()) => {
            println!("mpi_left_rank: rank {me} ok: told that a rank left, in {took:?}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            println!("mpi_left_rank: FAILED on rank {me}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// One launch of `spread4` over every rank, checked on rank 0 against a CPU loop.
fn launch(cluster: &Cluster, program: &Program) -> Result<(), Error> {
    let n = 8 * 64;
    let root = cluster.rank() == 0;
    let x: Vec<u32> = if root { (0..n as u32).collect() } else { Vec::new() };
    let mut out = vec![0u32; if root { 4 * n } else { 0 }];
    common::spread4_launch(cluster, program, "spread4", n, (&x, &mut out), 3).run()?;
    if root && out != common::spread4_cpu(&x, 3) {
        return Err(Error::BadConfig("the outputs differ from the CPU's".into()));
    }
    Ok(())
}
