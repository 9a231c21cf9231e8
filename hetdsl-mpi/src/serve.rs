//! A rank's side of the conversation with rank 0: run each range it is given, answer with the
//! outputs or the reason it could not, until told to stop. The same loop serves remote ranks
//! (over MPI) and rank 0's own node (over a channel, from a thread of its own).

use hetdsl::{Error, Result};

use crate::node::{Failure, Node};
use crate::wire::{Kind, Msg};

/// One end of a rank's conversation with rank 0.
pub trait Link {
    fn recv(&mut self) -> Result<Msg>;
    fn send(&mut self, msg: Msg) -> Result<()>;
}

/// Serves `node` until rank 0 says stop; returns the stop order (its flag set: the run failed,
/// `parts[0]` says why).
pub fn serve(node: &mut Node<'_>, link: &mut dyn Link) -> Result<Msg> {
    // Once a range failed, rank 0 drops this rank and runs its ranges elsewhere: a range queued
    // behind the failed one must not run here too (rank 0's node writes the caller's buffers
    // in place, `crate::caller`), so it fails unrun.
    let mut failed: Option<String> = None;
    loop {
        let order = link.recv()?;
        match order.kind {
            Kind::Run => {
                let ran = match &failed {
                    Some(why) => Err(Failure::Devices(Error::BadConfig(format!(
                        "not run: an earlier range failed on this node ({why})"
                    )))),
                    None => node.run(order.package, order.parts),
                };
                if let Err(Failure::User(e) | Failure::Devices(e)) = &ran {
                    failed.get_or_insert_with(|| e.to_string());
                }
                let answer = match ran {
                    Ok(f) => Msg {
                        kind: Kind::Done,
                        package: order.package,
                        // What the devices computed: rank 0 sees the rest (set-up, messages)
                        // as the range's span less this, and sizes ranges to amortise it.
                        seconds: f.compute_seconds,
                        flag: false,
                        // Lent: whoever sends or merges them gives them back to the node.
                        parts: f.outputs,
                    },
                    Err(failure) => {
                        let (user, e) = match failure {
                            Failure::User(e) => (true, e),
                            Failure::Devices(e) => (false, e),
                        };
                        let mut m = Msg::new(Kind::Failed, order.package);
                        m.flag = user;
                        m.parts = vec![crate::carried::encode(&e)];
                        m
                    }
                };
                link.send(answer)?;
            }
            Kind::Stop => return Ok(order),
            other => {
                return Err(Error::BadConfig(format!("rank 0 sent a {other:?} message")));
            }
        }
    }
}

/// A node served from a thread (rank 0's own, or a remote rank's behind its relay): messages
/// travel over channels.
pub struct ChannelLink {
    to_root: std::sync::mpsc::Sender<Msg>,
    from_root: std::sync::mpsc::Receiver<Msg>,
    /// Orders received and not served yet.
    pending: std::collections::VecDeque<Msg>,
}

impl ChannelLink {
    pub fn new(
        to_root: std::sync::mpsc::Sender<Msg>,
        from_root: std::sync::mpsc::Receiver<Msg>,
    ) -> Self {
        ChannelLink { to_root, from_root, pending: Default::default() }
    }
}

impl Link for ChannelLink {
    /// The next order; a stop behind ranges queued ahead comes first, and they are dropped: a
    /// rank is stopped with ranges queued only when it was dropped (they are re-run elsewhere)
    /// or the run failed.
    fn recv(&mut self) -> Result<Msg> {
        let stop = || Msg::unranged(Kind::Stop);
        if self.pending.is_empty() {
            // Rank 0 gone means the run is over for this node too.
            self.pending.push_back(self.from_root.recv().unwrap_or_else(|_| stop()));
        }
        self.pending.extend(self.from_root.try_iter());
        if let Some(at) = self.pending.iter().position(|m| m.kind == Kind::Stop) {
            let order = self.pending.remove(at).unwrap_or_else(stop);
            self.pending.clear();
            return Ok(order);
        }
        Ok(self.pending.pop_front().unwrap_or_else(stop))
    }
    fn send(&mut self, msg: Msg) -> Result<()> {
        // Rank 0 stopped listening (the run ended with an error): nothing to tell.
        let _ = self.to_root.send(msg);
        Ok(())
    }
}
