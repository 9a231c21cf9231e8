//! A launch's first package on each device, checked for writes outside its range.
//!
//! A split output (`1:1`, `4:1` …) is read back package by package, each package's own elements
//! only: a kernel that writes elsewhere (a transpose declared `1:1`, a permutation, a strided or
//! off-by-one index) loses those writes, and the run returned `Ok` with wrong elements. Before a
//! device's first package of a launch not yet checked, bytes of each split output outside the
//! package's range are set to a marker, and read again once its kernel ends; a changed byte ends
//! the run with [`Error::BadArgument`] naming the buffer and the element. The bytes checked are
//! those next to the range and to the buffer's ends (a shifted index, a flag at element 0) and a
//! lattice over the rest (a scatter over the whole buffer), so the check costs a few small
//! transfers on one package per device, once per launch of a program.

use std::ops::Range;

use opencl3::event::Event;
use opencl3::types::CL_NON_BLOCKING;

use super::job::{Device, Job};
use crate::error::Error;
use crate::pattern::Pattern;
use crate::work::{DeviceKind, Package};

/// What the checked bytes are set to: a stray write of exactly this byte goes unseen.
pub(in crate::engine) const MARKER: u8 = 0xA5;

/// Bytes checked on each side of the package's range and at each end of the buffer.
const MARGIN: usize = 4096;

/// Points of the lattice over the buffer, and the bytes checked at each (each region is two
/// commands: on a CPU device each costs tens of microseconds).
const LATTICE: usize = 32;
const POINT: usize = 256;

/// The checked bytes of one device's first package: per buffer (its position on the device),
/// the byte ranges set to the marker.
pub(super) struct Probe {
    package: Package,
    regions: Vec<(usize, Range<usize>)>,
    /// A checked buffer is also written by the host (`inout`): the next package's input
    /// writes could reach its marked bytes, so the next package waits for the check.
    pub(super) inout: bool,
    /// The marked bytes as the kernel left them, read on the compute queue right behind it
    /// (so before any later kernel of this device), and the reads.
    seen: Vec<Vec<u8>>,
    reads: Vec<Event>,
}

/// Set the checked bytes of every split output outside package `p` (in the NDRange's units,
/// as the coordinator gives it) to the marker, on the compute queue ahead of its kernel. `None`
/// where nothing is to be checked.
pub(super) fn arm(
    job: &Job,
    d: &mut Device,
    p: Package,
) -> std::result::Result<Option<Probe>, opencl3::error_codes::ClError> {
    let package = job.absolute(p);
    let (mut regions, mut inout) = (Vec::new(), false);
    for (i, b) in d.buffers.iter().enumerate() {
        if !b.dir.writes() || b.pattern == Pattern::Whole || b.reduce.is_some() {
            continue;
        }
        let own = b.bytes(&job.geo, package);
        for r in outside(b.host.len, &own) {
            inout |= b.dir.reads();
            regions.push((i, r));
        }
    }
    for (i, r) in &regions {
        // SAFETY: the range lies within the buffer (`outside` keeps to `host.len`, the
        // buffer's size); the compute queue is in order, so the fill precedes the kernel.
        unsafe {
            d.compute.enqueue_fill_buffer(
                &mut d.buffers[*i].buffer,
                &[MARKER],
                r.start,
                r.len(),
                &[],
            )
        }?;
    }
    let (seen, reads) = (Vec::new(), Vec::new());
    Ok((!regions.is_empty()).then_some(Probe { package, regions, inout, seen, reads }))
}

/// Once the package's kernel is queued: read the marked bytes right behind it.
pub(super) fn capture(
    d: &Device,
    probe: &mut Probe,
) -> std::result::Result<(), opencl3::error_codes::ClError> {
    probe.seen = probe.regions.iter().map(|(_, r)| vec![0u8; r.len()]).collect();
    for ((i, r), into) in probe.regions.iter().zip(probe.seen.iter_mut()) {
        // SAFETY: bytes within the buffer into a vector of their length, whose heap memory
        // stays where it is (the vector is never resized) until `check` has waited for it.
        let read = unsafe {
            d.compute.enqueue_read_buffer(
                &d.buffers[*i].buffer,
                CL_NON_BLOCKING,
                r.start,
                into,
                &[],
            )
        }?;
        probe.reads.push(read);
    }
    d.compute.flush()
}

/// Once the package's kernel has ended: `Err` naming the first checked byte it changed.
pub(super) fn check(job: &Job, d: &Device, probe: &Probe) -> std::result::Result<(), Error> {
    // A read that fails is the device's failure, which its next command reports.
    if probe.reads.iter().any(|e| e.wait().is_err()) {
        return Ok(());
    }
    for ((i, r), seen) in probe.regions.iter().zip(&probe.seen) {
        let b = &d.buffers[*i];
        let Some(k) = seen.iter().position(|&x| x != MARKER) else { continue };
        let own = b.bytes(&job.geo, probe.package);
        let elem = b.elem;
        let own = (own.start / elem) as u64..(own.end / elem) as u64;
        return Err(refusal(b.arg, r.start + k, elem, own, b.pattern, probe.package));
    }
    Ok(())
}

/// Whether a launch checks a device of kind `kind` among devices of kinds `all`: a kernel
/// scatters on every device, so where a GPU takes part the CPU's first package (whose marks
/// cost it a command each) is not checked.
pub(in crate::engine) fn checks(
    kind: DeviceKind,
    mut all: impl Iterator<Item = DeviceKind>,
) -> bool {
    kind != DeviceKind::Cpu || all.all(|k| k == DeviceKind::Cpu)
}

/// The error for a kernel that wrote byte `at` (of elements of `elem` bytes) of buffer
/// argument `arg`, outside elements `own`, which `pattern` gives package `p`.
pub(in crate::engine) fn refusal(
    arg: usize,
    at: usize,
    elem: usize,
    own: Range<u64>,
    pattern: Pattern,
    p: Package,
) -> Error {
    let reason = format!(
        "the kernel wrote element {} of this buffer (byte {at}), outside elements {}..{}, which \
         pattern {pattern} gives the package of work-groups {}..{} that wrote it: a split output \
         is read back package by package, so writes outside a package's own range (a \
         transpose, a permutation, a strided or shifted index) are lost; let each work-item \
         write the elements of its own range (say, run the NDRange over the output), or \
         declare the buffer `whole` merged by \"sum\" over zeros (each element written by one \
         work-item)",
        at / elem,
        own.start,
        own.end,
        p.offset,
        p.end(),
    );
    Error::BadArgument { index: arg, reason }
}

/// The bytes of a buffer of `len` checked outside `own`: next to it, at both ends, and on a
/// lattice, merged and in order.
pub(in crate::engine) fn outside(len: usize, own: &Range<usize>) -> Vec<Range<usize>> {
    if own.start == 0 && own.end >= len {
        return Vec::new();
    }
    let mut wanted = vec![
        own.start.saturating_sub(MARGIN)..own.start,
        own.end..own.end.saturating_add(MARGIN),
        0..MARGIN,
        len.saturating_sub(MARGIN)..len,
    ];
    wanted.extend((0..LATTICE).map(|k| {
        let at = len / LATTICE * k;
        at..at + POINT
    }));
    let mut cut: Vec<Range<usize>> = Vec::new();
    for r in wanted {
        let r = r.start.min(len)..r.end.min(len);
        // The parts of `r` before and after `own`.
        for part in [r.start..r.end.min(own.start), r.start.max(own.end)..r.end] {
            if !part.is_empty() {
                cut.push(part);
            }
        }
    }
    cut.sort_by_key(|r| r.start);
    let mut merged: Vec<Range<usize>> = Vec::new();
    for r in cut {
        match merged.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => merged.push(r),
        }
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checked_bytes_surround_the_range_and_cover_the_buffer_without_touching_it() {
        let len = 1 << 20;
        let own = 300_000..400_000;
        let r = outside(len, &own);
        assert!(r.iter().all(|x| x.end <= own.start || x.start >= own.end), "{r:?}");
        assert!(r.windows(2).all(|w| w[0].end < w[1].start), "merged and ordered: {r:?}");
        for must in [own.start - 1, own.end, 0, len - 1, own.start - MARGIN, own.end + MARGIN - 1] {
            assert!(r.iter().any(|x| x.contains(&must)), "{must} in {r:?}");
        }
        // A lattice point every len / LATTICE bytes outside the range.
        let points = (0..LATTICE).map(|k| len / LATTICE * k).filter(|a| !own.contains(a));
        assert!(points.clone().count() > LATTICE / 2);
        for a in points {
            assert!(r.iter().any(|x| x.contains(&a)), "{a} in {r:?}");
        }
        assert!(outside(len, &(0..len)).is_empty(), "a package over the whole buffer");
        // A buffer smaller than the margins: everything outside the range.
        assert_eq!(outside(100, &(40..60)), vec![0..40, 60..100]);
    }
}
