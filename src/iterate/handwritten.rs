//! The floor for jacobi: the same kernel enqueued by hand with opencl3 on one device (one
//! context, one in-order queue, two buffers, every sweep enqueued, one `finish`), so that what
//! a session adds per launch shows against it.

use std::time::Instant;

use opencl3::command_queue::CommandQueue;
use opencl3::context::Context;
use opencl3::device::{Device, CL_DEVICE_TYPE_ALL};
use opencl3::kernel::{ExecuteKernel, Kernel};
use opencl3::memory::{Buffer, CL_MEM_READ_WRITE};
use opencl3::platform::get_platforms;
use opencl3::program::Program;
use opencl3::types::{cl_float, cl_int, CL_BLOCKING};

use super::jacobi::Jacobi;
use super::{Config, LoopRun, Variant};
use crate::samples::iterative::jacobi::LWS;

/// The OpenCL device at `index` of the unified list (every platform in order, every device
/// of each), the order hetdsl numbers devices in.
fn nth_device(index: usize) -> Result<Device, String> {
    let platforms = get_platforms().map_err(|e| format!("clGetPlatformIDs: {e}"))?;
    let ids = platforms.iter().flat_map(|p| p.get_devices(CL_DEVICE_TYPE_ALL).unwrap_or_default());
    ids.into_iter().nth(index).map(Device::new).ok_or_else(|| format!("no OpenCL device {index}"))
}

fn cl(call: &'static str) -> impl Fn(opencl3::error_codes::ClError) -> String {
    move |e| format!("{call}: {e}")
}

/// The hand-written loop of `bench`'s sweeps on the device at unified index `device`, recorded
/// under program position `position`.
pub fn jacobi(
    bench: &Jacobi,
    position: usize,
    device: usize,
    _cfg: &Config,
) -> Result<Variant, String> {
    let side = bench.side();
    let sweeps = super::Iterative::steps(bench);
    let cells = side * side;
    let start = Instant::now();
    let device = nth_device(device)?;
    let context = Context::from_device(&device).map_err(cl("clCreateContext"))?;
    let queue = CommandQueue::create_default(&context, 0).map_err(cl("clCreateCommandQueue"))?;
    let source = std::fs::read_to_string(crate::kernel_path("iterate.cl"))
        .map_err(|e| format!("kernels/iterate.cl: {e}"))?;
    let program = Program::create_and_build_from_source(&context, &source, "")?;
    let kernel = Kernel::create(&program, "jacobi_step").map_err(cl("clCreateKernel"))?;
    // SAFETY: no host pointer is given (null), so OpenCL allocates and owns the memory; the
    // size is `cells` floats, the count the writes, kernels and read below stay within.
    let mut grids = unsafe {
        [
            Buffer::<cl_float>::create(&context, CL_MEM_READ_WRITE, cells, std::ptr::null_mut())
                .map_err(cl("clCreateBuffer"))?,
            Buffer::<cl_float>::create(&context, CL_MEM_READ_WRITE, cells, std::ptr::null_mut())
                .map_err(cl("clCreateBuffer"))?,
        ]
    };
    for g in grids.iter_mut() {
        // SAFETY: a blocking write of `cells` floats from a live slice of that length into a
        // buffer of that many; the slice outlives the call because it blocks.
        unsafe { queue.enqueue_write_buffer(g, CL_BLOCKING, 0, bench.initial(), &[]) }
            .map_err(cl("clEnqueueWriteBuffer"))?;
    }
    let setup = start.elapsed().as_secs_f64();
    let (w, h) = (side as cl_int, side as cl_int);
    let start = Instant::now();
    for k in 0..sweeps {
        let (from, to) =
            if k.is_multiple_of(2) { (&grids[0], &grids[1]) } else { (&grids[1], &grids[0]) };
        // SAFETY: the arguments match `jacobi_step`'s parameters in order and type (two float
        // buffers of side² cells, two ints); the NDRange is side × side, a multiple of the
        // 16 × 16 work-group, so every index the kernel computes is inside both buffers. The
        // buffers and scalars outlive the queue's `finish` below.
        unsafe {
            ExecuteKernel::new(&kernel)
                .set_arg(from)
                .set_arg(to)
                .set_arg(&w)
                .set_arg(&h)
                .set_global_work_sizes(&[side, side])
                .set_local_work_sizes(&LWS)
                .enqueue_nd_range(&queue)
        }
        .map_err(cl("clEnqueueNDRangeKernel"))?;
    }
    queue.finish().map_err(cl("clFinish"))?;
    let loop_seconds = start.elapsed().as_secs_f64();
    let mut got = vec![0.0f32; cells];
    // SAFETY: a blocking read of `cells` floats into a slice of that length.
    unsafe { queue.enqueue_read_buffer(&grids[sweeps % 2], CL_BLOCKING, 0, &mut got, &[]) }
        .map_err(cl("clEnqueueReadBuffer"))?;
    let (verdict, how) = bench.check(&got, sweeps, &[]);
    let run = LoopRun { loop_seconds, ..LoopRun::default() };
    let mut v = Variant::new("opencl3", &[position], sweeps, setup, &run, verdict, &how);
    // Sweeps are not waited for one by one: the mean is the loop over the sweeps, no median.
    v.steps_done = sweeps;
    v.mean_step_seconds = (sweeps > 0).then(|| loop_seconds / sweeps as f64);
    Ok(v)
}
