//! Buffer arguments given by address ([`HostRegion`]), for callers that share a buffer with
//! a launch.

use std::ops::Range;

/// The caller's memory of one buffer argument given by address rather than borrowed, for a
/// caller whose other threads use the parts of the same buffer that the launch leaves alone
/// while it runs (a cluster's rank 0 receives other ranks' outputs into the buffer its own
/// devices write). Made only by the unsafe [`HostRegion::new`] and [`HostRegion::window`].
///
/// A region may also hold only a window of its argument ([`HostRegion::window`]): bytes
/// `origin..origin + len` of an argument of `arg_len` bytes, for a caller that stages only the
/// part a launch over some work-groups touches.
#[derive(Clone, Copy)]
pub struct HostRegion<'a> {
    ptr: *mut u8,
    len: usize,
    origin: usize,
    arg_len: usize,
    borrow: std::marker::PhantomData<&'a mut [u8]>,
}

// SAFETY: a region stands for a slice whose maker vouched (`HostRegion::new`) that the bytes a
// launch touches are its alone while it runs, wherever the launch's threads run.
unsafe impl Send for HostRegion<'_> {}
// SAFETY: as for `Send`: the launch's threads read inputs and write disjoint output ranges.
unsafe impl Sync for HostRegion<'_> {}

impl<'a> HostRegion<'a> {
    /// The `len` bytes at `ptr`.
    ///
    /// # Safety
    /// For `'a`, and so for every launch that takes the region:
    /// - `ptr..ptr + len` is valid for reads, and for writes where the argument is written;
    /// - while a launch runs, nothing else writes the bytes it reads, nor reads or writes the
    ///   bytes it writes. A launch reads an input's elements of its work-groups by the pattern
    ///   (a halo's rows around them, a `whole` input all of it) and writes an output's elements
    ///   of its work-groups (`Launch::groups`), nothing else.
    pub unsafe fn new(ptr: *mut u8, len: usize) -> HostRegion<'a> {
        HostRegion { ptr, len, origin: 0, arg_len: len, borrow: std::marker::PhantomData }
    }

    /// The `len` bytes at `ptr`, which are bytes `origin..origin + len` of an argument of
    /// `arg_len` bytes. A launch refuses the window unless it holds every byte the launch's
    /// work-groups touch (by the pattern, halos included); a `whole` input's window must be
    /// all of it.
    ///
    /// # Safety
    /// As for [`HostRegion::new`], for the `len` bytes at `ptr`.
    pub unsafe fn window(
        ptr: *mut u8,
        len: usize,
        origin: usize,
        arg_len: usize,
    ) -> HostRegion<'a> {
        HostRegion { ptr, len, origin, arg_len, borrow: std::marker::PhantomData }
    }

    /// Bytes at [`HostRegion::as_ptr`].
    pub fn len(&self) -> usize {
        self.len
    }

    /// The argument's byte at [`HostRegion::as_ptr`] (0 unless a window).
    pub fn origin(&self) -> usize {
        self.origin
    }

    /// The argument's length in bytes, all of which the kernel sees.
    pub fn arg_len(&self) -> usize {
        self.arg_len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr
    }

    /// Where the argument's `bytes` are, if the region holds them all (`None` otherwise, or
    /// for a reversed range).
    pub fn at(&self, bytes: &Range<usize>) -> Option<*mut u8> {
        // SAFETY: the constructors' contract: `len` bytes at `ptr`, from the argument's `origin`.
        unsafe { locate(self.ptr, self.origin, self.len, bytes) }
    }
}

/// Where bytes `bytes` of an argument are, given `span` bytes of it from its byte `origin` at
/// `ptr`: `None` unless the span holds them all.
///
/// # Safety
/// `ptr..ptr + span` lies within one allocation.
pub(crate) unsafe fn locate(
    ptr: *mut u8,
    origin: usize,
    span: usize,
    bytes: &Range<usize>,
) -> Option<*mut u8> {
    let inside = origin <= bytes.start
        && bytes.start <= bytes.end
        && bytes.end <= origin.saturating_add(span);
    // SAFETY: `bytes.start - origin` is at most `span` (the caller's allocation).
    inside.then(|| unsafe { ptr.add(bytes.start - origin) })
}

impl std::fmt::Debug for HostRegion<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.origin == 0 && self.len == self.arg_len {
            write!(f, "HostRegion({} B at {:p})", self.len, self.ptr)
        } else {
            let (a, b) = (self.origin, self.origin + self.len);
            write!(f, "HostRegion(bytes {a}..{b} of {} B at {:p})", self.arg_len, self.ptr)
        }
    }
}
