//! What bounds a launch's transfers on this machine: host copies between pageable memory and
//! pinned staging at 1 to 16 threads, and the DMA rate of the first GPU from and to pinned
//! memory, and the driver's own rate from and to pageable memory. Every one-shot launch moves its inputs and outputs through those two steps, so their
//! rates, measured apart, say which one an end-to-end GB/s figure is bound by.
//!
//! `cargo run --release --example copyrate -- [MIB] [--reps R]`: MIB (default 1024) mebibytes per
//! copy; each figure is the median of R (default 5) copies, the first (page-touching) not kept.

use std::ptr;
use std::time::Instant;

use clap::Parser;
use hetdsl_samples::harness::probe::{cl, first_gpu};
use opencl3::command_queue::{CommandQueue, CL_QUEUE_PROFILING_ENABLE};
use opencl3::context::Context;
use opencl3::device::Device;
use opencl3::memory::{
    Buffer, ClMem, CL_MAP_READ, CL_MAP_WRITE, CL_MEM_ALLOC_HOST_PTR, CL_MEM_READ_WRITE,
    CL_MEM_USE_HOST_PTR,
};
use opencl3::types::CL_BLOCKING;

#[derive(Debug, Parser)]
#[command(name = "copyrate")]
struct Cli {
    /// Mebibytes per copy.
    #[arg(default_value_t = 1024)]
    mib: usize,
    /// Timed copies per figure (median kept).
    #[arg(long, default_value_t = 5)]
    reps: usize,
}

fn main() {
    let cli = Cli::parse();
    let len = cli.mib << 20;
    let reps = cli.reps.max(1);
    let src: Vec<u8> = (0..len).map(|i| (i * 31 + i / 4093) as u8).collect();
    let mut dst = vec![0u8; len];
    println!("{} MiB per copy, median of {reps} after one untimed", cli.mib);
    row("pageable -> pageable", len, reps, |t| split_copy(&mut dst, &src, t));

    let Some(gpu) = first_gpu() else {
        println!("SKIPPED: no GPU device, so no pinned memory or DMA rate to measure");
        return;
    };
    match pinned_rates(&gpu, &src, &mut dst, reps) {
        Ok(()) => {}
        Err(e) => println!("SKIPPED pinned rates: {e}"),
    }
    match caller_memory_rates(&gpu, &src, reps) {
        Ok(()) => {}
        Err(e) => println!("SKIPPED the caller's memory as a buffer: {e}"),
    }
}

/// Copies `src` into `dst` on `threads` threads, in equal contiguous shares.
fn split_copy(dst: &mut [u8], src: &[u8], threads: usize) {
    let share = src.len().div_ceil(threads);
    std::thread::scope(|s| {
        for (d, c) in dst.chunks_mut(share).zip(src.chunks(share)) {
            s.spawn(move || d.copy_from_slice(c));
        }
    });
}

/// Prints the rate of `copy` at 1, 2, 4, 8 and 16 threads (never more than the cores).
fn row(what: &str, len: usize, reps: usize, mut copy: impl FnMut(usize)) {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut line = format!("{what:<28}");
    for threads in [1, 2, 4, 8, 16].into_iter().filter(|t| *t <= cores) {
        let secs = median(reps, || {
            let t = Instant::now();
            copy(threads);
            t.elapsed().as_secs_f64()
        });
        line += &format!("  {threads:>2} thr {:>6.1} GB/s", len as f64 / secs / 1e9);
    }
    println!("{line}");
}

/// Median of `reps` timings after one untimed call.
fn median(reps: usize, mut f: impl FnMut() -> f64) -> f64 {
    try_median(reps, || Ok::<f64, ()>(f())).unwrap_or(f64::NAN)
}

/// [`median`] of timings that can fail: the first error ends it.
fn try_median<E>(reps: usize, mut f: impl FnMut() -> Result<f64, E>) -> Result<f64, E> {
    f()?;
    let mut t = (0..reps.max(1)).map(|_| f()).collect::<Result<Vec<f64>, E>>()?;
    t.sort_by(f64::total_cmp);
    Ok(t[t.len() / 2])
}

fn pinned_rates(gpu: &Device, src: &[u8], dst: &mut [u8], reps: usize) -> Result<(), String> {
    let len = src.len();
    println!("GPU: {}", gpu.name().unwrap_or_default());
    let context = Context::from_device(gpu).map_err(cl("clCreateContext"))?;
    #[allow(deprecated)]
    let queue = CommandQueue::create_default(&context, CL_QUEUE_PROFILING_ENABLE)
        .map_err(cl("clCreateCommandQueue"))?;
    pin_rate(&context, &queue, len, reps)?;
    let (_host, mapped) = mapped_pinned(&context, &queue, len)?;
    // SAFETY: a fresh buffer with no host pointer, released before `context`.
    let mut device =
        unsafe { Buffer::<u8>::create(&context, CL_MEM_READ_WRITE, len, ptr::null_mut()) }
            .map_err(cl("clCreateBuffer"))?;
    // SAFETY: the mapping covers `len` bytes and stays valid until the process ends (never
    // unmapped: the probe exits after its last use).
    let pinned = unsafe { std::slice::from_raw_parts_mut(mapped, len) };
    row("pageable -> pinned", len, reps, |t| split_copy(pinned, src, t));
    row("pinned -> pageable", len, reps, |t| split_copy(dst, pinned, t));

    // The driver's own path from pageable memory (no staging copy of ours), by the wall
    // clock: the way a launch would skip its host copy if the driver moves pageable memory
    // fast enough.
    let mut direct = |write: bool| -> Result<f64, String> {
        let t = Instant::now();
        // SAFETY: `src` and `dst` cover `len` bytes and outlive the blocking transfer.
        unsafe {
            if write {
                queue.enqueue_write_buffer(&mut device, CL_BLOCKING, 0, src, &[])
            } else {
                queue.enqueue_read_buffer(&device, CL_BLOCKING, 0, &mut *dst, &[])
            }
        }
        .map_err(cl("clEnqueue{Write,Read}Buffer"))?;
        Ok(t.elapsed().as_secs_f64())
    };
    for (what, write) in [("pageable -> GPU (driver)", true), ("GPU -> pageable (driver)", false)] {
        let secs = try_median(reps, || direct(write))?;
        println!("{what:<28}  {:>6.1} GB/s wall", len as f64 / secs / 1e9);
    }
    let mut dma = |write: bool| -> Result<f64, String> {
        // SAFETY: `pinned` covers `len` bytes and outlives the blocking transfer.
        let ev = unsafe {
            if write {
                queue.enqueue_write_buffer(&mut device, CL_BLOCKING, 0, pinned, &[])
            } else {
                let p: &mut [u8] = pinned;
                queue.enqueue_read_buffer(&device, CL_BLOCKING, 0, p, &[])
            }
        }
        .map_err(cl("clEnqueue{Write,Read}Buffer"))?;
        let (a, b) = (ev.profiling_command_start(), ev.profiling_command_end());
        Ok(match (a, b) {
            (Ok(a), Ok(b)) if b > a => (b - a) as f64 * 1e-9,
            _ => f64::NAN,
        })
    };
    for (what, write) in [("DMA pinned -> GPU", true), ("DMA GPU -> pinned", false)] {
        let secs = try_median(reps, || dma(write))?;
        println!("{what:<28}  {:>6.1} GB/s of device time", len as f64 / secs / 1e9);
    }
    Ok(())
}

/// How fast pinned memory is made: `CL_MEM_ALLOC_HOST_PTR` buffers created, mapped, touched once
/// per page and released, by the wall clock (what a transfer that needs fresh staging pays
/// before it moves a byte): one buffer of `len` bytes, then four of `len / 4` made at once on
/// four threads (whether a device's several stagings could be made side by side).
fn pin_rate(
    context: &Context,
    queue: &CommandQueue,
    len: usize,
    reps: usize,
) -> Result<(), String> {
    for threads in [1usize, 4] {
        let once = || -> Result<f64, String> {
            let t = Instant::now();
            std::thread::scope(|s| {
                let parts: Vec<_> = (0..threads)
                    .map(|_| s.spawn(|| pin_once(context, queue, len / threads)))
                    .collect();
                parts.into_iter().try_for_each(|p| {
                    p.join().unwrap_or_else(|_| Err("a pinning thread panicked".into()))
                })
            })?;
            Ok(t.elapsed().as_secs_f64())
        };
        let secs = try_median(reps, once)?;
        let what = format!("pin, {threads} thread(s) at once");
        println!("{what:<28}  {:>6.1} GB/s wall", len as f64 / secs / 1e9);
    }
    Ok(())
}

/// A pinned buffer of `len` bytes (`CL_MEM_ALLOC_HOST_PTR`), made and mapped whole: the
/// buffer and the mapping's address.
fn mapped_pinned(
    context: &Context,
    queue: &CommandQueue,
    len: usize,
) -> Result<(Buffer<u8>, *mut u8), String> {
    // SAFETY: a fresh buffer with no host pointer, released before `context`.
    let host = unsafe {
        Buffer::<u8>::create(
            context,
            CL_MEM_ALLOC_HOST_PTR | CL_MEM_READ_WRITE,
            len,
            ptr::null_mut(),
        )
    }
    .map_err(cl("clCreateBuffer"))?;
    let mut mapped = ptr::null_mut();
    // SAFETY: a blocking map of the whole buffer just made into a valid out-pointer.
    unsafe {
        queue.enqueue_map_buffer(
            &host,
            CL_BLOCKING,
            CL_MAP_READ | CL_MAP_WRITE,
            0,
            len,
            &mut mapped,
            &[],
        )
    }
    .map_err(cl("clEnqueueMapBuffer"))?;
    Ok((host, mapped as *mut u8))
}

/// One pinned buffer of `len` bytes made, mapped, touched once per page and released.
fn pin_once(context: &Context, queue: &CommandQueue, len: usize) -> Result<(), String> {
    let (host, mapped) = mapped_pinned(context, queue, len)?;
    // SAFETY: the mapping covers `len` bytes until it is unmapped below.
    let bytes = unsafe { std::slice::from_raw_parts_mut(mapped, len) };
    for page in bytes.chunks_mut(4096) {
        page[0] = 1;
    }
    // SAFETY: `mapped` came from the map of `host`; nothing uses it after.
    let unmapped = unsafe { queue.enqueue_unmap_mem_object(host.get(), mapped.cast(), &[]) }
        .map_err(cl("clEnqueueUnmapMemObject"))?;
    unmapped.wait().map_err(cl("clWaitForEvents"))?;
    drop(host);
    Ok(())
}

/// Page-aligned memory of the caller's (not the driver's), freed on drop.
struct Aligned {
    ptr: *mut u8,
    layout: std::alloc::Layout,
}

impl Aligned {
    fn copy_of(src: &[u8]) -> Result<Aligned, String> {
        let layout = std::alloc::Layout::from_size_align(src.len().max(1), 4096)
            .map_err(|e| format!("layout: {e}"))?;
        // SAFETY: a non-zero size; the allocation is checked below and freed on drop.
        let ptr = unsafe { std::alloc::alloc(layout) };
        if ptr.is_null() {
            return Err("out of host memory".into());
        }
        let mut a = Aligned { ptr, layout };
        a.bytes().copy_from_slice(src);
        Ok(a)
    }

    fn bytes(&mut self) -> &mut [u8] {
        // SAFETY: the allocation holds `layout.size()` bytes, initialised by `copy_of`.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.layout.size()) }
    }
}

impl Drop for Aligned {
    fn drop(&mut self) {
        // SAFETY: allocated in `copy_of` with this layout.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) }
    }
}

/// Whether the driver moves the caller's own memory at DMA speed once it is wrapped in a
/// `CL_MEM_USE_HOST_PTR` buffer (where it pins the pages, no staging copy is needed): the wrap
/// itself, copies between the wrap and a device buffer (the way back ends with a map, which
/// makes the caller's bytes current), and plain writes and reads on the wrapped pointer, all by
/// the wall clock; then the round trip's bytes are checked.
fn caller_memory_rates(gpu: &Device, src: &[u8], reps: usize) -> Result<(), String> {
    let len = src.len();
    let context = Context::from_device(gpu).map_err(cl("clCreateContext"))?;
    #[allow(deprecated)]
    let queue = CommandQueue::create_default(&context, CL_QUEUE_PROFILING_ENABLE)
        .map_err(cl("clCreateCommandQueue"))?;
    let mut caller = Aligned::copy_of(src)?;
    // SAFETY: a fresh buffer with no host pointer, released before `context`.
    let mut device =
        unsafe { Buffer::<u8>::create(&context, CL_MEM_READ_WRITE, len, ptr::null_mut()) }
            .map_err(cl("clCreateBuffer"))?;
    let wrap = |at: *mut u8| {
        // SAFETY: `at` covers `len` bytes and outlives the buffer (dropped in this function).
        unsafe {
            Buffer::<u8>::create(&context, CL_MEM_USE_HOST_PTR | CL_MEM_READ_WRITE, len, at.cast())
        }
        .map_err(cl("clCreateBuffer(USE_HOST_PTR)"))
    };
    let timed = |what: &str, f: &mut dyn FnMut() -> Result<(), String>| -> Result<(), String> {
        let secs = try_median(reps, || {
            let at = Instant::now();
            f().map(|()| at.elapsed().as_secs_f64())
        })?;
        println!("{what:<36}  {:>6.1} GB/s wall", len as f64 / secs / 1e9);
        Ok(())
    };
    let at = caller.ptr;
    timed("wrap the caller's memory (+release)", &mut || wrap(at).map(drop))?;
    let mut wrapped = wrap(at)?;
    timed("caller -> GPU, copy from the wrap", &mut || {
        // SAFETY: both buffers hold `len` bytes.
        let ev = unsafe { queue.enqueue_copy_buffer(&wrapped, &mut device, 0, 0, len, &[]) }
            .map_err(cl("clEnqueueCopyBuffer"))?;
        ev.wait().map_err(cl("clWaitForEvents"))
    })?;
    timed("GPU -> caller, copy to the wrap + map", &mut || {
        // SAFETY: both buffers hold `len` bytes.
        unsafe { queue.enqueue_copy_buffer(&device, &mut wrapped, 0, 0, len, &[]) }
            .map_err(cl("clEnqueueCopyBuffer"))?;
        let mut mapped = ptr::null_mut();
        // SAFETY: a blocking map of the whole wrap, unmapped at once.
        unsafe {
            queue.enqueue_map_buffer(&wrapped, CL_BLOCKING, CL_MAP_READ, 0, len, &mut mapped, &[])
        }
        .map_err(cl("clEnqueueMapBuffer"))?;
        // SAFETY: `mapped` came from the map just made.
        let ev = unsafe { queue.enqueue_unmap_mem_object(wrapped.get(), mapped, &[]) }
            .map_err(cl("clEnqueueUnmapMemObject"))?;
        ev.wait().map_err(cl("clWaitForEvents"))
    })?;
    timed("caller -> GPU, write from the wrapped", &mut || {
        // SAFETY: the caller's memory covers `len` bytes and outlives the blocking write.
        unsafe { queue.enqueue_write_buffer(&mut device, CL_BLOCKING, 0, caller.bytes(), &[]) }
            .map(drop)
            .map_err(cl("clEnqueueWriteBuffer"))
    })?;
    timed("GPU -> caller, read into the wrapped", &mut || {
        // SAFETY: as above.
        unsafe { queue.enqueue_read_buffer(&device, CL_BLOCKING, 0, caller.bytes(), &[]) }
            .map(drop)
            .map_err(cl("clEnqueueReadBuffer"))
    })?;
    drop(wrapped);
    let same = caller.bytes() == src;
    println!(
        "round trip through the caller's memory: {}",
        if same { "bytes intact" } else { "BYTES DIFFER" }
    );
    Ok(())
}
