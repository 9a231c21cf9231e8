//! Mistakes at the edges of the public API, one-shot and in sessions: each is an error of the
//! variant it names, and what runs after it is exact (checked against a CPU loop here).

mod common;

use common::program;
use hetdsl::{Error, KernelSource, Pattern, Runtime};

fn runtime() -> Runtime {
    let rt = Runtime::new().expect("an OpenCL runtime (install pocl-opencl-icd)");
    assert!(rt.devices().len() >= 2, "run with POCL_DEVICES=\"pthread basic\"");
    rt
}

/// A kernel compiled for work-groups of exactly 32 work-items.
const REQUIRED_32: &str = "__kernel __attribute__((reqd_work_group_size(32, 1, 1)))
void fill(__global uint* x) { x[get_global_id(0)] = 7u * (uint)get_global_id(0); }";

fn fill_cpu(n: usize) -> Vec<u32> {
    (0..n as u32).map(|i| 7 * i).collect()
}

#[test]
fn a_work_group_size_other_than_the_kernel_requires_is_named_and_costs_no_device() {
    let rt = runtime();
    let p = rt.program(&KernelSource::from_text("required.cl", REQUIRED_32)).unwrap();
    let mut out = vec![0u32; 256];
    let r =
        p.launch("fill").global(&[256]).local(&[64]).output(&mut out, Pattern::ONE_TO_ONE).run();
    match r {
        Err(Error::DeviceLimit { reason, .. }) => {
            assert!(reason.contains("[32, 1, 1]") && reason.contains("[64]"), "{reason}")
        }
        other => panic!("expected DeviceLimit, got {other:?}"),
    }
    p.launch("fill")
        .global(&[256])
        .local(&[32])
        .output(&mut out, Pattern::ONE_TO_ONE)
        .run()
        .unwrap();
    assert_eq!(out, fill_cpu(256));

    // A session keeps its devices: the mistake is the caller's, not theirs.
    let s = p.session().unwrap();
    let mut buf = s.buffer::<u32>(256).unwrap();
    let r =
        s.launch("fill").global(&[256]).local(&[64]).output(&mut buf, Pattern::ONE_TO_ONE).run();
    assert!(matches!(r, Err(Error::DeviceLimit { .. })), "{r:?}");
    assert_eq!(s.failed_devices(), []);
    s.launch("fill")
        .global(&[256])
        .local(&[32])
        .output(&mut buf, Pattern::ONE_TO_ONE)
        .run()
        .unwrap();
    assert_eq!(buf.to_vec().unwrap(), fill_cpu(256));
}

/// `expand4`'s output (four elements per work-item) given as `a:b` with huge sides that mean
/// 4:1: every product of a side and an item index is past 2^64, so any of them computed in
/// 64 bits would send a package's elements elsewhere.
#[test]
fn huge_pattern_sides_are_computed_without_overflow() {
    let p = program("engine.cl");
    let n = 64 * 37;
    let input = common::lcg(21, n);
    let four = Pattern::Ratio { a: 1 << 62, b: 1 << 60 };
    let one = Pattern::Ratio { a: u64::MAX, b: u64::MAX };
    for (name, balancer) in common::every_balancer() {
        let mut out = vec![0u32; 4 * n];
        p.launch("expand4")
            .global(&[n])
            .local(&[64])
            .input(&input, one)
            .output(&mut out, four)
            .balancer(balancer)
            .run()
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(out, common::expand4_reference(&input), "{name}");
    }
    let s = p.session().unwrap();
    let i = s.buffer_from(&input).unwrap();
    let mut out = s.buffer::<u32>(4 * n).unwrap();
    for _ in 0..3 {
        let l = s.launch("expand4").global(&[n]).local(&[64]);
        l.input(&i, one).output(&mut out, four).run().unwrap();
        assert_eq!(out.to_vec().unwrap(), common::expand4_reference(&input));
    }
}

/// Buffers one element short, one long and empty, for each kind of pattern, one-shot and in
/// a session: `BadArgument` naming the counts, and nothing runs.
#[test]
fn lengths_that_do_not_fit_each_pattern_are_refused() {
    let p = program("engine.cl");
    let s = p.session().unwrap();
    let n = 64 * 5;
    let input = vec![1u32; n];
    for (pattern, need) in [
        (Pattern::ONE_TO_ONE, n),
        (Pattern::ratio(4, 1).unwrap(), 4 * n),
        (Pattern::ratio(1, 64).unwrap(), n / 64),
        (Pattern::ratio(4, 64).unwrap(), n / 16),
    ] {
        for len in [need - 1, need + 1, 0] {
            let what = format!("{pattern} over {len} elements");
            let mut out = vec![7u32; len];
            // Only the lengths are checked: the kernel never runs.
            let r = p
                .launch("expand4")
                .global(&[n])
                .local(&[64])
                .input(&input, Pattern::ONE_TO_ONE)
                .output(&mut out, pattern)
                .run();
            assert!(matches!(r, Err(Error::BadArgument { index: 1, .. })), "{what}: {r:?}");
            assert!(out.iter().all(|&v| v == 7), "{what}: written");
            if len > 0 {
                let i = s.buffer_from(&input).unwrap();
                let mut o = s.buffer::<u32>(len).unwrap();
                let l =
                    s.launch("expand4").global(&[n]).local(&[64]).input(&i, Pattern::ONE_TO_ONE);
                let r = l.output(&mut o, pattern).run();
                assert!(matches!(r, Err(Error::BadArgument { index: 1, .. })), "{what}: {r:?}");
            }
        }
    }
    for pattern in [Pattern::Whole, Pattern::halo(1)] {
        let mut out = vec![0u32; 4 * n];
        let r = p
            .launch("expand4")
            .global(&[n])
            .local(&[64])
            .input(&input[..0], pattern)
            .output(&mut out, Pattern::ratio(4, 1).unwrap())
            .run();
        assert!(matches!(r, Err(Error::BadArgument { index: 0, .. })), "{pattern}: {r:?}");
    }
}

/// Build errors inside `#include`d files, nested ones and one found through the include
/// directories, name each file and its own line, and the root file's lines after them stay
/// right.
#[test]
fn build_errors_in_included_files_name_each_file_and_line() {
    let dir = std::env::temp_dir().join(format!("hetdsl-edges-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::create_dir_all(dir.join("extra")).unwrap();
    let files = [
        (
            "sub/outer.h",
            "// outer\n#include \"inner.h\"\nint ok(int x) { return x; }\n\
                         int bad_outer(int x) { return x * ; }\n",
        ),
        ("sub/inner.h", "// inner\nint bad_inner(int x) { return x +; }\n"),
        ("extra/found.h", "\n\n\nfloat bad_found(void) { return 1.0f +; }\n"),
        (
            "main.cl",
            "// main\n#include \"sub/outer.h\"\n#include <found.h>\n\
                     __kernel void k(__global int* x) { x[0] = undefined_thing; }\n",
        ),
    ];
    for (name, text) in files {
        std::fs::write(dir.join(name), text).unwrap();
    }
    let source = KernelSource::from_file(dir.join("main.cl"), &[dir.join("extra")]).unwrap();
    let log = match runtime().program(&source) {
        Err(Error::Build { log, .. }) => log,
        other => panic!("expected Build, got {:?}", other.map(|_| ())),
    };
    for at in ["sub/inner.h:2:", "sub/outer.h:4:", "extra/found.h:4:", "main.cl:4:"] {
        assert!(log.contains(at), "the log should name {at}:\n{log}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// `verify_within` bounds that mean nothing: a NaN or negative bound made the comparison bit
/// for bit, an infinite one passed every element whatever the kernel wrote.
#[test]
fn verify_tolerances_that_mean_nothing_are_refused() {
    let source = "__kernel void twice(__global const float* x, __global float* y) {
        const size_t i = get_global_id(0); y[i] = x[i] * 2.0f + 1.0f; }";
    let p = runtime().program(&KernelSource::from_text("twice.cl", source)).unwrap();
    let x: Vec<f32> = (0..256).map(|i| i as f32).collect();
    let want: Vec<f32> = x.iter().map(|v| v * 2.0 + 1.0).collect();
    let nan = f64::NAN;
    for (abs, rel) in [(nan, 0.0), (0.0, nan), (-1e-6, 0.0), (0.0, -1.0), (f64::INFINITY, 0.0)] {
        let mut y = vec![0f32; 256];
        let launch = p.launch("twice").global(&[256]).local(&[64]);
        let r = launch
            .input(&x, Pattern::ONE_TO_ONE)
            .output(&mut y, Pattern::ONE_TO_ONE)
            .verify_within(abs, rel)
            .verify();
        match r {
            Err(Error::BadConfig(m)) => assert!(m.contains("verify_within"), "{m}"),
            other => panic!("verify_within({abs}, {rel}): expected BadConfig, got {other:?}"),
        }
        assert!(y.iter().all(|v| *v == 0.0), "nothing runs");
    }
    let mut y = vec![0f32; 256];
    let launch = p.launch("twice").global(&[256]).local(&[64]).verify_within(1e-6, 1e-6);
    let v = launch.input(&x, Pattern::ONE_TO_ONE).output(&mut y, Pattern::ONE_TO_ONE).verify();
    assert!(v.unwrap().passed());
    assert_eq!(y, want);
}

/// `KernelSource::from_text` names with a backslash (a Windows-style path) or a line break: a
/// valid kernel builds, and the build log and argument errors name the file (a line break
/// shows as `\n` in argument errors).
#[test]
fn source_names_with_backslashes_and_line_breaks_are_named_as_given() {
    let rt = runtime();
    let good = "__kernel void one(__global int* x) {\n x[get_global_id(0)] = 1; }";
    let bad = "__kernel void one(__global int* x) {\n x[0] = 1 }";
    for name in ["kernels\\one.cl", "two\nlines.cl"] {
        let last_line = name.rsplit('\n').next().unwrap();
        let p = rt.program(&KernelSource::from_text(name, good)).unwrap_or_else(|e| {
            panic!("{name:?}: a valid kernel must build: {e}");
        });
        let mut x = vec![0i32; 64];
        let launch = p.launch("one").global(&[64]).local(&[64]);
        launch.output(&mut x, Pattern::ONE_TO_ONE).run().unwrap();
        assert!(x.iter().all(|v| *v == 1));
        let wrong = p.launch("one").global(&[64]).local(&[64]);
        match wrong.output(&mut vec![0f32; 64], Pattern::ONE_TO_ONE).run() {
            Err(Error::BadArgument { reason, .. }) => {
                assert!(reason.contains(&format!("{last_line}:1")), "{name:?}: {reason}")
            }
            other => panic!("{name:?}: expected BadArgument, got {:?}", other.map(|_| ())),
        }
        match rt.program(&KernelSource::from_text(name, bad)) {
            Err(Error::Build { log, .. }) => {
                assert!(log.contains(&format!("{name}:2:")), "{name:?}:\n{log}")
            }
            other => panic!("{name:?}: expected Build, got {:?}", other.map(|_| ())),
        }
    }
}
