//! What `INFO bf` reports: the filters in the keyspace, the bytes they occupy, and counts of item
//! adds, item lookups and error replies since the server started.
//!
//! Filters are counted where they enter the keyspace (created by a command, loaded from RDB or
//! RESTORE, copied) and where they leave it (freed, possibly on a lazy-free thread: hence atomics):
//! the data type's own callbacks, so that no keyspace event is needed (RENAME, MOVE and SWAPDB
//! change no count).

use crate::size::{cuckoo_memory_usage, memory_usage};
use filters::bloom::Filter;
use filters::cuckoo::Cuckoo;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

static FILTERS: AtomicI64 = AtomicI64::new(0);
static WINDOWED: AtomicI64 = AtomicI64::new(0);
static EXPIRED_GENERATIONS: AtomicU64 = AtomicU64::new(0);
static SWEPT_PARTS: AtomicU64 = AtomicU64::new(0);
static SWEEP_KEYS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicI64 = AtomicI64::new(0);
static ADDS: AtomicU64 = AtomicU64::new(0);
static LOOKUPS: AtomicU64 = AtomicU64::new(0);
static ERRORS: AtomicU64 = AtomicU64::new(0);
static CUCKOO_FILTERS: AtomicI64 = AtomicI64::new(0);
static CUCKOO_BYTES: AtomicI64 = AtomicI64::new(0);
static CUCKOO_ADDS: AtomicU64 = AtomicU64::new(0);
static CUCKOO_LOOKUPS: AtomicU64 = AtomicU64::new(0);
static CUCKOO_DELETES: AtomicU64 = AtomicU64::new(0);
static CUCKOO_EVICTIONS: AtomicU64 = AtomicU64::new(0);

/// A filter entered the keyspace.
pub fn filter_added(filter: &Filter) {
    FILTERS.fetch_add(1, Ordering::Relaxed);
    if filter.window().is_some() {
        WINDOWED.fetch_add(1, Ordering::Relaxed);
    }
    BYTES.fetch_add(memory_usage(filter) as i64, Ordering::Relaxed);
}

/// A filter is being freed.
pub fn filter_freed(filter: &Filter) {
    FILTERS.fetch_sub(1, Ordering::Relaxed);
    if filter.window().is_some() {
        WINDOWED.fetch_sub(1, Ordering::Relaxed);
    }
    BYTES.fetch_sub(memory_usage(filter) as i64, Ordering::Relaxed);
}

/// A filter's size changed (it grew, or dropped expired generations) from `before` bytes.
pub fn filter_resized(before: usize, filter: &Filter) {
    BYTES.fetch_add(
        memory_usage(filter) as i64 - before as i64,
        Ordering::Relaxed,
    );
}

/// A write dropped `count` expired generations of a windowed filter.
pub fn generations_expired(count: usize) {
    count_up(&EXPIRED_GENERATIONS, count as u64);
}

/// The sweep watches `count` windowed filters.
pub fn sweep_keys(count: usize) {
    SWEEP_KEYS.store(count as u64, Ordering::Relaxed);
}

/// The sweep dropped `count` expired parts of idle windowed filters.
pub fn parts_swept(count: usize) {
    count_up(&SWEPT_PARTS, count as u64);
}

/// A cuckoo filter entered the keyspace.
pub fn cuckoo_added(filter: &Cuckoo) {
    CUCKOO_FILTERS.fetch_add(1, Ordering::Relaxed);
    CUCKOO_BYTES.fetch_add(cuckoo_memory_usage(filter) as i64, Ordering::Relaxed);
}

/// A cuckoo filter is being freed.
pub fn cuckoo_freed(filter: &Cuckoo) {
    CUCKOO_FILTERS.fetch_sub(1, Ordering::Relaxed);
    CUCKOO_BYTES.fetch_sub(cuckoo_memory_usage(filter) as i64, Ordering::Relaxed);
}

/// A cuckoo filter's size changed (it grew, or a compaction freed a sub-filter) from `before`.
pub fn cuckoo_resized(before: usize, filter: &Cuckoo) {
    CUCKOO_BYTES.fetch_add(
        cuckoo_memory_usage(filter) as i64 - before as i64,
        Ordering::Relaxed,
    );
}

/// `added` items went through a cuckoo add command, `looked_up` through a lookup or count, and
/// `deleted` were deleted.
pub fn cuckoo_items(added: usize, looked_up: usize, deleted: usize) {
    count_up(&CUCKOO_ADDS, added as u64);
    count_up(&CUCKOO_LOOKUPS, looked_up as u64);
    count_up(&CUCKOO_DELETES, deleted as u64);
}

/// A cuckoo add moved `swaps` fingerprints to make room (undone ones included).
#[inline]
pub fn cuckoo_evictions(swaps: u64) {
    if swaps != 0 {
        count_up(&CUCKOO_EVICTIONS, swaps);
    }
}

/// Adds to a counter only commands (and the sweep) change. They run on the server's main thread
/// alone, so a plain load and store (no locked read-modify-write on the hot path) cannot lose a count.
fn count_up(counter: &AtomicU64, by: u64) {
    counter.store(counter.load(Ordering::Relaxed) + by, Ordering::Relaxed);
}

/// `items` items went through an add command.
pub fn items_added(items: usize) {
    count_up(&ADDS, items as u64);
}

/// `items` items were looked up.
pub fn items_looked_up(items: usize) {
    count_up(&LOOKUPS, items as u64);
}

/// A BF command answered with an error (a whole reply or an array element).
pub fn error_replied() {
    count_up(&ERRORS, 1);
}

/// What INFO shows, section `bf` (the server prefixes each name with it): `bf_filters`,
/// `bf_windowed_filters`, `bf_bytes`, `bf_adds`, `bf_lookups`, `bf_errors`,
/// `bf_expired_generations`, `bf_sweep_keys` (windowed filters the sweep watches) and
/// `bf_swept_parts` (parts of idle filters it dropped); then the cuckoo filters': `bf_cf_filters`,
/// `bf_cf_bytes`, `bf_cf_adds`, `bf_cf_lookups`, `bf_cf_deletes`, `bf_cf_evictions` (fingerprints
/// adds moved to make room, undone ones included; errors count in `bf_errors`).
pub fn fields() -> [(&'static std::ffi::CStr, i64); 15] {
    [
        (c"filters", FILTERS.load(Ordering::Relaxed)),
        (c"windowed_filters", WINDOWED.load(Ordering::Relaxed)),
        (c"bytes", BYTES.load(Ordering::Relaxed)),
        (c"adds", ADDS.load(Ordering::Relaxed) as i64),
        (c"lookups", LOOKUPS.load(Ordering::Relaxed) as i64),
        (c"errors", ERRORS.load(Ordering::Relaxed) as i64),
        (
            c"expired_generations",
            EXPIRED_GENERATIONS.load(Ordering::Relaxed) as i64,
        ),
        (c"sweep_keys", SWEEP_KEYS.load(Ordering::Relaxed) as i64),
        (c"swept_parts", SWEPT_PARTS.load(Ordering::Relaxed) as i64),
        (c"cf_filters", CUCKOO_FILTERS.load(Ordering::Relaxed)),
        (c"cf_bytes", CUCKOO_BYTES.load(Ordering::Relaxed)),
        (c"cf_adds", CUCKOO_ADDS.load(Ordering::Relaxed) as i64),
        (c"cf_lookups", CUCKOO_LOOKUPS.load(Ordering::Relaxed) as i64),
        (c"cf_deletes", CUCKOO_DELETES.load(Ordering::Relaxed) as i64),
        (
            c"cf_evictions",
            CUCKOO_EVICTIONS.load(Ordering::Relaxed) as i64,
        ),
    ]
}
