//! Work-item built-ins under co-execution: kernels that index by `get_group_id` or
//! `get_global_linear_id`, or read `get_num_groups`, `get_global_size` or `get_global_offset`,
//! give the same output co-executed with every balancer as on one device alone, and as the CPU
//! computes it, also where a macro names the built-in.

mod common;

use hetdsl::balance::BalancerSpec;
use hetdsl::{Balancer, Pattern, Program};

const N: usize = 1024; // 1-D: 64 groups of 16
const LWS: usize = 16;
const W: usize = 64; // 2-D: 64 x 32 in groups of 8 x 4
const H: usize = 32;
const LWS2: [usize; 2] = [8, 4];

/// A balancer for every name the runtime knows, plus one that deals several packages to each
/// device whatever their speeds.
fn every_balancer() -> Vec<(String, Box<dyn Balancer>)> {
    let mut all: Vec<(String, Box<dyn Balancer>)> =
        common::every_balancer().map(|(n, b)| (n.to_string(), b)).collect();
    all.push(("round-robin(3)".into(), common::round_robin(3)));
    all
}

/// Runs `kernel` on one device alone, then co-executed with every balancer; each output must
/// equal `reference` element for element.
fn check(program: &Program, kernel: &str, global: &[usize], width_arg: bool, reference: &[u32]) {
    let local: &[usize] = if global.len() == 1 { &[LWS] } else { &LWS2 };
    let run = |out: &mut Vec<u32>, devices: &[usize], balancer: Box<dyn Balancer>| {
        out.fill(u32::MAX);
        let mut launch = program.launch(kernel).global(global).local(local);
        launch = launch.output(out.as_mut_slice(), Pattern::ONE_TO_ONE);
        if width_arg {
            launch = launch.scalar(W as u32);
        }
        launch.on_devices(devices).balancer(balancer).run()
    };
    let mut alone = vec![0u32; reference.len()];
    run(&mut alone, &[0], "static".parse::<BalancerSpec>().unwrap().build()).expect("runs alone");
    assert_eq!(alone, reference, "{kernel} on one device differs from the CPU");
    for (name, balancer) in every_balancer() {
        let mut out = vec![0u32; reference.len()];
        let report = run(&mut out, &[0, 1], balancer).expect("co-executes");
        common::assert_coexecuted_once(&report);
        if let Some(i) = (0..out.len()).find(|&i| out[i] != alone[i]) {
            panic!(
                "{kernel} with {name}: element {i} is {} co-executed, {} alone ({} packages)",
                out[i],
                alone[i],
                report.trace.len()
            );
        }
    }
}

#[test]
fn group_ids_are_those_of_the_whole_ndrange() {
    let p = common::program("builtins.cl");
    let one_d: Vec<u32> = (0..N).map(|i| (i / LWS) as u32).collect();
    check(&p, "group_id_1d", &[N], false, &one_d);
    let two_d: Vec<u32> =
        (0..W * H).map(|i| ((i / W / LWS2[1]) * 100 + (i % W) / LWS2[0]) as u32).collect();
    check(&p, "group_id_2d", &[W, H], true, &two_d);
}

#[test]
fn group_counts_are_those_of_the_whole_ndrange() {
    let p = common::program("builtins.cl");
    check(&p, "num_groups_1d", &[N], false, &vec![(N / LWS) as u32; N]);
    let groups = ((H / LWS2[1]) * 100 + W / LWS2[0]) as u32;
    check(&p, "num_groups_2d", &[W, H], true, &vec![groups; W * H]);
}

#[test]
fn global_sizes_are_those_of_the_whole_ndrange() {
    let p = common::program("builtins.cl");
    let one_d: Vec<u32> = (0..N).map(|i| (N - i) as u32).collect();
    check(&p, "global_size_1d", &[N], false, &one_d);
    check(&p, "global_size_2d", &[W, H], false, &vec![(H * 1000 + W) as u32; W * H]);
}

#[test]
fn global_offsets_are_those_of_the_whole_ndrange() {
    let p = common::program("builtins.cl");
    let one_d: Vec<u32> = (0..N).map(|i| (i * 3) as u32).collect();
    check(&p, "global_offset_1d", &[N], false, &one_d);
    let two_d: Vec<u32> = (0..W * H).map(|i| ((i / W) * 1000 + i % W) as u32).collect();
    check(&p, "global_offset_2d", &[W, H], true, &two_d);
}

#[test]
fn linear_ids_are_those_of_the_whole_ndrange() {
    let p = common::program("builtins.cl");
    let one_d: Vec<u32> = (0..N).map(|i| (i * 5) as u32).collect();
    check(&p, "global_linear_id_1d", &[N], false, &one_d);
    let two_d: Vec<u32> = (0..W * H).map(|i| ((i / W) * 1000 + i % W) as u32).collect();
    check(&p, "global_linear_id_2d", &[W, H], false, &two_d);
}

#[test]
fn a_helper_function_asking_the_global_size_is_refused_by_name() {
    let rt = hetdsl::Runtime::new().expect("an OpenCL runtime");
    let src = hetdsl::KernelSource::from_text(
        "helper.cl",
        "size_t width(void) { return get_global_size(0); }\n\
         __kernel void k(__global uint* out) { out[get_global_id(0)] = (uint)width(); }\n",
    );
    let err = rt.program(&src).err().expect("refused").to_string();
    assert!(err.contains("`width`") && err.contains("helper.cl:1"), "{err}");
}

#[test]
fn built_ins_behind_macros_are_those_of_the_whole_ndrange() {
    let p = common::program("builtin_macros.cl");
    let by_group: Vec<u32> = (0..N).map(|i| (i / LWS) as u32).collect();
    check(&p, "macro_group_id", &[N], false, &by_group);
    let sizes: Vec<u32> = (0..N).map(|i| (N - i + N / LWS) as u32).collect();
    check(&p, "macro_sizes", &[N], false, &sizes);
}

#[test]
fn sizes_the_hidden_parameter_cannot_reach_are_refused_with_file_and_line() {
    let rt = hetdsl::Runtime::new().expect("an OpenCL runtime");
    let refused = |name: &str, text: &str| {
        let src = hetdsl::KernelSource::from_text(name, text);
        rt.program(&src).err().expect("refused").to_string()
    };
    // A helper reading the size through a macro, beside a kernel that reads it directly.
    let err = refused(
        "helper_macro.cl",
        "#define GSIZE get_global_size(0)\nuint width(void) { return GSIZE; }\n\
         __kernel void k(__global uint* out) { out[0] = width() + get_global_size(0); }\n",
    );
    assert!(err.contains("macro `GSIZE`") && err.contains("`width`"), "{err}");
    assert!(err.contains("helper_macro.cl:2"), "{err}");
    // A kernel calling another that reads the size.
    let err = refused(
        "calls.cl",
        "__kernel void b(__global uint* o) { o[0] = get_global_size(0); }\n\
         __kernel void a(__global uint* o) { b(o); }\n",
    );
    assert!(err.contains("`a` calls the kernel `b`") && err.contains("calls.cl:2"), "{err}");
    // A kernel defined by a macro.
    let err = refused(
        "made.cl",
        "#define MAKE(T) __kernel void k(__global T* o) { o[0] = get_global_size(0); }\n\
         MAKE(uint)\n",
    );
    assert!(err.contains("macro `MAKE`") && err.contains("made.cl:2"), "{err}");
}

/// `common::program` with build options.
fn program_with(file: &str, options: &str) -> Program {
    let rt = hetdsl::Runtime::new().expect("an OpenCL runtime");
    assert!(rt.devices().len() >= 2, "run with POCL_DEVICES=\"pthread basic\"");
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kernels").join(file);
    let source = hetdsl::KernelSource::from_file(&path, &[]).expect("kernel source");
    rt.program_with_options(&source, options).expect("kernel builds")
}

#[test]
fn built_ins_the_compiler_skips_are_neither_refused_nor_rewritten() {
    // Helpers under `#if 0` and under an `#ifdef` the options leave undefined read the global
    // size, which only a kernel may; the compiler never sees them.
    let sizes: Vec<u32> = (0..N).map(|i| (N - i) as u32).collect();
    let by_group: Vec<u32> = (0..N).map(|i| ((i / LWS) * W + N / LWS) as u32).collect();
    for options in ["", "-D USE_GROUPS", "-DUSE_GROUPS=1 -cl-mad-enable"] {
        let p = program_with("builtin_if.cl", options);
        check(&p, "after_if0", &[N], false, &sizes);
        // `by_group` takes the scale as a parameter only under `USE_GROUPS`.
        check(&p, "by_group", &[N], options.contains("USE_GROUPS"), &by_group);
    }
    // Where the options select such a helper, it is refused at its line.
    let rt = hetdsl::Runtime::new().expect("an OpenCL runtime");
    let text = "#ifdef WIDTH\nuint width(void) { return (uint)get_global_size(0); }\n\
                #endif\n__kernel void k(__global uint* o) { o[0] = get_global_size(0); }\n";
    let src = hetdsl::KernelSource::from_text("chosen.cl", text);
    let err = rt.program_with_options(&src, "-DWIDTH").err().expect("refused").to_string();
    assert!(err.contains("`width`") && err.contains("chosen.cl:2"), "{err}");
    assert!(rt.program(&src).is_ok(), "without -DWIDTH the helper is never compiled");
}

#[test]
fn built_ins_under_a_device_dependent_conditional_count_in_both_branches() {
    let p = program_with("builtin_undecided.cl", "");
    let sizes: Vec<u32> = (0..N).map(|i| (N - i + N / LWS) as u32).collect();
    check(&p, "undecided_sizes", &[N], false, &sizes);
    // A helper the compiler may read on some devices is refused as before.
    let rt = hetdsl::Runtime::new().expect("an OpenCL runtime");
    let text = "#ifdef cl_khr_fp64\nuint width(void) { return (uint)get_global_size(0); }\n\
                #endif\n__kernel void k(__global uint* o) { o[0] = get_global_size(0); }\n";
    let src = hetdsl::KernelSource::from_text("device.cl", text);
    let err = rt.program(&src).err().expect("refused").to_string();
    assert!(err.contains("`width`") && err.contains("device.cl:2"), "{err}");
}
