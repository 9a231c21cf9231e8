//! Cluster launches at their edges, under MPI (`.ci/mpi.sh` runs it as three ranks; run alone
//! it is one rank): ranges that split the NDRange at every work-group, patterns of 4:1, 1:255
//! and halos wider than a range, 2-D ranges whose rows do not divide among the ranks, fewer
//! work-groups than ranks, repeated calls that run a remembered plan, and launches the ranks
//! describe differently. Each output is checked on rank 0 against a plain CPU loop written
//! here, and every rank agrees on each verdict.

mod common;

use std::process::ExitCode;

use common::{spread4_cpu, spread4_launch, Case, Outcome};
use hetdsl::balance::{Dynamic, Static};
use hetdsl::{Balancer, Error, Pattern, Program};
use hetdsl_mpi::{Cluster, ClusterLaunch, ClusterReport};

fn main() -> ExitCode {
    let Ok(cluster) = Cluster::init() else { return ExitCode::FAILURE };
    let program = common::edge_program(&cluster);
    let cases: [(&str, Case); 15] = [
        ("ranges_of_one_group_with_4_to_1_outputs_match_the_cpu", one_group_ranges),
        ("a_1_to_255_output_matches_the_cpu", group_sums),
        ("a_1d_halo_wider_than_a_range_matches_the_cpu", wide_halo_1d),
        ("a_2d_halo_over_rows_not_dividing_among_ranks_matches_the_cpu", halo_2d),
        ("fewer_groups_than_ranks_match_the_cpu_call_after_call", fewer_groups),
        ("an_inout_with_a_whole_table_matches_the_cpu_call_after_call", inout_repeated),
        ("other_ranks_buffers_and_scalars_are_ignored", others_ignored),
        ("ranks_disagreeing_on_an_element_type_is_an_error_everywhere", element_types),
        ("an_output_of_the_wrong_length_on_rank_0_is_an_error_everywhere", short_output),
        ("static_weights_of_4_to_1_split_unevenly_and_match_the_cpu", static_weights),
        ("a_rank_watchdog_that_means_nothing_is_an_error_everywhere", bad_watchdogs),
        ("arguments_of_the_wrong_type_are_an_error_everywhere", wrong_types),
        ("a_node_balancer_that_panics_is_an_error_everywhere", panicking_node_balancer),
        ("a_rank_balancer_panicking_when_dropped_is_an_error_everywhere", panicking_drop),
        // Last: before its fix, MPI ended the whole job on an invalid tag.
        ("launches_past_two_billion_keep_valid_message_tags", many_launches),
    ];
    common::run_cases(&cluster, cases.to_vec(), "MPI_EDGES_ONLY", |case| case(&cluster, &program))
}

/// `n` inputs on rank 0 (a hash of the index), none elsewhere.
fn inputs(cluster: &Cluster, n: usize, seed: u32) -> Vec<u32> {
    if cluster.rank() != 0 {
        return Vec::new();
    }
    (0..n as u32).map(|i| (i ^ seed).wrapping_mul(2654435761) >> 12).collect()
}

/// A buffer of `n` elements on rank 0, empty elsewhere.
fn on_root(cluster: &Cluster, n: usize) -> Vec<u32> {
    vec![0; if cluster.rank() == 0 { n } else { 0 }]
}

/// Rank 0: the ranges tile the NDRange once and the outputs are `want`'s.
fn check(cluster: &Cluster, report: &ClusterReport, got: &[u32], want: &[u32]) -> Outcome {
    if cluster.rank() != 0 {
        return Ok(());
    }
    if std::env::var_os("MPI_EDGES_VERBOSE").is_some() {
        print!("{} ({}):\n{}", report.form, report.balancer, report.table());
    }
    if !report.tiles_exactly_once() || report.ranks.len() != cluster.size() {
        return Err(format!("the ranges do not tile the NDRange once:\n{}", report.table()));
    }
    if got.len() != want.len() {
        return Err(format!("{} outputs, expected {}", got.len(), want.len()));
    }
    match (0..want.len()).find(|&i| got[i] != want[i]) {
        Some(i) => Err(format!(
            "element {i} = {}, expected {} ({} wrong):\n{}",
            got[i],
            want[i],
            (0..want.len()).filter(|&i| got[i] != want[i]).count(),
            report.table()
        )),
        None => Ok(()),
    }
}

/// One call of `spread4` over `n` items in groups of 64, on rank 0's data.
fn spread4(
    cluster: &Cluster,
    program: &Program,
    n: usize,
    balancer: Option<Box<dyn Balancer>>,
) -> Outcome {
    let x = inputs(cluster, n, 7);
    let mut out = on_root(cluster, 4 * n);
    let mut launch = spread4_launch(cluster, program, "spread4", n, (&x, &mut out), 99);
    if let Some(b) = balancer {
        launch = launch.balancer(b);
    }
    let report = launch.run().map_err(|e| e.to_string())?;
    check(cluster, &report, &out, &spread4_cpu(&x, 99))
}

/// Every range one work-group, 13 of them over the ranks: a boundary after every group.
fn one_group_ranges(cluster: &Cluster, program: &Program) -> Outcome {
    spread4(cluster, program, 13 * 64, Some(Box::new(Dynamic::chunk(1))))
}

fn static_weights(cluster: &Cluster, program: &Program) -> Outcome {
    let weights = (0..cluster.size()).map(|r| if r == 0 { 4.0 } else { 1.0 }).collect();
    spread4(cluster, program, 29 * 64, Some(Box::new(Static::with_weights(weights))))
}

/// 11 groups of 255 work-items, one sum per group (1:255), one group per range and then as
/// the default balancer cuts them.
fn group_sums(cluster: &Cluster, program: &Program) -> Outcome {
    let (groups, size) = (11usize, 255usize);
    let x = inputs(cluster, groups * size, 3);
    let weighed = |g: usize, j: usize| x[g * size + j].wrapping_mul(j as u32 + 1);
    let sum = |g: usize| (0..size).fold(0u32, |s, j| s.wrapping_add(weighed(g, j)));
    let want: Vec<u32> = (0..groups).filter(|_| cluster.rank() == 0).map(sum).collect();
    for chunked in [true, false] {
        let mut sums = on_root(cluster, groups);
        let mut launch = cluster
            .launch(program, "group_sum")
            .global(&[groups * size])
            .local(&[size])
            .input(&x, Pattern::ONE_TO_ONE)
            .output(&mut sums, Pattern::ratio(1, 255).unwrap());
        if chunked {
            launch = launch.balancer(Box::new(Dynamic::chunk(1)));
        }
        let report = launch.run().map_err(|e| e.to_string())?;
        check(cluster, &report, &sums, &want).map_err(|e| format!("chunked {chunked}: {e}"))?;
    }
    Ok(())
}

/// The CPU's 1-D window of radius `r`.
fn window_cpu(input: &[u32], r: usize) -> Vec<u32> {
    let n = input.len() as i64;
    (0..n)
        .map(|i| {
            let mut s = 0u32;
            for d in -(r as i64)..=r as i64 {
                if i + d >= 0 && i + d < n {
                    s = s.wrapping_add(
                        input[(i + d) as usize].wrapping_mul((d + r as i64 + 1) as u32),
                    );
                }
            }
            s
        })
        .collect()
}

/// A halo of 40 elements around ranges of one group of 16: each range reads two groups on
/// each side, clamped at the buffer's ends.
fn wide_halo_1d(cluster: &Cluster, program: &Program) -> Outcome {
    let (n, r) = (16 * 13, 40usize);
    let input = inputs(cluster, n, 11);
    let want = window_cpu(&input, r);
    window(cluster, program, ("window1d", &[n], &[16]), &input, r, &want)
}

/// A 48 × 20 image in rows of 4 (5 units over the ranks), a vertical window of 5 rows each
/// side: more than a unit's rows.
fn halo_2d(cluster: &Cluster, program: &Program) -> Outcome {
    let (w, h, r) = (48usize, 20usize, 5usize);
    let input = inputs(cluster, w * h, 5);
    let mut want = vec![0u32; if cluster.rank() == 0 { w * h } else { 0 }];
    if cluster.rank() == 0 {
        for x in 0..w {
            let column: Vec<u32> = (0..h).map(|y| input[y * w + x]).collect();
            for (y, v) in window_cpu(&column, r).into_iter().enumerate() {
                want[y * w + x] = v;
            }
        }
    }
    window(cluster, program, ("window2d", &[w, h], &[16, 4]), &input, r, &want)
}

/// `kernel` over `global` in groups of `local`, its input read with a halo of `r`, against
/// `want`: ranges of one work-group each (a dynamic chunk of 1), then the default split.
fn window(
    cluster: &Cluster,
    program: &Program,
    (kernel, global, local): (&str, &[usize], &[usize]),
    input: &[u32],
    r: usize,
    want: &[u32],
) -> Outcome {
    for chunked in [true, false] {
        let mut out = on_root(cluster, global.iter().product());
        let mut launch = cluster
            .launch(program, kernel)
            .global(global)
            .local(local)
            .input(input, Pattern::halo(r as u64))
            .output(&mut out, Pattern::ONE_TO_ONE)
            .scalar(r as u32);
        if chunked {
            launch = launch.balancer(Box::new(Dynamic::chunk(1)));
        }
        let report = launch.run().map_err(|e| e.to_string())?;
        check(cluster, &report, &out, want).map_err(|e| format!("chunked {chunked}: {e}"))?;
    }
    Ok(())
}

/// One and two work-groups over every rank, each three times (the later calls from what the
/// first measured): ranks without work get none and the outputs are whole.
fn fewer_groups(cluster: &Cluster, program: &Program) -> Outcome {
    for groups in [1, 2] {
        for call in 0..3 {
            spread4(cluster, program, groups * 64, None)
                .map_err(|e| format!("{groups} group(s), call {call}: {e}"))?;
        }
    }
    Ok(())
}

/// `bump`'s inout over `n` items, with a `whole` table of `t` values.
fn bump_cpu(y0: &[u32], table: &[u32], add: u32) -> Vec<u32> {
    let t = table.len();
    (0..y0.len()).map(|i| y0[i].wrapping_add(add).wrapping_add(table[i % t])).collect()
}

/// Five calls of an inout kernel with a `whole` table over 37 groups, each from the output
/// of the last: a range run twice or a plan's pieces misplaced would add twice or miss.
fn inout_repeated(cluster: &Cluster, program: &Program) -> Outcome {
    let (n, t) = (37 * 64, 19usize);
    let table = inputs(cluster, t, 1);
    let mut y = inputs(cluster, n, 2);
    for call in 0..5u32 {
        let want = if cluster.rank() == 0 { bump_cpu(&y, &table, call) } else { Vec::new() };
        let report = cluster
            .launch(program, "bump")
            .global(&[n])
            .local(&[64])
            .inout(&mut y, Pattern::ONE_TO_ONE)
            .input(&table, Pattern::Whole)
            .scalar(t as u32)
            .scalar(call)
            .run()
            .map_err(|e| format!("call {call}: {e}"))?;
        check(cluster, &report, &y, &want).map_err(|e| format!("call {call}: {e}"))?;
    }
    Ok(())
}

/// The other ranks pass buffers of other lengths and another scalar: rank 0's are used.
fn others_ignored(cluster: &Cluster, program: &Program) -> Outcome {
    let n = 9 * 64;
    let root = cluster.rank() == 0;
    let x = if root { inputs(cluster, n, 9) } else { vec![5; 3] };
    let mut out = vec![0u32; if root { 4 * n } else { 17 }];
    let salt = if root { 12u32 } else { 77 };
    let report = spread4_launch(cluster, program, "spread4", n, (&x, &mut out), salt)
        .balancer(Box::new(Dynamic::chunk(2)))
        .run()
        .map_err(|e| e.to_string())?;
    let want = if root { spread4_cpu(&x, 12) } else { Vec::new() };
    check(cluster, &report, &out, &want)?;
    if !root && out != [0; 17] {
        return Err("a rank other than 0 had its own buffer written".into());
    }
    Ok(())
}

/// `launch` run, expecting on every rank an error that `expected` holds of (the same kind on
/// every rank).
fn refused_everywhere(launch: ClusterLaunch<'_>, expected: impl Fn(&Error) -> bool) -> Outcome {
    match launch.run() {
        Err(e) if expected(&e) => Ok(()),
        other => Err(format!("expected an error, got {other:?}")),
    }
}

/// The last rank's input is of 8-byte elements where the others' are of 4: every rank gets
/// the same error, naming each side's launch.
fn element_types(cluster: &Cluster, program: &Program) -> Outcome {
    let last = cluster.size() - 1;
    let n = 256;
    let (x4, x8) = (vec![1u32; n], vec![1u64; n]);
    let mut out = vec![0u32; 4 * n];
    let launch = cluster.launch(program, "spread4").global(&[n]).local(&[64]);
    let launch = if cluster.rank() == last && last > 0 {
        launch.input(&x8, Pattern::ONE_TO_ONE)
    } else {
        launch.input(&x4, Pattern::ONE_TO_ONE)
    };
    let launch = launch.output(&mut out, Pattern::ratio(4, 1).unwrap()).scalar(0u32);
    if last == 0 {
        return launch.run().map(|_| ()).map_err(|e| e.to_string());
    }
    let named = |e: &Error| {
        matches!(e, Error::CollectiveMismatch { calls }
            if calls.iter().any(|c| c.contains("input 8-byte 1:1")))
    };
    refused_everywhere(launch, named)
}

/// Rank 0's 4:1 output holds one element too few, or one too many: either is the
/// `BadArgument` a single-node launch gives, on every rank, before anything is sent (too many
/// came back as a `BadConfig` from the first rank whose engine ran into it).
fn short_output(cluster: &Cluster, program: &Program) -> Outcome {
    let n = 256;
    let x = inputs(cluster, n, 4);
    for len in [4 * n - 1, 4 * n + 1] {
        let mut out = vec![0u32; if cluster.rank() == 0 { len } else { 0 }];
        let launch = spread4_launch(cluster, program, "spread4", n, (&x, &mut out), 0);
        let argument_1 = |e: &Error| matches!(e, Error::BadArgument { index: 1, .. });
        refused_everywhere(launch, argument_1).map_err(|e| format!("{len}: {e}"))?;
    }
    Ok(())
}

/// Rank watchdog rules that mean nothing (a factor of zero, below zero or NaN; a floor of zero,
/// below it or NaN): each an error, as hetdsl's own watchdog settings are, instead of a run in
/// which every other rank is dropped as hung the moment another idles.
fn bad_watchdogs(cluster: &Cluster, program: &Program) -> Outcome {
    use hetdsl::balance::dispatch::WatchdogRule;
    let rules = [(0.0, 1.0), (-1.0, 1.0), (f64::NAN, 1.0), (20.0, 0.0), (20.0, -2.0)];
    let rules = rules.into_iter().chain([(20.0, f64::NAN), (f64::INFINITY, 1.0)]);
    for (factor, min_seconds) in rules {
        let n = 64 * 64;
        let x = inputs(cluster, n, 8);
        let mut out = on_root(cluster, 4 * n);
        let launch = spread4_launch(cluster, program, "spread4", n, (&x, &mut out), 1)
            .rank_watchdog(WatchdogRule { factor, min_seconds });
        let watchdog = |e: &Error| matches!(e, Error::BadConfig(m) if m.contains("watchdog"));
        refused_everywhere(launch, watchdog)
            .map_err(|e| format!("factor {factor}, floor {min_seconds}: {e}"))?;
    }
    Ok(())
}

/// A job that has made 2^31 - 3 launches (an iterative code calling `run` every step) makes
/// four more, each over every rank and checked: every launch's messages carry a tag that MPI
/// accepts (at most its `MPI_TAG_UB`), where a counter past `i32::MAX` made MPI end the job.
fn many_launches(cluster: &Cluster, program: &Program) -> Outcome {
    cluster.pretend_launches(i32::MAX as u64 - 3);
    for call in 0..4 {
        spread4(cluster, program, 5 * 64, Some(Box::new(Dynamic::chunk(1))))
            .map_err(|e| format!("call {call}: {e}"))?;
    }
    Ok(())
}

/// The node balancer's factory panics on one rank (rank 0, whose node works in the caller's
/// buffers, then the last): every rank returns an error naming the panic, where rank 0 waited
/// for its own node's answer for ever, and another rank's process died and took the job.
fn panicking_node_balancer(cluster: &Cluster, program: &Program) -> Outcome {
    let (me, last) = (cluster.rank(), cluster.size() - 1);
    for bad in [0, last] {
        let n = 32 * 64;
        let x = inputs(cluster, n, 6);
        let mut out = on_root(cluster, 4 * n);
        let launch = spread4_launch(cluster, program, "spread4", n, (&x, &mut out), 2)
            .balancer(Box::new(Dynamic::chunk(1)))
            .node_balancer(move || -> Box<dyn Balancer> {
                if me == bad {
                    panic!("no balancer for this node (a test's panic)");
                }
                hetdsl::balance::default_balancer()
            });
        let named = |e: &Error| e.to_string().contains("a test's panic");
        match (me, launch.run()) {
            (0, Err(e)) if named(&e) => {}
            (r, Err(Error::BadConfig(m))) if r > 0 && m.contains("a test's panic") => {}
            (_, other) => {
                return Err(format!("rank {bad} panicking: expected its error, got {other:?}"))
            }
        }
    }
    Ok(())
}

/// A balancer across ranks that panics when dropped (rank 0 drops it once the run is over).
struct PanicsWhenDropped(Dynamic);

impl Balancer for PanicsWhenDropped {
    fn name(&self) -> String {
        "panics when dropped".into()
    }
    fn start(&mut self, setup: &hetdsl::balance::Setup) -> hetdsl::Result<()> {
        self.0.start(setup)
    }
    fn next(&mut self, device: usize, now: f64) -> hetdsl::balance::Next {
        self.0.next(device, now)
    }
    fn completed(&mut self, done: &hetdsl::balance::Completion) {
        self.0.completed(done)
    }
    fn device_lost(&mut self, device: usize) {
        self.0.device_lost(device)
    }
}

impl Drop for PanicsWhenDropped {
    fn drop(&mut self) {
        panic!("dropped (a test's panic)");
    }
}

/// The balancer across ranks panics when dropped, after the run (rank 0's with its
/// dispatcher, the others' unused): every rank returns the `BadBalancer` hetdsl gives for its
/// own launches, rank 0 with its outputs written, where each process died and `mpirun` ended
/// the job.
fn panicking_drop(cluster: &Cluster, program: &Program) -> Outcome {
    let n = 16 * 64;
    let x = inputs(cluster, n, 10);
    let mut out = on_root(cluster, 4 * n);
    let result = spread4_launch(cluster, program, "spread4", n, (&x, &mut out), 4)
        .balancer(Box::new(PanicsWhenDropped(Dynamic::chunk(2))))
        .run();
    match (cluster.rank(), result) {
        (0, Err(Error::BadBalancer(m))) if m.contains("a test's panic") => {
            (out == spread4_cpu(&x, 4)).then_some(()).ok_or_else(|| "outputs wrong".into())
        }
        (r, Err(Error::BadBalancer(m))) if r > 0 && m.contains("a test's panic") => Ok(()),
        (_, other) => Err(format!("expected the drop's panic, got {other:?}")),
    }
}

/// Rank 0's arguments of another type than the kernel's parameter, of the same size (`f32`
/// for `uint`): the `BadArgument` a single-node launch gives, on every rank, where each rank
/// ran the kernel on the bits and rank 0 returned `Ok` with numbers of nothing.
fn wrong_types(cluster: &Cluster, program: &Program) -> Outcome {
    let n = 4 * 64;
    let root = cluster.rank() == 0;
    let (x, xf) = (inputs(cluster, n, 12), vec![1.5f32; if root { n } else { 0 }]);
    let (mut out, mut outf) = (on_root(cluster, 4 * n), vec![0f32; if root { 4 * n } else { 0 }]);
    let four = Pattern::ratio(4, 1).unwrap();
    for index in 0..3 {
        let launch = cluster.launch(program, "spread4").global(&[n]).local(&[64]);
        let launch = match index {
            0 => launch.input(&xf, Pattern::ONE_TO_ONE).output(&mut out, four).scalar(1u32),
            1 => launch.input(&x, Pattern::ONE_TO_ONE).output(&mut outf, four).scalar(1u32),
            _ => launch.input(&x, Pattern::ONE_TO_ONE).output(&mut out, four).scalar(1f32),
        };
        let named = |e: &Error| matches!(e, Error::BadArgument { index: i, .. } if *i == index);
        refused_everywhere(launch, named).map_err(|e| format!("argument {index}: {e}"))?;
    }
    Ok(())
}
