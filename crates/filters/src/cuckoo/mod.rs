//! Cuckoo filters (`CF.*`): membership that can forget one item. A sibling of the Bloom filter,
//! sharing its ground floor (the error type, the item hash and MurmurHash64A, the byte-size model,
//! pieces of memory and prefetch hints, the field reader and writer of stored forms, dump chunks
//! and the restoring state) and nothing of the Bloom filter's.
//!
//! - [`print`]: an item's hash and fingerprint, and its two buckets, by RedisBloom's rules;
//! - [`shape`]: parameters, sizing, the bounded error rate and the checks of stored shapes;
//! - [`table`]: one sub-filter, buckets of fingerprints;
//! - [`filter`]: [`Cuckoo`], the chain a key holds: insertion with eviction (at most
//!   [`WALK_EVICTIONS`] in a walk, [`COMMAND_EVICTIONS`] of weighed ones in a client's command),
//!   growth, deletion, counting; [`compact`]: moving fingerprints down after deletes, within a
//!   bounded budget;
//! - [`locator`]: where a filter's newest sub-filter lies, as plain numbers, to ask for an
//!   item's bucket lines before a command has the filter in hand;
//! - [`stored`]: RedisBloom's RDB encoding 4, field for field; [`dump`]: its `CF.SCANDUMP`
//!   header and chunks, and restoring a filter from them.

pub mod compact;
pub mod dump;
pub mod filter;
pub mod locator;
pub mod print;
pub mod shape;
pub mod stored;
pub mod table;

pub use filter::{
    bucket_lines, eviction_weight, Adding, Cuckoo, COMMAND_EVICTIONS, NEAR_BYTES, WALK_EVICTIONS,
};
pub use locator::Locator;
pub use print::Print;
pub use shape::{buckets_for, Bound, Limits, Params};
pub use table::Table;

#[cfg(test)]
mod tests;
