//! `BF.SCANDUMP` and `BF.LOADCHUNK`: moving a filter of any size in chunks (see
//! `filters::bloom::dump` for the format and the iterator arithmetic).

use super::{in_use, parse_whole, Args};
use crate::error::BfError;
use crate::glue::call::Call;
use crate::glue::key::{Access, FilterKey};
use filters::bloom::dump::{
    chunk_offset, dump_tag, header, next_iterator, split_iterator, tagged, Header,
};
use filters::bloom::Filter;

/// An iterator: a whole number.
fn parse_iterator(token: &[u8]) -> Result<u64, BfError> {
    parse_whole(token).ok_or(BfError::BadIterator)
}

/// BF.SCANDUMP key iterator: `[next, chunk]`; iterator 0 gives the header, the end (and anything
/// past it, as in RedisBloom) `[0, ""]`. A windowed filter's iterators carry its dump tag
/// (`filters::bloom::dump`): one of a dump begun before its oldest parts expired is refused.
pub fn scandump(call: &Call) -> Result<(), BfError> {
    let args = call.args();
    let iterator = parse_iterator(args.get(2))?;
    let key = FilterKey::open(call, 1, Access::Read);
    let filter = key.filter()?.ok_or(BfError::NotFound)?;
    in_use(filter)?;
    let tag = dump_tag(filter);
    let (next, chunk) = if iterator == 0 {
        (tagged(tag, 1), std::borrow::Cow::Owned(header(filter)))
    } else {
        let position = scan_position(iterator, tag)?;
        if position > filter.dump_len() {
            (0, std::borrow::Cow::Borrowed(&[][..]))
        } else {
            let offset = position.checked_sub(1).ok_or(BfError::BadIterator)?;
            let chunk = filter.chunk(offset).ok_or(BfError::BadIterator)?;
            (tagged(tag, next_iterator(offset, chunk.len())), chunk)
        }
    };
    call.reply_array(2);
    call.reply_integer(i64::try_from(next).unwrap_or(i64::MAX));
    call.reply_bulk(&chunk);
    Ok(())
}

/// The dump position a SCANDUMP iterator names for a filter whose dumps are tagged `tag`: a
/// chain's (tag 0) is the iterator itself; a windowed filter's must carry exactly its tag (every
/// dump of it this release began did), or [`BfError::DumpChanged`].
fn scan_position(iterator: u64, tag: u64) -> Result<u64, BfError> {
    if tag == 0 {
        return Ok(iterator);
    }
    match split_iterator(iterator) {
        (given, position) if given == tag => Ok(position),
        _ => Err(BfError::DumpChanged),
    }
}

/// BF.LOADCHUNK key iterator data: rebuilds a filter from BF.SCANDUMP's chunks, in order. The
/// header (iterator 1, with a windowed filter's tag) creates the filter in the restoring state,
/// the data chunks fill it, each exactly once and in order, and the last one puts it in use; each
/// is checked whole before anything is allocated or written. A filter in use takes no chunk.
pub fn loadchunk(call: &Call) -> Result<(), BfError> {
    let args = call.args();
    let iterator = parse_iterator(args.get(2))?;
    let data = args.get(3);
    let mut key = FilterKey::open(call, 1, Access::Write);
    let (given, position) = split_iterator(iterator);
    if position == 1 {
        if key.filter()?.is_some() {
            return Err(BfError::ItemExists);
        }
        let header = Header::parse(data).map_err(BfError::from_chunk)?;
        let limit = call.size_limit();
        limit.admit(header.planned_bytes())?;
        let filter = header
            .into_filter()
            .map_err(|err| BfError::from_filter(err, &limit))?;
        // A filter from further ahead than a window would hold its items past their time: a
        // client's is refused here. The server's own AOF is brought back to the clock, and a
        // primary's kept, once the last chunk is in (moving it earlier would change the tag its
        // data chunks carry).
        if let Filter::Windowed(windowed) = &filter {
            super::window::check_clock(call, windowed).map_err(BfError::from_chunk)?;
        }
        if given != 0 && given != dump_tag(&filter) {
            return Err(BfError::ChunkOfAnotherDump);
        }
        key.create(filter)?;
    } else {
        let filter = key.filter_mut()?.ok_or(BfError::NotFound)?;
        let position = position_for_chunk(iterator, dump_tag(filter))?;
        let offset = chunk_offset(position, data.len()).ok_or(BfError::BadIterator)?;
        let before = crate::size::memory_usage(filter);
        filter
            .load_chunk(offset, data)
            .map_err(BfError::from_chunk)?;
        // The last chunk frees the restore's own state: INFO bf counts what is left.
        crate::stats::filter_resized(before, filter);
        if filter.restoring().is_none() {
            if let Filter::Windowed(windowed) = filter {
                super::window::settle_clock(call, windowed);
            }
            super::window::register(call, filter);
        }
    }
    call.reply_ok();
    call.replicate_verbatim();
    call.notify(c"bf.loadchunk", 1);
    Ok(())
}

/// The dump position of a data chunk's iterator for a filter whose dumps are tagged `tag`: a
/// chain's (tag 0) is the iterator itself; a windowed filter's must carry its tag, or none (a dump
/// written by the first release, in an AOF file), or [`BfError::ChunkOfAnotherDump`].
fn position_for_chunk(iterator: u64, tag: u64) -> Result<u64, BfError> {
    if tag == 0 {
        return Ok(iterator);
    }
    match split_iterator(iterator) {
        (given, position) if given == tag || given == 0 => Ok(position),
        _ => Err(BfError::ChunkOfAnotherDump),
    }
}
