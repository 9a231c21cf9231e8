//! A range's payload: the elements of its sliced inputs (rank 0 → the rank that runs it) or of
//! its outputs (back to rank 0). Over MPI they travel beside the small messages of
//! [`crate::wire`], one raw message per argument, sent from and received into the buffers the
//! bytes belong in, so that no side packs or unpacks them; between the threads of one rank
//! they travel inside the node's staging buffers, lent and then given back to a [`Spares`]
//! pool. Pure.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Mutex};

use hetdsl::{Error, Package, Pattern, Result};

use crate::spec::LaunchSpec;
use crate::wire::fits_one_message;

/// Which way a payload goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// Every sliced input (read, not `Whole`): rank 0 → the rank that runs the range.
    Inputs,
    /// Every output: back to rank 0.
    Outputs,
}

/// One argument's share of a payload: the argument and the bytes of its buffer it covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piece {
    pub arg: usize,
    pub bytes: Range<usize>,
}

/// The pieces of `package`'s payload on `side`, in argument order. Over MPI each is one raw
/// message of exactly `bytes.len()` bytes, in this order.
pub fn layout(spec: &LaunchSpec, package: Package, side: Side) -> Result<Vec<Piece>> {
    let carried = |i: usize| {
        let a = &spec.args[i];
        match side {
            Side::Inputs => a.kind.reads() && a.pattern != Some(Pattern::Whole),
            Side::Outputs => a.kind.writes(),
        }
    };
    (0..spec.args.len())
        .filter(|i| carried(*i))
        .map(|arg| Ok(Piece { arg, bytes: spec.byte_range(arg, package)? }))
        .collect()
}

/// Whether every piece fits one MPI message (the error names the first that does not).
pub fn fits(pieces: &[Piece]) -> Result<()> {
    pieces.iter().try_for_each(|p| fits_one_message(p.bytes.len()))
}

/// Bytes of all the pieces.
pub fn total(pieces: &[Piece]) -> u64 {
    pieces.iter().map(|p| p.bytes.len() as u64).sum()
}

/// The pieces' bytes inside `buffers`, one full-length buffer per piece in the same order (a
/// node's staging buffers): an error rather than a panic if one is missing or too short.
pub fn windows<'b>(pieces: &[Piece], buffers: &'b [Vec<u8>]) -> Result<Vec<&'b [u8]>> {
    if pieces.len() != buffers.len() {
        return Err(Error::BadConfig(format!(
            "{} buffers for a payload of {} pieces",
            buffers.len(),
            pieces.len()
        )));
    }
    pieces
        .iter()
        .zip(buffers)
        .map(|(p, b)| {
            b.get(p.bytes.clone()).ok_or_else(|| {
                Error::BadConfig(format!(
                    "argument {}: a buffer of {} bytes holds no bytes {:?}",
                    p.arg,
                    b.len(),
                    p.bytes
                ))
            })
        })
        .collect()
}

/// A payload received piece by piece: rank 0 receiving a rank's outputs after its `Done`, a
/// rank receiving an order's inputs after its `Run`.
#[derive(Debug, Clone)]
pub struct Incoming {
    pub package: Package,
    /// Put the pieces where they belong; `false`: receive and drop them (a lost rank's outputs,
    /// or any that arrive after the run ended).
    pub keep: bool,
    pieces: Vec<Piece>,
    next: usize,
}

impl Incoming {
    pub fn new(package: Package, pieces: Vec<Piece>, keep: bool) -> Self {
        Incoming { package, keep, pieces, next: 0 }
    }

    /// Where the next message, of `len` bytes, goes: the next piece if it is exactly that long.
    /// Otherwise an error naming the argument (a truncated or overlong payload). Either way the
    /// message is the next piece's, received: the pieces after it still line up.
    pub fn accept(&mut self, len: usize) -> Result<Piece> {
        let Some(piece) = self.pieces.get(self.next).cloned() else {
            return Err(Error::BadConfig(format!(
                "a message of {len} bytes after the {} pieces of {:?}",
                self.pieces.len(),
                self.package
            )));
        };
        self.next += 1;
        if len != piece.bytes.len() {
            return Err(Error::BadConfig(format!(
                "argument {}: {} bytes of {:?} arrived, {} expected",
                piece.arg,
                len,
                self.package,
                piece.bytes.len()
            )));
        }
        Ok(piece)
    }

    pub fn is_complete(&self) -> bool {
        self.next >= self.pieces.len()
    }

    /// Bytes of the whole payload.
    pub fn bytes(&self) -> u64 {
        total(&self.pieces)
    }
}

/// At most this many buffers wait in a pool: a node lends one per output and takes one per
/// sliced input each range, so a few cover any launch; beyond them, buffers are freed.
const POOL: usize = 16;

/// The most written ranges remembered per buffer; beyond, their hull stands for them.
const RANGES_PER_BUFFER: usize = 32;

/// Full-length staging buffers given back after their range's bytes were sent or merged, so
/// that the next range reuses them instead of having fresh memory mapped in page by page.
/// Each range writes only its own bytes of a buffer, so a pool holds no more touched memory
/// than one staging buffer per argument would. A [`crate::Cluster`] keeps its pool from one
/// call to the next: memory first written costs a page fault per page (1-1.3 GB/s measured
/// on the 2-core build machine, against 5 GB/s for a copy into touched pages), which a
/// remote rank paid on every range's inputs and outputs of every call. So a range takes the
/// buffer that has had most of its bytes written before: a plan's next call cuts the same
/// ranges, and then finds each one's pages already there.
#[derive(Debug, Clone, Default)]
pub struct Spares(Arc<Mutex<Pool>>);

#[derive(Debug, Default)]
struct Pool {
    free: Vec<Vec<u8>>,
    /// Per buffer handed out by [`Spares::take`] (by address), the byte ranges written to it
    /// so far, sorted and merged. Only a hint: a buffer freed elsewhere leaves its entry,
    /// which a later buffer at that address inherits until the pool prunes it.
    written: HashMap<usize, Vec<Range<usize>>>,
}

impl Pool {
    /// The bytes of `want` already written in `buffer`.
    fn overlap(&self, buffer: &[u8], want: &Range<usize>) -> usize {
        let ranges = self.written.get(&(buffer.as_ptr() as usize));
        (ranges.into_iter().flatten())
            .map(|r| r.end.min(want.end).saturating_sub(r.start.max(want.start)))
            .sum()
    }

    fn note(&mut self, buffer: &[u8], bytes: Range<usize>) {
        if self.written.len() > 4 * POOL {
            // Entries of buffers freed elsewhere: keep those of the buffers waiting here.
            let live: Vec<usize> = self.free.iter().map(|b| b.as_ptr() as usize).collect();
            self.written.retain(|k, _| live.contains(k));
        }
        let ranges = self.written.entry(buffer.as_ptr() as usize).or_default();
        ranges.push(bytes);
        *ranges = merged(std::mem::take(ranges));
        if ranges.len() > RANGES_PER_BUFFER {
            let hull = ranges[0].start..ranges[ranges.len() - 1].end;
            *ranges = vec![hull];
        }
    }

    fn forget(&mut self, buffer: &[u8]) {
        self.written.remove(&(buffer.as_ptr() as usize));
    }
}

/// `ranges` sorted, with overlapping or touching ones merged.
fn merged(mut ranges: Vec<Range<usize>>) -> Vec<Range<usize>> {
    ranges.sort_by_key(|r| r.start);
    let mut out: Vec<Range<usize>> = Vec::with_capacity(ranges.len());
    for r in ranges.into_iter().filter(|r| r.end > r.start) {
        match out.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => out.push(r),
        }
    }
    out
}

impl Spares {
    fn pool(&self) -> std::sync::MutexGuard<'_, Pool> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A buffer of exactly `len` bytes, whose `bytes` the taker is about to write: of those
    /// given back, the one with most of `bytes` written before, or else a new zeroed one
    /// (whose pages the system maps only when they are first written).
    pub fn take(&self, len: usize, bytes: Range<usize>) -> Vec<u8> {
        let mut pool = self.pool();
        let best = (pool.free.iter().enumerate())
            .filter(|(_, b)| b.len() == len)
            .max_by_key(|(_, b)| pool.overlap(b, &bytes))
            .map(|(i, _)| i);
        let buffer = match best {
            Some(i) => pool.free.swap_remove(i),
            None => {
                let fresh = vec![0; len];
                pool.forget(&fresh);
                fresh
            }
        };
        pool.note(&buffer, bytes);
        buffer
    }

    pub fn give(&self, buffer: Vec<u8>) {
        let mut pool = self.pool();
        if buffer.is_empty() {
            return;
        }
        if pool.free.len() < POOL {
            pool.free.push(buffer);
        } else {
            pool.forget(&buffer);
        }
    }

    pub fn give_all(&self, buffers: impl IntoIterator<Item = Vec<u8>>) {
        buffers.into_iter().for_each(|b| self.give(b));
    }

    /// Frees every buffer whose length is not in `lengths` (a new launch's buffer lengths): a
    /// pool kept across calls holds only what the launch at hand may take.
    pub fn keep_lengths(&self, lengths: &[usize]) {
        let mut pool = self.pool();
        let (keep, drop): (Vec<_>, Vec<_>) =
            std::mem::take(&mut pool.free).into_iter().partition(|b| lengths.contains(&b.len()));
        drop.iter().for_each(|b| pool.forget(b));
        pool.free = keep;
    }

    /// Frees every buffer.
    pub fn clear(&self) {
        let mut pool = self.pool();
        pool.free.clear();
        pool.written.clear();
    }

    /// Buffers waiting in the pool.
    pub fn len(&self) -> usize {
        self.pool().free.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{ArgKind, ArgSpec};

    fn buffer(kind: ArgKind, elem: u64, len: u64, pattern: Pattern) -> ArgSpec {
        ArgSpec { kind, elem, len, pattern: Some(pattern), value: Vec::new() }
    }

    /// 1024 work-items in groups of 64: a sliced input, a `whole` input, a scalar, an output of
    /// four 2-byte elements per item and an inout of one 4-byte element per item.
    fn spec() -> LaunchSpec {
        LaunchSpec {
            kernel: "k".into(),
            global: vec![1024],
            local: vec![64],
            args: vec![
                buffer(ArgKind::In, 4, 1024, Pattern::ONE_TO_ONE),
                buffer(ArgKind::In, 8, 10, Pattern::Whole),
                ArgSpec {
                    kind: ArgKind::Scalar,
                    elem: 0,
                    len: 0,
                    pattern: None,
                    value: vec![1; 4],
                },
                buffer(ArgKind::Out, 2, 4096, Pattern::ratio(4, 1).unwrap()),
                buffer(ArgKind::InOut, 4, 1024, Pattern::ONE_TO_ONE),
            ],
        }
    }

    #[test]
    fn a_payload_holds_each_carried_argument_at_its_own_offsets() {
        let p = Package { offset: 3, len: 2 }; // work-items 192..320
        let inputs = layout(&spec(), p, Side::Inputs).unwrap();
        let ins = [Piece { arg: 0, bytes: 768..1280 }, Piece { arg: 4, bytes: 768..1280 }];
        assert_eq!(inputs, ins);
        let outputs = layout(&spec(), p, Side::Outputs).unwrap();
        let outs = [Piece { arg: 3, bytes: 1536..2560 }, Piece { arg: 4, bytes: 768..1280 }];
        assert_eq!(outputs, outs);
        assert_eq!(total(&outputs), 1024 + 512);
        fits(&outputs).unwrap();
        let huge = [Piece { arg: 0, bytes: 0..i32::MAX as usize + 1 }];
        assert!(fits(&huge).is_err());
    }

    /// A rank's outputs, laid out by `layout`, sent piece by piece from its staging buffers and
    /// received into rank 0's: every byte lands where it belongs and nowhere else.
    #[test]
    fn outputs_go_from_staging_to_their_place_and_nowhere_else() {
        let spec = spec();
        let p = Package { offset: 5, len: 7 };
        let pieces = layout(&spec, p, Side::Outputs).unwrap();
        let staging: Vec<Vec<u8>> = pieces
            .iter()
            .map(|piece| {
                let len = spec.args[piece.arg].bytes() as usize;
                (0..len).map(|i| (i * 31 + piece.arg) as u8 | 1).collect()
            })
            .collect();
        let sent = windows(&pieces, &staging).unwrap();
        let mut host: Vec<Vec<u8>> =
            spec.args.iter().map(|a| vec![0u8; a.bytes() as usize]).collect();
        let mut incoming = Incoming::new(p, pieces.clone(), true);
        assert_eq!(incoming.bytes(), total(&pieces));
        for message in &sent {
            assert!(!incoming.is_complete());
            let piece = incoming.accept(message.len()).unwrap();
            host[piece.arg][piece.bytes.clone()].copy_from_slice(message);
        }
        assert!(incoming.is_complete());
        for (piece, stage) in pieces.iter().zip(&staging) {
            let got = &host[piece.arg];
            assert_eq!(&got[piece.bytes.clone()], &stage[piece.bytes.clone()]);
            assert!(got[..piece.bytes.start]
                .iter()
                .chain(&got[piece.bytes.end..])
                .all(|b| *b == 0));
        }
        assert!(incoming.accept(4).is_err(), "a message past the payload");
    }

    #[test]
    fn a_truncated_or_overlong_piece_is_an_error_and_the_next_still_lines_up() {
        let p = Package { offset: 0, len: 4 };
        let pieces = layout(&spec(), p, Side::Outputs).unwrap();
        let mut incoming = Incoming::new(p, pieces.clone(), true);
        let e = incoming.accept(pieces[0].bytes.len() - 1).unwrap_err();
        assert!(e.to_string().contains("argument 3"), "{e}");
        assert_eq!(incoming.accept(pieces[1].bytes.len()).unwrap(), pieces[1]);
        assert!(incoming.is_complete());
        let mut incoming = Incoming::new(p, pieces.clone(), true);
        assert!(incoming.accept(pieces[0].bytes.len() + 1).is_err());
    }

    #[test]
    fn windows_refuse_missing_or_short_buffers() {
        let p = Package { offset: 2, len: 2 };
        let pieces = layout(&spec(), p, Side::Outputs).unwrap();
        let full = vec![vec![0u8; 8192], vec![0u8; 4096]];
        let w = windows(&pieces, &full).unwrap();
        assert_eq!((w[0].len(), w[1].len()), (1024, 512));
        assert!(windows(&pieces, &full[..1]).is_err());
        let short = vec![vec![0u8; 8192], vec![0u8; 700]];
        assert!(windows(&pieces, &short).is_err());
    }

    #[test]
    fn spares_hand_back_a_buffer_of_the_length_asked_for() {
        let spares = Spares::default();
        let mut a = spares.take(100, 0..100);
        assert_eq!(a.len(), 100);
        a[7] = 7;
        spares.give(a);
        spares.give(Vec::new());
        assert_eq!(spares.len(), 1);
        assert_eq!(spares.take(50, 0..50).len(), 50);
        let again = spares.take(100, 0..10);
        assert_eq!(again[7], 7, "the buffer given back");
        assert!(spares.is_empty());
        spares.give_all((0..POOL + 4).map(|_| vec![0u8; 8]));
        assert_eq!(spares.len(), POOL);
    }

    /// A range goes to the buffer that has most of its bytes written already.
    #[test]
    fn spares_give_a_range_the_buffer_it_was_written_in() {
        let spares = Spares::default();
        let (mut low, mut high) = (spares.take(1000, 0..400), spares.take(1000, 600..1000));
        (low[0], high[0]) = (1, 2);
        spares.give_all([low, high]);
        let high = spares.take(1000, 650..900);
        assert_eq!(high[0], 2, "inside the high range");
        spares.give(high);
        let low = spares.take(1000, 300..550);
        assert_eq!(low[0], 1, "100 bytes written before in the low buffer, none in the high");
        assert_eq!(spares.take(1000, 0..10)[0], 2, "none written: still one given back");
        assert!(spares.is_empty());
    }

    #[test]
    fn written_ranges_merge() {
        assert_eq!(merged(vec![5..9, 0..2, 2..3, 8..12, 20..20]), vec![0..3, 5..12]);
    }

    #[test]
    fn spares_keep_only_the_lengths_asked_for() {
        let spares = Spares::default();
        spares.give_all([vec![1u8; 8], vec![2u8; 16], vec![3u8; 8], vec![4u8; 32]]);
        spares.keep_lengths(&[8, 32]);
        assert_eq!(spares.len(), 3);
        assert_eq!(spares.take(16, 0..16), vec![0u8; 16], "freed: a new buffer");
        let mut eights = [spares.take(8, 0..8)[0], spares.take(8, 0..8)[0]];
        eights.sort();
        assert_eq!(eights, [1, 3]);
        assert_eq!(spares.take(32, 0..32)[0], 4);
        assert!(spares.is_empty());
        spares.give(vec![0u8; 8]);
        spares.clear();
        assert!(spares.is_empty());
    }
}
