//! # hetdsl
//!
//! Run one data-parallel OpenCL kernel on every device of a heterogeneous machine at once (every
//! CPU and GPU of every OpenCL platform), load-balanced with no tuning: the NDRange is split
//! into packages of work-groups, the packages go to the devices as the balancer decides
//! (Sigmoid by default), the outputs are merged in place, and a [`Report`] says how well the
//! devices were used.
//!
//! Map of the crate:
//! - pure parts (numbers in, numbers out): [`balance`] (the balancers), [`pattern`],
//!   [`report`] (metrics), [`device`] (device descriptions and filters);
//! - [`engine`]: the only part that touches OpenCL;
//! - [`kernel!`] and [`macro@coexec`]: a kernel declared in Rust, checked against its OpenCL
//!   signature at compile time, co-executed through a typed function.
//!
//! # Features
//! - `internals` (off by default): makes the discrete-event simulator (`sim`), the occupancy
//!   calculators (`occupancy`), the dispatcher (`balance::dispatch`), the back-up rule
//!   (`balance::backup`) and the threaded host copy (`engine::copy`) public. They are the
//!   crate's own machinery, not a stable API; the samples' examples (`simulate`, `occupancy`,
//!   `suite`, ...) and the simulator's tests turn it on. Without it, what a user writes (the
//!   re-exports below) and what a balancer author needs ([`balance`]) are all public.
//!
//! Two promises hold under co-execution, whichever way the NDRange is split:
//! - a launch's arguments are checked against the kernel's real signature (kind, type,
//!   `const`-ness, inputs the kernel writes) before anything is enqueued, with messages that
//!   name the parameter and its file and line;
//! - `get_group_id`, `get_num_groups`, `get_global_size`, `get_global_offset` and
//!   `get_global_linear_id` answer for the NDRange the caller launched, not for the package a
//!   device runs: the source is rewritten before it is built, and kernels that need the sizes
//!   take a hidden last `ulong4` argument that the engine sets (it is not one of the caller's
//!   arguments). Only kernel functions may call `get_global_size`, `get_num_groups` or
//!   `get_global_linear_id`; a helper that does is refused at build time.

pub mod balance;
mod builtins;
pub mod device;
pub mod engine;
pub mod error;
pub mod merge;
pub mod pattern;
pub mod pod;
pub mod report;
mod work;

// The simulator and the occupancy calculators are internals: public only with the `internals`
// feature (the samples' examples and the simulator's tests use them), crate-private otherwise.
#[cfg(feature = "internals")]
pub mod occupancy;
#[cfg(not(feature = "internals"))]
// Without the feature the engine uses only part of the calculators; the rest serve the tests.
#[allow(dead_code, unused_imports)]
mod occupancy;
#[cfg(feature = "internals")]
pub mod sim;
#[cfg(not(feature = "internals"))]
// Without the feature only the seeded generator and the tests reach the simulator.
#[allow(dead_code, unused_imports)]
mod sim;

#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;

pub use hetdsl_macros::{coexec, kernel, Pod};

pub use balance::Balancer;
pub use device::{DeviceFilter, DeviceInfo};
pub use engine::{
    Arg, Difference, Fault, KernelSource, Launch, Program, Runtime, Verification, WaitMode,
    WatchdogConfig,
};
pub use engine::{Buffer, Session, SessionLaunch};
pub use error::{Error, Result};
pub use merge::{Merge, Reducible};
pub use pattern::{Direction, Pattern};
pub use pod::Pod;
pub use report::Report;
pub use work::{DeviceKind, Package};

/// Compile-time proof that the public types can cross threads: a runtime or program built once
/// can serve several threads, and a launch can be prepared on one thread and run on another.
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    const fn send<T: Send>() {}
    send_sync::<Runtime>();
    send_sync::<Program>();
    send_sync::<KernelSource>();
    send_sync::<Report>();
    send_sync::<Error>();
    send_sync::<DeviceInfo>();
    send_sync::<Pattern>();
    send::<Launch<'static>>();
    send::<Box<dyn Balancer>>();
    send_sync::<Session>();
    send_sync::<Buffer<f32>>();
    send::<SessionLaunch<'static>>();
};
