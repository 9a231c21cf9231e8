//! Shared helpers for the samples and tests.
