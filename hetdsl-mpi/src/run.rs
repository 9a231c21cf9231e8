//! One cluster launch, on every rank: agree on the launch (every rank making this call,
//! [`crate::step`]), learn each rank's devices, send `whole` inputs once, then rank 0 balances
//! the ranks while every rank (rank 0's node from a thread of its own) serves the ranges it
//! gets; last, each rank sends rank 0 its summary.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use mpi::topology::SimpleCommunicator;
use mpi::traits::Root as _;
use mpi::traits::*;

use hetdsl::balance::DeviceProfile;
use hetdsl::occupancy::{self, KernelResources};
use hetdsl::report::DeviceReport;
use hetdsl::{Error, Pattern, Result};

use crate::cluster::{ClusterLaunch, MpiLink};
use crate::node::Node;
use crate::payload::{fits, layout, windows, Side, Spares};
use crate::report::{ClusterReport, RankReport};
use crate::root::Root;
use crate::serve::{serve, ChannelLink, Link};
use crate::spec::LaunchSpec;
use crate::step::{Call, Header};
use crate::transfer::receive_order;
use crate::wire::{Kind, Msg};

/// What each rank tells rank 0 before the run: its host and node profile.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct Joined {
    pub host: String,
    pub profile: DeviceProfile,
}

pub(crate) fn run(mut launch: ClusterLaunch<'_>) -> Result<ClusterReport> {
    let cluster = launch.cluster;
    let world = &cluster.world;
    let (spec, tag) = agree(&launch)?;
    launch.spec = spec;
    let mut node = launch.node();
    let joined = Joined { host: cluster.host().to_string(), profile: node_profile(&launch)? };
    if cluster.rank() != 0 {
        let mut link = MpiLink { world, tag };
        let mut m = Msg::unranged(Kind::Summary);
        m.parts = vec![serde_json::to_vec(&joined).unwrap_or_default()];
        link.send(m)?;
        broadcast_whole(world, &mut node, None)?;
        let me = cluster.rank();
        let leave = launch.leave.filter(|(r, _)| *r == me).map(|(_, after)| after);
        let late = launch.late_summary.filter(|(r, _)| *r == me).map(|(_, d)| d);
        let verdict = |link: &mut MpiLink<'_>| wait_verdict(cluster, link);
        return serve_rank(node, &mut link, (leave, late), &joined.host, &launch.spec, verdict);
    }
    *cluster.stragglers.borrow_mut() = Vec::new();
    let mut ranks = vec![joined];
    let mut unreadable = None;
    for r in 1..cluster.size() {
        let (bytes, _) = world.process_at_rank(r as i32).receive_vec_with_tag::<u8>(tag);
        let j = Msg::decode(&bytes)
            .ok()
            .and_then(|m| m.parts.first().and_then(|p| serde_json::from_slice::<Joined>(p).ok()));
        match j {
            Some(j) => ranks.push(j),
            None => {
                unreadable.get_or_insert(Error::BadConfig(format!("rank {r} sent no profile")));
            }
        }
    }
    // The broadcast is a collective step every rank is in: it completes before anyone learns
    // the run failed.
    let whole = broadcast_whole(world, &mut node, Some(&launch))?;
    if let Some(e) = unreadable {
        crate::root::stop_ranks(world, tag, cluster.size(), &e);
        return Err(e);
    }
    Root::run(launch, node, ranks, tag, whole)
}

/// Every rank learns that every rank launches the same (the call's header, [`crate::step`]),
/// then rank 0's launch reaches every rank, which compares it with its own; rank 0's own checks
/// travel in its header, and its refusal, of its kind, in place of the launch. Returns rank 0's
/// launch and the tag of this launch's messages.
fn agree(launch: &ClusterLaunch<'_>) -> Result<(LaunchSpec, i32)> {
    let (cluster, mine) = (launch.cluster, &launch.spec);
    let world = &cluster.world;
    let me = world.rank();
    let local = if me == 0 { mine.check().and_then(|()| launch.check_types()) } else { Ok(()) };
    let mut bytes = match (me, &local) {
        (0, Ok(())) => serde_json::to_vec(mine).unwrap_or_default(),
        (0, Err(e)) => crate::carried::encode(e),
        _ => Vec::new(),
    };
    let header = Header {
        flag: local.is_err(),
        shape: crate::step::shape_of(mine),
        len: bytes.len() as u64,
        ..Header::new(Call::Run)
    };
    let (headers, tag) = cluster.step(header, || crate::step::describe_run(mine))?;
    let from_root = &headers[0];
    bytes.resize(usize::try_from(from_root.len).unwrap_or(usize::MAX), 0);
    world.process_at_rank(0).broadcast_into(&mut bytes[..]);
    if from_root.flag {
        return Err(match local {
            Err(e) => e,
            Ok(()) => crate::carried::decode(&bytes, "rank 0 refused the launch"),
        });
    }
    // Every rank's header said the same shape, so this differs only if two shapes hashed alike
    // or rank 0's launch cannot be read: the reduction keeps every rank in step even then.
    let spec = serde_json::from_slice::<LaunchSpec>(&bytes);
    let same = spec.as_ref().is_ok_and(|spec| spec.same_shape(mine));
    let mut all = 0i32;
    world.all_reduce_into(&i32::from(same), &mut all, mpi::collective::SystemOperation::min());
    match spec {
        Err(e) => Err(Error::BadConfig(format!("rank 0's launch could not be read: {e}"))),
        Ok(spec) if !same => Err(Error::BadConfig(format!(
            "rank {me} launched `{}` differently from rank 0 (`{}`): every rank must describe \
             the same kernel, NDRange and arguments",
            mine.kernel, spec.kernel
        ))),
        Ok(_) if all == 0 => Err(Error::BadConfig(
            "another rank launched differently from rank 0 (its error says how)".into(),
        )),
        Ok(spec) => Ok((spec, tag)),
    }
}

/// This node as one device of the ranks' balancer: its devices' nominal speeds and occupancy
/// bounds, added up.
fn node_profile(launch: &ClusterLaunch<'_>) -> Result<DeviceProfile> {
    let (_, per_unit) = launch.spec.units()?;
    let per_group: usize = launch.spec.local.iter().product();
    let groups_per_unit = (per_unit / per_group as u64).max(1);
    let devices: Vec<DeviceProfile> = launch
        .program
        .devices()
        .iter()
        .map(|info| {
            let fill = occupancy::occupancy(info, &KernelResources::new(per_group as u32));
            DeviceProfile {
                kind: info.kind,
                nominal_gflops: occupancy::nominal_gflops(info),
                min_groups: fill.min_groups.div_ceil(groups_per_unit).max(1),
            }
        })
        .collect();
    Ok(crate::hier::rank_profile(&devices))
}

/// Sends every `whole` input from rank 0 to every rank once (MPI's broadcast, in pieces under
/// its per-call limit). Returns the bytes each rank received that way.
fn broadcast_whole(
    world: &SimpleCommunicator,
    node: &mut Node<'_>,
    launch: Option<&ClusterLaunch<'_>>,
) -> Result<u64> {
    const PIECE: usize = 1 << 30;
    let root = world.process_at_rank(0);
    let whole: Vec<usize> = (0..node.spec().args.len())
        .filter(|i| {
            let a = &node.spec().args[*i];
            a.kind.reads() && a.pattern == Some(Pattern::Whole)
        })
        .collect();
    let mut total = 0;
    for i in whole {
        if let Some(l) = launch {
            if let crate::cluster::HostBuf::In(src) = &l.host[i] {
                node.buffer_mut(i).copy_from_slice(src);
            }
        }
        let buf = node.buffer_mut(i);
        total += buf.len() as u64;
        for piece in buf.chunks_mut(PIECE) {
            root.broadcast_into(piece);
        }
    }
    Ok(total)
}

/// A non-zero rank: its node serves ranges from a thread of its own while this thread talks
/// to rank 0; at the end, rank 0 gets this node's summary.
fn serve_rank<'w>(
    node: Node<'_>,
    link: &mut MpiLink<'w>,
    (leave, late): (Option<usize>, Option<Duration>),
    host: &str,
    spec: &LaunchSpec,
    verdict: impl FnOnce(&mut MpiLink<'w>) -> Result<Msg>,
) -> Result<ClusterReport> {
    let (to_node, node_rx) = mpsc::channel();
    let (node_tx, from_node) = mpsc::channel();
    let spares = node.spares();
    let (node, relayed) = std::thread::scope(|s| {
        let worker = s.spawn(move || {
            let mut node = node;
            let mut channel = ChannelLink::new(node_tx, node_rx);
            let served = serve(&mut node, &mut channel);
            (node, served)
        });
        let relayed = relay(link, (&to_node, &from_node), spec, &spares, leave);
        drop(to_node);
        let (node, served) = worker.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
        (node, relayed.and_then(|stop| served.map(|_| stop)))
    });
    let rank = link.world.rank() as usize;
    let report = RankReport {
        setup_seconds: node.setup_seconds,
        planned_ranges: node.planned_ranges,
        pieces_ranges: node.pieces_ranges,
        ..rank_report(&node.devices, rank, host)
    };
    if let Some(delay) = late {
        std::thread::sleep(delay);
    }
    link.send(summary(&report, &relayed))?;
    let mut stop = relayed?;
    if stop.kind == Kind::Dropped {
        stop = verdict(link)?;
    }
    if stop.flag {
        // Rank 0's error, of its kind where a caller matches on it (a rank's refusal).
        let why = stop.parts.first().map_or(&[][..], |p| &p[..]);
        return Err(crate::carried::decode(why, "the cluster run failed on rank 0"));
    }
    Ok(ClusterReport {
        kernel: spec.kernel.clone(),
        balancer: String::new(),
        form: String::new(),
        total_units: spec.units()?.0,
        ranks: vec![report],
        roi_seconds: 0.0,
        balance: 1.0,
        faults: Vec::new(),
        measured_units: 0,
    })
}

/// A rank dropped from the run: the run's verdict, which rank 0 sends when the run ends,
/// unless rank 0 leaves the job first (it then never comes). Nothing else is sent after the
/// `Dropped`; anything that is, is taken and ignored.
fn wait_verdict(cluster: &crate::Cluster, link: &mut MpiLink<'_>) -> Result<Msg> {
    let root = link.world.process_at_rank(0);
    loop {
        if let Some((message, status)) = root.immediate_matched_probe_with_tag(link.tag) {
            let probed = crate::transfer::matched(message, status);
            let mut bytes = vec![0u8; probed.len];
            probed.into_slice(&mut bytes);
            match Msg::decode(&bytes) {
                Ok(m) if m.kind == Kind::Stop => return Ok(m),
                _ => continue,
            }
        }
        if cluster.has_left(0) {
            return Err(Error::BadConfig(
                "rank 0 left the job before telling this rank, dropped from the run, how the \
                 run ended"
                    .into(),
            ));
        }
        pause();
    }
}

/// This rank's last word to rank 0. After leaving on an error of its own, the error (so that
/// rank 0 drops the rank at once and re-runs its range); after a failed run, no device reports:
/// rank 0 may have stopped listening, and a message this small is sent without waiting for it.
fn summary(report: &RankReport, relayed: &Result<Msg>) -> Msg {
    let mut m = Msg::unranged(Kind::Summary);
    let failed = matches!(relayed, Ok(stop) if stop.flag);
    let compact = RankReport { devices: Vec::new(), ..report.clone() };
    m.parts = vec![serde_json::to_vec(if failed { &compact } else { report }).unwrap_or_default()];
    if let Err(e) = relayed {
        m.parts.push(e.to_string().chars().take(1024).collect::<String>().into_bytes());
    }
    m
}

/// Passes rank 0's orders to the node and its answers back. Orders are taken as they come, a
/// range queued ahead included, whose inputs so arrive while the node computes the range
/// before it. A finished range is announced by a small `Done` first, so that rank 0 can hand
/// out the next range at once; its outputs follow as a payload sent straight from the node's
/// staging buffers, in non-blocking sends that complete while the node already runs the next
/// range; the buffers then go back to the node's spares. Returns the stop order. On an error
/// of its own, the rank drops whatever rank 0 still sends it before it leaves, so that rank 0's
/// sends end.
fn relay(
    link: &mut MpiLink<'_>,
    node: (&mpsc::Sender<Msg>, &mpsc::Receiver<Msg>),
    spec: &LaunchSpec,
    spares: &Spares,
    leave: Option<usize>,
) -> Result<Msg> {
    let relayed = relay_orders(link, node, spec, spares, leave);
    if relayed.is_err() {
        crate::transfer::drain(link.world, link.tag);
    }
    relayed
}

fn relay_orders(
    link: &mut MpiLink<'_>,
    node: (&mpsc::Sender<Msg>, &mpsc::Receiver<Msg>),
    spec: &LaunchSpec,
    spares: &Spares,
    leave: Option<usize>,
) -> Result<Msg> {
    let (to_node, from_node) = node;
    let (world, tag) = (link.world, link.tag);
    let root = world.process_at_rank(0);
    let take = || -> Result<Option<Msg>> {
        if root.immediate_probe_with_tag(tag).is_none() {
            return Ok(None);
        }
        Ok(forward(to_node, receive_order(world, tag, spec, spares)?))
    };
    let mut answered = 0;
    loop {
        let answer = loop {
            if let Some(stop) = take()? {
                return Ok(stop);
            }
            match from_node.try_recv() {
                Ok(answer) => break answer,
                Err(mpsc::TryRecvError::Empty) => pause(),
                Err(mpsc::TryRecvError::Disconnected) => {
                    return Err(Error::BadConfig("this rank's node stopped answering".into()))
                }
            }
        };
        // Rank 0 dropped this rank while it ran (its watchdog): the stop order is already
        // here, and the range is re-run elsewhere. Sending its outputs now could wait forever
        // for a rank 0 that has finished the launch. (A probe that finds nothing may only have
        // let MPI move the message along: a few more before concluding, microseconds in all.)
        for _ in 0..64 {
            if let Some(stop) = take()? {
                return Ok(stop);
            }
        }
        if leave == Some(answered) {
            return Err(Error::BadConfig(format!(
                "this rank left the launch after {answered} range(s) (injected for testing)"
            )));
        }
        answered += 1;
        if answer.kind != Kind::Done {
            link.send(answer)?;
            continue;
        }
        // Checked before the `Done`: rank 0 then waits for every piece.
        let pieces = layout(spec, answer.package, Side::Outputs)?;
        fits(&pieces)?;
        windows(&pieces, &answer.parts)?;
        let mut done = Msg::new(Kind::Done, answer.package);
        done.seconds = answer.seconds;
        link.send(done)?;
        let stop = mpi::request::scope(|scope| {
            let mut sending: Vec<_> = windows(&pieces, &answer.parts)?
                .into_iter()
                .map(|w| root.immediate_send_with_tag(scope, w, tag))
                .collect();
            // The node runs the next range while the outputs move, and orders keep coming.
            let mut stop = Ok(None);
            while !sending.is_empty() {
                if matches!(stop, Ok(None)) {
                    stop = take();
                }
                sending = sending.into_iter().filter_map(|s| s.test().err()).collect();
                if !sending.is_empty() {
                    pause();
                }
            }
            stop
        });
        spares.give_all(answer.parts);
        if let Some(stop) = stop? {
            return Ok(stop);
        }
    }
}

/// Hands an order to the node: a `Run` with its inputs; any other order ends the relay, and
/// is returned.
fn forward(to_node: &mpsc::Sender<Msg>, order: Msg) -> Option<Msg> {
    if order.kind == Kind::Run {
        let _ = to_node.send(order);
        return None;
    }
    // The node only stops (a `Dropped` rank's verdict comes later, to this thread).
    let _ = to_node.send(Msg::unranged(Kind::Stop));
    Some(order)
}

/// This node's devices as the cluster report names them.
pub(crate) fn rank_report(devices: &[DeviceReport], rank: usize, host: &str) -> RankReport {
    let mut devices = devices.to_vec();
    for d in &mut devices {
        d.name = format!("r{rank}@{host}: {}", d.name);
    }
    RankReport {
        rank,
        host: host.to_string(),
        devices,
        packages: Vec::new(),
        bytes_sent: 0,
        bytes_received: 0,
        finish_seconds: 0.0,
        compute_seconds: 0.0,
        setup_seconds: 0.0,
        planned_ranges: 0,
        queued_ranges: 0,
        pieces_ranges: 0,
        fault: None,
    }
}

/// Sleeps a little between polls: short enough that a rank's answer waits well under a
/// millisecond on average, long enough not to spin a core rank 0's devices could use.
pub(crate) fn pause() {
    std::thread::sleep(Duration::from_micros(200));
}

pub(crate) fn since(t0: Instant) -> f64 {
    t0.elapsed().as_secs_f64()
}
