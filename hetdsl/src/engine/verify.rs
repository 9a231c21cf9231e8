//! A co-execution check for users: run a launch once on one device alone (one package), once
//! co-executed over every device of the launch with a deliberately uneven, randomised split,
//! and compare every output element. Before each run every device buffer is set to a fill byte,
//! a different one for each run (the caller's data then goes where the patterns say): a kernel
//! that reads beyond what its pattern gives a package, or leaves an output element unwritten,
//! sees or leaves different bytes in the two runs, whatever earlier launches left there. A
//! kernel whose declared patterns do not match what it really writes (an output declared 1:1
//! that each work-item writes twice), or that depends on where its package starts, differs;
//! the difference names the argument, the parameter, the element and the package that wrote
//! it.

use std::fmt;

use hetdsl_decl::argcheck::{HostType, Prim};
use hetdsl_decl::clsig::{Scalar, Ty};

use super::geometry::Geometry;
use super::{Arg, Launch};
use crate::balance::{Package, RandomSplit, Static};
use crate::error::{Error, Result};
use crate::pattern::Pattern;
use crate::report::Report;

/// The seed of the random split when the launch gives none (see [`Launch::verify_seed`]).
pub const DEFAULT_SEED: u64 = 0x5EED_C0DE;

/// The bytes every device buffer is set to before the run alone and before the co-executed run.
const FILL_ALONE: u8 = 0xA5;
const FILL_COEXECUTED: u8 = 0x5A;

/// The outcome of [`Launch::verify`].
#[derive(Debug)]
pub struct Verification {
    /// The seed of the random split, to run the same split again.
    pub seed: u64,
    /// The run on one device alone.
    pub alone: Report,
    /// The co-executed run.
    pub coexecuted: Report,
    /// The first output element that differs, if any.
    pub difference: Option<Difference>,
}

impl Verification {
    /// Every output element was the same co-executed as alone (within the tolerance).
    pub fn passed(&self) -> bool {
        self.difference.is_none()
    }
}

/// Where a co-executed output first differs from the same launch on one device alone.
#[derive(Debug, Clone, PartialEq)]
pub struct Difference {
    /// The argument's index in the launch.
    pub argument: usize,
    /// The parameter's name in the kernel, when known.
    pub parameter: Option<String>,
    /// The first element (of the buffer's element type) that differs.
    pub element: u64,
    /// How many elements of that buffer differ.
    pub count: u64,
    /// The co-executed package that wrote the element, and its device (position in the launch
    /// and name), when the buffer is split by a pattern.
    pub package: Option<(Package, usize, String)>,
    /// On one device alone the element kept the fill byte set before the run: no work-item
    /// writes it.
    pub unwritten: bool,
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "argument {}", self.argument)?;
        if let Some(p) = &self.parameter {
            write!(f, " (parameter `{p}`)")?;
        }
        write!(
            f,
            ": element {} differs co-executed from the run on one device alone ({} element(s) \
             differ)",
            self.element, self.count
        )?;
        if let Some((p, device, name)) = &self.package {
            write!(
                f,
                "; it was written by the package of work-group units {}..{} (offset {}, length \
                 {}) on device {device} ({name})",
                p.offset,
                p.end(),
                p.offset,
                p.len
            )?;
        }
        if self.unwritten {
            return write!(
                f,
                ". No work-item writes it: on one device alone too it kept the fill byte \
                 hetdsl set before the run. An output's elements that the kernel does not write \
                 are undefined; give the argument as `inout` if the kernel leaves some as they \
                 were"
            );
        }
        write!(
            f,
            ". Check that the parameter's pattern says how many elements each work-item writes \
             and which elements each reads, and that the kernel does not depend on which device \
             or package runs it"
        )
    }
}

/// How to compare the elements of one output.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Lanes {
    Bytes,
    F32(f64, f64),
    F64(f64, f64),
}

/// The settings both runs share.
struct Base<'p> {
    program: &'p super::Program,
    kernel: String,
    global: Vec<usize>,
    local: Vec<usize>,
    watchdog: super::WatchdogConfig,
    warmup: bool,
    groups: Option<std::ops::Range<u64>>,
    wait: super::WaitMode,
    pipeline: bool,
    env_wait: Option<String>,
    env_backups: Option<String>,
    env_pipeline: Option<String>,
    arg_types: Vec<Option<HostType>>,
}

/// A launch of `base` whose outputs are `copies` (one per output, in argument order), its
/// device buffers set to `fill` first.
fn build<'b>(
    base: &Base<'b>,
    slots: &'b [Arg<'_>],
    copies: &'b mut [Vec<u8>],
    fill: u8,
) -> Launch<'b> {
    let mut launch =
        Launch::new(base.program, &base.kernel).global(&base.global).local(&base.local);
    launch.poison = Some(fill);
    launch.watchdog = base.watchdog;
    launch.warmup = base.warmup;
    launch.groups = base.groups.clone();
    launch.wait = base.wait;
    launch.env_wait = base.env_wait.clone();
    launch.env_backups = base.env_backups.clone();
    launch.pipeline = base.pipeline;
    launch.env_pipeline = base.env_pipeline.clone();
    // One copy of each package, so that a difference names the package that wrote it.
    launch.backups = false;
    let mut copies = copies.iter_mut();
    for arg in slots {
        let arg = match arg {
            Arg::In { bytes, elem, pattern } => Arg::In { bytes, elem: *elem, pattern: *pattern },
            Arg::Scalar(v) => Arg::Scalar(v.clone()),
            Arg::Local(n) => Arg::Local(*n),
            Arg::LocalPerItem(n) => Arg::LocalPerItem(*n),
            Arg::Out { elem, pattern, dir, .. } => {
                let bytes = copies.next().map_or(&mut [][..], |c| c.as_mut_slice());
                Arg::Out { bytes, elem: *elem, pattern: *pattern, dir: *dir }
            }
            Arg::Reduce { elem, merge, ops, .. } => {
                let bytes = copies.next().map_or(&mut [][..], |c| c.as_mut_slice());
                Arg::Reduce { bytes, elem: *elem, merge: *merge, ops: *ops }
            }
            // Refused by `verify` before any run.
            Arg::Region { region, elem, pattern, dir } => {
                Arg::Region { region: *region, elem: *elem, pattern: *pattern, dir: *dir }
            }
        };
        launch = launch.arg(arg);
    }
    // The Rust types, for the argument check of each run.
    launch.arg_types.clone_from(&base.arg_types);
    launch
}

/// The bytes of an output argument.
fn out_bytes<'s>(arg: &'s mut Arg<'_>) -> Option<&'s mut [u8]> {
    match arg {
        Arg::Out { bytes, .. } | Arg::Reduce { bytes, .. } => Some(bytes),
        _ => None,
    }
}

pub(crate) fn verify(launch: Launch<'_>) -> Result<Verification> {
    let Launch {
        program,
        kernel,
        global,
        local,
        args,
        arg_types,
        devices,
        watchdog,
        warmup,
        groups,
        wait,
        pipeline,
        env_wait,
        env_backups,
        env_pipeline,
        tolerance,
        seed,
        ..
    } = launch;
    if args.iter().any(|a| matches!(a, Arg::Region { .. })) {
        return Err(Error::BadConfig(
            "verify copies the caller's outputs, which an argument given by address \
             (Arg::Region) does not lend: pass slices to verify"
                .into(),
        ));
    }
    // A NaN or negative bound compares bit for bit, an infinite one passes anything.
    if let Some((abs, rel)) =
        tolerance.filter(|(a, r)| ![a, r].iter().all(|v| v.is_finite() && **v >= 0.0))
    {
        return Err(Error::BadConfig(format!(
            "verify_within({abs}, {rel}): each bound is a finite number of at least 0"
        )));
    }
    let seed = seed.unwrap_or(DEFAULT_SEED);
    let devices = devices.unwrap_or_else(|| (0..program.devices.len()).collect());
    let mut slots = args;
    let initial: Vec<Vec<u8>> =
        slots.iter_mut().filter_map(out_bytes).map(|b| b.to_vec()).collect();
    let base = Base {
        program,
        kernel,
        global,
        local,
        watchdog,
        warmup,
        groups,
        wait,
        pipeline,
        env_wait,
        env_backups,
        env_pipeline,
        arg_types,
    };
    let mut alone_out = initial.clone();
    let alone = build(&base, &slots, &mut alone_out, FILL_ALONE)
        .on_devices(&devices[..devices.len().min(1)])
        .balancer(Box::new(Static::nominal()))
        .run()?;
    let mut co_out = initial;
    let coexecuted = build(&base, &slots, &mut co_out, FILL_COEXECUTED)
        .on_devices(&devices)
        .balancer(Box::new(RandomSplit::new(seed)))
        .run()?;
    let outs = Outputs { alone: &alone_out, coexecuted: &co_out, report: &coexecuted };
    let difference = first_difference(&base, &slots, outs, tolerance)?;
    // The caller's buffers: the co-executed result when it agrees, else the one device's.
    let chosen = if difference.is_none() { co_out } else { alone_out };
    for (slot, bytes) in slots.iter_mut().filter_map(out_bytes).zip(chosen) {
        slot.copy_from_slice(&bytes);
    }
    Ok(Verification { seed, alone, coexecuted, difference })
}

/// The two runs' copies of the outputs (in argument order) and the co-executed run's report.
#[derive(Clone, Copy)]
struct Outputs<'o> {
    alone: &'o [Vec<u8>],
    coexecuted: &'o [Vec<u8>],
    report: &'o Report,
}

/// The first output element that differs between the two runs, comparing the outputs in
/// argument order, each element within the tolerance its type allows.
fn first_difference(
    base: &Base<'_>,
    slots: &[Arg<'_>],
    outs: Outputs<'_>,
    tolerance: Option<(f64, f64)>,
) -> Result<Option<Difference>> {
    let geometry = Geometry::new(&base.global, &base.local)?;
    let mut k = 0;
    for (index, slot) in slots.iter().enumerate() {
        let (elem, pattern) = match slot {
            Arg::Out { elem, pattern, .. } => (*elem, Some(*pattern)),
            Arg::Reduce { elem, .. } => (*elem, None),
            _ => continue,
        };
        let (a, c) = (&outs.alone[k], &outs.coexecuted[k]);
        k += 1;
        let param = base.program.signatures.param(&base.kernel, index);
        let lanes =
            lanes(param.map(|p| &p.ty), base.arg_types.get(index).copied().flatten(), tolerance);
        let differs: Vec<u64> = (0..a.len() / elem.max(1))
            .filter(|&e| {
                let r = e * elem..(e + 1) * elem;
                !same(&a[r.clone()], &c[r], lanes)
            })
            .map(|e| e as u64)
            .collect();
        let Some(&element) = differs.first() else { continue };
        let package = pattern.and_then(|p| package_of(p, element, &geometry, outs.report));
        let r = element as usize * elem..(element as usize + 1) * elem;
        // On one device alone every input is whole: an element left at the fill byte there is
        // one the kernel never writes (in the co-executed run it may be a poisoned read).
        let unwritten = a[r].iter().all(|&b| b == FILL_ALONE);
        return Ok(Some(Difference {
            argument: index,
            parameter: param.map(|p| p.name.clone()),
            element,
            count: differs.len() as u64,
            package,
            unwritten,
        }));
    }
    Ok(None)
}

/// The co-executed package that wrote output `element` of an argument split by `pattern`, its
/// device's index and name.
fn package_of(
    pattern: Pattern,
    element: u64,
    geometry: &Geometry,
    report: &Report,
) -> Option<(Package, usize, String)> {
    match pattern {
        Pattern::Ratio { a, b } => {
            let item = (u128::from(element) * u128::from(b) / u128::from(a)) as u64;
            let unit = item / geometry.items_per_unit.max(1);
            report
                .trace
                .iter()
                .find(|t| t.merged && t.package.offset <= unit && unit < t.package.end())
                .map(|t| {
                    let name =
                        report.devices.get(t.device).map_or_else(String::new, |d| d.name.clone());
                    (t.package, t.device, name)
                })
        }
        // Outputs are never whole or halo (refused by the plan).
        Pattern::Whole | Pattern::Halo { .. } => None,
    }
}

/// How to compare the elements of an output: bit for bit, or floats within `tolerance` (the
/// kernel's declared element type decides, else the Rust one).
fn lanes(cl: Option<&Ty>, host: Option<HostType>, tolerance: Option<(f64, f64)>) -> Lanes {
    let Some((abs, rel)) = tolerance else { return Lanes::Bytes };
    let float = match cl {
        Some(Ty::Scalar(s) | Ty::Vector(s, _)) => Some(*s),
        _ => match host {
            Some(HostType::Prim(Prim::F32) | HostType::Array(Prim::F32, _)) => Some(Scalar::Float),
            Some(HostType::Prim(Prim::F64) | HostType::Array(Prim::F64, _)) => Some(Scalar::Double),
            _ => None,
        },
    };
    match float {
        Some(Scalar::Float) => Lanes::F32(abs, rel),
        Some(Scalar::Double) => Lanes::F64(abs, rel),
        _ => Lanes::Bytes,
    }
}

fn close(a: f64, b: f64, abs: f64, rel: f64) -> bool {
    a.to_bits() == b.to_bits() || (a - b).abs() <= abs + rel * a.abs().max(b.abs())
}

fn same(a: &[u8], b: &[u8], lanes: Lanes) -> bool {
    match lanes {
        Lanes::Bytes => a == b,
        Lanes::F32(abs, rel) if a.len().is_multiple_of(4) => {
            a.chunks_exact(4).zip(b.chunks_exact(4)).all(|(x, y)| {
                let x = f32::from_ne_bytes([x[0], x[1], x[2], x[3]]);
                let y = f32::from_ne_bytes([y[0], y[1], y[2], y[3]]);
                x.to_bits() == y.to_bits() || close(f64::from(x), f64::from(y), abs, rel)
            })
        }
        Lanes::F64(abs, rel) if a.len().is_multiple_of(8) => {
            a.chunks_exact(8).zip(b.chunks_exact(8)).all(|(x, y)| {
                let x = f64::from_ne_bytes(x.try_into().unwrap_or([0; 8]));
                let y = f64::from_ne_bytes(y.try_into().unwrap_or([0; 8]));
                close(x, y, abs, rel)
            })
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_compare_within_the_tolerance_and_other_bytes_exactly() {
        let f = |v: &[f32]| v.iter().flat_map(|x| x.to_ne_bytes()).collect::<Vec<u8>>();
        let within = Lanes::F32(1e-6, 1e-3);
        assert!(same(&f(&[1.0, 2.0]), &f(&[1.0005, 2.0]), within));
        assert!(!same(&f(&[1.0, 2.0]), &f(&[1.01, 2.0]), within));
        assert!(same(&f(&[f32::NAN]), &f(&[f32::NAN]), within));
        assert!(!same(&f(&[1.0]), &f(&[1.0000001]), Lanes::Bytes));
        assert_eq!(lanes_of(Some(&Ty::Vector(Scalar::Float, 4))), Lanes::F32(0.0, 1e-3));
        assert_eq!(lanes_of(Some(&Ty::Scalar(Scalar::Int))), Lanes::Bytes);
        assert_eq!(lanes(None, None, None), Lanes::Bytes);
    }

    fn lanes_of(ty: Option<&Ty>) -> Lanes {
        lanes(ty, None, Some((0.0, 1e-3)))
    }
}
