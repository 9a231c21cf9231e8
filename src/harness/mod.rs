//! The benchmark harness: everything that runs, times and reports the [`crate::samples`], and
//! nothing the samples themselves need.
//!
//! - [`measure`]: repeated runs of a sample, the median by ROI time, every run checked;
//! - [`paired`]: calls that alternate between variants, round by round, every call checked;
//! - [`energy`]: energy sampling around a run (NVML for NVIDIA GPUs, RAPL for CPU packages);
//! - [`energy_ratio`]: a co-executed run's energy and energy-delay product over the fastest
//!   device's alone;
//! - [`plot`] (plots of a run, SVG or PNG) and [`png`] (the samples' output images);
//! - [`progress`]: progress bars on stderr for the long runners;
//! - [`cli`] and [`balancers`]: flags, device selection and balancer names for the command line;
//! - [`example`]: the body of every sample's stand-alone example;
//! - [`probe`]: what the raw-OpenCL probes of the platform share.

pub mod balancers;
pub mod cli;
pub mod energy;
pub mod energy_ratio;
pub mod example;
pub mod measure;
pub mod paired;
pub mod plot;
pub mod png;
pub mod probe;
pub mod progress;

/// Print the library's `tracing` events on stderr when `RUST_LOG` asks for them (for example
/// `RUST_LOG=hetdsl=debug`: every package handed out and completed). Without `RUST_LOG` no
/// subscriber is installed, so the events cost nothing.
pub fn init_tracing() {
    let Ok(filter) = tracing_subscriber::EnvFilter::try_from_default_env() else { return };
    // A second call (a test, or an example calling this twice) keeps the first subscriber.
    let _ =
        tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).try_init();
}
