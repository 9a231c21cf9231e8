//! Sessions: device-resident data across launches.
//!
//! ```text
//! program.session()            one persistent host thread per device (queues, kernels kept)
//!   .buffer_from(&x)           a Buffer: host image fresh, device copies made when needed
//!   .launch("k")...run()       a SessionLaunch: moves only the ranges a device lacks, leaves
//!                              outputs on the devices that computed them
//!   buffer.to_vec()            brings the ranges stale on the host home
//! ```
//!
//! Parts: `residency` (pure: which element ranges are fresh where), `buffer` (the buffer handle,
//! its host image and device memory, host reads and writes), `transfer` (moves between host and
//! devices, counted), `launch` (the builder, its checks and the run, on the caller's thread),
//! `worker` (a device's persistent thread: kernels, packages, the moves its packages need).
//! A launch is driven by the same dispatcher, shared state and coordinator as a one-shot run.

mod buffer;
mod enqueue;
mod history;
mod launch;
mod ledger;
mod order;
mod pinned;
mod poll;
mod queued;
mod residency;
mod split;
mod staged;
mod stray;
mod streamed;
mod thread;
mod transfer;
mod window;
mod worker;

use std::collections::HashMap;
use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};

use opencl3::command_queue::CommandQueue;
use opencl3::program::Program as ClProgram;

pub use self::buffer::Buffer;
use self::buffer::BufferCore;
pub use self::launch::SessionLaunch;
use super::program::{Program, ProgramDevice};
use super::signature::Signatures;
use crate::device::DeviceInfo;
use crate::error::{ClContext, Error, Result};
use crate::pod::Pod;
use crate::report::Report;

/// What every thread of a session shares: its devices (their transfer queues, whether they
/// failed) and the allocation cap.
pub(crate) struct Devices {
    pub(crate) id: u64,
    pub(crate) list: Vec<SessionDevice>,
    /// The largest device allocation a buffer may need, in bytes (each device's own limit
    /// unless [`Session::set_max_alloc`] lowered it).
    pub(crate) max_alloc: AtomicU64,
    /// The session's buffers (here, not in the session, so that a buffer's own host access
    /// can settle queued launches and mark what a failed device took with it).
    pub(crate) buffers: Mutex<Vec<Weak<BufferCore>>>,
    /// Launches queued on the devices and not yet seen to end, their reports, the history.
    pub(crate) launches: queued::Launches,
    /// Pinned host memory the queued launches' moves go through, reused between launches.
    pub(crate) pinned: pinned::Pool,
}

pub(crate) struct SessionDevice {
    pub(crate) device: ProgramDevice,
    /// The program with windowed kernels (see `builtins::window`), built for this session.
    pub(crate) windowed: Arc<ClProgram>,
    /// For reads of this device's memory, by any thread (OpenCL queues are thread-safe).
    pub(crate) transfer: CommandQueue,
    /// Why the device left the session (it failed, or its thread never came back), if it did.
    pub(crate) dead: Mutex<Option<String>>,
    /// Pinned slots that large moves to and from it stream through (`streamed`); `None` where
    /// the device stages nothing at build (a CPU, by default) or pinning failed.
    pub(in crate::engine) ring: Mutex<Option<crate::engine::worker::Ring>>,
    /// Since when its host thread computes the losing copy of a package a faster device backed
    /// up in a first launch, which that launch did not wait for; `None` once it is done.
    pub(crate) behind: Mutex<Option<std::time::Instant>>,
}

impl Devices {
    pub(crate) fn is_dead(&self, d: usize) -> bool {
        self.list[d].dead.lock().unwrap_or_else(|e| e.into_inner()).is_some()
    }

    /// Every live buffer of the session.
    pub(crate) fn live_buffers(&self) -> Vec<Arc<BufferCore>> {
        let list = self.buffers.lock().unwrap_or_else(|e| e.into_inner());
        list.iter().filter_map(Weak::upgrade).collect()
    }

    /// Device `slot` left the session for `reason`: whatever only it held is lost. Returns the
    /// error naming the first buffer that lost ranges, if one did (see `naming_other_losses`).
    pub(crate) fn drop_device(&self, slot: usize, reason: String) -> Option<Error> {
        *self.list[slot].dead.lock().unwrap_or_else(|e| e.into_inner()) = Some(reason);
        let mut first = None;
        for b in self.live_buffers() {
            let mut st = b.lock();
            let gone = st.res.drop_device(slot);
            if !gone.is_empty() && first.is_none() {
                let why = format!("their only fresh copy was on device {slot}, which failed");
                first = Some(b.lost(&st.res, &gone, |d| !self.is_dead(d), &why));
            }
        }
        first
    }

    /// `e` with the other buffers that failed devices took ranges from named in its reason: one
    /// error tells the caller every buffer to write again (each read names its own ranges).
    pub(crate) fn naming_other_losses(&self, e: Error) -> Error {
        let Error::Lost { buffer, len, ranges, mut reason } = e else { return e };
        let others: Vec<String> = (self.live_buffers().iter())
            .filter(|b| b.index != buffer && !b.lock().res.lost().is_empty())
            .map(|b| b.index.to_string())
            .collect();
        if !others.is_empty() {
            reason += &format!("; session buffer(s) {} lost ranges too", others.join(", "));
        }
        Error::Lost { buffer, len, ranges, reason }
    }
}

/// A program's devices kept ready across launches, with buffers that stay on them: iterative
/// applications (time steps, sweeps) move only what a device lacks. Build one with
/// [`Program::session`].
pub struct Session {
    /// Let go in `drop`, under the OpenCL lock (its transfer queues go with the last holder).
    pub(crate) devices: ManuallyDrop<Arc<Devices>>,
    pub(crate) workers: Vec<thread::Handle>,
    pub(crate) source_name: String,
    pub(crate) kernel_names: Vec<String>,
    pub(crate) signatures: Arc<Signatures>,
    pub(crate) ndrange_param: Vec<String>,
    /// Per kernel: its `__global` pointer parameters, each with a hidden window offset.
    pub(crate) pointers: HashMap<String, Vec<usize>>,
    pub(crate) mirror: Option<u32>,
    pub(crate) launches: AtomicU64,
    /// Each buffer's index, in creation order.
    pub(crate) next_buffer: AtomicUsize,
}

static NEXT_SESSION: AtomicU64 = AtomicU64::new(1);

impl Program {
    /// A session over every device of the program.
    pub fn session(&self) -> Result<Session> {
        self.session_on(&(0..self.devices.len()).collect::<Vec<_>>())
    }

    /// A session over the devices at these positions of [`Program::devices`].
    pub fn session_on(&self, devices: &[usize]) -> Result<Session> {
        if devices.is_empty() {
            return Err(Error::NoDeviceMatches {
                filter: "an empty device list".into(),
                found: String::new(),
            });
        }
        let mut chosen = Vec::new();
        for (k, &i) in devices.iter().enumerate() {
            if devices[..k].contains(&i) {
                return Err(Error::BadConfig(format!(
                    "device position {i} given twice in session_on({devices:?})"
                )));
            }
            let d = self.devices.get(i).ok_or_else(|| Error::NoDeviceMatches {
                filter: format!("device position {i}"),
                found: format!("{} device(s) in the program", self.devices.len()),
            })?;
            chosen.push(d.clone());
        }
        let _one_at_a_time = super::opencl_lock();
        let pointer = |kernel: &str, name: &str| self.signatures.is_global_pointer(kernel, name);
        let windowed = crate::builtins::window(&self.built_text, &self.built_options, &pointer);
        let mut queues = Vec::new();
        for d in &chosen {
            let transfer = super::worker::profiling_queue(&d.shared.context, d.device);
            queues.push(transfer.call("clCreateCommandQueueWithProperties")?);
        }
        let (programs, rings) = streamed::pinned_beside(&chosen, &queues, || {
            self.build_windowed(&chosen, &windowed.text)
        });
        let programs = match programs {
            Ok(p) => p,
            Err(e) => {
                for (made, q) in rings.into_iter().zip(&queues) {
                    if let Some((ring, staging)) = made {
                        ring.unmap(q);
                        staging.into_iter().for_each(|mut s| s.unmap(q));
                    }
                }
                return Err(e);
            }
        };
        let mut list = Vec::new();
        let mut first = Vec::new();
        for (device, (((d, windowed), transfer), made)) in
            chosen.iter().zip(programs).zip(queues).zip(rings).enumerate()
        {
            let ring = made.map(|(ring, staging)| {
                first.extend(staging.into_iter().map(|staging| pinned::Lent { device, staging }));
                ring
            });
            list.push(SessionDevice {
                device: d.clone(),
                windowed,
                transfer,
                dead: Mutex::new(None),
                ring: Mutex::new(ring),
                behind: Mutex::new(None),
            });
        }
        let cap = chosen.iter().map(|d| d.info.max_alloc_bytes).min().unwrap_or(0);
        let devices = Arc::new(Devices {
            id: NEXT_SESSION.fetch_add(1, Ordering::Relaxed),
            list,
            max_alloc: AtomicU64::new(cap),
            buffers: Mutex::new(Vec::new()),
            launches: queued::Launches::default(),
            pinned: pinned::Pool::default(),
        });
        devices.pinned.give_back(&devices, first);
        let mut workers = Vec::new();
        for (slot, d) in devices.list.iter().enumerate() {
            workers.push(thread::Handle::start(slot, d.device.clone(), d.windowed.clone())?);
        }
        Ok(Session {
            devices: ManuallyDrop::new(devices),
            workers,
            source_name: self.source_name.clone(),
            kernel_names: self.kernel_names.clone(),
            signatures: self.signatures.clone(),
            ndrange_param: self.ndrange_param.clone(),
            pointers: windowed.pointers,
            mirror: None,
            launches: AtomicU64::new(0),
            next_buffer: AtomicUsize::new(0),
        })
    }
}

impl Program {
    /// The windowed variant of the program, built once per context of `chosen` (for the
    /// devices of that context in the session); one handle per chosen device.
    fn build_windowed(&self, chosen: &[ProgramDevice], text: &str) -> Result<Vec<Arc<ClProgram>>> {
        let mut built: Vec<(Arc<super::program::ContextProgram>, Arc<ClProgram>)> = Vec::new();
        let mut out = Vec::new();
        for d in chosen {
            if let Some((_, p)) = built.iter().find(|(pl, _)| Arc::ptr_eq(pl, &d.shared)) {
                out.push(p.clone());
                continue;
            }
            let ids: Vec<_> = chosen
                .iter()
                .filter(|c| Arc::ptr_eq(&c.shared, &d.shared))
                .map(|c| c.device.id())
                .collect();
            let mut p = ClProgram::create_from_source(&d.shared.context, text)
                .call("clCreateProgramWithSource")?;
            // NVIDIA's driver was seen to refuse a build for the second of its context's two
            // H200s alone (a log of warnings only) while building for both succeeds, as the
            // program's own build does: on a failure, build for every device of the context.
            let all = d.shared.context.devices().to_vec();
            if p.build(&ids, &self.built_options).is_err()
                && (all == ids || p.build(&all, &self.built_options).is_err())
            {
                let log = ids.iter().map(|id| p.get_build_log(*id).unwrap_or_default()).collect();
                return Err(Error::Build { file: self.source_name.clone(), log });
            }
            let p = Arc::new(p);
            built.push((d.shared.clone(), p.clone()));
            out.push(p);
        }
        Ok(out)
    }
}

impl Session {
    /// The session's devices, in session order (a failed device stays listed).
    pub fn devices(&self) -> Vec<DeviceInfo> {
        self.devices.list.iter().map(|d| d.device.info.clone()).collect()
    }

    /// The devices that failed and left the session: (position, reason).
    pub fn failed_devices(&self) -> Vec<(usize, String)> {
        self.devices
            .list
            .iter()
            .enumerate()
            .filter_map(|(i, d)| {
                d.dead.lock().unwrap_or_else(|e| e.into_inner()).clone().map(|r| (i, r))
            })
            .collect()
    }

    /// A buffer holding `data`: its host image is fresh, device copies are made when a launch
    /// needs them.
    pub fn buffer_from<T: Pod>(&self, data: &[T]) -> Result<Buffer<T>> {
        let src = crate::pod::bytes_of(data);
        let mut bytes = Vec::new();
        bytes.try_reserve_exact(src.len()).map_err(|_| host_memory(src.len()))?;
        // Across threads, as a read home is (see `copy_to_uninit`).
        super::copy::copy_to_uninit(&mut bytes.spare_capacity_mut()[..src.len()], src);
        // SAFETY: all `src.len()` bytes were just written.
        unsafe { bytes.set_len(src.len()) };
        self.new_buffer(data.len(), bytes)
    }

    /// A buffer of `len` zeros.
    pub fn buffer<T: Pod>(&self, len: usize) -> Result<Buffer<T>> {
        let bytes = len.checked_mul(size_of::<T>()).ok_or_else(|| Error::BadArgument {
            index: 0,
            reason: format!("a buffer of {len} elements of {} bytes overflows", size_of::<T>()),
        })?;
        let mut zeros = super::copy::try_zeroed(bytes).ok_or_else(|| host_memory(bytes))?;
        // Large zeros come untouched from the system: the first read home faults them in.
        super::copy::advise_huge_pages(zeros.as_mut_ptr(), zeros.len());
        self.new_buffer(len, zeros)
    }

    fn new_buffer<T: Pod>(&self, len: usize, host: Vec<u8>) -> Result<Buffer<T>> {
        if len == 0 {
            return Err(Error::BadArgument {
                index: 0,
                reason: "an empty session buffer (OpenCL cannot allocate 0 bytes)".into(),
            });
        }
        let mut list = self.devices.buffers.lock().unwrap_or_else(|e| e.into_inner());
        list.retain(|w| w.strong_count() > 0);
        let index = self.next_buffer.fetch_add(1, Ordering::Relaxed);
        let core =
            Arc::new(BufferCore::new(Arc::clone(&self.devices), index, size_of::<T>(), len, host));
        list.push(Arc::downgrade(&core));
        Ok(Buffer::wrap(core))
    }

    /// Start describing a launch of `kernel` over the session's devices.
    pub fn launch(&self, kernel: &str) -> SessionLaunch<'_> {
        SessionLaunch::new(self, kernel)
    }

    /// With `Some(k)`, every `k`-th launch ends with every buffer's host image brought up to
    /// date, so that a device failing later loses only what was computed since; `None` (the
    /// default) never syncs on its own.
    pub fn set_mirror(&mut self, every: Option<u32>) {
        self.mirror = every.filter(|k| *k > 0);
    }

    /// Bring every buffer's host image up to date now (what the mirror does every k launches);
    /// returns the bytes brought home. A range fresh only on a failed device is an error
    /// naming its buffer.
    pub fn sync(&self) -> Result<crate::report::Moved> {
        let _one_at_a_time = super::opencl_lock();
        self.devices.drain()?;
        let mut total = crate::report::Moved::default();
        for b in transfer::sync_all(&self.live_buffers())? {
            total += b.moved;
        }
        Ok(total)
    }

    /// Lower the largest device allocation a buffer may need (bytes), e.g. to test buffers
    /// larger than a device; a launch needing more is refused with [`Error::DeviceLimit`].
    pub fn set_max_alloc(&mut self, bytes: u64) {
        let own = self.devices.list.iter().map(|d| d.device.info.max_alloc_bytes).min();
        self.devices.max_alloc.store(bytes.min(own.unwrap_or(bytes)), Ordering::Relaxed);
    }

    /// Every live buffer of the session.
    pub(crate) fn live_buffers(&self) -> Vec<Arc<BufferCore>> {
        self.devices.live_buffers()
    }

    /// Wait until every launch submitted so far has ended, and take their reports, in the
    /// order submitted (those [`SessionLaunch::submit`] queued measure device time only: each
    /// device's packages from its first kernel's start, since no host thread watched them). A
    /// device that failed under a queued launch makes this the error naming what it lost.
    pub fn finish(&self) -> Result<Vec<Report>> {
        let _one_at_a_time = super::opencl_lock();
        let began = std::time::Instant::now();
        self.devices.drain()?;
        let reports = self.devices.launches.take_reports();
        let ms = began.elapsed().as_secs_f64() * 1e3;
        let _ = std::panic::catch_unwind(|| tracing::debug!(ms, "session finished"));
        Ok(reports)
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // A thread still computing the losing copy of a first launch's back-up, or still going
        // through tasks of launches that ended without it, is let finish (bounded), so that it
        // is joined below and the pinned memory freed. A device that left the session may be
        // out in its driver for good: its thread is not waited for.
        let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let waiting = |slot: usize| {
            let d = &self.devices.list[slot];
            d.behind.lock().unwrap_or_else(|e| e.into_inner()).is_some()
                || (!self.workers[slot].idle() && !self.devices.is_dead(slot))
        };
        while (0..self.workers.len()).any(waiting) && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        {
            // Nothing may still run on the devices when their threads go; a failure here has
            // no one left to report to (the buffers' ranges it lost are marked lost all the
            // same).
            let _one_at_a_time = super::opencl_lock();
            let _ = self.devices.drain();
        }
        // Each worker releases its kernels and staging under the OpenCL lock, and so does a
        // task letting go of a buffer's last holder: the threads are joined without the lock
        // (unless this thread holds it from further out, when they are left to end on their
        // own), and a thread still out in a driver is not joined.
        let may_join = !super::opencl_lock_held_here();
        let mut joined = true;
        for w in &mut self.workers {
            joined &= w.stop(may_join);
        }
        let _one_at_a_time = super::opencl_lock();
        // A thread still out in a driver may hold the driver's own locks (PoCL was seen stuck
        // so with three devices): an unmap would then wait forever, so the pinned memory is
        // left to the process instead.
        if joined {
            self.devices.pinned.release(&self.devices);
        } else {
            self.devices.pinned.abandon();
        }
        streamed::release(&self.devices, joined);
        // SAFETY: dropped once, here, and never used after (the session is being dropped).
        unsafe { ManuallyDrop::drop(&mut self.devices) };
    }
}

/// The error for a session buffer's host image that cannot be allocated.
fn host_memory(bytes: usize) -> Error {
    Error::BadArgument {
        index: 0,
        reason: format!("cannot allocate {bytes} bytes of host memory for a session buffer"),
    }
}
