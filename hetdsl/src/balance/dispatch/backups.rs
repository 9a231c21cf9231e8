//! Speculative back-ups: a device with nothing else to run takes a copy of a straggler's
//! package (the rule is [`backup::choose`]); whichever copy finishes first is kept.

use std::ops::DerefMut;

use super::{Copy, Decision, Dispatcher, Origin};
use crate::balance::dispatch::Assignment;
use crate::balance::{backup, Balancer};
use crate::error::Result;

impl<'d, B: DerefMut<Target = dyn Balancer + 'd>> Dispatcher<B> {
    /// With nothing else to do, `me` may run a copy of a straggler (rule: [`backup::choose`]);
    /// each package is backed up once.
    pub(super) fn backup_for(&mut self, me: usize, at: f64) -> Option<Decision> {
        if !self.config.backups {
            return None;
        }
        let my_speed = self.devices[me].stats.speed?;
        let alike =
            |d: usize| self.names[d] == self.names[me] && self.nominal[d] == self.nominal[me];
        let running = self.devices.iter().enumerate().filter_map(|(d, dev)| match dev.running {
            Some(Copy { package, since, twin: None, abandoned: false })
                if d != me
                    && !dev.lost
                    && !self.backed_up.contains(&package)
                    && (!self.config.faster_only || self.nominal[d] < self.nominal[me]) =>
            {
                Some(backup::Running {
                    device: d,
                    package,
                    elapsed: at - since,
                    speed: dev.stats.speed,
                    alike: alike(d),
                })
            }
            _ => None,
        });
        let chosen = backup::choose(my_speed, running.collect::<Vec<_>>())?;
        self.backed_up.insert(chosen.package);
        self.backups.push((chosen.device, me, chosen.package));
        if let Some(c) = self.devices[chosen.device].running.as_mut() {
            c.twin = Some(me);
        }
        let origin = Origin::Backup { of: chosen.device };
        Some(self.hand_out(me, at, chosen.package, origin, Some(chosen.device)))
    }

    /// Time passes: each device waiting for work (in device order) may back up a straggler.
    /// Returns the devices given a copy to run.
    pub fn tick(&mut self, at: f64) -> Result<Vec<(usize, Assignment)>> {
        if let Some(f) = &self.fatal {
            return Err(f.error());
        }
        let mut given = Vec::new();
        for d in 0..self.devices.len() {
            let dev = &self.devices[d];
            if dev.lost || dev.running.is_some() || dev.waiting.is_none() {
                continue;
            }
            if let Some(Decision::Run(a)) = self.backup_for(d, at) {
                given.push((d, a));
            }
        }
        Ok(given)
    }

    /// Whether a [`tick`](Self::tick) could give a back-up now: back-ups are on, something
    /// runs, and a waiting device has a measured speed.
    pub fn could_back_up(&self) -> bool {
        self.config.backups
            && self.devices.iter().any(|d| d.running.is_some())
            && self
                .devices
                .iter()
                .any(|d| !d.lost && d.waiting.is_some() && d.stats.speed.is_some())
    }
}
