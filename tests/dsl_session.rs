//! Declared kernels (`kernel!`, `#[coexec]`) on session buffers: the same declaration run
//! one-shot on slices and, bound to a session with `on`, on `hetdsl::Buffer`s that stay on the
//! devices. Each result is checked against a plain CPU loop, and the data movement through the
//! report's counters.

mod common;

use common::{close, jacobi_cpu};

use hetdsl::report::Moved;
use hetdsl::{Error, Runtime};

hetdsl::kernel! {
    /// y = a·x + y in place, split evenly (one package per device, the same split every launch).
    #[kernel(file = "kernels/saxpy.cl", local = 64, balancer = "static:1,1")]
    struct Saxpy {
        fn saxpy(a: f32, #[input(1:1)] x: &[f32], #[inout(1:1)] y: &mut [f32]);
    }
}

hetdsl::kernel! {
    /// The 1-D three-point stencil, its input read one element past each side of a package.
    #[kernel(file = "tests/kernels/session.cl", local = 64, balancer = "static:1,1")]
    struct Stencil {
        fn stencil3(#[input(1:1, halo = 1)] src: &[f32], #[output(1:1)] dst: &mut [f32], n: u32);
    }
}

/// One result per work-group of 64, as OpenCL declares it in group_stats.cl.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, hetdsl::Pod)]
struct GroupStats {
    sum: f32,
    max: f32,
    count: u32,
}

const GROUP: usize = 64;

hetdsl::kernel! {
    /// Sum and maximum of each work-group's inputs through two `__local` buffers (pattern 1:64).
    #[kernel(file = "kernels/test/group_stats.cl", local = 64)]
    struct Stats {
        fn group_stats(
            #[input(1:1)] x: &[f32],
            #[output(1:64)] stats: &mut [GroupStats],
            #[local] sums: [f32; GROUP],
            #[local(per_item = 1)] maxes: [f32],
        );
    }
}

/// A 2-D Jacobi sweep over a `w` × `h` grid, its input read one row past each side.
#[hetdsl::coexec(file = "tests/kernels/session.cl", local = [16, 4])]
fn jacobi(#[input(1:1, halo = 1)] a: &[f32], #[output(1:1)] b: &mut [f32], w: u32, h: u32);

hetdsl::kernel! {
    /// y = A·x, A split by rows through a side naming the scalar `cols`, x read whole.
    #[kernel(file = "kernels/matvec.cl", local = 64)]
    struct MatVec {
        fn matvec(
            #[input(cols:1)] a: &[f32],
            #[input(whole)] x: &[f32],
            #[output(1:1)] y: &mut [f32],
            cols: i32,
        );
    }
}

fn runtime() -> Runtime {
    let rt = Runtime::new().expect("an OpenCL runtime (install pocl-opencl-icd)");
    assert!(rt.devices().len() >= 2, "these tests co-execute on two devices");
    rt
}

fn inputs(n: usize, seed: u32) -> Vec<f32> {
    common::lcg(seed, n).into_iter().map(|v| (v % 1000) as f32 / 100.0).collect()
}

const N: usize = 1 << 14;

#[test]
fn a_declared_saxpy_iterated_on_session_buffers_moves_its_inputs_once() {
    let rt = runtime();
    let saxpy = Saxpy::new(&rt).expect("saxpy builds");
    let session = saxpy.session().expect("a session");
    let k = saxpy.on(&session).expect("bound to its own program's session");
    let (xs, ys) = (inputs(N, 1), inputs(N, 2));
    let x = k.session().buffer_from(&xs).unwrap();
    let mut y = session.buffer_from(&ys).unwrap();
    let mut want = ys.clone();
    let bytes = (N * 4) as u64;
    for step in 0..6 {
        let a = 0.5 + step as f32 / 4.0;
        let r = k.run(N, a, &x, &mut y).expect("saxpy on buffers");
        for (w, x) in want.iter_mut().zip(&xs) {
            *w += a * x;
        }
        assert_eq!(r.devices.iter().filter(|d| d.packages > 0).count(), 2, "both devices ran");
        if step == 0 {
            // Each device received its half of x and y from the host, plus at most the group
            // at the other end of the range that its warm-up ran.
            let warm_up = 2 * 64 * 4;
            for arg in [1, 2] {
                let m = r.moved_arg(arg);
                assert!(
                    (bytes..=bytes + warm_up).contains(&m.host_to_device)
                        && m.total() == m.host_to_device,
                    "argument {arg}: {m:?}"
                );
            }
        } else {
            // Resident: the same split again needs nothing from the host or another device.
            assert_eq!(r.moved(), Moved::default(), "launch {step} moved data: {:?}", r.transfers);
        }
    }
    close(&y.to_vec().unwrap(), &want, "saxpy x6 on buffers");
    // The same declaration one-shot on slices agrees with the CPU too.
    let mut y1 = ys.clone();
    saxpy.run(N, 2.0, &xs, &mut y1).expect("one-shot saxpy");
    let want1: Vec<f32> = xs.iter().zip(&ys).map(|(x, y)| 2.0 * x + y).collect();
    close(&y1, &want1, "one-shot saxpy");
}

#[test]
fn a_declared_halo_ping_pongs_on_buffers_and_runs_one_shot_on_slices() {
    let rt = runtime();
    let stencil = Stencil::new(&rt).expect("stencil builds");
    let session = stencil.session().unwrap();
    let k = stencil.on(&session).unwrap();
    let start = inputs(N, 3);
    let mut a = session.buffer_from(&start).unwrap();
    let mut b = session.buffer::<f32>(N).unwrap();
    let mut want = start.clone();
    for sweep in 0..8 {
        let (src, dst) = if sweep % 2 == 0 { (&a, &mut b) } else { (&b, &mut a) };
        let r = k.run(N, src, dst, N as u32).expect("stencil on buffers");
        want = common::stencil_cpu(&want);
        if sweep >= 2 {
            // Each device owns its half: only the element past each side of the boundary
            // crosses between them, never anything from the host.
            assert_eq!(r.moved_arg(0), Moved { device_to_device: 8, ..Moved::default() });
            assert_eq!(r.moved().host_to_device, 0);
        }
    }
    close(&a.to_vec().unwrap(), &want, "stencil x8 on buffers");
    // One-shot, each package reads its rows and the halo from the caller's memory; the
    // input's length is still checked, naming the parameter.
    let mut out = vec![0.0f32; N];
    stencil.run(N, &start, &mut out, N as u32).expect("one-shot stencil");
    close(&out, &common::stencil_cpu(&start), "one-shot stencil");
    let e = stencil.run(N, &start[..N - 1], &mut out, N as u32).unwrap_err();
    assert!(
        matches!(&e, Error::BadDeclaredArgument { index: 0, name, reason }
            if name == "src" && reason.contains("halo(1)") && reason.contains("needs 16384")),
        "{e}"
    );
}

#[test]
fn local_scratch_and_a_struct_output_on_buffers_match_the_cpu() {
    let rt = runtime();
    let stats = Stats::new(&rt).unwrap();
    let session = stats.session().unwrap();
    let k = stats.on(&session).unwrap();
    let groups = 256;
    let xs = inputs(groups * GROUP, 5);
    let x = session.buffer_from(&xs).unwrap();
    let mut out = session.buffer::<GroupStats>(groups).unwrap();
    for _ in 0..3 {
        k.run(groups * GROUP, &x, &mut out).expect("group_stats on buffers");
    }
    let got = out.to_vec().unwrap();
    for (g, s) in got.iter().enumerate() {
        let chunk = &xs[g * GROUP..(g + 1) * GROUP];
        let sum: f32 = chunk.iter().sum();
        let max = chunk.iter().copied().fold(f32::MIN, f32::max);
        close(&[s.sum], &[sum], &format!("group {g} sum"));
        assert_eq!((s.max, s.count), (max, GROUP as u32), "group {g}");
    }
}

#[test]
fn a_coexec_2d_jacobi_on_buffers_matches_the_cpu_over_sweeps() {
    let rt = runtime();
    let (w, h) = (64usize, 96usize);
    let start = inputs(w * h, 7);
    let session = jacobi::session(&rt).unwrap();
    let k = jacobi::on(&session).unwrap();
    let mut a = session.buffer_from(&start).unwrap();
    let mut b = session.buffer::<f32>(w * h).unwrap();
    let mut want = start.clone();
    for sweep in 0..10 {
        let (src, dst) = if sweep % 2 == 0 { (&a, &mut b) } else { (&b, &mut a) };
        let r = k.run([w, h], src, dst, w as u32, h as u32).expect("jacobi on buffers");
        want = jacobi_cpu(&want, w, h);
        assert_eq!(r.moved_arg(1).total(), 0, "an output moves nothing in");
        if sweep > 0 {
            assert_eq!(r.moved().host_to_device, 0, "sweep {sweep}: {:?}", r.transfers);
        }
    }
    close(&a.to_vec().unwrap(), &want, "jacobi x10 on buffers");
    // The function itself, one-shot on slices.
    let mut out = vec![0.0f32; w * h];
    jacobi(&rt, [w, h], &start, &mut out, w as u32, h as u32).expect("one-shot jacobi");
    close(&out, &jacobi_cpu(&start, w, h), "one-shot jacobi");
}

#[test]
fn a_coexec_function_submits_its_sweeps_and_the_reports_come_from_finish() {
    let rt = runtime();
    let (w, h) = (64usize, 96usize);
    let start = inputs(w * h, 9);
    let session = jacobi::session(&rt).unwrap();
    let k = jacobi::on(&session).unwrap();
    let mut a = session.buffer_from(&start).unwrap();
    let mut b = session.buffer::<f32>(w * h).unwrap();
    let mut want = start.clone();
    for sweep in 0..12 {
        let (src, dst) = if sweep % 2 == 0 { (&a, &mut b) } else { (&b, &mut a) };
        k.submit([w, h], src, dst, w as u32, h as u32).expect("jacobi submitted");
        want = jacobi_cpu(&want, w, h);
    }
    close(&a.to_vec().unwrap(), &want, "jacobi x12 submitted");
    let reports = session.finish().unwrap();
    assert_eq!(reports.len(), 12, "one report per sweep");
    assert!(reports.iter().all(|r| r.kernel == "jacobi"));
    // A buffer of another session is still named by its declared parameter.
    let other = jacobi::session(&rt).unwrap();
    let stranger = other.buffer_from(&start).unwrap();
    let e = k.submit([w, h], &stranger, &mut b, w as u32, h as u32).unwrap_err().to_string();
    assert!(e.contains("(`a`)") && e.contains("another session"), "{e}");
}

#[test]
fn a_named_pattern_side_and_a_whole_input_on_buffers_are_computed_and_checked_at_each_call() {
    let rt = runtime();
    let matvec = MatVec::new(&rt).unwrap();
    let session = matvec.session().unwrap();
    let k = matvec.on(&session).unwrap();
    let (rows, cols) = (1024usize, 24usize);
    let (am, xs) = (inputs(rows * cols, 13), inputs(cols, 14));
    let a = session.buffer_from(&am).unwrap();
    let x = session.buffer_from(&xs).unwrap();
    let mut y = session.buffer::<f32>(rows).unwrap();
    for _ in 0..2 {
        k.run(rows, &a, &x, &mut y, cols as i32).expect("matvec on buffers");
    }
    let want: Vec<f32> =
        am.chunks(cols).map(|row| row.iter().zip(&xs).map(|(a, x)| a * x).sum()).collect();
    close(&y.to_vec().unwrap(), &want, "matvec on buffers");
    // A side that is not positive is refused before anything runs, naming the parameter.
    let e = k.run(rows, &a, &x, &mut y, -1).unwrap_err();
    assert!(
        matches!(&e, Error::BadDeclaredArgument { index: 0, name, reason }
            if name == "a" && reason.contains("`cols:1`")),
        "{e}"
    );
}

#[test]
fn a_session_of_another_program_is_refused_even_of_the_same_source() {
    let rt = runtime();
    let saxpy = Saxpy::new(&rt).unwrap();
    let again = Saxpy::new(&rt).unwrap();
    let theirs = again.session().unwrap();
    let e = saxpy.on(&theirs).err().expect("another build's session is refused");
    assert!(matches!(&e, Error::BadConfig(m) if m.contains("session of another program")), "{e}");
    // A program built by hand from the file that holds the coexec function's kernel.
    let by_hand = common::program("session.cl").session().unwrap();
    let e = jacobi::on(&by_hand).err().expect("a session of a hand-built program is refused");
    assert!(matches!(&e, Error::BadConfig(m) if m.contains("`jacobi`")), "{e}");
    assert!(jacobi::on(&jacobi::program(&rt).unwrap().session().unwrap()).is_ok());
}

#[test]
fn argument_mistakes_on_buffers_name_the_declared_parameter() {
    let rt = runtime();
    let saxpy = Saxpy::new(&rt).unwrap();
    let (mine, other) = (saxpy.session().unwrap(), saxpy.session().unwrap());
    let k = saxpy.on(&mine).unwrap();
    let xs = inputs(N, 9);
    let x = mine.buffer_from(&xs).unwrap();
    let foreign = other.buffer_from(&xs).unwrap();
    let mut y = mine.buffer_from(&xs).unwrap();
    // Through `launch(..)?.run()`, not only `run`: the launch itself names the parameter.
    let e = k.launch(N, 1.0, &foreign, &mut y).unwrap().run().unwrap_err();
    assert!(
        matches!(&e, Error::BadDeclaredArgument { index: 1, name, reason }
            if name == "x" && reason.contains("another session")),
        "{e}"
    );
    let mut short = mine.buffer::<f32>(N - 64).unwrap();
    let e = k.run(N, 1.0, &x, &mut short).unwrap_err();
    assert!(
        matches!(&e, Error::BadDeclaredArgument { index: 2, name, reason }
            if name == "y" && reason.contains("needs 16384")),
        "{e}"
    );
    // Nothing ran: y is as it was made.
    assert_eq!(y.to_vec().unwrap(), xs);
}

/// The README's example of a declared kernel on session buffers, as the README writes it.
// Kept as the README writes it (rustfmt would break its lines differently).
#[rustfmt::skip]
fn readme_example(rt: &Runtime, x0: &[f32], y0: &[f32], a: f32, steps: usize) -> hetdsl::Result<(Vec<f32>, Vec<f32>)> {
    let n = x0.len();
    hetdsl::kernel! {
        #[kernel(file = "kernels/saxpy.cl", local = 64)]
        struct Saxpy {
            fn saxpy(a: f32, #[input(1:1)] x: &[f32], #[inout(1:1)] y: &mut [f32]);
        }
    }

    let saxpy = Saxpy::new(rt)?;
    let mut once = y0.to_vec();
    saxpy.run(n, a, x0, &mut once)?;                   // one-shot, on slices
    let session = saxpy.session()?;                     // a session of the kernel's program
    let on = saxpy.on(&session)?;                       // the kernel bound to it: SaxpyOn
    let x = session.buffer_from(x0)?;
    let mut y = session.buffer_from(y0)?;
    for _ in 0..steps {
        let report = on.run(n, a, &x, &mut y)?;         // the same arguments, buffers for slices
        println!("{:?}", report.moved());               // nothing moves after the first launch
    }
    let result = y.to_vec()?;                           // home once, at the end
    Ok((once, result))
}

#[test]
fn the_readme_example_runs_and_matches_the_cpu() {
    let rt = runtime();
    let (xs, ys) = (inputs(4096, 11), inputs(4096, 12));
    let (once, result) = readme_example(&rt, &xs, &ys, 0.5, 5).expect("the README example");
    let after = |k: f32| -> Vec<f32> { xs.iter().zip(&ys).map(|(x, y)| y + k * 0.5 * x).collect() };
    close(&once, &after(1.0), "one-shot");
    close(&result, &after(5.0), "five launches on buffers");
}

#[test]
fn the_readme_shows_this_example_line_for_line() {
    let readme = include_str!("../README.md");
    let start = readme.find("<!-- dsl-session: tests/dsl_session.rs -->").expect("the marker");
    let block = &readme[start..];
    let block = &block[block.find("```rust\n").expect("a rust block") + 8..];
    let block = &block[..block.find("```").expect("its end")];
    let here: Vec<&str> = include_str!("dsl_session.rs").lines().map(str::trim).collect();
    let mut at = 0;
    for line in block.lines().map(str::trim).filter(|l| !l.is_empty()) {
        match here[at..].iter().position(|l| *l == line) {
            Some(k) => at += k + 1,
            None => panic!("README line not in the test, in order: {line}"),
        }
    }
}
