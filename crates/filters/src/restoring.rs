//! Where a restore from dump chunks stands (each family's dump module has the protocol): kept
//! beside a Bloom or cuckoo filter while it is being rebuilt, so that taking a chunk costs the
//! same in a chain of one sub-filter as in one of a thousand.

use crate::bytes::charged_array;
use crate::error::FilterError;

/// A restore in progress: where the next data chunk must start, and the sub-filter that falls in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restoring {
    /// The dump offset where the next data chunk must start.
    pub(crate) next: u64,
    /// The sub-filter `next` falls in, by its index in dump order.
    pub(crate) index: usize,
    /// The dump offset where that sub-filter's bits start.
    pub(crate) start: u64,
}

impl Restoring {
    /// What the allocator charges for the state of a restore ([`crate::bytes`]): part of the
    /// filter's `Size` while it is being restored.
    pub fn charged() -> u64 {
        charged_array::<Restoring>(1)
    }

    /// The state of a restore whose next chunk is due at dump offset `next`: the sub-filter it
    /// falls in, found by one walk over `lengths` (each sub-filter's dumped bytes, in dump order).
    pub(crate) fn at(
        next: u64,
        lengths: impl IntoIterator<Item = u64>,
    ) -> Result<Box<Restoring>, FilterError> {
        let mut start = 0u64;
        for (index, len) in lengths.into_iter().enumerate() {
            if next < start + len {
                return Ok(Box::new(Restoring { next, index, start }));
            }
            start += len;
        }
        Err(FilterError::Corrupt("restoring state out of range"))
    }
}
