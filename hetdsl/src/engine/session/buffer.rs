//! A session buffer: its host image, its memory on each device, and where each element range is
//! fresh. Host reads bring home only the ranges stale on the host; host writes make the host
//! the only fresh copy.

use std::marker::PhantomData;
use std::mem::{ManuallyDrop, MaybeUninit};
use std::ops::Range;
use std::sync::{Arc, Mutex, MutexGuard};

use opencl3::memory::Buffer as ClBuffer;

use super::residency::{Loc, RangeSet, Residency};
use super::Devices;
use super::{streamed, transfer};
use crate::error::{Error, Result};
use crate::pod::{bytes_of, bytes_of_mut, Pod};
use crate::report::Moved;

/// The typeless part of a buffer, shared by its handle and the launches that use it.
pub(crate) struct BufferCore {
    /// Let go in `drop`, under the OpenCL lock: it may be the last holder of the queues.
    pub(crate) devices: ManuallyDrop<Arc<Devices>>,
    /// Its index in the session, in creation order (for messages and reports).
    pub(crate) index: usize,
    pub(crate) elem: usize,
    pub(crate) len: usize,
    pub(crate) state: Mutex<BufState>,
}

pub(crate) struct BufState {
    pub(crate) host: Vec<u8>,
    pub(crate) res: Residency,
    /// Per session device: its memory for a window of the buffer (the whole buffer when it
    /// fits the allocation cap), made when first needed.
    pub(crate) mems: Vec<Option<Window>>,
    /// Per session device: the ranges last moved out of it to another device (what queued
    /// launches compute first there, see `order`).
    pub(crate) sent: Vec<RangeSet>,
}

/// A device's memory for elements `lo..hi` of a buffer: element `e` is at byte
/// `(e - lo) * elem`. Every range fresh on the device lies inside its window.
#[derive(Clone)]
pub(crate) struct Window {
    pub(crate) mem: Arc<ClBuffer<u8>>,
    pub(crate) lo: u64,
    pub(crate) hi: u64,
}

impl Window {
    /// The byte offset in the window's memory of element `e`.
    pub(crate) fn at(&self, e: u64, elem: usize) -> usize {
        (e - self.lo) as usize * elem
    }
}

impl BufferCore {
    pub(crate) fn new(
        devices: Arc<Devices>,
        index: usize,
        elem: usize,
        len: usize,
        host: Vec<u8>,
    ) -> BufferCore {
        let n = devices.list.len();
        BufferCore {
            devices: ManuallyDrop::new(devices),
            index,
            elem,
            len,
            state: Mutex::new(BufState {
                host,
                res: Residency::on_host(len as u64, n),
                mems: vec![None; n],
                sent: vec![RangeSet::new(); n],
            }),
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, BufState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn bytes(&self) -> usize {
        self.len * self.elem
    }

    /// Whether the host image holds every element fresh.
    pub(crate) fn fresh_on_host(&self) -> bool {
        self.lock().res.missing_at(Loc::Host, 0..self.len as u64).is_empty()
    }

    /// The error for element ranges `gone` (fresh nowhere usable). It names them with every
    /// other range failed devices took from the buffer and every range fresh only on a device
    /// not `usable`, so that the caller learns at once all there is to write again.
    pub(crate) fn lost(
        &self,
        res: &Residency,
        gone: &RangeSet,
        usable: impl Fn(usize) -> bool,
        reason: &str,
    ) -> Error {
        let mut ranges = res.lost().clone();
        let every = 0..self.len as u64;
        let unusable = (0..self.devices.list.len()).filter(|&d| !usable(d));
        for r in unusable.flat_map(|d| res.only_on(d, every.clone()).ranges().to_vec()) {
            ranges.insert(r);
        }
        for r in gone.ranges() {
            ranges.insert(r.clone());
        }
        Error::Lost {
            buffer: self.index,
            len: self.len,
            ranges: ranges.ranges().to_vec(),
            reason: reason.to_string(),
        }
    }

    /// Why ranges are fresh nowhere: a device failed while it held the only copy, or a launch
    /// that writes them in place ended with an error between its kernel and keeping its result
    /// (the range may hold the old values or the new, so neither is served).
    pub(crate) fn why_lost(&self) -> &'static str {
        if (0..self.devices.list.len()).any(|d| self.devices.is_dead(d)) {
            "their only fresh copy was on a failed device"
        } else {
            "a launch that writes them in place ended with an error before its result was kept \
             (they may hold the old values or the new); write them again"
        }
    }

    /// Make `range` fresh on the host, reading each stale part from a device that holds it.
    /// The caller holds the OpenCL lock.
    pub(crate) fn fetch(&self, range: Range<u64>, moved: &mut Moved) -> Result<()> {
        let mut st = self.lock();
        let devices = &self.devices;
        let moves = st
            .res
            .plan_fetch(range, |d| !devices.is_dead(d))
            .map_err(|gone| self.lost(&st.res, &gone, |d| !devices.is_dead(d), self.why_lost()))?;
        for m in moves {
            let Loc::Device(d) = m.from else { continue };
            let Some(win) = st.mems[d].clone() else { continue };
            let bytes = m.range.start as usize * self.elem..m.range.end as usize * self.elem;
            let dst = &mut st.host[bytes.clone()];
            let (dev, at) = (&self.devices.list[d], win.at(m.range.start, self.elem));
            // The buffer's lock is held: a ring that a device thread holds (it may be waiting
            // for this lock) is passed by, for the driver's own path.
            let mut ring = streamed::try_lock(&dev.ring);
            let read = match ring.as_deref_mut().and_then(Option::as_mut) {
                Some(ring) => streamed::read(ring, &dev.transfer, &win.mem, at, dst)
                    .map(|pieces| streamed::note(d, "to host", bytes.len(), pieces)),
                None => transfer::read(&dev.transfer, &win.mem, at, dst),
            };
            read.map_err(|e| Error::Cl { call: "clEnqueueReadBuffer (session fetch)", code: e })?;
            st.res.copied(Loc::Host, m.range);
            moved.device_to_host += bytes.len() as u64;
        }
        Ok(())
    }
}

impl Drop for BufferCore {
    fn drop(&mut self) {
        // Device memory is released one build or run at a time, like every OpenCL object; by
        // the lock's holder where a session's device thread lets go of the last reference.
        let mems =
            std::mem::take(&mut self.state.get_mut().unwrap_or_else(|e| e.into_inner()).mems);
        // SAFETY: taken once, here, and never used after (the core is being dropped).
        let devices = unsafe { ManuallyDrop::take(&mut self.devices) };
        crate::engine::lock::drop_under_lock(Box::new((mems, devices)));
    }
}

/// A buffer of a [`Session`](super::Session) whose elements stay where the last launch computed
/// them. Give it to [`SessionLaunch`](super::SessionLaunch)'s `input`, `output` or `inout`;
/// read it with [`Buffer::to_vec`] or [`Buffer::read`].
pub struct Buffer<T: Pod> {
    pub(crate) core: Arc<BufferCore>,
    _t: PhantomData<T>,
}

impl<T: Pod> std::fmt::Debug for Buffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Buffer#{}({} elements)", self.core.index, self.core.len)
    }
}

impl<T: Pod> Buffer<T> {
    pub(crate) fn wrap(core: Arc<BufferCore>) -> Buffer<T> {
        Buffer { core, _t: PhantomData }
    }

    /// Elements in the buffer.
    pub fn len(&self) -> usize {
        self.core.len
    }

    pub fn is_empty(&self) -> bool {
        self.core.len == 0
    }

    /// Its index in the session (errors and reports name buffers by it).
    pub fn index(&self) -> usize {
        self.core.index
    }

    /// The whole buffer, with every range stale on the host brought home from its device.
    pub fn to_vec(&self) -> Result<Vec<T>> {
        self.read(0..self.core.len)
    }

    /// Elements `range`, brought home from their devices where the host copy is stale.
    pub fn read(&self, range: Range<usize>) -> Result<Vec<T>> {
        self.read_counted(range, &mut Moved::default())
    }

    /// As [`Buffer::read`], adding the bytes brought home to `moved`.
    pub fn read_counted(&self, range: Range<usize>, moved: &mut Moved) -> Result<Vec<T>> {
        let st = self.bring_home(&range, moved)?;
        let src = &st.host[range.start * self.core.elem..range.end * self.core.elem];
        let n = range.len();
        let mut out: Vec<T> = Vec::with_capacity(n);
        let spare = out.spare_capacity_mut().as_mut_ptr().cast::<MaybeUninit<u8>>();
        // SAFETY: the spare capacity holds at least `n` elements, `src.len()` bytes (the
        // buffer's element is `T`), viewed as bytes not yet written.
        let dst = unsafe { std::slice::from_raw_parts_mut(spare, src.len()) };
        crate::engine::copy::copy_to_uninit(dst, src);
        // SAFETY: all `n` elements' bytes were just written; `T: Pod` makes every bit pattern a
        // value.
        unsafe { out.set_len(n) };
        Ok(out)
    }

    /// Elements `offset..offset + dst.len()` into `dst`, brought home as [`Buffer::read`]
    /// brings them. A loop that reads its results into the same memory each time skips what
    /// a new `Vec` costs the first time it is written: its pages' faults, one per 4 KiB.
    pub fn read_into(&self, offset: usize, dst: &mut [T]) -> Result<()> {
        let range = offset..offset.saturating_add(dst.len());
        let st = self.bring_home(&range, &mut Moved::default())?;
        let elem = self.core.elem;
        crate::engine::copy::copy(
            bytes_of_mut(dst),
            &st.host[range.start * elem..range.end * elem],
        );
        Ok(())
    }

    /// Bring elements `range` home where the host copy is stale (adding the bytes to
    /// `moved`); the buffer's state, locked, to read them from.
    fn bring_home(
        &self,
        range: &Range<usize>,
        moved: &mut Moved,
    ) -> Result<MutexGuard<'_, BufState>> {
        self.check_range(range)?;
        {
            let _one_at_a_time = crate::engine::opencl_lock();
            // Queued launches may still be writing it.
            self.core.devices.drain()?;
            self.core.fetch(range.start as u64..range.end as u64, moved)?;
        }
        Ok(self.core.lock())
    }

    /// Overwrite elements `offset..offset + data.len()` from the host: the host image becomes
    /// their only fresh copy (devices fetch them again when a launch needs them).
    pub fn write(&mut self, offset: usize, data: &[T]) -> Result<()> {
        let end = offset.saturating_add(data.len());
        self.check_range(&(offset..end))?;
        {
            // A queued launch must not read these elements' new values (nor fail unseen).
            let _one_at_a_time = crate::engine::opencl_lock();
            self.core.devices.drain()?;
        }
        let mut st = self.core.lock();
        let elem = self.core.elem;
        st.host[offset * elem..end * elem].copy_from_slice(bytes_of(data));
        st.res.written(Loc::Host, offset as u64..end as u64);
        Ok(())
    }

    fn check_range(&self, range: &Range<usize>) -> Result<()> {
        if range.start > range.end || range.end > self.core.len {
            return Err(Error::BadRange(format!(
                "elements {range:?} of session buffer {} are outside its 0..{}",
                self.core.index, self.core.len
            )));
        }
        Ok(())
    }
}
