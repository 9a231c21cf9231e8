//! A source loaded at run time for a `kernel!` declaration (its generated `with_source`) is
//! checked against the declaration with the compile-time check's rules and words: the same
//! mistake as a compile-fail snapshot gives that snapshot's messages, word for word. Needs an
//! OpenCL platform (PoCL in CI), since `with_source` builds for a runtime's devices.

use std::path::Path;

use hetdsl::{Error, KernelSource, Runtime};

hetdsl::kernel! {
    /// The declaration of `tests/ui/fail/declaration_of_a_changed_kernel.rs`, compiled
    /// against the kernel it was written for.
    #[kernel(file = "tests/ui/kernels/rows.cl", local = 64)]
    struct Rows {
        fn rows(#[input(cols:1)] a: &[f32], #[output(1:1)] y: &mut [f32], cols: i32, scale: f32, #[local(per_item = 1)] tmp: [f32], shape: [u32; 4]);
    }
}

fn runtime() -> Runtime {
    Runtime::new().expect("an OpenCL runtime (install pocl-opencl-icd)")
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The messages of a compile-fail snapshot, one per `error: …` line.
fn snapshot_errors(stderr: &str) -> Vec<String> {
    stderr.lines().filter_map(|l| l.strip_prefix("error: ")).map(str::to_string).collect()
}

#[test]
fn a_changed_source_loaded_at_run_time_is_refused_with_the_compile_time_messages() {
    let rt = runtime();
    // Named as the snapshot's compile-time check names it (relative to this crate).
    let name = "tests/ui/kernels/rows_changed.cl";
    let text = std::fs::read_to_string(root().join(name)).unwrap();
    let source = KernelSource::from_text(name, text);
    let got = match Rows::with_source(&rt, &source) {
        Err(Error::SourceMismatch { kernel, file, problems }) => {
            assert_eq!((kernel.as_str(), file.as_str()), ("rows", name));
            problems
        }
        Err(other) => panic!("expected SourceMismatch, got {other}"),
        Ok(_) => panic!("the changed source was accepted"),
    };
    let snapshot = root().join("tests/ui/fail/declaration_of_a_changed_kernel.stderr");
    let want = snapshot_errors(&std::fs::read_to_string(snapshot).unwrap());
    assert_eq!(want.len(), 3, "the snapshot holds three errors: {want:?}");
    assert_eq!(got, want);
}

#[test]
fn a_source_without_the_kernel_or_with_another_count_is_refused_as_at_compile_time() {
    let rt = runtime();
    let other = KernelSource::from_text("other.cl", "__kernel void other(__global float* y) {}\n");
    let e = Rows::with_source(&rt, &other).err().expect("refused").to_string();
    assert!(e.contains("no kernel `rows` in `other.cl`; kernels there: other"), "{e}");
    let short = KernelSource::from_text("short.cl", "__kernel void rows(__global float* y) {}\n");
    let e = Rows::with_source(&rt, &short).err().expect("refused").to_string();
    assert!(
        e.contains("kernel `rows` (short.cl:1) takes 1 parameters (y), the declaration has 6"),
        "{e}"
    );
}

/// A `#[repr(C)]` newtype standing for an OpenCL `float4`.
#[repr(C, align(16))]
#[derive(Clone, Copy, Default, hetdsl::Pod)]
pub struct Float4(pub [f32; 4]);

hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/reduce.cl", local = 255)]
    struct GroupSum {
        fn group_sum(#[input(1:1)] input: &[Float4], #[output(1:255)] out: &mut [Float4], #[local] scratch: [Float4; 255]);
    }
}

/// A source loaded at run time whose vectors changed kind but not size (`int4` for `float4`):
/// the newtype of `f32` lanes is refused as at compile time, not only compared by size.
#[test]
fn a_vector_newtype_of_another_primitive_is_refused_in_a_source_loaded_at_run_time() {
    let rt = runtime();
    let file = std::fs::read_to_string(root().join("tests/ui/kernels/reduce.cl")).unwrap();
    // Only `group_sum`: the file's other kernel is one no device builds.
    let text = file.split("// A kernel whose size_t").next().unwrap().to_string();
    let ints = KernelSource::from_text("reduce.cl", text.replace("float4", "int4"));
    let problems = match GroupSum::with_source(&rt, &ints) {
        Err(Error::SourceMismatch { problems, .. }) => problems,
        Err(other) => panic!("expected SourceMismatch, got {other}"),
        Ok(_) => panic!("an `int4` kernel was accepted for `f32` lanes"),
    };
    let kind =
        "the kernel's `int4` (16 bytes) is made of `i32`: the Rust type must hold `i32` lanes";
    for name in ["input", "out", "scratch"] {
        assert!(
            problems.iter().any(|p| p.starts_with(&format!("`{name}`: {kind}"))),
            "{name}: {problems:?}"
        );
    }
    // Unchanged, it fits.
    assert!(GroupSum::with_source(&rt, &KernelSource::from_text("reduce.cl", text)).is_ok());
}

hetdsl::kernel! {
    /// The declaration of `transpose` in `tests/ui/fail/ndrange_fewer_dimensions.rs`, compiled
    /// against a 1-D kernel of the same parameters.
    #[kernel(file = "tests/ui/kernels/transpose_1d.cl", local = 64)]
    struct Transpose {
        fn transpose(#[input(1:1)] input: &[f32], #[output(1:1)] out: &mut [f32], width: i32, height: i32);
    }
}

/// The 2-D kernel that snapshot refuses, loaded at run time for the 1-D declaration, is refused
/// with the snapshot's words.
#[test]
fn a_source_reading_more_dimensions_than_local_is_refused_with_the_compile_time_message() {
    let rt = runtime();
    let name = "tests/ui/kernels/ndrange.cl";
    let text = std::fs::read_to_string(root().join(name)).unwrap();
    let got = match Transpose::with_source(&rt, &KernelSource::from_text(name, text)) {
        Err(Error::SourceMismatch { problems, .. }) => problems,
        Err(other) => panic!("expected SourceMismatch, got {other}"),
        Ok(_) => panic!("a 2-D kernel was accepted for a 1-D declaration"),
    };
    let snapshot = root().join("tests/ui/fail/ndrange_fewer_dimensions.stderr");
    let want = snapshot_errors(&std::fs::read_to_string(snapshot).unwrap());
    assert!(want[0].starts_with("kernel `transpose` calls `get_global_id(1)`"), "{want:?}");
    assert_eq!(got, want[..1]);
}
