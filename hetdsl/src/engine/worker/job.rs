//! What a device thread works with: its [`Job`] (its share of the plan, given when it starts)
//! and its [`Device`] (the OpenCL objects it sets up and owns). Data only; the other parts of
//! the worker depend on it, and it on none of them but the buffers.

use std::sync::Arc;

use opencl3::command_queue::CommandQueue;
use opencl3::kernel::Kernel;

use super::buffers::DeviceBuffer;
use super::parked::{KeptKernel, Parked};
use super::ring::Rings;
use crate::engine::geometry::Geometry;
use crate::engine::plan::{ArgPlan, Plan};
use crate::engine::program::ProgramDevice;
use crate::engine::quarantine::Predecessor;
use crate::engine::shared::Shared;
use crate::engine::{Fault, WaitMode};
use crate::work::{DeviceProfile, Package};

/// What a device thread is given.
pub(crate) struct Job {
    pub(crate) me: usize,
    pub(crate) device: ProgramDevice,
    pub(crate) kernel: String,
    pub(crate) geo: Geometry,
    pub(crate) args: Vec<ArgPlan>,
    pub(crate) faults: Vec<Fault>,
    pub(crate) warmup: bool,
    pub(crate) poison: Option<u8>,
    pub(crate) wait: WaitMode,
    /// May queue a package behind the running one (see `Launch::pipeline`).
    pub(crate) pipeline: bool,
    /// Check the first package's writes against its range (see `stray`).
    pub(crate) check_writes: bool,
    /// The run covers balancing units `first_unit..first_unit + units`; packages from the
    /// coordinator count from `first_unit`.
    pub(crate) first_unit: u64,
    pub(crate) units: u64,
    pub(crate) shared: Arc<Shared>,
    /// This device's host threads of earlier runs still out: waited for before the set-up.
    pub(crate) predecessors: Vec<Predecessor>,
}

impl Job {
    /// The job of the device at position `me` in `plan`: its own copies of what it needs.
    pub(crate) fn new(
        me: usize,
        plan: &Plan,
        shared: Arc<Shared>,
        predecessors: Vec<Predecessor>,
    ) -> Job {
        Job {
            me,
            device: plan.devices[me].clone(),
            kernel: plan.kernel.clone(),
            geo: plan.geo.clone(),
            args: plan.args.clone(),
            faults: plan.faults_of(me),
            warmup: plan.warmup,
            poison: plan.poison,
            wait: plan.wait,
            pipeline: plan.pipeline,
            check_writes: plan.check_writes
                && super::stray::checks(
                    plan.devices[me].info.kind,
                    plan.devices.iter().map(|d| d.info.kind),
                ),
            first_unit: plan.span.start,
            units: plan.units(),
            shared,
            predecessors,
        }
    }

    /// A package in the NDRange's own coordinates.
    pub(super) fn absolute(&self, p: Package) -> Package {
        Package { offset: p.offset + self.first_unit, len: p.len }
    }
}

pub(super) struct Device {
    pub(super) profile: DeviceProfile,
    pub(super) compute: CommandQueue,
    /// Read-backs, and the set-up's writes.
    pub(super) transfer: CommandQueue,
    /// Packages' input writes when packages are queued ahead: on a queue of their own, they
    /// overlap the kernel before (on the compute queue) and read-backs (on the transfer queue).
    pub(super) upload: CommandQueue,
    pub(super) kernel: Kernel,
    /// The work-group size `kernel` has been warmed up with (empty: never).
    pub(super) warmed_for: Vec<usize>,
    /// Kernel objects of the program's other kernels, kept from earlier runs to park again.
    pub(super) kernels: Vec<KeptKernel>,
    pub(super) buffers: Vec<DeviceBuffer>,
    /// The pinned slots its packages' transfers are staged through.
    pub(super) rings: Rings,
    /// Device seconds per balancing unit of its last package: when to expect the next kernel.
    pub(super) per_unit: Option<f64>,
}

impl Device {
    /// Its objects, to be parked for the next run on this device (staging stays mapped).
    pub(super) fn park(self, kernel_name: &str) -> Parked {
        let Device {
            compute,
            transfer,
            upload,
            kernel,
            warmed_for,
            mut kernels,
            buffers,
            rings,
            ..
        } = self;
        kernels.push(KeptKernel { name: kernel_name.to_string(), kernel, warmed_for });
        Parked {
            queues: Some((compute, transfer, upload)),
            kernels,
            buffers: buffers.into_iter().map(DeviceBuffer::park).collect(),
            rings,
        }
    }

    /// Unmap its staging, then release everything.
    pub(super) fn release(mut self) {
        for b in &mut self.buffers {
            if let Some(s) = &mut b.staging {
                s.unmap(&self.transfer);
            }
        }
        self.rings.unmap(&self.transfer);
    }
}
