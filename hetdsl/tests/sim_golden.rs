//! The simulator's output, pinned: every scenario case and every case replayed from the suite
//! runs committed under `docs/results`, under every balancer, with and without the engine's
//! back-ups, and with no loss, the last device lost half-way and the first device lost a
//! quarter of the way (ideal makespan); each run is reduced to a digest of its whole result
//! (every package's device, range, start, end and flags, bit for bit; per-device counts and
//! finish times; the makespan, balance and efficiency), or its error message.
//!
//! The digests are compared with `tests/golden/sim-digests.txt`. A change in how packages are
//! handed out, timed or merged shows up here as the list of the runs that changed; rewriting
//! the file is a deliberate act (`HETDSL_BLESS_GOLDEN=1 cargo test --test sim_golden`), to be
//! justified in the commit that does it.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use hetdsl::balance::{BalancerSpec, NAMES};
use hetdsl::sim::scenario::{scenario, Case, SCENARIOS};
use hetdsl::sim::{Loss, SimOptions, SimResult};

const GOLDEN: &str = "tests/golden/sim-digests.txt";

/// FNV-1a over 64-bit words: stable across platforms and Rust versions.
struct Digest(u64);

impl Digest {
    fn new() -> Self {
        Digest(0xcbf2_9ce4_8422_2325)
    }
    fn word(&mut self, w: u64) {
        for b in w.to_le_bytes() {
            self.0 ^= b as u64;
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
    fn float(&mut self, f: f64) {
        self.word(f.to_bits());
    }
}

fn digest(r: &SimResult) -> u64 {
    let mut d = Digest::new();
    for b in r.balancer.bytes() {
        d.word(b as u64);
    }
    d.word(r.packages.len() as u64);
    for p in &r.packages {
        d.word(p.device as u64);
        d.word(p.package.offset);
        d.word(p.package.len);
        d.float(p.start);
        d.float(p.end);
        d.word(p.rerun as u64 | (p.aborted as u64) << 1 | (p.backup as u64) << 2);
    }
    for (&n, &f) in r.device_packages.iter().zip(&r.finish) {
        d.word(n as u64);
        d.float(f);
    }
    for f in [r.makespan, r.balance, r.ideal_makespan, r.efficiency] {
        d.float(f);
    }
    d.0
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// The committed suite runs the goldens replay: a fixed list, so that a new measurement added
/// under `docs/results` adds no case to a check of the simulator's own behaviour.
const REPLAYED: [&str; 11] = [
    "h200x1b/suite-all-backups.json",
    "h200x1b/suite-all.json",
    "h200x2/suite-all.json",
    "h200x2/suite-gpu.json",
    "h200x2g/suite-0_1-all-gpu.json",
    "h200x2h/suite-all.json",
    "h200x4/suite-0_1-1_2-0_1_2-gpu-all.json",
    "h200x4c/suite-0_1-1_2-0_1_2-gpu-all.json",
    "h200x4cpu/suite-0_1-0_1_2-all.json",
    "h200x4e/suite-gpu.json",
    "h200x4f/suite-0_1-1_2-0_1_2-gpu-all.json",
];

/// Every scenario case, then every suite file of [`REPLAYED`] replayed, in that order.
fn cases() -> Vec<(String, Case)> {
    let mut all = Vec::new();
    for name in SCENARIOS {
        for c in scenario(name).expect("a listed scenario") {
            all.push((name.to_string(), c));
        }
    }
    let results = root().join("../docs/results");
    let files: Vec<PathBuf> = REPLAYED.iter().map(|f| results.join(f)).collect();
    for f in files {
        let label = f.strip_prefix(&results).unwrap().to_string_lossy().to_string();
        let text = std::fs::read_to_string(&f).unwrap();
        let cases = hetdsl::sim::replay(&text, &label).unwrap_or_else(|e| panic!("{label}: {e}"));
        for c in cases {
            all.push((label.clone(), c));
        }
    }
    all
}

/// The option sets each case runs under: (label, options).
fn option_sets(case: &Case, ideal: f64) -> Vec<(String, SimOptions)> {
    let n = case.devices.len();
    let mut losses = vec![("none".to_string(), None)];
    if n >= 2 {
        losses.push(("last@0.5".into(), Some(Loss { device: n - 1, at: 0.5 * ideal })));
        losses.push(("first@0.25".into(), Some(Loss { device: 0, at: 0.25 * ideal })));
    }
    let mut sets = Vec::new();
    for backups in [false, true] {
        for (label, loss) in &losses {
            let tag = format!("{}{label}", if backups { "backups," } else { "" });
            sets.push((
                tag,
                SimOptions { seed: 1, loss: *loss, backups, waves: false, ..SimOptions::default() },
            ));
        }
    }
    sets
}

fn outcome(r: hetdsl::Result<SimResult>) -> String {
    match r {
        Ok(r) => format!(
            "{:016x} {} {:?}",
            digest(&r),
            r.device_packages.iter().sum::<usize>(),
            r.makespan
        ),
        Err(e) => format!("error: {e}"),
    }
}

/// One line per run: case, balancer, options, then the digest, the package count and the
/// makespan (those two only to say by how much a changed run changed).
fn render() -> String {
    let specs: Vec<BalancerSpec> = NAMES.iter().map(|n| n.parse().unwrap()).collect();
    let mut out = String::new();
    for (i, (source, case)) in cases().iter().enumerate() {
        let _ = writeln!(out, "case {i}: {source} / {} / {}", case.machine, case.kernel);
        let ideal = {
            let work = case.cost_table();
            let alone: Vec<f64> = case.devices.iter().map(|d| d.alone_seconds(&work)).collect();
            1.0 / alone.iter().map(|t| 1.0 / t).sum::<f64>()
        };
        for spec in &specs {
            for (tag, options) in option_sets(case, ideal) {
                let _ =
                    writeln!(out, "  {i} {spec} {tag}: {}", outcome(case.run_with(spec, &options)));
            }
        }
    }
    out
}

#[test]
fn simulator_output_is_unchanged_on_every_scenario_and_replay() {
    let now = render();
    let path = root().join(GOLDEN);
    if std::env::var_os("HETDSL_BLESS_GOLDEN").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &now).unwrap();
        return;
    }
    let golden = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (HETDSL_BLESS_GOLDEN=1 writes it)", path.display()));
    let (old, new): (Vec<&str>, Vec<&str>) = (golden.lines().collect(), now.lines().collect());
    assert_eq!(old.len(), new.len(), "a different number of runs");
    let changed: Vec<String> = old
        .iter()
        .zip(&new)
        .filter(|(a, b)| a != b)
        .map(|(a, b)| format!("- {a}\n+ {b}"))
        .collect();
    assert!(
        changed.is_empty(),
        "{} of {} lines changed:\n{}",
        changed.len(),
        old.len(),
        changed.iter().take(60).cloned().collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn the_digest_sees_a_one_bit_change_of_any_package() {
    let case = &scenario("hydra").unwrap()[0];
    let r = case.run(&"sigmoid".parse().unwrap(), 1).unwrap();
    let base = digest(&r);
    let mut moved = r.clone();
    moved.packages[3].end = f64::from_bits(moved.packages[3].end.to_bits() + 1);
    assert_ne!(digest(&moved), base);
    let mut flagged = r.clone();
    flagged.packages[0].aborted = true;
    assert_ne!(digest(&flagged), base);
    let mut shifted = r;
    shifted.packages[1].package.offset += 1;
    assert_ne!(digest(&shifted), base);
}
