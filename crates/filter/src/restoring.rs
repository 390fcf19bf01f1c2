//! Where a restore from dump chunks stands (the protocol is `crate::dump`'s): kept beside a chain
//! or windowed filter while it is being rebuilt, so that taking a chunk costs the same in a chain
//! of one sub-filter as in one of a thousand.

use crate::bytes::charged_array;

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
}
