//! A rank process that dies in the middle of a launch (it exits while running its first
//! range) must not leave the others waiting: Open MPI's `mpirun` ends the whole job with a
//! failure. Run by `.ci/mpi.sh` under `mpirun -n 3`, which checks that mpirun itself ends the
//! job with a non-zero status well before the step's timeout. Run alone it simply succeeds.

mod common;

use std::process::ExitCode;

use hetdsl::Pattern;
use hetdsl_mpi::Cluster;

fn main() -> ExitCode {
    let Ok(cluster) = Cluster::init() else { return ExitCode::FAILURE };
    let program =
        common::program(&cluster, "cluster_tests.cl", include_str!("../kernels/cluster_tests.cl"));
    let n = 1 << 16;
    let (me, last) = (cluster.rank(), cluster.size() - 1);
    let x = vec![1f32; n];
    let mut y = vec![1f32; n];
    let result = cluster
        .launch(&program, "saxpy")
        .global(&[n])
        .local(&[64])
        .scalar(2f32)
        .input(&x, Pattern::ONE_TO_ONE)
        .inout(&mut y, Pattern::ONE_TO_ONE)
        // The node's balancer is made when a range starts: the last rank dies there.
        .node_balancer(move || {
            if me == last && last > 0 {
                eprintln!("rank {me}: exiting in the middle of the launch, as a crash would");
                std::process::exit(3);
            }
            hetdsl::balance::default_balancer()
        })
        .run();
    println!("rank {me}: the launch returned {:?}", result.map(|_| ()));
    ExitCode::SUCCESS
}
