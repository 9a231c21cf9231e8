//! A device's memory for one run: a device buffer per buffer argument, and host staging (a
//! reduced output's own; the rest share the device's rings).
//!
//! Staging is pinned host memory where the driver gives it (`CL_MEM_ALLOC_HOST_PTR`, mapped once),
//! which is what makes GPU read-back run at link speed rather than through pageable copies.
//! Nothing here touches the caller's memory: a [`DeviceBuffer`] only knows where it is.

use std::ops::Range;
use std::ptr;

use opencl3::command_queue::CommandQueue;
use opencl3::memory::{
    Buffer, ClMem, CL_MAP_READ, CL_MAP_WRITE, CL_MEM_ALLOC_HOST_PTR, CL_MEM_READ_WRITE,
};
use opencl3::types::CL_BLOCKING;

use crate::engine::geometry::Geometry;
use crate::engine::plan::HostPtr;
use crate::merge::{Merge, ReduceOps};
use crate::pattern::{Direction, Pattern};
use crate::work::Package;

/// Host memory the device transfers from and to.
pub(in crate::engine) enum Staging {
    /// Pinned: a mapped `CL_MEM_ALLOC_HOST_PTR` buffer.
    Pinned { buffer: Buffer<u8>, ptr: *mut u8, len: usize },
    /// Ordinary heap memory when the driver offers no pinned memory.
    Heap(Vec<u8>),
}

// SAFETY: the mapped pointer is owned by this staging alone (its buffer's one mapping), so
// moving it to another thread moves the only access to that memory.
unsafe impl Send for Staging {}

impl Staging {
    pub(in crate::engine) fn new(
        queue: &CommandQueue,
        context: &opencl3::context::Context,
        len: usize,
    ) -> Staging {
        // SAFETY: a fresh buffer of `len` bytes with no host pointer; `context` outlives it.
        let pinned = unsafe {
            Buffer::<u8>::create(
                context,
                CL_MEM_ALLOC_HOST_PTR | CL_MEM_READ_WRITE,
                len,
                ptr::null_mut(),
            )
        }
        .and_then(|buffer| {
            let mut mapped = ptr::null_mut();
            // SAFETY: a blocking map of the whole buffer just made; `mapped` is a valid
            // out-pointer, and the mapping is released by `unmap` before the buffer.
            unsafe {
                queue.enqueue_map_buffer(
                    &buffer,
                    CL_BLOCKING,
                    CL_MAP_READ | CL_MAP_WRITE,
                    0,
                    len,
                    &mut mapped,
                    &[],
                )
            }
            .map(|_| Staging::Pinned { buffer, ptr: mapped as *mut u8, len })
        });
        pinned.unwrap_or_else(|_| Staging::Heap(vec![0; len]))
    }

    pub(in crate::engine) fn len(&self) -> usize {
        match self {
            Staging::Pinned { len, .. } => *len,
            Staging::Heap(v) => v.len(),
        }
    }

    pub(in crate::engine) fn bytes(&mut self) -> &mut [u8] {
        match self {
            // SAFETY: the mapping stays valid until `unmap` and covers `len` bytes.
            Staging::Pinned { ptr, len, .. } => unsafe {
                std::slice::from_raw_parts_mut(*ptr, *len)
            },
            Staging::Heap(v) => v,
        }
    }

    pub(in crate::engine) fn unmap(&mut self, queue: &CommandQueue) {
        if let Staging::Pinned { buffer, ptr, .. } = self {
            let mapped = *ptr as *mut std::ffi::c_void;
            // SAFETY: `mapped` is the pointer the map of this very buffer returned, unmapped once.
            if unsafe { queue.enqueue_unmap_mem_object(buffer.get(), mapped, &[]) }.is_ok() {
                let _ = queue.finish();
            }
        }
    }
}

/// A buffer argument on one device.
pub(super) struct DeviceBuffer {
    /// Its position among the kernel's arguments.
    pub(super) arg: usize,
    pub(super) host: HostPtr,
    pub(super) elem: usize,
    pub(super) pattern: Pattern,
    pub(super) dir: Direction,
    pub(super) buffer: Buffer<u8>,
    /// A reduced output's staging, its whole length; every other buffer moves through the
    /// device's staging rings (see `ring`).
    pub(super) staging: Option<Staging>,
    /// For a reduced output: how it merges, and the image its device copy starts from and is
    /// reset to after each package's contribution is read back (see `setup::reduction_start`).
    pub(super) reduce: Option<Reduction>,
}

pub(super) struct Reduction {
    pub(super) merge: Merge,
    pub(super) ops: ReduceOps,
    pub(super) start: Vec<u8>,
}

impl DeviceBuffer {
    /// Byte range of this buffer that a package touches.
    pub(super) fn bytes(&self, geo: &Geometry, p: Package) -> Range<usize> {
        geo.bytes(p, self.pattern, self.elem, self.host.len)
    }
}
