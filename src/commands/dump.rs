//! `BF.SCANDUMP` and `BF.LOADCHUNK`: moving a filter of any size in chunks (see
//! `bf_filter::dump` for the format and the iterator arithmetic).

use super::{in_use, parse_whole, Args};
use crate::error::BfError;
use crate::glue::call::Call;
use crate::glue::key::{Access, FilterKey};
use bf_filter::dump::{chunk_offset, header, next_iterator, Header};

/// An iterator: a whole number.
fn parse_iterator(token: &[u8]) -> Result<u64, BfError> {
    parse_whole(token).ok_or(BfError::BadIterator)
}

/// BF.SCANDUMP key iterator: `[next, chunk]`; iterator 0 gives the header, the end (and anything
/// past it, as in RedisBloom) `[0, ""]`.
pub fn scandump(call: &Call) -> Result<(), BfError> {
    let args = call.args();
    let iterator = parse_iterator(args.get(2))?;
    let key = FilterKey::open(call, 1, Access::Read);
    let chain = key.filter()?.ok_or(BfError::NotFound)?;
    in_use(chain)?;
    let (next, chunk) = if iterator == 0 {
        (1, std::borrow::Cow::Owned(header(chain)))
    } else if iterator > chain.dump_len() {
        (0, std::borrow::Cow::Borrowed(&[][..]))
    } else {
        let offset = iterator - 1;
        let chunk = chain.chunk(offset).ok_or(BfError::BadIterator)?;
        (next_iterator(offset, chunk.len()), chunk)
    };
    call.reply_array(2);
    call.reply_integer(i64::try_from(next).unwrap_or(i64::MAX));
    call.reply_bulk(&chunk);
    Ok(())
}

/// BF.LOADCHUNK key iterator data: rebuilds a filter from BF.SCANDUMP's chunks, in order. The
/// header (iterator 1) creates the filter in the restoring state, the data chunks fill it, each
/// exactly once and in order, and the last one puts it in use; each is checked whole before
/// anything is allocated or written. A filter in use takes no chunk.
pub fn loadchunk(call: &Call) -> Result<(), BfError> {
    let args = call.args();
    let iterator = parse_iterator(args.get(2))?;
    let data = args.get(3);
    let mut key = FilterKey::open(call, 1, Access::Write);
    if iterator == 1 {
        if key.filter()?.is_some() {
            return Err(BfError::ItemExists);
        }
        let header = Header::parse(data).map_err(BfError::from_chunk)?;
        let limit = call.size_limit();
        let bytes = header.planned_bytes();
        if bytes > limit.bytes() {
            return Err(limit.refusal(bytes));
        }
        let filter = header
            .into_filter()
            .map_err(|err| BfError::from_filter(err, &limit))?;
        let expiry = filter.expires_at();
        key.create(filter)?;
        // A windowed filter's key expires with its newest generation, as where it came from.
        if let Some(expiry) = expiry {
            key.expire_at(expiry);
        }
    } else {
        let chain = key.filter_mut()?.ok_or(BfError::NotFound)?;
        let offset = chunk_offset(iterator, data.len()).ok_or(BfError::BadIterator)?;
        chain
            .load_chunk(offset, data)
            .map_err(BfError::from_chunk)?;
    }
    call.reply_ok();
    call.replicate_verbatim();
    call.notify(c"bf.loadchunk", 1);
    Ok(())
}
