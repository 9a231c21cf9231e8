//! Session launches whose kernels write a split output outside their packages (a shift by one,
//! a transpose declared `1:1`) are refused, naming the element, on their first run in the
//! session; the session goes on, and the buffers they touched still hold right values.

mod common;

use std::time::Duration;

use common::within;
use hetdsl::{Error, Pattern};

fn floats(n: usize, seed: u32) -> Vec<f32> {
    common::lcg(seed, n).iter().map(|v| (v % 1000) as f32 / 1000.0).collect()
}

fn refused(e: Error, index: usize) {
    let Error::BadArgument { index: i, reason } = &e else { panic!("{e:?}") };
    assert_eq!(*i, index, "{reason}");
    assert!(
        reason.contains("the kernel wrote element ")
            && reason.contains("which pattern 1:1 gives the package of work-groups"),
        "{reason}"
    );
}

/// `y += 2x` over a session's buffers, `times` times, `x` read by `pattern` (`Pattern::Whole`:
/// every device then holds all of `x` fresh, as the host does).
fn saxpy(
    s: &hetdsl::Session,
    (x, pattern): (&hetdsl::Buffer<f32>, Pattern),
    y: &mut hetdsl::Buffer<f32>,
    times: usize,
) {
    for _ in 0..times {
        s.launch("group_saxpy")
            .global(&[x.len()])
            .local(&[64])
            .scalar(2.0f32)
            .input(x, pattern)
            .inout(y, Pattern::ONE_TO_ONE)
            .run()
            .unwrap();
    }
}

fn saxpy_cpu(x: &[f32], y: &[f32], times: usize) -> Vec<f32> {
    let mut y = y.to_vec();
    for _ in 0..times {
        y.iter_mut().zip(x).for_each(|(y, x)| *y += 2.0 * x);
    }
    y
}

#[test]
fn session_outputs_written_outside_their_packages_are_refused_and_the_session_goes_on() {
    within(Duration::from_secs(60), || {
        let p = common::program("real_kernels.cl");
        let s = p.session().unwrap();
        let n = 64 * 64;
        let x0 = floats(n, 3);
        let x = s.buffer_from(&x0).unwrap();
        // A kernel that keeps to its elements passes its first launch's check, and the marks
        // the check left on each device never reach a result (later launches split it
        // differently and read what each device holds).
        let z0 = floats(n, 7);
        let mut z = s.buffer_from(&z0).unwrap();
        saxpy(&s, (&x, Pattern::ONE_TO_ONE), &mut z, 3);
        let y0 = floats(n, 5);
        let mut y = s.buffer_from(&y0).unwrap();
        // One element past each package.
        let e = s
            .launch("shift_right")
            .global(&[n])
            .local(&[64])
            .input(&x, Pattern::ONE_TO_ONE)
            .output(&mut y, Pattern::ONE_TO_ONE)
            .scalar(n as u32)
            .run()
            .expect_err("one element past each package");
        refused(e, 1);
        // A transpose writes columns across the whole output.
        let e = s
            .launch("transpose_tiled")
            .global(&[64, 64])
            .local(&[16, 16])
            .input(&x, Pattern::ONE_TO_ONE)
            .output(&mut y, Pattern::ONE_TO_ONE)
            .scalar(64u32)
            .scalar(64u32)
            .run()
            .expect_err("a transpose writes outside its rows");
        refused(e, 1);
        // The session goes on: `y` written again from the host, the launches run as usual.
        y.write(0, &y0).unwrap();
        saxpy(&s, (&x, Pattern::ONE_TO_ONE), &mut y, 2);
        common::close(&y.to_vec().unwrap(), &saxpy_cpu(&x0, &y0, 2), "after the refusals");
        saxpy(&s, (&x, Pattern::ONE_TO_ONE), &mut z, 2);
        common::close(&z.to_vec().unwrap(), &saxpy_cpu(&x0, &z0, 5), "a buffer checked before");
        assert_eq!(x.to_vec().unwrap(), x0, "an input changed");
    });
}

/// The devices hold the buffer's values fresh, as the host does (an earlier launch read it
/// whole), and a kernel updating it in place writes past each package: refused too. The bytes
/// the check marked are no longer counted fresh on the devices: a later launch reading the
/// buffer there fetches them again, and equals the CPU over the values the host reads.
#[test]
fn a_stray_update_over_values_the_devices_and_the_host_hold_is_refused() {
    within(Duration::from_secs(60), || {
        let p = common::program("real_kernels.cl");
        let s = p.session().unwrap();
        let n = 64 * 64;
        let (y0, z0) = (floats(n, 12), floats(n, 13));
        let mut y = s.buffer_from(&y0).unwrap();
        let mut z = s.buffer_from(&z0).unwrap();
        saxpy(&s, (&y, Pattern::Whole), &mut z, 1);
        let e = s
            .launch("bump_next")
            .global(&[n])
            .local(&[64])
            .inout(&mut y, Pattern::ONE_TO_ONE)
            .scalar(n as u32)
            .run()
            .expect_err("one element past each package, over values held everywhere");
        refused(e, 0);
        // Each element is its old value, or bumped where a package's result was kept.
        let yv = y.to_vec().unwrap();
        for (i, (v, old)) in yv.iter().zip(&y0).enumerate() {
            assert!(*v == *old || *v == *old + 1.0, "y[{i}] = {v}, was {old}");
        }
        saxpy(&s, (&y, Pattern::Whole), &mut z, 1);
        let want: Vec<f32> = (0..n).map(|i| z0[i] + 2.0 * y0[i] + 2.0 * yv[i]).collect();
        common::close(&z.to_vec().unwrap(), &want, "z read over the checked buffer");
    });
}
