//! The messages between rank 0 and the other ranks, as bytes: one MPI message each, so that
//! rank 0 can wait for whichever rank speaks first. A range's inputs and outputs do not travel
//! inside them: over MPI they follow a `Run` or a `Done` as raw messages of their own
//! ([`crate::payload`]). Pure.

use hetdsl::{Error, Package, Result};

/// MPI counts are C `int`s: one message (or one piece of a broadcast) holds at most this many
/// bytes. A range whose inputs or outputs need more is refused with an error that says so.
pub fn fits_one_message(bytes: usize) -> Result<()> {
    if bytes > i32::MAX as usize {
        return Err(Error::BadConfig(format!(
            "a message of {bytes} bytes is over MPI's limit of {} per message: use more ranks \
             (smaller ranges) or split the launch",
            i32::MAX
        )));
    }
    Ok(())
}

/// The tag of the `launch`-th launch of a job (counted from 1): 1 to `tag_ub`, the largest tag
/// MPI accepts, starting over past it. A tag past `MPI_TAG_UB` makes MPI end the whole job, and
/// a job calling `run` every step of an iterative code may make billions of launches.
pub fn launch_tag(launch: u64, tag_ub: i32) -> i32 {
    let ub = tag_ub.max(1) as u64;
    (1 + launch.saturating_sub(1) % ub) as i32
}

/// What a message says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Rank 0 → rank: run this range. Over MPI, no `parts`: the range's inputs follow as the
    /// payload [`crate::payload::layout`] gives. To a node (over a channel), `parts` are one
    /// staging buffer per sliced input in argument order, holding the range's bytes of it from
    /// its start.
    Run = 1,
    /// Rank 0 → rank: nothing more; answer with a summary.
    Stop = 2,
    /// Rank → rank 0: the range is done. Over MPI, no `parts`: the outputs follow as the
    /// payload [`crate::payload::layout`] gives, sent while the rank already runs its next
    /// range. From a node (over a channel), `parts` are its staging buffers, one per output in
    /// argument order, lent with the range's bytes of it from their start.
    Done = 3,
    /// Rank → rank 0: the range could not run; `parts[0]` is the reason. `flag` set: a user
    /// mistake that every rank would make (the run ends with it); clear: this rank's devices
    /// failed (its range is re-run elsewhere).
    Failed = 4,
    /// Rank → rank 0, after `Stop`: `parts[0]` is the rank's summary (JSON).
    Summary = 5,
    /// Rank 0 → rank: this rank is out of the run (its devices failed, or the watchdog gave up
    /// on it); it summarises as after a `Stop`, then waits for the run's verdict, a `Stop`
    /// sent once the run ends, so that it returns what rank 0 returns.
    Dropped = 7,
}

/// One message.
#[derive(Debug, Clone, PartialEq)]
pub struct Msg {
    pub kind: Kind,
    pub package: Package,
    /// Seconds the rank's devices computed the range (`Done`): the engine's ROI, without the
    /// run's set-up.
    pub seconds: f64,
    pub flag: bool,
    pub parts: Vec<Vec<u8>>,
}

impl Msg {
    pub fn new(kind: Kind, package: Package) -> Self {
        Msg { kind, package, seconds: 0.0, flag: false, parts: Vec::new() }
    }

    /// A message about no range (a stop, a summary, a message that could not be read).
    pub fn unranged(kind: Kind) -> Self {
        Msg::new(kind, Package { offset: 0, len: 0 })
    }

    /// A stop that says the run failed, and why (the error itself, [`crate::carried`]).
    pub fn stop_failed(why: &Error) -> Self {
        let mut m = Msg::unranged(Kind::Stop);
        m.flag = true;
        m.parts = vec![crate::carried::encode(why)];
        m
    }

    /// Bytes of payload (what the report counts as moved).
    pub fn payload(&self) -> u64 {
        self.parts.iter().map(|p| p.len() as u64).sum()
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out =
            Vec::with_capacity(40 + self.parts.iter().map(|p| p.len() + 8).sum::<usize>());
        out.push(self.kind as u8);
        out.push(self.flag as u8);
        out.extend_from_slice(&self.package.offset.to_le_bytes());
        out.extend_from_slice(&self.package.len.to_le_bytes());
        out.extend_from_slice(&self.seconds.to_le_bytes());
        out.extend_from_slice(&(self.parts.len() as u64).to_le_bytes());
        for p in &self.parts {
            out.extend_from_slice(&(p.len() as u64).to_le_bytes());
            out.extend_from_slice(p);
        }
        out
    }

    pub fn decode(bytes: &[u8]) -> Result<Msg> {
        let bad = || Error::BadConfig(format!("a malformed message of {} bytes", bytes.len()));
        let mut r = Reader { bytes, at: 2 };
        let kind = match bytes.first() {
            Some(1) => Kind::Run,
            Some(2) => Kind::Stop,
            Some(3) => Kind::Done,
            Some(4) => Kind::Failed,
            Some(5) => Kind::Summary,
            Some(7) => Kind::Dropped,
            _ => return Err(bad()),
        };
        let flag = bytes.get(1).copied().ok_or_else(bad)? != 0;
        let package = Package { offset: r.word().ok_or_else(bad)?, len: r.word().ok_or_else(bad)? };
        let seconds = f64::from_bits(r.word().ok_or_else(bad)?);
        let count = r.word().ok_or_else(bad)?;
        let mut parts = Vec::new();
        for _ in 0..count {
            let len = r.word().ok_or_else(bad)?;
            parts.push(r.take(len).ok_or_else(bad)?.to_vec());
        }
        Ok(Msg { kind, package, seconds, flag, parts })
    }
}

struct Reader<'b> {
    bytes: &'b [u8],
    at: usize,
}

impl<'b> Reader<'b> {
    fn take(&mut self, len: u64) -> Option<&'b [u8]> {
        let end = self.at.checked_add(usize::try_from(len).ok()?)?;
        let b = self.bytes.get(self.at..end)?;
        self.at = end;
        Some(b)
    }
    fn word(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_survive_the_round_trip_and_truncation_is_an_error() {
        let mut m = Msg::new(Kind::Done, Package { offset: 7, len: 93 });
        m.seconds = 0.25;
        m.flag = true;
        m.parts = vec![vec![1, 2, 3], Vec::new(), vec![9; 1000]];
        let bytes = m.encode();
        assert_eq!(Msg::decode(&bytes).unwrap(), m);
        assert_eq!(m.payload(), 1003);
        for cut in [0, 1, 10, bytes.len() - 1] {
            assert!(Msg::decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        assert!(Msg::decode(&[9, 0]).is_err());
        assert!(Msg::decode(&[6, 0]).is_err(), "no kind 6 any more");
    }

    #[test]
    fn launch_tags_stay_within_mpis_bound_however_many_launches() {
        assert_eq!(launch_tag(1, 32767), 1);
        assert_eq!(launch_tag(32767, 32767), 32767);
        assert_eq!(launch_tag(32768, 32767), 1, "starts over past the bound");
        let ub = i32::MAX;
        assert_eq!(launch_tag(ub as u64, ub), ub);
        assert_eq!(launch_tag(ub as u64 + 1, ub), 1, "not i32::MIN");
        for launch in [0, 2, 1 << 23, (1 << 23) + 1, u64::MAX - 1, u64::MAX] {
            for ub in [32767, (1 << 23) - 1, i32::MAX] {
                let tag = launch_tag(launch, ub);
                assert!((1..=ub).contains(&tag), "launch {launch}, bound {ub}: tag {tag}");
            }
        }
    }

    #[test]
    fn a_message_over_mpis_count_limit_is_an_error() {
        assert!(fits_one_message(i32::MAX as usize).is_ok());
        let e = fits_one_message(i32::MAX as usize + 1).unwrap_err();
        assert!(matches!(&e, Error::BadConfig(m) if m.contains("over MPI's limit")), "{e}");
    }
}
