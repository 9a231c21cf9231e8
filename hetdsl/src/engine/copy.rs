//! Host copies between the caller's memory and pinned staging, split across threads when they
//! are large: one core copies pageable memory at well under what a GPU's link takes (a 2^28
//! saxpy moved 3 GiB at about 9 GB/s end to end on an H100, the copies done serially), while
//! several cores together approach the memory's bandwidth. The parts of a copy go to a pool of
//! threads kept for the process (`pool`): starting a thread per part cost more than the part.

use std::mem::MaybeUninit;

mod pool;

/// Below this a copy stays on the calling thread: handing parts out costs microseconds, about
/// what one core copies in 32 KiB.
const PARALLEL_FROM: usize = 4 << 20;

/// At most this many threads share one copy unless `HETDSL_COPY_THREADS` says otherwise. On
/// a 16-core H100 host, copies between pageable and pinned memory ran at 35 GB/s on 8 threads
/// and 54 on 16; saxpy over 2^28 floats there, the H100 alone, 33-45 GB/s end to end on the
/// pool's 16 threads, 27-37 on 8.
const MAX_THREADS: usize = 16;

/// Each thread's share is at least this, so a copy just over the threshold uses few threads.
const MIN_SHARE: usize = 1 << 20;

/// `dst.copy_from_slice(src)`, across threads when large. Panics (as `copy_from_slice` does)
/// if the lengths differ: callers pass ranges of equal length.
pub fn copy(dst: &mut [u8], src: &[u8]) {
    // SAFETY: `split` writes only `src`'s bytes through the view, so `dst` stays initialised.
    let dst = unsafe { &mut *(dst as *mut [u8] as *mut [MaybeUninit<u8>]) };
    split(dst, src);
}

/// As [`copy`], into memory not yet written (a fresh `Vec`'s spare capacity). Spread across
/// threads, the fresh pages' first-touch faults are too: 1 GiB into a fresh `Vec` on an H200
/// host took one thread 1.4-1.6 GB/s and eight 9.3-9.9 (memory already touched: 30).
pub fn copy_to_uninit(dst: &mut [MaybeUninit<u8>], src: &[u8]) {
    advise_huge_pages(dst.as_mut_ptr().cast(), dst.len());
    split(dst, src);
}

/// Ask for huge pages over `len` bytes at `start`, memory not touched yet, where large: each
/// first touch then faults in 2 MiB rather than 4 KiB. Copying 1 GiB into fresh memory on 8
/// threads, an H200 host (huge pages on request only) reached 9-10 GB/s with small pages and
/// 16-19 with huge ones. Only a hint: where refused, nothing changes.
pub fn advise_huge_pages(start: *mut u8, len: usize) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        if len < HUGE_FROM {
            return;
        }
        // The whole huge pages inside the range: madvise takes page-aligned starts.
        let first = (start as usize).next_multiple_of(HUGE);
        let end = (start as usize + len) / HUGE * HUGE;
        if end > first {
            // SAFETY: the range lies inside memory the caller owns; MADV_HUGEPAGE changes how
            // its pages are backed, never their contents.
            unsafe { libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE) };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (start, len);
}

/// Memory below this keeps small pages: a huge page is zeroed whole at its first touch.
const HUGE_FROM: usize = 64 << 20;

/// `src` into `dst` in equal parts, one per thread when large: the calling thread copies one
/// part and the copy pool's threads the others, each part the same plain byte copy.
fn split(dst: &mut [MaybeUninit<u8>], src: &[u8]) {
    assert_eq!(dst.len(), src.len(), "copy between ranges of different lengths");
    let threads = threads_for(src.len());
    if threads <= 1 {
        copy_part(dst, src);
        return;
    }
    let share = src.len().div_ceil(threads);
    let (dst_first, dst_rest) = dst.split_at_mut(share);
    let (src_first, src_rest) = src.split_at(share);
    let done = std::sync::Arc::new(pool::Latch::new(src_rest.len().div_ceil(share)));
    let (d, s) = (dst_rest.as_mut_ptr().cast::<u8>(), src_rest.as_ptr());
    let _wait = pool::WaitAll(&done);
    for at in (0..src_rest.len()).step_by(share) {
        let len = share.min(src_rest.len() - at);
        // SAFETY: the parts are disjoint ranges inside `dst_rest` and `src_rest`, which stay
        // borrowed, and are not touched here, until `done` says every part has been copied
        // (`_wait`, dropped before this function returns or unwinds).
        pool::give(unsafe { pool::Part::new(d.add(at), s.add(at), len, done.clone()) });
    }
    copy_part(dst_first, src_first);
}

/// One part of a copy on the calling thread, as a pool thread copies its parts.
fn copy_part(dst: &mut [MaybeUninit<u8>], src: &[u8]) {
    // SAFETY: `split` cuts both into parts of equal lengths, which do not overlap (one is
    // borrowed mutably); `MaybeUninit<u8>` has the layout of `u8` and takes any byte.
    unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst.as_mut_ptr().cast::<u8>(), src.len()) }
}

/// How many threads copy `len` bytes.
fn threads_for(len: usize) -> usize {
    if len < PARALLEL_FROM {
        return 1;
    }
    (len / MIN_SHARE).clamp(1, most_threads())
}

/// The variable that sets the threads a copy may use, and the most it takes. The build
/// refuses any other value.
pub(crate) const THREADS_VARIABLE: &str = "HETDSL_COPY_THREADS";
pub(crate) const MOST_THREADS_ASKED: u64 = 1 << 16;

/// The most threads one copy uses: [`MAX_THREADS`], or [`THREADS_VARIABLE`] where set (to
/// measure another count on a given machine), never more than its cores. Read once.
fn most_threads() -> usize {
    static MOST: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *MOST.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let asked = std::env::var(THREADS_VARIABLE).ok().and_then(|v| v.parse().ok());
        asked.unwrap_or(MAX_THREADS).clamp(1, cores)
    })
}

/// `n` zero bytes, or `None` where the allocator refuses them (a size the caller got wrong
/// must be an error, not an abort). Zeroed by the allocator: large ones come as untouched
/// pages, as `vec![0; n]` gives them.
pub(crate) fn try_zeroed(n: usize) -> Option<Vec<u8>> {
    if n == 0 {
        return Some(Vec::new());
    }
    let layout = std::alloc::Layout::array::<u8>(n).ok()?;
    // SAFETY: the layout's size is not zero.
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
    // SAFETY: `ptr` (when not null) holds `n` zeroed bytes from the global allocator with this
    // layout, which is what a `Vec<u8>` of capacity `n` frees with.
    (!ptr.is_null()).then(|| unsafe { Vec::from_raw_parts(ptr, n, n) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_every_byte_in_order_at_every_size() {
        let sizes =
            [0, 1, 4095, PARALLEL_FROM - 1, PARALLEL_FROM, PARALLEL_FROM + 12_345, 40 << 20];
        // And one large enough to ask for huge pages, not a whole number of them.
        for len in sizes.into_iter().chain([HUGE_FROM + (3 << 20) + 4097]) {
            let src: Vec<u8> = (0..len).map(|i| (i * 7 + i / 251) as u8).collect();
            let mut dst = vec![0u8; len];
            copy(&mut dst, &src);
            assert!(dst == src, "{len} bytes");
            let mut fresh: Vec<u8> = Vec::with_capacity(len);
            copy_to_uninit(&mut fresh.spare_capacity_mut()[..len], &src);
            // SAFETY: every one of the `len` bytes was just written.
            unsafe { fresh.set_len(len) };
            assert!(fresh == src, "{len} bytes into fresh memory");
        }
    }

    #[test]
    fn copies_made_at_once_on_several_threads_each_get_their_own_bytes() {
        let len = 24 << 20;
        std::thread::scope(|scope| {
            for t in 0..4usize {
                scope.spawn(move || {
                    let src: Vec<u8> =
                        (0..len).map(|i| (i * 13 + i / 509 + t * 71) as u8).collect();
                    for _ in 0..3 {
                        let mut dst = vec![0u8; len];
                        copy(&mut dst, &src);
                        assert!(dst == src, "caller {t}");
                    }
                });
            }
        });
    }

    #[test]
    fn large_copies_use_several_threads_small_ones_one() {
        assert_eq!(threads_for(PARALLEL_FROM - 1), 1);
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(threads_for(1 << 30), most_threads());
        if std::env::var_os(THREADS_VARIABLE).is_none() {
            assert_eq!(most_threads(), MAX_THREADS.min(cores));
        }
    }
}
