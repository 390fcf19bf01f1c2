//! The errors only cuckoo filter commands answer, with RedisBloom 2.4.23's texts (each given the
//! `ERR` code RedisBloom leaves out, so that every error starts with one).

use std::fmt;

/// An error reply of a `CF.*` command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CfError {
    /// A capacity that is not a whole number (or past 2^63 - 1).
    BadCapacity,
    /// A capacity under twice the bucket size.
    CapacityTooSmall,
    /// `MAXITERATIONS`, `BUCKETSIZE` or `EXPANSION` followed by something that is not a number.
    CannotParse(&'static str),
    /// `MAXITERATIONS` outside 1 to 65535.
    MaxIterationsRange,
    /// `BUCKETSIZE` outside 1 to 255.
    BucketSizeRange,
    /// `EXPANSION` outside 0 to 32768.
    ExpansionRange,
    /// The filter has `cf-max-expansions` sub-filters.
    MaxExpansions,
    /// A filter of expansion 0 has no room for the item.
    Full,
    /// The item's buckets hold nothing but its copies.
    TooManyCopies,
    /// CF.DEL of a missing key.
    DeleteNotFound,
    /// CF.COMPACT of a missing key.
    CompactNotFound,
    /// A CF.SCANDUMP or CF.LOADCHUNK iterator that is not a position.
    BadPosition,
    /// An `ERROR` rate outside 1e-12 up to, not including, 1.
    BadErrorRate,
    /// `BUCKETSIZE` with `ERROR`.
    BucketSizeWithError,
}

impl fmt::Display for CfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CfError::BadCapacity => f.write_str("ERR Bad capacity"),
            CfError::CapacityTooSmall => {
                f.write_str("ERR Capacity must be at least (BucketSize * 2)")
            }
            CfError::CannotParse(option) => write!(f, "ERR Couldn't parse {option}"),
            CfError::MaxIterationsRange => f.write_str(
                "ERR MAXITERATIONS: value must be an integer between 1 and 65535, inclusive.",
            ),
            CfError::BucketSizeRange => f.write_str(
                "ERR BUCKETSIZE: value must be an integer between 1 and 255, inclusive.",
            ),
            CfError::ExpansionRange => f.write_str(
                "ERR EXPANSION: value must be an integer between 0 and 32768, inclusive.",
            ),
            CfError::MaxExpansions => f.write_str("ERR Maximum expansions reached"),
            CfError::Full => f.write_str("ERR Filter is full"),
            CfError::TooManyCopies => f.write_str(
                "ERR item added too many times: its buckets hold nothing but copies of it \
                 (delete some, or add it with CF.ADDNX)",
            ),
            CfError::DeleteNotFound => f.write_str("ERR Not found"),
            CfError::CompactNotFound => f.write_str("ERR Cuckoo filter was not found"),
            CfError::BadPosition => f.write_str("ERR Invalid position"),
            CfError::BadErrorRate => f.write_str(
                "ERR bad error rate: must be a number from 1e-12 up to, not including, 1",
            ),
            CfError::BucketSizeWithError => f.write_str(
                "ERR BUCKETSIZE cannot be used with ERROR (a filter with an error rate has \
                 buckets of 4)",
            ),
        }
    }
}
