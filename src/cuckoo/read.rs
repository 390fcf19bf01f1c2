//! `CF.EXISTS`, `CF.MEXISTS`, `CF.COUNT`, `CF.INFO` and `CF.DEBUG`. A missing key holds nothing
//! (0, false); a key of another type is WRONGTYPE (RedisBloom answers 0).

use super::{in_use, open, Early};
use crate::error::BfError;
use crate::glue::call::Call;
use crate::glue::key::Access;
use crate::parse::Args;
use crate::size::cuckoo_memory_usage;
use crate::stats;
use filters::cuckoo::Cuckoo;

/// CF.EXISTS key item: whether the item may be there.
pub fn exists(call: &Call) -> Result<(), BfError> {
    let item = call.args().get(2);
    let early = Early::hash(call, item);
    let key = open(call, Access::Read);
    let filter = key.filter()?;
    if let Some(filter) = filter {
        in_use(filter)?;
    }
    let found =
        filter.is_some_and(|filter| filter.contains_print(&early.print(call, filter, item)));
    stats::cuckoo_items(0, 1, 0);
    call.reply_bool(found);
    Ok(())
}

/// CF.MEXISTS key item [item ...]: an array of the same.
pub fn mexists(call: &Call) -> Result<(), BfError> {
    let key = open(call, Access::Read);
    let filter = key.filter()?;
    if let Some(filter) = filter {
        in_use(filter)?;
    }
    let args = call.args();
    let count = args.len() - 2;
    call.reply_array(count);
    stats::cuckoo_items(0, count, 0);
    match filter {
        Some(filter) => filter.contains_many((2..args.len()).map(|i| args.get(i)), |found| {
            call.reply_bool(found)
        }),
        None => (0..count).for_each(|_| call.reply_bool(false)),
    }
    Ok(())
}

/// CF.COUNT key item: how many copies of the item's fingerprint its buckets hold (RedisBloom's
/// count: one found in a bucket that is both of its buckets counts twice).
pub fn count(call: &Call) -> Result<(), BfError> {
    let key = open(call, Access::Read);
    let filter = key.filter()?;
    if let Some(filter) = filter {
        in_use(filter)?;
    }
    let copies = filter.map_or(0, |filter| filter.count(call.args().get(2)));
    stats::cuckoo_items(0, 1, 0);
    call.reply_integer(copies as i64);
    Ok(())
}

/// The filter at the key (which must hold one), for INFO and DEBUG.
fn existing(key: &super::CuckooKey) -> Result<&Cuckoo, BfError> {
    key.filter()?.ok_or(BfError::NotFound)
}

/// CF.INFO key: RedisBloom's eight fields, a flat array in RESP2, a map in RESP3; `Error rate`
/// after them for a filter with one.
pub fn info(call: &Call) -> Result<(), BfError> {
    let key = open(call, Access::Read);
    let filter = existing(&key)?;
    let params = filter.params();
    let fields: [(&std::ffi::CStr, u64); 8] = [
        (c"Size", cuckoo_memory_usage(filter) as u64),
        (c"Number of buckets", filter.buckets()),
        (c"Number of filters", filter.tables().len() as u64),
        (c"Number of items inserted", filter.items()),
        (c"Number of items deleted", filter.deletes()),
        (c"Bucket size", u64::from(params.bucket_size)),
        (c"Expansion rate", u64::from(params.expansion)),
        (c"Max iterations", u64::from(params.max_iterations)),
    ];
    let bound = filter.bound();
    call.reply_map(fields.len() + usize::from(bound.is_some()));
    for (name, value) in fields {
        call.reply_simple(name);
        call.reply_integer(value as i64);
    }
    // A bounded filter's rate, after RedisBloom's eight (clients that read by position keep
    // working).
    if let Some(bound) = bound {
        call.reply_simple(c"Error rate");
        call.reply_bulk(format!("{:?}", bound.error()).as_bytes());
    }
    Ok(())
}

/// CF.DEBUG key: RedisBloom's line, `bktsize:2 buckets:512 items:4 deletes:0 filters:1
/// max_iterations:20 expansion:1`.
pub fn debug(call: &Call) -> Result<(), BfError> {
    let key = open(call, Access::Read);
    let filter = existing(&key)?;
    let params = filter.params();
    let mut line = format!(
        "bktsize:{} buckets:{} items:{} deletes:{} filters:{} max_iterations:{} expansion:{}",
        params.bucket_size,
        filter.buckets(),
        filter.items(),
        filter.deletes(),
        filter.tables().len(),
        params.max_iterations,
        params.expansion
    );
    if let Some(bound) = filter.bound() {
        let widths: Vec<String> = filter
            .tables()
            .iter()
            .map(|t| t.bits().to_string())
            .collect();
        line.push_str(&format!(
            " error:{:?} bits:{}",
            bound.error(),
            widths.join(",")
        ));
    }
    call.reply_bulk(line.as_bytes());
    Ok(())
}
