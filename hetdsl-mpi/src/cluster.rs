//! The MPI side: a [`Cluster`] of ranks (one per node) and a [`ClusterLaunch`] that every rank
//! builds the same way (SPMD). Rank 0 holds the caller's buffers and balances the ranks; every
//! rank, rank 0 included, runs the ranges it gets on its own devices.

use std::cell::RefCell;
use std::sync::{Arc, Mutex};

use mpi::environment::Universe;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;

use hetdsl::balance::dispatch::WatchdogRule;
use hetdsl::{Balancer, Error, Fault, Pattern, Pod, Program, Result};

use crate::node::{BalancerFactory, Node};
use crate::payload::Spares;
use crate::plan::{CallOutcome, Form, Memory, RankPlan, RankRecall};
use crate::recall::NodeRecall;
use crate::report::ClusterReport;
use crate::serve::Link;
use crate::spec::{ArgKind, ArgSpec, LaunchSpec};
use crate::step::{Call, Header, ABOUT, HEADER};
use crate::wire::Msg;

/// The ranks of an MPI job, one per node. Made once per process (it initialises MPI).
pub struct Cluster {
    _universe: Universe,
    pub(crate) world: SimpleCommunicator,
    host: String,
    /// Collective calls made so far (launches and agreements), the same on every rank at each
    /// call ([`crate::step`] checks it): each launch's messages carry a tag of its own number,
    /// so a late answer from a rank dropped by an earlier launch is never mistaken for one of
    /// this launch.
    steps: std::cell::Cell<u64>,
    /// The largest tag MPI accepts (`MPI_TAG_UB`): tags start over past it.
    tag_ub: i32,
    /// Ranks leaving the job tell the others through these ([`crate::leaving`]).
    notices: crate::leaving::Notices,
    /// Rank 0: the ranks that had not confirmed leaving the last launch when it returned.
    pub(crate) stragglers: std::cell::RefCell<Vec<usize>>,
    /// Rank 0: what the last call of each launch measured of the ranks ([`crate::plan`]).
    ranks_recalled: RefCell<Memory<RankRecall>>,
    /// Every rank: what the last call of each launch measured of its node's devices, shared
    /// with the node's thread during a call ([`crate::recall::NodeRecall`]).
    nodes_recalled: RefCell<Memory<Arc<Mutex<NodeRecall>>>>,
    /// Every rank: its node's staging buffers, kept from one call to the next (see
    /// [`Spares`]; freed by [`Cluster::free_buffers`]).
    staging: Spares,
}

impl Cluster {
    /// Initialises MPI (only this thread will call it) and joins the job's ranks.
    pub fn init() -> Result<Cluster> {
        let (universe, _) = mpi::initialize_with_threading(mpi::Threading::Funneled)
            .ok_or_else(|| Error::BadConfig("MPI is already initialised in this process".into()))?;
        let world = universe.world();
        let host = mpi::environment::processor_name().unwrap_or_else(|_| "?".into());
        // MPI promises tags up to 32767 at least; Open MPI's ob1 takes 2^31 - 1, UCX 2^23 - 1.
        let tag_ub = world.get_attr::<TagUb>().map_or(MIN_TAG_UB, |t| t.0.max(MIN_TAG_UB));
        let notices = crate::leaving::Notices::new(&world);
        Ok(Cluster {
            _universe: universe,
            world,
            host,
            steps: std::cell::Cell::new(0),
            tag_ub,
            stragglers: Default::default(),
            notices,
            ranks_recalled: Default::default(),
            nodes_recalled: Default::default(),
            staging: Spares::default(),
        })
    }

    pub fn rank(&self) -> usize {
        self.world.rank() as usize
    }

    pub fn size(&self) -> usize {
        self.world.size() as usize
    }

    pub fn host(&self) -> &str {
        &self.host
    }

    /// On rank 0, the ranks that had not confirmed leaving the last launch when its `run`
    /// returned: ranks rank 0 dropped as hung, and, after a failed launch, ranks still inside a
    /// range, which leave when it ends (empty on the other ranks). The job's next collective
    /// step waits for each of them; one stuck for good in a driver never comes, so when any is
    /// listed and may be stuck, save what matters and end the job ([`Cluster::abort`]).
    pub fn stragglers(&self) -> Vec<usize> {
        self.stragglers.borrow().clone()
    }

    /// Ends every rank of the job at once (`MPI_Abort`): what a rank that cannot go on should
    /// do, so that the others do not wait for it in a collective step forever.
    pub fn abort(&self, code: i32) -> ! {
        self.world.abort(code)
    }

    /// Whether `ok` holds on every rank (a collective call: every rank must make it, at the
    /// same point of its calls), so that ranks can agree on an outcome, e.g. before exiting
    /// with the same status. `false` too when the ranks cannot agree: a rank left the job, or
    /// another rank made another collective call here (a launch); [`Self::try_all_agree`]
    /// says which.
    pub fn all_agree(&self, ok: bool) -> bool {
        self.try_all_agree(ok).unwrap_or(false)
    }

    /// [`Self::all_agree`], with the reason the ranks could not agree as an error: a rank that
    /// left the job (`BadConfig`), or ranks making another collective call at this point
    /// ([`Error::CollectiveMismatch`], which those ranks' calls return too).
    pub fn try_all_agree(&self, ok: bool) -> Result<bool> {
        let vote = Header { flag: ok, ..Header::new(Call::AllAgree) };
        let (headers, _) = self.step(vote, || "all_agree".into())?;
        Ok(headers.iter().all(|h| h.flag))
    }

    /// A launch of `kernel` from `program` (built on every rank from the same source).
    pub fn launch<'a>(&'a self, program: &'a Program, kernel: &str) -> ClusterLaunch<'a> {
        ClusterLaunch {
            cluster: self,
            program,
            spec: LaunchSpec {
                kernel: kernel.into(),
                global: Vec::new(),
                local: Vec::new(),
                args: Vec::new(),
            },
            host: Vec::new(),
            typed: Vec::new(),
            balancer: None,
            balancer_dropped: Default::default(),
            node_balancer: Arc::new(hetdsl::balance::default_balancer),
            faults: Vec::new(),
            leave: None,
            late_summary: None,
            watchdog: crate::hier::RANK_WATCHDOG,
            carry_speeds: true,
            remember: true,
            plan_tail: crate::plan::PLAN_TAIL,
            queue_ahead: true,
            piece_rule: crate::recall::PieceRule::default(),
            node_balancer_given: false,
        }
    }

    /// Forgets every launch's earlier calls: the next call of each runs fresh (on this rank:
    /// call it on every rank to forget the nodes' devices too).
    pub fn forget_calls(&self) {
        *self.ranks_recalled.borrow_mut() = Memory::default();
        *self.nodes_recalled.borrow_mut() = Memory::default();
    }

    /// Frees the staging buffers this rank keeps for the next call (on rank 0, those of
    /// arguments it cannot work on in place). They hold at most what the last call wrote to.
    pub fn free_buffers(&self) {
        self.staging.clear();
    }

    /// Rank 0: the plan for the next call of the launch `key` on `ranks` ranks over `total`
    /// units, or `None` to run it fresh.
    pub(crate) fn rank_plan(
        &self,
        key: &str,
        ranks: usize,
        total: u64,
        tail: f64,
    ) -> Option<RankPlan> {
        self.ranks_recalled.borrow_mut().entry(key).choose(ranks, total, tail)
    }

    /// Rank 0: remembers how a call of the launch `key` went.
    pub(crate) fn remember_call(&self, key: &str, ranks: usize, form: Form, outcome: &CallOutcome) {
        self.ranks_recalled.borrow_mut().entry(key).record(ranks, form, outcome);
    }

    /// What this rank's node remembers of the launch `key`.
    pub(crate) fn node_recall(&self, key: &str) -> Arc<Mutex<NodeRecall>> {
        self.nodes_recalled.borrow_mut().entry(key).clone()
    }

    /// Testing: takes `made` collective calls as made so far (on every rank alike), so that a
    /// test reaches the message tags of a job that ran billions of launches.
    #[doc(hidden)]
    pub fn pretend_launches(&self, made: u64) {
        self.steps.set(made);
    }

    /// Begins a collective call on every rank: gathers every rank's `mine` (its `seq` set
    /// here) once all are there, and returns them, with the tag of this call's messages, when
    /// every rank makes the same call. Else every rank returns the same
    /// [`Error::CollectiveMismatch`], with each rank's `about` its call's words; a rank that
    /// left the job makes it an error too ([`crate::leaving`]).
    pub(crate) fn step(
        &self,
        mut mine: Header,
        about: impl FnOnce() -> String,
    ) -> Result<(Vec<Header>, i32)> {
        let seq = self.steps.get().wrapping_add(1);
        self.steps.set(seq);
        mine.seq = seq;
        let gathered = (self.notices.gather(&self.world, &mine.encode(), seq))
            .map_err(|rank| crate::leaving::left(rank, mine.call))?;
        let headers: Vec<Option<Header>> = gathered.chunks(HEADER).map(Header::decode).collect();
        if crate::step::in_step(&headers) {
            let tag = crate::wire::launch_tag(seq, self.tag_ub);
            return Ok((headers.into_iter().flatten().collect(), tag));
        }
        // Every rank saw these same headers, so every rank makes this exchange too.
        let mut abouts = vec![0u8; ABOUT * self.size()];
        self.world.all_gather_into(&crate::step::about_bytes(&about())[..], &mut abouts[..]);
        let abouts: Vec<&[u8]> = abouts.chunks(ABOUT).collect();
        Err(crate::step::mismatch(&headers, &abouts))
    }

    /// Whether `rank` has left the job (its `Cluster` dropped), without waiting.
    pub(crate) fn has_left(&self, rank: usize) -> bool {
        self.notices.has_left(rank)
    }
}

impl Drop for Cluster {
    /// Tells the other ranks that this one leaves, before MPI is finalised with the universe.
    fn drop(&mut self) {
        self.notices.announce(self.steps.get());
    }
}

/// The tag MPI promises to accept at least.
const MIN_TAG_UB: i32 = 32767;

/// MPI's `MPI_TAG_UB` attribute of a communicator: the largest tag it accepts.
#[repr(C)]
#[derive(Clone)]
struct TagUb(std::os::raw::c_int);

impl mpi::attribute::CommAttribute for TagUb {
    fn get_key() -> mpi::attribute::AttributeKey {
        // SAFETY: `MPI_TAG_UB` is a key MPI predefines on every communicator.
        unsafe { mpi::attribute::AttributeKey::new_unchecked(mpi::ffi::MPI_TAG_UB as i32) }
    }
}

/// The caller's buffer behind one argument (rank 0's are the ones used).
pub(crate) enum HostBuf<'a> {
    In(&'a [u8]),
    Out(&'a mut [u8]),
    None,
}

/// A kernel launch over every rank's devices; every rank builds the same one and calls
/// [`ClusterLaunch::run`]. Only rank 0's buffers are read and written: the other ranks may pass
/// empty slices (their lengths come from rank 0).
pub struct ClusterLaunch<'a> {
    pub(crate) cluster: &'a Cluster,
    pub(crate) program: &'a Program,
    pub(crate) spec: LaunchSpec,
    pub(crate) host: Vec<HostBuf<'a>>,
    /// Each argument as the caller typed it, for rank 0's check of the types ([`crate::typed`]).
    typed: Vec<crate::typed::Typed>,
    pub(crate) balancer: Option<Box<dyn Balancer>>,
    /// Why the balancer given panicked when dropped, if it did ([`crate::given`]).
    balancer_dropped: crate::given::DropPanic,
    pub(crate) node_balancer: BalancerFactory,
    /// (rank, first range of that rank it applies to, fault).
    pub(crate) faults: Vec<(usize, usize, Fault)>,
    /// Testing: (rank, ranges it answers before it leaves the launch with an error).
    pub(crate) leave: Option<(usize, usize)>,
    /// Testing: (rank, how long it waits before sending its summary at the end).
    pub(crate) late_summary: Option<(usize, std::time::Duration)>,
    pub(crate) watchdog: WatchdogRule,
    pub(crate) carry_speeds: bool,
    pub(crate) remember: bool,
    pub(crate) plan_tail: f64,
    pub(crate) queue_ahead: bool,
    pub(crate) piece_rule: crate::recall::PieceRule,
    pub(crate) node_balancer_given: bool,
}

fn bytes_of<T: Pod>(s: &[T]) -> &[u8] {
    // SAFETY: `T: Pod` has no padding and no invalid bit pattern, so every byte of the slice
    // is initialised plain data; the length is the slice's size in bytes.
    unsafe { std::slice::from_raw_parts(s.as_ptr().cast::<u8>(), std::mem::size_of_val(s)) }
}

fn bytes_of_mut<T: Pod>(s: &mut [T]) -> &mut [u8] {
    // SAFETY: as above, and any bytes written through the result are a valid `T` (`Pod`);
    // the mutable borrow of `s` is held by the result, so nothing else aliases it.
    unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr().cast::<u8>(), std::mem::size_of_val(s)) }
}

impl<'a> ClusterLaunch<'a> {
    /// The global NDRange: `[n]` or `[width, height]`.
    pub fn global(mut self, sizes: &[usize]) -> Self {
        self.spec.global = sizes.to_vec();
        self
    }

    /// The work-group size.
    pub fn local(mut self, sizes: &[usize]) -> Self {
        self.spec.local = sizes.to_vec();
        self
    }

    fn buffer<T: Pod>(
        mut self,
        kind: ArgKind,
        len: usize,
        pattern: Pattern,
        b: HostBuf<'a>,
    ) -> Self {
        let (elem, len) = (size_of::<T>() as u64, len as u64);
        self.spec.args.push(ArgSpec { kind, elem, len, pattern: Some(pattern), value: Vec::new() });
        self.host.push(b);
        self.typed.push(match kind {
            ArgKind::In => crate::typed::input::<T>(pattern),
            ArgKind::Out => crate::typed::output::<T>(pattern),
            _ => crate::typed::inout::<T>(pattern),
        });
        self
    }

    /// A buffer the kernel reads: each rank receives the elements its ranges read, or the
    /// whole buffer once for [`Pattern::Whole`].
    pub fn input<T: Pod>(self, data: &'a [T], pattern: Pattern) -> Self {
        self.buffer::<T>(ArgKind::In, data.len(), pattern, HostBuf::In(bytes_of(data)))
    }

    /// A buffer the kernel writes, split by `pattern`; each range's elements come back to rank 0.
    pub fn output<T: Pod>(self, data: &'a mut [T], pattern: Pattern) -> Self {
        let len = data.len();
        self.buffer::<T>(ArgKind::Out, len, pattern, HostBuf::Out(bytes_of_mut(data)))
    }

    /// A buffer the kernel reads and writes, split by `pattern`.
    pub fn inout<T: Pod>(self, data: &'a mut [T], pattern: Pattern) -> Self {
        let len = data.len();
        self.buffer::<T>(ArgKind::InOut, len, pattern, HostBuf::Out(bytes_of_mut(data)))
    }

    fn plain(mut self, kind: ArgKind, value: Vec<u8>, typed: crate::typed::Typed) -> Self {
        self.spec.args.push(ArgSpec { kind, elem: 0, len: 0, pattern: None, value });
        self.host.push(HostBuf::None);
        self.typed.push(typed);
        self
    }

    /// A value passed by copy (rank 0's value is the one used).
    pub fn scalar<T: Pod>(self, value: T) -> Self {
        let bytes = bytes_of(std::slice::from_ref(&value)).to_vec();
        self.plain(ArgKind::Scalar, bytes, crate::typed::scalar(value))
    }

    /// A `__local` buffer of `count` elements of `T` per work-group.
    pub fn local_buffer<T: Pod>(self, count: usize) -> Self {
        let bytes = count.saturating_mul(size_of::<T>()) as u64;
        let typed = crate::typed::local::<T>(count, false);
        self.plain(ArgKind::Local, bytes.to_le_bytes().to_vec(), typed)
    }

    /// A `__local` buffer of `count_per_item` elements of `T` per work-item of a group.
    pub fn local_buffer_per_item<T: Pod>(self, count_per_item: usize) -> Self {
        let bytes = count_per_item.saturating_mul(size_of::<T>()) as u64;
        let typed = crate::typed::local::<T>(count_per_item, true);
        self.plain(ArgKind::LocalPerItem, bytes.to_le_bytes().to_vec(), typed)
    }

    /// The balancer across ranks (rank 0's is used; default guided by the ranks' measured
    /// speeds, [`crate::guided::RankGuided`], which rank 0 also tells when each range's outputs
    /// arrive; a balancer given here hears nothing of that).
    pub fn balancer(mut self, balancer: Box<dyn Balancer>) -> Self {
        let given = crate::given::Given::new(balancer, self.balancer_dropped.clone());
        self.balancer = Some(Box::new(given));
        self
    }

    /// Makes each node's balancer, one per range (default Sigmoid).
    pub fn node_balancer(
        mut self,
        make: impl Fn() -> Box<dyn Balancer> + Send + Sync + 'static,
    ) -> Self {
        self.node_balancer = Arc::new(make);
        self.node_balancer_given = true;
        self
    }

    /// Injects `fault` into every range rank `rank` runs (testing the loss of a rank).
    pub fn inject(mut self, rank: usize, fault: Fault) -> Self {
        self.faults.push((rank, 0, fault));
        self
    }

    /// Testing: injects `fault` into the ranges rank `rank` runs from its `from`-th on (0-based),
    /// so that its devices fail in the middle of the launch, after earlier ranges merged.
    #[doc(hidden)]
    pub fn inject_from(mut self, rank: usize, from: usize, fault: Fault) -> Self {
        self.faults.push((rank, from, fault));
        self
    }

    /// Testing: rank `rank` answers `after` ranges, then leaves the launch with an error instead
    /// of answering the next one (as when its outputs are over MPI's message limit).
    #[doc(hidden)]
    pub fn inject_leave(mut self, rank: usize, after: usize) -> Self {
        self.leave = Some((rank, after));
        self
    }

    /// Testing: rank `rank` waits `delay` before its summary at the end of the launch, as a rank
    /// stuck after its last range would.
    #[doc(hidden)]
    pub fn inject_late_summary(mut self, rank: usize, delay: std::time::Duration) -> Self {
        self.late_summary = Some((rank, delay));
        self
    }

    /// How long a rank's range may run before rank 0 drops the rank and re-runs the range
    /// elsewhere (rank 0's rule is used; default [`crate::hier::RANK_WATCHDOG`]). A factor or
    /// floor of zero, below zero or not finite makes the run an error on every rank.
    pub fn rank_watchdog(mut self, rule: WatchdogRule) -> Self {
        self.watchdog = rule;
        self
    }

    /// Whether each node tells each range's balancer what its earlier ranges measured of its
    /// devices, so that a device too slow to matter in a range sits it out instead of probing
    /// it (default on; see `hetdsl_mpi::carry`). Each rank's own setting applies to its node.
    pub fn carry_speeds(mut self, on: bool) -> Self {
        self.carry_speeds = on;
        self
    }

    /// Whether a call of a launch the cluster ran before starts from what the last call
    /// measured (default on): rank 0 gives each rank one range sized so that all end together
    /// (`hetdsl_mpi::plan`; not with a balancer across ranks given by [`Self::balancer`]), and
    /// each node cuts its ranges into one package per device from its devices' speeds (not
    /// with a node balancer given by [`Self::node_balancer`]). Rank 0's setting decides the
    /// plan across ranks, each rank's its own node's. The same launch is the same kernel,
    /// NDRange, work-group size, argument shapes and number of ranks; scalar values do not
    /// count.
    pub fn remember(mut self, on: bool) -> Self {
        self.remember = on;
        self
    }

    /// The share of each rank's cost a plan holds back as a tail any rank may take while the
    /// plan is not settled (default [`crate::plan::PLAN_TAIL`], none: one range per rank,
    /// handed out in pieces where its moving pays for them).
    pub fn plan_tail(mut self, share: f64) -> Self {
        self.plan_tail = if share.is_finite() { share.clamp(0.0, 0.5) } else { 0.0 };
        self
    }

    /// Whether a rank gets its next range while it computes the last (on by default), where
    /// the ranks' balancer has one to give so early: the range's inputs then travel while the
    /// rank computes, and its node starts it as soon as the last one ends. Off: a rank gets
    /// its next range once it has said the last is done, as before (for comparisons).
    pub fn queue_ahead(mut self, on: bool) -> Self {
        self.queue_ahead = on;
        self
    }

    /// When each node runs a range cut from memory with each device's block in pieces
    /// (default [`crate::recall::PieceRule::default`]; see `recall::NodeForm`).
    pub fn node_pieces(mut self, rule: crate::recall::PieceRule) -> Self {
        self.piece_rule = rule;
        self
    }

    /// Rank 0: the argument error a single-node launch of these arguments gives, if any.
    pub(crate) fn check_types(&self) -> Result<()> {
        crate::typed::check(self.program, &self.spec.kernel, &self.typed)
    }

    /// What identifies this launch for [`Self::remember`] (the spec as agreed with rank 0).
    pub(crate) fn key(&self) -> String {
        let mut spec = self.spec.clone();
        for a in spec.args.iter_mut().filter(|a| a.kind == ArgKind::Scalar) {
            a.value.clear();
        }
        let shape = serde_json::to_string(&spec).unwrap_or_default();
        format!("{} ranks: {shape}", self.cluster.size())
    }

    /// Co-execute across the ranks. On rank 0 the outputs are complete and correct when this
    /// returns `Ok`, and the report covers every rank; on another rank the report holds its
    /// own rank only.
    pub fn run(self) -> Result<ClusterReport> {
        let dropped = self.balancer_dropped.clone();
        // The launch, and the balancer with it, is gone once the run returns.
        let ran = crate::run::run(self);
        let why = dropped.lock().unwrap_or_else(|e| e.into_inner()).take();
        match (ran, why) {
            (Ok(_), Some(why)) => Err(Error::BadBalancer(format!(
                "the balancer across ranks panicked when dropped, after the launch had \
                 completed (on rank 0 its outputs are written): {why}"
            ))),
            (ran, _) => ran,
        }
    }

    pub(crate) fn node(&self) -> Node<'a> {
        let mut node = Node::with_spares(
            self.program,
            self.spec.clone(),
            self.node_balancer.clone(),
            self.cluster.staging.clone(),
        );
        let me = self.cluster.rank();
        node.inject_from(
            self.faults
                .iter()
                .filter(|(r, _, _)| *r == me)
                .map(|(_, from, f)| (*from, *f))
                .collect(),
        );
        node.carry_speeds(self.carry_speeds);
        node.piece_rule(self.piece_rule);
        if self.remember && !self.node_balancer_given {
            node.recall(self.cluster.node_recall(&self.key()));
        }
        node
    }
}

/// A non-zero rank's link to rank 0, over MPI with this launch's tag.
pub(crate) struct MpiLink<'c> {
    pub(crate) world: &'c SimpleCommunicator,
    pub(crate) tag: i32,
}

/// The bytes of one message, if MPI can send them in one.
pub(crate) fn sendable(bytes: &[u8]) -> Result<&[u8]> {
    crate::wire::fits_one_message(bytes.len()).map(|()| bytes)
}

impl Link for MpiLink<'_> {
    fn recv(&mut self) -> Result<Msg> {
        let (bytes, _) = self.world.process_at_rank(0).receive_vec_with_tag::<u8>(self.tag);
        Msg::decode(&bytes)
    }
    fn send(&mut self, msg: Msg) -> Result<()> {
        let bytes = msg.encode();
        self.world.process_at_rank(0).send_with_tag(sendable(&bytes)?, self.tag);
        Ok(())
    }
}
