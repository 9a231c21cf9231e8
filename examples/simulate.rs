//! Simulate every balancer on the paper machines and the measured H200 machines.
//!
//! ```text
//! cargo run --release --example simulate -- [--scenario batel|hydra|desktop|h200|all]
//!     [--replay SUITE.json]... [--balancer SPEC]... [--seed N] [--json FILE] [--trace]
//!     [--backups] [--machine TEXT] [--relaunch N]
//! ```
//!
//! `--relaunch N` simulates an iterative application instead: per case, a first launch under
//! the first `--balancer` (default `sigmoid`), then N-1 launches under `Learned`, each from the
//! previous launch's history, and prints each launch's efficiency and the share of the
//! work-groups that changed device from the launch before.
//!
//! `--backups` adds the engine's speculative back-ups of stragglers (on by default in the
//! engine); without it the balancers are compared alone.
//!
//! `--replay` adds the cases of a real run (`examples/suite.rs --json`): each kernel with the
//! cost map and device speeds measured there (`hetdsl::sim::replay`); given alone, only those
//! run.
//!
//! For each scenario, machine, kernel profile and balancer it prints the number of packages,
//! the balance (first device done / last device done) and the efficiency (ideal makespan /
//! simulated makespan; the ideal is a lower bound, each device alone without jitter, so the
//! efficiency is at most 1), and with `--json` writes one record per run with the makespan
//! too. The h200 scenario has each machine twice: at the measured 8.2 ms and at the paper
//! size (1.5 s on one H200).
//! Balancers are given as `BalancerSpec` strings (`sigmoid`, `hguided:k=2,m=1`, ...); the
//! default is every name in `hetdsl::balance::NAMES`.

use std::collections::BTreeMap;
use std::process::ExitCode;

use hetdsl::balance::{BalancerSpec, NAMES};
use hetdsl::sim::scenario::{scenario, Case, SCENARIOS};
use hetdsl::sim::{SimOptions, SimResult};

struct Args {
    scenarios: Vec<String>,
    replays: Vec<String>,
    balancers: Vec<BalancerSpec>,
    seed: u64,
    json: Option<String>,
    trace: bool,
    backups: bool,
    /// Only the machines whose name contains this.
    machine: Option<String>,
    /// Launches of the iterative mode (0: off).
    relaunch: usize,
}

fn usage() -> String {
    format!(
        "usage: simulate [--scenario {}|all] [--replay SUITE.json]... [--balancer SPEC]... [--seed N] [--json FILE] [--trace] [--backups] [--machine TEXT] [--relaunch N]\nbalancers: {}",
        SCENARIOS.join("|"),
        NAMES.join(", ")
    )
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        scenarios: Vec::new(),
        replays: Vec::new(),
        balancers: Vec::new(),
        seed: 1,
        json: None,
        trace: false,
        backups: false,
        machine: None,
        relaunch: 0,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value\n{}", usage()));
        match flag.as_str() {
            "--scenario" => args.scenarios.push(value()?),
            "--replay" => args.replays.push(value()?),
            "--balancer" => args.balancers.push(value()?.parse().map_err(|e| format!("{e}"))?),
            "--seed" => {
                args.seed =
                    value()?.parse().map_err(|_| format!("--seed needs a number\n{}", usage()))?
            }
            "--json" => args.json = Some(value()?),
            "--trace" => args.trace = true,
            "--backups" => args.backups = true,
            "--machine" => args.machine = Some(value()?),
            "--relaunch" => {
                args.relaunch =
                    value()?.parse().ok().filter(|n| *n >= 2).ok_or_else(|| {
                        format!("--relaunch needs a count of 2 or more\n{}", usage())
                    })?
            }
            "--help" | "-h" => return Err(usage()),
            other => return Err(format!("unknown argument `{other}`\n{}", usage())),
        }
    }
    if (args.scenarios.is_empty() && args.replays.is_empty())
        || args.scenarios.iter().any(|s| s == "all")
    {
        args.scenarios = SCENARIOS.iter().map(|s| s.to_string()).collect();
    }
    if args.balancers.is_empty() && args.relaunch > 0 {
        args.balancers = vec!["sigmoid".parse().expect("the default balancer's name parses")];
    } else if args.balancers.is_empty() {
        args.balancers =
            NAMES.iter().map(|n| n.parse().expect("every listed name parses")).collect();
    }
    Ok(args)
}

/// One printed matrix: rows are balancers, columns kernels, plus the mean and the minimum.
fn matrix(
    title: &str,
    kernels: &[String],
    rows: &BTreeMap<usize, (String, Vec<f64>)>,
    digits: usize,
) -> String {
    let mut out = format!("{title:<18}");
    for k in kernels {
        out += &format!(" {:>10}", k.chars().take(10).collect::<String>());
    }
    out += &format!(" | {:>8} {:>8}\n", "mean", "min");
    for (name, values) in rows.values() {
        out += &format!("{name:<18}");
        for v in values {
            out += &format!(" {v:>10.digits$}");
        }
        let mean = values.iter().sum::<f64>() / values.len() as f64;
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        out += &format!(" | {mean:>8.digits$} {min:>8.digits$}\n");
    }
    out
}

/// Every package of one run: device, work-groups, start and end in milliseconds.
fn print_trace(case: &Case, label: &str, r: &SimResult) {
    println!("-- {} / {} / {label}", case.machine, case.kernel);
    for p in &r.packages {
        let what = if p.aborted {
            " aborted"
        } else if p.rerun {
            " re-run"
        } else {
            ""
        };
        println!(
            "   dev {} groups {:>8}+{:<8} {:>10.3} -> {:>10.3} ms{what}",
            p.device,
            p.package.offset,
            p.package.len,
            p.start * 1e3,
            p.end * 1e3
        );
    }
}

fn record(case: &Case, spec: &BalancerSpec, r: &SimResult) -> serde_json::Value {
    serde_json::json!({
        "scenario": case.scenario,
        "machine": case.machine,
        "kernel": case.kernel,
        "profile": case.profile.kind(),
        "total_groups": case.total_groups,
        "balancer": spec.to_string(),
        "packages": r.device_packages.iter().sum::<usize>(),
        "device_packages": r.device_packages,
        "balance": r.balance,
        "efficiency": r.efficiency,
        "makespan_s": r.makespan,
        "ideal_makespan_s": r.ideal_makespan,
        "finish_s": r.finish,
    })
}

/// The iterative mode: per case, each launch's efficiency and the work-groups that moved.
fn relaunch(name: &str, cases: &[&Case], args: &Args) -> Result<(), String> {
    let first = &args.balancers[0];
    let options = SimOptions { seed: args.seed, loss: None, backups: args.backups };
    let mut header = format!("{:<16} {:>8}", "kernel", first.to_string());
    for i in 2..=args.relaunch {
        header += &format!(" {:>9} {:>7}", format!("learned{i}"), "moved");
    }
    println!("{header}");
    for case in cases {
        let launches = case
            .relaunch(first, args.relaunch, &options)
            .map_err(|e| format!("{name} / {}: {e}", case.kernel))?;
        if args.trace {
            for (i, l) in launches.iter().enumerate() {
                print_trace(case, &format!("launch {}: {}", i + 1, l.result.balancer), &l.result);
            }
        }
        let mut line = format!("{:<16} {:>8.3}", case.kernel, launches[0].result.efficiency);
        for pair in launches.windows(2) {
            let moved = pair[0].history.moved(&pair[1].history) as f64 / case.total_groups as f64;
            line += &format!(" {:>9.3} {:>6.1}%", pair[1].result.efficiency, moved * 100.0);
        }
        println!("{line}");
    }
    println!();
    Ok(())
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let mut records = Vec::new();
    let mut sets: Vec<(String, Vec<Case>)> = Vec::new();
    for name in &args.scenarios {
        let Some(cases) = scenario(name) else {
            eprintln!("unknown scenario `{name}`\n{}", usage());
            return ExitCode::FAILURE;
        };
        sets.push((name.clone(), cases));
    }
    for path in &args.replays {
        let cases = std::fs::read_to_string(path)
            .map_err(|e| e.to_string())
            .and_then(|text| hetdsl::sim::replay(&text, path));
        match cases {
            Ok(cases) => sets.push(("replay".into(), cases)),
            Err(e) => {
                eprintln!("--replay {path}: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    for (name, cases) in &sets {
        // Group the cases by machine, keeping their order.
        let mut machines: Vec<(String, Vec<&Case>)> = Vec::new();
        for c in cases {
            if args.machine.as_ref().is_some_and(|m| !c.machine.contains(m.as_str())) {
                continue;
            }
            match machines.iter_mut().find(|(m, _)| *m == c.machine) {
                Some((_, list)) => list.push(c),
                None => machines.push((c.machine.clone(), vec![c])),
            }
        }
        for (machine, cases) in machines {
            println!("== {name}: {machine} ==");
            if args.relaunch > 0 {
                if let Err(e) = relaunch(name, &cases, &args) {
                    eprintln!("{e}");
                    return ExitCode::FAILURE;
                }
                continue;
            }
            let kernels: Vec<String> = cases.iter().map(|c| c.kernel.clone()).collect();
            let (mut packages, mut balance, mut efficiency) =
                (BTreeMap::new(), BTreeMap::new(), BTreeMap::new());
            for (i, spec) in args.balancers.iter().enumerate() {
                let label = spec.to_string();
                for case in &cases {
                    let options = SimOptions { seed: args.seed, loss: None, backups: args.backups };
                    let r = match case.run_with(spec, &options) {
                        Ok(r) => r,
                        Err(e) => {
                            eprintln!("{name} / {} / {label}: {e}", case.kernel);
                            return ExitCode::FAILURE;
                        }
                    };
                    if args.trace {
                        print_trace(case, &label, &r);
                    }
                    let row = |m: &mut BTreeMap<usize, (String, Vec<f64>)>, v: f64| {
                        m.entry(i).or_insert_with(|| (label.clone(), Vec::new())).1.push(v)
                    };
                    row(&mut packages, r.device_packages.iter().sum::<usize>() as f64);
                    row(&mut balance, r.balance);
                    row(&mut efficiency, r.efficiency);
                    records.push(record(case, spec, &r));
                }
            }
            print!("{}", matrix("packages", &kernels, &packages, 0));
            print!("{}", matrix("balance", &kernels, &balance, 3));
            print!("{}", matrix("efficiency", &kernels, &efficiency, 3));
            println!();
        }
    }
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&records).expect("records are plain JSON values");
        if let Err(e) = std::fs::write(path, text) {
            eprintln!("cannot write {path}: {e}");
            return ExitCode::FAILURE;
        }
        println!("wrote {} records to {path}", records.len());
    }
    ExitCode::SUCCESS
}
