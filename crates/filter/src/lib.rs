//! The Bloom filter behind redis-bf, with no Redis types in it. Its modules, in layers (each uses
//! only those above it in this list; ARCHITECTURE.md draws the map):
//!
//! - [`sizing`]: bits and hash count for a capacity and an error rate, in either layout
//!   ([`sizing::blocked`]: the blocked layout's own); [`hash`]: an item's hash and the probe
//!   sequences it expands into; [`bits`]: the bit array, in allocator-exact pieces; [`bytes`]:
//!   what the allocator charges for each block (the model every size figure and limit uses).
//! - [`sub_filter`]: one fixed-size filter ([`SubFilter`]); [`locator`]: where one lies in memory,
//!   as plain numbers, for a command to prefetch an item's lines from before it has the filter.
//! - [`growth`]: how chains grow ([`Growth`]), RedisBloom's rules for its chains included.
//! - [`chain`]: the scaling chain ([`Chain`]) and its [`Format`].
//! - [`window`]: windowed filters, which remember an item for a window of time.
//! - [`filter`]: what a key holds ([`Filter`]: a chain or a windowed filter).
//! - The formats, readers and writers: [`stored`] (the RDB field sequence), [`redisbloom`]
//!   (RedisBloom's RDB and chunk layouts, read only), [`dump`] (SCANDUMP/LOADCHUNK chunks), and
//!   `reader` (their fixed-width fields).
//! - [`fuzzing`]: entry points for the fuzzers; [`doc_tables`]: the figures the docs quote.
//!
//! Everything here is plain Rust, tested and benchmarked like any library; the module crate wraps
//! it in commands, persistence and configuration.

// Every unsafe operation in its own block with a `// SAFETY:` line (in `bits`, the prefetch hint
// and the zeroed allocation of a piece are the only ones).
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod bits;
pub mod bytes;
pub mod chain;
pub mod chunks;
pub mod cuckoo;
pub mod doc_tables;
pub mod dump;
pub mod fields;
pub mod filter;
pub mod fuzzing;
pub mod growth;
pub mod hash;
pub mod locator;
mod reader;
pub mod redisbloom;
pub mod restoring;
pub mod sizing;
pub mod stored;
pub mod sub_filter;
pub mod window;

pub use chain::{check_successor, Chain, Format, Growth, MAX_EXPANSION};
pub use filter::Filter;
pub use hash::{Hashing, ItemHash};
pub use sizing::Shape;
pub use sub_filter::{check_stored, SubFilter};

/// Why a filter could not be made, grown, added to or rebuilt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilterError {
    /// The error rate is not a finite number strictly between 0 and 1.
    BadErrorRate,
    /// The capacity is zero.
    BadCapacity,
    /// The expansion factor is outside 1 to [`MAX_EXPANSION`].
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
    /// A data chunk for a filter that is not being restored from a dump (see [`dump`]).
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

#[cfg(test)]
mod tests;
