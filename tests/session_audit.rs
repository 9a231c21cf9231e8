//! Session calls at their edges: a session dropped with launches queued, queued launches whose
//! scalars change, one buffer read twice by a launch, host reads from another thread while
//! launches are queued, halos wider than the buffer, a one-element buffer, empty NDRanges, and
//! devices failing until none is left. Every value is checked against a plain CPU loop.

mod common;

use std::time::Duration;

use common::{close, within};
use hetdsl::balance::Static;
use hetdsl::{Error, Fault, Pattern};

const LIMIT: Duration = Duration::from_secs(60);

fn affine_cpu(x: &mut [f32], a: f32, b: f32) {
    x.iter_mut().for_each(|v| *v = *v * a + b);
}

#[test]
fn a_session_dropped_with_launches_queued_leaves_its_buffers_readable_and_writable() {
    within(LIMIT, || {
        let p = common::program("session.cl");
        for devices in [&[0][..], &[0, 1][..]] {
            let s = p.session_on(devices).unwrap();
            let n = 1 << 12;
            let xs: Vec<f32> = (0..n).map(|i| (i % 37) as f32).collect();
            let mut x = s.buffer_from(&xs).unwrap();
            let mut want = xs;
            // Each launch's scalars differ: a queued replay must pass its own, not the first's.
            for step in 0..12 {
                let (a, b) = (0.5 + step as f32 * 0.125, step as f32);
                common::affine_launch(&s, &mut x, a, b).submit().unwrap();
                affine_cpu(&mut want, a, b);
            }
            drop(s);
            close(&x.to_vec().unwrap(), &want, "read after the session's end");
            x.write(5, &[-1.0, -2.0]).unwrap();
            want[5..7].copy_from_slice(&[-1.0, -2.0]);
            close(&x.read(0..64).unwrap(), &want[..64], "written after the session's end");
        }
    });
}

#[test]
fn one_buffer_read_as_two_inputs_by_queued_launches_matches_the_cpu() {
    within(LIMIT, || {
        let p = common::program("session.cl");
        let s = p.session().unwrap();
        let n = 1 << 13;
        let xs: Vec<f32> = (0..n).map(|i| (i % 101) as f32 * 0.5).collect();
        let mut x = s.buffer_from(&xs).unwrap();
        let mut out = s.buffer::<f32>(n).unwrap();
        let mut want_x = xs;
        let mut want_out = vec![0.0; n];
        for step in 0..10 {
            let a = 1.0 + step as f32;
            s.launch("saxpy")
                .global(&[n])
                .local(&[64])
                .input(&x, Pattern::ONE_TO_ONE)
                .input(&x, Pattern::ONE_TO_ONE)
                .output(&mut out, Pattern::ONE_TO_ONE)
                .scalar(a)
                .submit()
                .unwrap();
            want_out = want_x.iter().map(|v| a * v + v).collect();
            if step == 6 {
                // A host write between queued launches: the next ones read the new values.
                let fresh: Vec<f32> = (0..n).map(|i| (i % 13) as f32).collect();
                x.write(0, &fresh).unwrap();
                want_x = fresh;
            }
        }
        close(&out.to_vec().unwrap(), &want_out, "out = a x + x");
        close(&x.to_vec().unwrap(), &want_x, "x after a host write");
        assert_eq!(s.finish().unwrap().len(), 10);
    });
}

#[test]
fn reads_from_another_thread_while_launches_are_queued_see_only_right_values() {
    within(LIMIT, || {
        let p = common::program("session.cl");
        let s = p.session().unwrap();
        let n = 1 << 12;
        let ys: Vec<f32> = (0..n).map(|i| i as f32).collect();
        let y = s.buffer_from(&ys).unwrap();
        let mut x = s.buffer_from(&vec![1.0f32; n]).unwrap();
        let mut want = vec![1.0f32; n];
        std::thread::scope(|scope| {
            let reader = scope.spawn(|| {
                for _ in 0..50 {
                    assert_eq!(y.to_vec().unwrap(), ys, "an input nobody writes");
                }
            });
            for _ in 0..30 {
                s.launch("saxpy")
                    .global(&[n])
                    .local(&[64])
                    .input(&y, Pattern::ONE_TO_ONE)
                    .input(&y, Pattern::ONE_TO_ONE)
                    .output(&mut x, Pattern::ONE_TO_ONE)
                    .scalar(0.5f32)
                    .submit()
                    .unwrap();
                common::affine_launch(&s, &mut x, 2.0f32, 1.0f32).submit().unwrap();
            }
            reader.join().unwrap();
        });
        want.iter_mut().zip(&ys).for_each(|(w, y)| *w = (0.5 * y + y) * 2.0 + 1.0);
        close(&x.to_vec().unwrap(), &want, "saxpy then affine");
    });
}

#[test]
fn halos_wider_than_the_buffer_and_a_one_element_buffer_match_the_cpu() {
    within(LIMIT, || {
        let p = common::program("session.cl");
        for cap in [None, Some(256 * 4)] {
            let mut s = p.session().unwrap();
            if let Some(bytes) = cap {
                // Exactly the buffer: a halo reaching all of it still fits.
                s.set_max_alloc(bytes);
            }
            let n = 256;
            let xs: Vec<f32> = (0..n).map(|i| ((i * 31) % 17) as f32).collect();
            let a = s.buffer_from(&xs).unwrap();
            let mut b = s.buffer::<f32>(n).unwrap();
            for _ in 0..3 {
                s.launch("stencil3")
                    .global(&[n])
                    .local(&[64])
                    .input(&a, Pattern::halo(1 << 40))
                    .output(&mut b, Pattern::ONE_TO_ONE)
                    .scalar(n as u32)
                    .run()
                    .unwrap();
            }
            close(
                &b.to_vec().unwrap(),
                &common::stencil_cpu(&xs),
                &format!("halo 2^40, cap {cap:?}"),
            );

            let one = s.buffer_from(&[7.5f32]).unwrap();
            let mut out = s.buffer::<f32>(1).unwrap();
            for _ in 0..3 {
                s.launch("stencil3")
                    .global(&[1])
                    .local(&[1])
                    .input(&one, Pattern::halo(3))
                    .output(&mut out, Pattern::ONE_TO_ONE)
                    .scalar(1u32)
                    .submit()
                    .unwrap();
            }
            assert_eq!(out.to_vec().unwrap(), vec![7.5], "cap {cap:?}");
        }
    });
}

#[test]
fn empty_ndranges_are_refused_and_the_session_goes_on() {
    within(LIMIT, || {
        let p = common::program("session.cl");
        let s = p.session().unwrap();
        let mut x = s.buffer_from(&[1.0f32; 64]).unwrap();
        let shapes: [(&[usize], &[usize]); 4] =
            [(&[0], &[64]), (&[64], &[0]), (&[], &[]), (&[0], &[0])];
        for (global, local) in shapes {
            for queue in [false, true] {
                let l = s
                    .launch("affine")
                    .global(global)
                    .local(local)
                    .inout(&mut x, Pattern::ONE_TO_ONE)
                    .scalar(2.0f32)
                    .scalar(1.0f32);
                let r = if queue { l.submit() } else { l.run().map(|_| ()) };
                assert!(
                    matches!(r, Err(Error::BadRange(_) | Error::BadArgument { .. })),
                    "global {global:?} local {local:?}: {r:?}"
                );
            }
        }
        common::affine_launch(&s, &mut x, 2.0f32, 1.0f32).run().unwrap();
        assert_eq!(x.to_vec().unwrap(), vec![3.0; 64]);
    });
}

/// `x = a x + b` over all of `x`, run to its end, with `fault` injected if any.
fn affine_run(
    s: &hetdsl::Session,
    x: &mut hetdsl::Buffer<f32>,
    a: f32,
    fault: Option<Fault>,
    halves: bool,
) -> hetdsl::Result<()> {
    let mut l = common::affine_launch(s, x, a, 1.0f32);
    if let Some(f) = fault {
        l = l.inject(f);
    }
    if halves {
        l = l.balancer(Box::new(Static::with_weights(vec![1.0, 1.0])));
    }
    l.run().map(|_| ())
}

#[test]
fn every_device_failing_leaves_errors_never_stale_data_and_writes_still_heal() {
    within(LIMIT, || {
        let p = common::program("session.cl");
        let s = p.session().unwrap();
        let n = 1 << 12;
        let xs: Vec<f32> = (0..n).map(|i| i as f32).collect();
        let mut x = s.buffer_from(&xs).unwrap();
        let kept = s.buffer_from(&xs).unwrap();
        let mut want = xs.clone();
        affine_run(&s, &mut x, 2.0, None, true).unwrap();
        affine_cpu(&mut want, 2.0, 1.0);
        // Device 0 fails: what only it held is lost, device 1 goes on alone.
        let r = affine_run(&s, &mut x, 2.0, Some(Fault::Fail { device: 0, package: 0 }), true);
        assert!(matches!(r, Err(Error::Lost { .. })), "{r:?}");
        assert!(matches!(x.to_vec(), Err(Error::Lost { .. })));
        x.write(0, &xs).unwrap();
        want.copy_from_slice(&xs);
        for _ in 0..4 {
            affine_run(&s, &mut x, 0.5, None, false).unwrap();
            affine_cpu(&mut want, 0.5, 1.0);
        }
        close(&x.to_vec().unwrap(), &want, "on the device left");
        // The last device (the launch's device 0) fails: launches are refused, reads serve the host copy or an error.
        let r = affine_run(&s, &mut x, 3.0, Some(Fault::Fail { device: 0, package: 0 }), false);
        assert!(r.is_err(), "{r:?}");
        assert_eq!(s.failed_devices().len(), 2, "{r:?} {:?}", s.failed_devices());
        match x.to_vec() {
            Ok(v) => close(&v, &want, "host copy after every device failed"),
            Err(e) => assert!(matches!(e, Error::Lost { .. }), "{e}"),
        }
        assert_eq!(kept.to_vec().unwrap(), xs, "a buffer only ever on the host");
        for queue in [false, true] {
            let l = common::affine_launch(&s, &mut x, 2.0f32, 1.0f32);
            let r = if queue { l.submit() } else { l.run().map(|_| ()) };
            assert!(matches!(r, Err(Error::AllDevicesFailed(_))), "{r:?}");
        }
        x.write(0, &xs).unwrap();
        assert_eq!(x.to_vec().unwrap(), xs, "written again on the host");
        s.finish().unwrap();
        s.sync().unwrap();
    });
}

#[test]
fn a_device_failing_under_queued_jacobi_sweeps_never_serves_a_stale_grid() {
    within(LIMIT, || {
        let p = common::program("session.cl");
        let (w, h) = (64usize, 96usize);
        // A stall of the surviving device after its first package sends the failed device's
        // block to it before its own: the launch ends with that block's rows unwritten.
        for (fail_at, stall) in [(3usize, 0u32), (6, 0), (3, 50), (6, 50)] {
            let s = p.session().unwrap();
            let start = common::jacobi_start(w, h);
            let mut a = s.buffer_from(&start).unwrap();
            let mut b = s.buffer::<f32>(w * h).unwrap();
            let mut grids = vec![start];
            let mut errors = Vec::new();
            for sweep in 0..=fail_at {
                let (src, dst) = if sweep % 2 == 0 { (&a, &mut b) } else { (&b, &mut a) };
                let mut l = common::jacobi_launch(&s, src, dst, w, h);
                if sweep == fail_at {
                    l = l.inject(Fault::Fail { device: 1, package: 0 });
                    if stall > 0 {
                        l = l.inject(Fault::Stall { device: 0, millis: stall });
                    }
                }
                grids.push(common::jacobi_cpu(grids.last().unwrap(), w, h));
                errors.extend(l.submit().err());
            }
            // The failing sweep ran (queued or not): its error comes from its submit or here.
            errors.extend(s.finish().err());
            assert!(errors.iter().all(|e| matches!(e, Error::Lost { .. })), "{errors:?}");
            // Each buffer holds the grid of the last sweep that wrote it, or its lost ranges
            // are an error; the survivors' ranges are never from an older sweep.
            let last = grids.len() - 1;
            let want_a = if last % 2 == 0 { &grids[last] } else { &grids[last - 1] };
            let want_b = if last % 2 == 1 { &grids[last] } else { &grids[last - 1] };
            for (buf, want, name) in [(&a, want_a, "a"), (&b, want_b, "b")] {
                for row in 0..h {
                    match buf.read(row * w..(row + 1) * w) {
                        Ok(v) => close(&v, &want[row * w..(row + 1) * w], name),
                        Err(Error::Lost { .. }) => {}
                        Err(e) => panic!("{name} row {row}: {e}"),
                    }
                }
            }
            println!("fail at sweep {fail_at}, stall {stall} ms: {errors:?}");
        }
    });
}

fn nbody_cpu(pos: &mut [f32], dt: f32) {
    let n = pos.len();
    let force: Vec<f32> =
        (0..n).map(|i| (0..n).fold(0.0f32, |f, j| f + (pos[j] - pos[i]) * 0.001)).collect();
    pos.iter_mut().zip(&force).for_each(|(p, f)| *p += dt * f);
}

#[test]
fn queued_two_kernel_steps_with_host_writes_between_match_the_cpu() {
    within(LIMIT, || {
        let p = common::program("session.cl");
        let s = p.session().unwrap();
        let n = 1024;
        let start: Vec<f32> = (0..n).map(|i| ((i * 13) % 29) as f32 / 29.0).collect();
        let mut pos = s.buffer_from(&start).unwrap();
        let mut force = s.buffer::<f32>(n).unwrap();
        let mut want = start;
        for step in 0..16 {
            s.launch("forces")
                .global(&[n])
                .local(&[64])
                .input(&pos, Pattern::Whole)
                .output(&mut force, Pattern::ONE_TO_ONE)
                .scalar(n as u32)
                .submit()
                .unwrap();
            s.launch("integrate")
                .global(&[n])
                .local(&[64])
                .inout(&mut pos, Pattern::ONE_TO_ONE)
                .input(&force, Pattern::ONE_TO_ONE)
                .scalar(0.1f32)
                .submit()
                .unwrap();
            nbody_cpu(&mut want, 0.1);
            if step % 5 == 4 {
                // A few elements from the host: every device's whole copy must take them.
                let at = (step * 97) % (n - 3);
                let part = [step as f32, -1.0, 0.5];
                pos.write(at, &part).unwrap();
                want[at..at + 3].copy_from_slice(&part);
            }
            if step % 4 == 1 {
                let mut some = vec![0.0f32; 100];
                pos.read_into(n - 100, &mut some).unwrap();
                close(&some, &want[n - 100..], "a partial read between steps");
            }
        }
        close(&pos.to_vec().unwrap(), &want, "nbody-like x16");
        let reports = s.finish().unwrap();
        let queued = reports.iter().filter(|r| r.balancer == "replay(queued)").count();
        println!("{queued} of {} launches queued", reports.len());
    });
}

#[test]
fn with_a_sparse_mirror_a_failure_recovers_or_is_lost_never_stale() {
    within(LIMIT, || {
        let p = common::program("session.cl");
        for fail_at in [2usize, 3] {
            let mut s = p.session().unwrap();
            s.set_mirror(Some(2));
            let n = 1 << 13;
            let xs: Vec<f32> = (0..n).map(|i| (i % 50) as f32).collect();
            let mut x = s.buffer_from(&xs).unwrap();
            let mut want = xs;
            let mut result = Ok(());
            for launch in 0..=fail_at {
                let mut l = common::affine_launch(&s, &mut x, 1.5f32, 1.0f32)
                    .balancer(common::round_robin(4));
                if launch == fail_at {
                    l = l.inject(Fault::Fail { device: 1, package: 2 });
                }
                affine_cpu(&mut want, 1.5, 1.0);
                result = l.run().map(|_| ());
            }
            // The third launch starts from the mirrored host copy; the fourth's input was
            // written by the third, on the devices only.
            match (&result, x.to_vec()) {
                (Ok(()), Ok(v)) => close(&v, &want, "recovered"),
                (Err(Error::Lost { .. }), Err(Error::Lost { .. })) => {}
                (Err(Error::Lost { ranges, .. }), Ok(v)) if ranges.is_empty() => {
                    close(&v, &want, "nothing lost")
                }
                (r, v) => panic!("fail at {fail_at}: {r:?}, read {:?}", v.map(|v| v[0])),
            }
            println!("fail at {fail_at}: {result:?}");
            assert_eq!(s.failed_devices().len(), 1, "the fault struck");
            if fail_at == 2 {
                assert!(result.is_ok(), "the host copy held every input: {result:?}");
            }
        }
    });
}
