//! How a filter travels as dump chunks, for both families (`BF.SCANDUMP`/`BF.LOADCHUNK` and
//! `CF.SCANDUMP`/`CF.LOADCHUNK`), by RedisBloom's iterator arithmetic: the header comes with
//! iterator 1; a data chunk at offset `o` of the concatenated arrays, `len` bytes long, comes with
//! `o + len + 1`, and LOADCHUNK recovers the offset as `iterator - len - 1`. No chunk is longer
//! than [`CHUNK_BYTES`] or spans two sub-filters.

use crate::bits::MAX_PIECE_BYTES;

/// The largest data chunk (16 MiB, RedisBloom's too).
pub const CHUNK_BYTES: u64 = MAX_PIECE_BYTES as u64;

/// The iterator SCANDUMP returns with a data chunk at `offset` of `len` bytes.
pub fn next_iterator(offset: u64, len: usize) -> u64 {
    offset + len as u64 + 1
}

/// The dump offset of a chunk LOADCHUNK receives with `iterator`; `None` if impossible.
pub fn chunk_offset(iterator: u64, len: usize) -> Option<u64> {
    iterator.checked_sub(len as u64)?.checked_sub(1)
}
