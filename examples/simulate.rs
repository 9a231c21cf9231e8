//! Simulate every balancer on the paper machines and the measured H200 machines.
//!
//! ```text
//! cargo run --release --example simulate -- [--scenario batel|hydra|desktop|h200|all]
//!     [--replay SUITE.json]... [--balancer SPEC]... [--seed N] [--json FILE] [--trace]
//!     [--backups] [--waves] [--pipeline] [--machine TEXT] [--relaunch N]
//!     [--traffic IN,OUT] [--gpu-link GBPS[,US]] [--cpu-link GBPS[,US]]
//! ```
//!
//! `--traffic` makes every case's work-groups move IN bytes to the device and OUT bytes back
//! per package; `--gpu-link` and `--cpu-link` give every GPU (CPU) device a link of GBPS GB/s
//! with US microseconds per transfer (default 10), so any scenario can be run memory-bound.
//! The `membound` scenario has its own traffic and links (`hetdsl::sim` module docs).
//!
//! `--help` lists every flag with its default. `--plots DIR` writes one plot per simulated run
//! (`--plot-format svg|png`).
//!
//! `--relaunch N` simulates an iterative application instead: per case, a first launch under
//! the first `--balancer` (default `sigmoid`), then N-1 launches under `Learned`, each from the
//! previous launch's history, and prints each launch's efficiency and the share of the
//! work-groups that changed device from the launch before.
//!
//! `--backups` adds the engine's speculative back-ups of stragglers (on by default in the
//! engine); without it the balancers are compared alone. `--pipeline` queues a package behind
//! the running one where the balancer offers it, as the engine does by default, so that its
//! per-package overhead is paid while the one before computes.
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
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;

use hetdsl::balance::DeviceKind;
use hetdsl::balance::{BalancerSpec, NAMES};
use hetdsl::sim::scenario::{scenario, Case, SCENARIOS};
use hetdsl::sim::{Link, SimOptions, SimResult, Traffic};
use hetdsl_samples::harness::cli;
use hetdsl_samples::harness::plot::RunPlot;
use hetdsl_samples::harness::progress::Progress;

/// Simulates every balancer on the papers' machines, the measured H200 machines and replays of
/// measured suite runs.
#[derive(Debug, Parser)]
#[command(name = "simulate", after_help = after_help())]
struct Args {
    /// A scenario to simulate, or `all`; repeatable [default: all, unless --replay is given]
    #[arg(long = "scenario", value_name = "NAME")]
    scenarios: Vec<String>,
    /// A suite run (`suite --json`) whose kernels, cost maps and device speeds to replay;
    /// repeatable [default: none]
    #[arg(long = "replay", value_name = "SUITE.json")]
    replays: Vec<String>,
    /// A balancer spec; repeatable [default: every balancer family]
    #[arg(long = "balancer", value_name = "SPEC")]
    balancers: Vec<BalancerSpec>,
    /// The seed of the devices' jitter.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// One record per run [default: none]
    #[arg(long, value_name = "FILE")]
    json: Option<String>,
    /// Print every package of every run.
    #[arg(long)]
    trace: bool,
    /// Add the engine's speculative back-ups of stragglers.
    #[arg(long)]
    backups: bool,
    /// Charge a package's partial last wave of work-groups as a whole wave, as on a GPU.
    #[arg(long)]
    waves: bool,
    /// Queue packages ahead where the balancer offers them, as the engine does.
    #[arg(long)]
    pipeline: bool,
    /// Only the machines whose name contains this [default: every machine]
    #[arg(long, value_name = "TEXT")]
    machine: Option<String>,
    /// One plot per simulated run (package size and speed per device over time) [default: none]
    #[arg(long, value_name = "DIR")]
    plots: Option<PathBuf>,
    /// Format of the `--plots` files.
    #[arg(long, default_value = "svg", value_name = "svg|png")]
    plot_format: PlotFormat,
    /// Simulate N launches of each case: the first under the first balancer, then N-1 learned
    /// from the launch before [default: off]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(2..))]
    relaunch: Option<u64>,
    /// Bytes every work-group writes to its device and reads back, for every case
    /// [default: each case's own, none outside the membound scenario]
    #[arg(long, value_name = "IN,OUT", value_parser = cli::parse_traffic)]
    traffic: Option<Traffic>,
    /// Link of every GPU device: GB/s and microseconds per transfer [default: each case's own]
    #[arg(long, value_name = "GBPS[,US]", value_parser = cli::parse_link)]
    gpu_link: Option<Link>,
    /// Link of every CPU device (its host copies), as --gpu-link [default: each case's own]
    #[arg(long, value_name = "GBPS[,US]", value_parser = cli::parse_link)]
    cpu_link: Option<Link>,
}

/// Apply the command line's traffic and links to `case`.
fn override_transfers(case: &mut Case, args: &Args) {
    if let Some(t) = args.traffic {
        case.traffic = t;
    }
    for d in &mut case.devices {
        let link = match d.kind {
            DeviceKind::Cpu => args.cpu_link,
            _ => args.gpu_link,
        };
        if link.is_some() {
            d.link = link;
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, clap::ValueEnum)]
enum PlotFormat {
    Svg,
    Png,
}

fn after_help() -> String {
    format!("scenarios: {}\nbalancers: {}", SCENARIOS.join(", "), NAMES.join(", "))
}

fn parse_args() -> Args {
    let mut args = Args::parse();
    if (args.scenarios.is_empty() && args.replays.is_empty())
        || args.scenarios.iter().any(|s| s == "all")
    {
        args.scenarios = SCENARIOS.iter().map(|s| s.to_string()).collect();
    }
    if args.balancers.is_empty() && args.relaunch.is_some() {
        args.balancers = vec!["sigmoid".parse().expect("the default balancer's name parses")];
    } else if args.balancers.is_empty() {
        args.balancers =
            NAMES.iter().map(|n| n.parse().expect("every listed name parses")).collect();
    }
    args
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

/// The plot of one simulated run, named after its scenario, machine, kernel and balancer.
fn plot(
    dir: &Path,
    format: PlotFormat,
    scenario: &str,
    case: &Case,
    label: &str,
    r: &SimResult,
) -> Result<(), String> {
    let clean = |text: &str| -> String {
        text.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect()
    };
    let stem = clean(&format!("{scenario}_{}_{}_{label}", case.machine, case.kernel));
    let plot = RunPlot::of_sim(&case.machine, &case.kernel, r);
    let (path, bytes) = match format {
        PlotFormat::Svg => (dir.join(format!("{stem}.svg")), plot.svg()?.into_bytes()),
        PlotFormat::Png => (dir.join(format!("{stem}.png")), plot.png()?),
    };
    std::fs::write(&path, bytes).map_err(|e| format!("writing {}: {e}", path.display()))
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

/// The simulator's knobs the command line sets.
fn sim_options(args: &Args) -> SimOptions {
    SimOptions {
        seed: args.seed,
        backups: args.backups,
        waves: args.waves,
        pipeline: args.pipeline,
        ..SimOptions::default()
    }
}

/// The iterative mode: per case, each launch's efficiency and the work-groups that moved.
fn relaunch(name: &str, cases: &[&Case], args: &Args, launches: usize) -> Result<(), String> {
    let first = &args.balancers[0];
    let options = sim_options(args);
    let mut header = format!("{:<16} {:>8}", "kernel", first.to_string());
    for i in 2..=launches {
        header += &format!(" {:>9} {:>7}", format!("learned{i}"), "moved");
    }
    println!("{header}");
    for case in cases {
        let launches = case
            .relaunch(first, launches, &options)
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
    let args = parse_args();
    hetdsl_samples::harness::init_tracing();
    if let Some(dir) = &args.plots {
        if let Err(e) = std::fs::create_dir_all(dir) {
            eprintln!("creating {}: {e}", dir.display());
            return ExitCode::FAILURE;
        }
    }
    let mut records = Vec::new();
    let mut sets: Vec<(String, Vec<Case>)> = Vec::new();
    for name in &args.scenarios {
        let Some(cases) = scenario(name) else {
            eprintln!("unknown scenario `{name}`\n{}", after_help());
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
    for (_, cases) in &mut sets {
        cases.iter_mut().for_each(|c| override_transfers(c, &args));
    }
    // One run per kept case and balancer.
    let kept = |c: &&Case| args.machine.as_ref().is_none_or(|m| c.machine.contains(m.as_str()));
    let runs: usize = sets.iter().map(|(_, cases)| cases.iter().filter(kept).count()).sum();
    if let (0, Some(m)) = (runs, &args.machine) {
        let mut names: Vec<&str> =
            sets.iter().flat_map(|(_, c)| c.iter().map(|c| c.machine.as_str())).collect();
        names.sort_unstable();
        names.dedup();
        eprintln!("--machine {m}: no machine of these scenarios matches ({})", names.join(", "));
        return ExitCode::FAILURE;
    }
    let progress = Progress::new((runs * args.balancers.len()) as u64);
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
            progress.suspend(|| println!("== {name}: {machine} =="));
            if let Some(n) = args.relaunch {
                if let Err(e) = relaunch(name, &cases, &args, n as usize) {
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
                    progress.set_what(format!("{name} · {machine} · {} · {label}", case.kernel));
                    let options = sim_options(&args);
                    let r = match case.run_with(spec, &options) {
                        Ok(r) => r,
                        Err(e) => {
                            eprintln!("{name} / {} / {label}: {e}", case.kernel);
                            return ExitCode::FAILURE;
                        }
                    };
                    if args.trace {
                        progress.suspend(|| print_trace(case, &label, &r));
                    }
                    if let Some(dir) = &args.plots {
                        if let Err(e) = plot(dir, args.plot_format, name, case, &label, &r) {
                            eprintln!("{e}");
                            return ExitCode::FAILURE;
                        }
                    }
                    let row = |m: &mut BTreeMap<usize, (String, Vec<f64>)>, v: f64| {
                        m.entry(i).or_insert_with(|| (label.clone(), Vec::new())).1.push(v)
                    };
                    row(&mut packages, r.device_packages.iter().sum::<usize>() as f64);
                    row(&mut balance, r.balance);
                    row(&mut efficiency, r.efficiency);
                    records.push(record(case, spec, &r));
                    progress.advance(1);
                }
            }
            progress.suspend(|| {
                print!("{}", matrix("packages", &kernels, &packages, 0));
                print!("{}", matrix("balance", &kernels, &balance, 3));
                print!("{}", matrix("efficiency", &kernels, &efficiency, 3));
                println!();
            });
        }
    }
    progress.finish();
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
