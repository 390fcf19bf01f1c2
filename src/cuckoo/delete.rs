//! `CF.DEL` and `CF.COMPACT`: forgetting an item, and moving fingerprints down into older
//! sub-filters so that a newer one can be freed, within a bounded budget per call
//! (`filters::cuckoo::compact`).

use super::{in_use, open, Early};
use crate::error::{BfError, CfError};
use crate::glue::call::Call;
use crate::glue::key::Access;
use crate::parse::Args;
use crate::size::cuckoo_memory_usage;
use crate::stats;

/// CF.DEL key item: `1` (RESP3 `true`) if one copy of the item was removed, `0` if the filter does
/// not hold it (nothing changes, nothing is propagated). Deleting an item that was never added
/// can remove another item that shares its fingerprint and buckets.
pub fn del(call: &Call) -> Result<(), BfError> {
    let item = call.args().get(2);
    let early = Early::hash(call, item);
    let mut key = open(call, Access::Write);
    let filter = key
        .filter_mut()?
        .ok_or(BfError::Cf(CfError::DeleteNotFound))?;
    in_use(filter)?;
    // Only a filter of several sub-filters can shrink (a compaction frees the newest): one of
    // one is not sized on every delete.
    let before = (filter.tables().len() > 1).then(|| cuckoo_memory_usage(filter));
    let deleted = filter.delete_print(&early.print(call, filter, item));
    stats::cuckoo_items(0, 0, usize::from(deleted));
    if let Some(before) = before {
        stats::cuckoo_resized(before, filter);
    }
    call.reply_bool(deleted);
    if deleted {
        call.replicate_verbatim();
        call.notify(c"cf.del", 1);
    }
    Ok(())
}

/// CF.COMPACT key: `OK`. A write (RedisBloom flags it read-only, so it ran on replicas and made
/// them differ).
pub fn compact(call: &Call) -> Result<(), BfError> {
    let mut key = open(call, Access::Write);
    let filter = key
        .filter_mut()
        .map_err(|_| BfError::Cf(CfError::CompactNotFound))?
        .ok_or(BfError::Cf(CfError::CompactNotFound))?;
    in_use(filter)?;
    let before = cuckoo_memory_usage(filter);
    filter.compact(true);
    stats::cuckoo_resized(before, filter);
    call.reply_ok();
    call.replicate_verbatim();
    call.notify(c"cf.compact", 1);
    Ok(())
}
