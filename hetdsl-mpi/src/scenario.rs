//! Cluster scenarios for the simulator: nodes of four GPUs and a CPU behind a 200 Gb/s link,
//! every node alike or four kinds of node in turn, on a compute-bound kernel.
//!
//! Device speeds start from the measured H200 machines (hetdsl's `h200` scenario: Mandelbrot
//! at paper size, 200 704 work-groups in 1.5 s on one H200, a 32-core CPU about 350 times
//! slower). The cluster kernel is that Mandelbrot at 8 times the iterations (16 000), so each
//! work-group computes 8 times longer for the same 4 KiB of output: a problem one would send
//! to a cluster. The other GPUs are scaled by their FP32 peak relative to the H200 (an
//! assumption: Mandelbrot is compute-bound). Occupancy: 8 groups of 256 per SM; a CPU one group
//! per core. Network: HDR InfiniBand (200 Gb/s = 25 GB/s each way at rank 0, 2 µs latency).
//! Setting up each range's run on a node (queues, buffers, threads): 5 ms, an assumption.

use hetdsl::balance::DeviceKind;
use hetdsl::sim::{CostProfile, Join, SimDevice};

use crate::sim::{Cluster, Network, Node, Workload};

/// Work-groups per second of one H200 on the cluster kernel (Mandelbrot at 16 000 iterations).
pub const H200_SPEED: f64 = 200_704.0 / 1.5 / 8.0;
/// Work-groups in the cluster kernel: a 262 144 × 262 144 image at 4 pixels per work-item and
/// 256 work-items per group; about 67 minutes on one H200, a minute on 16 nodes of four. A
/// cluster needs a long job: each range is a whole co-execution on its node, and the
/// simulated efficiency at 16 nodes falls to 0.9 and below on a job 16 times shorter.
pub const TOTAL_GROUPS: u64 = 262_144 * 262_144 / 4 / 256;
/// Output bytes per work-group: 1 024 pixels of 4 bytes.
pub const OUTPUT_PER_GROUP: f64 = 4096.0;
pub const NETWORK: Network = Network { latency: 2e-6, bandwidth: 25e9 };
pub const RANGE_OVERHEAD: f64 = 5e-3;

/// (name, GPU speed relative to an H200, nominal GFLOP/s, SMs, CPU cores, CPU slowdown
/// against an H200, GPUs of the second kind in the node: (count, relative speed, GFLOP/s, SMs)).
struct Class {
    name: &'static str,
    gpu: (f64, f64, u64),
    cpu_cores: u64,
    cpu_slowdown: f64,
    /// A node with two GPUs of another kind (the other two of `gpu`).
    second: Option<(f64, f64, u64)>,
}

const H200: (f64, f64, u64) = (1.0, 66_908.0, 132);
const A100: (f64, f64, u64) = (19_500.0 / 66_908.0, 19_500.0, 108);
const V100: (f64, f64, u64) = (15_700.0 / 66_908.0, 15_700.0, 80);

const CLASSES: [Class; 4] = [
    Class {
        name: "4 H200 + 32-core CPU",
        gpu: H200,
        cpu_cores: 32,
        cpu_slowdown: 350.0,
        second: None,
    },
    Class {
        name: "4 A100 + 64-core CPU",
        gpu: A100,
        cpu_cores: 64,
        cpu_slowdown: 175.0,
        second: None,
    },
    Class {
        name: "2 H200 + 2 A100 + 32-core CPU",
        gpu: H200,
        cpu_cores: 32,
        cpu_slowdown: 350.0,
        second: Some(A100),
    },
    Class {
        name: "4 V100 + 20-core CPU",
        gpu: V100,
        cpu_cores: 20,
        cpu_slowdown: 560.0,
        second: None,
    },
];

fn node(class: &Class) -> Node {
    let gpu = |i: usize, (relative, gflops, sms): (f64, f64, u64)| SimDevice {
        name: format!("GPU #{i}"),
        kind: DeviceKind::Gpu,
        speed: H200_SPEED * relative,
        overhead: 20e-6,
        min_groups: sms * 8,
        nominal_gflops: gflops,
        jitter: 0.03,
        link: None,
    };
    let mut devices = vec![SimDevice {
        name: format!("{}-core CPU", class.cpu_cores),
        kind: DeviceKind::Cpu,
        speed: H200_SPEED / class.cpu_slowdown,
        overhead: 50e-6,
        min_groups: class.cpu_cores,
        nominal_gflops: class.cpu_cores as f64 * 16.0 * 2.0 * 2.0 * 2.1,
        jitter: 0.03,
        link: None,
    }];
    for i in 0..4 {
        let kind = match class.second {
            Some(other) if i >= 2 => other,
            _ => class.gpu,
        };
        devices.push(gpu(i, kind));
    }
    Node {
        name: class.name.into(),
        devices,
        range_overhead: RANGE_OVERHEAD,
        first_overhead: 0.0,
        first_joins: Vec::new(),
    }
}

/// `nodes` nodes on `profile`: every node an H200 node (`mixed` false), or the four classes
/// in turn (H200, A100, half and half, V100).
pub fn cluster(nodes: usize, mixed: bool, profile: CostProfile) -> Cluster {
    Cluster {
        nodes: (0..nodes)
            .map(|i| node(&CLASSES[if mixed { i % CLASSES.len() } else { 0 }]))
            .collect(),
        network: NETWORK,
        workload: Workload {
            profile,
            total_groups: TOTAL_GROUPS,
            input_per_group: 0.0,
            output_per_group: OUTPUT_PER_GROUP,
            whole_bytes: 0.0,
        },
    }
}

/// The kernel cost shapes the example prints: regular, and two irregular ones (Mandelbrot's
/// band of expensive rows, and a log-normal cost per block as in text search or ray tracing).
pub fn profiles() -> Vec<(&'static str, CostProfile)> {
    vec![
        ("uniform", CostProfile::Uniform),
        ("mandelbrot-band", CostProfile::Band { center: 0.5, width: 0.15, peak: 6.0 }),
        ("random", CostProfile::Random { spread: 0.6, seed: 11 }),
    ]
}

/// A short job as `examples/mpi_compare.rs` ran it on the two-H200 + 32-core machine
/// (`--scale 8`): its units (what the ranks' balancer hands out), the seconds one process took
/// over every device, and the bytes of output per unit.
#[derive(Debug, Clone, PartialEq)]
pub struct ShortJob {
    pub name: &'static str,
    pub profile: CostProfile,
    pub units: u64,
    pub one_process_seconds: f64,
    pub output_per_unit: f64,
    /// Units one fill of an H200 holds (the node's balancer hands out no smaller package to it).
    pub gpu_fill: u64,
}

/// Mandelbrot (17 408 × 11 584 pixels to 131 072 iterations: 2 896 rows of 4 pixel rows, the
/// set across the middle rows) and Taylor (23 168², order 256: 2 896 rows of 8, regular).
pub fn short_jobs() -> Vec<ShortJob> {
    vec![
        ShortJob {
            name: "mandelbrot",
            profile: CostProfile::Band { center: 0.5, width: 0.15, peak: 6.0 },
            units: 2896,
            one_process_seconds: 1.3355,
            output_per_unit: 17_408.0 * 4.0 * 4.0,
            gpu_fill: 4,
        },
        ShortJob {
            name: "taylor",
            profile: CostProfile::Uniform,
            units: 2896,
            one_process_seconds: 3.6776,
            output_per_unit: 23_168.0 * 8.0 * 4.0,
            gpu_fill: 4,
        },
    ]
}

/// The 16-core CPU against one H200 on these kernels: a unit (a row of 1 088 work-groups) took
/// it 0.69 s where an H200 ran 1 000 units a second (Mandelbrot, two ranks).
pub const SHORT_CPU_SLOWDOWN: f64 = 700.0;
/// What a rank's first range pays once besides each range's set-up (its devices' first use,
/// buffers made and pinned): a few hundred milliseconds on the two-H200 machine.
pub const SHORT_FIRST_OVERHEAD: f64 = 0.3;
/// Set-up of each later range (queues and buffers kept from the range before).
pub const SHORT_RANGE_OVERHEAD: f64 = 0.05;
/// When the CPU joins a rank's first range: PoCL compiling the kernel and running its warm-up
/// work-group, which the GPU does not wait for.
pub const SHORT_CPU_JOIN: f64 = 0.35;
/// Two ranks on one machine: rank 1's outputs reach rank 0's buffers at about 0.4 GB/s
/// (the copies into and out of MPI's messages included; 151 MB in 0.63 s, 1.6 GB in 3.3 s).
pub const SHORT_NETWORK: Network = Network { latency: 20e-6, bandwidth: 0.4e9 };

/// The two-H200 + 32-core machine as `ranks` ranks, each one H200 and 32/`ranks` cores, on
/// `job`, with the costs stated above (change the returned cluster's nodes and network to
/// vary them).
pub fn short_cluster(job: &ShortJob, ranks: usize) -> Cluster {
    // Both H200s together took `one_process_seconds` (the CPU adds a fraction of a percent).
    let gpu_speed = job.units as f64 / (2.0 * job.one_process_seconds);
    let cores = (32 / ranks.max(1)) as u64;
    let node = |r: usize| Node {
        name: format!("H200 + {cores}-core CPU (rank {r})"),
        devices: vec![
            SimDevice {
                name: format!("{cores}-core CPU"),
                kind: DeviceKind::Cpu,
                speed: gpu_speed * cores as f64 / 16.0 / SHORT_CPU_SLOWDOWN,
                overhead: 50e-6,
                min_groups: 1,
                nominal_gflops: cores as f64 * 16.0 * 2.0 * 2.0 * 2.1,
                jitter: 0.03,
                link: None,
            },
            SimDevice {
                name: "H200".into(),
                kind: DeviceKind::Gpu,
                speed: gpu_speed,
                overhead: 20e-6,
                min_groups: job.gpu_fill,
                nominal_gflops: H200.1,
                jitter: 0.03,
                link: None,
            },
        ],
        range_overhead: SHORT_RANGE_OVERHEAD,
        first_overhead: SHORT_FIRST_OVERHEAD,
        first_joins: vec![Join { device: 0, at: SHORT_CPU_JOIN }],
    };
    Cluster {
        nodes: (0..ranks).map(node).collect(),
        network: SHORT_NETWORK,
        workload: Workload {
            profile: job.profile.clone(),
            total_groups: job.units,
            input_per_group: 0.0,
            output_per_group: job.output_per_unit,
            whole_bytes: 0.0,
        },
    }
}

/// The same machine as one process over every device (both H200s and the 32 cores), warm: the
/// run `short_cluster`'s ranks are compared with.
pub fn one_process(job: &ShortJob) -> Vec<SimDevice> {
    let mut devices = short_cluster(job, 2).nodes.remove(0).devices;
    devices[0].speed *= 2.0;
    devices[0].min_groups = 1;
    devices[0].nominal_gflops *= 2.0;
    devices[0].name = "32-core CPU".into();
    let mut second = devices[1].clone();
    second.name = "H200 #2".into();
    devices.push(second);
    devices
}
