//! A rank that leaves the job. A Rust program that fails on one rank usually returns its error
//! from `main` (`?`), which drops its `Cluster` and so finalises MPI there; Open MPI's
//! finalisation waits for every rank, while the others wait for that rank in their next
//! launch's first collective step: the whole job hung. So a `Cluster` dropped tells every other
//! rank that it leaves (a message of no bytes), and every collective call a caller makes (a
//! launch, `Cluster::all_agree`) begins with a step that watches for such a message instead of
//! waiting for a rank that is gone (the all-gather of [`crate::step`]'s headers).

use std::cell::Cell;
use std::mem::ManuallyDrop;
use std::time::{Duration, Instant};

use mpi::request::StaticScope;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;

/// The notices' own communicator (no launch's message is ever taken for one), and the rank
/// known to have left.
pub(crate) struct Notices {
    /// Never freed: MPI frees it when finalised, and freeing it after would be an error.
    comm: ManuallyDrop<SimpleCommunicator>,
    left: Cell<Option<usize>>,
    /// Every rank whose notice was taken (a rank may wait on one rank in particular).
    gone: std::cell::RefCell<Vec<usize>>,
}

impl Notices {
    /// A copy of `world` (a collective step: every rank makes it as it joins) that reports
    /// errors instead of ending the job: at the job's end, a rank may already be finalising
    /// when another says it leaves, and that notice is nobody's concern then.
    pub(crate) fn new(world: &SimpleCommunicator) -> Notices {
        let comm = world.duplicate();
        // SAFETY: a valid communicator and MPI's predefined handler; the call only sets it.
        unsafe { mpi::ffi::MPI_Comm_set_errhandler(comm.as_raw(), mpi::ffi::RSMPI_ERRORS_RETURN) };
        Notices { comm: ManuallyDrop::new(comm), left: Cell::new(None), gone: Default::default() }
    }

    /// Tells every other rank that this one leaves the job, having made collective steps up to
    /// `made` (a sequence number). Each notice is so small that MPI sends it without waiting
    /// for it to be received, and a failed one is ignored.
    pub(crate) fn announce(&self, made: u64) {
        let me = self.comm.rank();
        for r in (0..self.comm.size()).filter(|&r| r != me) {
            self.comm.process_at_rank(r).send(&made.to_le_bytes()[..]);
        }
    }

    /// Takes one notice waiting, if any: the rank that left and the last step it made.
    fn take_notice(&self) -> Option<(usize, u64)> {
        let (message, status) = self.comm.any_process().immediate_matched_probe()?;
        let mut made = [0u8; 8];
        message.matched_receive_into(&mut made[..]);
        let r = status.source_rank() as usize;
        self.gone.borrow_mut().push(r);
        if self.left.get().is_none() {
            self.left.set(Some(r));
        }
        Some((r, u64::from_le_bytes(made)))
    }

    /// Gathers every rank's `mine` (of one length on every rank) for collective step `seq` once
    /// every rank of `world` has reached it, or stops when a rank says it left the job before
    /// this step: then the step cannot complete, and that rank is returned, now and at every
    /// later step (its notice comes once). The gather is then left unfinished: the job cannot go
    /// on. A rank that made this step and then left lets it complete; the wait for that is
    /// bounded by [`GRACE`].
    pub(crate) fn gather(
        &self,
        world: &SimpleCommunicator,
        mine: &[u8],
        seq: u64,
    ) -> Result<Vec<u8>, usize> {
        if let Some(r) = self.left.get() {
            return Err(r);
        }
        // The buffers outlive any request left unfinished (they are then never freed), so the
        // gather takes them for the program's life; they are taken back once it completes.
        let send: *mut [u8] = Box::into_raw(mine.to_vec().into_boxed_slice());
        let recv: *mut [u8] =
            Box::into_raw(vec![0u8; mine.len() * self.comm.size() as usize].into_boxed_slice());
        // SAFETY: both come from boxes just leaked, and nothing else reaches them until the
        // request that borrows them completes.
        let (send_ref, recv_ref): (&'static [u8], &'static mut [u8]) =
            unsafe { (&*send, &mut *recv) };
        let mut gather = world.immediate_all_gather_into(StaticScope, send_ref, recv_ref);
        let mut given_up: Option<Instant> = None;
        loop {
            gather = match gather.test() {
                Ok(_) => {
                    // SAFETY: the gather has completed, so MPI no longer touches the buffers
                    // and no reference to them is left: each box is taken back once.
                    let (send, recv) = unsafe { (Box::from_raw(send), Box::from_raw(recv)) };
                    drop(send);
                    return Ok(recv.into_vec());
                }
                Err(pending) => pending,
            };
            if let Some((r, made)) = self.take_notice() {
                if made < seq {
                    // It left before this step: the step can never complete.
                    std::mem::forget(gather);
                    return Err(r);
                }
                given_up.get_or_insert_with(Instant::now);
            }
            // A rank that made this step and left just after lets it complete: the others, who
            // go on to the call's next step, must not wait there for this rank.
            if given_up.is_some_and(|t| t.elapsed() > GRACE) {
                std::mem::forget(gather);
                return Err(self.left.get().unwrap_or_default());
            }
            std::thread::sleep(std::time::Duration::from_micros(100));
        }
    }
}

impl Notices {
    /// Whether `rank` has said it left the job; takes every notice waiting, without blocking
    /// (for a rank waiting on one other rank, outside any collective step).
    pub(crate) fn has_left(&self, rank: usize) -> bool {
        while self.take_notice().is_some() {}
        self.gone.borrow().contains(&rank)
    }
}

/// How long a step that a rank made before it left may take to complete: within microseconds
/// (the time MPI takes to move its bytes); the bound keeps a step that cannot complete after all
/// from hanging the rank.
const GRACE: Duration = Duration::from_millis(500);

/// The error of a collective call (a launch, an agreement) that a rank left the job before.
pub(crate) fn left(rank: usize, call: crate::step::Call) -> hetdsl::Error {
    let (what, outcome) = match call {
        crate::step::Call::Run => ("launch", "the launch cannot run"),
        crate::step::Call::AllAgree => ("all_agree", "the ranks cannot agree"),
    };
    hetdsl::Error::BadConfig(format!(
        "rank {rank} left the job (its Cluster was dropped, e.g. on an error of its own) before \
         this {what}: {outcome}, and this rank should end too"
    ))
}
