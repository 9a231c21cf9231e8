//! Every rank returns the same verdict for a launch, under MPI (`.ci/mpi.sh` runs it as three
//! ranks; run alone it is one rank): a run that fails after ranks were dropped or stopped idle
//! is an error on each of them too, an error carries its kind (a kernel missing on one rank is
//! `NoSuchKernel` everywhere, rank 0's refusal of a launch is its kind everywhere), and ranks
//! making different collective calls all get the same error, naming each call.
//! Each case ends with a launch that must run well on every rank, its output checked on rank 0
//! against a plain CPU loop: a rank that went its own way would make it hang or fail.

mod common;

use std::process::ExitCode;

use common::{spread4_cpu, spread4_launch, Case, Outcome};
use hetdsl::{Error, Fault, KernelSource, Program, Runtime};
use hetdsl_mpi::Cluster;

fn main() -> ExitCode {
    let Ok(cluster) = Cluster::init() else { return ExitCode::FAILURE };
    let program = common::edge_program(&cluster);
    let cases: [(&str, Case); 6] = [
        ("every_ranks_devices_failing_is_an_error_on_every_rank", all_devices_fail),
        ("a_failure_after_ranks_stopped_idle_is_an_error_on_every_rank", fail_after_idle),
        ("a_kernel_missing_on_one_rank_is_no_such_kernel_on_every_rank", missing_kernel),
        ("a_launch_beside_all_agree_is_an_error_on_every_rank", launch_beside_agree),
        ("ranks_launching_different_kernels_or_ndranges_all_get_an_error", different_launches),
        ("rank_0_refusing_a_launch_is_the_same_kind_of_error_on_every_rank", refused_by_rank_0),
    ];
    common::run_cases(&cluster, cases.to_vec(), "MPI_VERDICT_ONLY", |case| {
        case(&cluster, &program).and_then(|()| good_launch(&cluster, &program))
    })
}

/// `n` inputs on rank 0, none elsewhere.
fn inputs(cluster: &Cluster, n: usize) -> Vec<u32> {
    let n = if cluster.rank() == 0 { n } else { 0 };
    (0..n as u32).map(|i| i.wrapping_mul(2246822519) >> 7).collect()
}

/// `spread4` over `n` items (64 a group) from `program`, with `faults` on every rank.
fn spread4(cluster: &Cluster, program: &Program, n: usize, faults: &[Fault]) -> Result<(), Error> {
    spread4_as(cluster, program, "spread4", n, faults)
}

/// [`spread4`]'s launch, of the kernel `kernel` (a test of ranks launching different ones).
fn spread4_as(
    cluster: &Cluster,
    program: &Program,
    kernel: &str,
    n: usize,
    faults: &[Fault],
) -> Result<(), Error> {
    let x = inputs(cluster, n);
    let mut out = vec![0u32; 4 * x.len()];
    let mut launch = spread4_launch(cluster, program, kernel, n, (&x, &mut out), 7);
    for rank in 0..cluster.size() {
        for &fault in faults {
            launch = launch.inject(rank, fault);
        }
    }
    launch.run()?;
    if cluster.rank() == 0 && out != spread4_cpu(&x, 7) {
        return Err(Error::BadConfig("the outputs differ from the CPU's".into()));
    }
    Ok(())
}

/// A launch every rank must run well after the case, checked against the CPU.
fn good_launch(cluster: &Cluster, program: &Program) -> Outcome {
    spread4(cluster, program, 64 * 64, &[]).map_err(|e| format!("the launch after: {e}"))
}

/// Every device of `program` failing its first package.
fn every_device_fails(program: &Program) -> Vec<Fault> {
    (0..program.devices().len()).map(|device| Fault::Fail { device, package: 0 }).collect()
}

/// Rank 0's `AllDevicesFailed`, and on every other rank the error saying that the run failed
/// on rank 0, and why.
fn failed_everywhere(cluster: &Cluster, result: Result<(), Error>) -> Outcome {
    match (cluster.rank(), result) {
        (0, Err(Error::AllDevicesFailed(_))) => Ok(()),
        (r, Err(Error::BadConfig(m)))
            if r > 0 && m.contains("failed on rank 0") && m.contains("every device failed") =>
        {
            Ok(())
        }
        (_, other) => Err(format!("expected the run's failure, got {other:?}")),
    }
}

/// Every rank's devices fail: each rank is dropped in turn and the run fails on rank 0. The
/// ranks dropped before it returned `Ok`, so a caller's loop went on alone on them.
fn all_devices_fail(cluster: &Cluster, program: &Program) -> Outcome {
    let result = spread4(cluster, program, 64 * 256, &every_device_fails(program));
    failed_everywhere(cluster, result)
}

/// One work-group: every rank but the one running it is stopped idle at once, and that rank's
/// devices fail. The ranks stopped idle returned `Ok`.
fn fail_after_idle(cluster: &Cluster, program: &Program) -> Outcome {
    let result = spread4(cluster, program, 64, &every_device_fails(program));
    failed_everywhere(cluster, result)
}

/// The last rank's program lacks `spread4` (built from another source): its node refuses its
/// first range, and every rank returns hetdsl's `NoSuchKernel` naming that rank, where rank 0
/// returned a `BadConfig` of its text.
fn missing_kernel(cluster: &Cluster, program: &Program) -> Outcome {
    let last = cluster.size() - 1;
    if last == 0 {
        return Ok(());
    }
    const OTHER: &str = "__kernel void other(__global uint* y) { y[get_global_id(0)] = 1u; }";
    let other = match cluster.rank() == last {
        true => Some(
            Runtime::new()
                .and_then(|rt| rt.program(&KernelSource::from_text("other.cl", OTHER)))
                .map_err(|e| e.to_string())?,
        ),
        false => None,
    };
    let result = spread4(cluster, other.as_ref().unwrap_or(program), 64 * 256, &[]);
    let on_last = format!("rank {last} refused the launch");
    match result {
        Err(Error::NoSuchKernel { name, file, .. })
            if name == "spread4" && (cluster.rank() == last || file.contains(&on_last)) =>
        {
            Ok(())
        }
        other => Err(format!("expected the missing kernel, got {other:?}")),
    }
}

/// `result` is the error of ranks at one collective step through different calls, and its
/// calls name each of `named`.
fn mismatch_naming(result: Result<(), Error>, named: &[&str]) -> Outcome {
    if let (Some(_), Err(e)) = (std::env::var_os("MPI_VERDICT_VERBOSE"), &result) {
        println!("{e}");
    }
    match result {
        Err(Error::CollectiveMismatch { calls })
            if named.iter().all(|n| calls.iter().any(|c| c.contains(n))) =>
        {
            Ok(())
        }
        other => Err(format!("expected different calls naming {named:?}, got {other:?}")),
    }
}

/// Rank 0 calls `all_agree` while every other rank launches, then `try_all_agree`; then the
/// last rank calls `all_agree` while the others, rank 0 included, launch. Before, the two
/// collective calls met each other inside MPI and the job hung. Every launching rank, and
/// `try_all_agree`, must return an error naming both calls, and `all_agree` must not say that
/// the ranks agree.
fn launch_beside_agree(cluster: &Cluster, program: &Program) -> Outcome {
    let (me, last) = (cluster.rank(), cluster.size() - 1);
    if last == 0 {
        return Ok(());
    }
    let named = ["rank 0 called all_agree", &format!("ranks 1-{last} called run(`spread4`")];
    let named = if last == 1 { [named[0], "rank 1 called run(`spread4`"] } else { named };
    if me == 0 {
        if cluster.all_agree(true) {
            return Err("all_agree said every rank agrees while the others launched".into());
        }
        let result = cluster.try_all_agree(true).map(|_| ());
        mismatch_naming(result, &named).map_err(|e| format!("try_all_agree: {e}"))?;
    } else {
        for call in 0..2 {
            let result = spread4(cluster, program, 64 * 64, &[]);
            mismatch_naming(result, &named).map_err(|e| format!("launch {call}: {e}"))?;
        }
    }
    let named = [&format!("rank {last} called all_agree")[..], "called run(`spread4`"];
    if me == last {
        return match cluster.all_agree(true) {
            true => Err("all_agree said every rank agrees while the others launched".into()),
            false => Ok(()),
        };
    }
    let result = spread4(cluster, program, 64 * 64, &[]);
    mismatch_naming(result, &named).map_err(|e| format!("rank 0 launching: {e}"))
}

/// The last rank launches over another NDRange, then another kernel, while the others
/// launch `spread4` over 4096 work-items: every rank returns the same error, naming each.
fn different_launches(cluster: &Cluster, program: &Program) -> Outcome {
    let last = cluster.size() - 1;
    if last == 0 {
        return Ok(());
    }
    let n = if cluster.rank() == last { 2048 } else { 4096 };
    let result = spread4(cluster, program, n, &[]);
    mismatch_naming(result, &["global [2048]", "global [4096]"])
        .map_err(|e| format!("another NDRange: {e}"))?;
    let kernel = if cluster.rank() == last { "group_sum" } else { "spread4" };
    let result = spread4_as(cluster, program, kernel, 4096, &[]);
    mismatch_naming(result, &["run(`group_sum`", "run(`spread4`"])
        .map_err(|e| format!("another kernel: {e}"))
}

/// Rank 0's own check refuses the launch before anything is sent: its output one element
/// short, a kernel the program lacks, a global size not a multiple of the work-group's.
/// Every rank must return the kind rank 0 found, the other ranks saying it was rank 0.
fn refused_by_rank_0(cluster: &Cluster, program: &Program) -> Outcome {
    let (n, root) = (256, cluster.rank() == 0);
    let x = inputs(cluster, n);
    let refused = |r: usize, m: &str| r == 0 || m.contains("rank 0 refused the launch");
    let mut short = vec![0u32; if root { 4 * n - 1 } else { 0 }];
    let result = spread4_launch(cluster, program, "spread4", n, (&x, &mut short), 7).run();
    match result {
        Err(Error::BadArgument { index: 1, reason }) if refused(cluster.rank(), &reason) => {}
        other => return Err(format!("a short output: expected BadArgument 1, got {other:?}")),
    }
    let mut out = vec![0u32; if root { 4 * n } else { 0 }];
    let result = spread4_launch(cluster, program, "nonesuch", n, (&x, &mut out), 7).run();
    match result {
        Err(Error::NoSuchKernel { name, file, .. })
            if name == "nonesuch" && refused(cluster.rank(), &file) => {}
        other => return Err(format!("a missing kernel: expected NoSuchKernel, got {other:?}")),
    }
    let result = spread4_launch(cluster, program, "spread4", n + 32, (&x, &mut out), 7).run();
    match result {
        Err(Error::BadRange(m)) if refused(cluster.rank(), &m) => Ok(()),
        other => Err(format!("a global of 288 over 64: expected BadRange, got {other:?}")),
    }
}
