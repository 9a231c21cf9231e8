//! # hetdsl-mpi
//!
//! Co-execute one hetdsl launch across the nodes of a cluster, over MPI, with the same
//! balancers at two levels:
//!
//! - **across ranks** (one rank per node), rank 0 drives an ordinary [`hetdsl::Balancer`]
//!   (Sigmoid by default) through hetdsl's own dispatcher, each rank counting as one device
//!   whose speed is what its devices achieve together ([`hier`]);
//! - **within a rank**, each range the rank gets runs on the node's devices with
//!   `Launch::groups(range)` and the node's balancer, exactly as a single-node run does
//!   ([`node`]).
//!
//! Every rank makes the same call (SPMD). Rank 0 holds the caller's buffers: each rank receives
//! only the input elements of the ranges it runs (`whole` inputs are broadcast once), and each
//! range's outputs come back to rank 0 as soon as it finishes. A rank asks rank 0 for its next
//! range when it is idle. A rank whose devices all fail hands its range back; one that outlives
//! the watchdog is dropped and its range re-run elsewhere.
//!
//! The MPI part needs the `mpi` feature (and Open MPI or another MPI with its headers); the
//! balancing, the wire format and the cluster simulator ([`sim`]) build without it.

pub mod hier;
pub mod report;
pub mod scenario;
pub mod sim;
pub mod spec;
pub mod wire;

#[cfg(feature = "mpi")]
mod cluster;
#[cfg(feature = "mpi")]
pub mod node;
#[cfg(feature = "mpi")]
mod root;
#[cfg(feature = "mpi")]
mod run;
#[cfg(feature = "mpi")]
pub mod serve;

#[cfg(feature = "mpi")]
pub use cluster::{Cluster, ClusterLaunch};
pub use report::{ClusterReport, RankReport};
