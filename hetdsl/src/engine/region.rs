//! Buffer arguments given by address ([`HostRegion`]), for callers that share a buffer with
//! a launch.

/// The caller's memory of one buffer argument given by address rather than borrowed, for a
/// caller whose other threads use the parts of the same buffer that the launch leaves alone
/// while it runs (a cluster's rank 0 receives other ranks' outputs into the buffer its own
/// devices write). Made only by the unsafe [`HostRegion::new`].
#[derive(Clone, Copy)]
pub struct HostRegion<'a> {
    ptr: *mut u8,
    len: usize,
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
        HostRegion { ptr, len, borrow: std::marker::PhantomData }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr
    }
}

impl std::fmt::Debug for HostRegion<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HostRegion({} B at {:p})", self.len, self.ptr)
    }
}
