//! The stored form of a cuckoo filter (RDB, `DUMP`/`RESTORE`, full syncs): RedisBloom's
//! encoding version 4 of its `MBbloomCF` type, field for field, so that its files load here and
//! it reads ours back:
//!
//! ```text
//! unsigned sub-filters, unsigned buckets (the first's), unsigned items, unsigned deletes,
//! unsigned bucket size, unsigned max iterations, unsigned expansion,
//! per sub-filter: unsigned buckets, string of buckets * bucket size bytes
//! ```
//!
//! What that layout has no place for (a filter with a bounded error rate, a filter being restored
//! from dump chunks) is written in a form of this module's: a sub-filter count of 0 (which
//! RedisBloom refuses), then flags (1: restoring, 2: bounded), the error rate (a double) if
//! bounded, the dump offset where the next chunk goes if restoring, and then the fields above.
//! Every field is checked before anything is allocated for what it describes; each sub-filter's
//! bytes must be exactly as long as its bucket count and slot width say.

use super::filter::Cuckoo;
use super::shape::{check_shape, slot_bits, Bound, Params, MAX_TABLES};
use super::table::{table_bytes, Table};
use crate::fields::{FieldSink, FieldSource, LoadError};

/// RedisBloom's encoding version of `MBbloomCF`, which this module writes.
pub const ENCODING_VERSION: u32 = 4;
/// The sub-filter count that opens a form of this module's own.
const OURS: u64 = 0;
/// Flag 1: a filter being restored from dump chunks.
const RESTORING: u64 = 1;
/// Flag 2: a filter with a bounded error rate.
const BOUNDED: u64 = 2;

/// Writes a filter's fields.
pub fn save(filter: &Cuckoo, sink: &mut impl FieldSink) {
    let restoring = filter.restoring();
    let bound = filter.bound();
    if restoring.is_some() || bound.is_some() {
        sink.unsigned(OURS);
        let flags = restoring.map_or(0, |_| RESTORING) | bound.map_or(0, |_| BOUNDED);
        sink.unsigned(flags);
        if let Some(bound) = bound {
            sink.double(bound.error());
        }
        if let Some(next) = restoring {
            sink.unsigned(next);
        }
    }
    let params = filter.params();
    sink.unsigned(filter.tables().len() as u64);
    sink.unsigned(filter.buckets());
    sink.unsigned(filter.items());
    sink.unsigned(filter.deletes());
    sink.unsigned(u64::from(params.bucket_size));
    sink.unsigned(u64::from(params.max_iterations));
    sink.unsigned(u64::from(params.expansion));
    for table in filter.tables() {
        sink.unsigned(table.buckets());
        sink.buffer(table.bytes());
    }
}

/// Reads a filter saved in encoding version `encver`.
pub fn load(source: &mut impl FieldSource, encver: u32) -> Result<Cuckoo, LoadError> {
    if encver != ENCODING_VERSION {
        return Err(LoadError::Corrupt(refused_version(encver)));
    }
    let first = source.unsigned().ok_or(LoadError::Truncated)?;
    if first != OURS {
        return load_fields(source, first, None);
    }
    let flags = source.unsigned().ok_or(LoadError::Truncated)?;
    if flags == 0 || flags & !(RESTORING | BOUNDED) != 0 {
        return Err(LoadError::Corrupt(format!(
            "unknown cuckoo filter flags {flags}"
        )));
    }
    let bound = if flags & BOUNDED != 0 {
        let error = source.double().ok_or(LoadError::Truncated)?;
        Some(Bound::for_error(error)?)
    } else {
        None
    };
    let next = if flags & RESTORING != 0 {
        Some(source.unsigned().ok_or(LoadError::Truncated)?)
    } else {
        None
    };
    let count = source.unsigned().ok_or(LoadError::Truncated)?;
    let mut filter = load_fields(source, count, bound)?;
    if next.is_some() {
        filter.set_restoring(next)?;
    }
    Ok(filter)
}

/// Why a filter of encoding version `encver` (not [`ENCODING_VERSION`]) does not load.
fn refused_version(encver: u32) -> String {
    let why = if encver < ENCODING_VERSION {
        "older, from RedisBloom before 2.2, which hashed items with 32-bit MurmurHash2 (no later \
         release answers by it)"
    } else {
        "newer, unknown to this module"
    };
    format!(
        "a cuckoo filter of encoding version {encver}: only version {ENCODING_VERSION} loads \
         (RedisBloom 2.2 and later write it, and this module); version {encver} is {why}"
    )
}

/// Reads the fields after the sub-filter count `count`.
fn load_fields(
    source: &mut impl FieldSource,
    count: u64,
    bound: Option<Bound>,
) -> Result<Cuckoo, LoadError> {
    if count == 0 || count > MAX_TABLES {
        return Err(LoadError::Corrupt(format!("{count} sub-filters")));
    }
    let mut fields = [0u64; 6];
    for field in &mut fields {
        *field = source.unsigned().ok_or(LoadError::Truncated)?;
    }
    let [buckets, items, deletes, bucket_size, max_iterations, expansion] = fields;
    let params = Params::new(bucket_size, max_iterations, expansion)?;
    if u64::from(params.expansion) != expansion {
        return Err(LoadError::Corrupt(
            "an expansion that is not a power of two".into(),
        ));
    }
    // The shape is checked whole before any sub-filter's bytes are read.
    let expansion = u64::from(params.expansion);
    let shape = (0..count).scan(buckets, |next, _| {
        let current = *next;
        *next = next.saturating_mul(expansion);
        Some(current)
    });
    check_shape(params, shape, items)?;
    // Grown as sub-filters arrive: the count alone justifies no allocation.
    let mut tables: Vec<Table> = Vec::new();
    let mut expected = buckets;
    for index in 0..count as usize {
        let stored = source.unsigned().ok_or(LoadError::Truncated)?;
        if stored != expected {
            return Err(LoadError::Corrupt(
                "sub-filters do not follow the expansion".into(),
            ));
        }
        let bits = slot_bits(bound, index);
        let len = table_bytes(stored, params.bucket_size, bits)
            .and_then(|len| usize::try_from(len).ok())
            .ok_or_else(|| LoadError::Corrupt("bucket count".into()))?;
        let data = source
            .buffer(len)
            .map_err(|err| err.naming("a sub-filter's buckets"))?;
        tables.push(Table::from_bytes(stored, params.bucket_size, bits, &data)?);
        expected = expected.saturating_mul(expansion);
    }
    Ok(Cuckoo::from_parts(params, bound, tables, items, deletes)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cuckoo::Limits;
    use crate::fields::{ByteFields, ByteSink};

    fn saved(filter: &Cuckoo) -> Vec<u8> {
        let mut sink = ByteSink::default();
        save(filter, &mut sink);
        sink.bytes
    }

    fn loaded(bytes: &[u8]) -> Result<Cuckoo, LoadError> {
        let mut fields = ByteFields::new(bytes);
        let filter = load(&mut fields, ENCODING_VERSION)?;
        assert_eq!(fields.remaining(), 0);
        Ok(filter)
    }

    fn grown() -> Cuckoo {
        let params = Params::new(2, 20, 2).unwrap();
        let mut filter = Cuckoo::new(4, params, None, u64::MAX).unwrap();
        for i in 0..60u32 {
            filter.add(&i.to_le_bytes(), &Limits::NONE).unwrap();
        }
        assert!(filter.delete(&7u32.to_le_bytes()));
        assert!(filter.tables().len() > 2);
        filter
    }

    #[test]
    fn a_filter_survives_its_save_and_load() {
        let filter = grown();
        assert_eq!(loaded(&saved(&filter)), Ok(filter));
        let params = Params::new(4, 500, 2).unwrap();
        let bound = Bound::for_error(0.01).ok();
        let mut bounded = Cuckoo::new(4, params, bound, u64::MAX).unwrap();
        for i in 0..200u32 {
            bounded.add(&i.to_le_bytes(), &Limits::NONE).unwrap();
        }
        assert!(bounded.tables().len() > 2);
        assert_eq!(loaded(&saved(&bounded)), Ok(bounded));
    }

    #[test]
    fn damaged_fields_are_refused() {
        let good = saved(&grown());
        let fields = |bytes: &[u8]| {
            let mut source = ByteFields::new(bytes);
            std::iter::from_fn(move || source.unsigned()).collect::<Vec<u64>>()
        };
        assert_eq!(fields(&good)[..7], [4, 4, 59, 1, 2, 20, 2]);
        // Field `index` (of the first seven) replaced by `value`.
        let with = |index: usize, value: u64| {
            let mut bytes = good.clone();
            let at = index * 9 + 1;
            bytes[at..at + 8].copy_from_slice(&value.to_le_bytes());
            bytes
        };
        for (index, value) in [
            (0, 65_536),
            (1, 3),
            (1, 8),
            (2, 10_000),
            (4, 0),
            (4, 256),
            (5, 0),
            (5, 65_536),
            (6, 3),
            (6, 65_536),
        ] {
            assert!(
                loaded(&with(index, value)).is_err(),
                "field {index} = {value}"
            );
        }
        for cut in 0..good.len() {
            assert!(loaded(&good[..cut]).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn other_encodings_are_refused_with_a_reason() {
        let refused = |encver| {
            let mut fields = ByteFields::new(&[]);
            load(&mut fields, encver).unwrap_err().to_string()
        };
        assert_eq!(
            refused(3),
            "a cuckoo filter of encoding version 3: only version 4 loads (RedisBloom 2.2 and \
             later write it, and this module); version 3 is older, from RedisBloom before 2.2, \
             which hashed items with 32-bit MurmurHash2 (no later release answers by it)"
        );
        assert_eq!(
            refused(5),
            "a cuckoo filter of encoding version 5: only version 4 loads (RedisBloom 2.2 and \
             later write it, and this module); version 5 is newer, unknown to this module"
        );
    }

    #[test]
    fn a_short_sub_filter_is_refused_in_the_cuckoo_filter_s_words() {
        let mut bytes = saved(&grown());
        // The first sub-filter's string: its tag, its length, its bytes; two bytes short.
        let at = 8 * 9;
        assert_eq!(bytes[at], 3);
        let len = u64::from_le_bytes(bytes[at + 1..at + 9].try_into().unwrap());
        bytes[at + 1..at + 9].copy_from_slice(&(len - 2).to_le_bytes());
        assert_eq!(
            loaded(&bytes).unwrap_err().to_string(),
            format!("a sub-filter's buckets of {} bytes, not {len}", len - 2)
        );
    }
}
