//! Bad input: a machine with no OpenCL platform. A test binary of its own, because device
//! discovery runs once per process: nothing here has touched OpenCL before this test points the
//! ICD loader at an empty vendor directory.

use hetdsl::{Error, Runtime};

#[test]
fn no_opencl_platform_is_a_clear_error() {
    let empty = std::env::temp_dir().join(format!("hetdsl-no-icd-{}", std::process::id()));
    std::fs::create_dir_all(&empty).unwrap();
    std::env::set_var("OCL_ICD_VENDORS", &empty);
    std::env::remove_var("OCL_ICD_FILENAMES");
    match Runtime::new() {
        Err(e @ Error::NoPlatform(_)) => {
            let msg = e.to_string();
            assert!(msg.contains("no OpenCL platform found"), "{msg}");
            assert!(msg.contains("install an OpenCL driver"), "{msg}");
        }
        Err(e) => panic!("expected NoPlatform, got {e:?}"),
        Ok(rt) => panic!("found devices with an empty ICD directory: {:?}", rt.devices()),
    }
}
