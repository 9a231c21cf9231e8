//! The machines and kernels the simulator is run on (`examples/simulate.rs`).
//!
//! Figures from the papers and from measurements are cited where they are used; the rest
//! (per-package overheads, jitter, the GPU-alone time of the paper machines, the desktop's
//! real speed ratios) are stated assumptions, the same for every balancer.

use super::{simulate, CostProfile, CostTable, SimDevice, SimOptions, SimResult, Traffic};
use crate::balance::{BalancerSpec, History, Learned};
use crate::error::Result;
use crate::work::DeviceKind;

/// Every scenario name [`scenario`] knows.
pub const SCENARIOS: &[&str] = &["batel", "hydra", "desktop", "h200", "membound"];

/// Per-package speed spread. The Sigmoid paper (Fig. 7) finds regular kernels vary up to ~20% between
/// packages; 3% keeps the simulated regular kernels clearly regular.
pub(crate) const JITTER: f64 = 0.03;
/// Seconds the fastest device needs alone on the paper machines' kernels (the EngineCL
/// optimisation study sizes its problems for about 2 s on the fastest device).
const PAPER_GPU_SECONDS: f64 = 2.0;
/// Host overhead per package on the paper machines (launch + output read-back over PCIe 2/3).
const PAPER_OVERHEAD: f64 = 0.5e-3;
/// Host overhead per package on the H200 machines: an NVIDIA launch and event wait, and a PoCL
/// launch on the CPU.
pub(super) const H200_GPU_OVERHEAD: f64 = 20e-6;
pub(super) const H200_CPU_OVERHEAD: f64 = 50e-6;

/// One simulation input: a machine, a kernel, and its size.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    pub scenario: &'static str,
    pub machine: String,
    pub kernel: String,
    pub profile: CostProfile,
    pub total_groups: u64,
    /// Bytes each work-group moves to and from a device (none for the compute-bound cases).
    pub traffic: Traffic,
    pub devices: Vec<SimDevice>,
}

fn device(
    name: &str,
    kind: DeviceKind,
    speed: f64,
    overhead: f64,
    min_groups: u64,
    nominal: f64,
) -> SimDevice {
    SimDevice {
        name: name.into(),
        kind,
        speed,
        overhead,
        min_groups,
        nominal_gflops: nominal,
        jitter: JITTER,
        link: None,
    }
}

/// The five cost shapes of the issue, for the machines without a per-kernel table.
pub fn profiles() -> Vec<(&'static str, CostProfile)> {
    vec![
        ("uniform", CostProfile::Uniform),
        ("mandelbrot-band", CostProfile::Band { center: 0.5, width: 0.15, peak: 6.0 }),
        ("rap-rising", CostProfile::Rising { from: 0.2, to: 1.8 }),
        ("aho-random", CostProfile::Random { spread: 0.6, seed: 11 }),
        ("bursts", CostProfile::Bursts { rate: 0.02, height: 8.0, length: 0.01, seed: 13 }),
    ]
}

/// Batel (Sigmoid paper, §4.2): two Xeon E5-2620 seen as one 24-thread CPU device and two Tesla
/// K20m. Per kernel, Table 1 gives the GPU's speed relative to the CPU, the problem size and
/// the local work size (G = size / lws) and whether it is regular.
fn batel() -> Vec<Case> {
    // K20m: 13 SMX × 192 lanes × 2 × 0.706 GHz. E5-2620 ×2: 12 cores × 2.0 GHz × 16 SP
    // flop/cycle (AVX add + mul).
    const K20M_GFLOPS: f64 = 3524.0;
    const CPU_GFLOPS: f64 = 384.0;
    // Kepler: at most 16 resident groups and 2048 work-items per SMX, 13 SMX (fewer if the
    // kernel's registers or local memory limit it; Table 1 gives no register counts).
    // NBody: 51 200 bodies / 128 = 400 groups against 208 per K20m, so any GPU package lasts
    // half the GPU-alone time and the CPU runs one package, sized before any measurement
    // (test `nbody_balance_is_bounded_by_the_cpu_s_single_unmeasured_package`). The paper's
    // Table 3 counts 27 Sigmoid and 175 DefHG packages on NBody, which 400 groups cannot hold
    // at these bounds (175 packages average 2.3 groups): its NBody run must have been finer
    // grained (several launches, or a far lower occupancy bound). We keep Table 1's figures.
    let k20m_occupancy = |lws: u64| 13 * (2048 / lws).min(16);
    let irregular_random = |seed| CostProfile::Random { spread: 0.6, seed };
    let table: [(&str, f64, u64, u64, CostProfile); 9] = [
        ("Binomial", 7.28, 2_048_000, 256, CostProfile::Uniform),
        ("Gaussian", 13.77, 8000 * 8000, 128, CostProfile::Uniform),
        ("Mandelbrot", 5.88, 20480 * 20480, 256, CostProfile::Uniform),
        ("NBody", 7.33, 51_200, 128, CostProfile::Uniform),
        ("Taylor", 2.06, 800 * 800, 128, CostProfile::Uniform),
        ("Aho", 8.20, 1_536_000, 64, irregular_random(21)),
        (
            "BM3D",
            2.28,
            800 * 800,
            64,
            CostProfile::Bursts { rate: 0.02, height: 8.0, length: 0.01, seed: 22 },
        ),
        ("Rap", 4.26, 1024 * 1024, 64, CostProfile::Rising { from: 0.2, to: 1.8 }),
        ("Ray", 7.70, 12000 * 12000, 64, irregular_random(23)),
    ];
    table
        .into_iter()
        .map(|(kernel, gpu_over_cpu, size, lws, profile)| {
            let groups = size / lws;
            let gpu_speed = groups as f64 / PAPER_GPU_SECONDS;
            let gpu = |name| {
                device(
                    name,
                    DeviceKind::Gpu,
                    gpu_speed,
                    PAPER_OVERHEAD,
                    k20m_occupancy(lws),
                    K20M_GFLOPS,
                )
            };
            let cpu = device(
                "2x Xeon E5-2620",
                DeviceKind::Cpu,
                gpu_speed / gpu_over_cpu,
                PAPER_OVERHEAD,
                24,
                CPU_GFLOPS,
            );
            Case {
                scenario: "batel",
                machine: "CPU + 2 K20m".into(),
                kernel: kernel.into(),
                profile,
                total_groups: groups,
                traffic: Traffic::default(),
                devices: vec![cpu, gpu("K20m #0"), gpu("K20m #1")],
            }
        })
        .collect()
}

/// Hydra (Sigmoid paper, §4.2): 2, 3 and 4 identical GTX Titan Black (15 SMX), no CPU.
fn hydra() -> Vec<Case> {
    // 15 SMX × 192 lanes × 2 × 0.889 GHz; 8 groups of 256 per SMX.
    const TITAN_GFLOPS: f64 = 5120.0;
    const GROUPS: u64 = 65_536;
    let mut cases = Vec::new();
    for gpus in 2..=4 {
        for (kernel, profile) in profiles() {
            let devices = (0..gpus)
                .map(|i| {
                    let speed = GROUPS as f64 / PAPER_GPU_SECONDS;
                    device(
                        &format!("Titan Black #{i}"),
                        DeviceKind::Gpu,
                        speed,
                        PAPER_OVERHEAD,
                        120,
                        TITAN_GFLOPS,
                    )
                })
                .collect();
            cases.push(Case {
                scenario: "hydra",
                machine: format!("{gpus} GPUs"),
                kernel: kernel.into(),
                profile,
                total_groups: GROUPS,
                traffic: Traffic::default(),
                devices,
            });
        }
    }
    cases
}

/// The desktop of the EngineCL optimisation study: A10-7850K CPU (4 compute units), its Kaveri iGPU (8 CUs) and a
/// GTX 950 (6 SMs). The study publishes no speed table; real speeds are assumed 1 : 2.5 : 6
/// against nominal 1 : 7.4 : 19, so nominal figures mislead as they do on real machines.
fn desktop() -> Vec<Case> {
    const GROUPS: u64 = 65_536;
    let gpu_speed = GROUPS as f64 / PAPER_GPU_SECONDS;
    profiles()
        .into_iter()
        .map(|(kernel, profile)| Case {
            scenario: "desktop",
            machine: "CPU + iGPU + GPU".into(),
            kernel: kernel.into(),
            profile,
            total_groups: GROUPS,
            traffic: Traffic::default(),
            devices: vec![
                // 4 CUs × 8 SP flop/cycle × 3.142 GHz.
                device("A10-7850K", DeviceKind::Cpu, gpu_speed / 6.0, PAPER_OVERHEAD, 4, 100.0),
                // 512 lanes × 2 × 0.72 GHz; 8 CUs × 10 groups of 256.
                device(
                    "Kaveri R7",
                    DeviceKind::Gpu,
                    gpu_speed * 2.5 / 6.0,
                    PAPER_OVERHEAD,
                    80,
                    737.0,
                ),
                // 768 lanes × 2 × 1.24 GHz; 6 SMs × 8 groups of 256.
                device("GTX 950", DeviceKind::Gpu, gpu_speed, PAPER_OVERHEAD, 48, 1905.0),
            ],
        })
        .collect()
}

/// The measured H200 machines (docs/RESULTS.md): Mandelbrot 8192² at 2000 iterations,
/// 4 pixels per work-item, 256 per group (G = 65 536), took 8.2 ms on one H200, 5.78 s on the
/// 16-core CPU (≈ 700×) and 2.86 s on the 32-core CPU of the two-GPU machine (≈ 350×). Nominal:
/// H200 132 SMs × 128 × 2 × 1.98 GHz = 66 908 GFLOP/s; CPU cores × 16 lanes × 2 FMA × 2 ×
/// 2.1 GHz. Occupancy: 8 groups of 256 per SM × 132 (measured with the occupancy example); CPU one
/// group per core.
///
/// Each machine comes twice: at the measured 8.2 ms, where the per-package overheads weigh a
/// few percent of the run, and at the paper size the project's real measurements use
/// (about 1.5 s on the fastest device; EngineCL's Mandelbrot of 14336² pixels, G = 200 704),
/// with the same speed ratios and the same per-package overheads: launching a package and
/// waiting for its event does not grow with the problem, and the output read-back, which does,
/// grows with the work-groups a package holds, so it is part of the device's speed, not of the
/// per-package cost.
fn h200() -> Vec<Case> {
    const H200_GFLOPS: f64 = 66_908.0;
    // (label, work-groups, seconds on one H200)
    const SIZES: [(&str, u64, f64); 2] =
        [("8.2 ms", 65_536, 8.2e-3), ("paper, 1.5 s", 200_704, 1.5)];
    // (GPUs, CPU cores, CPU seconds / H200 seconds, measured on 8192² at 2000 iterations)
    const MACHINES: [(usize, u64, f64); 2] = [(1, 16, 5.78 / 8.2e-3), (2, 32, 2.86 / 8.2e-3)];
    let mut cases = Vec::new();
    for (size, groups, h200_seconds) in SIZES {
        let gpu_speed = groups as f64 / h200_seconds;
        for (gpus, cores, cpu_slowdown) in MACHINES {
            for (kernel, profile) in profiles() {
                let cpu_gflops = cores as f64 * 16.0 * 2.0 * 2.0 * 2.1;
                let mut devices = vec![device(
                    &format!("{cores}-core CPU"),
                    DeviceKind::Cpu,
                    gpu_speed / cpu_slowdown,
                    H200_CPU_OVERHEAD,
                    cores,
                    cpu_gflops,
                )];
                for i in 0..gpus {
                    devices.push(device(
                        &format!("H200 #{i}"),
                        DeviceKind::Gpu,
                        gpu_speed,
                        H200_GPU_OVERHEAD,
                        132 * 8,
                        H200_GFLOPS,
                    ));
                }
                cases.push(Case {
                    scenario: "h200",
                    machine: format!("{cores}-core CPU + {gpus} H200, {size}"),
                    kernel: kernel.into(),
                    profile,
                    total_groups: groups,
                    traffic: Traffic::default(),
                    devices,
                });
            }
        }
    }
    cases
}

impl Case {
    /// Tabulate the kernel's cost profile (4096 blocks: far finer than any package).
    pub fn cost_table(&self) -> CostTable {
        CostTable::new(&self.profile, self.total_groups, 4096).with_traffic(self.traffic)
    }

    /// Simulate this case under the balancer `spec` describes.
    /// The balancer alone: no engine back-ups (the scenarios compare balancers).
    pub fn run(&self, spec: &BalancerSpec, seed: u64) -> Result<SimResult> {
        self.run_with(
            spec,
            &SimOptions { seed, loss: None, backups: false, waves: false, ..SimOptions::default() },
        )
    }

    pub fn run_with(&self, spec: &BalancerSpec, options: &SimOptions) -> Result<SimResult> {
        simulate(&self.devices, &self.cost_table(), spec.build().as_mut(), options)
    }
}

/// One launch of a repeated run ([`Case::relaunch`]): what it measured and what it left behind.
#[derive(Debug, Clone, PartialEq)]
pub struct Launch {
    pub result: SimResult,
    pub history: History,
}

impl Case {
    /// An iterative application: the first launch under `first` (the default balancer in
    /// practice), then `launches - 1` more, each under [`Learned`] from the previous launch's
    /// history. Launch `i` draws its jitter from seed `options.seed + i`.
    pub fn relaunch(
        &self,
        first: &BalancerSpec,
        launches: usize,
        options: &SimOptions,
    ) -> Result<Vec<Launch>> {
        let work = self.cost_table();
        let mut out: Vec<Launch> = Vec::with_capacity(launches);
        for i in 0..launches {
            let options = SimOptions { seed: options.seed + i as u64, ..options.clone() };
            let mut balancer: Box<dyn crate::balance::Balancer> = match out.last() {
                None => first.build(),
                Some(prev) => Box::new(Learned::new(prev.history.clone())),
            };
            let result = simulate(&self.devices, &work, balancer.as_mut(), &options)?;
            let history = result.history(&self.devices, self.total_groups);
            out.push(Launch { result, history });
        }
        Ok(out)
    }
}

/// The cases of one scenario by name (see [`SCENARIOS`]); `None` for an unknown name.
pub fn scenario(name: &str) -> Option<Vec<Case>> {
    match name {
        "batel" => Some(batel()),
        "hydra" => Some(hydra()),
        "desktop" => Some(desktop()),
        "h200" => Some(h200()),
        "membound" => Some(super::membound::membound()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_all(cases: &[Case], spec: &str) -> Vec<SimResult> {
        let spec: BalancerSpec = spec.parse().unwrap();
        cases.iter().map(|c| c.run(&spec, 1).unwrap()).collect()
    }

    fn mean_packages(results: &[SimResult]) -> f64 {
        let total: usize = results.iter().map(|r| r.device_packages.iter().sum::<usize>()).sum();
        total as f64 / results.len() as f64
    }

    #[test]
    fn batel_sigmoid_makes_few_packages_and_default_hguided_many_more() {
        // Issue 3 acceptance: Sigmoid averages at most 40 packages over the nine kernels and
        // default HGuided several times more (Sigmoid paper, Table 3: 25.6 against 248).
        let cases = scenario("batel").unwrap();
        assert_eq!(cases.len(), 9);
        for sigmoid in ["sigmoid", "sigmoid-faithful"] {
            let s = mean_packages(&run_all(&cases, sigmoid));
            let h = mean_packages(&run_all(&cases, "hguided"));
            assert!(s <= 40.0, "{sigmoid}: {s} packages on average");
            assert!(h >= 2.0 * s, "hguided {h} against {sigmoid} {s}");
        }
    }

    #[test]
    fn batel_guarded_sigmoid_balances_every_kernel_but_nbody_to_0_95() {
        // Issue 3 acceptance, at the simulator's default seed. BM3D's figure depends on which
        // package meets a burst (0.84-0.98 over seeds 1-6); NBody is bounded below 0.95 by
        // the machine, see the next test.
        let cases = scenario("batel").unwrap();
        for (case, r) in cases.iter().zip(run_all(&cases, "sigmoid")) {
            if case.kernel != "NBody" {
                assert!(r.balance >= 0.95, "{}: {}", case.kernel, r.balance);
            }
        }
    }

    #[test]
    fn nbody_balance_is_bounded_by_the_cpu_s_single_unmeasured_package() {
        let cases = scenario("batel").unwrap();
        let case = cases.iter().find(|c| c.kernel == "NBody").unwrap();
        let (cpu, gpu) = (&case.devices[0], &case.devices[1]);
        let g = case.total_groups as f64;
        // Any GPU package lasts at least a fill (G = 400 against 208 per K20m).
        let gpu_fill = gpu.overhead + gpu.min_groups as f64 / gpu.speed;
        let cpu_fill = cpu.min_groups as f64 / cpu.speed;
        // Two CPU packages would outlast a GPU package, so the CPU runs one, sized before any
        // speed is measured.
        assert!(2.0 * cpu_fill > gpu_fill);
        // Nominal speeds give the CPU less than its occupancy bound (the guard's probe is the
        // lesser of that bound and the nominal share), so it runs at most 24 groups and ends
        // well before the GPUs: balance at most (overhead + fill · (1 + jitter)) / GPU fill.
        let nominal_share =
            g * cpu.nominal_gflops / (cpu.nominal_gflops + 2.0 * gpu.nominal_gflops);
        assert!(nominal_share < cpu.min_groups as f64);
        let bound = (cpu.overhead + cpu_fill * (1.0 + cpu.jitter)) / gpu_fill;
        assert!(bound < 0.9, "{bound}");
        let guarded = case.run(&"sigmoid".parse().unwrap(), 1).unwrap();
        assert!(guarded.balance <= bound, "{} > {bound}", guarded.balance);
        // The split exists: knowing the real 7.33 ratio, 28 groups on the CPU end with the
        // GPUs' fills.
        let oracle = case.run(&"static:28,186,186".parse().unwrap(), 1).unwrap();
        assert!(oracle.balance >= 0.95, "{}", oracle.balance);
    }

    #[test]
    fn no_balancer_beats_the_ideal_makespan() {
        // The ideal is a lower bound (`SimDevice::alone_seconds`); static-rev on Aho once
        // scored 1.003 against an ideal taken at the mean jitter.
        let cases = scenario("batel").unwrap();
        for name in crate::balance::NAMES {
            for (case, r) in cases.iter().zip(run_all(&cases, name)) {
                assert!(r.efficiency <= 1.0, "{name} / {}: {}", case.kernel, r.efficiency);
                assert!(r.makespan >= r.ideal_makespan, "{name} / {}", case.kernel);
            }
        }
    }

    #[test]
    fn on_h200_the_guard_keeps_the_slow_cpu_from_holding_the_run_back() {
        let cases = scenario("h200").unwrap();
        let guarded = run_all(&cases, "sigmoid");
        let faithful = run_all(&cases, "sigmoid-faithful");
        for ((case, g), f) in cases.iter().zip(&guarded).zip(&faithful) {
            let label = format!("{} / {}", case.machine, case.kernel);
            assert!(g.efficiency >= f.efficiency, "{label}: {} < {}", g.efficiency, f.efficiency);
            // The 0.97 at the paper size, on both machines. At 8.2 ms the 20-50 µs
            // per package and the jitter (1.5% on average, which the ideal, a true lower
            // bound, leaves out) cost a few percent more; one GPU still stays above 0.95.
            if case.total_groups > 65_536 {
                assert!(g.efficiency >= 0.97, "{label}: {}", g.efficiency);
            } else if case.devices.len() == 2 {
                assert!(g.efficiency >= 0.95, "{label}: {}", g.efficiency);
            }
        }
        // The case the issue describes: on a regular kernel, nominal speeds make the faithful
        // first CPU package outlast the GPU's whole run several times over.
        let uniform = cases.iter().position(|c| c.kernel == "uniform").unwrap();
        assert!(faithful[uniform].efficiency < 0.5, "{}", faithful[uniform].efficiency);
    }

    #[test]
    fn on_a_rising_cost_the_last_packages_end_together() {
        // Sigmoid's guard point 8: the work left on RAP-like kernels costs more than the
        // measured speeds say. Without the cost trend the three Titans' last packages ended 1 %
        // apart (balance 0.990); with it they end within 0.7 %.
        let cases = scenario("hydra").unwrap();
        let case = cases
            .iter()
            .find(|c| c.devices.len() == 3 && c.kernel == "rap-rising")
            .expect("hydra has 3 GPUs on the rising profile");
        // Cutting packages to whole fills (point 9) leaves the tail a little coarser: 0.9936
        // without the wave model, 0.9949 with it.
        for waves in [false, true] {
            let options =
                SimOptions { seed: 1, loss: None, backups: false, waves, ..SimOptions::default() };
            let result = case.run_with(&"sigmoid".parse().unwrap(), &options).unwrap();
            assert!(result.balance >= 0.993, "waves {waves}: {}", result.balance);
        }
    }
}
