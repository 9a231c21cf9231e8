//! The bad-input catalogue (docs/ERRORS.md): each mistake a user can make at run time gives an
//! error that says what to fix — never a panic, a hang or wrong numbers. The compile-time
//! mistakes are the DSL's UI tests (hetdsl/tests/ui).

mod common;

use common::{program, within};
use hetdsl::balance::{Balancer, Completion, Dynamic, Next, Package, Setup, Static};
use hetdsl::{DeviceFilter, Error, KernelSource, Pattern, Runtime};
use std::path::Path;
use std::time::Duration;

fn kernels_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kernels")
}

/// The message of an error, with its variant checked by `expect`.
fn message(r: hetdsl::Result<impl std::fmt::Debug>, expect: fn(&Error) -> bool) -> String {
    match r {
        Err(e) if expect(&e) => e.to_string(),
        Err(e) => panic!("wrong kind of error: {e:?}"),
        Ok(v) => panic!("expected an error, got {v:?}"),
    }
}

fn assert_mentions(msg: &str, words: &[&str]) {
    for w in words {
        assert!(msg.contains(w), "error message should mention {w:?}: {msg}");
    }
}

macro_rules! is {
    ($p:pat) => {
        |e: &Error| matches!(e, $p)
    };
}

#[test]
fn device_filter_matching_nothing() {
    // PoCL offers CPUs only here, so asking for GPUs matches nothing.
    let msg = message(
        Runtime::with_filter(DeviceFilter::Kind(hetdsl::balance::DeviceKind::Gpu)).map(|_| ()),
        is!(Error::NoDeviceMatches { .. }),
    );
    assert_mentions(&msg, &["gpu", "devices found", "0: "]);
}

#[test]
fn device_index_out_of_range() {
    let msg = message(
        Runtime::with_filter(DeviceFilter::Indices(vec![0, 42])).map(|_| ()),
        is!(Error::NoDeviceMatches { .. }),
    );
    assert_mentions(&msg, &["42"]);
}

#[test]
fn unreadable_device_filter() {
    let msg = message("fastest".parse::<DeviceFilter>(), is!(Error::BadDeviceFilter(_)));
    assert_mentions(&msg, &["fastest", "`all`", "0,2"]);
    // A repeated index would run on fewer devices than named.
    let msg = message("1,1".parse::<DeviceFilter>(), is!(Error::BadDeviceFilter(_)));
    assert_mentions(&msg, &["1,1", "distinct"]);
}

#[test]
fn missing_source_file() {
    let msg = message(
        KernelSource::from_file(kernels_dir().join("nope.cl"), &[]),
        is!(Error::Source { .. }),
    );
    assert_mentions(&msg, &["nope.cl"]);
}

#[test]
fn missing_include() {
    let dir = std::env::temp_dir().join(format!("hetdsl-missing-include-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("main.cl");
    std::fs::write(
        &file,
        "#include \"not_there.h\"\n__kernel void k(__global int* a) { a[0] = 1; }\n",
    )
    .unwrap();
    let msg = message(KernelSource::from_file(&file, &[]), is!(Error::Source { .. }));
    assert_mentions(&msg, &["not_there.h"]);
}

#[test]
fn build_failure_names_file_and_line() {
    let rt = Runtime::new().unwrap();
    let source = KernelSource::from_file(kernels_dir().join("broken.cl"), &[]).unwrap();
    let msg = message(rt.program(&source).map(|_| ()), is!(Error::Build { .. }));
    assert_mentions(&msg, &["broken.cl:5:", "undeclared_identifier"]);
}

#[test]
fn kernel_not_in_program() {
    let p = program("engine.cl");
    let mut out = vec![0u32; 64];
    let r = p
        .launch("no_such_kernel")
        .global(&[64])
        .local(&[64])
        .output(&mut out, Pattern::ONE_TO_ONE)
        .run();
    let msg = message(r, is!(Error::NoSuchKernel { .. }));
    assert_mentions(&msg, &["no_such_kernel", "engine.cl", "expand4"]);
}

/// A launch of `coords`-like 1:1 output over `global`/`local`, returning the error message.
fn range_error(global: &[usize], local: &[usize]) -> String {
    let p = program("engine.cl");
    // Wrapping: a range past 2^64 work-items gets the buffer a wrapped count would ask for.
    let mut out = vec![0u32; global.iter().fold(1usize, |n, g| n.wrapping_mul(*g)).max(1)];
    let r =
        p.launch("coords").global(global).local(local).output(&mut out, Pattern::ONE_TO_ONE).run();
    message(r, is!(Error::BadRange(_)))
}

#[test]
fn range_not_a_multiple_of_the_work_group() {
    assert_mentions(&range_error(&[100], &[64]), &["100", "not a multiple", "64"]);
}

#[test]
fn empty_range() {
    assert_mentions(&range_error(&[0], &[64]), &["empty NDRange"]);
}

#[test]
fn missing_work_group_size() {
    assert_mentions(&range_error(&[64], &[]), &["no work-group size"]);
}

#[test]
fn work_group_dimensions_differ_from_the_range() {
    assert_mentions(&range_error(&[64, 64], &[8]), &["2 dimension(s)", "has 1"]);
}

#[test]
fn four_dimensional_range() {
    assert_mentions(&range_error(&[8, 8, 8, 8], &[2, 2, 2, 2]), &["4-D", "1-D, 2-D and 3-D"]);
}

#[test]
fn zero_sized_work_group() {
    assert_mentions(&range_error(&[64], &[0]), &["zero dimension"]);
}

/// `expand4` (one input 1:1, one output 4:1) with the given buffers and output pattern.
fn expand4_error(input_len: usize, output_len: usize, out_pattern: Pattern) -> String {
    let p = program("engine.cl");
    let input = vec![1u32; input_len];
    let mut out = vec![0u32; output_len];
    let r = p
        .launch("expand4")
        .global(&[256])
        .local(&[64])
        .input(&input, Pattern::ONE_TO_ONE)
        .output(&mut out, out_pattern)
        .run();
    message(r, is!(Error::BadArgument { .. }))
}

#[test]
fn buffer_too_short_for_its_pattern() {
    assert_mentions(
        &expand4_error(255, 1024, Pattern::ratio(4, 1).unwrap()),
        &["argument 0", "255 elements", "needs 256"],
    );
}

#[test]
fn buffer_too_long_for_its_pattern() {
    assert_mentions(
        &expand4_error(256, 1025, Pattern::ratio(4, 1).unwrap()),
        &["argument 1", "1025 elements", "needs 1024"],
    );
}

#[test]
fn pattern_not_dividing_the_work_group() {
    assert_mentions(
        &expand4_error(256, 2, Pattern::ratio(1, 128).unwrap()),
        &["1:128", "work-group of 64"],
    );
}

#[test]
fn pattern_with_a_zero_side_or_past_u64() {
    // `Pattern::ratio` refuses a zero side, but the variant's fields are public.
    assert_mentions(&expand4_error(256, 1024, Pattern::Ratio { a: 0, b: 0 }), &["zero side"]);
    assert_mentions(&expand4_error(256, 1024, Pattern::Ratio { a: 1 << 60, b: 1 }), &["2^64"]);
}

#[test]
fn range_of_2_pow_64_work_items() {
    // 2^64 + 256 work-items would wrap to 256 and let 256-element buffers through.
    assert_mentions(&range_error(&[256, (1 << 56) + 1], &[64, 1]), &["2^64"]);
}

#[test]
fn output_given_as_whole() {
    assert_mentions(&expand4_error(256, 1024, Pattern::Whole), &["cannot be `whole`"]);
}

#[test]
fn empty_buffer() {
    assert_mentions(&expand4_error(0, 1024, Pattern::ratio(4, 1).unwrap()), &["empty buffer"]);
}

#[test]
fn wrong_argument_count() {
    let p = program("engine.cl");
    let input = vec![1u32; 256];
    let r =
        p.launch("expand4").global(&[256]).local(&[64]).input(&input, Pattern::ONE_TO_ONE).run();
    let msg = message(r, is!(Error::BadArgument { .. }));
    assert_mentions(&msg, &["takes 2 arguments, 1 given"]);
}

#[test]
fn scalar_of_the_wrong_size() {
    let p = program("engine.cl");
    let (a, b) = (vec![1i32; 256], vec![2i32; 256]);
    let mut out = vec![0i32; 256];
    // `k` is an `int` in the kernel; an 8-byte value does not fit.
    let r = p
        .launch("scale_add")
        .global(&[256])
        .local(&[64])
        .input(&a, Pattern::ONE_TO_ONE)
        .input(&b, Pattern::ONE_TO_ONE)
        .output(&mut out, Pattern::ONE_TO_ONE)
        .scalar(7i64)
        .run();
    let msg = message(r, is!(Error::BadArgument { index: 3, .. }));
    assert_mentions(&msg, &["parameter `k`", "engine.cl:", "scalar `i32`", "found a scalar `i64`"]);
}

#[test]
fn work_group_larger_than_the_device_allows() {
    let p = program("engine.cl");
    let max = p.devices().iter().map(|d| d.max_work_group_size).max().unwrap();
    let n = max * 2;
    let input = vec![1u32; n];
    let mut out = vec![0u32; 4 * n];
    let r = p
        .launch("expand4")
        .global(&[n])
        .local(&[n])
        .input(&input, Pattern::ONE_TO_ONE)
        .output(&mut out, Pattern::ratio(4, 1).unwrap())
        .run();
    let msg = message(r, is!(Error::DeviceLimit { .. }));
    assert_mentions(&msg, &["work-group size", "exceeds the maximum"]);
}

#[test]
fn local_memory_over_the_device_limit() {
    let p = program("engine.cl");
    let local = p.devices().iter().map(|d| d.local_mem_bytes).max().unwrap() as usize;
    let input = vec![1u32; 256];
    let mut sums = vec![0u32; 2];
    let r = p
        .launch("group_sum")
        .global(&[256])
        .local(&[128])
        .input(&input, Pattern::ONE_TO_ONE)
        .output(&mut sums, Pattern::ratio(1, 128).unwrap())
        .local_buffer::<u32>(local / 4 + 1)
        .run();
    let msg = message(r, is!(Error::DeviceLimit { .. }));
    assert_mentions(&msg, &["local memory"]);
}

/// Two `__local` buffers: scratch of `a` and of `b`, each one element per work-item.
const TWO_LOCAL: &str = r#"
__kernel void two_local(__global uint* out, __local uint* a, __local uint* b) {
    size_t l = get_local_id(0);
    a[l] = (uint)get_global_id(0);
    b[l] = 1u;
    barrier(CLK_LOCAL_MEM_FENCE);
    out[get_global_id(0)] = a[l] + b[l];
}
"#;

#[test]
fn local_buffers_whose_sizes_add_past_u64_are_over_the_limit() {
    // The per-work-group sizes were added in 64 bits, wrapping: a saturated `usize::MAX` and
    // one more element came to 3 bytes, passed the device's limit, and PoCL crashed the
    // process (SIGSEGV) at the launch.
    let rt = Runtime::new().unwrap();
    let p = rt.program(&KernelSource::from_text("two_local.cl", TWO_LOCAL)).unwrap();
    for (a, b) in [(usize::MAX, 1), (usize::MAX / 8 + 1, usize::MAX / 8 + 1)] {
        let mut out = vec![0u32; 256];
        let r = p
            .launch("two_local")
            .global(&[256])
            .local(&[64])
            .output(&mut out, Pattern::ONE_TO_ONE)
            .local_buffer::<u32>(a)
            .local_buffer::<u32>(b)
            .run();
        let msg = message(r, is!(Error::DeviceLimit { .. }));
        assert_mentions(&msg, &["local memory"]);
    }
    // A session's launch adds them the same way.
    let session = p.session().unwrap();
    let mut buffer = session.buffer::<u32>(256).unwrap();
    let r = session
        .launch("two_local")
        .global(&[256])
        .local(&[64])
        .output(&mut buffer, Pattern::ONE_TO_ONE)
        .local_buffer::<u32>(usize::MAX)
        .local_buffer::<u32>(1)
        .run();
    let msg = message(r, is!(Error::DeviceLimit { .. }));
    assert_mentions(&msg, &["local memory"]);
    drop((buffer, session));
    // Correct sizes still run, and every element is the CPU's.
    let mut out = vec![0u32; 256];
    p.launch("two_local")
        .global(&[256])
        .local(&[64])
        .output(&mut out, Pattern::ONE_TO_ONE)
        .local_buffer::<u32>(64)
        .local_buffer::<u32>(64)
        .run()
        .unwrap();
    assert_eq!(out, (1..=256).collect::<Vec<u32>>());
}

#[test]
fn device_position_out_of_range() {
    let p = program("engine.cl");
    let input = vec![1u32; 256];
    let mut out = vec![0u32; 1024];
    let r = common::expand4(&p, 256, &input, &mut out).on_devices(&[7]).run();
    let msg = message(r, is!(Error::NoDeviceMatches { .. }));
    assert_mentions(&msg, &["device position 7"]);
}

fn expand4_with(balancer: Box<dyn Balancer>) -> hetdsl::Result<hetdsl::Report> {
    let p = program("engine.cl");
    let input = vec![1u32; 1024];
    let mut out = vec![0u32; 4096];
    common::expand4(&p, 1024, &input, &mut out).balancer(balancer).run()
}

#[test]
fn static_weights_for_the_wrong_device_count() {
    let msg = message(
        expand4_with(Box::new(Static::with_weights(vec![1.0, 2.0, 3.0]))),
        is!(Error::BadBalancer(_)),
    );
    assert_mentions(&msg, &["3 weights for 2 devices"]);
}

#[test]
fn static_weights_whose_sum_overflows() {
    // Each weight is finite; their sum is not.
    let msg = message(
        expand4_with(Box::new(Static::with_weights(vec![1e308, 1e308]))),
        is!(Error::BadBalancer(_)),
    );
    assert_mentions(&msg, &["sum to a finite number"]);
}

#[test]
fn single_device_times_that_do_not_fit_the_report() {
    let mut report = expand4_with(Box::new(Static::with_weights(vec![1.0, 1.0]))).unwrap();
    let inf = f64::INFINITY;
    for bad in [&[][..], &[0.02][..], &[0.02, 0.0][..], &[0.02, f64::NAN][..], &[inf, inf][..]] {
        let msg = message(report.compare_with_single_device(bad), is!(Error::BadArgument { .. }));
        assert_mentions(&msg, &["2 positive single-device times"]);
        assert_eq!(report.efficiency, None, "{bad:?} left figures behind");
    }
    report.compare_with_single_device(&[0.02, 0.03]).unwrap();
    assert!(report.efficiency.is_some_and(|e| e > 0.0));
    // A device that cannot hold the problem alone adds nothing to Smax.
    report.compare_with_single_device(&[inf, 0.03]).unwrap();
    assert_eq!(report.smax, Some(1.0));
    assert_eq!(report.speedup, Some(0.03 / report.roi_seconds));
}

#[test]
fn dynamic_with_zero_packages() {
    let msg = message(expand4_with(Box::new(Dynamic::packages(0))), is!(Error::BadBalancer(_)));
    assert_mentions(&msg, &["non-zero"]);
}

/// A faulty balancer: hands out the same package every time.
struct Repeats;
impl Balancer for Repeats {
    fn name(&self) -> String {
        "repeats".into()
    }
    fn start(&mut self, _: &Setup) -> hetdsl::Result<()> {
        Ok(())
    }
    fn next(&mut self, _: usize, _: f64) -> Next {
        Next::Run(Package { offset: 0, len: 1 })
    }
    fn completed(&mut self, _: &Completion) {}
    fn device_lost(&mut self, _: usize) {}
}

/// A faulty balancer: never hands anything out.
struct AlwaysWaits;
impl Balancer for AlwaysWaits {
    fn name(&self) -> String {
        "always-waits".into()
    }
    fn start(&mut self, _: &Setup) -> hetdsl::Result<()> {
        Ok(())
    }
    fn next(&mut self, _: usize, _: f64) -> Next {
        Next::Wait
    }
    fn completed(&mut self, _: &Completion) {}
    fn device_lost(&mut self, _: usize) {}
}

#[test]
fn balancer_handing_out_work_twice_is_stopped() {
    let msg = within(Duration::from_secs(60), || {
        message(expand4_with(Box::new(Repeats)), is!(Error::BadBalancer(_)))
    });
    assert_mentions(&msg, &["twice"]);
}

#[test]
fn balancer_that_never_hands_out_work_does_not_hang() {
    let msg = within(Duration::from_secs(60), || {
        message(expand4_with(Box::new(AlwaysWaits)), is!(Error::BadBalancer(_)))
    });
    assert_mentions(&msg, &["stopped handing out work", "16 unit(s) left"]);
}

/// A faulty balancer: its first package's offset and length add past `u64::MAX`, then it
/// hands the range out one work-group at a time.
struct Wraps {
    first: Option<Package>,
    next: u64,
    total: u64,
}
impl Balancer for Wraps {
    fn name(&self) -> String {
        "wraps".into()
    }
    fn start(&mut self, setup: &Setup) -> hetdsl::Result<()> {
        self.total = setup.total_groups;
        Ok(())
    }
    fn next(&mut self, _: usize, _: f64) -> Next {
        if let Some(p) = self.first.take() {
            return Next::Run(p);
        }
        self.next += 1;
        match self.next <= self.total {
            true => Next::Run(Package { offset: self.next - 1, len: 1 }),
            false => Next::Done,
        }
    }
    fn completed(&mut self, _: &Completion) {}
    fn device_lost(&mut self, _: usize) {}
}

#[test]
fn a_package_whose_end_wraps_past_u64_is_refused_not_launched() {
    // Its end wrapped to a small number, inside the range: the package was launched and PoCL
    // aborted the process on a work size that had wrapped too.
    for first in [Package { offset: 3, len: u64::MAX }, Package { offset: u64::MAX, len: 2 }] {
        let balancer = Wraps { first: Some(first), next: 0, total: 0 };
        let msg = within(Duration::from_secs(60), move || {
            message(expand4_with(Box::new(balancer)), is!(Error::BadBalancer(_)))
        });
        assert_mentions(&msg, &["wraps", "outside the range 0..16"]);
    }
}

#[test]
fn zero_pattern_is_refused() {
    assert!(Pattern::ratio(0, 1).is_none());
    assert!("3:0".parse::<Pattern>().unwrap_err().contains("zero"));
}

/// `expand4` over 1024 items with a launch-level tweak, returning the run's result.
fn expand4_tweaked(
    tweak: impl for<'a> FnOnce(hetdsl::Launch<'a>) -> hetdsl::Launch<'a>,
) -> hetdsl::Result<hetdsl::Report> {
    let p = program("engine.cl");
    let input = vec![1u32; 1024];
    let mut out = vec![0u32; 4096];
    let launch = common::expand4(&p, 1024, &input, &mut out);
    tweak(launch).run()
}

#[test]
fn watchdog_values_that_mean_nothing_are_refused_before_the_run() {
    use hetdsl::WatchdogConfig;
    let secs = Duration::from_secs(1);
    for factor in [f64::NAN, -1.0, 0.0, f64::INFINITY] {
        let msg = within(Duration::from_secs(60), move || {
            message(
                expand4_tweaked(|l| l.watchdog(WatchdogConfig { factor, min: secs })),
                is!(Error::BadConfig(_)),
            )
        });
        assert_mentions(&msg, &["watchdog", "factor", &format!("{factor}")]);
    }
    let msg = within(Duration::from_secs(60), || {
        message(
            expand4_tweaked(|l| l.watchdog(WatchdogConfig { factor: 2.0, min: Duration::ZERO })),
            is!(Error::BadConfig(_)),
        )
    });
    assert_mentions(&msg, &["watchdog", "min"]);
}

/// A watchdog too long for an `Instant` to hold means "never": the runs end correctly where
/// the deadlines' arithmetic panicked (`min * 3`, `now + min`, `factor * time` as a
/// `Duration`), one-shot in many packages and in a session whose later launches are queued.
#[test]
fn a_watchdog_too_long_to_count_means_never() {
    use hetdsl::WatchdogConfig;
    let tens = Duration::from_secs(10);
    for w in [
        WatchdogConfig { factor: 20.0, min: Duration::MAX },
        WatchdogConfig { factor: 1e300, min: tens },
    ] {
        let p = program("engine.cl");
        let input: Vec<u32> = (0..1024).collect();
        let mut out = vec![0u32; 4096];
        let one_shot = common::expand4(&p, 1024, &input, &mut out);
        one_shot.balancer(Box::new(Dynamic::packages(8))).watchdog(w).run().unwrap();
        assert_eq!(out, common::expand4_reference(&input), "{w:?}");
        let p = common::program("session.cl");
        let s = p.session().unwrap();
        let xs: Vec<f32> = (0..1024).map(|i| i as f32).collect();
        let (x, y) = (s.buffer_from(&xs).unwrap(), s.buffer_from(&xs).unwrap());
        let mut o = s.buffer::<f32>(1024).unwrap();
        for _ in 0..3 {
            common::saxpy_launch(&s, 1024, &x, &y, &mut o).watchdog(w).submit().unwrap();
        }
        s.finish().unwrap();
        let got = o.to_vec().unwrap();
        assert!(got.iter().zip(&xs).all(|(o, x)| *o == 3.0 * x), "{w:?}");
    }
}

#[test]
fn a_device_position_given_twice_is_refused() {
    let msg = message(expand4_tweaked(|l| l.on_devices(&[1, 0, 1])), is!(Error::BadConfig(_)));
    assert_mentions(&msg, &["device position 1", "twice"]);
}

#[test]
fn a_fault_injected_on_a_device_not_in_the_run_is_refused() {
    let msg = message(
        expand4_tweaked(|l| {
            l.on_devices(&[0]).inject(hetdsl::Fault::Fail { device: 1, package: 0 })
        }),
        is!(Error::BadConfig(_)),
    );
    assert_mentions(&msg, &["fault", "device 1", "1 device"]);
}

#[test]
fn a_work_group_range_outside_the_ndrange_is_refused() {
    // 1024 items in groups of 64: units 0..16.
    for range in [5..5, 10..17, 20..30] {
        let msg = message(expand4_tweaked(|l| l.groups(range.clone())), is!(Error::BadRange(_)));
        assert_mentions(&msg, &["work-group range", "0..16"]);
    }
}

/// A user balancer that panics in `next` or in `completed`.
struct Panics {
    in_completed: bool,
    inner: Dynamic,
}
impl Balancer for Panics {
    fn name(&self) -> String {
        "panics-on-purpose".into()
    }
    fn start(&mut self, setup: &Setup) -> hetdsl::Result<()> {
        self.inner.start(setup)
    }
    fn next(&mut self, device: usize, now: f64) -> Next {
        if !self.in_completed {
            panic!("a bug in a user balancer");
        }
        self.inner.next(device, now)
    }
    fn completed(&mut self, done: &Completion) {
        if self.in_completed {
            panic!("a bug in a user balancer");
        }
        self.inner.completed(done)
    }
    fn device_lost(&mut self, device: usize) {
        self.inner.device_lost(device)
    }
}

#[test]
fn a_balancer_that_panics_is_an_error_not_a_hang() {
    for in_completed in [false, true] {
        let msg = within(Duration::from_secs(30), move || {
            message(
                expand4_with(Box::new(Panics { in_completed, inner: Dynamic::packages(8) })),
                is!(Error::BadBalancer(_)),
            )
        });
        let call = if in_completed { "completed" } else { "next" };
        assert_mentions(&msg, &["panics-on-purpose", "panicked", call, "a bug in a user balancer"]);
    }
}

/// A user balancer whose `name` panics; it splits the work as `Dynamic` does.
struct Nameless(Dynamic);
impl Balancer for Nameless {
    fn name(&self) -> String {
        panic!("a bug in a user balancer's name")
    }
    fn start(&mut self, setup: &Setup) -> hetdsl::Result<()> {
        self.0.start(setup)
    }
    fn next(&mut self, device: usize, now: f64) -> Next {
        self.0.next(device, now)
    }
    fn completed(&mut self, done: &Completion) {
        self.0.completed(done)
    }
    fn device_lost(&mut self, device: usize) {
        self.0.device_lost(device)
    }
}

#[test]
fn a_balancer_whose_name_panics_still_runs_and_is_named_so() {
    let r =
        within(Duration::from_secs(30), || expand4_with(Box::new(Nameless(Dynamic::packages(8)))));
    let report = r.expect("the run");
    assert_eq!(report.balancer, "(a user balancer whose name() panicked)");
    // Every group merged once (a back-up's groups would count on both devices in `groups`).
    let merged: u64 = report.trace.iter().filter(|t| t.merged).map(|t| t.package.len).sum();
    assert_eq!(merged, report.total_groups, "{}", report.table());
}

#[test]
fn a_device_thread_that_panics_does_not_hang_the_run() {
    // Device 1's host thread panics at its second package: its work is re-run on device 0.
    let p = program("engine.cl");
    let input: Vec<u32> = (0..4096).collect();
    let r = within(Duration::from_secs(30), move || {
        let mut out = vec![0u32; 4 * 4096];
        let r = common::expand4(&p, 4096, &input, &mut out)
            .balancer(common::round_robin(4))
            .backups(false)
            .inject(hetdsl::Fault::Panic { device: 1, package: 1 })
            .run();
        (r, out, input)
    });
    let (r, out, input) = r;
    let r = r.unwrap();
    let expected = common::expand4_reference(&input);
    assert_eq!(out, expected);
    assert!(r.devices[1].fault.as_deref().unwrap_or("").contains("panicked"), "{}", r.table());
}

#[test]
fn local_memory_of_zero_per_work_item_is_refused() {
    let p = program("engine.cl");
    let input = vec![1u32; 256];
    let mut sums = vec![0u32; 2];
    let r = p
        .launch("group_sum")
        .global(&[256])
        .local(&[128])
        .input(&input, Pattern::ONE_TO_ONE)
        .output(&mut sums, Pattern::ratio(1, 128).unwrap())
        .local_buffer_per_item::<u32>(0)
        .run();
    let msg = message(r, is!(Error::BadArgument { index: 2, .. }));
    assert_mentions(&msg, &["0 bytes per work-item"]);
}

#[test]
fn a_bitwise_merge_on_floats_is_refused() {
    // A kernel with a `float` output, so that only the merge is wrong (the argument check
    // refuses `f32` elements for a `uint` buffer before the merge is looked at).
    let rt = Runtime::new().expect("an OpenCL runtime");
    let src = KernelSource::from_text(
        "flags.cl",
        "__kernel void expand4(__global const uint* in, __global float* out) {\n\
             if (in[get_global_id(0)] == 0u) out[0] = 1.0f;\n}\n",
    );
    let p = rt.program(&src).expect("builds");
    let input = vec![1u32; 256];
    let mut flag = [0f32; 4];
    let r = p
        .launch("expand4")
        .global(&[256])
        .local(&[64])
        .input(&input, Pattern::ONE_TO_ONE)
        .reduce(&mut flag, hetdsl::Merge::Or)
        .run();
    let msg = message(r, is!(Error::BadArgument { index: 1, .. }));
    assert_mentions(&msg, &["merge `or`", "integers only", "f32"]);
}
