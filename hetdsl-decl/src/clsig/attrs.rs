//! What a struct's `__attribute__`s say of its layout: `packed`, `aligned(N)`.

use super::types::Layout;

/// What `__attribute__`s say of a struct's layout.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct StructAttrs {
    pub(crate) packed: bool,
    /// `aligned(N)`: `Some(Some(N))`; a bare `aligned` (an alignment this reader does not
    /// know): `Some(None)`.
    pub(crate) aligned: Option<Option<u64>>,
}

impl StructAttrs {
    pub(crate) fn and(self, o: StructAttrs) -> StructAttrs {
        let aligned = match (self.aligned, o.aligned) {
            (Some(Some(a)), Some(Some(b))) => Some(Some(a.max(b))),
            (Some(None), _) | (_, Some(None)) => Some(None),
            (a, b) => a.or(b),
        };
        StructAttrs { packed: self.packed || o.packed, aligned }
    }

    /// The layout with the struct's own alignment applied: raised to `N` and its size padded
    /// to a multiple of it; unknown where the alignment is.
    pub(crate) fn realign(self, l: Layout) -> Option<Layout> {
        match self.aligned {
            None => Some(l),
            Some(None) => None,
            Some(Some(n)) if n.is_power_of_two() => {
                let align = l.align.max(n);
                Some(Layout { size: l.size.checked_next_multiple_of(align)?, align })
            }
            Some(Some(_)) => None,
        }
    }
}
