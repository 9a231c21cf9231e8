//! What the raw-OpenCL probes share (`copyrate`, `queues`): they measure the platform itself,
//! below hetdsl, on the first GPU found.

use opencl3::device::{Device, CL_DEVICE_TYPE_GPU};
use opencl3::platform::get_platforms;

/// The first GPU of the first platform that has one.
pub fn first_gpu() -> Option<Device> {
    get_platforms().ok()?.iter().find_map(|p| {
        let ids = p.get_devices(CL_DEVICE_TYPE_GPU).ok()?;
        ids.first().map(|id| Device::new(*id))
    })
}

/// An OpenCL error as text naming the call that returned it.
pub fn cl(call: &'static str) -> impl Fn(opencl3::error_codes::ClError) -> String {
    move |e| format!("{call}: {e}")
}
