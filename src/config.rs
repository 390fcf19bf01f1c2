//! Server-wide settings: the defaults a filter gets when a command does not say, and the ceiling
//! on the size of one filter.

use std::sync::atomic::{AtomicU64, Ordering};

/// The ceiling on one filter's bytes (bit arrays plus bookkeeping): 1 GiB.
const DEFAULT_MAX_FILTER_BYTES: u64 = 1 << 30;

static MAX_FILTER_BYTES: AtomicU64 = AtomicU64::new(DEFAULT_MAX_FILTER_BYTES);

/// The most bytes one filter may take; creation and growth past it are refused.
pub fn max_filter_bytes() -> u64 {
    MAX_FILTER_BYTES.load(Ordering::Relaxed)
}

/// Parameters for filters created without explicit ones (BF.ADD on a missing key).
#[derive(Debug, Clone, Copy)]
pub struct Defaults {
    pub error: f64,
    pub capacity: u64,
    pub expansion: u32,
}

/// The current defaults.
pub fn defaults() -> Defaults {
    Defaults {
        error: 0.01,
        capacity: 100,
        expansion: 2,
    }
}
