//! Messages and payloads over MPI: probing for the next message of a launch, receiving a
//! payload piece straight into the buffer it belongs in (whose length the probe tells before
//! anything is copied), and a rank's receipt of an order with its inputs.

use mpi::point_to_point::{MatchedReceiveVec, Message, Status};
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;

use hetdsl::Result;

use crate::payload::{layout, Incoming, Side, Spares};
use crate::spec::LaunchSpec;
use crate::wire::{Kind, Msg};

/// A message of this launch waiting from any rank, matched (it must then be received).
pub(crate) struct Probed {
    pub rank: usize,
    pub len: usize,
    message: Message,
    status: Status,
}

impl Probed {
    /// Receives it into `dst`, which must be exactly `len` bytes long.
    pub(crate) fn into_slice(self, dst: &mut [u8]) {
        assert_eq!(dst.len(), self.len, "a message received into a slice of another length");
        self.message.matched_receive_into(dst);
    }

    /// Receives it into `scratch` (resized to fit) and drops its bytes.
    pub(crate) fn discard(self, scratch: &mut Vec<u8>) {
        if scratch.len() < self.len {
            scratch.resize(self.len, 0);
        }
        let len = self.len;
        self.into_slice(&mut scratch[..len]);
    }

    /// Receives it as one of [`crate::wire`]'s messages.
    pub(crate) fn into_bytes(self) -> Vec<u8> {
        (self.message, self.status).matched_receive_vec::<u8>().0
    }
}

/// The next message of this launch from any rank, if one is waiting.
pub(crate) fn probe(world: &SimpleCommunicator, tag: i32) -> Option<Probed> {
    let (message, status) = world.any_process().immediate_matched_probe_with_tag(tag)?;
    Some(matched(message, status))
}

pub(crate) fn matched(message: Message, status: Status) -> Probed {
    let len = status.count(u8::equivalent_datatype()).max(0) as usize;
    Probed { rank: status.source_rank() as usize, len, message, status }
}

/// A rank's next order from rank 0. A `Run` arrives with its inputs, each received straight
/// into its place in a staging buffer from `spares` (the order's `parts`, which the node swaps
/// in). Rank 0 sends a run's pieces right after it, so each wait here is short.
pub(crate) fn receive_order(
    world: &SimpleCommunicator,
    tag: i32,
    spec: &LaunchSpec,
    spares: &Spares,
) -> Result<Msg> {
    let root = world.process_at_rank(0);
    let (bytes, _) = root.receive_vec_with_tag::<u8>(tag);
    let order = Msg::decode(&bytes).and_then(|order| {
        let pieces = match order.kind {
            Kind::Run => layout(spec, order.package, Side::Inputs)?,
            _ => Vec::new(),
        };
        Ok((order, pieces))
    });
    let (mut order, pieces) = match order {
        Ok(o) => o,
        Err(e) => {
            // This rank leaves the launch: inputs rank 0 may be sending must still be taken,
            // or its send would wait for ever.
            drain(world, tag);
            return Err(e);
        }
    };
    let mut incoming = Incoming::new(order.package, pieces, true);
    let mut failed = None;
    let mut scratch = Vec::new();
    while !incoming.is_complete() {
        let (message, status) = root.matched_probe_with_tag(tag);
        let probed = matched(message, status);
        match incoming.accept(probed.len) {
            Ok(piece) => {
                let mut buffer = spares.take(piece.bytes.len());
                probed.into_slice(&mut buffer[..piece.bytes.len()]);
                order.parts.push(buffer);
            }
            Err(e) => {
                probed.discard(&mut scratch);
                failed.get_or_insert(e);
            }
        }
    }
    failed.map_or(Ok(order), Err)
}

/// Receives and drops whatever rank 0 sends on `tag` until it has been quiet for a moment
/// (rank 0 sends an order's pieces right after it).
pub(crate) fn drain(world: &SimpleCommunicator, tag: i32) {
    let root = world.process_at_rank(0);
    let mut scratch = Vec::new();
    let mut quiet = std::time::Instant::now();
    while quiet.elapsed() < std::time::Duration::from_millis(200) {
        match root.immediate_matched_probe_with_tag(tag) {
            Some((message, status)) => {
                matched(message, status).discard(&mut scratch);
                quiet = std::time::Instant::now();
            }
            None => std::thread::sleep(std::time::Duration::from_millis(1)),
        }
    }
}
