//! Dynamic: equal packages, first come first served.

use super::{check_setup, Balancer, Completion, Next, Remaining, Setup};
use crate::error::{Error, Result};

#[derive(Debug, Clone)]
enum Chunking {
    /// Split into this many packages.
    Count(u64),
    /// Packages of this many work-groups.
    Size(u64),
}

#[derive(Debug, Clone)]
pub struct Dynamic {
    chunking: Chunking,
    size: u64,
    left: Remaining,
    devices: u64,
}

impl Dynamic {
    /// `n` packages of (nearly) equal size.
    pub fn packages(n: u64) -> Self {
        Dynamic { chunking: Chunking::Count(n), size: 0, left: Remaining::default(), devices: 0 }
    }
    /// Packages of `groups` work-groups each (the last may be smaller).
    pub fn chunk(groups: u64) -> Self {
        Dynamic {
            chunking: Chunking::Size(groups),
            size: 0,
            left: Remaining::default(),
            devices: 0,
        }
    }
}

impl Default for Dynamic {
    fn default() -> Self {
        Self::packages(128)
    }
}

impl Balancer for Dynamic {
    fn name(&self) -> String {
        match self.chunking {
            Chunking::Count(n) => format!("dynamic({n})"),
            Chunking::Size(s) => format!("dynamic(chunk={s})"),
        }
    }

    fn start(&mut self, setup: &Setup) -> Result<()> {
        check_setup(setup)?;
        self.size = match self.chunking {
            Chunking::Count(0) | Chunking::Size(0) => {
                return Err(Error::BadBalancer(
                    "dynamic needs a non-zero package count or size".into(),
                ))
            }
            Chunking::Count(n) => setup.total_groups.div_ceil(n),
            Chunking::Size(s) => s,
        };
        self.left = Remaining::new(setup.total_groups);
        self.devices = setup.devices.len() as u64;
        Ok(())
    }

    fn next(&mut self, _device: usize, _now: f64) -> Next {
        self.left.take(self.size).map_or(Next::Done, Next::Run)
    }

    /// Queues a package only while two per device are left after it: at the end, a package
    /// queued on a slow device would be one that a faster device, idle sooner, could have run.
    fn next_ahead(&mut self, device: usize, now: f64) -> Next {
        let after = self.left.left().saturating_sub(self.size);
        // Saturated: a chunk as large as `dynamic-chunk:18446744073709551615` overflowed.
        if after >= self.size.saturating_mul(2).saturating_mul(self.devices) {
            self.next(device, now)
        } else {
            Next::Wait
        }
    }

    fn completed(&mut self, _done: &Completion) {}

    fn device_lost(&mut self, _device: usize) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::work::{DeviceKind, DeviceProfile, Package};

    #[test]
    fn a_chunk_of_every_group_there_could_be_runs_the_range_in_one_package() {
        let cpu = DeviceProfile { kind: DeviceKind::Cpu, nominal_gflops: 1.0, min_groups: 1 };
        let setup = Setup { total_groups: 10, devices: vec![cpu.clone(), cpu] };
        let mut d = Dynamic::chunk(u64::MAX);
        d.start(&setup).unwrap();
        // Two packages per device after the queued one, counted without overflowing.
        assert_eq!(d.next_ahead(0, 0.0), Next::Wait);
        assert_eq!(d.next(0, 0.0), Next::Run(Package { offset: 0, len: 10 }));
        assert_eq!(d.next(1, 0.0), Next::Done);
    }
}
