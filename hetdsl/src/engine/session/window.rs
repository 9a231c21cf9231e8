//! Windows: a device holds a buffer larger than the session's allocation cap as a window
//! `[lo, hi)` of it, moved and grown as its packages need; the kernels (built windowed, see
//! `builtins::window`) take each `__global` pointer with the window's start as a hidden offset.

use std::ops::Range;
use std::sync::Arc;

use opencl3::kernel::Kernel;
use opencl3::memory::{Buffer as ClBuffer, ClMem, CL_MEM_READ_WRITE};

use super::buffer::{BufferCore, Window};
use super::residency::Loc;
use super::transfer;
use super::worker::{run_slice, PackageError, Plan, SArg, Task, Worker};
use crate::error::Error;
use crate::work::Package;

/// A window of `core` on this device that covers `need`: the current one, else one grown to
/// the whole buffer or to the hull of the old window and `need` where that fits `cap`, else
/// `need` alone. What is fresh here in both windows is copied across on the device; what is
/// fresh only here and falls outside the new window is brought home first.
pub(super) fn cover(
    w: &Worker,
    core: &BufferCore,
    need: Range<u64>,
    cap: u64,
) -> std::result::Result<Window, PackageError> {
    let mut st = core.lock();
    let old = st.mems[w.slot].clone();
    if let Some(win) = &old {
        if win.lo <= need.start && need.end <= win.hi {
            return Ok(win.clone());
        }
    }
    let elem = core.elem as u64;
    let fits = |r: &Range<u64>| (r.end - r.start) * elem <= cap;
    let len = core.len as u64;
    let hull = old.as_ref().map_or(need.clone(), |o| o.lo.min(need.start)..o.hi.max(need.end));
    let want = [0..len, hull, need.clone()].into_iter().find(fits).ok_or_else(|| {
        PackageError::Run(Error::DeviceLimit {
            device: w.slot,
            name: w.device.info.name.clone(),
            reason: format!(
                "session buffer {}: a package needs elements {need:?} ({} bytes) at once, over \
                 the session's largest allocation of {cap} bytes",
                core.index,
                (need.end - need.start) * elem
            ),
        })
    })?;
    let device = |e: crate::error::ClError| {
        PackageError::Device(format!("window of buffer {}: {e}", core.index))
    };
    // SAFETY: no host pointer is given; the context outlives the buffer (the buffer holds it).
    let mut made = unsafe {
        ClBuffer::<u8>::create(
            &w.device.shared.context,
            CL_MEM_READ_WRITE,
            ((want.end - want.start) * elem) as usize,
            std::ptr::null_mut(),
        )
    }
    .map_err(device)?;
    if let Some(o) = &old {
        let keep = o.lo.max(want.start)..o.hi.min(want.end);
        if keep.start < keep.end {
            let (from, to, n) = (
                (keep.start - o.lo) * elem,
                (keep.start - want.start) * elem,
                (keep.end - keep.start) * elem,
            );
            // SAFETY: both ranges lie inside their buffers (`keep` is inside both windows); the
            // copy is waited for before either buffer can go.
            let ev = unsafe {
                w.compute.enqueue_copy_buffer(
                    &o.mem,
                    &mut made,
                    from as usize,
                    to as usize,
                    n as usize,
                    &[],
                )
            }
            .map_err(device)?;
            ev.wait().map_err(device)?;
        }
        for part in [o.lo..want.start.min(o.hi), want.end.max(o.lo)..o.hi] {
            if part.start >= part.end {
                continue;
            }
            for r in st.res.only_on(w.slot, part.clone()).ranges().to_vec() {
                let bytes = r.start as usize * core.elem..r.end as usize * core.elem;
                let at = o.at(r.start, core.elem);
                transfer::read(&w.compute, &o.mem, at, &mut st.host[bytes]).map_err(device)?;
                st.res.copied(Loc::Host, r);
            }
            st.res.invalidate(Loc::Device(w.slot), part);
        }
    }
    let win = Window { mem: Arc::new(made), lo: want.start, hi: want.end };
    st.mems[w.slot] = Some(win.clone());
    Ok(win)
}

/// What package `p` reaches of buffer `core`: the hull of the ranges of every argument it is
/// passed as (its rows and a halo of them, say). One window must cover them all: a window made
/// for one argument would free the memory another was already bound to.
pub(super) fn reach(plan: &Plan, core: &BufferCore, p: Package) -> Range<u64> {
    let mut hull: Option<Range<u64>> = None;
    for a in &plan.args {
        let SArg::Buffer { core: c, pattern, .. } = a else { continue };
        if c.index != core.index {
            continue;
        }
        let r = plan.range(c, *pattern, p);
        hull = Some(match hull {
            None => r,
            Some(h) if r.is_empty() => h,
            Some(h) if h.is_empty() => r,
            Some(h) => h.start.min(r.start)..h.end.max(r.end),
        });
    }
    hull.unwrap_or(0..0)
}

/// Bind argument `index` to `win` and its hidden offset to the window's start.
pub(super) fn bind(
    kernel: &Kernel,
    index: usize,
    offset_arg: Option<usize>,
    win: &Window,
) -> std::result::Result<(), PackageError> {
    let bad = |e: crate::error::ClError| {
        PackageError::Run(Error::BadArgument {
            index,
            reason: format!("the kernel rejected a buffer here ({e}); is this argument a pointer?"),
        })
    };
    // SAFETY: a `cl_mem` handle the window keeps alive while the task holds the buffer; every
    // package binds its buffers again before its kernel is enqueued.
    unsafe { kernel.set_arg(index as u32, &win.mem.get()) }.map_err(bad)?;
    if offset_arg.is_none() && win.lo != 0 {
        return Err(PackageError::Run(Error::BadArgument {
            index,
            reason: "only a `__global` buffer can be held in windows; this one exceeds the \
                     session's largest allocation"
                .into(),
        }));
    }
    if let Some(o) = offset_arg {
        let lo: u64 = win.lo;
        // SAFETY: a `ulong` passed by value, copied during the call.
        unsafe { kernel.set_arg(o as u32, &lo) }.map_err(bad)?;
    }
    Ok(())
}

/// Run package `p`, in slices when the windows of the buffers larger than the session's cap
/// cannot hold all it touches: a balancer sizes packages by speed alone, and a package wider
/// than a window is still work the device can do, a window at a time. The windows move under
/// a sliced package, so its windowed outputs are read home slice by slice and kept aside
/// until its merge. Returns the device time of all its slices and those outputs.
pub(super) fn run_package(
    w: &mut Worker,
    t: &Task,
    kernel: &Kernel,
    p: Package,
) -> std::result::Result<(Option<f64>, Vec<Staged>), PackageError> {
    if fitting_len(&t.plan, p) == p.len {
        return Ok((run_slice(w, t, kernel, p)?, Vec::new()));
    }
    let (mut at, end) = (p.offset, p.offset + p.len);
    let (mut total, mut staged) = (Some(0.0), Vec::new());
    while at < end {
        let slice = Package {
            offset: at,
            len: fitting_len(&t.plan, Package { offset: at, len: end - at }),
        };
        let seconds = run_slice(w, t, kernel, slice)?;
        total = total.zip(seconds).map(|(a, b)| a + b);
        staged.extend(read_outputs(w, &t.plan, slice)?);
        at += slice.len;
    }
    Ok((total, staged))
}

/// The longest front part of `p` (at least one unit) whose elements of every buffer larger
/// than the cap fit a window; a unit that does not fit alone is refused by [`cover`].
pub(super) fn fitting_len(plan: &Plan, p: Package) -> u64 {
    let cap = plan.cap();
    let fits = |len: u64| {
        plan.args.iter().all(|a| match a {
            SArg::Buffer { core, .. } if plan.windowed(core) => {
                let r = reach(plan, core, Package { offset: p.offset, len });
                (r.end - r.start) * core.elem as u64 <= cap
            }
            _ => true,
        })
    };
    if fits(p.len) {
        return p.len;
    }
    // A package's elements grow with its length, so the longest fitting length is found by
    // bisection between one unit and the whole package.
    let (mut lo, mut hi) = (1, p.len);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// A slice's output elements `range` of `core`, read from this device's window and waiting
/// for their package's merge.
pub(super) struct Staged {
    pub(super) core: Arc<BufferCore>,
    range: Range<u64>,
    bytes: Vec<u8>,
}

impl Staged {
    /// Into the host image, fresh there only.
    pub(super) fn write_home(&self) {
        let mut st = self.core.lock();
        let at = self.range.start as usize * self.core.elem;
        st.host[at..at + self.bytes.len()].copy_from_slice(&self.bytes);
        st.res.written(Loc::Host, self.range.clone());
    }
}

/// Read the windowed outputs of `slice`, just run here, out of this device's windows.
pub(super) fn read_outputs(
    w: &Worker,
    plan: &Plan,
    slice: Package,
) -> std::result::Result<Vec<Staged>, PackageError> {
    let mut out = Vec::new();
    for a in &plan.args {
        let SArg::Buffer { core, pattern, dir, .. } = a else { continue };
        if !dir.writes() || !plan.windowed(core) {
            continue;
        }
        let range = plan.range(core, *pattern, slice);
        let win = core.lock().mems[w.slot].clone().ok_or_else(|| {
            PackageError::Device(format!("buffer {} has no window after its kernel", core.index))
        })?;
        let mut bytes = vec![0u8; (range.end - range.start) as usize * core.elem];
        transfer::read(&w.compute, &win.mem, win.at(range.start, core.elem), &mut bytes)
            .map_err(|e| PackageError::Device(format!("read of buffer {}: {e}", core.index)))?;
        out.push(Staged { core: core.clone(), range, bytes });
    }
    Ok(out)
}
