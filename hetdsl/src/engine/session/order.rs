//! The order of a queued launch's work on each device, and what a move out of a device waits
//! for. Where another device read part of a block's output at the last move (a halo row, say),
//! the units that write it are split off the block's ends and run first; a later move of that
//! range then waits only for the package that wrote it, not for the device's last kernel, so
//! the host stages the next launch's moves while the rest of the block still computes. What a
//! queued launch leaves fresh where is recorded when it is queued (`mark_fresh`), and what its
//! packages read (`reads`): a move into a device waits only for the queued package there that
//! last reads or writes the range it fills, so it runs beside the kernels before it.

use std::ops::Range;
use std::sync::Arc;

use super::buffer::BufferCore;
use super::residency::Loc;
use super::worker::{Plan, SArg};
use crate::engine::worker::fill_units;
use crate::pattern::Direction;
use crate::work::Package;

/// A range of a buffer that a queued launch made fresh on one of its devices.
pub(super) struct Touch {
    /// The launch position of the device.
    pub(super) pos: usize,
    /// The buffer (its index in the session).
    pub(super) buffer: usize,
    pub(super) range: Range<u64>,
    /// The package (its index in the position's queue order) that wrote it; 0 for a range
    /// moved in, which the position's first kernel follows on its in-order queue.
    pub(super) package: usize,
}

/// What each position's packages write, in queue order, and the ranges moved in.
pub(super) fn touches(
    plan: &Plan,
    blocks: &[Vec<Package>],
    arrivals: impl Iterator<Item = (usize, usize, Range<u64>)>,
) -> Vec<Touch> {
    let mut out: Vec<Touch> =
        arrivals.map(|(pos, buffer, range)| Touch { pos, buffer, range, package: 0 }).collect();
    out.extend(accesses(plan, blocks, Direction::writes));
    out
}

/// What each position's packages read, in queue order (halos included): a move into one of
/// these ranges on that device waits for the package that reads it.
pub(super) fn reads(plan: &Plan, blocks: &[Vec<Package>]) -> Vec<Touch> {
    accesses(plan, blocks, Direction::reads)
}

/// The range of every buffer argument whose direction passes `counts`, per package of each
/// position, in queue order.
fn accesses(plan: &Plan, blocks: &[Vec<Package>], counts: fn(Direction) -> bool) -> Vec<Touch> {
    let mut out = Vec::new();
    for (pos, packages) in blocks.iter().enumerate() {
        for a in &plan.args {
            let SArg::Buffer { core, pattern, dir, .. } = a else { continue };
            if !counts(*dir) {
                continue;
            }
            for (package, &p) in packages.iter().enumerate() {
                let range = plan.range(core, *pattern, p);
                out.push(Touch { pos, buffer: core.index, range, package });
            }
        }
    }
    out
}

/// The last package of position `pos` (queue order) after which `range` of `buffer` is final
/// there, if the launch touched it at all.
pub(super) fn last_touch(
    touched: &[Touch],
    pos: usize,
    buffer: usize,
    range: &Range<u64>,
) -> Option<usize> {
    touched
        .iter()
        .filter(|t| t.pos == pos && t.buffer == buffer)
        .filter(|t| t.range.start < range.end && range.start < t.range.end)
        .map(|t| t.package)
        .max()
}

/// The last package of position `pos` (queue order) that reads (`reads`) or writes
/// (`touched`) any of `range` of `buffer`: after it, a move may fill that range there.
pub(super) fn last_access(
    touched: &[Touch],
    reads: &[Touch],
    pos: usize,
    buffer: usize,
    range: &Range<u64>,
) -> Option<usize> {
    last_touch(touched, pos, buffer, range).max(last_touch(reads, pos, buffer, range))
}

/// Each block with the units at its ends whose output another device read at the last move
/// out of this device (the buffer's `sent` ranges) split off and queued first. A block keeps
/// its shape when nothing at its ends was read elsewhere, when what was read reaches past
/// an eighth of it from an end (an all-gather: a split would only add kernels), or when it
/// holds under [`SPLIT_FILLS`] fills of its device.
pub(super) fn edges_first(plan: &Plan, blocks: Vec<Vec<Package>>) -> Vec<Vec<Package>> {
    blocks
        .into_iter()
        .zip(&plan.slots)
        .map(|(packages, &slot)| {
            let sent: Vec<_> = plan
                .args
                .iter()
                .filter_map(|a| match a {
                    SArg::Buffer { core, pattern, dir, .. } if dir.writes() => {
                        let sent = core.lock().sent[slot].clone();
                        (!sent.is_empty()).then_some((core, *pattern, sent))
                    }
                    _ => None,
                })
                .collect();
            if sent.is_empty() {
                return packages;
            }
            // The fill with no local memory is the largest the kernel can have: a block under
            // that many fills surely stays whole.
            let fill = fill_units(&plan.devices.list[slot].device, &plan.geo, &plan.kernel, 0);
            let read_elsewhere = |unit: u64| {
                let p = Package { offset: unit, len: 1 };
                sent.iter().any(|(core, pattern, s)| {
                    !s.intersect(plan.range(core, *pattern, p)).is_empty()
                })
            };
            packages.into_iter().flat_map(|p| split(p, fill, &read_elsewhere)).collect()
        })
        .collect()
}

/// Each piece of a split block is a kernel of its own, and may end in a partial wave of its
/// device: a block is split only when it holds this many fills (units a device runs at once),
/// so that its two extra waves cost at most an eighth of it. NBody's forces, 512 work-
/// groups on an H100 (under one fill), took 20 ms split in two against 10 ms whole.
const SPLIT_FILLS: u64 = 16;

/// `p` as its read-elsewhere front units, back units and the rest, in that order; whole if it
/// holds under [`SPLIT_FILLS`] times `fill` units.
fn split(p: Package, fill: u64, read_elsewhere: &impl Fn(u64) -> bool) -> Vec<Package> {
    if p.len < SPLIT_FILLS * fill {
        return vec![p];
    }
    let cap = p.len / 8;
    let front = (0..=cap).take_while(|&i| read_elsewhere(p.offset + i)).count() as u64;
    let back = (0..=cap).take_while(|&i| read_elsewhere(p.end() - 1 - i)).count() as u64;
    if front > cap || back > cap || front + back == 0 {
        return vec![p];
    }
    let mut out = Vec::with_capacity(3);
    if front > 0 {
        out.push(Package { offset: p.offset, len: front });
    }
    if back > 0 {
        out.push(Package { offset: p.end() - back, len: back });
    }
    out.push(Package { offset: p.offset + front, len: p.len - front - back });
    out
}

/// What a queued launch leaves fresh where, as if it had already run (later launches and moves
/// are ordered after it): the ranges moved in on their receivers, each block's outputs on its
/// device alone.
pub(super) fn mark_fresh(
    plan: &Plan,
    blocks: &[Vec<Package>],
    arrivals: Vec<(Arc<BufferCore>, usize, Range<u64>)>,
) {
    for (core, pos, range) in arrivals {
        core.lock().res.copied(Loc::Device(plan.slots[pos]), range);
    }
    for (pos, packages) in blocks.iter().enumerate() {
        for a in &plan.args {
            let SArg::Buffer { core, pattern, dir, .. } = a else { continue };
            if dir.writes() {
                let mut st = core.lock();
                for &p in packages {
                    st.res.written(Loc::Device(plan.slots[pos]), plan.range(core, *pattern, p));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkg(offset: u64, len: u64) -> Package {
        Package { offset, len }
    }

    #[test]
    fn ends_read_elsewhere_go_first_and_the_pieces_tile_the_block() {
        // Units 100..164; units 100 and 162, 163 were read elsewhere.
        let read = |u: u64| u == 100 || u >= 162;
        let parts = split(pkg(100, 64), 1, &read);
        assert_eq!(parts, vec![pkg(100, 1), pkg(162, 2), pkg(101, 61)]);
        let read = |u: u64| u == 163;
        assert_eq!(split(pkg(100, 64), 1, &read), vec![pkg(163, 1), pkg(100, 63)]);
    }

    #[test]
    fn a_block_stays_whole_when_nothing_or_too_much_of_it_was_read() {
        assert_eq!(split(pkg(0, 64), 1, &|_| false), vec![pkg(0, 64)]);
        // An all-gather: every unit read elsewhere.
        assert_eq!(split(pkg(0, 64), 1, &|_| true), vec![pkg(0, 64)]);
        // More than an eighth from one end.
        assert_eq!(split(pkg(0, 64), 1, &|u| u < 9), vec![pkg(0, 64)]);
        // Too small a block to split at all.
        assert_eq!(split(pkg(0, 7), 1, &|u| u == 0), vec![pkg(0, 7)]);
    }

    #[test]
    fn a_block_under_sixteen_fills_stays_whole() {
        // 512 units on a device running 1056 at once (NBody's forces on an H100): one wave
        // whole, two waves split.
        assert_eq!(split(pkg(512, 512), 1056, &|u| u < 528), vec![pkg(512, 512)]);
        assert_eq!(split(pkg(0, 159), 10, &|u| u == 0), vec![pkg(0, 159)]);
        assert_eq!(split(pkg(0, 160), 10, &|u| u == 0), vec![pkg(0, 1), pkg(1, 159)]);
    }

    #[test]
    fn the_last_touch_is_the_latest_package_overlapping_the_range() {
        let t = |pos, buffer, range, package| Touch { pos, buffer, range, package };
        let touched =
            vec![t(0, 1, 50..60, 0), t(0, 1, 0..10, 1), t(0, 1, 10..50, 2), t(1, 1, 60..90, 0)];
        assert_eq!(last_touch(&touched, 0, 1, &(5..8)), Some(1));
        assert_eq!(last_touch(&touched, 0, 1, &(5..55)), Some(2));
        assert_eq!(last_touch(&touched, 0, 1, &(55..58)), Some(0));
        assert_eq!(last_touch(&touched, 0, 1, &(60..70)), None);
        assert_eq!(last_touch(&touched, 0, 2, &(5..8)), None);
        assert_eq!(last_touch(&touched, 1, 1, &(60..61)), Some(0));
    }

    #[test]
    fn a_move_in_waits_for_the_last_package_that_reads_or_writes_its_range() {
        let t = |pos, buffer, range, package| Touch { pos, buffer, range, package };
        // Position 0 wrote 0..10 in its package 0 and reads 0..40 (halos included) in its
        // package 2; position 1 reads 30..50 in its package 0.
        let touched = vec![t(0, 1, 0..10, 0), t(0, 1, 10..30, 1)];
        let reads = vec![t(0, 1, 0..40, 2), t(1, 1, 30..50, 0)];
        assert_eq!(last_access(&touched, &reads, 0, 1, &(5..8)), Some(2), "read after written");
        assert_eq!(last_access(&touched, &reads, 0, 1, &(35..38)), Some(2), "read only");
        assert_eq!(last_access(&touched, &[], 0, 1, &(35..38)), None);
        assert_eq!(last_access(&touched, &reads, 0, 1, &(40..45)), None, "untouched there");
        assert_eq!(last_access(&touched, &reads, 1, 1, &(45..46)), Some(0));
        assert_eq!(last_access(&touched, &reads, 0, 2, &(5..8)), None, "another buffer");
    }
}
