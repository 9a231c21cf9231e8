//! A rank that leaves the job. A Rust program that fails on one rank usually returns its error
//! from `main` (`?`), which drops its `Cluster` and so finalises MPI there; Open MPI's
//! finalisation waits for every rank, while the others wait for that rank in their next
//! launch's first collective step: the whole job hung. So a `Cluster` dropped tells every other
//! rank that it leaves (a message of no bytes on a tag no launch uses), and every collective
//! step a caller reaches (a launch's start, `Cluster::all_agree`) begins with a barrier that
//! watches for such a message instead of waiting for a rank that is gone.

use mpi::topology::SimpleCommunicator;
use mpi::traits::*;

/// The tag of the leaving notice: launches' tags start at 1 (`crate::wire::launch_tag`).
const LEAVING: i32 = 0;

/// Tells every other rank that this one leaves the job. Each notice is a small message, sent
/// whether or not anyone receives it (MPI sends one this small without waiting).
pub(crate) fn announce(world: &SimpleCommunicator) {
    let me = world.rank();
    for r in (0..world.size()).filter(|&r| r != me) {
        world.process_at_rank(r).send_with_tag(&[0u8; 0][..], LEAVING);
    }
}

/// Waits until every rank has reached this collective step, or until a rank says it left the
/// job: then the step can never complete, and that rank is returned, now and at every later
/// step (`left` keeps it: its notice comes once). The barrier is left unfinished: the job
/// cannot go on.
pub(crate) fn all_present(
    world: &SimpleCommunicator,
    left: &std::cell::Cell<Option<usize>>,
) -> Result<(), usize> {
    if let Some(r) = left.get() {
        return Err(r);
    }
    let mut barrier = world.immediate_barrier();
    loop {
        barrier = match barrier.test() {
            Ok(_) => return Ok(()),
            Err(pending) => pending,
        };
        if let Some((message, status)) =
            world.any_process().immediate_matched_probe_with_tag(LEAVING)
        {
            message.matched_receive_into(&mut [0u8; 0][..]);
            std::mem::forget(barrier);
            let r = status.source_rank() as usize;
            left.set(Some(r));
            return Err(r);
        }
        std::thread::sleep(std::time::Duration::from_micros(100));
    }
}

/// The error of a launch that a rank left the job before.
pub(crate) fn left(rank: usize) -> hetdsl::Error {
    hetdsl::Error::BadConfig(format!(
        "rank {rank} left the job (its Cluster was dropped, e.g. on an error of its own) before \
         this launch: the launch cannot run, and this rank should end too"
    ))
}
