//! Bloom filters (`BF.*`): membership that never forgets, in a few bits per item. A sibling of the
//! cuckoo filter, on the ground floor both share (the error type, the item hash, the byte-size
//! model, pieces of memory, the field reader and writer, dump chunks and the restoring state) and
//! nothing of the cuckoo filter's. Its modules, in layers (each uses only those above it):
//!
//! - [`sizing`]: bits and hash count for a capacity and an error rate, in either layout
//!   ([`sizing::blocked`]: the blocked layout's own); [`probes`]: the probe sequences an item's
//!   hash expands into, this module's and RedisBloom's ([`Hashing`]).
//! - [`sub_filter`]: one fixed-size filter ([`SubFilter`]); [`locator`]: where one lies in memory,
//!   as plain numbers, for a command to prefetch an item's lines from before it has the filter.
//! - [`growth`]: how chains grow ([`Growth`]), RedisBloom's rules for its chains included.
//! - [`chain`]: the scaling chain ([`Chain`]) and its [`Format`].
//! - [`window`]: windowed filters, which remember an item for a window of time.
//! - [`filter`]: what a key holds ([`Filter`]: a chain or a windowed filter).
//! - The formats, readers and writers: [`stored`] (the RDB field sequence), [`redisbloom`]
//!   (RedisBloom's RDB and chunk layouts, read only), [`dump`] (SCANDUMP/LOADCHUNK chunks).
//! - [`doc_tables`]: the figures the docs quote.

pub mod chain;
pub mod doc_tables;
pub mod dump;
pub mod filter;
pub mod growth;
pub mod locator;
pub mod probes;
pub mod redisbloom;
pub mod sizing;
pub mod stored;
pub mod sub_filter;
pub mod window;

pub use chain::{check_successor, Chain, Format, Growth, MAX_EXPANSION};
pub use filter::Filter;
pub use probes::Hashing;
pub use sizing::Shape;
pub use sub_filter::{check_stored, SubFilter};

#[cfg(test)]
mod tests;
