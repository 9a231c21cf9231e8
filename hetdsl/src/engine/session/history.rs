//! What a session learned, kept between processes: the last report of each launch (kernel,
//! sizes, devices), from which a repeated launch is split, written as JSON with the devices'
//! names so that a file from another machine, or another device list, is refused rather than
//! trusted. Off unless the caller saves and loads it.

use std::path::Path;

use super::launch::HistoryKey;
use super::Session;
use crate::error::{Error, Result};
use crate::report::Report;

#[derive(serde::Serialize, serde::Deserialize)]
struct Saved {
    /// The session's devices, by name, in session order.
    devices: Vec<String>,
    launches: Vec<(HistoryKey, Report)>,
}

impl Session {
    /// Write what the session has learned (each launch's last report) to `path`, for a later
    /// process's [`Session::load_history`]; waits for queued launches first.
    pub fn save_history(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        {
            let _one_at_a_time = super::super::opencl_lock();
            self.devices.drain()?;
        }
        let launches = self.devices.launches.history.lock().unwrap_or_else(|e| e.into_inner());
        let saved = Saved {
            devices: self.device_names(),
            launches: launches.iter().map(|(k, r)| (k.clone(), r.clone())).collect(),
        };
        let text = serde_json::to_string(&saved).map_err(|e| io(path, e))?;
        std::fs::write(path, text).map_err(|e| io(path, e))
    }

    /// Start from what an earlier session over the same devices learned (written by
    /// [`Session::save_history`]): the first repeat of each saved launch is split as it
    /// ended there. A file of other devices is refused; a missing or unreadable one is an
    /// [`Error::Io`] naming it. Returns how many launches it knew.
    pub fn load_history(&self, path: impl AsRef<Path>) -> Result<usize> {
        use std::io::Read;
        let path = path.as_ref();
        // Read at most a byte past the limit: a path like /dev/zero never ends.
        let mut text = String::new();
        std::fs::File::open(path)
            .and_then(|f| f.take(MAX_HISTORY_BYTES + 1).read_to_string(&mut text))
            .map_err(|e| io(path, e))?;
        if text.len() as u64 > MAX_HISTORY_BYTES {
            return Err(io(path, format!("over {MAX_HISTORY_BYTES} bytes: not a history")));
        }
        let saved: Saved =
            serde_json::from_str(&text).map_err(|e| io(path, format!("not a history: {e}")))?;
        let ours = self.device_names();
        if saved.devices != ours {
            return Err(Error::BadConfig(format!(
                "history `{}` was learned on devices {:?}, this session has {:?}",
                path.display(),
                saved.devices,
                ours
            )));
        }
        let n = saved.launches.len();
        for (key, report) in saved.launches {
            self.devices.launches.remember(key, report);
        }
        Ok(n)
    }

    fn device_names(&self) -> Vec<String> {
        self.devices.list.iter().map(|d| d.device.info.name.clone()).collect()
    }
}

/// The largest history file read: one report per launch, each with its packages, is far
/// smaller (a launch of five thousand packages writes about a megabyte).
const MAX_HISTORY_BYTES: u64 = 256 << 20;

fn io(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::Io { path: path.display().to_string(), reason: e.to_string() }
}
