//! Every argument of a launch is checked against the kernel's real signature before anything
//! is enqueued: a scalar given for a buffer (which the driver would take as a `cl_mem` and
//! crash on), a value of the wrong type, an input buffer for a parameter the kernel writes, an
//! output for a `const` one. On the two PoCL devices; each mistake below used to crash the
//! process or return `Ok` with wrong output.

use hetdsl::{Error, KernelSource, Pattern, Program, Runtime};

const SRC: &str = "\
__kernel void copy(__global const float* x, __global float* y) {
    y[get_global_id(0)] = x[get_global_id(0)];
}
__kernel void scale(__global float* y, int k) {
    y[get_global_id(0)] *= (float)k;
}
__kernel void fill(__global float* y) {
    size_t i = get_global_id(0);
    y[i] = 7.0f;
}
__kernel void add4(__global const float4* a, __global float4* b, __local float* tmp) {
    size_t i = get_global_id(0);
    tmp[get_local_id(0)] = a[i].x;
    b[i] = a[i] + (float4)(tmp[get_local_id(0)]);
}
__kernel void counts(__global const int* keys, __global int* hist) {
    atomic_inc(&hist[keys[get_global_id(0)] & 3]);
}
";

const N: usize = 256;

fn program(name: &str, text: &str) -> Program {
    let rt = Runtime::new().expect("an OpenCL runtime");
    assert!(rt.devices().len() >= 2, "run with POCL_DEVICES=\"pthread basic\"");
    rt.program(&KernelSource::from_text(name, text)).expect("builds")
}

/// The message of a `BadArgument` at `index`.
fn refused(r: hetdsl::Result<hetdsl::Report>, index: usize) -> String {
    match r {
        Err(e @ Error::BadArgument { index: i, .. }) if i == index => e.to_string(),
        Err(e) => panic!("wrong error: {e}"),
        Ok(_) => panic!("accepted"),
    }
}

fn assert_mentions(msg: &str, words: &[&str]) {
    for w in words {
        assert!(msg.contains(w), "the message should mention {w:?}: {msg}");
    }
}

#[test]
fn a_scalar_for_a_buffer_is_refused_before_any_device_runs() {
    // Without the check, PoCL takes the 8 bytes as a `cl_mem` and the process dies (SIGSEGV).
    let p = program("sig.cl", SRC);
    let x = vec![1.0f32; N];
    let r = p
        .launch("copy")
        .global(&[N])
        .local(&[64])
        .input(&x, Pattern::ONE_TO_ONE)
        .scalar(0u64)
        .run();
    let msg = refused(r, 1);
    assert_mentions(
        &msg,
        &[
            "argument 1: parameter `y` is `__global float*` in sig.cl:1",
            "the host argument must be a buffer of `f32`, found a scalar `u64`",
        ],
    );
}

#[test]
fn a_float_for_an_int_is_refused() {
    // Same width, so the driver accepted it and the kernel multiplied by 1065353216.
    let p = program("sig.cl", SRC);
    let mut y = vec![1.0f32; N];
    let r = p
        .launch("scale")
        .global(&[N])
        .local(&[64])
        .inout(&mut y, Pattern::ONE_TO_ONE)
        .scalar(1.0f32)
        .run();
    let msg = refused(r, 1);
    assert_mentions(
        &msg,
        &["parameter `k` is `int` in sig.cl:4", "scalar `i32`", "found a scalar `f32`"],
    );
    assert!(y.iter().all(|&v| v == 1.0), "nothing ran");
    // The right type runs.
    p.launch("scale")
        .global(&[N])
        .local(&[64])
        .inout(&mut y, Pattern::ONE_TO_ONE)
        .scalar(3i32)
        .run()
        .expect("runs");
    assert!(y.iter().all(|&v| v == 3.0));
}

#[test]
fn an_input_for_a_parameter_the_kernel_writes_is_refused() {
    // As an input the buffer was never copied back: `Ok`, and the output never written.
    let p = program("sig.cl", SRC);
    let y = vec![0.0f32; N];
    let r = p.launch("fill").global(&[N]).local(&[64]).input(&y, Pattern::ONE_TO_ONE).run();
    let msg = refused(r, 0);
    assert_mentions(
        &msg,
        &[
            "parameter `y` is `__global float*` in sig.cl:7",
            "writes through it at sig.cl:9",
            "output or inout",
        ],
    );
    // An atomic on the buffer is a write too.
    let keys = vec![1i32; N];
    let hist = vec![0i32; 4];
    let r = p
        .launch("counts")
        .global(&[N])
        .local(&[64])
        .input(&keys, Pattern::ONE_TO_ONE)
        .input(&hist, Pattern::Whole)
        .run();
    assert_mentions(&refused(r, 1), &["parameter `hist`", "writes through it at sig.cl:17"]);
}

#[test]
fn an_output_for_a_const_parameter_is_refused() {
    let p = program("sig.cl", SRC);
    let (mut x, mut y) = (vec![0.0f32; N], vec![0.0f32; N]);
    let r = p
        .launch("copy")
        .global(&[N])
        .local(&[64])
        .output(&mut x, Pattern::ONE_TO_ONE)
        .output(&mut y, Pattern::ONE_TO_ONE)
        .run();
    assert_mentions(&refused(r, 0), &["parameter `x`", "`const`", "input"]);
}

/// `add4` over `N` items in groups of 64, `a` and `b` 1:1 and 64 floats of `__local` memory, as
/// the kernel declares them: the cases that use it vary only the buffers' element types.
fn add4<'a, A: hetdsl::Pod, B: hetdsl::Pod>(
    p: &'a Program,
    a: &'a [A],
    b: &'a mut [B],
) -> hetdsl::Launch<'a> {
    let l = p.launch("add4").global(&[N]).local(&[64]);
    l.input(a, Pattern::ONE_TO_ONE).output(b, Pattern::ONE_TO_ONE).local_buffer::<f32>(64)
}

#[test]
fn element_types_vectors_and_local_buffers_are_checked() {
    let p = program("sig.cl", SRC);
    let a = vec![[1.0f32; 4]; N];
    let mut b = vec![[0.0f32; 4]; N];
    fn launch(p: &Program) -> hetdsl::Launch<'_> {
        p.launch("add4").global(&[N]).local(&[64])
    }
    // `i32` elements for `float`: the same width, another type.
    let ints = vec![[1i32; 4]; N];
    let r = add4(&p, &ints, &mut b).run();
    assert_mentions(
        &refused(r, 0),
        &["buffer of `[f32; 4]`", "found an input buffer of `[i32; 4]`"],
    );
    // A buffer for a `__local` pointer.
    let r = launch(&p)
        .input(&a, Pattern::ONE_TO_ONE)
        .output(&mut b, Pattern::ONE_TO_ONE)
        .input(&a, Pattern::Whole)
        .run();
    assert_mentions(
        &refused(r, 2),
        &["parameter `tmp`", "`__local` buffer", "local_buffer::<f32>"],
    );
    // `i32` elements for a `__local float*`.
    let r = launch(&p)
        .input(&a, Pattern::ONE_TO_ONE)
        .output(&mut b, Pattern::ONE_TO_ONE)
        .local_buffer::<i32>(64)
        .run();
    assert_mentions(
        &refused(r, 2),
        &["`__local` buffer of `f32`, found a `__local` buffer of `i32`"],
    );
    // `f32` elements for `float4`.
    let flat = vec![1.0f32; 4 * N];
    let r = launch(&p)
        .input(&flat, Pattern::Ratio { a: 4, b: 1 })
        .output(&mut b, Pattern::ONE_TO_ONE)
        .local_buffer::<f32>(64)
        .run();
    assert_mentions(
        &refused(r, 0),
        &["`__global const float4*`", "found an input buffer of `f32`"],
    );
    // And the right arguments run, against the CPU.
    add4(&p, &a, &mut b).run().expect("runs");
    assert!(b.iter().all(|v| *v == [2.0f32; 4]), "{:?}", &b[..2]);
}

/// Newtypes standing for an OpenCL `float4`: one of `f32` lanes, and one of the same size
/// whose lanes are integers.
#[repr(C, align(16))]
#[derive(Clone, Copy, hetdsl::Pod)]
struct Float4([f32; 4]);
#[repr(C, align(16))]
#[derive(Clone, Copy, hetdsl::Pod)]
struct Int4([i32; 4]);

#[test]
fn a_vector_newtype_of_another_primitive_is_refused_as_kernel_macro_refuses_it() {
    // The size alone let `Int4` through for `float4`: the kernel read integers' bits as floats
    // and the launch returned `Ok` with wrong numbers.
    let p = program("sig.cl", SRC);
    let ints = vec![Int4([1; 4]); N];
    let mut b = vec![Float4([0.0; 4]); N];
    let r = add4(&p, &ints, &mut b).run();
    assert_mentions(
        &refused(r, 0),
        &["`__global const float4*`", "found an input buffer of `Int4` (16 bytes of `i32`)"],
    );
    // An array of one is made of the same lanes, and has the same size.
    let wrapped = vec![[Int4([1; 4])]; N];
    let r = add4(&p, &wrapped, &mut b).run();
    refused(r, 0);
    // The newtype of `f32` lanes runs, against the CPU.
    let floats: Vec<Float4> = (0..N).map(|i| Float4([i as f32, 1.0, 2.0, 3.0])).collect();
    add4(&p, &floats, &mut b).run().expect("runs");
    for (i, (out, x)) in b.iter().zip(&floats).enumerate() {
        let want = x.0.map(|v| v + x.0[0]);
        assert_eq!(out.0, want, "element {i}");
    }
}

#[test]
fn a_source_the_reader_cannot_read_is_checked_against_the_driver() {
    // A kernel inside a branch that depends on the device: the reader refuses to guess, the
    // program still builds, and the driver's argument info does the check.
    let src = "#if __OPENCL_VERSION__ >= 100\n\
               __kernel void k(__global float* y, int n) { y[get_global_id(0)] = (float)n; }\n\
               #endif\n";
    let p = program("dev.cl", src);
    let mut y = vec![0.0f32; N];
    let r = p
        .launch("k")
        .global(&[N])
        .local(&[64])
        .output(&mut y, Pattern::ONE_TO_ONE)
        .scalar(2.5f32)
        .run();
    assert_mentions(
        &refused(r, 1),
        &[
            "parameter `n`",
            "scalar `i32`",
            "found a scalar `f32`",
            "checked against the driver's argument info",
        ],
    );
    let r = p.launch("k").global(&[N]).local(&[64]).output(&mut y, Pattern::ONE_TO_ONE).run();
    assert_mentions(&refused(r, 1), &["takes 2 arguments, 1 given"]);
    p.launch("k")
        .global(&[N])
        .local(&[64])
        .output(&mut y, Pattern::ONE_TO_ONE)
        .scalar(5i32)
        .run()
        .expect("runs");
    assert!(y.iter().all(|&v| v == 5.0));
}

#[test]
fn the_engines_own_argument_errors_name_the_parameter() {
    // A buffer one element short for its pattern: refused by the engine, which names the
    // parameter as the kernel declares it.
    let p = program("sig.cl", SRC);
    let x = vec![1.0f32; N];
    let mut y = vec![0.0f32; N - 1];
    let r = p
        .launch("copy")
        .global(&[N])
        .local(&[64])
        .input(&x, Pattern::ONE_TO_ONE)
        .output(&mut y, Pattern::ONE_TO_ONE)
        .run();
    assert_mentions(
        &refused(r, 1),
        &["argument 1: parameter `y` is `__global float*` in sig.cl:1", "255 elements"],
    );
}
