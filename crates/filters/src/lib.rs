//! Membership filters behind redis-bf, with no Redis types in them: the Bloom filter ([`bloom`])
//! and the cuckoo filter ([`cuckoo`]), two families side by side on one ground floor. Its modules,
//! in layers (each uses only those above it in this list, and neither family the other;
//! ARCHITECTURE.md draws the map):
//!
//! - The ground floor, shared: [`error`] ([`FilterError`], the errors of both families);
//!   [`hash`]: an item's xxh3-128 ([`hash::ItemHash`]), MurmurHash, key tags; [`bytes`]: what the
//!   allocator charges for each block (the model every size figure and limit uses); [`bits`]:
//!   memory in allocator-exact pieces, zeroed on demand, and prefetch hints; [`fields`] and
//!   `reader`: the field writer and reader of stored forms; [`chunks`]: dump chunks' iterator
//!   arithmetic; [`restoring`]: where a restore from dump chunks stands.
//! - [`bloom`]: Bloom filters (`BF.*`): sizing, probes, sub-filters, scaling chains, windowed
//!   filters, the value a key holds, and their stored forms, RedisBloom's included.
//! - [`cuckoo`]: cuckoo filters (`CF.*`), which can forget an item: fingerprints and buckets,
//!   the chain a key holds, compaction, and RedisBloom's stored form.
//! - [`fuzzing`]: entry points for the fuzzers, over both families.
//!
//! Everything here is plain Rust, tested and benchmarked like any library; the module crate wraps
//! it in commands, persistence and configuration.

// Every unsafe operation in its own block with a `// SAFETY:` line (in `bits`, the prefetch hint
// and the zeroed allocation of a piece are the only ones).
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod bits;
pub mod bloom;
pub mod bytes;
pub mod chunks;
pub mod cuckoo;
pub mod error;
pub mod fields;
pub mod fuzzing;
pub mod hash;
mod reader;
pub mod restoring;

pub use error::FilterError;
