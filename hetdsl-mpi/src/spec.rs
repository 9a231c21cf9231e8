//! What every rank must know of a launch to run its share: the kernel, the NDRange, and each
//! argument's kind, element size, length and pattern (scalars with their value). Rank 0 sends
//! it to the others, so their own buffers may be empty; the maths of which elements a package
//! of balancing units touches lives here. Pure: numbers in, numbers out.

use std::ops::Range;

use hetdsl::{Error, Package, Pattern, Result};

/// The role of one kernel argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ArgKind {
    /// Read by the kernel: each rank receives the elements its packages read (`Whole`: all).
    In,
    /// Written by the kernel: each package's elements go back to rank 0.
    Out,
    /// Read and written: both of the above.
    InOut,
    /// A value passed by copy.
    Scalar,
    /// `__local` bytes per work-group.
    Local,
    /// `__local` bytes per work-item.
    LocalPerItem,
}

impl ArgKind {
    pub fn is_buffer(self) -> bool {
        matches!(self, ArgKind::In | ArgKind::Out | ArgKind::InOut)
    }
    /// Rank 0 sends this buffer's elements to the rank that runs a package.
    pub fn reads(self) -> bool {
        matches!(self, ArgKind::In | ArgKind::InOut)
    }
    /// The rank that runs a package sends this buffer's elements back.
    pub fn writes(self) -> bool {
        matches!(self, ArgKind::Out | ArgKind::InOut)
    }
}

/// One argument as every rank sees it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ArgSpec {
    pub kind: ArgKind,
    /// Bytes per element (buffers), 0 otherwise.
    pub elem: u64,
    /// Elements in the caller's buffer (buffers), 0 otherwise.
    pub len: u64,
    pub pattern: Option<Pattern>,
    /// A scalar's value, or a `__local` argument's byte count (little-endian `u64`).
    pub value: Vec<u8>,
}

impl ArgSpec {
    pub fn bytes(&self) -> u64 {
        self.elem * self.len
    }
}

/// A launch as every rank sees it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LaunchSpec {
    pub kernel: String,
    pub global: Vec<usize>,
    pub local: Vec<usize>,
    pub args: Vec<ArgSpec>,
}

impl LaunchSpec {
    /// Balancing units (work-groups in 1-D, rows of work-groups in 2-D) and work-items per
    /// unit, as the engine counts them; an error for a range the engine would refuse.
    pub fn units(&self) -> Result<(u64, u64)> {
        let (g, l) = (&self.global, &self.local);
        let bad = |m: String| Err(Error::BadRange(m));
        if g.is_empty() || g.len() > 2 || l.len() != g.len() {
            return bad(format!("global {g:?} and local {l:?}: need 1 or 2 matching dimensions"));
        }
        if g.iter().chain(l).any(|x| *x == 0) || g.iter().zip(l).any(|(g, l)| g % l != 0) {
            return bad(format!("global {g:?} is empty or not a multiple of local {l:?}"));
        }
        let (units, per_unit) = match g.len() {
            1 => ((g[0] / l[0]) as u64, Some(l[0] as u64)),
            _ => ((g[1] / l[1]) as u64, (g[0] as u64).checked_mul(l[1] as u64)),
        };
        // Wrapped, the range's numbers would pass every check here and reach the engine.
        match per_unit.filter(|p| p.checked_mul(units).is_some()) {
            Some(per_unit) => Ok((units, per_unit)),
            None => bad(format!("global {g:?} holds 2^64 work-items or more")),
        }
    }

    /// The byte range of argument `arg` that `package` touches: its pattern's elements for a
    /// sliced buffer, the whole buffer for a `Whole` one, nothing for other arguments.
    pub fn byte_range(&self, arg: usize, package: Package) -> Result<Range<usize>> {
        let a = &self.args[arg];
        let Some(pattern) = a.pattern.filter(|_| a.kind.is_buffer()) else { return Ok(0..0) };
        let (units, per_unit) = self.units()?;
        // A range from the wire is checked, not trusted: past the NDRange its numbers wrap.
        if package.offset.checked_add(package.len).is_none_or(|end| end > units) {
            return Err(Error::BadRange(format!("{package:?} is outside the {units} units")));
        }
        // A halo counts steps of the slowest dimension, as the engine does: a 2-D range's rows,
        // a 1-D range's single elements (`units` checked that `global` is not empty).
        let row_len: u64 = self.global[..self.global.len() - 1].iter().map(|&x| x as u64).product();
        let (first, items) = (package.offset * per_unit, package.len * per_unit);
        let items = pattern.elements_in_rows(first, items, a.len, row_len);
        if items.end > a.len {
            return Err(Error::BadArgument {
                index: arg,
                reason: format!(
                    "pattern {pattern} needs elements up to {} but the buffer holds {}",
                    items.end, a.len
                ),
            });
        }
        Ok((items.start * a.elem) as usize..(items.end * a.elem) as usize)
    }

    /// What this crate refuses before anything runs (the engine checks the rest on each rank):
    /// a buffer whose length its pattern does not give, a `Whole` output (no rank could merge
    /// it), and what every rank's engine would refuse of a buffer on its first range.
    pub fn check(&self) -> Result<()> {
        let (units, per_unit) = self.units()?;
        let all = Package { offset: 0, len: units };
        for (i, a) in self.args.iter().enumerate() {
            if a.kind.writes() && a.pattern == Some(Pattern::Whole) {
                return Err(Error::BadArgument {
                    index: i,
                    reason: "a `whole` output cannot be split among ranks; give it an a:b pattern"
                        .into(),
                });
            }
            // `Pattern::ratio` refuses a zero side, but the variant's fields are public: one
            // would divide by zero below, on rank 0 alone, leaving the others in a collective.
            if let Some(p @ Pattern::Ratio { a: 0, .. } | p @ Pattern::Ratio { b: 0, .. }) =
                a.pattern
            {
                return Err(Error::BadArgument {
                    index: i,
                    reason: format!("pattern {p} has a zero side"),
                });
            }
            if let Some(pattern) = a.pattern.filter(|_| a.kind.is_buffer()) {
                let items = units * per_unit;
                let refuse = |reason| Error::BadArgument { index: i, reason };
                buffer_fits(a, pattern, items, per_unit).map_err(refuse)?;
            }
            self.byte_range(i, all)?;
        }
        Ok(())
    }

    /// Whether two ranks described the same launch (kernel, NDRange, argument kinds, element
    /// sizes and patterns); lengths and values come from rank 0 and are not compared.
    pub fn same_shape(&self, other: &LaunchSpec) -> bool {
        let shape = |s: &LaunchSpec| {
            let args: Vec<_> = s.args.iter().map(|a| (a.kind, a.elem, a.pattern)).collect();
            (s.kernel.clone(), s.global.clone(), s.local.clone(), args)
        };
        shape(self) == shape(other)
    }
}

/// The engine's rules for a buffer of `pattern` over `items` work-items in units of
/// `per_unit` (`hetdsl`'s own check of each launch), so that a buffer every rank's engine
/// would refuse is refused once, on rank 0, before anything is sent, as the `BadArgument` a
/// single-node launch gives.
fn buffer_fits(
    a: &ArgSpec,
    pattern: Pattern,
    items: u64,
    per_unit: u64,
) -> std::result::Result<(), String> {
    if a.elem == 0 {
        return Err("a buffer of 0-byte elements".into());
    }
    if a.len == 0 {
        return Err("an empty buffer (OpenCL cannot allocate 0 bytes)".into());
    }
    let need = match pattern {
        Pattern::Whole => return Ok(()),
        Pattern::Halo { .. } if a.kind.writes() => {
            return Err(format!(
                "pattern {pattern} is read-only: a halo overlaps its neighbours' ranges; give \
                 the output 1:1"
            ))
        }
        Pattern::Halo { .. } => items,
        Pattern::Ratio { a: x, b: y } => {
            let whole = |n: u64| (x as u128 * n as u128).is_multiple_of(y as u128);
            if !whole(per_unit) || !whole(items) {
                return Err(format!(
                    "pattern {pattern} over ranges of {per_unit} work-items gives parts of \
                     elements, which is not whole: the work-items of a range times {x} must be \
                     a multiple of {y}"
                ));
            }
            let need = u64::try_from(x as u128 * items as u128 / y as u128);
            need.map_err(|_| {
                format!("pattern {pattern} over {items} work-items needs 2^64 elements or more")
            })?
        }
    };
    if a.len != need {
        return Err(format!(
            "buffer has {} elements but pattern {pattern} over {items} work-items needs {need}",
            a.len
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buffer(kind: ArgKind, elem: u64, len: u64, pattern: Pattern) -> ArgSpec {
        ArgSpec { kind, elem, len, pattern: Some(pattern), value: Vec::new() }
    }

    #[test]
    fn packages_of_a_1d_range_tile_each_buffer() {
        let spec = LaunchSpec {
            kernel: "k".into(),
            global: vec![1024],
            local: vec![64],
            args: vec![
                buffer(ArgKind::In, 4, 1024, Pattern::ONE_TO_ONE),
                buffer(ArgKind::Out, 16, 4096, Pattern::ratio(4, 1).unwrap()),
                buffer(ArgKind::In, 8, 10, Pattern::Whole),
            ],
        };
        spec.check().unwrap();
        let mut next = [0usize; 2];
        for (offset, len) in [(0, 3), (3, 10), (13, 3)] {
            let p = Package { offset, len };
            for (arg, n) in next.iter_mut().enumerate() {
                let r = spec.byte_range(arg, p).unwrap();
                assert_eq!(r.start, *n);
                *n = r.end;
            }
            assert_eq!(spec.byte_range(2, p).unwrap(), 0..80);
        }
        assert_eq!(next, [4096, 16 * 4096]);
    }

    #[test]
    fn rows_of_a_2d_range_map_to_bands_of_the_image() {
        let spec = LaunchSpec {
            kernel: "k".into(),
            global: vec![64, 32],
            local: vec![16, 4],
            args: vec![buffer(ArgKind::Out, 4, 64 * 32, Pattern::ONE_TO_ONE)],
        };
        assert_eq!(spec.units().unwrap(), (8, 256));
        assert_eq!(spec.byte_range(0, Package { offset: 2, len: 3 }).unwrap(), 2048..5120);
    }

    /// A halo reaches whole rows of a 2-D range (of 64 items here), one element per side in
    /// 1-D, clamped to the buffer.
    #[test]
    fn a_halo_reaches_rows_in_2d_and_elements_in_1d() {
        let mut spec = LaunchSpec {
            kernel: "k".into(),
            global: vec![64, 32],
            local: vec![16, 4],
            args: vec![buffer(ArgKind::In, 4, 64 * 32, Pattern::halo(1))],
        };
        let p = Package { offset: 2, len: 3 }; // rows 8..20
        assert_eq!(spec.byte_range(0, p).unwrap(), 4 * 64 * 7..4 * 64 * 21);
        assert_eq!(spec.byte_range(0, Package { offset: 0, len: 1 }).unwrap(), 0..4 * 64 * 5);
        spec.global = vec![1024];
        spec.local = vec![64];
        spec.args = vec![buffer(ArgKind::In, 4, 1024, Pattern::halo(1))];
        assert_eq!(spec.byte_range(0, Package { offset: 1, len: 2 }).unwrap(), 4 * 63..4 * 193);
    }

    #[test]
    fn refuses_whole_outputs_short_buffers_and_bad_ranges() {
        let mut spec = LaunchSpec {
            kernel: "k".into(),
            global: vec![256],
            local: vec![64],
            args: vec![buffer(ArgKind::Out, 4, 256, Pattern::Whole)],
        };
        assert!(matches!(spec.check(), Err(Error::BadArgument { index: 0, .. })));
        spec.args[0] = buffer(ArgKind::In, 4, 255, Pattern::ONE_TO_ONE);
        assert!(matches!(spec.check(), Err(Error::BadArgument { index: 0, .. })));
        // A zero side, built through the public fields: refused, not a division by zero.
        spec.args[0] = buffer(ArgKind::In, 4, 256, Pattern::Ratio { a: 1, b: 0 });
        let e = spec.check().unwrap_err();
        assert!(
            matches!(&e, Error::BadArgument { index: 0, reason } if reason.contains("zero side"))
        );
        spec.args.clear();
        spec.local = vec![100];
        assert!(matches!(spec.check(), Err(Error::BadRange(_))));
    }

    /// What every rank's engine would refuse on its first range is refused by rank 0 before
    /// anything is sent, as the `BadArgument` a single-node launch gives (it came back as a
    /// `BadConfig` naming the rank that ran into it).
    #[test]
    fn refuses_what_the_engine_refuses_with_the_argument_named() {
        let spec = |arg: ArgSpec| LaunchSpec {
            kernel: "k".into(),
            global: vec![256],
            local: vec![64],
            args: vec![buffer(ArgKind::In, 4, 256, Pattern::ONE_TO_ONE), arg],
        };
        let refused = |arg: ArgSpec, why: &str| match spec(arg).check() {
            Err(Error::BadArgument { index: 1, reason }) if reason.contains(why) => {}
            other => panic!("expected argument 1 refused for {why:?}, got {other:?}"),
        };
        let four = Pattern::ratio(4, 1).unwrap();
        refused(buffer(ArgKind::Out, 4, 1025, four), "needs 1024");
        refused(buffer(ArgKind::In, 4, 257, Pattern::halo(1)), "needs 256");
        refused(buffer(ArgKind::Out, 4, 256, Pattern::halo(1)), "read-only");
        refused(buffer(ArgKind::In, 4, 0, Pattern::Whole), "empty");
        refused(buffer(ArgKind::In, 4, 85, Pattern::ratio(1, 3).unwrap()), "not whole");
        refused(buffer(ArgKind::In, 0, 256, Pattern::ONE_TO_ONE), "0-byte elements");
        refused(buffer(ArgKind::In, 4, 3, Pattern::ratio(3, 256).unwrap()), "not whole");
        let huge = Pattern::ratio(1 << 62, 1).unwrap();
        refused(buffer(ArgKind::In, 4, 1, huge), "2^64");
        spec(buffer(ArgKind::Out, 4, 1024, four)).check().unwrap();
        spec(buffer(ArgKind::In, 4, 256, Pattern::halo(300))).check().unwrap();
        spec(buffer(ArgKind::In, 4, 1, Pattern::Whole)).check().unwrap();
        spec(buffer(ArgKind::Out, 4, 4, Pattern::ratio(1, 64).unwrap())).check().unwrap();
    }

    /// An NDRange whose work-items overflow, and a range outside the NDRange (a malformed order
    /// from the wire): errors, not wrapped numbers.
    #[test]
    fn refuses_ndranges_and_ranges_past_the_numbers() {
        let mut spec = LaunchSpec {
            kernel: "k".into(),
            global: vec![1 << 62, 16],
            local: vec![1, 16],
            args: vec![buffer(ArgKind::In, 4, 1 << 20, Pattern::ONE_TO_ONE)],
        };
        assert!(matches!(spec.units(), Err(Error::BadRange(m)) if m.contains("2^64")));
        assert!(matches!(spec.check(), Err(Error::BadRange(_))));
        (spec.global, spec.local) = (vec![1024, 16], vec![1, 1]);
        spec.args[0].len = 1024 * 16;
        spec.check().unwrap();
        for (offset, len) in [(16, 1), (15, 2), (u64::MAX, 2), (u64::MAX / 1024 + 1, 1)] {
            let p = Package { offset, len };
            assert!(matches!(spec.byte_range(0, p), Err(Error::BadRange(_))), "{p:?}");
        }
        assert_eq!(spec.byte_range(0, Package { offset: 15, len: 1 }).unwrap(), 61440..65536);
    }
}
