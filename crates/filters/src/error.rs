//! [`FilterError`]: why a filter of either family could not be made, grown, added to or rebuilt,
//! on the ground floor so that every module above it, the memory pieces and the field readers
//! included, names it without pointing up.

/// Why a filter could not be made, grown, added to or rebuilt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilterError {
    /// The error rate is not a finite number strictly between 0 and 1.
    BadErrorRate,
    /// The capacity is zero.
    BadCapacity,
    /// The expansion factor is outside 1 to the Bloom filter's `MAX_EXPANSION`.
    BadExpansion,
    /// The filter would take `bytes` bytes, more than the limit it was given.
    TooLarge {
        /// The size it would have had, saturating at `u64::MAX`.
        bytes: u64,
    },
    /// The allocator had no memory for a filter of `bytes` bytes of bits.
    OutOfMemory {
        /// The size asked for.
        bytes: u64,
    },
    /// A fixed (NONSCALING) filter holds its capacity.
    Full,
    /// A scaling filter cannot add a sub-filter: its capacity or error rate would leave the range
    /// a number can hold.
    CannotGrow,
    /// A window outside 1 second to 10 years.
    BadWindow,
    /// Stored data is inconsistent; the text names what.
    Corrupt(&'static str),
    /// A data chunk for a filter that is not being restored from a dump (each family's `dump` module).
    NotRestoring,
    /// A data chunk that is not the next one the restore expects (out of order, or sent twice).
    ChunkOutOfOrder {
        /// The dump offset where the next chunk starts.
        expected: u64,
    },
    /// A cuckoo filter has as many sub-filters as `cf-max-expansions` allows.
    MaxExpansions,
    /// A cuckoo filter item's two buckets hold nothing but copies of it: one more copy would
    /// only grow the filter.
    TooManyCopies,
}
