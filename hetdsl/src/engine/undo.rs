//! What a device's merges overwrote of the caller's inout outputs, package by package: the
//! caller's bytes before a part of an inout output was written there.
//!
//! A package's output is merged part by part as the parts come back. An inout output's
//! elements are also the package's inputs, so a device lost after merging some parts of a
//! package but before the package counts as merged would leave a re-run reading its own
//! outputs as inputs (the kernel applied twice to those elements). The device's loss puts
//! the saved bytes back first, so that the re-run reads what the first run read.

use std::sync::Mutex;

/// The caller's bytes at `at` before a merge wrote there.
struct Overwritten {
    at: *mut u8,
    bytes: Vec<u8>,
}

/// One device's overwritten bytes of the package it is merging (at most one at a time).
#[derive(Default)]
pub(crate) struct UndoLog(Mutex<Vec<Overwritten>>);

// SAFETY: the pointers are the caller's memory, only dereferenced under the run's gate and the
// device's commit lock (`save` and `restore`'s contracts), as every merge is.
unsafe impl Send for UndoLog {}
// SAFETY: as for `Send`; the list itself is behind a mutex.
unsafe impl Sync for UndoLog {}

impl UndoLog {
    /// Keep the `len` bytes at `at` before they are overwritten.
    ///
    /// # Safety
    /// `at..at + len` is the caller's memory, readable now (under the gate).
    pub(crate) unsafe fn save(&self, at: *mut u8, len: usize) {
        let mut bytes = Vec::with_capacity(len);
        // SAFETY: the caller's contract; the spare capacity holds `len` bytes.
        let src = unsafe { std::slice::from_raw_parts(at, len) };
        super::copy::copy_to_uninit(&mut bytes.spare_capacity_mut()[..len], src);
        // SAFETY: `copy_to_uninit` wrote all `len` bytes.
        unsafe { bytes.set_len(len) };
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(Overwritten { at, bytes });
    }

    /// The package is merged: nothing to put back any more.
    pub(crate) fn clear(&self) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }

    /// Put every saved range back, the last saved first, and forget them.
    ///
    /// # Safety
    /// Every saved range is still the caller's memory, writable now (under the gate), and no
    /// other thread writes it meanwhile.
    pub(crate) unsafe fn restore(&self) {
        let saved = std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()));
        for o in saved.into_iter().rev() {
            // SAFETY: the caller's contract: `o.bytes.len()` bytes at `o.at` are writable.
            let dst = unsafe { std::slice::from_raw_parts_mut(o.at, o.bytes.len()) };
            super::copy::copy(dst, &o.bytes);
        }
    }
}
