//! The benchmark harness: everything that runs, times and reports the [`crate::samples`], and
//! nothing the samples themselves need.
//!
//! - [`measure`]: repeated runs of a sample, the median by ROI time, every run checked;
//! - [`energy`]: energy sampling around a run (NVML for NVIDIA GPUs, RAPL for CPU packages);
//! - [`energy_ratio`]: a co-executed run's energy and energy-delay product over the fastest
//!   device's alone;
//! - [`svg`] (plots of a run) and [`png`] (the samples' output images);
//! - [`cli`] and [`balancers`]: flags, device selection and balancer names for the command line;
//! - [`example`]: the body of every sample's stand-alone example.

pub mod balancers;
pub mod cli;
pub mod energy;
pub mod energy_ratio;
pub mod example;
pub mod measure;
pub mod png;
pub mod svg;
