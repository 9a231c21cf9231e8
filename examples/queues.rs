//! What a small kernel beside a large one costs on the first GPU, and whether a second queue
//! runs it at the same time. A session's stencil sweep runs the rows its neighbour reads first,
//! as a kernel of its own, so their move hides behind the rest; on one queue that small kernel
//! runs alone, latency-bound, before the large one starts.
//!
//! `cargo run --release --example queues -- [--large N] [--small N] [--reps R]`: a streaming
//! kernel over N floats (default 2^27 large, 2^18 small), each figure the median of R (default
//! 20) rounds after one untimed. Prints, in microseconds of device time: each kernel alone,
//! small then large on one queue (from the first start to the last end), and the small on a
//! second queue enqueued just after the large (whether it started before the large ended).
//! Then a sweep's order: a large kernel, and after it the next sweep's small kernel on a second
//! queue (waiting for the large) beside the next large on the first; the second queue at
//! normal and at high priority (the property of `cl_khr_priority_hints`, which a driver
//! without the extension may ignore). Printed: when the small ended and when the next large
//! ended, from the end of the first.

use std::ptr;
use std::time::Instant;

use clap::Parser;
use hetdsl_samples::harness::probe::{cl, first_gpu};
use opencl3::command_queue::{
    create_command_queue_with_properties, CommandQueue, CL_QUEUE_PROFILING_ENABLE,
    CL_QUEUE_PROPERTIES,
};
use opencl3::context::Context;
use opencl3::device::Device;
use opencl3::event::Event;
use opencl3::kernel::{ExecuteKernel, Kernel};
use opencl3::memory::{Buffer, CL_MEM_READ_WRITE};
use opencl3::program::Program;
use opencl3::types::{cl_event, cl_queue_properties};

/// `cl_khr_priority_hints`: the queue property and its high value.
const CL_QUEUE_PRIORITY_KHR: cl_queue_properties = 0x1096;
const CL_QUEUE_PRIORITY_HIGH_KHR: cl_queue_properties = 1;

const SOURCE: &str = "__kernel void stream(__global const float* x, __global float* y, float a) {
    size_t i = get_global_id(0);
    y[i] = a * x[i] + y[i];
}";

#[derive(Debug, Parser)]
#[command(name = "queues")]
struct Cli {
    /// Work-items of the large kernel.
    #[arg(long, default_value_t = 1 << 27)]
    large: usize,
    /// Work-items of the small kernel.
    #[arg(long, default_value_t = 1 << 18)]
    small: usize,
    /// Timed rounds per figure (median kept).
    #[arg(long, default_value_t = 20)]
    reps: usize,
}

fn main() {
    let cli = Cli::parse();
    let Some(gpu) = first_gpu() else {
        println!("SKIPPED: no GPU device");
        return;
    };
    if let Err(e) = measure(&gpu, &cli) {
        println!("FAILED: {e}");
        std::process::exit(1);
    }
}

/// Device-time span (start, end) of an ended command, in ns.
fn span(ev: &Event) -> Result<(u64, u64), String> {
    ev.wait().map_err(cl("clWaitForEvents"))?;
    Ok((
        ev.profiling_command_start().map_err(cl("profiling"))?,
        ev.profiling_command_end().map_err(cl("profiling"))?,
    ))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn measure(gpu: &Device, cli: &Cli) -> Result<(), String> {
    println!("GPU: {}", gpu.name().unwrap_or_default());
    let context = Context::from_device(gpu).map_err(cl("clCreateContext"))?;
    #[allow(deprecated)]
    let make_queue = || {
        CommandQueue::create_default(&context, CL_QUEUE_PROFILING_ENABLE)
            .map_err(cl("clCreateCommandQueue"))
    };
    let (a, b) = (make_queue()?, make_queue()?);
    let program = Program::create_and_build_from_source(&context, SOURCE, "")
        .map_err(|e| format!("build: {e}"))?;
    let kernel = |n: usize| -> Result<(Kernel, Vec<Buffer<f32>>), String> {
        // SAFETY: fresh device buffers with no host pointer, released before `context`.
        let bufs = (0..2)
            .map(|_| unsafe {
                Buffer::<f32>::create(&context, CL_MEM_READ_WRITE, n, ptr::null_mut())
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(cl("clCreateBuffer"))?;
        let k = Kernel::create(&program, "stream").map_err(cl("clCreateKernel"))?;
        Ok((k, bufs))
    };
    let (large_k, large_b) = kernel(cli.large)?;
    let (small_k, small_b) = kernel(cli.small)?;
    let enqueue =
        |k: &Kernel, bufs: &[Buffer<f32>], n: usize, q: &CommandQueue, after: &[cl_event]| {
            // SAFETY: the arguments match the kernel's parameters; the buffers hold n floats.
            unsafe {
                ExecuteKernel::new(k)
                    .set_arg(&bufs[0])
                    .set_arg(&bufs[1])
                    .set_arg(&0.5f32)
                    .set_global_work_size(n)
                    .set_local_work_size(256)
                    .set_event_wait_list(after)
                    .enqueue_nd_range(q)
            }
            .map_err(cl("clEnqueueNDRangeKernel"))
        };
    let large_after =
        |q: &CommandQueue, after: &[cl_event]| enqueue(&large_k, &large_b, cli.large, q, after);
    let small_after =
        |q: &CommandQueue, after: &[cl_event]| enqueue(&small_k, &small_b, cli.small, q, after);
    let large = |q: &CommandQueue| large_after(q, &[]);
    let small = |q: &CommandQueue| small_after(q, &[]);
    let us = |ns: u64| ns as f64 / 1e3;
    let reps = cli.reps.max(1);
    let (mut large_alone, mut small_alone, mut serial, mut beside, mut overlapped) =
        (vec![], vec![], vec![], vec![], 0);
    let mut enqueue_cost = vec![];
    for rep in 0..=reps {
        let l = span(&large(&a)?)?;
        let s = span(&small(&a)?)?;
        let t = Instant::now();
        let s1 = small(&a)?;
        enqueue_cost.push(t.elapsed().as_secs_f64() * 1e6);
        let l1 = large(&a)?;
        let (s1, l1) = (span(&s1)?, span(&l1)?);
        // The large first on queue a, the small on queue b just after it.
        let l2 = large(&a)?;
        let s2 = small(&b)?;
        let (l2, s2) = (span(&l2)?, span(&s2)?);
        if rep == 0 {
            continue;
        }
        large_alone.push(us(l.1 - l.0));
        small_alone.push(us(s.1 - s.0));
        serial.push(us(l1.1 - s1.0));
        beside.push(us(l2.1.max(s2.1) - l2.0.min(s2.0)));
        if s2.0 < l2.1 && s2.1 <= l2.1 {
            overlapped += 1;
        }
    }
    println!(
        "large {} items, small {} items, median of {reps} rounds (us of device time)",
        cli.large, cli.small
    );
    println!("large alone: {:.1}", median(large_alone));
    println!("small alone: {:.1}", median(small_alone));
    println!("small then large, one queue: {:.1}", median(serial));
    println!("large on one queue, small on another: {:.1}", median(beside));
    println!("rounds where the small ran inside the large: {overlapped} of {reps}");
    println!(
        "host cost of one clEnqueueNDRangeKernel (with its event): {:.1} us",
        median(enqueue_cost)
    );
    let small_first = |second: &CommandQueue| -> Result<(f64, f64), String> {
        let (mut small_end, mut large_end) = (vec![], vec![]);
        for rep in 0..=reps {
            let l1 = large(&a)?;
            let s2 = small_after(second, &[l1.get()])?;
            let l2 = large(&a)?;
            let (l1, s2, l2) = (span(&l1)?, span(&s2)?, span(&l2)?);
            if rep > 0 {
                small_end.push(us(s2.1.saturating_sub(l1.1)));
                large_end.push(us(l2.1.saturating_sub(l1.1)));
            }
        }
        Ok((median(small_end), median(large_end)))
    };
    let (mut small_end, mut large_end) = (vec![], vec![]);
    for rep in 0..=reps {
        let l1 = large(&a)?;
        let s2 = small(&a)?;
        let l2 = large(&a)?;
        let (l1, s2, l2) = (span(&l1)?, span(&s2)?, span(&l2)?);
        if rep > 0 {
            small_end.push(us(s2.1 - l1.1));
            large_end.push(us(l2.1 - l1.1));
        }
    }
    let row = |what: &str, (s, l): (f64, f64)| {
        println!("{what}: the small ended {s:.1} us after the first large, the next large {l:.1}")
    };
    row("sweeps on one queue (small, then large)", (median(small_end), median(large_end)));
    row("small on a second queue, normal priority", small_first(&b)?);
    let extensions = gpu.extensions().unwrap_or_default();
    println!(
        "priority extensions: {:?}",
        extensions.split(' ').filter(|e| e.contains("priorit")).collect::<Vec<_>>()
    );
    let props = [
        CL_QUEUE_PROPERTIES as cl_queue_properties,
        CL_QUEUE_PROFILING_ENABLE as cl_queue_properties,
        CL_QUEUE_PRIORITY_KHR,
        CL_QUEUE_PRIORITY_HIGH_KHR,
        0,
    ];
    // SAFETY: a null-terminated property list for a device of this context.
    match unsafe { create_command_queue_with_properties(context.get(), gpu.id(), props.as_ptr()) } {
        Ok(q) => {
            let high = CommandQueue::new(q, 3);
            row("small on a second queue, high priority", small_first(&high)?);
        }
        Err(e) => println!("no high-priority queue: {e}"),
    }
    Ok(())
}
