//! NDRange geometry: how packages of balancing units map to launches and to buffer elements.
//!
//! The balancing unit is one work-group for 1-D ranges, one row of work-groups for 2-D ranges
//! (2-D packages are bands of rows) and one slab of work-groups (all groups with the same z group
//! index) for 3-D ranges, so that every package is a contiguous range of the row-major
//! linearised work-item index `(z · height + y) · width + x`, which is what patterns apply to.

use std::ops::Range;

use crate::error::{Error, Result};
use crate::pattern::Pattern;
use crate::work::Package;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Geometry {
    pub(crate) global: Vec<usize>,
    pub(crate) local: Vec<usize>,
    /// G: balancing units (work-groups, rows of work-groups in 2-D, slabs in 3-D).
    pub(crate) units: u64,
    /// Work-items per balancing unit.
    pub(crate) items_per_unit: u64,
    /// Work-items per work-group.
    pub(crate) items_per_group: u64,
}

impl Geometry {
    pub(super) fn new(global: &[usize], local: &[usize]) -> Result<Self> {
        if global.is_empty() {
            return Err(Error::BadRange(
                "no global size given: call `.global(&[n])`, `.global(&[w, h])` or \
                 `.global(&[w, h, d])`"
                    .into(),
            ));
        }
        if global.len() > 3 {
            return Err(Error::BadRange(format!(
                "{}-D NDRange {global:?}: only 1-D, 2-D and 3-D ranges are supported",
                global.len()
            )));
        }
        if local.is_empty() {
            return Err(Error::BadRange(
                "no work-group size given: call `.local(..)` with as many dimensions as the NDRange".into(),
            ));
        }
        if local.len() != global.len() {
            return Err(Error::BadRange(format!(
                "global size {global:?} has {} dimension(s) but the work-group size {local:?} has {}",
                global.len(),
                local.len()
            )));
        }
        if global.contains(&0) {
            return Err(Error::BadRange(format!("empty NDRange {global:?}")));
        }
        if local.contains(&0) {
            return Err(Error::BadRange(format!("work-group size {local:?} has a zero dimension")));
        }
        for (d, (g, l)) in global.iter().zip(local).enumerate() {
            if g % l != 0 {
                return Err(Error::BadRange(format!(
                    "global size {g} in dimension {d} is not a multiple of the work-group size {l}"
                )));
            }
        }
        // The whole range's work-items must be counted in 64 bits (a wrapped count would let
        // buffers of the wrong length through).
        global.iter().try_fold(1u64, |n, &g| n.checked_mul(g as u64)).ok_or_else(|| {
            Error::BadRange(format!("NDRange {global:?} holds 2^64 work-items or more"))
        })?;
        let items_per_group: u64 = local.iter().map(|x| *x as u64).product();
        // The slowest dimension is split; a unit spans every faster dimension whole.
        let slow = global.len() - 1;
        let units = (global[slow] / local[slow]) as u64;
        let plane: u64 = global[..slow].iter().map(|x| *x as u64).product();
        let items_per_unit = plane * local[slow] as u64;
        Ok(Geometry {
            global: global.to_vec(),
            local: local.to_vec(),
            units,
            items_per_unit,
            items_per_group,
        })
    }

    pub(super) fn total_items(&self) -> u64 {
        self.units * self.items_per_unit
    }

    /// The work-items of a package: (first linear item, count).
    pub(super) fn items(&self, p: Package) -> (u64, u64) {
        (p.offset * self.items_per_unit, p.len * self.items_per_unit)
    }

    /// Work-items per step of the slowest dimension: a 1-D range's one, a 2-D range's row, a
    /// 3-D range's plane (the rows a halo counts, [`crate::Pattern::elements_in_rows`]).
    pub(crate) fn row_len(&self) -> u64 {
        self.global[..self.global.len() - 1].iter().map(|x| *x as u64).product()
    }

    /// The bytes of a buffer of `len` bytes in `elem`-byte elements that package `p` touches by
    /// `pattern` (a halo's rows included).
    pub(super) fn bytes(
        &self,
        p: Package,
        pattern: Pattern,
        elem: usize,
        len: usize,
    ) -> Range<usize> {
        let (first, items) = self.items(p);
        let elems = pattern.elements_in_rows(first, items, (len / elem) as u64, self.row_len());
        elems.start as usize * elem..elems.end as usize * elem
    }

    /// Global work offset and size of the launch for a package.
    pub(super) fn launch(&self, p: Package) -> (Vec<usize>, Vec<usize>) {
        let slow = self.global.len() - 1;
        let l = self.local[slow];
        let mut offset = vec![0; slow + 1];
        let mut size = self.global.clone();
        offset[slow] = p.offset as usize * l;
        size[slow] = p.len as usize * l;
        (offset, size)
    }

    /// Work-groups in a package (what occupancy bounds count).
    pub(super) fn groups_per_unit(&self) -> u64 {
        self.items_per_unit / self.items_per_group
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_dimension() {
        let g = Geometry::new(&[1024], &[64]).unwrap();
        assert_eq!((g.units, g.items_per_unit), (16, 64));
        let p = Package { offset: 3, len: 2 };
        assert_eq!(g.launch(p), (vec![192], vec![128]));
        assert_eq!(g.items(p), (192, 128));
    }

    #[test]
    fn a_range_of_2_pow_64_work_items_or_more_is_refused() {
        let e = Geometry::new(&[256, (1 << 56) + 1], &[64, 1]).unwrap_err();
        assert!(matches!(&e, Error::BadRange(m) if m.contains("2^64")), "{e}");
        assert!(Geometry::new(&[1 << 32, 1 << 31], &[1, 1]).is_ok());
    }

    #[test]
    fn two_dimensions_are_bands_of_rows() {
        let g = Geometry::new(&[64, 32], &[16, 4]).unwrap();
        assert_eq!((g.units, g.items_per_unit, g.groups_per_unit()), (8, 256, 4));
        let p = Package { offset: 2, len: 3 };
        assert_eq!(g.launch(p), (vec![0, 8], vec![64, 12]));
        assert_eq!(g.items(p), (512, 768));
    }

    #[test]
    fn three_dimensions_are_slabs() {
        let g = Geometry::new(&[64, 48, 40], &[8, 8, 4]).unwrap();
        assert_eq!((g.units, g.items_per_unit, g.groups_per_unit()), (10, 64 * 48 * 4, 48));
        let p = Package { offset: 3, len: 2 };
        assert_eq!(g.launch(p), (vec![0, 0, 12], vec![64, 48, 8]));
        assert_eq!(g.items(p), (3 * 12288, 2 * 12288));
        assert_eq!(g.total_items(), 64 * 48 * 40);
    }

    #[test]
    fn rejects_bad_ranges() {
        for (g, l) in [
            (vec![], vec![]),
            (vec![100], vec![]),
            (vec![100], vec![64]),
            (vec![0], vec![1]),
            (vec![64], vec![0]),
            (vec![64, 64], vec![8]),
            (vec![8, 8, 8], vec![2, 2]),
            (vec![8, 8, 10], vec![2, 2, 4]),
            (vec![8, 8, 8, 8], vec![2, 2, 2, 2]),
        ] {
            assert!(matches!(Geometry::new(&g, &l), Err(Error::BadRange(_))), "{g:?} {l:?}");
        }
    }
}
