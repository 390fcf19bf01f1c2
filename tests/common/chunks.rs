//! Dumps and restores in chunks for both families: the CF.SCANDUMP sequence, CF.LOADCHUNK, where
//! a data chunk starts, and the errors of a filter being restored (BF.SCANDUMP and BF.LOADCHUNK
//! are `super::scandump` and `super::loadchunk`).

use super::{Conn, Frame};

/// The CF.SCANDUMP sequence of `key`, as (iterator, data), up to the `[0, nil]` that ends it
/// (nothing for a filter without items, as RedisBloom).
pub fn cf_scandump(conn: &mut Conn, key: &str) -> Vec<(i64, Vec<u8>)> {
    dump_sequence(conn, "CF.SCANDUMP", key, |end| {
        matches!(end, Frame::NullBulk | Frame::Null)
    })
}

/// A dump sequence of either family (`verb key iterator` from 0), as (iterator, data), up to the
/// reply with iterator 0, whose data `is_end` must accept (BF.SCANDUMP's `""`, CF.SCANDUMP's nil).
pub fn dump_sequence(
    conn: &mut Conn,
    verb: &str,
    key: &str,
    is_end: fn(&Frame) -> bool,
) -> Vec<(i64, Vec<u8>)> {
    let mut chunks = Vec::new();
    let mut iterator = 0;
    loop {
        let reply = conn.call(&[verb, key, &iterator.to_string()]).items();
        iterator = reply[0].int();
        if iterator == 0 {
            assert!(is_end(&reply[1]), "{verb} ended with {reply:?}");
            return chunks;
        }
        chunks.push((iterator, reply[1].bytes()));
    }
}

/// `CF.LOADCHUNK key iterator data`.
pub fn cf_loadchunk(conn: &mut Conn, key: &str, iterator: impl ToString, data: &[u8]) -> Frame {
    let iterator = iterator.to_string();
    conn.call(&[
        b"CF.LOADCHUNK".as_slice(),
        key.as_bytes(),
        iterator.as_bytes(),
        data,
    ])
}

/// Where a data chunk of either family's dump starts in the data: its iterator is the byte after
/// its end, plus one.
pub fn offset(chunk: &(i64, Vec<u8>)) -> u64 {
    (chunk.0 - 1) as u64 - chunk.1.len() as u64
}

/// The reply of an add or lookup on a filter that `loadchunk` (`BF.LOADCHUNK` or
/// `CF.LOADCHUNK`) is rebuilding, `loaded` of `total` data bytes in.
pub fn being_restored(loadchunk: &str, loaded: u64, total: u64) -> Frame {
    Frame::error(&format!(
        "ERR filter is being restored by {loadchunk} ({loaded} of {total} bytes loaded): it \
         answers once its last chunk has arrived"
    ))
}

/// The reply of a data chunk for a filter no header chunk created.
pub fn not_restoring() -> Frame {
    Frame::error(
        "ERR invalid chunk: the filter is not being restored (data chunks only follow the header \
         chunk that created it)",
    )
}

/// The reply of a chunk that is not the next one, which starts at byte `expected`.
pub fn out_of_order(expected: u64) -> Frame {
    Frame::error(&format!(
        "ERR invalid chunk: not the next one (loaded already, or out of order: the next chunk \
         starts at byte {expected} of the data)"
    ))
}
