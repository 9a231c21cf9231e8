//! Shared code of the hetdsl samples: inputs, CPU references, tolerance rules and runners of
//! the ported kernels ([`samples`]), plus the small utilities they need (a seeded RNG, a PNG
//! writer, SVG plots of a run, balancer names for the command line).

pub mod balancers;
pub mod check;
pub mod cli;
pub mod example;
pub mod png;
pub mod rng;
pub mod samples;
pub mod svg;
