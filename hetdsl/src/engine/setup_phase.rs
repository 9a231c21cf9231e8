//! How device threads report their set-up to the run. The run waits for them, but not for one
//! far slower than the first ready (see the coordinator): that one joins the running run when
//! its set-up ends, or leaves it as a device failing mid-run would.

use std::sync::atomic::Ordering;
use std::sync::MutexGuard;

use super::shared::{Phase, SetupError, Shared, State};
use crate::error::{Error, Result};
use crate::work::DeviceProfile;

impl Shared {
    /// `me`'s profile is known (its kernel made, its limits checked); the rest of its set-up
    /// may take long.
    pub(super) fn profile_known(&self, me: usize, profile: DeviceProfile) {
        let mut s = self.lock();
        s.provisional[me] = Some(profile);
        self.wake.notify_all();
    }

    /// A device finished (or failed) its set-up; then waits until the run starts, unless it
    /// started already without this device. Returns whether to go on.
    pub(super) fn setup_done(&self, me: usize, result: Result<DeviceProfile>) -> bool {
        let result = result.map_err(|e| match e {
            Error::Cl { .. } => SetupError::Device(format!("set-up failed: {e}")),
            e => SetupError::User(e),
        });
        let mut s = self.lock();
        if s.late[me] {
            return self.join_late(s, me, result);
        }
        s.setup[me] = Some(result);
        self.wake.notify_all();
        while s.phase == Phase::Setup {
            s = self.wake.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        s.phase == Phase::Running && self.alive(me)
    }

    /// A device the run started without has set up: it joins the run (the dispatcher hands it
    /// work when it asks), or leaves it as a device failing mid-run would; the user's mistake
    /// found by it ends the run with that error.
    fn join_late(
        &self,
        mut s: MutexGuard<'_, State>,
        me: usize,
        result: std::result::Result<DeviceProfile, SetupError>,
    ) -> bool {
        let joined = match result {
            Ok(profile) => {
                s.setup[me] = Some(Ok(profile));
                s.phase == Phase::Running && self.alive(me)
            }
            Err(SetupError::User(e)) if s.phase == Phase::Running => {
                s.fatal.get_or_insert(e);
                false
            }
            Err(SetupError::Device(reason)) if s.phase == Phase::Running && self.alive(me) => {
                self.alive[me].store(false, Ordering::Release);
                self.lose(&mut s, me, reason);
                false
            }
            Err(_) => false,
        };
        self.wake.notify_all();
        joined
    }

    /// `me` could not set up for a reason of its own (not the user's): it is dropped from the
    /// run, which goes on without it. Does not wait for the other devices.
    pub(super) fn setup_failed(&self, me: usize, reason: String) {
        let mut s = self.lock();
        if s.late[me] {
            self.join_late(s, me, Err(SetupError::Device(reason)));
            return;
        }
        if s.setup[me].is_none() {
            s.setup[me] = Some(Err(SetupError::Device(reason)));
        }
        self.wake.notify_all();
    }

    /// The host thread of `me` panicked (a bug, not a device fault the engine knows of): during
    /// set-up the device counts as failing to set up, later as failing mid-run. Either way the
    /// run goes on without it rather than wait for it for ever.
    pub(super) fn thread_panicked(&self, me: usize, message: String) {
        let reason = format!("its host thread panicked: {message}");
        {
            let mut s = self.lock();
            if s.phase == Phase::Setup && s.setup[me].is_none() && !s.late[me] {
                s.setup[me] = Some(Err(SetupError::Device(reason)));
                self.wake.notify_all();
                return;
            }
        }
        self.device_failed(me, reason);
    }
}
