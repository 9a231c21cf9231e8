//! CPUs: one work-group per compute unit.
//!
//! An OpenCL CPU device runs each work-group as one task on one core (PoCL: one per
//! `CL_DEVICE_MAX_COMPUTE_UNITS`, which counts logical CPUs), so a package of as many
//! work-groups as compute units keeps every core busy.

use super::Occupancy;
use crate::device::DeviceInfo;

pub(super) fn occupancy(device: &DeviceInfo, mut assumptions: Vec<String>) -> Occupancy {
    if device.compute_units == 0 {
        assumptions.push(format!("`{}` reports 0 compute units: 1 assumed", device.name));
        return Occupancy::one_per_unit(1, assumptions);
    }
    Occupancy::one_per_unit(device.compute_units, assumptions)
}
