//! Where each element of a session buffer is fresh: per location (the host image, each device)
//! a set of element ranges, and the ranges lost with a failed device. Pure: ranges in, ranges
//! out; the session's transfers and launches consult and update it under the buffer's lock.

use std::ops::Range;

/// A set of `u64` positions kept as sorted, disjoint, non-touching ranges.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RangeSet {
    ranges: Vec<Range<u64>>,
}

impl RangeSet {
    pub(crate) fn new() -> RangeSet {
        RangeSet::default()
    }

    /// The set holding exactly `r` (empty if `r` is).
    pub(crate) fn of(r: Range<u64>) -> RangeSet {
        let mut s = RangeSet::new();
        s.insert(r);
        s
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    pub(crate) fn ranges(&self) -> &[Range<u64>] {
        &self.ranges
    }

    /// How many positions the set holds.
    #[cfg(test)]
    pub(crate) fn count(&self) -> u64 {
        self.ranges.iter().map(|r| r.end - r.start).sum()
    }

    /// Add `r`, merging with the ranges it overlaps or touches.
    pub(crate) fn insert(&mut self, r: Range<u64>) {
        if r.start >= r.end {
            return;
        }
        let (mut start, mut end) = (r.start, r.end);
        let mut kept = Vec::with_capacity(self.ranges.len() + 1);
        let mut placed = false;
        for x in self.ranges.drain(..) {
            if x.end < start {
                kept.push(x);
            } else if x.start > end {
                if !placed {
                    kept.push(start..end);
                    placed = true;
                }
                kept.push(x);
            } else {
                start = start.min(x.start);
                end = end.max(x.end);
            }
        }
        if !placed {
            kept.push(start..end);
        }
        self.ranges = kept;
    }

    /// Take `r` out.
    pub(crate) fn remove(&mut self, r: Range<u64>) {
        if r.start >= r.end {
            return;
        }
        let mut kept = Vec::with_capacity(self.ranges.len() + 1);
        for x in self.ranges.drain(..) {
            if x.end <= r.start || x.start >= r.end {
                kept.push(x);
                continue;
            }
            if x.start < r.start {
                kept.push(x.start..r.start);
            }
            if x.end > r.end {
                kept.push(r.end..x.end);
            }
        }
        self.ranges = kept;
    }

    /// Every position of the other set taken out.
    pub(crate) fn remove_set(&mut self, other: &RangeSet) {
        for r in &other.ranges {
            self.remove(r.clone());
        }
    }

    /// The parts of `r` in the set.
    pub(crate) fn intersect(&self, r: Range<u64>) -> RangeSet {
        let ranges = self
            .ranges
            .iter()
            .filter(|x| x.start < r.end && r.start < x.end)
            .map(|x| x.start.max(r.start)..x.end.min(r.end))
            .collect();
        RangeSet { ranges }
    }

    /// The parts of `r` not in the set.
    pub(crate) fn missing(&self, r: Range<u64>) -> RangeSet {
        let mut m = RangeSet::of(r);
        m.remove_set(self);
        m
    }

    /// Whether every position of `r` is in the set (its ranges are sorted and merged, so one
    /// of them holds all of `r`).
    #[cfg(test)]
    pub(crate) fn contains(&self, r: Range<u64>) -> bool {
        if r.is_empty() {
            return true;
        }
        let i = self.ranges.partition_point(|x| x.start <= r.start);
        i > 0 && self.ranges[i - 1].end >= r.end
    }
}

/// A place an element can be fresh.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Loc {
    Host,
    /// A device, by its position in the session.
    Device(usize),
}

/// Where a buffer's elements are fresh.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Residency {
    len: u64,
    host: RangeSet,
    devices: Vec<RangeSet>,
    /// Fresh only on a device that failed: gone until written again.
    lost: RangeSet,
}

/// One move that brings part of a range to a device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Move {
    pub(crate) range: Range<u64>,
    pub(crate) from: Loc,
}

impl Residency {
    /// A buffer of `len` elements whose host image is fresh (new or just written).
    pub(crate) fn on_host(len: u64, devices: usize) -> Residency {
        Residency {
            len,
            host: RangeSet::of(0..len),
            devices: vec![RangeSet::new(); devices],
            lost: RangeSet::new(),
        }
    }

    fn set(&mut self, at: Loc) -> &mut RangeSet {
        match at {
            Loc::Host => &mut self.host,
            Loc::Device(d) => &mut self.devices[d],
        }
    }

    pub(crate) fn fresh(&self, at: Loc) -> &RangeSet {
        match at {
            Loc::Host => &self.host,
            Loc::Device(d) => &self.devices[d],
        }
    }

    /// What failed devices took with them and nothing has written since.
    pub(crate) fn lost(&self) -> &RangeSet {
        &self.lost
    }

    /// The parts of `r` not fresh at `at`.
    pub(crate) fn missing_at(&self, at: Loc, r: Range<u64>) -> RangeSet {
        match at {
            Loc::Host => self.host.missing(r),
            Loc::Device(d) => self.devices[d].missing(r),
        }
    }

    /// `r` was copied to `at` from a fresh copy: fresh there too.
    pub(crate) fn copied(&mut self, at: Loc, r: Range<u64>) {
        self.set(at).insert(r);
    }

    /// `r` was written at `at`: fresh there only, and no longer lost.
    pub(crate) fn written(&mut self, at: Loc, r: Range<u64>) {
        self.host.remove(r.clone());
        for d in &mut self.devices {
            d.remove(r.clone());
        }
        self.lost.remove(r.clone());
        self.set(at).insert(r);
    }

    /// `r` holds no value anyone may read: fresh nowhere, and lost until written again (an
    /// output range a failed launch was to write and did not).
    pub(crate) fn forget(&mut self, r: Range<u64>) {
        self.host.remove(r.clone());
        for d in &mut self.devices {
            d.remove(r.clone());
        }
        self.lost.insert(r);
    }

    /// The copy of `r` at `at` is about to change (a kernel writes it in place): not fresh there.
    pub(crate) fn invalidate(&mut self, at: Loc, r: Range<u64>) {
        self.set(at).remove(r);
    }

    /// The moves that make `r` fresh on device `to`: each missing part from the host where it is
    /// fresh there, else from the first device of `usable` that holds it. `Err` gives the parts
    /// fresh nowhere usable.
    pub(crate) fn plan_moves(
        &self,
        to: usize,
        r: Range<u64>,
        usable: impl Fn(usize) -> bool,
    ) -> Result<Vec<Move>, RangeSet> {
        let mut left = self.devices[to].missing(r);
        let mut moves = Vec::new();
        let take = |set: &RangeSet, left: &mut RangeSet, from: Loc, moves: &mut Vec<Move>| {
            for part in left.ranges().to_vec() {
                for x in set.intersect(part).ranges() {
                    moves.push(Move { range: x.clone(), from });
                }
            }
            left.remove_set(set);
        };
        take(&self.host, &mut left, Loc::Host, &mut moves);
        for (d, set) in self.devices.iter().enumerate() {
            if left.is_empty() {
                break;
            }
            if d != to && usable(d) {
                take(set, &mut left, Loc::Device(d), &mut moves);
            }
        }
        if left.is_empty() {
            moves.sort_by_key(|m| m.range.start);
            Ok(moves)
        } else {
            Err(left)
        }
    }

    /// The parts of `r` stale on the host, each with a usable device that holds it fresh.
    /// `Err` gives the parts fresh nowhere usable.
    pub(crate) fn plan_fetch(
        &self,
        r: Range<u64>,
        usable: impl Fn(usize) -> bool,
    ) -> Result<Vec<Move>, RangeSet> {
        let mut left = self.host.missing(r);
        let mut moves = Vec::new();
        for (d, set) in self.devices.iter().enumerate() {
            if left.is_empty() {
                break;
            }
            if !usable(d) {
                continue;
            }
            for part in left.ranges().to_vec() {
                for x in set.intersect(part).ranges() {
                    moves.push(Move { range: x.clone(), from: Loc::Device(d) });
                }
            }
            left.remove_set(set);
        }
        if left.is_empty() {
            moves.sort_by_key(|m| m.range.start);
            Ok(moves)
        } else {
            Err(left)
        }
    }

    /// The parts of `r` fresh on device `d` and nowhere else.
    pub(crate) fn only_on(&self, d: usize, r: Range<u64>) -> RangeSet {
        let mut only = self.devices[d].intersect(r);
        only.remove_set(&self.host);
        for (e, other) in self.devices.iter().enumerate() {
            if e != d {
                only.remove_set(other);
            }
        }
        only
    }

    /// Device `d` failed: whatever was fresh only there is lost. Returns what was lost now.
    pub(crate) fn drop_device(&mut self, d: usize) -> RangeSet {
        let mut only = std::mem::take(&mut self.devices[d]);
        only.remove_set(&self.host);
        for other in &self.devices {
            only.remove_set(other);
        }
        for r in only.ranges() {
            self.lost.insert(r.clone());
        }
        only
    }
}

#[cfg(test)]
#[allow(clippy::single_range_in_vec_init)] // a set of one range reads best as `&[a..b]`
mod tests {
    use super::*;

    fn set(rs: &[Range<u64>]) -> RangeSet {
        let mut s = RangeSet::new();
        for r in rs {
            s.insert(r.clone());
        }
        s
    }

    #[test]
    fn insert_merges_overlapping_and_touching_ranges() {
        let s = set(&[10..20, 30..40, 20..25, 5..8, 8..9]);
        assert_eq!(s.ranges(), &[5..9, 10..25, 30..40]);
        let s = set(&[10..20, 0..100]);
        assert_eq!(s.ranges(), &[0..100]);
        let s = set(&[10..20, 5..5]);
        assert_eq!(s.ranges(), &[10..20]);
        assert_eq!(set(&[1..3, 7..9]).count(), 4);
    }

    #[test]
    fn remove_splits_and_trims() {
        let mut s = set(&[0..100]);
        s.remove(10..20);
        assert_eq!(s.ranges(), &[0..10, 20..100]);
        s.remove(90..200);
        assert_eq!(s.ranges(), &[0..10, 20..90]);
        s.remove(0..10);
        assert_eq!(s.ranges(), &[20..90]);
        s.remove(0..1000);
        assert!(s.is_empty());
    }

    #[test]
    fn missing_intersect_and_contains() {
        let s = set(&[10..20, 30..40]);
        assert_eq!(s.missing(0..50).ranges(), &[0..10, 20..30, 40..50]);
        assert_eq!(s.intersect(15..35).ranges(), &[15..20, 30..35]);
        assert!(s.contains(12..18));
        assert!(!s.contains(12..25));
        assert!(s.contains(5..5));
    }

    #[test]
    fn a_write_leaves_one_fresh_copy() {
        let mut r = Residency::on_host(100, 2);
        r.copied(Loc::Device(0), 0..100);
        r.written(Loc::Device(1), 40..60);
        assert_eq!(r.fresh(Loc::Host).ranges(), &[0..40, 60..100]);
        assert_eq!(r.fresh(Loc::Device(0)).ranges(), &[0..40, 60..100]);
        assert_eq!(r.fresh(Loc::Device(1)).ranges(), &[40..60]);
    }

    #[test]
    fn moves_come_from_the_host_first_then_from_devices() {
        let mut r = Residency::on_host(100, 3);
        r.written(Loc::Device(1), 20..30);
        r.written(Loc::Device(2), 50..60);
        r.copied(Loc::Device(0), 0..10);
        let moves = r.plan_moves(0, 0..70, |_| true).unwrap();
        assert_eq!(
            moves,
            vec![
                Move { range: 10..20, from: Loc::Host },
                Move { range: 20..30, from: Loc::Device(1) },
                Move { range: 30..50, from: Loc::Host },
                Move { range: 50..60, from: Loc::Device(2) },
                Move { range: 60..70, from: Loc::Host },
            ]
        );
        // A device not usable (failed) is no source: its only copy is missing.
        assert_eq!(r.plan_moves(0, 0..70, |d| d != 2).unwrap_err().ranges(), &[50..60]);
        // Nothing to move when the device holds it.
        assert!(r.plan_moves(1, 20..30, |_| true).unwrap().is_empty());
    }

    #[test]
    fn a_failed_device_loses_only_what_no_one_else_holds() {
        let mut r = Residency::on_host(100, 2);
        r.copied(Loc::Device(0), 0..100);
        r.written(Loc::Device(0), 10..20);
        r.written(Loc::Device(1), 30..40);
        assert_eq!(r.only_on(0, 0..50).ranges(), &[10..20]);
        assert_eq!(r.only_on(1, 0..35).ranges(), &[30..35]);
        let lost = r.drop_device(0);
        assert_eq!(lost.ranges(), &[10..20]);
        assert_eq!(r.lost().ranges(), &[10..20]);
        assert_eq!(r.plan_fetch(0..100, |_| true).unwrap_err().ranges(), &[10..20]);
        // Writing the range again heals it.
        r.written(Loc::Host, 10..20);
        assert!(r.lost().is_empty());
        assert_eq!(
            r.plan_fetch(0..100, |_| true).unwrap(),
            vec![Move { range: 30..40, from: Loc::Device(1) }]
        );
    }

    #[test]
    fn a_forgotten_range_is_fresh_nowhere_and_lost_until_written() {
        let mut r = Residency::on_host(100, 2);
        r.copied(Loc::Device(0), 0..50);
        r.forget(20..40);
        assert!(r.missing_at(Loc::Host, 0..100).ranges() == [20..40]);
        assert!(r.missing_at(Loc::Device(0), 0..50).ranges() == [20..40]);
        assert_eq!(r.lost().ranges(), &[20..40]);
        assert_eq!(r.plan_moves(1, 15..25, |_| true), Err(RangeSet::of(20..25)));
        r.written(Loc::Device(1), 20..30);
        assert_eq!(r.lost().ranges(), &[30..40]);
    }
}
