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
//! memory of the node's earlier ranges (the behaviour before `hetdsl_mpi::carry`).
//! `JSON=FILE` also writes the rows as JSON.

use hetdsl_mpi::scenario::{cluster, profiles};
use hetdsl_mpi::sim::{simulate_cluster_with, Hierarchy};

fn main() -> Result<(), Box<dyn std::error::Error>> {
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
        _ if previous => hetdsl_mpi::hier::sigmoid_rank_balancer(),
        Some(s) => s.build(),
        None => hetdsl_mpi::hier::default_rank_balancer(),
    };
    let node_spec = spec("NODE_BALANCER")?;
    let node = || node_spec.build();
    let hierarchy = Hierarchy { carry_speeds: std::env::var("CARRY").map_or(true, |v| v != "0") };
    let mut rows = Vec::new();
    let seed: u64 = std::env::var("SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(7);
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
