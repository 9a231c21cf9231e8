//! Bitmaps of work-groups, a bit each, read and set a 64-bit word at a time.

/// The mask of bits `lo..hi` (within one word, `hi <= 64`).
pub(super) fn mask(lo: u64, hi: u64) -> u64 {
    let upper = if hi >= 64 { u64::MAX } else { (1u64 << hi) - 1 };
    upper & !((1u64 << lo) - 1)
}

/// The first set bit of `map` in `range`, a word at a time.
pub(super) fn first_set(map: &[u64], range: std::ops::Range<u64>) -> Option<u64> {
    let mut u = range.start;
    while u < range.end {
        let (w, lo) = (u / 64, u % 64);
        let hi = (range.end - w * 64).min(64);
        let hits = map[w as usize] & mask(lo, hi);
        if hits != 0 {
            return Some(w * 64 + hits.trailing_zeros() as u64);
        }
        u = (w + 1) * 64;
    }
    None
}

/// Set the bits of `range`, a word at a time.
pub(super) fn set_range(map: &mut [u64], range: std::ops::Range<u64>) {
    let mut u = range.start;
    while u < range.end {
        let (w, lo) = (u / 64, u % 64);
        let hi = (range.end - w * 64).min(64);
        map[w as usize] |= mask(lo, hi);
        u = (w + 1) * 64;
    }
}
