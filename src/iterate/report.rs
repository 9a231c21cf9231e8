//! The benchmarks' figures for people (a table per benchmark) and the co-execution efficiency,
//! computed as the suite computes it: speedup over the fastest device alone divided by Smax,
//! the speedup the devices' speeds would allow.

use super::{ms, BenchResult, Variant};

/// Co-execution efficiency of the session over every device, per step after the first.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Efficiency {
    /// Each device alone: its per-step seconds (median after the first step).
    pub single_step_seconds: Vec<(usize, f64)>,
    pub session_step_seconds: f64,
    /// T_fastest_alone / T_session.
    pub speedup: f64,
    /// Σ T_fastest / T_i: the speedup if every device's speed added up.
    pub smax: f64,
    /// speedup / Smax.
    pub efficiency: f64,
}

/// The efficiency of the co-executed session against the single-device sessions, when both
/// ran and were correct.
pub fn efficiency(variants: &[Variant]) -> Option<Efficiency> {
    let singles: Vec<(usize, f64)> = variants
        .iter()
        .filter(|v| v.variant == "single" && v.verdict.correct)
        .filter_map(|v| Some((v.devices[0], v.step_time()?)))
        .collect();
    let session = variants.iter().find(|v| v.variant == "session" && v.verdict.correct)?;
    let t = session.step_time()?;
    // Only the devices the session ran on, each measured alone.
    if singles.is_empty() || session.devices.iter().any(|d| !singles.iter().any(|s| s.0 == *d)) {
        return None;
    }
    let times: Vec<f64> = singles.iter().map(|s| s.1).collect();
    let speedup = hetdsl::report::speedup(&times, t);
    let smax = hetdsl::report::smax(&times);
    Some(Efficiency {
        single_step_seconds: singles,
        session_step_seconds: t,
        speedup,
        smax,
        efficiency: speedup / smax,
    })
}

fn mib(bytes: Option<f64>) -> String {
    bytes.map_or("-".into(), |b| format!("{:.2}", b / (1u64 << 20) as f64))
}

/// Mean of a per-step series after its first step (the first includes the uploads).
fn after_first(series: &Option<Vec<u64>>) -> Option<f64> {
    let s = series.as_ref()?;
    let rest = s.get(1..).filter(|r| !r.is_empty())?;
    Some(rest.iter().sum::<u64>() as f64 / rest.len() as f64)
}

/// A session variant's first step (its inputs uploaded) and its results' read home, each with
/// the rate it reached: the time a loop pays once, beside the per-step figures.
fn print_transfers(v: &Variant) {
    let (Some(first), Some(moved), Some((home, back))) =
        (v.step_seconds.first(), v.moved_per_step.as_ref().and_then(|m| m.first()), v.home)
    else {
        return;
    };
    let gbs = |bytes: u64, s: f64| if s > 0.0 { bytes as f64 / s / 1e9 } else { f64::NAN };
    let devices: Vec<String> = v.devices.iter().map(|d| d.to_string()).collect();
    println!(
        "{} {}: first step {:.1} ms, {:.0} MiB in ({:.1} GB/s over the step); results home {:.1} ms, {:.0} MiB ({:.1} GB/s)",
        v.variant,
        devices.join(","),
        1e3 * first,
        *moved as f64 / (1u64 << 20) as f64,
        gbs(*moved, *first),
        1e3 * home,
        back as f64 / (1u64 << 20) as f64,
        gbs(back, home),
    );
}

/// The table of one benchmark.
pub fn print_result(r: &BenchResult) {
    println!(
        "== {}: {} | {} step(s), {} launch(es) per step{}",
        r.bench,
        r.describe,
        r.steps,
        r.launches_per_step,
        if r.submitted { ", session launches submitted" } else { "" }
    );
    for (i, d) in r.devices.iter().enumerate() {
        println!("   device {i}: {d}");
    }
    println!(
        "{:<9} {:<8} {:>8} {:>10} {:>12} {:>12} {:>12} {:>11} {:>10} {:>10} {:>10} {:>10}  check",
        "variant",
        "devices",
        "steps",
        "setup ms",
        "median ms",
        "mean ms",
        "med>1 ms",
        "loop s",
        "MiB/step",
        "min MiB",
        "steady MiB",
        "back MiB"
    );
    for v in &r.variants {
        let devices: Vec<String> = v.devices.iter().map(|d| d.to_string()).collect();
        println!(
            "{:<9} {:<8} {:>8} {:>10.1} {:>12} {:>12} {:>12} {:>11.3} {:>10} {:>10} {:>10} {:>10}  {}{}",
            v.variant,
            devices.join(","),
            format!("{}/{}", v.steps_done, v.steps),
            v.setup_seconds * 1e3,
            ms(v.median_step_seconds),
            ms(v.mean_step_seconds),
            ms(v.median_from_second),
            v.loop_seconds,
            mib(after_first(&v.moved_per_step)),
            mib(after_first(&v.minimum_per_step)),
            mib(after_first(&v.steady_per_step)),
            mib(after_first(&v.read_back_per_step)),
            v.verdict,
            if v.check.is_empty() { String::new() } else { format!(" [{}]", v.check) },
        );
    }
    for v in &r.variants {
        print_transfers(v);
    }
    for v in r.variants.iter().filter(|v| v.devices.len() > 1 && !v.share.is_empty()) {
        let parts: Vec<String> =
            v.share.iter().map(|(d, s)| format!("device {d} {:.1}%", 100.0 * s)).collect();
        println!("{} split (steps after the first): {}", v.variant, parts.join(", "));
        if let Some(s) = v.submit_per_step {
            println!(
                "{} host time in submit per step (median after the first): {:.3} ms",
                v.variant,
                1e3 * s
            );
        }
        let busy: Vec<String> =
            v.busy_per_step.iter().map(|(d, s)| format!("device {d} {:.3} ms", 1e3 * s)).collect();
        if !busy.is_empty() {
            println!(
                "{} kernels per step (median after the first): {}",
                v.variant,
                busy.join(", ")
            );
        }
        let splits: Vec<String> = v.splits.iter().map(|(b, n)| format!("{b} x{n}")).collect();
        if !splits.is_empty() {
            println!("{} launches after the first step split by: {}", v.variant, splits.join(", "));
        }
    }
    // What a step costs beyond its kernels: the host's hand-overs, the loop's first enqueues
    // and its end spread over the steps. Against a device alone, it sets how close to Smax
    // a session of short steps can come.
    for v in &r.variants {
        let busiest = v.busy_per_step.iter().map(|(_, s)| *s).reduce(f64::max);
        if let (Some(step), Some(busiest)) = (v.median_from_second, busiest) {
            println!(
                "{} on {:?}: {:.1} us a step beyond its busiest device's kernels ({:.3} ms)",
                v.variant,
                v.devices,
                1e6 * (step - busiest),
                1e3 * busiest
            );
        }
    }
    if let Some(b) = r.best_single {
        println!("best single device: {b}");
    }
    match &r.efficiency {
        Some(e) => println!(
            "session over {} device(s), steps after the first: speedup {:.3} over the best alone, Smax {:.3}, efficiency {:.3}",
            e.single_step_seconds.len(),
            e.speedup,
            e.smax,
            e.efficiency
        ),
        None => println!("efficiency: not computed (needs the session and every device alone, all correct)"),
    }
    println!(
        "(MiB columns: means over the steps after the first. MiB/step: moved into the devices, \
         from the session's counters; min: the least those steps' partitions needed; steady: \
         the least had each step's partition been kept; back: read back to the host)"
    );
}
