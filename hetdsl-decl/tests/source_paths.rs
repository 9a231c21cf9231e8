//! A top file given relative to the current directory is found there (as the README's
//! `KernelSource::from_file("kernels/saxpy.cl", &[])` expects), not only in include folders.
//! One test per process: it changes the current directory.

use std::path::{Path, PathBuf};

use hetdsl_decl::flatten::flatten;

#[test]
fn a_relative_top_file_is_read_from_the_current_directory() {
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("source_paths");
    std::fs::create_dir_all(root.join("kernels")).unwrap();
    std::fs::write(root.join("kernels/common.h"), "#define REAL float\n").unwrap();
    std::fs::write(
        root.join("kernels/saxpy.cl"),
        "#include \"common.h\"\n__kernel void saxpy(REAL a) {}\n",
    )
    .unwrap();
    std::env::set_current_dir(&root).unwrap();
    let flat = flatten(Path::new("kernels/saxpy.cl"), &[]).expect("found beside the cwd");
    assert!(flat.text.contains("#define REAL float"), "{}", flat.text);
    assert!(flat.text.contains("__kernel void saxpy"), "{}", flat.text);
    // `#line` names the file relative to the current directory.
    assert!(flat.text.contains("\"kernels/saxpy.cl\""), "{}", flat.text);
    // An include folder still serves a bare name, and a missing file is still an error.
    let via_dir = flatten(Path::new("saxpy.cl"), &[PathBuf::from("kernels")]).expect("in -I");
    assert!(via_dir.text.contains("__kernel void saxpy"));
    let err = flatten(Path::new("kernels/none.cl"), &[]).unwrap_err().to_string();
    assert!(err.contains("none.cl"), "{err}");
}
