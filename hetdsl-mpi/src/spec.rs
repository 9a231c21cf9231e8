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
        Ok(match g.len() {
            1 => ((g[0] / l[0]) as u64, l[0] as u64),
            _ => ((g[1] / l[1]) as u64, (g[0] * l[1]) as u64),
        })
    }

    /// The byte range of argument `arg` that `package` touches: its pattern's elements for a
    /// sliced buffer, the whole buffer for a `Whole` one, nothing for other arguments.
    pub fn byte_range(&self, arg: usize, package: Package) -> Result<Range<usize>> {
        let a = &self.args[arg];
        let Some(pattern) = a.pattern.filter(|_| a.kind.is_buffer()) else { return Ok(0..0) };
        let (_, per_unit) = self.units()?;
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
    /// a buffer that its pattern overruns, a `Whole` output (no rank could merge it).
    pub fn check(&self) -> Result<()> {
        let (units, _) = self.units()?;
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
}
