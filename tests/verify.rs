//! `Launch::verify`: the same launch alone on one device and co-executed with a random uneven
//! split, compared element by element. A pattern that does not say what the kernel writes or
//! reads is caught and named, as is an output the kernel writes only in part, also after
//! earlier runs left device buffers holding the right bytes; a correct kernel passes. On the
//! two PoCL devices, against CPU references.

use hetdsl::{KernelSource, Pattern, Program, Runtime};

const SRC: &str = "\
// Each work-item writes two elements: out[2i] and out[2i + 1] (pattern 2:1).
__kernel void pairs(__global const uint* in, __global uint* out) {
    size_t i = get_global_id(0);
    out[2 * i] = in[i];
    out[2 * i + 1] = 3u * in[i];
}
// Each work-item writes two elements too, but half an output apart: no pattern a:b says that.
__kernel void halves(__global const uint* in, __global uint* out, uint n) {
    size_t i = get_global_id(0);
    out[i] = in[i];
    out[i + n] = 3u * in[i];
}
__kernel void scale(__global float* x, float k) {
    size_t i = get_global_id(0);
    x[i] = x[i] * k + 0.5f;
}
// A scan's second pass: each group adds the previous group's total (one per group, 1:16), so
// it reads one element before its package's; the input must be `whole`.
__kernel void add_previous(__global const uint* totals, __global uint* out) {
    size_t g = get_group_id(0);
    out[get_global_id(0)] = g > 0 ? totals[g - 1] : 0u;
}
// Flags only the large inputs, leaving the other elements as they were: an `inout`.
__kernel void flag_large(__global const uint* in, __global uint* flags) {
    size_t i = get_global_id(0);
    if (in[i] > (1u << 24)) flags[i] = 1u;
}
";

const N: usize = 1024;
const LWS: usize = 16;

fn program() -> Program {
    let rt = Runtime::new().expect("an OpenCL runtime");
    assert!(rt.devices().len() >= 2, "run with POCL_DEVICES=\"pthread basic\"");
    rt.program(&KernelSource::from_text("verify.cl", SRC)).expect("builds")
}

fn input() -> Vec<u32> {
    (0..N as u32).map(|i| i.wrapping_mul(2_654_435_761) >> 7).collect()
}

#[test]
fn a_pattern_that_does_not_match_the_writes_is_caught_and_named() {
    let p = program();
    let x = input();
    let mut out = vec![0u32; 2 * N];
    let v = p
        .launch("halves")
        .global(&[N])
        .local(&[LWS])
        .input(&x, Pattern::ONE_TO_ONE)
        .output(&mut out, Pattern::Ratio { a: 2, b: 1 })
        .scalar(N as u32)
        .verify()
        .expect("both runs complete");
    assert!(!v.passed(), "the wrong pattern went unnoticed");
    let d = v.difference.as_ref().expect("a difference");
    assert_eq!((d.argument, d.parameter.as_deref()), (1, Some("out")));
    assert!(d.count > 0 && (d.element as usize) < 2 * N);
    let (package, device, _) = d.package.clone().expect("the package that wrote it");
    assert!(device < v.coexecuted.devices.len() && package.len > 0);
    let text = d.to_string();
    assert!(text.contains("parameter `out`") && text.contains("pattern"), "{text}");
    // Both devices ran packages of the random split.
    assert!(v.coexecuted.devices.iter().all(|d| d.packages >= 2), "{}", v.coexecuted.table());
    // The caller's buffer holds the one device's result, which is right.
    let reference: Vec<u32> = (0..2 * N).map(|e| if e < N { x[e] } else { 3 * x[e - N] }).collect();
    assert_eq!(out, reference);
}

#[test]
fn a_correct_kernel_passes_and_leaves_the_coexecuted_output() {
    let p = program();
    let x = input();
    let mut out = vec![0u32; 2 * N];
    let v = p
        .launch("pairs")
        .global(&[N])
        .local(&[LWS])
        .input(&x, Pattern::ONE_TO_ONE)
        .output(&mut out, Pattern::Ratio { a: 2, b: 1 })
        .verify_seed(42)
        .verify()
        .expect("both runs complete");
    assert!(v.passed(), "{:?}", v.difference);
    assert_eq!(v.seed, 42);
    assert!(v.coexecuted.devices.iter().all(|d| d.packages >= 2), "{}", v.coexecuted.table());
    assert_eq!(v.alone.devices.len(), 1);
    let reference: Vec<u32> =
        (0..2 * N).map(|e| if e % 2 == 0 { x[e / 2] } else { 3 * x[e / 2] }).collect();
    assert_eq!(out, reference);
}

#[test]
fn inout_buffers_start_from_the_same_contents_in_both_runs() {
    let p = program();
    let start: Vec<f32> = (0..N).map(|i| i as f32 * 0.25).collect();
    let mut x = start.clone();
    let v = p
        .launch("scale")
        .global(&[N])
        .local(&[LWS])
        .inout(&mut x, Pattern::ONE_TO_ONE)
        .scalar(2.0f32)
        .verify_within(1e-6, 1e-6)
        .verify()
        .expect("both runs complete");
    assert!(v.passed(), "{:?}", v.difference);
    // Applied once, not twice: the co-executed run started from the caller's contents too.
    let reference: Vec<f32> = start.iter().map(|v| v * 2.0 + 0.5).collect();
    assert_eq!(x, reference);
}

#[test]
fn argument_mistakes_are_refused_before_either_run() {
    let p = program();
    let x = input();
    let r = p
        .launch("pairs")
        .global(&[N])
        .local(&[LWS])
        .input(&x, Pattern::ONE_TO_ONE)
        .scalar(0u64)
        .verify();
    let e = r.expect_err("refused").to_string();
    assert!(e.contains("parameter `out`"), "{e}");
}

hetdsl::kernel! {
    /// y = a·x + y, one element per work-item.
    #[kernel(file = "kernels/saxpy.cl", local = 64)]
    struct Saxpy {
        fn saxpy(a: f32, #[input(1:1)] x: &[f32], #[inout(1:1)] y: &mut [f32]);
    }
}

/// The same kernel through `#[coexec]`.
#[hetdsl::coexec(file = "kernels/saxpy.cl", name = "saxpy", local = 64)]
fn scale_add(a: f32, #[input(1:1)] x: &[f32], #[inout(1:1)] y: &mut [f32]);

#[test]
fn the_dsl_generates_verify_next_to_run() {
    let rt = Runtime::new().expect("an OpenCL runtime");
    let x: Vec<f32> = (0..N).map(|i| i as f32).collect();
    let mut y = vec![1.0f32; N];
    let v = Saxpy::new(&rt).expect("builds").verify(N, 2.0, &x, &mut y).expect("runs");
    assert!(v.passed(), "{:?}", v.difference);
    assert!(y.iter().enumerate().all(|(i, &v)| v == 2.0 * i as f32 + 1.0));
    let v = scale_add::verify(&rt, N, 3.0, &x, &mut y).expect("runs");
    assert!(v.passed(), "{:?}", v.difference);
    assert!(y.iter().enumerate().all(|(i, &v)| v == 5.0 * i as f32 + 1.0));
}

#[test]
fn an_input_read_beyond_its_pattern_is_caught_also_after_a_run() {
    let p = program();
    let totals: Vec<u32> = (0..(N / LWS) as u32).map(|g| 1000 + g).collect();
    let mut out = vec![0u32; N];
    fn launch<'a>(p: &'a Program, totals: &'a [u32], out: &'a mut [u32]) -> hetdsl::Launch<'a> {
        p.launch("add_previous")
            .global(&[N])
            .local(&[LWS])
            .input(totals, Pattern::Ratio { a: 1, b: LWS as u64 })
            .output(out, Pattern::ONE_TO_ONE)
    }
    // An earlier run left every device's buffer with all the totals.
    launch(&p, &totals, &mut out).on_devices(&[0]).run().expect("runs alone");
    launch(&p, &totals, &mut out).on_devices(&[1]).run().expect("runs alone");
    for seed in [1, 2, 3] {
        let v =
            launch(&p, &totals, &mut out).verify_seed(seed).verify().expect("both runs complete");
        let d = v.difference.expect("a read before the package's first total goes unnoticed");
        assert_eq!(d.argument, 1, "{d}");
        assert!(!d.unwritten, "{d}");
    }
    let reference: Vec<u32> =
        (0..N).map(|i| if i < LWS { 0 } else { totals[i / LWS - 1] }).collect();
    assert_eq!(out, reference, "the one device's result is left");
}

#[test]
fn an_output_written_in_part_is_caught_and_inout_passes() {
    let p = program();
    let x = input();
    let mut flags = vec![0u32; N];
    // Earlier runs leave stale flags in the devices' buffers.
    for d in [0, 1] {
        let l = p.launch("flag_large").global(&[N]).local(&[LWS]).on_devices(&[d]);
        l.input(&x, Pattern::ONE_TO_ONE).output(&mut flags, Pattern::ONE_TO_ONE).run().unwrap();
    }
    flags.fill(0);
    let v = p
        .launch("flag_large")
        .global(&[N])
        .local(&[LWS])
        .input(&x, Pattern::ONE_TO_ONE)
        .output(&mut flags, Pattern::ONE_TO_ONE)
        .verify()
        .expect("both runs complete");
    let d = v.difference.expect("elements no work-item wrote go unnoticed");
    assert!(d.unwritten && d.to_string().contains("`inout`"), "{d}");
    flags.fill(0);
    let v = p
        .launch("flag_large")
        .global(&[N])
        .local(&[LWS])
        .input(&x, Pattern::ONE_TO_ONE)
        .inout(&mut flags, Pattern::ONE_TO_ONE)
        .verify()
        .expect("both runs complete");
    assert!(v.passed(), "{:?}", v.difference);
    let reference: Vec<u32> = x.iter().map(|&v| u32::from(v > 1 << 24)).collect();
    assert_eq!(flags, reference);
}
