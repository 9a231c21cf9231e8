//! Partition patterns (EngineCL paper): how a buffer's elements map onto work-items.
//!
//! A pattern `a:b` says that every `b` work-items own `a` elements of the buffer, so a package of
//! work-items `[o, o+n)` touches elements `[a·o/b, a·(o+n)/b)`. Binomial's output is `1:255`
//! (one result per work-group of 255), Mandelbrot's is `4:1` (four pixels per work-item), most
//! buffers are `1:1`. `Whole` buffers are not split: every device gets all of them (NBody
//! positions, a blur's image with its halo, ray-tracer scenes).
//!
//! Pure: numbers in, numbers out.

use std::fmt;
use std::ops::Range;

/// How one buffer argument is split among packages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Pattern {
    /// `a` elements for every `b` work-items.
    Ratio { a: u64, b: u64 },
    /// The whole buffer goes to every device.
    Whole,
    /// `1:1` plus `r` elements (1-D NDRange), `r` rows of elements (2-D) or `r` planes (3-D) on
    /// each side, clamped at both ends of the buffer: a stencil's read-only input. A session
    /// moves only the halo between devices; a one-shot launch writes each package's rows and
    /// its halo from the caller's memory.
    Halo { r: u64 },
}

impl Pattern {
    /// `1:1`, one element per work-item.
    pub const ONE_TO_ONE: Pattern = Pattern::Ratio { a: 1, b: 1 };

    /// The pattern `a:b`; `None` if either side is zero.
    pub const fn ratio(a: u64, b: u64) -> Option<Pattern> {
        if a == 0 || b == 0 {
            None
        } else {
            Some(Pattern::Ratio { a, b })
        }
    }

    /// `1:1` with a halo of `r` elements (1-D), `r` rows (2-D) or `r` planes (3-D) on each
    /// side, read-only.
    pub const fn halo(r: u64) -> Pattern {
        Pattern::Halo { r }
    }

    /// The elements touched by work-items `[first_item, first_item + items)`. `Whole` touches the
    /// whole buffer of `len` elements; a halo counts rows of one element (see
    /// [`Pattern::elements_in_rows`]).
    pub fn elements(&self, first_item: u64, items: u64, len: u64) -> Range<u64> {
        self.elements_in_rows(first_item, items, len, 1)
    }

    /// As [`Pattern::elements`], with rows of `row_len` elements: a halo of `r` reaches `r` rows
    /// of `row_len` elements before and after the work-items' own, clamped to `0..len`.
    pub fn elements_in_rows(
        &self,
        first_item: u64,
        items: u64,
        len: u64,
        row_len: u64,
    ) -> Range<u64> {
        match *self {
            Pattern::Halo { r } => {
                let reach = r.saturating_mul(row_len);
                let end = first_item.saturating_add(items).saturating_add(reach).min(len);
                first_item.saturating_sub(reach).min(end)..end
            }
            Pattern::Ratio { a, b } => {
                let start = (a as u128 * first_item as u128 / b as u128) as u64;
                let end = (a as u128 * (first_item + items) as u128 / b as u128) as u64;
                start..end
            }
            Pattern::Whole => 0..len,
        }
    }

    /// How many elements a buffer with this pattern must hold for `total_items` work-items
    /// (`None`: any number, `whole`), or why no buffer can.
    pub(crate) fn required_len(&self, total_items: u64) -> Result<Option<u64>, String> {
        match *self {
            Pattern::Ratio { a, b } if a == 0 || b == 0 => {
                Err(format!("pattern {self} has a zero side"))
            }
            Pattern::Ratio { a, b } => {
                let n = a as u128 * total_items as u128;
                if !n.is_multiple_of(b as u128) {
                    return Err(format!(
                        "pattern {self} does not give a whole number of elements for \
                         {total_items} work-items"
                    ));
                }
                u64::try_from(n / b as u128).map(Some).map_err(|_| {
                    format!(
                        "pattern {self} over {total_items} work-items needs 2^64 elements or more"
                    )
                })
            }
            Pattern::Halo { .. } => Ok(Some(total_items)),
            Pattern::Whole => Ok(None),
        }
    }

    /// Checks that every package boundary (a multiple of `items_per_group` work-items) falls on
    /// a whole element, so that no element is shared by two packages. Returns the reason if not.
    pub(crate) fn check_granularity(&self, items_per_group: u64) -> Result<(), String> {
        match *self {
            Pattern::Ratio { a, b } if a == 0 || b == 0 => {
                Err(format!("pattern {self} has a zero side"))
            }
            Pattern::Ratio { a, b }
                if !(a as u128 * items_per_group as u128).is_multiple_of(b as u128) =>
            {
                Err(format!(
                    "pattern {self} splits a work-group of {items_per_group} work-items into \
                     {a}·{items_per_group}/{b} elements, which is not whole; the work-group size \
                     times {a} must be a multiple of {b}"
                ))
            }
            _ => Ok(()),
        }
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Pattern::Ratio { a, b } => write!(f, "{a}:{b}"),
            Pattern::Whole => f.write_str("whole"),
            Pattern::Halo { r } => write!(f, "halo({r})"),
        }
    }
}

impl std::str::FromStr for Pattern {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        if s == "whole" {
            return Ok(Pattern::Whole);
        }
        if let Some(r) = s.strip_prefix("halo(").and_then(|t| t.strip_suffix(')')) {
            let r = r
                .trim()
                .parse::<u64>()
                .map_err(|_| format!("pattern `{s}`: `{r}` is not a count"))?;
            return Ok(Pattern::Halo { r });
        }
        let (a, b) = s
            .split_once(':')
            .ok_or_else(|| format!("pattern `{s}` is neither `whole` nor `a:b`"))?;
        let parse = |t: &str| {
            t.trim()
                .parse::<u64>()
                .map_err(|_| format!("pattern `{s}`: `{t}` is not a positive integer"))
        };
        Pattern::ratio(parse(a)?, parse(b)?).ok_or_else(|| format!("pattern `{s}` has a zero side"))
    }
}

/// Direction of a buffer argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Direction {
    /// Read by the kernel only.
    In,
    /// Written by the kernel only.
    Out,
    /// Read and written.
    InOut,
}

impl Direction {
    pub(crate) fn reads(self) -> bool {
        matches!(self, Direction::In | Direction::InOut)
    }
    pub(crate) fn writes(self) -> bool {
        matches!(self, Direction::Out | Direction::InOut)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_map_item_ranges_to_element_ranges() {
        let p = Pattern::ratio(1, 255).unwrap();
        assert_eq!(p.elements(255 * 3, 255 * 2, 0), 3..5);
        let m = Pattern::ratio(4, 1).unwrap();
        assert_eq!(m.elements(10, 5, 0), 40..60);
        assert_eq!(Pattern::ONE_TO_ONE.elements(7, 3, 0), 7..10);
        assert_eq!(Pattern::Whole.elements(7, 3, 99), 0..99);
    }

    #[test]
    fn adjacent_packages_tile_the_buffer() {
        let p = Pattern::ratio(3, 8).unwrap();
        let lws = 16;
        let mut next = 0;
        for (o, n) in [(0, 2), (2, 5), (7, 1)] {
            let r = p.elements(o * lws, n * lws, 0);
            assert_eq!(r.start, next);
            next = r.end;
        }
        assert_eq!(Ok(Some(next)), p.required_len(8 * lws));
    }

    #[test]
    fn granularity_rejects_fractional_elements() {
        assert!(Pattern::ratio(1, 255).unwrap().check_granularity(255).is_ok());
        assert!(Pattern::ratio(1, 255).unwrap().check_granularity(256).is_err());
        assert!(Pattern::ratio(4, 1).unwrap().check_granularity(3).is_ok());
    }

    #[test]
    fn a_zero_side_or_a_length_past_u64_is_a_reason_not_a_panic() {
        // `Pattern::ratio` refuses a zero side, but the variant's fields are public.
        let zero = Pattern::Ratio { a: 0, b: 0 };
        assert!(zero.check_granularity(64).unwrap_err().contains("zero side"));
        assert!(zero.required_len(256).unwrap_err().contains("zero side"));
        assert!(Pattern::Ratio { a: 3, b: 0 }.required_len(256).is_err());
        let huge = Pattern::Ratio { a: (1 << 56) + 1, b: 1 };
        assert!(huge.required_len(256).unwrap_err().contains("2^64"));
        assert_eq!(Pattern::Whole.required_len(256), Ok(None));
    }

    #[test]
    fn halos_reach_past_the_package_and_clamp_at_both_ends() {
        let h = Pattern::halo(2);
        // In the middle: two more on each side.
        assert_eq!(h.elements(10, 5, 100), 8..17);
        // At the start and the end of the buffer: clamped.
        assert_eq!(h.elements(0, 4, 100), 0..6);
        assert_eq!(h.elements(96, 4, 100), 94..100);
        // The whole buffer in one package.
        assert_eq!(h.elements(0, 100, 100), 0..100);
        // 2-D: rows of 8 elements, a halo of one row.
        let h1 = Pattern::halo(1);
        assert_eq!(h1.elements_in_rows(16, 16, 64, 8), 8..40);
        assert_eq!(h1.elements_in_rows(0, 16, 64, 8), 0..24);
        assert_eq!(h1.elements_in_rows(48, 16, 64, 8), 40..64);
        // A halo wider than the buffer is the whole buffer.
        assert_eq!(Pattern::halo(1000).elements_in_rows(16, 8, 64, 8), 0..64);
        assert_eq!(Pattern::halo(0).elements(3, 2, 10), 3..5);
        assert_eq!(h.required_len(64), Ok(Some(64)));
    }

    #[test]
    fn parses_and_prints() {
        for s in ["1:1", "1:255", "4:1", "whole", "halo(1)"] {
            assert_eq!(s.parse::<Pattern>().unwrap().to_string(), s);
        }
        assert!("0:1".parse::<Pattern>().is_err());
        assert!("x".parse::<Pattern>().is_err());
        assert!(Pattern::ratio(1, 0).is_none());
    }
}
