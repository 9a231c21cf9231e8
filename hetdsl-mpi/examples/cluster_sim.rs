//! Efficiency of the hierarchical balancing against the node count, simulated: nodes of four
//! GPUs and a CPU (all alike, or four kinds in turn) on a regular and two irregular kernels,
//! guided self-scheduling across ranks (`hetdsl_mpi::guided`) and Sigmoid within each node.
//! Needs no MPI.
//!
//! `cargo run --release -p hetdsl-mpi --example cluster_sim [-- NODES...]` (default 1 2 4 8 16 32 64)
//!
//! `RANK_BALANCER` and `NODE_BALANCER` (balancer names as `--balancer` takes them, e.g.
//! `hguided`; `previous` for the rank level's Sigmoid of before, `hier::sigmoid_rank_balancer`)
//! replace the default at either level. `SEED` seeds the devices' jitter (default 7). `CARRY=0` gives each range's node balancer no
//! memory of the node's earlier ranges (the behaviour before `hetdsl_mpi::carry`); `QUEUE=0`
//! hands a rank its next range only once it has answered the last (no range queued ahead).
//! `JSON=FILE` also writes the rows as JSON.
//!
//! `cluster_sim short` instead runs the short jobs of `examples/mpi_compare.rs` on the machine
//! of two H200s and a 32-core CPU as two ranks (`scenario::short_cluster`), seeds 1 to `SEEDS`
//! (default 8), against one process over every device of the machine. `FIRST`, `RANGE` and
//! `JOIN` replace the seconds of a rank's first range's set-up, of each range's, and when its
//! CPU joins its first range; `GBPS` rank 0's link in GB/s. `TRACE=SEED` lists that seed's
//! ranges.
//!
//! `cluster_sim repeated` runs the four jobs of `examples/mpi_compare.rs` as two H100 ranks
//! measured them (`repeated::h100_jobs`) for 10 calls each, the way the driver repeats a launch
//! (fresh, then from the plans of `plan.rs`), and prints each call's form, its ROI over one
//! process's, and its balance, with tails of 5 % and without (the default).

use hetdsl_mpi::scenario::{cluster, profiles};
use hetdsl_mpi::sim::{simulate_cluster_with, Hierarchy};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    match std::env::args().nth(1).as_deref() {
        Some("short") => return short(),
        Some("repeated") => return repeated(),
        _ => {}
    }
    let counts: Vec<usize> =
        std::env::args().skip(1).map(|a| a.parse()).collect::<Result<_, _>>()?;
    let counts = if counts.is_empty() { vec![1, 2, 4, 8, 16, 32, 64] } else { counts };
    let spec = |var: &str| -> Result<hetdsl::balance::BalancerSpec, Box<dyn std::error::Error>> {
        Ok(std::env::var(var).map_or(Ok(Default::default()), |s| s.parse())?)
    };
    let rank_name = std::env::var("RANK_BALANCER").ok();
    let previous = rank_name.as_deref() == Some("previous");
    let rank_spec: Option<hetdsl::balance::BalancerSpec> =
        rank_name.filter(|_| !previous).map(|s| s.parse()).transpose()?;
    let rank = || match &rank_spec {
        _ if previous => Some(hetdsl_mpi::hier::sigmoid_rank_balancer()),
        Some(s) => Some(s.build()),
        None => None,
    };
    let node_spec = spec("NODE_BALANCER")?;
    let node = || node_spec.build();
    let on = |name: &str| std::env::var(name).map_or(true, |v| v != "0");
    let hierarchy = Hierarchy { carry_speeds: on("CARRY"), queue_ahead: on("QUEUE") };
    let mut rows = Vec::new();
    let seed: u64 = std::env::var("SEED").map_or(Ok(7), |s| {
        s.parse().map_err(|_| format!("SEED=`{s}` is not a whole number of at least 0"))
    })?;
    println!("nodes | nodes are      | kernel          | makespan s | ideal s | efficiency | balance | ranges/rank | rank 0 link busy");
    println!("---:|---|---|---:|---:|---:|---:|---:|---:");
    for mixed in [false, true] {
        for (kernel, profile) in profiles() {
            for &n in &counts {
                let c = cluster(n, mixed, profile.clone());
                let r = simulate_cluster_with(&c, rank(), &node, seed, hierarchy)?;
                let ranges: usize = r.ranges.iter().map(Vec::len).sum();
                println!(
                    "{n} | {} | {kernel} | {:.3} | {:.3} | {:.3} | {:.3} | {:.1} | {:.0}%",
                    if mixed { "4 kinds" } else { "alike (H200)" },
                    r.makespan,
                    r.ideal_makespan,
                    r.efficiency,
                    hetdsl::report::balance(&r.finish),
                    ranges as f64 / n as f64,
                    100.0 * r.link_busy.1 / r.makespan
                );
                rows.push(serde_json::json!({
                    "nodes": n, "mixed": mixed, "kernel": kernel, "makespan_s": r.makespan,
                    "ideal_s": r.ideal_makespan, "efficiency": r.efficiency,
                    "balance": hetdsl::report::balance(&r.finish),
                    "ranges_per_rank": ranges as f64 / n as f64,
                    "recv_link_busy": r.link_busy.1 / r.makespan,
                    "carry_speeds": hierarchy.carry_speeds, "rank_balancer": r.rank_balancer,
                    "range_fills": hetdsl_mpi::hier::RANGE_FILLS, "seed": seed,
                    "latency_s": c.network.latency, "bandwidth_bytes_per_s": c.network.bandwidth,
                }));
            }
        }
    }
    if let Ok(path) = std::env::var("JSON") {
        std::fs::write(path, serde_json::to_string_pretty(&rows)?)?;
    }
    Ok(())
}

/// The short jobs on two ranks against one process, per seed and first-range set-up.
fn short() -> Result<(), Box<dyn std::error::Error>> {
    use hetdsl::sim::{simulate, CostTable, SimOptions};
    use hetdsl_mpi::scenario::{one_process, short_cluster, short_jobs};
    use hetdsl_mpi::sim::simulate_cluster;
    // A value that is not a number is an error, not the default in its place.
    let var = |name: &str, default: f64| -> Result<f64, String> {
        std::env::var(name)
            .map_or(Ok(default), |s| s.parse().map_err(|_| format!("{name}=`{s}` is not a number")))
    };
    use hetdsl_mpi::scenario::SHORT_RANGE_OVERHEAD;
    use hetdsl_mpi::scenario::{SHORT_CPU_JOIN, SHORT_FIRST_OVERHEAD, SHORT_NETWORK};
    let each = var("RANGE", SHORT_RANGE_OVERHEAD)?;
    let (first, join) = (var("FIRST", SHORT_FIRST_OVERHEAD)?, var("JOIN", SHORT_CPU_JOIN)?);
    let bandwidth = var("GBPS", SHORT_NETWORK.bandwidth / 1e9)? * 1e9;
    let seeds = var("SEEDS", 8.0)?;
    if !(seeds >= 1.0 && seeds.fract() == 0.0) {
        return Err(format!("SEEDS={seeds}: give a whole number of seeds, at least 1").into());
    }
    let seeds = seeds as u64;
    println!("job | seed | one process s | 2 ranks s | ratio | balance | rank 0: ranges, units, done s | rank 1: ranges, units, done s");
    println!("---|---:|---:|---:|---:|---:|---|---");
    for job in short_jobs() {
        let mut ratios = Vec::new();
        for seed in 1..=seeds {
            let devices = one_process(&job);
            let table = CostTable::new(&job.profile, job.units, 4096);
            let options = SimOptions { seed, backups: true, ..SimOptions::default() };
            let mut b = hetdsl::balance::default_balancer();
            let one = simulate(&devices, &table, b.as_mut(), &options)?.makespan;
            let mut c = short_cluster(&job, 2);
            c.network.bandwidth = bandwidth;
            for node in &mut c.nodes {
                node.first_overhead = first;
                node.range_overhead = each;
                node.first_joins.iter_mut().for_each(|j| j.at = join);
            }
            let node = hetdsl::balance::default_balancer;
            let r = simulate_cluster(&c, None, &node, seed)?;
            let rank = |i: usize| {
                let units: u64 = r.ranges[i].iter().map(|p| p.len).sum();
                format!("{}, {units}, {:.3}", r.ranges[i].len(), r.finish[i])
            };
            ratios.push(one / r.makespan);
            println!(
                "{} | {seed} | {one:.3} | {:.3} | {:.3} | {:.3} | {} | {}",
                job.name,
                r.makespan,
                one / r.makespan,
                hetdsl::report::balance(&r.finish),
                rank(0),
                rank(1)
            );
            if std::env::var("TRACE").is_ok_and(|v| v == seed.to_string()) {
                for run in &r.runs {
                    println!(
                        "    rank {} {:?}: handed {:.3}, computing {:.3}-{:.3}, merged {:.3}",
                        run.rank, run.package, run.handed, run.start, run.computed, run.merged
                    );
                }
            }
        }
        let min = ratios.iter().copied().fold(f64::INFINITY, f64::min);
        let mean = ratios.iter().sum::<f64>() / ratios.len() as f64;
        println!("{} | all | | | min {min:.3}, mean {mean:.3} | | |", job.name);
    }
    Ok(())
}

/// Repeated calls of the four jobs on two simulated H100 ranks (see the module's documentation).
fn repeated() -> Result<(), Box<dyn std::error::Error>> {
    use hetdsl_mpi::plan::Form;
    use hetdsl_mpi::repeated::{h100_jobs, median_from, one_package, simulate_calls};
    println!("job | tail | calls (F fresh / P planned: ratio to one process / balance) | median of calls 4-10");
    println!("---|---:|---|---:");
    for job in h100_jobs() {
        for tail in [0.05, hetdsl_mpi::plan::PLAN_TAIL] {
            let calls = simulate_calls(&job.cluster(2), &one_package, 10, tail, 1)?;
            let shown: Vec<String> = calls
                .iter()
                .map(|c| {
                    let form = if c.form == Form::Planned { "P" } else { "F" };
                    format!("{form} {:.3}/{:.2}", job.one_process_seconds / c.makespan, c.balance)
                })
                .collect();
            let median = job.one_process_seconds / median_from(&calls, 3);
            println!("{} | {tail} | {} | {median:.3}", job.name, shown.join(", "));
        }
    }
    Ok(())
}
