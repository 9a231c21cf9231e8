//! Inputs and independent CPU references of the iterative benchmarks (`examples/iterate.rs`):
//! kernels launched many times over data that stays on the devices. Each reference follows the
//! whole sequence of launches from the initial data, in double precision where the kernel's
//! float rounding would otherwise be copied, and is computed on all cores; where the whole
//! problem would take too long it is computed on a deterministic sample (see each module).

pub mod blackscholes;
pub mod chain;
pub mod jacobi;
pub mod nbody;
