//! Helpers shared by the integration tests.
#![allow(dead_code)] // each test crate uses its own subset

pub mod events;

use hetdsl::balance::{Balancer, Completion, Next, Package, Setup};
use hetdsl::{
    Buffer, KernelSource, Launch, Pattern, Program, Report, Runtime, Session, SessionLaunch,
};
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

pub fn program(file: &str) -> Program {
    let rt = two_devices();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kernels").join(file);
    let source = KernelSource::from_file(&path, &[]).expect("kernel source");
    rt.program(&source).expect("kernel builds")
}

/// Every balancer the runtime knows by name, built with its defaults, with that name.
pub fn every_balancer() -> impl Iterator<Item = (&'static str, Box<dyn Balancer>)> {
    hetdsl::balance::NAMES
        .iter()
        .map(|n| (*n, n.parse::<hetdsl::balance::BalancerSpec>().expect("a known name").build()))
}

/// `expand4` of `tests/kernels/engine.cl` (four outputs per work-item, pattern 4:1) over `n`
/// work-items in groups of 64: the launch most engine tests start from.
pub fn expand4<'a>(p: &'a Program, n: usize, input: &'a [u32], out: &'a mut [u32]) -> Launch<'a> {
    p.launch("expand4")
        .global(&[n])
        .local(&[64])
        .input(input, Pattern::ONE_TO_ONE)
        .output(out, Pattern::ratio(4, 1).unwrap())
}

/// The CPU reference of `expand4` (tests/kernels/engine.cl): each input `v` becomes `v`,
/// `2v`, `v²` and `v ^ 0x5a5a5a5a`, wrapping.
pub fn expand4_reference(input: &[u32]) -> Vec<u32> {
    input.iter().flat_map(|&v| [v, v.wrapping_mul(2), v.wrapping_mul(v), v ^ 0x5a5a5a5a]).collect()
}

/// Every device ran at least two packages, and the packages tile the range exactly once.
pub fn assert_coexecuted(r: &Report) {
    for d in &r.devices {
        assert!(
            d.packages >= 2,
            "device {} ran {} package(s):\n{}",
            d.index,
            d.packages,
            r.table()
        );
    }
    assert_coexecuted_once(r);
    assert!(r.balance > 0.0 && r.balance <= 1.0);
}

/// A test balancer written against the public trait: `per_device` packages for each device,
/// dealt round-robin, so that every device runs several packages whatever its speed.
pub struct RoundRobin {
    per_device: u64,
    queues: Vec<Vec<Package>>,
}

pub fn round_robin(per_device: u64) -> Box<dyn Balancer> {
    Box::new(RoundRobin { per_device, queues: Vec::new() })
}

impl Balancer for RoundRobin {
    fn name(&self) -> String {
        format!("round-robin({})", self.per_device)
    }
    fn start(&mut self, setup: &Setup) -> hetdsl::Result<()> {
        let n = setup.devices.len() as u64;
        let count = (n * self.per_device).min(setup.total_groups);
        let size = setup.total_groups.div_ceil(count);
        self.queues = vec![Vec::new(); n as usize];
        let (mut offset, mut k) = (0, 0);
        while offset < setup.total_groups {
            let len = size.min(setup.total_groups - offset);
            self.queues[(k % n) as usize].insert(0, Package { offset, len });
            offset += len;
            k += 1;
        }
        Ok(())
    }
    fn next(&mut self, device: usize, _now: f64) -> Next {
        self.queues[device].pop().map_or(Next::Done, Next::Run)
    }
    fn completed(&mut self, _done: &Completion) {}
    fn device_lost(&mut self, device: usize) {
        // Hand the lost device's queue to the next device.
        let orphans = std::mem::take(&mut self.queues[device]);
        let heir = (device + 1) % self.queues.len();
        self.queues[heir].extend(orphans);
    }
}

pub fn lcg(seed: u32, n: usize) -> Vec<u32> {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x = x.wrapping_mul(1664525).wrapping_add(1013904223);
            x >> 8
        })
        .collect()
}

/// Run `f` on its own thread and fail the test if it takes longer than `limit`: a run that
/// hangs is a failure, not a stuck CI job.
pub fn within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(limit).unwrap_or_else(|_| panic!("did not finish within {limit:?}"))
}

/// Every work-group merged exactly once (packages may have run twice).
pub fn assert_coexecuted_once(r: &Report) {
    let mut covered: Vec<_> =
        r.trace.iter().filter(|t| t.merged).map(|t| (t.package.offset, t.package.len)).collect();
    covered.sort();
    let mut next = 0;
    for (o, l) in covered {
        assert_eq!(o, next, "merged packages must tile the range once: {:?}", r.trace);
        next = o + l;
    }
    assert_eq!(next, r.total_groups);
}

/// `got` equals `want` element by element, within 1e-4 relative to `1 + |want|`.
pub fn close(got: &[f32], want: &[f32], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= 1e-4 * (1.0 + w.abs()), "{what}: element {i}: {g} != {w}");
    }
}

/// `out = 2 x + y` over `n` elements with the `saxpy` kernel of `tests/kernels/session.cl` on a
/// session, every buffer 1:1, groups of 64, not run yet.
pub fn saxpy_launch<'s>(
    s: &'s hetdsl::Session,
    n: usize,
    x: &'s hetdsl::Buffer<f32>,
    y: &'s hetdsl::Buffer<f32>,
    out: &'s mut hetdsl::Buffer<f32>,
) -> hetdsl::SessionLaunch<'s> {
    s.launch("saxpy")
        .global(&[n])
        .local(&[64])
        .input(x, Pattern::ONE_TO_ONE)
        .input(y, Pattern::ONE_TO_ONE)
        .output(out, Pattern::ONE_TO_ONE)
        .scalar(2.0f32)
}

/// A `w` × `h` grid of values in 0..100 with no pattern a wrong row or column would keep: the
/// Jacobi tests' starting grid.
pub fn jacobi_start(w: usize, h: usize) -> Vec<f32> {
    (0..w * h).map(|i| ((i * 7919) % 1000) as f32 / 10.0).collect()
}

/// One Jacobi sweep over a `w` × `h` grid on the CPU, border kept: the reference of the
/// `jacobi` kernel of `tests/kernels/session.cl`.
pub fn jacobi_cpu(a: &[f32], w: usize, h: usize) -> Vec<f32> {
    let mut b = a.to_vec();
    for y in 1..h - 1 {
        for x in 1..w - 1 {
            let i = y * w + x;
            b[i] = 0.25 * (a[i - 1] + a[i + 1] + a[i - w] + a[i + w]);
        }
    }
    b
}

/// A sweep of the `jacobi` kernel of `tests/kernels/session.cl` on a session: `a` read with a
/// one-row halo, `b` written, groups of 16 × 4.
pub fn jacobi_launch<'s>(
    s: &'s hetdsl::Session,
    a: &'s hetdsl::Buffer<f32>,
    b: &'s mut hetdsl::Buffer<f32>,
    w: usize,
    h: usize,
) -> hetdsl::SessionLaunch<'s> {
    s.launch("jacobi")
        .global(&[w, h])
        .local(&[16, 4])
        .input(a, Pattern::halo(1))
        .output(b, Pattern::ONE_TO_ONE)
        .scalar(w as u32)
        .scalar(h as u32)
}

/// The 1-D three-point mean of `session.cl`'s `stencil3` kernel on the CPU: ends kept.
pub fn stencil_cpu(a: &[f32]) -> Vec<f32> {
    let n = a.len();
    (0..n)
        .map(|i| if i == 0 || i == n - 1 { a[i] } else { (a[i - 1] + a[i] + a[i + 1]) / 3.0 })
        .collect()
}

/// `session.cl`'s `affine` (`x = a·x + b`) over the whole of `x`, in groups of 64.
pub fn affine_launch<'s>(
    s: &'s Session,
    x: &'s mut Buffer<f32>,
    a: f32,
    b: f32,
) -> SessionLaunch<'s> {
    let n = x.len();
    s.launch("affine").global(&[n]).local(&[64]).inout(x, Pattern::ONE_TO_ONE).scalar(a).scalar(b)
}

/// A runtime with at least two devices, for tests that co-execute (PoCL's `pthread` and
/// `basic` in CI).
pub fn two_devices() -> Runtime {
    let rt = Runtime::new().expect("an OpenCL runtime (install pocl-opencl-icd)");
    assert!(
        rt.devices().len() >= 2,
        "these tests co-execute on two devices; run with POCL_DEVICES=\"pthread basic\" (found {:?})",
        rt.devices().iter().map(|d| &d.name).collect::<Vec<_>>()
    );
    rt
}

/// Deterministic floats in [0, 1) (a 32-bit LCG), different per seed.
pub fn unit_floats(n: usize, seed: u32) -> Vec<f32> {
    let mut state = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
    (0..n)
        .map(|_| {
            state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (state >> 8) as f32 / (1u32 << 24) as f32
        })
        .collect()
}
