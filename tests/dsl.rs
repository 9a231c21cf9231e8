//! The DSL on real OpenCL devices (PoCL's `pthread` and `basic` CPU devices in CI): kernels
//! declared with `kernel!` and `#[coexec]`, co-executed on two devices with every device running
//! several packages, each result checked against a plain CPU loop.

mod common;

use common::{assert_coexecuted, assert_coexecuted_once, round_robin};
use hetdsl::Runtime;

hetdsl::kernel! {
    /// y = a·x + y, one element per work-item, split among devices in 64 packages.
    #[kernel(file = "kernels/saxpy.cl", local = 64, balancer = "dynamic:64")]
    struct Saxpy {
        fn saxpy(a: f32, #[input(1:1)] x: &[f32], #[inout(1:1)] y: &mut [f32]);
    }
}

/// The same kernel through `#[coexec]`, under another Rust name.
#[hetdsl::coexec(file = "kernels/saxpy.cl", name = "saxpy", local = 64)]
fn scale_add(a: f32, #[input(1:1)] x: &[f32], #[inout(1:1)] y: &mut [f32]);

/// One `GroupStats` per work-group of 64, as OpenCL declares it in group_stats.cl.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, hetdsl::Pod)]
struct GroupStats {
    sum: f32,
    max: f32,
    count: u32,
}

const GROUP: usize = 64;

hetdsl::kernel! {
    /// Sum and maximum of each work-group's inputs (pattern 1:64).
    #[kernel(file = "kernels/test/group_stats.cl", local = 64)]
    struct Stats {
        fn group_stats(
            #[input(1:1)] x: &[f32],
            #[output(1:64)] stats: &mut [GroupStats],
            #[local] sums: [f32; GROUP],
            #[local] maxes: [f32; GROUP],
        );
    }
}

hetdsl::kernel! {
    /// Four outputs per work-item of a 2-D NDRange (pattern 4:1).
    #[kernel(file = "kernels/test/quad_2d.cl", local = [16, 4])]
    struct Quad2d {
        fn quad_2d(#[output(4:1)] out: &mut [f32], c: [f32; 4], width: u32);
    }
}

/// Work-items per group of `ReversePairs`.
const PAIR_GROUP: usize = 128;

hetdsl::kernel! {
    /// Each work-group's 2 × 128 elements reversed through a `__local` buffer of 2 per work-item.
    #[kernel(file = "kernels/test/reverse_pairs.cl", local = 128)]
    struct ReversePairs {
        fn reverse_pairs(
            #[input(2:1)] x: &[f32],
            #[output(2:1)] out: &mut [f32],
            #[local(per_item = 2)] scratch: [f32],
        );
    }
}

fn runtime() -> Runtime {
    common::two_devices()
}

fn inputs(n: usize, seed: u32) -> Vec<f32> {
    common::unit_floats(n, seed)
}

fn assert_close(got: f32, want: f32, what: &str) {
    let tolerance = 1e-4 * want.abs().max(1.0);
    assert!((got - want).abs() <= tolerance, "{what}: got {got}, want {want}");
}

#[test]
fn saxpy_declared_balancer_matches_cpu_loop_and_runs_twice() {
    let rt = runtime();
    let saxpy = Saxpy::new(&rt).expect("saxpy builds");
    let n = 1 << 20;
    let x = inputs(n, 1);
    let y0 = inputs(n, 2);
    let mut y = y0.clone();
    // Back-ups off: on a loaded machine a back-up copy that wins can leave the stalled device
    // with no package to its name, and this test asks that both took part.
    let launch = saxpy.launch(n, 2.5, &x, &mut y).expect("a launch");
    let report = launch.backups(false).run().expect("saxpy runs");
    assert!(
        report.balancer.to_lowercase().contains("dynamic"),
        "declared balancer: {}",
        report.balancer
    );
    // First come, first served: a device the host stalls for a few ms may get a single one of
    // the declared balancer's packages, so this asks only that both took part, exactly once.
    assert_coexecuted_once(&report);
    assert!(report.devices.iter().all(|d| d.packages >= 1), "{}", report.table());
    for i in 0..n {
        assert_close(y[i], 2.5 * x[i] + y0[i], &format!("y[{i}]"));
    }
    // The program is built once: a second run on the same struct accumulates again.
    saxpy.run(n, -1.0, &x, &mut y).expect("second run");
    for i in 0..n {
        assert_close(y[i], 1.5 * x[i] + y0[i], &format!("y[{i}] after the second run"));
    }
}

#[test]
fn coexec_function_with_balancer_overridden_at_call_time() {
    let rt = runtime();
    let n = 64 * 300;
    let x = inputs(n, 3);
    let y0 = inputs(n, 4);
    let mut y = y0.clone();
    let report = scale_add::launch(&rt, n, 0.5, &x, &mut y)
        .expect("launch")
        .balancer(round_robin(6))
        .run()
        .expect("scale_add runs");
    assert_coexecuted(&report);
    for i in 0..n {
        assert_close(y[i], 0.5 * x[i] + y0[i], &format!("y[{i}]"));
    }
    // The cached program serves the plain call too.
    let mut z = y0.clone();
    scale_add(&rt, n, 3.0, &x, &mut z).expect("scale_add runs again");
    for i in 0..n {
        assert_close(z[i], 3.0 * x[i] + y0[i], &format!("z[{i}]"));
    }
}

#[test]
fn one_struct_per_work_group_matches_cpu_reduction() {
    let rt = runtime();
    let stats_kernel = Stats::new(&rt).expect("group_stats builds");
    let groups = 512;
    let x = inputs(groups * GROUP, 5);
    let mut stats = vec![GroupStats::default(); groups];
    let report = stats_kernel
        .launch(groups * GROUP, &x, &mut stats)
        .expect("launch")
        .balancer(round_robin(4))
        .run()
        .expect("group_stats runs");
    assert_coexecuted(&report);
    for (g, s) in stats.iter().enumerate() {
        let chunk = &x[g * GROUP..(g + 1) * GROUP];
        let sum: f32 = chunk.iter().sum();
        let max = chunk.iter().copied().fold(f32::MIN, f32::max);
        assert_close(s.sum, sum, &format!("group {g} sum"));
        assert_eq!(s.max, max, "group {g} max");
        assert_eq!(s.count, GROUP as u32, "group {g} count");
    }
}

#[test]
fn local_buffer_sized_per_work_item_matches_cpu_reversal() {
    let rt = runtime();
    let kernel = ReversePairs::new(&rt).expect("reverse_pairs builds");
    let groups = 300;
    let items = groups * PAIR_GROUP;
    let x = inputs(2 * items, 7);
    let mut out = vec![f32::NAN; 2 * items];
    let report = kernel
        .launch(items, &x, &mut out)
        .expect("launch")
        .balancer(round_robin(5))
        .run()
        .expect("reverse_pairs runs");
    assert_coexecuted(&report);
    let span = 2 * PAIR_GROUP;
    for (g, (got, input)) in out.chunks(span).zip(x.chunks(span)).enumerate() {
        for (i, value) in got.iter().enumerate() {
            assert_eq!(*value, input[span - 1 - i], "group {g}, element {i}");
        }
    }
}

#[test]
fn four_outputs_per_work_item_on_a_2d_range_match_cpu_loop() {
    let rt = runtime();
    let quad = Quad2d::new(&rt).expect("quad_2d builds");
    let (width, height) = (256usize, 64usize);
    let c = [0.5f32, 0.25, 1.0, 0.0];
    let mut out = vec![f32::NAN; 4 * width * height];
    let report = quad
        .launch([width, height], &mut out, c, width as u32)
        .expect("launch")
        .balancer(round_robin(3))
        .run()
        .expect("quad_2d runs");
    assert_coexecuted(&report);
    for y in 0..height {
        for x in 0..width {
            let base = x as f32 * c[0] + y as f32 * c[1];
            for k in 0..4 {
                let want = base * (k + 1) as f32 + c[2];
                assert_close(
                    out[4 * (y * width + x) + k],
                    want,
                    &format!("out at ({x}, {y}), k = {k}"),
                );
            }
        }
    }
}
