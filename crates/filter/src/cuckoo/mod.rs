//! Cuckoo filters (`CF.*`): membership that can forget one item. A sibling of the Bloom filter,
//! sharing its ground floor (the byte-size model, the field reader and writer of stored forms,
//! dump chunks and the restoring state, MurmurHash64A) and nothing above it.
//!
//! - [`print`]: an item's hash and fingerprint, and its two buckets, by RedisBloom's rules;
//! - [`table`]: one sub-filter, buckets of one-byte fingerprints;
//! - [`filter`]: [`Cuckoo`], the chain a key holds: insertion with eviction, growth, deletion,
//!   counting; [`compact`]: moving fingerprints down after deletes, within a bounded budget;
//! - [`stored`]: RedisBloom's RDB encoding 4, field for field; [`dump`]: its `CF.SCANDUMP`
//!   header and chunks, and restoring a filter from them.

pub mod compact;
pub mod dump;
pub mod filter;
pub mod print;
pub mod stored;
pub mod table;

pub use filter::{buckets_for, Cuckoo, Limits, Params};
pub use table::Table;
