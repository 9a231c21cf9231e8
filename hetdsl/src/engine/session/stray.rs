//! A session launch's first package on each device, checked for writes outside its range.
//!
//! As in a one-shot launch (`worker::stray`), a kernel writing a split output outside its
//! package's elements (a transpose declared `1:1`, a shifted index) leaves a wrong result: the
//! session keeps each package's own elements where it ran and ignores the rest. Here the device
//! holds the buffer's data as well, so only bytes no other thread reads from it are marked:
//! those it holds stale, and those fresh on the host too (a move takes them from the host),
//! which then stop being fresh here; it fetches them again before any use. Bytes fresh on this
//! device and not on the host are not checked. Checked on the first launch of a kernel over a
//! given range and devices in a session, whose outputs are usually fresh elsewhere (the host);
//! as in a one-shot launch, a CPU beside a GPU is not checked (`worker::stray::checks`).

use std::ops::Range;

use opencl3::event::Event;
use opencl3::memory::ClMem;
use opencl3::types::CL_NON_BLOCKING;

use super::residency::Loc;
use super::worker::{Plan, SArg, Worker};
use crate::engine::shared::Shared;
use crate::engine::worker::stray::{outside, refusal, MARKER};
use crate::error::Error;
use crate::pattern::Pattern;
use crate::work::Package;

/// The marked bytes of one package: per region, its buffer argument, its window's memory and
/// the bytes in it, and what the kernel left there.
pub(super) struct Probe {
    package: Package,
    regions: Vec<Region>,
}

struct Region {
    arg: usize,
    elem: usize,
    pattern: Pattern,
    /// The package's own elements, and the window's first element.
    own: Range<u64>,
    lo: u64,
    mem: std::sync::Arc<opencl3::memory::Buffer<u8>>,
    bytes: Range<usize>,
    seen: Vec<u8>,
    read: Option<Event>,
}

impl Drop for Region {
    fn drop(&mut self) {
        // The read writes into `seen`: it must be over before the vector goes.
        if let Some(e) = self.read.take() {
            let _ = e.wait();
        }
    }
}

/// Set the bytes of every split output of `plan` outside package `p`'s elements that no other
/// thread reads from this device to the marker, on the compute queue ahead of the kernel.
/// `None` where there is nothing to check.
pub(super) fn arm(
    w: &Worker,
    plan: &Plan,
    shared: &Shared,
    p: Package,
) -> Result<Option<Probe>, String> {
    let mut regions = Vec::new();
    for a in &plan.args {
        let SArg::Buffer { index, core, pattern, dir } = a else { continue };
        if !dir.writes() || *pattern == Pattern::Whole {
            continue;
        }
        let own = plan.range(core, *pattern, p);
        let elem = core.elem;
        let mut mark = || {
            let mut st = core.lock();
            let Some(win) = st.mems[w.slot].clone() else { return };
            let clamp = |e: u64| e.clamp(win.lo, win.hi);
            let own_bytes = win.at(clamp(own.start), elem)..win.at(clamp(own.end), elem);
            // Bytes this device holds stale, or fresh but fresh on the host too: a move always
            // takes what the host holds from the host, so no thread reads those from here. The
            // latter stop being fresh here (the device fetches them again when it needs them).
            let here = Loc::Device(w.slot);
            let mut free = st.res.missing_at(here, win.lo..win.hi);
            for r in st.res.fresh(Loc::Host).intersect(win.lo..win.hi).ranges() {
                free.insert(r.clone());
            }
            for r in outside(win.at(win.hi, elem), &own_bytes) {
                for f in free.ranges() {
                    let f = win.at(f.start, elem)..win.at(f.end, elem);
                    let bytes = r.start.max(f.start)..r.end.min(f.end);
                    if bytes.is_empty() {
                        continue;
                    }
                    let elems = win.lo + (bytes.start / elem) as u64
                        ..win.lo + bytes.end.div_ceil(elem) as u64;
                    st.res.invalidate(here, elems);
                    regions.push(Region {
                        arg: *index,
                        elem,
                        pattern: *pattern,
                        own: own.clone(),
                        lo: win.lo,
                        mem: win.mem.clone(),
                        bytes,
                        seen: Vec::new(),
                        read: None,
                    });
                }
            }
        };
        // Once the run is over the residency is no longer this thread's to change.
        if !shared.with_caller_memory(&mut mark) {
            return Ok(None);
        }
    }
    for r in &regions {
        // SAFETY: the bytes lie within the window's memory (`outside` keeps to its size); the
        // pattern is copied by the call; the compute queue is in order, so the fill precedes
        // the kernel.
        let ev = unsafe {
            opencl3::command_queue::enqueue_fill_buffer(
                w.compute.get(),
                r.mem.get(),
                [MARKER].as_ptr().cast(),
                1,
                r.bytes.start,
                r.bytes.len(),
                0,
                std::ptr::null(),
            )
        }
        .map_err(|e| format!("cannot mark package {p:?}: {e}"))?;
        drop(Event::new(ev));
    }
    Ok((!regions.is_empty()).then_some(Probe { package: p, regions }))
}

/// Once the package's kernel is queued: read the marked bytes right behind it.
pub(super) fn capture(w: &Worker, probe: &mut Probe) -> Result<(), String> {
    for r in &mut probe.regions {
        r.seen = vec![0u8; r.bytes.len()];
        // SAFETY: bytes within the window's memory into a vector of their length, whose heap
        // memory stays where it is (never resized) until `check` has waited for the read.
        let ev = unsafe {
            opencl3::command_queue::enqueue_read_buffer(
                w.compute.get(),
                r.mem.get(),
                CL_NON_BLOCKING,
                r.bytes.start,
                r.bytes.len(),
                r.seen.as_mut_ptr().cast(),
                0,
                std::ptr::null(),
            )
        }
        .map_err(|e| format!("cannot read package {:?}'s marks: {e}", probe.package))?;
        r.read = Some(Event::new(ev));
    }
    w.compute.flush().map_err(|e| format!("flush failed: {e}"))
}

/// Once the package's kernel has ended: `Err` naming the first marked byte it changed. A read
/// that failed is the device's failure, which its next command reports.
pub(super) fn check(mut probe: Probe) -> Result<(), Error> {
    let mut read = true;
    for r in &mut probe.regions {
        read &= r.read.take().is_some_and(|e| e.wait().is_ok());
    }
    if !read {
        return Ok(());
    }
    for r in &probe.regions {
        let Some(k) = r.seen.iter().position(|&x| x != MARKER) else { continue };
        let at = r.lo as usize * r.elem + r.bytes.start + k;
        return Err(refusal(r.arg, at, r.elem, r.own.clone(), r.pattern, probe.package));
    }
    Ok(())
}
