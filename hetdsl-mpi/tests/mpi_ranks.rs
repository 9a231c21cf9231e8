//! Co-execution across MPI ranks, checked against CPU references. Run under MPI:
//!
//! ```text
//! cargo build --release -p hetdsl-mpi --features mpi --tests
//! mpirun -n 3 --oversubscribe target/release/deps/mpi_ranks-<hash>
//! ```
//!
//! (`cargo test -p hetdsl-mpi --features mpi` runs it as a single rank.) Every rank runs every
//! case; rank 0 checks the outputs and that the ranks' ranges tile the NDRange exactly once,
//! and all ranks agree on the verdict, so the exit status is the same everywhere.

mod common;

use std::process::ExitCode;
use std::time::{Duration, Instant};

use common::{Case, Outcome};
use hetdsl::{Fault, Pattern, Program};
use hetdsl_mpi::guided::RankGuided;
use hetdsl_mpi::recall::PieceRule;
use hetdsl_mpi::{reference, Cluster, ClusterReport};

fn main() -> ExitCode {
    let cluster = match Cluster::init() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("mpi_ranks: {e}");
            return ExitCode::FAILURE;
        }
    };
    let program =
        common::program(&cluster, "cluster_tests.cl", include_str!("../kernels/cluster_tests.cl"));
    let cases: [(&str, Case); 16] = [
        ("saxpy_matches_the_cpu_and_ranges_tile_once", saxpy),
        ("mandelbrot_2d_matches_the_cpu_and_ranges_tile_once", mandelbrot),
        ("a_2d_halo_input_reaches_its_rows_on_every_rank", halo_rows),
        ("whole_input_reaches_every_rank_once", whole),
        ("a_repeated_launch_runs_the_remembered_plan_and_matches_the_cpu", repeated),
        ("a_rank_whose_devices_all_fail_hands_its_range_back", failing_rank),
        ("ranks_disagreeing_on_the_launch_is_an_error_everywhere", disagreeing),
        ("a_launch_the_kernel_refuses_is_an_error_on_every_rank", refused),
        ("a_second_cluster_in_the_process_is_refused", |_, _| match Cluster::init() {
            Err(hetdsl::Error::BadConfig(_)) => Ok(()),
            Err(e) => Err(format!("wrong error: {e}")),
            Ok(_) => Err("MPI initialised twice".into()),
        }),
        ("a_hung_rank_is_dropped_by_the_watchdog_and_its_range_rerun", hung_rank),
        ("a_rank_whose_devices_fail_mid_run_hands_its_ranges_back", |c, p| {
            failing_mid_run(c, p, c.size() - 1)
        }),
        // Rank 0's node writes its outputs in the caller's buffer itself: a range queued behind
        // the failed one must not run there while another rank runs it.
        ("rank_0_whose_devices_fail_mid_run_hands_its_ranges_back", |c, p| {
            failing_mid_run(c, p, 0)
        }),
        ("a_rank_leaving_early_is_noticed_at_once_and_its_range_rerun", leaving_rank),
        ("a_rank_balancer_refusing_to_start_is_an_error_on_every_rank", refused_rank_balancer),
        ("rank_0_failing_while_a_rank_is_slow_returns_without_waiting", root_fails_while_slow),
        ("a_rank_silent_after_a_good_run_is_reported_not_waited_for", silent_rank),
    ];
    // `MPI_RANKS_ONLY=<part of a name>` runs the matching cases only (the same on every rank).
    common::run_cases(&cluster, cases.to_vec(), "MPI_RANKS_ONLY", |case| case(&cluster, &program))
}

/// Rank 0's checks common to every case: the ranges tile the range once, every rank that
/// was not dropped ran something when there is enough work, and the report names devices.
fn check_report(cluster: &Cluster, r: &ClusterReport) -> Outcome {
    if cluster.rank() != 0 {
        return Ok(());
    }
    if !r.tiles_exactly_once() {
        return Err(format!("ranges do not tile 0..{} once:\n{}", r.total_units, r.table()));
    }
    if r.ranks.len() != cluster.size() {
        return Err(format!("{} ranks reported, {} in the job", r.ranks.len(), cluster.size()));
    }
    if std::env::var_os("MPI_RANKS_VERBOSE").is_some() {
        print!("{}", r.table());
    }
    // Each case is large enough for every rank to get a range: the data really moves.
    if let Some(idle) = r.ranks.iter().find(|k| k.fault.is_none() && k.packages.is_empty()) {
        return Err(format!("rank {} ran nothing:\n{}", idle.rank, r.table()));
    }
    for rank in &r.ranks {
        let prefix = format!("r{}@{}: ", rank.rank, rank.host);
        if rank.fault.is_none() && !rank.devices.iter().all(|d| d.name.starts_with(&prefix)) {
            return Err(format!(
                "rank {}'s devices are not named by rank and host:\n{}",
                rank.rank,
                r.table()
            ));
        }
    }
    Ok(())
}

fn saxpy(cluster: &Cluster, program: &Program) -> Outcome {
    let n = 1 << 16;
    let root = cluster.rank() == 0;
    let (x, y0) = reference::saxpy_inputs(n, root);
    let mut y = y0.clone();
    let report = cluster
        .launch(program, "saxpy")
        .global(&[n])
        .local(&[64])
        .scalar(2.5f32)
        .input(&x, Pattern::ONE_TO_ONE)
        .inout(&mut y, Pattern::ONE_TO_ONE)
        .run()
        .map_err(|e| e.to_string())?;
    check_report(cluster, &report)?;
    if root {
        axpy_matches(2.5, &x, &y0, &y)?;
        // The ranks got ranges while computing others (on by default), and those still tile.
        if report.ranks.iter().all(|r| r.queued_ranges == 0) {
            return Err(format!("no range was queued ahead:\n{}", report.table()));
        }
        // Each rank received exactly its ranges' x and y, and sent back its ranges' y; rank 0's
        // node reads x in place, and only y (read and written) is copied for it.
        for r in &report.ranks {
            let units: u64 = r.packages.iter().map(|p| p.len).sum();
            let expected = units * 64 * 4;
            let sent = if r.rank == 0 { expected } else { 2 * expected };
            if r.bytes_sent != sent || r.bytes_received != expected {
                return Err(format!(
                    "rank {} moved {}/{} bytes for {units} units",
                    r.rank, r.bytes_sent, r.bytes_received
                ));
            }
        }
    }
    Ok(())
}

/// One cluster call of the Mandelbrot kernel over `width` × `height` pixels, `max`
/// iterations, into `counts` (rank 0's; empty elsewhere).
fn launch_mandelbrot(
    cluster: &Cluster,
    program: &Program,
    (width, height, max): (usize, usize, u32),
    counts: &mut [u32],
    pieces: PieceRule,
) -> Result<ClusterReport, String> {
    cluster
        .launch(program, "mandelbrot")
        .node_pieces(pieces)
        .global(&[width, height])
        .local(&[16, 4])
        .output(counts, Pattern::ONE_TO_ONE)
        .scalar(-2.0f32)
        .scalar(1.25f32)
        .scalar(2.5f32 / height as f32)
        .scalar(max)
        .run()
        .map_err(|e| e.to_string())
}

fn mandelbrot(cluster: &Cluster, program: &Program) -> Outcome {
    let (width, height, max) = (256, 768, 200u32);
    let root = cluster.rank() == 0;
    let mut counts = vec![0u32; if root { width * height } else { 0 }];
    let report = launch_mandelbrot(
        cluster,
        program,
        (width, height, max),
        &mut counts,
        PieceRule::default(),
    )?;
    check_report(cluster, &report)?;
    if root {
        mandelbrot_matches(&counts, width, height, max)?;
        // Rank 0's node wrote its rows in place: none of its bytes were copied.
        for r in &report.ranks {
            let units: u64 = r.packages.iter().map(|p| p.len).sum();
            let rows = if r.rank == 0 { 0 } else { units * (width as u64) * 4 * 4 };
            if r.bytes_received != rows {
                let got = r.bytes_received;
                return Err(format!("rank {} returned {got} bytes for {units} units", r.rank));
            }
        }
    }
    Ok(())
}

/// A 2-D halo input (one row each side): every rank receives its ranges' rows and the rows
/// around them, and every pixel matches the CPU's sum, ranges' edges included; twice, so the
/// second call's ranges land in staging the first one used.
fn halo_rows(cluster: &Cluster, program: &Program) -> Outcome {
    let (w, h) = (64usize, 512usize);
    let root = cluster.rank() == 0;
    let input: Vec<u32> = if root {
        (0..(w * h) as u32).map(|i| i.wrapping_mul(2654435761) >> 20).collect()
    } else {
        Vec::new()
    };
    for call in 0..2 {
        let mut out = vec![0u32; if root { w * h } else { 0 }];
        let report = cluster
            .launch(program, "column_sum")
            .global(&[w, h])
            .local(&[16, 4])
            .input(&input, Pattern::halo(1))
            .output(&mut out, Pattern::ONE_TO_ONE)
            .run()
            .map_err(|e| e.to_string())?;
        // The second call is a plan, which may leave a rank out on these shared cores.
        if call == 0 {
            check_report(cluster, &report)?;
        }
        if !root {
            continue;
        }
        if !report.tiles_exactly_once() {
            return Err(format!("call {call}: ranges do not tile once:\n{}", report.table()));
        }
        for y in 0..h {
            for x in 0..w {
                let at = |y: usize| input[y * w + x];
                let want = at(y)
                    + if y > 0 { at(y - 1) } else { 0 }
                    + if y + 1 < h { at(y + 1) } else { 0 };
                if out[y * w + x] != want {
                    let got = out[y * w + x];
                    return Err(format!("call {call}: pixel ({x}, {y}) = {got}, expected {want}"));
                }
            }
        }
    }
    Ok(())
}

/// The same launch five times: the first call runs fresh, the second from what the first
/// measured (one range per rank, in a few pieces where its moving is worth overlapping; each
/// node cuts its ranges into one package per device, then into pieces, told to as soon as it
/// has measured ranges run whole); the later ones as the rules make them (fresh again where a plan ended unbalanced on
/// these shared cores). Every call's image matches the CPU's and its ranges
/// tile the NDRange exactly once.
fn repeated(cluster: &Cluster, program: &Program) -> Outcome {
    let (width, height, max) = (256, 512, 300u32);
    let root = cluster.rank() == 0;
    // Every rank makes every call, whatever rank 0 finds: the first failure is returned last.
    let mut failure = None;
    let mut in_pieces = 0;
    // Ranges of milliseconds on these cores: every cut range runs in pieces once the whole
    // ones were measured, so that the pieces' outputs are checked too.
    let always = PieceRule { exposed: 0.0, min_piece_seconds: 0.0 };
    for call in 0..5 {
        let mut counts = vec![0u32; if root { width * height } else { 0 }];
        let shape = (width, height, max);
        let report = launch_mandelbrot(cluster, program, shape, &mut counts, always)?;
        if root && failure.is_none() {
            failure = check_call(cluster, call, &report, &counts, (width, height, max)).err();
        }
        in_pieces += report.ranks.iter().map(|r| r.pieces_ranges).sum::<usize>();
    }
    // Each node tries its cut ranges whole, then with each device's block in pieces.
    if root && failure.is_none() && in_pieces == 0 {
        failure = Some("no node ran a cut range in pieces in five calls".into());
    }
    failure.map_or(Ok(()), Err)
}

/// Rank 0's checks of [`repeated`]'s call `call`. A plan may leave a rank out where its fixed
/// cost per range outweighs its share, so only the fresh call must give every rank work.
fn check_call(
    cluster: &Cluster,
    call: usize,
    report: &ClusterReport,
    counts: &[u32],
    (width, height, max): (usize, usize, u32),
) -> Outcome {
    let fail = |what: &str| Err(format!("call {call}: {what}:\n{}", report.table()));
    if std::env::var_os("MPI_RANKS_VERBOSE").is_some() {
        print!("{}", report.table());
    }
    if call == 0 {
        check_report(cluster, report)?;
    } else if !report.tiles_exactly_once() || report.ranks.len() != cluster.size() {
        return fail("the ranges do not tile the NDRange once");
    }
    mandelbrot_matches(counts, width, height, max).map_err(|e| format!("call {call}: {e}"))?;
    // The next call learns from every range: a remote rank's outputs arrive after rank 0 has
    // handed it its next range, and such ranges were once left out.
    if report.measured_units != report.total_units {
        return fail(&format!(
            "{} of {} units measured",
            report.measured_units, report.total_units
        ));
    }
    let expected = match call {
        0 => "fresh",
        1 => "remembered plan",
        _ => return Ok(()),
    };
    if report.form != expected {
        return fail(&format!("ran {}, not {expected}", report.form));
    }
    // One range per rank, in a few pieces at most; every busy rank's node cut its first range
    // from what it measured.
    let ranges: usize = report.ranks.iter().map(|r| r.packages.len()).sum();
    let mut busy = report.ranks.iter().filter(|r| !r.packages.is_empty());
    let most = hetdsl_mpi::moving::MAX_PIECES * cluster.size();
    if call == 1 && (ranges > most || busy.any(|r| r.planned_ranges == 0)) {
        return fail("the plan did not run");
    }
    Ok(())
}

fn whole(cluster: &Cluster, program: &Program) -> Outcome {
    let (n, t) = (1 << 14, 300usize);
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
        .local(&[64])
        .input(&table, Pattern::Whole)
        .scalar(t as u32)
        .input(&x, Pattern::ONE_TO_ONE)
        .output(&mut out, Pattern::ONE_TO_ONE)
        .run()
        .map_err(|e| e.to_string())?;
    check_report(cluster, &report)?;
    if root {
        if let Some(i) = (0..n).find(|&i| out[i] != reference::weigh(&table, x[i])) {
            return Err(format!(
                "out[{i}] = {}, expected {}",
                out[i],
                reference::weigh(&table, x[i])
            ));
        }
        // The table went to every rank once, whatever number of ranges it ran; rank 0's node
        // reads x in place.
        for r in &report.ranks {
            let units: u64 = r.packages.iter().map(|p| p.len).sum();
            let sliced = if r.rank == 0 { 0 } else { units * 64 * 4 };
            if r.bytes_sent != (t * 4) as u64 + sliced {
                return Err(format!(
                    "rank {} was sent {} bytes for {units} units",
                    r.rank, r.bytes_sent
                ));
            }
        }
    }
    Ok(())
}

/// The last rank's devices fail every package: it is dropped, its range runs elsewhere, and
/// the output is still whole. (With one rank there is nobody to take over: skipped.)
fn failing_rank(cluster: &Cluster, program: &Program) -> Outcome {
    let n = 1 << 15;
    let (root, last) = (cluster.rank() == 0, cluster.size() - 1);
    if last == 0 {
        return Ok(());
    }
    let x: Vec<f32> = if root { (0..n).map(|i| i as f32).collect() } else { Vec::new() };
    let mut y = vec![1.0f32; if root { n } else { 0 }];
    let mut launch = cluster
        .launch(program, "saxpy")
        .global(&[n])
        .local(&[64])
        .scalar(3.0f32)
        .input(&x, Pattern::ONE_TO_ONE)
        .inout(&mut y, Pattern::ONE_TO_ONE);
    for device in 0..program.devices().len() {
        launch = launch.inject(last, Fault::Fail { device, package: 0 });
    }
    let report = launch.run().map_err(|e| e.to_string())?;
    check_report(cluster, &report)?;
    if root {
        axpy_matches(3.0, &x, &vec![1.0; n], &y)?;
        let lost = &report.ranks[last];
        if lost.fault.is_none() || !lost.packages.is_empty() {
            return Err(format!("rank {last} was not dropped:\n{}", report.table()));
        }
        if report.faults.iter().all(|(r, _, _)| *r != last) {
            return Err(format!(
                "rank {last}'s range is not listed as re-run:\n{}",
                report.table()
            ));
        }
    }
    Ok(())
}

/// The last rank launches another kernel: every rank gets the same error, naming both
/// launches, and none hangs.
fn disagreeing(cluster: &Cluster, program: &Program) -> Outcome {
    let last = cluster.size() - 1;
    let kernel = if cluster.rank() == last && last > 0 { "weigh" } else { "saxpy" };
    let x = vec![0f32; 256];
    let mut y = vec![0f32; 256];
    let launch = cluster.launch(program, kernel).global(&[256]).local(&[64]).scalar(1f32);
    match launch.input(&x, Pattern::ONE_TO_ONE).inout(&mut y, Pattern::ONE_TO_ONE).run() {
        Err(hetdsl::Error::CollectiveMismatch { calls })
            if last > 0 && calls.iter().any(|c| c.contains("called run(`weigh`")) =>
        {
            Ok(())
        }
        Ok(_) if last == 0 => Ok(()),
        other => Err(format!("expected an error on every rank, got {other:?}")),
    }
}

/// Every rank agrees on the launch, but the kernel refuses it (a `double` where saxpy takes a
/// `float`): rank 0 finds it before anything is sent, as the `BadArgument` a single-node launch
/// gives, and every other rank returns that error too, saying that rank 0 refused the launch.
fn refused(cluster: &Cluster, program: &Program) -> Outcome {
    let n = 4096;
    let x = vec![0f32; n];
    let mut y = vec![0f32; n];
    let launch = cluster.launch(program, "saxpy").global(&[n]).local(&[64]).scalar(1f64);
    match launch.input(&x, Pattern::ONE_TO_ONE).inout(&mut y, Pattern::ONE_TO_ONE).run() {
        Err(hetdsl::Error::BadArgument { index: 0, reason }) if cluster.rank() == 0 => {
            if std::env::var_os("MPI_RANKS_VERBOSE").is_some() {
                println!("rank 0: {reason}");
            }
            Ok(())
        }
        Err(hetdsl::Error::BadArgument { index: 0, reason })
            if cluster.rank() > 0 && reason.contains("rank 0 refused the launch") =>
        {
            Ok(())
        }
        other => Err(format!("expected the kernel's refusal of argument 0, got {other:?}")),
    }
}

/// The last rank's first device never finishes setting up, so the rank's first range comes
/// back only when its own engine gives up on that device (10 s): rank 0's watchdog drops the
/// rank after a second and re-runs its range elsewhere; the output is whole and correct, and
/// the late rank, finding itself dropped when its range ends, leaves the launch without
/// sending outputs nobody would receive.
fn hung_rank(cluster: &Cluster, program: &Program) -> Outcome {
    let n = 1 << 15;
    let (root, last) = (cluster.rank() == 0, cluster.size() - 1);
    if last == 0 {
        return Ok(());
    }
    let x: Vec<f32> = if root { (0..n).map(|i| i as f32).collect() } else { Vec::new() };
    let mut y = vec![2.0f32; if root { n } else { 0 }];
    let rule = hetdsl::balance::dispatch::WatchdogRule { factor: 4.0, min_seconds: 1.0 };
    let mut launch = cluster
        .launch(program, "saxpy")
        .global(&[n])
        .local(&[64])
        .scalar(0.5f32)
        .input(&x, Pattern::ONE_TO_ONE)
        .inout(&mut y, Pattern::ONE_TO_ONE)
        .rank_watchdog(rule);
    launch = launch.inject(last, Fault::HangSetup { device: 0 });
    let report = launch.run().map_err(|e| e.to_string())?;
    check_report(cluster, &report)?;
    if root {
        axpy_matches(0.5, &x, &vec![2.0; n], &y)?;
        let hung = &report.ranks[last];
        if !hung.fault.as_deref().is_some_and(|f| f.contains("hung")) || !hung.packages.is_empty() {
            return Err(format!("rank {last} was not dropped as hung:\n{}", report.table()));
        }
    }
    Ok(())
}

/// `y` against `a * x + y0` (the CPU reference, either rounding).
fn axpy_matches(a: f32, x: &[f32], y0: &[f32], y: &[f32]) -> Outcome {
    reference::saxpy_mismatch(a, x, y0, y).map_or(Ok(()), Err)
}

/// The image of `mandelbrot` at (left, top) = (−2, 1.25), `height` pixels high over 2.5,
/// against the CPU reference, whole.
fn mandelbrot_matches(counts: &[u32], width: usize, height: usize, max: u32) -> Outcome {
    let view = (-2.0f32, 1.25f32, 2.5f32 / height as f32);
    reference::mandelbrot_mismatch(counts, width, 0..height, view, max).map_or(Ok(()), Err)
}

/// Rank `last`'s devices all fail from its second range on: the ranges it merged before
/// stay, those it held go back to the pool and run elsewhere, and the image is whole.
/// (Ranges of 1/64 of the image each, so that every rank gets several.)
fn failing_mid_run(cluster: &Cluster, program: &Program, last: usize) -> Outcome {
    let (width, height, max) = (512, 1024, 400u32);
    let root = cluster.rank() == 0;
    if cluster.size() == 1 {
        return Ok(());
    }
    let mut counts = vec![0u32; if root { width * height } else { 0 }];
    let mut launch = cluster
        .launch(program, "mandelbrot")
        .global(&[width, height])
        .local(&[16, 4])
        .output(&mut counts, Pattern::ONE_TO_ONE)
        .scalar(-2.0f32)
        .scalar(1.25f32)
        .scalar(2.5f32 / height as f32)
        .scalar(max)
        .balancer(Box::new(hetdsl::balance::Dynamic::packages(64)));
    for device in 0..program.devices().len() {
        launch = launch.inject_from(last, 1, Fault::Fail { device, package: 0 });
        // The other ranks slowed down, so that the last one surely asks for a second range
        // however the ranks' processes are scheduled.
        for other in (0..cluster.size()).filter(|&r| r != last) {
            launch = launch.inject(other, Fault::Slow { device, factor: 50 });
        }
    }
    let report = launch.run().map_err(|e| e.to_string())?;
    check_report(cluster, &report)?;
    if root {
        mandelbrot_matches(&counts, width, height, max)?;
        let lost = &report.ranks[last];
        if lost.fault.is_none() || lost.packages.is_empty() {
            return Err(format!(
                "rank {last} should have merged its first range, then been dropped:\n{}",
                report.table()
            ));
        }
        if report.faults.iter().all(|(r, _, _)| *r != last) {
            return Err(format!(
                "rank {last}'s range is not listed as re-run:\n{}",
                report.table()
            ));
        }
    }
    Ok(())
}

/// The last rank leaves the launch with an error before answering its first range (as when
/// its outputs are over MPI's message limit), alive, so its summary still reaches rank 0: rank 0
/// takes it as the rank gone at once, not after the rank watchdog's two minutes, re-runs its
/// range elsewhere, and the output is whole.
fn leaving_rank(cluster: &Cluster, program: &Program) -> Outcome {
    let n = 1 << 15;
    let (root, last) = (cluster.rank() == 0, cluster.size() - 1);
    if last == 0 {
        return Ok(());
    }
    let x: Vec<f32> = if root { (0..n).map(|i| (i % 31) as f32).collect() } else { Vec::new() };
    let mut y = vec![4.0f32; if root { n } else { 0 }];
    let start = Instant::now();
    let result = cluster
        .launch(program, "saxpy")
        .global(&[n])
        .local(&[64])
        .scalar(-2.0f32)
        .input(&x, Pattern::ONE_TO_ONE)
        .inout(&mut y, Pattern::ONE_TO_ONE)
        .inject_leave(last, 0)
        .run();
    let seconds = start.elapsed().as_secs_f64();
    if cluster.rank() == last {
        return match result {
            Err(hetdsl::Error::BadConfig(m)) if m.contains("left the launch") => Ok(()),
            other => Err(format!("expected this rank's own error, got {:?}", other.map(|_| ()))),
        };
    }
    let report = result.map_err(|e| e.to_string())?;
    check_report(cluster, &report)?;
    if root {
        axpy_matches(-2.0, &x, &vec![4.0; n], &y)?;
        let gone = &report.ranks[last];
        if !gone.fault.as_deref().is_some_and(|f| f.contains("left the launch"))
            || !gone.packages.is_empty()
        {
            return Err(format!("rank {last} is not reported as gone:\n{}", report.table()));
        }
        if report.faults.iter().all(|(r, _, _)| *r != last) {
            return Err(format!(
                "rank {last}'s range is not listed as re-run:\n{}",
                report.table()
            ));
        }
        if seconds > 10.0 {
            return Err(format!("rank 0 took {seconds:.1} s to notice a rank that left"));
        }
    }
    Ok(())
}

/// Rank 0's balancer across ranks refuses to start (guided with k = 0): rank 0 returns the
/// balancer's error and every other rank learns that the run failed, instead of waiting for an
/// order that never comes.
fn refused_rank_balancer(cluster: &Cluster, program: &Program) -> Outcome {
    let n = 4096;
    let x = vec![0f32; n];
    let mut y = vec![0f32; n];
    let result = cluster
        .launch(program, "saxpy")
        .global(&[n])
        .local(&[64])
        .scalar(1f32)
        .input(&x, Pattern::ONE_TO_ONE)
        .inout(&mut y, Pattern::ONE_TO_ONE)
        .balancer(Box::new(RankGuided::new(0.0)))
        .run();
    match (cluster.rank(), result) {
        (0, Err(hetdsl::Error::BadBalancer(m))) if m.contains("guided k") => Ok(()),
        (_, Err(hetdsl::Error::BadConfig(m)))
            if m.contains("failed on rank 0") && m.contains("guided k") =>
        {
            Ok(())
        }
        (_, other) => Err(format!("expected the balancer's refusal, got {:?}", other.map(|_| ()))),
    }
}

/// How long the slow rank's range waits before it runs, in the case below.
const SLOW_SECONDS: u64 = 10;

/// Rank 0's own node refuses its first range (its node balancer, guided with k = 0, will not
/// start) while the last rank sits in a slow range: rank 0 returns its error within seconds
/// instead of waiting for the slow rank, and names it among the ranks that had not left the
/// launch; each other rank learns that the run failed once its range ends.
fn root_fails_while_slow(cluster: &Cluster, program: &Program) -> Outcome {
    let n = 1 << 15;
    let (me, last) = (cluster.rank(), cluster.size() - 1);
    if last == 0 {
        return Ok(());
    }
    let x = vec![1f32; if me == 0 { n } else { 0 }];
    let mut y = vec![1f32; if me == 0 { n } else { 0 }];
    let start = Instant::now();
    let result = cluster
        .launch(program, "saxpy")
        .global(&[n])
        .local(&[64])
        .scalar(2f32)
        .input(&x, Pattern::ONE_TO_ONE)
        .inout(&mut y, Pattern::ONE_TO_ONE)
        .node_balancer(move || -> Box<dyn hetdsl::Balancer> {
            if me == 0 {
                return Box::new(RankGuided::new(0.0));
            }
            if me == last {
                std::thread::sleep(Duration::from_secs(SLOW_SECONDS));
            }
            hetdsl::balance::default_balancer()
        })
        .run();
    let seconds = start.elapsed().as_secs_f64();
    if me != 0 {
        return match result {
            Err(hetdsl::Error::BadConfig(m)) if m.contains("failed on rank 0") => Ok(()),
            other => Err(format!("expected rank 0's failure, got {:?}", other.map(|_| ()))),
        };
    }
    match result {
        Err(hetdsl::Error::BadConfig(m)) if m.contains("guided k") => {}
        other => return Err(format!("expected rank 0's refusal, got {:?}", other.map(|_| ()))),
    }
    if seconds > 6.0 {
        return Err(format!("rank 0 returned after {seconds:.1} s: it waited for the slow rank"));
    }
    if cluster.stragglers() != [last] {
        return Err(format!("stragglers {:?}, expected [{last}]", cluster.stragglers()));
    }
    Ok(())
}

/// After a run that ended well, the last rank sits 8 s before its summary (as one stuck after
/// its last range would): rank 0 waits the rank watchdog's floor (2 s here) at most, returns
/// the complete output, and reports the rank's silence in its fault and in the stragglers.
fn silent_rank(cluster: &Cluster, program: &Program) -> Outcome {
    let n = 1 << 15;
    let (root, last) = (cluster.rank() == 0, cluster.size() - 1);
    if last == 0 {
        return Ok(());
    }
    let x: Vec<f32> = if root { (0..n).map(|i| (i % 13) as f32).collect() } else { Vec::new() };
    let mut y = vec![3.0f32; if root { n } else { 0 }];
    let rule = hetdsl::balance::dispatch::WatchdogRule { factor: 20.0, min_seconds: 1.0 };
    let start = Instant::now();
    let report = cluster
        .launch(program, "saxpy")
        .global(&[n])
        .local(&[64])
        .scalar(0.25f32)
        .input(&x, Pattern::ONE_TO_ONE)
        .inout(&mut y, Pattern::ONE_TO_ONE)
        .rank_watchdog(rule)
        .inject_late_summary(last, Duration::from_secs(8))
        .run()
        .map_err(|e| e.to_string())?;
    let seconds = start.elapsed().as_secs_f64();
    if !root {
        return Ok(());
    }
    axpy_matches(0.25, &x, &vec![3.0; n], &y)?;
    if !report.tiles_exactly_once() {
        return Err(format!("ranges do not tile the range once:\n{}", report.table()));
    }
    if seconds > 6.0 {
        return Err(format!("rank 0 returned after {seconds:.1} s: it waited for the silent rank"));
    }
    let silent = &report.ranks[last];
    if !silent.fault.as_deref().is_some_and(|f| f.contains("no summary")) {
        return Err(format!("rank {last}'s silence is not reported:\n{}", report.table()));
    }
    if cluster.stragglers() != [last] {
        return Err(format!("stragglers {:?}, expected [{last}]", cluster.stragglers()));
    }
    Ok(())
}
