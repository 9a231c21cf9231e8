//! The plan of a launch: everything it asks for, checked on the caller's thread before any
//! device thread starts — the work-group range and geometry, the kernel, the devices, the
//! settings, and every argument against its pattern. A launch that passes is a [`Plan`] whose
//! arguments are ready for a device ([`ArgPlan`]); one that does not is the user's error, named,
//! and nothing has run.
//!
//! This module only reads the launch: it touches no OpenCL object and no thread. The caller's
//! slices become [`HostPtr`]s here, which only device threads dereference, under the run's gate.

use std::ops::Range;

use super::geometry::Geometry;
use super::program::ProgramDevice;
use super::{Arg, Fault, Launch, WaitMode, WatchdogConfig};
use crate::error::{Error, Result};
use crate::merge::{Merge, ReduceOps};
use crate::pattern::{Direction, Pattern};

/// The caller's memory for one buffer argument of `len` bytes: `span` bytes of it from byte
/// `origin` at `ptr` (all of it but for a window, `HostRegion::window`). Only dereferenced
/// under the run's gate.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HostPtr {
    pub(crate) ptr: *mut u8,
    pub(crate) len: usize,
    pub(crate) origin: usize,
    pub(crate) span: usize,
}

impl HostPtr {
    /// All `len` bytes at `ptr`.
    pub(crate) fn whole(ptr: *mut u8, len: usize) -> HostPtr {
        HostPtr { ptr, len, origin: 0, span: len }
    }

    /// Where the argument's `bytes` are, if the caller's memory holds them all (the plan
    /// checked that every package's do).
    pub(crate) fn at(&self, bytes: &Range<usize>) -> Option<*mut u8> {
        // SAFETY: the `span` bytes at `ptr` are the caller's slice or region.
        unsafe { super::region::locate(self.ptr, self.origin, self.span, bytes) }
    }
}
// SAFETY: the pointer is only dereferenced by device threads under `Shared::gate`, while the
// `Launch` that borrowed the caller's slices is still inside `run`; packages touch disjoint
// ranges of outputs, and inputs are only read.
unsafe impl Send for HostPtr {}
// SAFETY: as for `Send`: shared use is reads of inputs and writes of disjoint output ranges,
// each under the gate, which shuts on every way out of `run` before the borrow ends.
unsafe impl Sync for HostPtr {}

/// One kernel argument, ready for a device.
#[derive(Debug, Clone)]
pub(crate) enum ArgPlan {
    Buffer {
        index: usize,
        host: HostPtr,
        elem: usize,
        pattern: Pattern,
        dir: Direction,
    },
    Scalar {
        index: usize,
        bytes: Vec<u8>,
    },
    Local {
        index: usize,
        bytes: usize,
    },
    /// An output merged by reduction: whole on every device.
    Reduce {
        index: usize,
        host: HostPtr,
        elem: usize,
        merge: Merge,
        ops: ReduceOps,
    },
}

/// A launch, checked: what the run needs, with nothing left to refuse.
pub(crate) struct Plan {
    pub(crate) kernel: String,
    pub(crate) geo: Geometry,
    /// The balancing units the run covers (all of the NDRange's unless `Launch::groups` chose
    /// a sub-range).
    pub(crate) span: Range<u64>,
    /// The devices of the run, in the order of their positions.
    pub(crate) devices: Vec<ProgramDevice>,
    pub(crate) args: Vec<ArgPlan>,
    pub(crate) faults: Vec<Fault>,
    pub(crate) watchdog: WatchdogConfig,
    pub(crate) warmup: bool,
    pub(crate) poison: Option<u8>,
    pub(crate) backups: bool,
    pub(crate) wait: WaitMode,
    pub(crate) pipeline: bool,
    /// Each device's first package is checked for writes outside its range (a launch not
    /// yet run cleanly by the program; see `worker::stray`).
    pub(crate) check_writes: bool,
}

impl Plan {
    /// Check `launch` in the order a user meets its settings: environment, range, kernel,
    /// settings, devices, arguments. The first mistake found is the error.
    pub(super) fn new(launch: Launch<'_>) -> Result<Plan> {
        let Launch {
            program,
            kernel,
            global,
            local,
            args,
            devices,
            faults,
            watchdog,
            warmup,
            poison,
            groups,
            backups,
            wait,
            pipeline,
            env_wait,
            env_backups,
            env_pipeline,
            ..
        } = launch;
        if let Some(m) = env_wait.or(env_backups).or(env_pipeline) {
            return Err(Error::BadConfig(m));
        }
        let geo = Geometry::new(&global, &local)?;
        let span = groups.unwrap_or(0..geo.units);
        if span.start >= span.end || span.end > geo.units {
            return Err(Error::BadRange(format!(
                "work-group range {span:?} is empty or outside the NDRange's 0..{}",
                geo.units
            )));
        }
        if !program.kernel_names.contains(&kernel) {
            return Err(Error::NoSuchKernel {
                name: kernel,
                file: program.source_name.clone(),
                available: program.kernel_names.join(", "),
            });
        }
        let run_devices = devices.as_ref().map_or(program.devices.len(), Vec::len);
        validate(&watchdog, devices.as_deref(), &faults, run_devices)?;
        let chosen: Vec<ProgramDevice> = match &devices {
            None => program.devices.clone(),
            Some(ix) => {
                let mut v = Vec::new();
                for &i in ix {
                    let d = program.devices.get(i).ok_or_else(|| Error::NoDeviceMatches {
                        filter: format!("device position {i}"),
                        found: format!("{} device(s) in the program", program.devices.len()),
                    })?;
                    v.push(d.clone());
                }
                v
            }
        };
        if chosen.is_empty() {
            return Err(Error::NoDeviceMatches {
                filter: "an empty device list".into(),
                found: String::new(),
            });
        }
        let args = plan_arguments(args, &geo, &span)?;
        Ok(Plan {
            kernel,
            geo,
            span,
            devices: chosen,
            args,
            faults,
            watchdog,
            warmup,
            poison,
            backups,
            wait,
            pipeline,
            check_writes: poison.is_none(),
        })
    }

    /// Balancing units in the run.
    pub(super) fn units(&self) -> u64 {
        self.span.end - self.span.start
    }

    /// Why each device that cannot hold this launch's buffers cannot (`limits::holds`), by
    /// position: such a device sits a co-executed launch out.
    pub(super) fn unfit(&self) -> Vec<(usize, Error)> {
        let buffers = buffer_sizes(&self.args);
        let items = self.geo.total_items();
        let why = |d: &ProgramDevice| super::limits::holds(&d.info, &buffers, items).err();
        let unfit = self.devices.iter().enumerate().filter_map(|(at, d)| Some((at, d, why(d)?)));
        unfit
            .map(|(at, d, reason)| {
                (at, Error::DeviceLimit { device: at, name: d.info.name.clone(), reason })
            })
            .collect()
    }

    /// Only the devices at positions `taking` (ascending) run: the others sit the launch out,
    /// and so do the faults aimed at them; the rest are aimed at their device's new position.
    pub(super) fn narrow(&mut self, taking: &[usize]) {
        self.devices = taking.iter().map(|&d| self.devices[d].clone()).collect();
        self.faults = std::mem::take(&mut self.faults)
            .into_iter()
            .filter_map(|f| {
                let at = taking.iter().position(|&d| d == fault_device(&f))?;
                Some(aimed_at(f, at))
            })
            .collect();
    }

    /// The injected faults aimed at the device at position `me`.
    pub(super) fn faults_of(&self, me: usize) -> Vec<Fault> {
        self.faults.iter().copied().filter(|f| fault_device(f) == me).collect()
    }

    /// Some output is merged by reduction (every package folds into the whole of it).
    pub(super) fn reduces(&self) -> bool {
        self.args.iter().any(|p| matches!(p, ArgPlan::Reduce { .. }))
    }
}

/// Everything a launch asks for, checked against the kernel's geometry.
fn plan_arguments(args: Vec<Arg<'_>>, geo: &Geometry, span: &Range<u64>) -> Result<Vec<ArgPlan>> {
    let mut plans = Vec::with_capacity(args.len());
    for (index, arg) in args.into_iter().enumerate() {
        let bad = |reason: String| Error::BadArgument { index, reason };
        let (host, elem, pattern, dir) = match arg {
            Arg::Scalar(bytes) => {
                plans.push(ArgPlan::Scalar { index, bytes });
                continue;
            }
            Arg::Local(bytes) => {
                if bytes == 0 {
                    return Err(bad("a __local buffer of 0 bytes".into()));
                }
                plans.push(ArgPlan::Local { index, bytes });
                continue;
            }
            Arg::LocalPerItem(per_item) => {
                if per_item == 0 {
                    return Err(bad("a __local buffer of 0 bytes per work-item".into()));
                }
                // Saturated: too large a product is refused against the device's local memory.
                let bytes = per_item.saturating_mul(geo.items_per_group as usize);
                plans.push(ArgPlan::Local { index, bytes });
                continue;
            }
            Arg::Reduce { bytes, elem, merge, ops } => {
                let len = bytes.len();
                if len == 0 {
                    return Err(bad("an empty buffer (OpenCL cannot allocate 0 bytes)".into()));
                }
                if elem == 0 || len % elem != 0 {
                    return Err(bad(format!(
                        "{len} bytes is not a whole number of {elem}-byte elements"
                    )));
                }
                if !(ops.supported)(merge) {
                    return Err(bad(format!(
                        "merge `{merge}` applies to integers only, and this output holds {ops:?}; \
                         use sum, max or min"
                    )));
                }
                let host = HostPtr::whole(bytes.as_mut_ptr(), len);
                plans.push(ArgPlan::Reduce { index, host, elem, merge, ops });
                continue;
            }
            Arg::In { bytes, elem, pattern } => {
                let host = HostPtr::whole(bytes.as_ptr() as *mut u8, bytes.len());
                (host, elem, pattern, Direction::In)
            }
            Arg::Out { bytes, elem, pattern, dir } => {
                (HostPtr::whole(bytes.as_mut_ptr(), bytes.len()), elem, pattern, dir)
            }
            Arg::Region { region, elem, pattern, dir } => {
                let host = HostPtr {
                    ptr: region.as_ptr(),
                    len: region.arg_len(),
                    origin: region.origin(),
                    span: region.len(),
                };
                (host, elem, pattern, dir)
            }
        };
        check_buffer(&host, elem, pattern, dir, geo, span).map_err(bad)?;
        plans.push(ArgPlan::Buffer { index, host, elem, pattern, dir });
    }
    Ok(plans)
}

/// A buffer argument's length against its element size and pattern, and a window against
/// what the launch's work-groups `span` touch.
fn check_buffer(
    host: &HostPtr,
    elem: usize,
    pattern: Pattern,
    dir: Direction,
    geo: &Geometry,
    span: &Range<u64>,
) -> std::result::Result<(), String> {
    let total_items = geo.total_items();
    let len = host.len;
    if len == 0 {
        return Err("an empty buffer (OpenCL cannot allocate 0 bytes)".into());
    }
    if elem == 0 || !len.is_multiple_of(elem) {
        return Err(format!("{len} bytes is not a whole number of {elem}-byte elements"));
    }
    let elems = (len / elem) as u64;
    match pattern {
        Pattern::Whole if dir.writes() => return Err(
            "an output cannot be `whole`: each device would write all of it; give it a pattern a:b"
                .into(),
        ),
        Pattern::Whole => {}
        Pattern::Halo { .. } if dir.writes() => {
            return Err(format!(
                "pattern {pattern} is read-only: a halo overlaps its neighbours' packages; \
                 give the output 1:1"
            ))
        }
        // A halo input: each package's rows and `r` more on each side, from the caller's.
        Pattern::Ratio { .. } | Pattern::Halo { .. } => {
            pattern.check_granularity(geo.items_per_unit)?;
            if let Some(need) = pattern.required_len(total_items)?.filter(|&n| n != elems) {
                return Err(format!(
                    "buffer has {elems} elements but pattern {pattern} over {total_items} work-items needs {need}{}",
                    rounded_up(geo, pattern, elems, need)
                ));
            }
        }
    }
    if host.origin > 0 || host.span < host.len {
        check_window(host, elem, pattern, geo, span)?;
    }
    Ok(())
}

/// How to fill a buffer short of its pattern's length where an NDRange rounded up to the
/// work-group size explains it (its kernel checking each index against the sizes, empty
/// otherwise): in 1-D by less than a work-group's elements; in 2-D and 3-D where the buffer
/// has the elements of a range short of the launched one by less than a work-group in each
/// dimension.
pub(crate) fn rounded_up(geo: &Geometry, pattern: Pattern, elems: u64, need: u64) -> String {
    if elems >= need {
        return String::new();
    }
    if geo.global.len() == 1 {
        let group = pattern.elements(0, geo.items_per_group, need).end;
        if need - elems >= group {
            return String::new();
        }
        return format!(
            "; over a 1-D NDRange rounded up to a multiple of the work-group size (its kernel \
             checking each index against the length), every buffer has the rounded length: pad \
             this one to {need} elements"
        );
    }
    let Some(sizes) = unrounded(geo, |items| pattern.required_len(items) == Ok(Some(elems))) else {
        return String::new();
    };
    let rows = geo.global[1..].iter().product::<usize>() as u64;
    if !need.is_multiple_of(rows) {
        return String::new();
    }
    let show = |v: &[usize]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(" × ");
    format!(
        "; if these are the elements of a {} range, rounded up to the work-group size to the {} \
         NDRange launched (its kernel checking each index against the sizes), every buffer is \
         laid out over the launched range: pad each row to {} elements and the buffer to \
         {rows} rows ({need} elements), the kernel indexing rows by the padded length",
        show(&sizes),
        show(&geo.global),
        need / rows,
    )
}

/// The largest sizes, each short of the global size by less than the work-group size in its
/// dimension (the global size included), whose work-items `fits`; `None` where none does.
fn unrounded(geo: &Geometry, fits: impl Fn(u64) -> bool) -> Option<Vec<usize>> {
    // At most the work-group's size of candidates (a few hundred, a thousand at most).
    let choices: Vec<Vec<usize>> = geo
        .global
        .iter()
        .zip(&geo.local)
        .map(|(&g, &l)| (g.saturating_sub(l) + 1..=g).rev().collect())
        .collect();
    let mut pick = vec![0usize; choices.len()];
    loop {
        let sizes: Vec<usize> = pick.iter().zip(&choices).map(|(&k, c)| c[k]).collect();
        if fits(sizes.iter().map(|&x| x as u64).product()) {
            return Some(sizes);
        }
        // The next combination, the first dimension fastest.
        let mut d = 0;
        loop {
            if d == pick.len() {
                return None;
            }
            pick[d] += 1;
            if pick[d] < choices[d].len() {
                break;
            }
            pick[d] = 0;
            d += 1;
        }
    }
}

/// A window of an argument (`HostRegion::window`) must hold every byte the launch's
/// work-groups `span` touch by `pattern`: a package never reads or writes outside it.
fn check_window(
    host: &HostPtr,
    elem: usize,
    pattern: Pattern,
    geo: &Geometry,
    span: &Range<u64>,
) -> std::result::Result<(), String> {
    let all = crate::work::Package { offset: span.start, len: span.end - span.start };
    let touched = geo.bytes(all, pattern, elem, host.len);
    if host.origin.checked_add(host.span).is_none_or(|end| end > host.len) {
        return Err(format!(
            "a window of bytes {}..{} of a {}-byte argument runs past its end",
            host.origin,
            host.origin.saturating_add(host.span),
            host.len
        ));
    }
    match host.at(&touched) {
        Some(_) => Ok(()),
        None => Err(format!(
            "the launch's work-groups {span:?} touch bytes {touched:?} ({pattern}), and the window \
             holds only bytes {}..{}",
            host.origin,
            host.origin + host.span
        )),
    }
}

/// Every setting of a launch that is not an argument or the geometry, checked before anything
/// starts: a value that means nothing is an error naming it, never a panic mid-run.
pub(super) fn validate(
    watchdog: &WatchdogConfig,
    devices: Option<&[usize]>,
    faults: &[Fault],
    run_devices: usize,
) -> Result<()> {
    let bad = |m: String| Err(Error::BadConfig(m));
    if !(watchdog.factor.is_finite() && watchdog.factor > 0.0) {
        return bad(format!(
            "watchdog factor {} must be a finite number above 0 (how many times its predicted \
             time a package may run)",
            watchdog.factor
        ));
    }
    if watchdog.min.is_zero() {
        return bad("watchdog min must be above zero (the shortest time before a device may be \
                    declared hung)"
            .into());
    }
    if let Some(ix) = devices {
        for (k, i) in ix.iter().enumerate() {
            if ix[..k].contains(i) {
                return bad(format!(
                    "device position {i} given twice in on_devices({ix:?}): a device runs once"
                ));
            }
        }
    }
    for f in faults {
        if fault_device(f) >= run_devices {
            return bad(format!(
                "fault {f:?} aims at device {} but the run has {run_devices} device(s)",
                fault_device(f)
            ));
        }
        if let Fault::Slow { factor: 0, .. } = f {
            return bad(format!("fault {f:?}: a slow-down factor of 0"));
        }
    }
    Ok(())
}

/// (argument index, bytes) of every buffer a device must hold for `args`.
pub(crate) fn buffer_sizes(args: &[ArgPlan]) -> Vec<(usize, u64)> {
    args.iter()
        .filter_map(|a| match a {
            ArgPlan::Buffer { index, host, .. } | ArgPlan::Reduce { index, host, .. } => {
                Some((*index, host.len as u64))
            }
            _ => None,
        })
        .collect()
}

/// `f` aimed at the device now at position `device`.
fn aimed_at(f: Fault, device: usize) -> Fault {
    match f {
        Fault::Fail { package, .. } => Fault::Fail { device, package },
        Fault::Hang { package, .. } => Fault::Hang { device, package },
        Fault::Slow { factor, .. } => Fault::Slow { device, factor },
        Fault::Stall { millis, .. } => Fault::Stall { device, millis },
        Fault::Panic { package, .. } => Fault::Panic { device, package },
        Fault::HangSetup { .. } => Fault::HangSetup { device },
        Fault::SlowSetup { millis, .. } => Fault::SlowSetup { device, millis },
        Fault::HangReadBack { package, .. } => Fault::HangReadBack { device, package },
    }
}

pub(super) fn fault_device(f: &Fault) -> usize {
    match *f {
        Fault::Fail { device, .. }
        | Fault::Hang { device, .. }
        | Fault::Slow { device, .. }
        | Fault::Stall { device, .. }
        | Fault::Panic { device, .. }
        | Fault::HangSetup { device }
        | Fault::SlowSetup { device, .. }
        | Fault::HangReadBack { device, .. } => device,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_checked_against_patterns() {
        let geo = Geometry::new(&[256], &[64]).unwrap();
        let x = vec![0f32; 256];
        let short = vec![0f32; 255];
        let mut out = vec![0f32; 4];
        let ok = plan_arguments(
            vec![
                Arg::In { bytes: crate::pod::bytes_of(&x), elem: 4, pattern: Pattern::ONE_TO_ONE },
                Arg::Out {
                    bytes: crate::pod::bytes_of_mut(&mut out),
                    elem: 4,
                    pattern: Pattern::ratio(1, 64).unwrap(),
                    dir: Direction::Out,
                },
                Arg::Scalar(vec![0; 4]),
            ],
            &geo,
            &(0..geo.units),
        );
        assert_eq!(ok.unwrap().len(), 3);
        let bad = plan_arguments(
            vec![Arg::In {
                bytes: crate::pod::bytes_of(&short),
                elem: 4,
                pattern: Pattern::ONE_TO_ONE,
            }],
            &geo,
            &(0..geo.units),
        );
        assert!(matches!(bad, Err(Error::BadArgument { index: 0, .. })));
        let whole_out = plan_arguments(
            vec![Arg::Out {
                bytes: crate::pod::bytes_of_mut(&mut out),
                elem: 4,
                pattern: Pattern::Whole,
                dir: Direction::Out,
            }],
            &geo,
            &(0..geo.units),
        );
        assert!(matches!(whole_out, Err(Error::BadArgument { .. })));
        let split = plan_arguments(
            vec![Arg::In {
                bytes: crate::pod::bytes_of(&x),
                elem: 4,
                pattern: Pattern::ratio(1, 128).unwrap(),
            }],
            &geo,
            &(0..geo.units),
        );
        assert!(matches!(split, Err(Error::BadArgument { .. })), "1:128 cannot split groups of 64");
    }
}
