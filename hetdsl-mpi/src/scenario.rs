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
use hetdsl::sim::{CostProfile, SimDevice};

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
    Node { name: class.name.into(), devices, range_overhead: RANGE_OVERHEAD }
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
