//! `CF.SCANDUMP` and `CF.LOADCHUNK`: a cuckoo filter in pieces, in RedisBloom's format
//! (`filters::cuckoo::dump`). LOADCHUNK's data chunks are propagated like any write, so a
//! replica holds what its primary holds (RedisBloom 2.4 sends replicas the header only).

use super::{in_use, open};
use crate::error::{BfError, CfError};
use crate::glue::call::Call;
use crate::glue::key::Access;
use crate::parse::Args;
use filters::chunks::{chunk_offset, next_iterator};
use filters::cuckoo::dump::{header, Header};
use filters::FilterError;

/// An iterator: a whole number; RedisBloom's `Invalid position` otherwise.
fn parse_iterator(token: &[u8]) -> Result<u64, BfError> {
    crate::parse::parse_whole(token).ok_or(BfError::Cf(CfError::BadPosition))
}

/// CF.SCANDUMP key iterator: `[next, bytes]`; `[0, nil]` at the end, and (as RedisBloom) at once
/// for a filter without items. Iterator 0 answers the header with 1; a data chunk at offset `o`
/// answers `o + len + 1`.
pub fn scandump(call: &Call) -> Result<(), BfError> {
    let args = call.args();
    let iterator = parse_iterator(args.get(2))?;
    let key = open(call, Access::Read);
    let filter = key.filter()?.ok_or(BfError::NotFound)?;
    in_use(filter)?;
    let reply = |next: u64, bytes: Option<&[u8]>| {
        call.reply_array(2);
        call.reply_integer(next as i64);
        match bytes {
            Some(bytes) => call.reply_bulk(bytes),
            None => call.reply_null(),
        }
    };
    if filter.items() == 0 {
        reply(0, None);
    } else if iterator == 0 {
        reply(1, Some(&header(filter)));
    } else if iterator > filter.dump_len() {
        reply(0, None);
    } else {
        let offset = iterator - 1;
        let chunk = filter.chunk(offset).ok_or(BfError::BadIterator)?;
        reply(next_iterator(offset, chunk.len()), Some(chunk));
    }
    Ok(())
}

/// CF.LOADCHUNK key iterator data: `OK`. Iterator 1 with a header makes the filter, empty and
/// restoring; the data chunks then fill it, in order, each once.
pub fn loadchunk(call: &Call) -> Result<(), BfError> {
    let args = call.args();
    let iterator = parse_iterator(args.get(2))?;
    let data = args.get(3);
    let mut key = open(call, Access::Write);
    if iterator == 1 {
        if key.filter()?.is_some() {
            return Err(BfError::ItemExists);
        }
        // A bounded filter's rate is a cuckoo filter's (1e-12 and up), not a Bloom filter's.
        let header = Header::parse(data).map_err(|err| match err {
            FilterError::BadErrorRate => BfError::Cf(CfError::BadErrorRate),
            other => BfError::from_chunk(other),
        })?;
        let limit = call.size_limit();
        limit.admit(header.planned_bytes())?;
        let filter = header
            .into_filter()
            .map_err(|err| BfError::from_filter(err, &limit))?;
        key.create(filter)?;
    } else {
        let filter = key.filter_mut()?.ok_or(BfError::NotFound)?;
        let offset = chunk_offset(iterator, data.len()).ok_or(BfError::BadIterator)?;
        let before = crate::size::cuckoo_memory_usage(filter);
        filter
            .load_chunk(offset, data)
            .map_err(BfError::from_chunk)?;
        // The last chunk frees the restore's own state: INFO bf counts what is left.
        crate::stats::cuckoo_resized(before, filter);
    }
    call.reply_ok();
    call.replicate_verbatim();
    call.notify(c"cf.loadchunk", 1);
    Ok(())
}
