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
use super::worker::{PackageError, Worker};
use crate::error::Error;

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
            &w.device.platform.context,
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
