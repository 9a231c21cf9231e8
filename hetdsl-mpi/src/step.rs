//! The header every collective call of a job begins with. MPI matches collective operations by
//! their order alone, so a rank in `Cluster::all_agree` and another in a launch met inside
//! different operations: the job hung, or one rank read the other's bytes as its own. So every
//! collective call (a launch, `all_agree`) begins with the same operation on every rank, an
//! all-gather of this header, and goes on only when every rank's header names the same call
//! (the same launch shape, for a launch) at the same step: else every rank sees it at once, in
//! the same headers, and returns [`Error::CollectiveMismatch`] naming what each rank called.
//!
//! The all-gather replaces the barrier each call began with (the one that watches for ranks
//! leaving the job), and its header carries what the call's next step needed a collective of
//! its own for (rank 0's verdict and the length of its launch, an agreement's vote): a launch
//! makes three collective operations where it made four, `all_agree` one where it made two.
//! Pure.

use hetdsl::Error;

use crate::spec::{ArgKind, LaunchSpec};

/// Bytes of one rank's header.
pub const HEADER: usize = 32;

/// Bytes of one rank's account of its call, exchanged only when the ranks' calls differ.
pub const ABOUT: usize = 256;

/// The collective calls of the crate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    /// `ClusterLaunch::run`.
    Run = 1,
    /// `Cluster::all_agree` (and `Cluster::try_all_agree`).
    AllAgree = 2,
}

/// What one rank says as a collective call begins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub call: Call,
    /// `Run`: rank 0 refused the launch (its payload is the error); `AllAgree`: the vote.
    pub flag: bool,
    /// Collective calls this rank has made in the job, this one included.
    pub seq: u64,
    /// `Run`: the launch's shape ([`shape_of`]); 0 otherwise.
    pub shape: u64,
    /// `Run`, rank 0: the bytes it broadcasts next (its launch, or its refusal); 0 otherwise.
    pub len: u64,
}

impl Header {
    pub fn new(call: Call) -> Header {
        Header { call, flag: false, seq: 0, shape: 0, len: 0 }
    }

    pub fn encode(&self) -> [u8; HEADER] {
        let mut out = [0u8; HEADER];
        out[0] = self.call as u8;
        out[1] = u8::from(self.flag);
        out[8..16].copy_from_slice(&self.seq.to_le_bytes());
        out[16..24].copy_from_slice(&self.shape.to_le_bytes());
        out[24..32].copy_from_slice(&self.len.to_le_bytes());
        out
    }

    /// `None` for bytes that are no header (a rank of another build of the crate).
    pub fn decode(bytes: &[u8]) -> Option<Header> {
        let word = |at: usize| Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?));
        let call = match bytes.first()? {
            1 => Call::Run,
            2 => Call::AllAgree,
            _ => return None,
        };
        let flag = match bytes.get(1)? {
            0 => false,
            1 => true,
            _ => return None,
        };
        Some(Header { call, flag, seq: word(8)?, shape: word(16)?, len: word(24)? })
    }
}

/// Whether every rank's header names the same call at the same step.
pub fn in_step(headers: &[Option<Header>]) -> bool {
    let Some(Some(first)) = headers.first() else { return false };
    headers.iter().all(|h| {
        h.is_some_and(|h| h.call == first.call && h.seq == first.seq && h.shape == first.shape)
    })
}

/// A digest of what every rank must launch alike (kernel, NDRange, work-group, and each
/// argument's kind, element size and pattern; not buffer lengths, which only rank 0's count,
/// nor scalar values): FNV-1a over its JSON, the same in every build.
pub fn shape_of(spec: &LaunchSpec) -> u64 {
    let args: Vec<_> = spec.args.iter().map(|a| (a.kind, a.elem, a.pattern)).collect();
    let shape = (&spec.kernel, &spec.global, &spec.local, args);
    let bytes = serde_json::to_vec(&shape).unwrap_or_default();
    bytes
        .iter()
        .fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3))
}

/// A launch as a mismatch names it: `run(`spread4`, global [4096], local [64], input 4-byte
/// 1:1, output 4-byte 4:1, scalar)`.
pub fn describe_run(spec: &LaunchSpec) -> String {
    let mut parts = vec![format!("global {:?}", spec.global), format!("local {:?}", spec.local)];
    for a in &spec.args {
        let pattern = a.pattern.map(|p| format!(" {p}")).unwrap_or_default();
        parts.push(match a.kind {
            ArgKind::In => format!("input {}-byte{pattern}", a.elem),
            ArgKind::Out => format!("output {}-byte{pattern}", a.elem),
            ArgKind::InOut => format!("inout {}-byte{pattern}", a.elem),
            ArgKind::Scalar => "scalar".into(),
            ArgKind::Local => "local buffer".into(),
            ArgKind::LocalPerItem => "local buffer per item".into(),
        });
    }
    format!("run(`{}`, {})", spec.kernel, parts.join(", "))
}

/// `about` as the fixed bytes ranks exchange (cut on a character's boundary).
pub fn about_bytes(about: &str) -> [u8; ABOUT] {
    let mut end = about.len().min(ABOUT);
    while !about.is_char_boundary(end) {
        end -= 1;
    }
    let mut out = [0u8; ABOUT];
    out[..end].copy_from_slice(&about.as_bytes()[..end]);
    out
}

/// The error of a step whose ranks made different calls: `headers` and `abouts` (each rank's
/// [`about_bytes`]) by rank. Ranks that said the same are named together.
pub fn mismatch(headers: &[Option<Header>], abouts: &[&[u8]]) -> Error {
    let seqs: Vec<Option<u64>> = headers.iter().map(|h| h.map(|h| h.seq)).collect();
    let steps_differ = seqs.iter().any(|s| *s != seqs[0]);
    let mut said: Vec<(String, Vec<usize>)> = Vec::new();
    for (rank, header) in headers.iter().enumerate() {
        let bytes = abouts.get(rank).copied().unwrap_or_default();
        let end = bytes.iter().position(|b| *b == 0).unwrap_or(bytes.len());
        let about = String::from_utf8_lossy(&bytes[..end]).into_owned();
        let about = match header {
            None => "something this build of hetdsl-mpi cannot read".to_string(),
            Some(h) if steps_differ => format!("{about} as its collective call {}", h.seq),
            Some(_) => about,
        };
        match said.iter_mut().find(|(a, _)| *a == about) {
            Some((_, ranks)) => ranks.push(rank),
            None => said.push((about, vec![rank])),
        }
    }
    let calls = said.into_iter().map(|(about, ranks)| format!("{} called {about}", name(&ranks)));
    Error::CollectiveMismatch { calls: calls.collect() }
}

/// `rank 0`, `ranks 1-2`, `ranks 0, 3, 5-7`.
fn name(ranks: &[usize]) -> String {
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for &r in ranks {
        match runs.last_mut() {
            Some((_, last)) if *last + 1 == r => *last = r,
            _ => runs.push((r, r)),
        }
    }
    let text: Vec<String> = runs
        .iter()
        .map(|&(a, b)| if a == b { a.to_string() } else { format!("{a}-{b}") })
        .collect();
    let word = if ranks.len() == 1 { "rank" } else { "ranks" };
    format!("{word} {}", text.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::ArgSpec;
    use hetdsl::Pattern;

    fn spec(kernel: &str, n: usize, elem: u64) -> LaunchSpec {
        let buffer = |kind, len, pattern| ArgSpec { kind, elem, len, pattern, value: Vec::new() };
        LaunchSpec {
            kernel: kernel.into(),
            global: vec![n],
            local: vec![64],
            args: vec![
                buffer(ArgKind::In, n as u64, Some(Pattern::ONE_TO_ONE)),
                buffer(ArgKind::Out, 4 * n as u64, Pattern::ratio(4, 1)),
                ArgSpec { kind: ArgKind::Scalar, elem: 0, len: 0, pattern: None, value: vec![1] },
            ],
        }
    }

    #[test]
    fn headers_survive_the_trip_and_other_bytes_are_none() {
        let h = Header { call: Call::Run, flag: true, seq: u64::MAX - 1, shape: 7, len: 1 << 40 };
        assert_eq!(Header::decode(&h.encode()), Some(h));
        let a = Header { flag: false, ..Header::new(Call::AllAgree) };
        assert_eq!(Header::decode(&a.encode()), Some(a));
        assert_eq!(Header::decode(&[9; HEADER]), None);
        assert_eq!(Header::decode(&h.encode()[..HEADER - 1]), None);
        let mut flag = h.encode();
        flag[1] = 2;
        assert_eq!(Header::decode(&flag), None);
    }

    /// Buffer lengths (rank 0's alone count) and scalar values do not make another launch;
    /// the kernel, NDRange and argument shapes do.
    #[test]
    fn the_shape_is_what_every_rank_must_launch_alike() {
        let a = spec("spread4", 4096, 4);
        let mut lengths = a.clone();
        lengths.args[0].len = 0;
        lengths.args[1].len = 0;
        lengths.args[2].value = vec![2];
        assert_eq!(shape_of(&a), shape_of(&lengths));
        for other in
            [spec("group_sum", 4096, 4), spec("spread4", 2048, 4), spec("spread4", 4096, 8)]
        {
            assert_ne!(shape_of(&a), shape_of(&other), "{}", describe_run(&other));
        }
        assert_eq!(
            describe_run(&a),
            "run(`spread4`, global [4096], local [64], input 4-byte 1:1, output 4-byte 4:1, scalar)"
        );
    }

    #[test]
    fn only_the_same_call_at_the_same_step_is_in_step() {
        let run = Header { seq: 3, shape: 11, ..Header::new(Call::Run) };
        let agree = Header { seq: 3, ..Header::new(Call::AllAgree) };
        assert!(in_step(&[Some(run), Some(run), Some(run)]));
        assert!(in_step(&[Some(agree), Some(Header { flag: true, ..agree })]), "votes differ");
        assert!(in_step(&[Some(Header { flag: true, len: 90, ..run }), Some(run)]), "rank 0's");
        assert!(!in_step(&[Some(agree), Some(run), Some(run)]));
        assert!(!in_step(&[Some(run), Some(Header { shape: 12, ..run })]));
        assert!(!in_step(&[Some(run), Some(Header { seq: 4, ..run })]));
        assert!(!in_step(&[Some(run), None]));
        assert!(!in_step(&[]));
    }

    #[test]
    fn a_mismatch_names_what_each_group_of_ranks_called() {
        let run = Header { seq: 5, shape: 11, ..Header::new(Call::Run) };
        let agree = Header { seq: 5, ..Header::new(Call::AllAgree) };
        let launch = about_bytes(&describe_run(&spec("saxpy", 128, 4)));
        let all_agree = about_bytes("all_agree");
        let headers = [Some(agree), Some(run), Some(run), Some(agree), Some(run)];
        let abouts: [&[u8]; 5] = [&all_agree, &launch, &launch, &all_agree, &launch];
        let e = mismatch(&headers, &abouts);
        let Error::CollectiveMismatch { calls } = &e else { panic!("{e:?}") };
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0], "ranks 0, 3 called all_agree");
        assert!(calls[1].starts_with("ranks 1-2, 4 called run(`saxpy`, global [128]"), "{e}");
        assert!(e.to_string().contains("every rank must make the same calls"), "{e}");
        // Ranks out of step by a call say which call each made; a rank of another build is
        // named as such.
        let headers = [Some(run), Some(Header { seq: 6, ..run }), None];
        let e = mismatch(&headers, &[&launch, &launch, &all_agree]);
        let Error::CollectiveMismatch { calls } = &e else { panic!("{e:?}") };
        assert!(calls[0].starts_with("rank 0 called run(`saxpy`") && calls[0].ends_with("call 5"));
        assert!(calls[1].starts_with("rank 1 called run(") && calls[1].ends_with("call 6"));
        assert_eq!(calls[2], "rank 2 called something this build of hetdsl-mpi cannot read");
    }

    #[test]
    fn an_account_is_cut_on_a_character_boundary() {
        let long = "é".repeat(ABOUT);
        let bytes = about_bytes(&long);
        let end = bytes.iter().position(|b| *b == 0).unwrap_or(ABOUT);
        assert!(std::str::from_utf8(&bytes[..end]).is_ok() && end >= ABOUT - 1);
        assert_eq!(&about_bytes("all_agree")[..10], b"all_agree\0");
    }
}
