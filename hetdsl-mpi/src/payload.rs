//! A range's payload: the elements of its sliced inputs (rank 0 → the rank that runs it) or of
//! its outputs (back to rank 0). Over MPI they travel beside the small messages of
//! [`crate::wire`], one raw message per argument, sent from and received into the buffers the
//! bytes belong in, so that no side packs or unpacks them; between the threads of one rank
//! they travel inside the node's staging buffers, lent and then given back to a [`Spares`]
//! pool. A staging buffer holds one piece's bytes from its start (it may be longer: the rest
//! is left from earlier use). Pure.

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

/// The pieces' bytes inside `buffers`, one staging buffer per piece in the same order, each
/// holding its piece's bytes from its start: an error rather than a panic if one is missing or
/// too short.
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
            b.get(..p.bytes.len()).ok_or_else(|| {
                Error::BadConfig(format!(
                    "argument {}: a buffer of {} bytes cannot hold bytes {:?}",
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

/// Staging buffers given back after their range's bytes were sent or merged, so that the next
/// range reuses them instead of having fresh memory mapped in page by page. A buffer is as
/// long as the longest piece it held, every byte of it written, and serves any piece up to
/// that length. A `Cluster` (with the `mpi` feature) keeps its pool from one call to the
/// next: memory first written costs a page fault per page (1-1.3 GB/s measured on the 2-core
/// build machine, against 5 GB/s for a copy into pages written before), which a remote rank
/// otherwise paid on every range's inputs and outputs of every call.
#[derive(Debug, Clone, Default)]
pub struct Spares(Arc<Mutex<Vec<Vec<u8>>>>);

impl Spares {
    fn pool(&self) -> std::sync::MutexGuard<'_, Vec<Vec<u8>>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A buffer of at least `len` bytes to hold a piece from its start: the shortest given back
    /// that is long enough, else the longest grown to `len` (only the added bytes are new
    /// pages), else a new zeroed one (whose pages the system maps as they are first written).
    pub fn take(&self, len: usize) -> Vec<u8> {
        let mut pool = self.pool();
        let fits = (pool.iter().enumerate())
            .filter(|(_, b)| b.len() >= len)
            .min_by_key(|(_, b)| b.len())
            .map(|(i, _)| i);
        let grown = || (pool.iter().enumerate()).max_by_key(|(_, b)| b.len()).map(|(i, _)| i);
        match fits.or_else(grown) {
            Some(i) => {
                let mut buffer = pool.swap_remove(i);
                if buffer.len() < len {
                    buffer.resize(len, 0);
                }
                buffer
            }
            None => vec![0; len],
        }
    }

    pub fn give(&self, buffer: Vec<u8>) {
        let mut pool = self.pool();
        if !buffer.is_empty() && pool.len() < POOL {
            pool.push(buffer);
        }
    }

    pub fn give_all(&self, buffers: impl IntoIterator<Item = Vec<u8>>) {
        buffers.into_iter().for_each(|b| self.give(b));
    }

    /// Frees every buffer.
    pub fn clear(&self) {
        self.pool().clear();
    }

    /// Buffers waiting in the pool.
    pub fn len(&self) -> usize {
        self.pool().len()
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
        // Each piece's bytes from its buffer's start, and more after them (left from before).
        let staging: Vec<Vec<u8>> = pieces
            .iter()
            .map(|piece| {
                (0..piece.bytes.len() + 100).map(|i| (i * 31 + piece.arg) as u8 | 1).collect()
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
            assert_eq!(&got[piece.bytes.clone()], &stage[..piece.bytes.len()]);
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
        let long = vec![vec![0u8; 8192], vec![0u8; 4096]];
        let w = windows(&pieces, &long).unwrap();
        assert_eq!((w[0].len(), w[1].len()), (1024, 512));
        assert!(windows(&pieces, &long[..1]).is_err());
        let short = vec![vec![0u8; 1024], vec![0u8; 511]];
        assert!(windows(&pieces, &short).is_err());
    }

    /// A piece gets the shortest buffer long enough, else the longest grown: every byte it
    /// hands out was written before, but for a grown buffer's new end.
    #[test]
    fn spares_hand_back_the_shortest_buffer_long_enough() {
        let spares = Spares::default();
        let mut a = spares.take(100);
        assert_eq!(a.len(), 100);
        a[7] = 7;
        spares.give(a);
        spares.give(Vec::new());
        assert_eq!(spares.len(), 1);
        let again = spares.take(50);
        assert_eq!((again.len(), again[7]), (100, 7), "the buffer given back, whole");
        spares.give_all([again, vec![2u8; 60], vec![3u8; 400]]);
        assert_eq!(spares.take(55)[0], 2, "the shortest long enough");
        let grown = spares.take(1000);
        assert_eq!((grown.len(), grown[0], grown[999]), (1000, 3, 0), "the longest, grown");
        assert_eq!(spares.take(10)[7], 7);
        assert!(spares.is_empty());
        spares.give_all((0..POOL + 4).map(|_| vec![0u8; 8]));
        assert_eq!(spares.len(), POOL);
        spares.clear();
        assert!(spares.is_empty());
    }
}
