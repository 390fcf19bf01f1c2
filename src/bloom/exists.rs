//! `BF.EXISTS` and `BF.MEXISTS`: whether items may have been added. A missing key holds nothing.

use super::early::{Early, Purpose};
use super::{in_use, lookup_time, Args};
use crate::error::BfError;
use crate::glue::call::Call;
use crate::glue::key::{Access, FilterKey};
use crate::stats;

/// BF.EXISTS key item
pub fn exists(call: &Call) -> Result<(), BfError> {
    let item = call.args().get(2);
    let early = Early::hash(call, item, Purpose::Lookup);
    let key = FilterKey::open(call, 1, Access::Read);
    let filter = key.filter()?;
    if let Some(filter) = filter {
        in_use(filter)?;
    }
    let found = filter.is_some_and(|filter| {
        let now = lookup_time(call, filter);
        match early.take(call, filter, now) {
            None => filter.contains(item, now),
            early => filter.contains_early(item, early, now),
        }
    });
    early.answered(found);
    stats::items_looked_up(1);
    call.reply_bool(found);
    Ok(())
}

/// BF.MEXISTS key item [item ...]
pub fn mexists(call: &Call) -> Result<(), BfError> {
    let key = FilterKey::open(call, 1, Access::Read);
    let filter = key.filter()?;
    if let Some(filter) = filter {
        in_use(filter)?;
    }
    let args = call.args();
    call.reply_array(args.len() - 2);
    stats::items_looked_up(args.len() - 2);
    match filter {
        Some(filter) => filter.contains_many(
            (2..args.len()).map(|i| args.get(i)),
            lookup_time(call, filter),
            |found| call.reply_bool(found),
        ),
        None => (2..args.len()).for_each(|_| call.reply_bool(false)),
    }
    Ok(())
}
