//! What a device keeps between one-shot runs of the same program: its queues, the kernels it
//! created, its device buffers and its pinned staging.
//!
//! Allocating a run's buffers and pinning its staging cost far more than a memory-bound kernel's
//! whole ROI (saxpy over 2^28 floats on an H200: about a quarter of a second of set-up against
//! 31 ms of transfers and kernels), and a program is usually run again with the same sizes. A
//! device thread that ends its run cleanly parks its objects here; the next run on that device
//! takes them back, reusing every buffer whose size and access match an argument, and frees the
//! rest before it allocates what is missing. Only one run is in flight at a time (the OpenCL
//! lock), and a device that failed or was left behind after running packages never parks, so
//! nothing parked has a command in flight. A device that was still setting up when its run
//! ended parks once its set-up is done (it ran nothing; its queues are finished).

use std::sync::{Arc, Mutex};

use opencl3::command_queue::CommandQueue;
use opencl3::kernel::Kernel;
use opencl3::memory::Buffer;

use super::buffers::{DeviceBuffer, Staging};
use super::ring::Rings;

/// The objects one device left from its last clean run.
pub(crate) struct Parked {
    /// The compute, transfer and upload queues; taken out first by the next run, which then
    /// unmaps whatever staging it does not reuse with that transfer queue.
    pub(super) queues: Option<(CommandQueue, CommandQueue, CommandQueue)>,
    /// One kernel object per kernel name this program ran on the device.
    pub(super) kernels: Vec<KeptKernel>,
    pub(super) buffers: Vec<ParkedBuffer>,
    /// The staging rings, still mapped; taken out first by the next run's set-up.
    pub(super) rings: Rings,
}

/// A kernel object kept for reuse, and the work-group size it was last warmed up with (empty:
/// never), since a driver compiles a kernel per work-group size on its first launches.
pub(super) struct KeptKernel {
    pub(super) name: String,
    pub(super) kernel: Kernel,
    pub(super) warmed_for: Vec<usize>,
}

/// A device buffer kept for reuse, with its staging still mapped.
pub(super) struct ParkedBuffer {
    pub(super) len: usize,
    pub(super) read_only: bool,
    pub(super) buffer: Buffer<u8>,
    pub(super) staging: Option<Staging>,
}

/// A device's parking place, shared by every handle to the program's device; `None` inside
/// means nothing is parked. The flag says whether runs may park at all.
#[derive(Clone, Default)]
pub(crate) struct Park {
    slot: Arc<Mutex<Option<Parked>>>,
    disabled: Arc<std::sync::atomic::AtomicBool>,
}

impl Park {
    /// What is parked, if anything; the slot is left empty.
    pub(super) fn take(&self) -> Option<Parked> {
        self.slot.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    /// Park `parked` for the next run, unless parking is off.
    pub(crate) fn put(&self, parked: Parked) {
        if !self.disabled.load(std::sync::atomic::Ordering::Acquire) {
            *self.slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(parked);
        }
    }

    /// Park `parked` if nothing is parked (and parking is on); else hand it back, to be
    /// released under the OpenCL lock. Releases nothing itself.
    pub(super) fn put_if_empty(&self, parked: Parked) -> Option<Parked> {
        if self.disabled.load(std::sync::atomic::Ordering::Acquire) {
            return Some(parked);
        }
        let mut slot = self.slot.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_some() {
            return Some(parked);
        }
        *slot = Some(parked);
        None
    }

    /// Turn keeping on or off; off frees what is parked now.
    pub(crate) fn keep(&self, keep: bool) {
        self.disabled.store(!keep, std::sync::atomic::Ordering::Release);
        if !keep {
            drop(self.take());
        }
    }
}

impl Parked {
    /// The parked buffer of exactly `len` bytes and this access, taken out of the set.
    pub(super) fn take_buffer(&mut self, len: usize, read_only: bool) -> Option<ParkedBuffer> {
        let at = self.buffers.iter().position(|b| b.len == len && b.read_only == read_only)?;
        Some(self.buffers.swap_remove(at))
    }

    /// The kernel object named `name`, taken out of the set.
    pub(super) fn take_kernel(&mut self, name: &str) -> Option<KeptKernel> {
        let at = self.kernels.iter().position(|k| k.name == name)?;
        Some(self.kernels.swap_remove(at))
    }
}

impl Parked {
    /// Unmap and free every buffer still parked, with `transfer`, the queue that mapped them.
    pub(super) fn free_buffers(&mut self, transfer: &CommandQueue) {
        for mut b in self.buffers.drain(..) {
            if let Some(s) = &mut b.staging {
                s.unmap(transfer);
            }
        }
    }
}

impl Drop for Parked {
    fn drop(&mut self) {
        // A mapped staging buffer is unmapped before it is released (the program is dropped, or
        // parking was turned off, with the queues still parked).
        if let Some((_, transfer, _)) = self.queues.take() {
            self.free_buffers(&transfer);
            self.rings.unmap(&transfer);
        }
    }
}

impl DeviceBuffer {
    /// This buffer as a parked one (its staging stays mapped).
    pub(super) fn park(self) -> ParkedBuffer {
        ParkedBuffer {
            len: self.host.len,
            read_only: !self.dir.writes() && self.reduce.is_none(),
            buffer: self.buffer,
            staging: self.staging,
        }
    }
}
