//! What the adds of one command may spend on walks of evictions: the longest walk
//! ([`WALK_EVICTIONS`]), what an eviction weighs by the size of its sub-filter
//! ([`eviction_weight`]), and a client's command's budget ([`COMMAND_EVICTIONS`], kept by
//! [`Adding`]).

use super::Cuckoo;

/// The most evictions one walk makes in a sub-filter whose buckets fit a cache line, whatever the
/// filter's `MAXITERATIONS` (1 to 65,535, kept and shown as set); a walk in wider buckets makes
/// this many over the lines a bucket spans ([`bucket_lines`]: 4,096 at `BUCKETSIZE` 255).
/// RedisBloom's walk makes all of `MAXITERATIONS`, 28 to 35 ms in a full filter of 256 MiB here;
/// this many take 4 to 6 ms there (docs/performance.md). Every walk stops here, a replay's too, so a
/// replica makes the primary's moves. A walk this long finds room only in a filter so full that
/// growing it is better anyway: filters of up to this `MAXITERATIONS` (RedisBloom's default is
/// 20) take RedisBloom's steps exactly.
pub const WALK_EVICTIONS: u16 = 1 << 14;

/// The sub-filters in which an eviction weighs least: up to 32 MiB, where one costs 16 to 96 ns
/// here (SECURITY.md); past it, 174 to 312 ns (290 to 350 on a busier run).
pub const NEAR_BYTES: u64 = 32 << 20;

/// The cache lines of `bucket_bytes` bytes (at least one): what an eviction reads of a bucket
/// looking for an empty slot.
pub fn bucket_lines(bucket_bytes: u64) -> u64 {
    bucket_bytes.div_ceil(64).max(1)
}

/// What one eviction weighs in a command's budget: 1 in a sub-filter of up to [`NEAR_BYTES`] and
/// 2 past it, times the cache lines one of its buckets spans.
pub fn eviction_weight(sub_filter_bytes: u64, bucket_bytes: u64) -> u64 {
    let size = match sub_filter_bytes <= NEAR_BYTES {
        true => 1,
        false => 2,
    };
    size * bucket_lines(bucket_bytes)
}

/// What the evictions of one client command may weigh in all (a replay's are not limited), by
/// [`eviction_weight`]: 65,536 evictions in a sub-filter of up to 32 MiB with buckets of a line
/// (6.3 ms here at 32 MiB; at most 47,446 in any command of 1,000 items in the fills we
/// measured), 32,768 past it (5.7 to 11.5 ms at the costs measured), fewer in wider buckets.
pub const COMMAND_EVICTIONS: u64 = 4 * WALK_EVICTIONS as u64;

/// What the adds of one command may take and what they did: the sub-filter limit, a byte limit
/// asked for only when an item needs a new sub-filter (from the filter as it then stands:
/// finding it may cost the caller something), what their evictions may weigh in all, and the
/// evictions they made (undone ones included).
pub struct Adding<F: FnMut(&Cuckoo) -> u64> {
    pub max_tables: u64,
    pub max_bytes: F,
    /// What all the adds' evictions may weigh (see [`eviction_weight`]; `None`: no limit, for
    /// writes a primary or the AOF replays, which apply every item they are sent).
    budget: Option<u64>,
    /// What the evictions made weigh.
    spent: u64,
    /// Walks of evictions made.
    pub walks: u64,
    /// Evictions made, undone ones included (`INFO bf` counts them).
    pub evictions: u64,
}

impl<F: FnMut(&Cuckoo) -> u64> Adding<F> {
    /// Adds within these limits, no evictions made yet and no limit on them.
    pub fn new(max_tables: u64, max_bytes: F) -> Adding<F> {
        Adding {
            max_tables,
            max_bytes,
            budget: None,
            spent: 0,
            walks: 0,
            evictions: 0,
        }
    }

    /// The same, with evictions that may weigh `budget` in all (a client's command:
    /// [`COMMAND_EVICTIONS`]). A walk is never cut short, so that it makes the moves a replica
    /// makes without a limit: one starts only if all its swaps (`Cuckoo::walk_length`), weighed,
    /// fit, but the first, which always may (so a single item is added as it would be without a
    /// limit). Once an item is refused after its walk with no growth possible, the filter is full
    /// and no more walks start. An item with no walk goes in only where one of its buckets has an
    /// empty slot, as it would on a replica, and is refused otherwise, unchanged, and never sent
    /// to it.
    pub fn limited(self, budget: u64) -> Adding<F> {
        Adding {
            budget: Some(budget),
            ..self
        }
    }

    /// Whether a walk of up to `length` evictions of `weight` each may start.
    #[inline]
    pub(super) fn may_walk(&self, length: u64, weight: u64) -> bool {
        match self.budget {
            None => true,
            Some(max) => {
                self.walks == 0 || self.spent.saturating_add(length.saturating_mul(weight)) <= max
            }
        }
    }

    /// Counts a walk of `evictions` of `weight` each.
    #[inline]
    pub(super) fn walked(&mut self, evictions: u64, weight: u64) {
        self.walks += 1;
        self.evictions = self.evictions.saturating_add(evictions);
        self.spent = self.spent.saturating_add(evictions.saturating_mul(weight));
    }

    /// An item was refused after its walk and the filter could not grow: no more walks (with a
    /// limit; without one, every item is still tried as it comes).
    #[inline]
    pub(super) fn found_full(&mut self) {
        if let Some(max) = &mut self.budget {
            *max = 0;
        }
    }
}
