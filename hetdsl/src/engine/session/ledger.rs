//! What a session launch did to its buffers: the bytes it moved and the elements its committed
//! packages wrote, and what a launch ending in error leaves behind.

use std::ops::Range;

use super::residency::RangeSet;
use super::worker::{Plan, SArg};
use crate::pattern::Direction;
use crate::report::BufferMoved;
use crate::work::Package;

impl Plan {
    /// A committed package wrote `range` of buffer argument `index`.
    pub(super) fn note_written(&self, index: usize, range: Range<u64>) {
        self.wrote.lock().unwrap_or_else(|e| e.into_inner())[index].insert(range);
    }

    /// A launch ended in error: an output range none of its packages wrote still holds an
    /// older launch's values, which a read would serve as this one's; it is lost instead. An
    /// in-place buffer's unwritten ranges keep the values a retry needs.
    pub(super) fn forget_unwritten(&self) {
        let wrote = self.wrote.lock().unwrap_or_else(|e| e.into_inner());
        let every = Package { offset: 0, len: self.geo.units };
        for a in &self.args {
            let SArg::Buffer { index, core, pattern, dir: Direction::Out } = a else { continue };
            let mut stale = RangeSet::of(self.range(core, *pattern, every));
            stale.remove_set(&wrote[*index]);
            let mut st = core.lock();
            for r in stale.ranges() {
                st.res.forget(r.clone());
            }
        }
    }

    /// The bytes moved, per buffer argument.
    pub(super) fn moved_per_argument(&self) -> Vec<BufferMoved> {
        let moved = self.moved.lock().unwrap_or_else(|e| e.into_inner());
        self.args
            .iter()
            .filter_map(|a| match a {
                SArg::Buffer { index, core, .. } => Some(BufferMoved {
                    buffer: core.index,
                    arg: Some(*index),
                    moved: moved[*index],
                }),
                _ => None,
            })
            .collect()
    }
}
