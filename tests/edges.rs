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
