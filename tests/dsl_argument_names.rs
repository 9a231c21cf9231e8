//! Run-time errors of `kernel!` and `#[coexec]` name the argument as the declaration does, not
//! only as the OpenCL source does (here `acc` is the kernel's `y`). Literal patterns only, and
//! the messages alone: the same file checks the behaviour before and after.

hetdsl::kernel! {
    #[kernel(file = "kernels/saxpy.cl", name = "saxpy", local = 64)]
    struct Axpy {
        fn axpy(alpha: f32, #[input(1:1)] xs: &[f32], #[inout(1:1)] acc: &mut [f32]);
    }
}

#[hetdsl::coexec(file = "kernels/saxpy.cl", name = "saxpy", local = 64)]
fn axpy_fn(alpha: f32, #[input(1:1)] xs: &[f32], #[inout(1:1)] acc: &mut [f32]);

fn runtime() -> hetdsl::Runtime {
    hetdsl::Runtime::new().expect("an OpenCL runtime (install pocl-opencl-icd)")
}

#[test]
fn run_and_verify_name_the_argument_as_declared() {
    let rt = runtime();
    let kernel = Axpy::new(&rt).expect("builds");
    let xs = vec![1.0f32; 128];
    let mut acc = vec![0.0f32; 100];
    let e = kernel.run(128, 2.0, &xs, &mut acc).expect_err("acc is short").to_string();
    assert!(e.starts_with("argument 2 (`acc`): parameter `y` is `__global float*`"), "{e}");
    assert!(
        e.contains("buffer has 100 elements but pattern 1:1 over 128 work-items needs 128"),
        "{e}"
    );
    let short = vec![1.0f32; 64];
    let mut acc = vec![0.0f32; 128];
    let e = kernel.verify(128, 2.0, &short, &mut acc).expect_err("xs is short").to_string();
    assert!(e.starts_with("argument 1 (`xs`): parameter `x` is"), "{e}");
}

#[test]
fn a_coexec_function_names_the_argument_as_declared() {
    let rt = runtime();
    let xs = vec![1.0f32; 128];
    let mut acc = vec![0.0f32; 256];
    let e = axpy_fn(&rt, 128, 2.0, &xs, &mut acc).expect_err("acc is long").to_string();
    assert!(e.starts_with("argument 2 (`acc`): parameter `y` is"), "{e}");
}

#[test]
fn a_launch_taken_from_the_declaration_names_the_argument_too() {
    // The launch a declaration hands out, adjusted and run by the caller: its argument errors
    // name the argument as declared as well, from `run` and from `verify`.
    let rt = runtime();
    let kernel = Axpy::new(&rt).expect("builds");
    let xs = vec![1.0f32; 128];
    let mut acc = vec![0.0f32; 100];
    let launch = kernel.launch(128, 2.0, &xs, &mut acc).expect("a launch");
    let e = launch.backups(false).run().expect_err("acc is short").to_string();
    assert!(e.starts_with("argument 2 (`acc`): parameter `y` is"), "{e}");
    let short = vec![1.0f32; 64];
    let mut acc = vec![0.0f32; 128];
    let launch = axpy_fn::launch(&rt, 128, 2.0, &short, &mut acc).expect("a launch");
    let e = launch.verify().expect_err("xs is short").to_string();
    assert!(e.starts_with("argument 1 (`xs`): parameter `x` is"), "{e}");
}
