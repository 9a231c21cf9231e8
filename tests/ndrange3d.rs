//! 3-D NDRanges on PoCL's two CPU devices: a 7-point stencil on a volume co-executed with
//! several balancers (one-shot, its input whole or with a halo of one plane, and in a session
//! with a halo of one plane), the built-ins'
//! answers for dimension 2, and the mistakes a 3-D range can carry. Checked against CPU loops.

mod common;

use hetdsl::balance::{Balancer, BalancerSpec, Static};
use hetdsl::{Error, Pattern, Report};

const W: usize = 64;
const H: usize = 48;
const D: usize = 40;
const LOCAL: [usize; 3] = [8, 8, 4];

fn volume() -> Vec<f32> {
    (0..W * H * D).map(|i| ((i * 7919) % 1013) as f32 / 10.0).collect()
}

/// The CPU stencil, written from the definition: border voxels keep their value, inner ones mix
/// with their six neighbours.
fn stencil_cpu(a: &[f32]) -> Vec<f32> {
    let at = |x: usize, y: usize, z: usize| a[(z * H + y) * W + x];
    let mut b = a.to_vec();
    for z in 1..D - 1 {
        for y in 1..H - 1 {
            for x in 1..W - 1 {
                let side = at(x - 1, y, z) + at(x + 1, y, z) + at(x, y - 1, z) + at(x, y + 1, z);
                let depth = at(x, y, z - 1) + at(x, y, z + 1);
                b[(z * H + y) * W + x] = 0.5 * at(x, y, z) + 0.125 * side + 0.0625 * depth;
            }
        }
    }
    b
}

fn close(got: &[f32], want: &[f32], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= 1e-4 * (1.0 + w.abs()), "{what}: voxel {i}: {g} != {w}");
    }
}

/// The merged packages tile the slabs exactly once.
fn assert_tiles(r: &Report) {
    assert_eq!(r.total_groups, (D / LOCAL[2]) as u64, "one balancing unit per slab");
    common::assert_coexecuted_once(r);
}

#[test]
fn a_3d_stencil_co_executes_with_every_listed_balancer() {
    let p = common::program("ndrange3d.cl");
    let input = volume();
    let want = stencil_cpu(&input);
    let specs = ["sigmoid", "static", "dynamic:3", "dynamic:10", "halves", "round-robin"];
    for (spec, input_pattern) in
        specs.into_iter().flat_map(|s| [(s, Pattern::Whole), (s, Pattern::halo(1))])
    {
        // Halves and round-robin give both devices slabs whatever their speeds, so these passes
        // always co-execute; the named balancers may give a fast device every slab.
        let balancer: Box<dyn Balancer> = match spec {
            "halves" => Box::new(Static::with_weights(vec![1.0, 1.0])),
            "round-robin" => common::round_robin(2),
            _ => spec.parse::<BalancerSpec>().expect("a balancer").build(),
        };
        let mut out = vec![f32::NAN; W * H * D];
        let mut launch = p
            .launch("stencil7")
            .global(&[W, H, D])
            .local(&LOCAL)
            .input(&input, input_pattern)
            .output(&mut out, Pattern::ONE_TO_ONE)
            .balancer(balancer);
        if matches!(spec, "halves" | "round-robin") {
            // A sub-millisecond run would otherwise let one device back up the other's slabs.
            launch = launch.backups(false);
        }
        let r = launch.run().unwrap_or_else(|e| panic!("{spec}: {e}"));
        assert_tiles(&r);
        match spec {
            "halves" => assert!(r.devices.iter().all(|d| d.packages == 1), "{}", r.table()),
            "round-robin" => common::assert_coexecuted(&r),
            _ => {}
        }
        close(&out, &want, &format!("{spec}, input {input_pattern}"));
        // A halo input moves each slab and a plane each side of it, never the whole volume.
        let plane = (W * H * 4) as u64;
        for t in r.trace.iter().filter(|t| t.merged && input_pattern != Pattern::Whole) {
            let slabs = t.package.len * LOCAL[2] as u64;
            let edges =
                u64::from(t.package.offset > 0) + u64::from(t.package.end() < r.total_groups);
            assert_eq!(t.written.bytes, plane * (slabs + edges), "{spec}: {t:?}");
        }
    }
}

#[test]
fn a_3d_stencil_in_a_session_reads_a_halo_of_one_plane() {
    let p = common::program("ndrange3d.cl");
    let s = p.session().expect("a session");
    let start = volume();
    let mut a = s.buffer_from(&start).unwrap();
    let mut b = s.buffer::<f32>(W * H * D).unwrap();
    let mut want = start;
    for (sweep, spec) in ["static", "dynamic:3", "sigmoid", "static"].into_iter().enumerate() {
        let (src, dst) = if sweep % 2 == 0 { (&a, &mut b) } else { (&b, &mut a) };
        let r = s
            .launch("stencil7")
            .global(&[W, H, D])
            .local(&LOCAL)
            .input(src, Pattern::halo(1))
            .output(dst, Pattern::ONE_TO_ONE)
            .balancer(spec.parse::<BalancerSpec>().unwrap().build())
            .run()
            .unwrap_or_else(|e| panic!("sweep {sweep} ({spec}): {e}"));
        assert_tiles(&r);
        want = stencil_cpu(&want);
    }
    close(&a.to_vec().unwrap(), &want, "four sweeps");
}

#[test]
fn the_built_ins_answer_for_dimension_2_in_every_package() {
    let p = common::program("ndrange3d.cl");
    let mut out = vec![u32::MAX; 4 * W * H * D];
    let r = p
        .launch("probe3d")
        .global(&[W, H, D])
        .local(&LOCAL)
        .output(&mut out, Pattern::ratio(4, 1).unwrap())
        .balancer("dynamic:5".parse::<BalancerSpec>().unwrap().build())
        .run()
        .unwrap();
    assert_tiles(&r);
    for z in 0..D {
        for y in 0..H {
            for x in 0..W {
                let i = (z * H + y) * W + x;
                let want = [
                    (z / LOCAL[2]) as u32,
                    (D / LOCAL[2]) as u32,
                    D as u32,
                    ((y / LOCAL[1]) * 1000 + x / LOCAL[0]) as u32,
                ];
                assert_eq!(out[4 * i..4 * i + 4], want, "work-item ({x}, {y}, {z})");
            }
        }
    }
}

fn refused(global: &[usize], local: &[usize]) -> String {
    let p = common::program("ndrange3d.cl");
    let input = volume();
    let mut out = vec![0f32; W * H * D];
    let e = p
        .launch("stencil7")
        .global(global)
        .local(local)
        .input(&input, Pattern::Whole)
        .output(&mut out, Pattern::ONE_TO_ONE)
        .run()
        .unwrap_err();
    match e {
        Error::BadRange(m) => m,
        other => panic!("{global:?} / {local:?}: expected BadRange, got {other}"),
    }
}

#[test]
fn a_3d_global_with_a_2d_local_is_refused() {
    let m = refused(&[W, H, D], &[8, 8]);
    assert!(m.contains("3 dimension(s)") && m.contains("has 2"), "{m}");
}

#[test]
fn a_3d_global_not_a_multiple_of_the_local_size_in_z_is_refused() {
    let m = refused(&[W, H, 42], &LOCAL);
    assert!(m.contains("dimension 2 is not a multiple"), "{m}");
}

#[test]
fn a_3d_session_launch_with_a_bad_local_is_refused() {
    let p = common::program("ndrange3d.cl");
    let s = p.session().expect("a session");
    let a = s.buffer_from(&volume()).unwrap();
    let mut b = s.buffer::<f32>(W * H * D).unwrap();
    let e = s
        .launch("stencil7")
        .global(&[W, H, 42])
        .local(&LOCAL)
        .input(&a, Pattern::halo(1))
        .output(&mut b, Pattern::ONE_TO_ONE)
        .run()
        .unwrap_err();
    assert!(matches!(&e, Error::BadRange(m) if m.contains("dimension 2")), "{e}");
}

#[test]
fn a_4d_global_is_refused() {
    let m = refused(&[W, H, D, 1], &[8, 8, 4, 1]);
    assert!(m.contains("4-D NDRange"), "{m}");
}
