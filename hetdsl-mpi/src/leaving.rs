//! A rank that leaves the job. A Rust program that fails on one rank usually returns its error
//! from `main` (`?`), which drops its `Cluster` and so finalises MPI there; Open MPI's
//! finalisation waits for every rank, while the others wait for that rank in their next
//! launch's first collective step: the whole job hung. So a `Cluster` dropped tells every other
//! rank that it leaves (a message of no bytes), and every collective step a caller reaches (a
//! launch's start, `Cluster::all_agree`) begins with a barrier that watches for such a message
//! instead of waiting for a rank that is gone.

use std::cell::Cell;
use std::mem::ManuallyDrop;

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

    /// Tells every other rank that this one leaves the job. Each notice is so small that MPI
    /// sends it without waiting for it to be received, and a failed one is ignored.
    pub(crate) fn announce(&self) {
        let me = self.comm.rank();
        for r in (0..self.comm.size()).filter(|&r| r != me) {
            self.comm.process_at_rank(r).send(&[0u8; 0][..]);
        }
    }

    /// Waits until every rank of `world` has reached this collective step, or until a rank
    /// says it left the job: then the step can never complete, and that rank is returned, now
    /// and at every later step (its notice comes once). The barrier is left unfinished: the
    /// job cannot go on.
    pub(crate) fn all_present(&self, world: &SimpleCommunicator) -> Result<(), usize> {
        if let Some(r) = self.left.get() {
            return Err(r);
        }
        let mut barrier = world.immediate_barrier();
        loop {
            barrier = match barrier.test() {
                Ok(_) => return Ok(()),
                Err(pending) => pending,
            };
            if let Some((message, status)) = self.comm.any_process().immediate_matched_probe() {
                message.matched_receive_into(&mut [0u8; 0][..]);
                std::mem::forget(barrier);
                let r = status.source_rank() as usize;
                self.left.set(Some(r));
                self.gone.borrow_mut().push(r);
                return Err(r);
            }
            std::thread::sleep(std::time::Duration::from_micros(100));
        }
    }
}

impl Notices {
    /// Whether `rank` has said it left the job; takes every notice waiting, without blocking
    /// (for a rank waiting on one other rank, outside any collective step).
    pub(crate) fn has_left(&self, rank: usize) -> bool {
        while let Some((message, status)) = self.comm.any_process().immediate_matched_probe() {
            message.matched_receive_into(&mut [0u8; 0][..]);
            let r = status.source_rank() as usize;
            self.gone.borrow_mut().push(r);
            if self.left.get().is_none() {
                self.left.set(Some(r));
            }
        }
        self.gone.borrow().contains(&rank)
    }
}

/// The error of a launch that a rank left the job before.
pub(crate) fn left(rank: usize) -> hetdsl::Error {
    hetdsl::Error::BadConfig(format!(
        "rank {rank} left the job (its Cluster was dropped, e.g. on an error of its own) before \
         this launch: the launch cannot run, and this rank should end too"
    ))
}
