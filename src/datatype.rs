//! The `MBbloom--` data type: how a filter is saved to and loaded from RDB (and so DUMP/RESTORE
//! and replication), copied, digested, measured and freed.
//!
//! RDB layout, encoding version 100 (0 to 99 are left for reading RedisBloom's own layouts):
//!
//! ```text
//! unsigned  hash family            0 = xxh3-128 with the probe sequence of bf_filter::hash
//! unsigned  expansion              0 = NONSCALING
//! unsigned  number of sub-filters  at least 1
//! per sub-filter, oldest first:
//!   unsigned capacity, double error, unsigned hash count, unsigned bits, unsigned items
//!   the bit array as string buffers, one per piece (bf_filter::bits::piece_lengths)
//! ```
//!
//! Loading checks every field against what was actually read: the hash count and bit count must
//! be the ones the sizing gives for the capacity and error, each piece must have exactly its
//! expected length, and the sub-filters must follow the chain's growth rule. Memory is allocated
//! one piece at a time, after that piece's bytes were read, so a forged header cannot make the
//! server allocate more than the input holds.

use bf_filter::bits::{piece_lengths, BitStore};
use bf_filter::dump;
use bf_filter::{check_stored, check_successor, Chain, FilterError, Growth, Shape, SubFilter};
use redis_module::native_types::RedisType;
use redis_module::raw;
use std::os::raw::{c_char, c_int, c_void};

/// The encoding version this module writes.
pub const ENCODING_VERSION: i32 = 100;

/// Hash family 0: xxh3-128 and the probe sequence of `bf_filter::hash`.
const HASH_FAMILY_XXH3: u64 = 0;

/// The type, registered at load time.
pub static BLOOM_TYPE: RedisType = RedisType::new(
    "MBbloom--",
    ENCODING_VERSION,
    raw::RedisModuleTypeMethods {
        version: raw::REDISMODULE_TYPE_METHOD_VERSION as u64,
        rdb_load: Some(rdb_load),
        rdb_save: Some(rdb_save),
        aof_rewrite: Some(aof_rewrite),
        mem_usage: Some(mem_usage),
        digest: Some(digest),
        free: Some(free),
        aux_load: None,
        aux_save: None,
        aux_save_triggers: 0,
        free_effort: Some(free_effort),
        unlink: None,
        copy: Some(copy),
        defrag: None,
        mem_usage2: None,
        free_effort2: None,
        unlink2: None,
        copy2: None,
        aux_save2: None,
    },
);

/// The server's handle for the type.
pub fn raw_type() -> *mut raw::RedisModuleType {
    *BLOOM_TYPE.raw_type.borrow()
}

/// The chain a value pointer stands for.
///
/// # Safety
/// `value` must be a value of this type: a `Box<Chain>` leaked into the keyspace.
unsafe fn chain<'a>(value: *const c_void) -> &'a Chain {
    &*value.cast::<Chain>()
}

unsafe extern "C" fn rdb_save(rdb: *mut raw::RedisModuleIO, value: *mut c_void) {
    let chain = chain(value);
    raw::save_unsigned(rdb, HASH_FAMILY_XXH3);
    raw::save_unsigned(rdb, expansion_field(chain.growth()));
    raw::save_unsigned(rdb, chain.filters().len() as u64);
    for filter in chain.filters() {
        let shape = filter.shape();
        raw::save_unsigned(rdb, shape.capacity);
        raw::save_double(rdb, shape.error);
        raw::save_unsigned(rdb, u64::from(shape.hash_count));
        raw::save_unsigned(rdb, shape.bits);
        raw::save_unsigned(rdb, filter.items());
        for piece in filter.bits().pieces() {
            raw::save_slice(rdb, piece);
        }
    }
}

/// The expansion as stored: the factor, or 0 for NONSCALING.
fn expansion_field(growth: Growth) -> u64 {
    match growth {
        Growth::Scaling { expansion } => u64::from(expansion),
        Growth::Fixed => 0,
    }
}

unsafe extern "C" fn rdb_load(rdb: *mut raw::RedisModuleIO, encver: c_int) -> *mut c_void {
    let loaded = if encver == ENCODING_VERSION {
        load_chain(rdb)
    } else {
        Err(format!(
            "encoding version {encver} is not one this module reads"
        ))
    };
    match loaded {
        Ok(chain) => {
            crate::stats::filter_added(&chain);
            Box::into_raw(Box::new(chain)).cast()
        }
        Err(why) => {
            crate::glue::log::io_warning(rdb, &format!("bf: cannot load a filter: {why}"));
            std::ptr::null_mut()
        }
    }
}

/// Reads one chain in encoding version 100, checking every field.
fn load_chain(rdb: *mut raw::RedisModuleIO) -> Result<Chain, String> {
    let short = |_| "the data ends early".to_string();
    let family = raw::load_unsigned(rdb).map_err(short)?;
    if family != HASH_FAMILY_XXH3 {
        return Err(format!("unknown hash family {family}"));
    }
    let growth = match raw::load_unsigned(rdb).map_err(short)? {
        0 => Growth::Fixed,
        expansion => {
            Growth::scaling(expansion).map_err(|_| format!("bad expansion {expansion}"))?
        }
    };
    let count = raw::load_unsigned(rdb).map_err(short)?;
    if count == 0 {
        return Err("no sub-filters".into());
    }
    // Grown as sub-filters arrive: the count alone justifies no allocation.
    let mut filters = Vec::new();
    for _ in 0..count {
        let capacity = raw::load_unsigned(rdb).map_err(short)?;
        let error = raw::load_double(rdb).map_err(short)?;
        let hash_count = raw::load_unsigned(rdb).map_err(short)?;
        let bits = raw::load_unsigned(rdb).map_err(short)?;
        let items = raw::load_unsigned(rdb).map_err(short)?;
        let shape = Shape {
            capacity,
            error,
            hash_count: u32::try_from(hash_count).map_err(|_| "hash count out of range")?,
            bits,
        };
        // Everything about the sub-filter is checked before any of its bytes are read.
        check_stored(&shape, items).map_err(describe)?;
        if let Some(older) = filters.last() {
            let older: &SubFilter = older;
            check_successor(growth, older.shape(), older.items(), &shape).map_err(describe)?;
        }
        let mut pieces = Vec::new();
        for len in piece_lengths(bits) {
            let buffer = raw::load_string_buffer(rdb).map_err(short)?;
            let bytes = buffer.as_ref();
            if bytes.len() != len {
                return Err(format!(
                    "a bit-array piece of {} bytes, not {len}",
                    bytes.len()
                ));
            }
            pieces.push(Box::<[u8]>::from(bytes));
        }
        let store = BitStore::from_pieces(bits, pieces).ok_or("bad bit-array pieces")?;
        filters.push(SubFilter::from_parts(shape, items, store).map_err(describe)?);
    }
    Chain::from_parts(growth, filters).map_err(describe)
}

/// A core error as a log message.
fn describe(err: FilterError) -> String {
    match err {
        FilterError::Corrupt(what) => what.to_string(),
        other => format!("{other:?}"),
    }
}

/// Rewrites a filter for the AOF as the BF.LOADCHUNK sequence BF.SCANDUMP would produce: the
/// header, then every data chunk (at most 16 MiB each), whatever the filter's size.
unsafe extern "C" fn aof_rewrite(
    aof: *mut raw::RedisModuleIO,
    key: *mut raw::RedisModuleString,
    value: *mut c_void,
) {
    let chain = chain(value);
    let emit = |iterator: u64, bytes: &[u8]| {
        raw::RedisModule_EmitAOF.unwrap()(
            aof,
            c"BF.LOADCHUNK".as_ptr(),
            c"slb".as_ptr(),
            key,
            iterator as std::os::raw::c_longlong,
            bytes.as_ptr().cast::<c_char>(),
            bytes.len(),
        );
    };
    emit(1, &dump::header(chain));
    let mut offset = 0;
    while let Some(chunk) = chain.chunk(offset) {
        if chunk.is_empty() {
            break;
        }
        emit(dump::next_iterator(offset, chunk.len()), &chunk);
        offset += chunk.len() as u64;
    }
}

/// What the allocator really charges for a block it handed out.
fn charged(ptr: *const u8) -> usize {
    // SAFETY: every heap block of a chain came from the Redis allocator (the module's global
    // allocator), which is what MallocSize measures.
    unsafe { raw::RedisModule_MallocSize.unwrap()(ptr as *mut c_void) }
}

/// The bytes a filter occupies: every block it holds, at the size the allocator charged for it.
/// `MEMORY USAGE` builds on this figure, and BF.INFO reports it as `Size`.
pub fn memory_usage(chain: &Chain) -> usize {
    // The chain's own box: its size is one of the allocator's size classes (checked below), so it
    // is charged exactly; the chain need not be asked where it lives.
    let mut total = std::mem::size_of::<Chain>();
    chain.visit_allocations(&mut |ptr, _| total += charged(ptr));
    total
}

// Small jemalloc size classes are the multiples of 16 up to 128.
const _: () = assert!(
    std::mem::size_of::<Chain>().is_multiple_of(16) && std::mem::size_of::<Chain>() <= 128,
    "Chain's box would be rounded up by the allocator"
);

unsafe extern "C" fn mem_usage(value: *const c_void) -> usize {
    memory_usage(chain(value))
}

unsafe extern "C" fn digest(md: *mut raw::RedisModuleDigest, value: *mut c_void) {
    let chain = chain(value);
    let add_number = |number: u64| raw::RedisModule_DigestAddLongLong.unwrap()(md, number as i64);
    add_number(expansion_field(chain.growth()));
    for filter in chain.filters() {
        let shape = filter.shape();
        add_number(shape.capacity);
        add_number(shape.error.to_bits());
        add_number(u64::from(shape.hash_count));
        add_number(shape.bits);
        add_number(filter.items());
        for piece in filter.bits().pieces() {
            raw::RedisModule_DigestAddStringBuffer.unwrap()(
                md,
                piece.as_ptr().cast::<c_char>().cast_mut(),
                piece.len(),
            );
        }
    }
    raw::RedisModule_DigestEndSequence.unwrap()(md);
}

unsafe extern "C" fn free(value: *mut c_void) {
    let chain = Box::from_raw(value.cast::<Chain>());
    crate::stats::filter_freed(&chain);
    drop(chain);
}

unsafe extern "C" fn free_effort(_key: *mut raw::RedisModuleString, value: *const c_void) -> usize {
    // The number of blocks to hand back: a big filter (over 64 of them) is freed in the
    // background by UNLINK and lazy-free.
    let mut blocks = 1;
    chain(value).visit_allocations(&mut |_, _| blocks += 1);
    blocks
}

unsafe extern "C" fn copy(
    _from: *mut raw::RedisModuleString,
    _to: *mut raw::RedisModuleString,
    value: *const c_void,
) -> *mut c_void {
    let copy = Box::new(chain(value).clone());
    crate::stats::filter_added(&copy);
    Box::into_raw(copy).cast()
}
