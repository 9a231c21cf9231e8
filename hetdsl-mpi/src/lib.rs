//! # hetdsl-mpi
//!
//! Co-execute one hetdsl launch across the nodes of a cluster, over MPI, with the same
//! balancers at two levels:
//!
//! - **across ranks** (one rank per node), rank 0 drives an ordinary [`hetdsl::Balancer`]
//!   (guided self-scheduling over measured speeds by default, [`guided`]) through hetdsl's
//!   own dispatcher, each rank counting as one device
//!   whose speed is what its devices achieve together ([`hier`]);
//! - **within a rank**, each range the rank gets runs on the node's devices with
//!   `Launch::groups(range)` and the node's balancer, exactly as a single-node run does
//!   (the `node` module).
//!
//! Every rank makes the same call (SPMD). Rank 0 holds the caller's buffers: each rank receives
//! only the input elements of the ranges it runs (`whole` inputs are broadcast once), and each
//! range's outputs come back to rank 0 as soon as it finishes. A rank gets its next range while
//! it computes the last, where the ranks' balancer has one to give so early (its inputs then
//! travel meanwhile), else when it is idle. A rank whose devices all fail hands its range back; one that leaves
//! on an error or outlives the watchdog is dropped and its range re-run elsewhere.
//!
//! The MPI part (`Cluster`, `ClusterLaunch`) needs the `mpi` feature (and Open MPI or another
//! MPI with its headers, and libclang); the balancing, the wire format, a range's payload
//! ([`payload`]) and the cluster simulator ([`sim`], [`scenario`]) build without it.
//!
//! # When a rank dies
//! MPI has no fault tolerance here: what the library can do is never leave a rank waiting
//! without bound, and say what happened. Rank 0 waits for each rank a bounded time; a rank
//! waits for its next order only while rank 0 runs the launch, since rank 0 tells every rank
//! when it stops, on every way out, its own errors included.
//!
//! - A rank whose devices all fail is not dead: it tells rank 0, which re-runs its range
//!   elsewhere; the ranges it merged before stay.
//! - A rank that leaves the launch on an error of its own (a range's output of one argument
//!   over MPI's message limit, an order it could not read: it still takes the inputs that
//!   follow, so that rank 0's sends end) returns that error, and its summary tells rank 0,
//!   which drops it at once and re-runs its range (the report names it "left the launch").
//! - A rank that hangs is dropped by rank 0's watchdog (a range running 20 times what the
//!   rank's speed predicts, at least 2 minutes, while another rank idles; see
//!   `ClusterLaunch::rank_watchdog`), and its range re-run; rank 0 then waits 2 s at most for
//!   its summary and returns. A dropped rank that comes back later finds its stop order and
//!   leaves the launch without sending outputs.
//! - When the run fails on rank 0 (or rank 0's balancer across ranks refuses to start), every
//!   other rank is told, and returns "the cluster run failed on rank 0: ..." once its current
//!   range ends; rank 0 waits 2 s at most for their summaries (outputs already announced are
//!   always received) and returns its error.
//! - Every rank returns the same verdict for a launch: a rank stopped idle is told to stop
//!   only when the run ends, with its outcome, and a rank dropped (its devices failed, or the
//!   watchdog) waits for that outcome after its summary, unless rank 0 leaves the job first.
//!   Only a rank that left the launch on an error of its own returns that error instead.
//! - After a run that ended well, rank 0 waits for each rank's summary at most the rank
//!   watchdog's floor; a rank not heard from by then keeps a fault in the report.
//!
//! `Cluster::stragglers` on rank 0 lists the ranks not heard from when `run` returned. The
//! job's next collective step waits for them: a rank still in a range joins when it ends, but
//! one stuck for good in a driver never does, so when a straggler may be stuck, save the
//! result and end the job (`Cluster::abort`).
//!
//! A rank *process* that dies (killed, crashed) ends the whole job: Open MPI's `mpirun` aborts
//! every other rank when one exits without finalising MPI, so the survivors never hang, but
//! the launch's result is lost with them (`tests/mpi_dead_rank.rs`: the job ends within
//! seconds, with the dead rank's status). A rank that stops making the others' calls and
//! returns its error from `main` drops its `Cluster`, which tells every other rank that it
//! left: their next launch (or `Cluster::all_agree`) returns "rank r left the job" instead of
//! waiting for it (`tests/mpi_left_rank.rs`); `Cluster::abort` ends the job at once.
//!
//! # When ranks make different calls
//! MPI matches collective operations by their order alone, so ranks making different
//! collective calls at one point (one launching while another calls `Cluster::all_agree`, or
//! launching another kernel, NDRange or argument list) would meet inside MPI and hang. Every
//! collective call therefore begins with a header every rank exchanges ([`step`]): when they
//! differ, every rank returns [`hetdsl::Error::CollectiveMismatch`] naming what each called
//! (`all_agree` returns false, `Cluster::try_all_agree` the error), and a job whose ranks then
//! get back in step goes on. A launch that rank 0's own checks refuse (an argument, the kernel,
//! the NDRange) is that error, of its kind, on every rank. A rank that makes no call at all (in
//! a loop of its own) is not out of step but late: the others wait for it, as for any rank.

pub mod carried;
pub mod carry;
pub mod costmap;
pub mod finish;
pub mod guided;
pub mod hier;
pub mod moving;
pub mod payload;
pub mod plan;
pub mod recall;
pub mod reference;
pub mod repeated;
pub mod report;
pub mod scenario;
pub mod sim;
pub mod spec;
pub mod step;
pub mod wire;

#[cfg(feature = "mpi")]
mod caller;
#[cfg(feature = "mpi")]
mod cluster;
#[cfg(feature = "mpi")]
mod given;
#[cfg(feature = "mpi")]
mod leaving;
#[cfg(feature = "mpi")]
pub mod node;
#[cfg(feature = "mpi")]
mod root;
#[cfg(feature = "mpi")]
mod run;
#[cfg(feature = "mpi")]
pub mod serve;
#[cfg(feature = "mpi")]
mod transfer;
#[cfg(feature = "mpi")]
mod typed;

#[cfg(feature = "mpi")]
pub use cluster::{Cluster, ClusterLaunch};
pub use report::{ClusterReport, RankReport};
