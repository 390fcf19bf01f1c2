//! The `MBbloom--` data type: how a filter is saved to and loaded from RDB (and so DUMP/RESTORE
//! and replication), rewritten for the AOF, copied, digested, measured and freed.
//!
//! The stored form is `bf_filter::stored`'s, in encoding version 103 (100 to 102, from before
//! the restoring state, windowed filters and their parts, are still read); versions 0 to 4 are RedisBloom's own
//! layouts (its type has the same name), read by `bf_filter::redisbloom`. This file only connects
//! them to the server's RDB stream.

use crate::glue::guard::guarded;
use crate::size::memory_usage;
use bf_filter::dump;
use bf_filter::redisbloom;
use bf_filter::stored::{self, FieldSink, FieldSource, LoadError, Revision};
use bf_filter::window::{Rule, Settled};
use bf_filter::{Filter, Format, Growth, SubFilter};
use redis_module::native_types::RedisType;
use redis_module::raw;
use std::os::raw::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicPtr, Ordering};

/// The encoding version this module writes: the newest revision of the stored form.
pub const ENCODING_VERSION: i32 = Revision::NEWEST as i32;

/// The type's name: RedisBloom's, so `TYPE key` answers the same after a switch.
pub const TYPE_NAME: &str = "MBbloom--";

/// The type, registered at load time.
pub static BLOOM_TYPE: RedisType = RedisType::new(
    TYPE_NAME,
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

/// The server's handle for the type, kept where the command path reads it without a RefCell.
static RAW_TYPE: AtomicPtr<raw::RedisModuleType> = AtomicPtr::new(std::ptr::null_mut());

/// Remembers the type's handle once the server has created it (at load time).
pub fn remember_raw_type() {
    RAW_TYPE.store(*BLOOM_TYPE.raw_type.borrow(), Ordering::Relaxed);
}

/// The server's handle for the type.
#[inline]
pub fn raw_type() -> *mut raw::RedisModuleType {
    RAW_TYPE.load(Ordering::Relaxed)
}

/// The filter a value pointer stands for.
///
/// # Safety
/// `value` must be a value of this type: a `Box<Filter>` leaked into the keyspace.
unsafe fn filter<'a>(value: *const c_void) -> &'a Filter {
    &*value.cast::<Filter>()
}

/// The RDB stream of a save or load callback, as a field stream for `bf_filter::stored`.
struct Rdb(*mut raw::RedisModuleIO);

impl FieldSink for Rdb {
    fn unsigned(&mut self, value: u64) {
        raw::save_unsigned(self.0, value);
    }

    fn double(&mut self, value: f64) {
        raw::save_double(self.0, value);
    }

    fn buffer(&mut self, bytes: &[u8]) {
        raw::save_slice(self.0, bytes);
    }
}

impl FieldSource for Rdb {
    fn unsigned(&mut self) -> Option<u64> {
        raw::load_unsigned(self.0).ok()
    }

    fn double(&mut self) -> Option<f64> {
        raw::load_double(self.0).ok()
    }

    fn buffer(&mut self, expected: usize) -> Result<Box<[u8]>, LoadError> {
        let mut len = 0;
        // SAFETY: the IO context of the running rdb_load. The server reads the string into a
        // buffer of exactly its length, allocated with RedisModule_Alloc, which is also this
        // module's global allocator: the buffer can become a Box<[u8]> that frees it the same way.
        // A piece is never empty (at least 8 bytes), so the Box has a real allocation behind it.
        unsafe {
            let ptr = raw::RedisModule_LoadStringBuffer.unwrap()(self.0, &mut len);
            if raw::is_io_error(self.0) || ptr.is_null() {
                return Err(LoadError::Truncated);
            }
            if len != expected || len == 0 {
                raw::RedisModule_Free.unwrap()(ptr.cast());
                return Err(LoadError::Corrupt(format!(
                    "a bit-array piece of {len} bytes, not {expected}"
                )));
            }
            Ok(Box::from_raw(std::ptr::slice_from_raw_parts_mut(
                ptr.cast::<u8>(),
                len,
            )))
        }
    }

    fn any_buffer(&mut self) -> Result<Box<[u8]>, LoadError> {
        let mut len = 0;
        // SAFETY: as in `buffer`; the server has read the whole string before it returns it.
        unsafe {
            let ptr = raw::RedisModule_LoadStringBuffer.unwrap()(self.0, &mut len);
            if raw::is_io_error(self.0) || ptr.is_null() {
                return Err(LoadError::Truncated);
            }
            if len == 0 {
                // A Box of nothing owns no allocation: give the server's back.
                raw::RedisModule_Free.unwrap()(ptr.cast());
                return Ok(Box::new([]));
            }
            Ok(Box::from_raw(std::ptr::slice_from_raw_parts_mut(
                ptr.cast::<u8>(),
                len,
            )))
        }
    }
}

/// No context to log through: the callbacks below run without one.
const NO_CTX: *mut raw::RedisModuleCtx = std::ptr::null_mut();

unsafe extern "C" fn rdb_save(rdb: *mut raw::RedisModuleIO, value: *mut c_void) {
    guarded(
        NO_CTX,
        "rdb_save",
        || (),
        || stored::save(filter(value), &mut Rdb(rdb)),
    );
}

unsafe extern "C" fn rdb_load(rdb: *mut raw::RedisModuleIO, encver: c_int) -> *mut c_void {
    let loaded = guarded(
        NO_CTX,
        "rdb_load",
        || Err("the loader failed (see the log)".to_string()),
        || {
            if let Some(revision) = Revision::of_encoding(encver) {
                stored::load(&mut Rdb(rdb), revision).map_err(|err| err.to_string())
            } else if let Ok(encver @ 0..=4) = u32::try_from(encver) {
                // Written by RedisBloom, whose type has the same name.
                redisbloom::load_rdb(&mut Rdb(rdb), encver)
                    .map(Filter::Chain)
                    .map_err(|err| err.to_string())
            } else {
                Err(format!(
                    "encoding version {encver} is not one this module reads"
                ))
            }
        },
    );
    // A windowed filter from more than a window ahead of this server's clock would hold its
    // items past their time: a client's RESTORE of one is refused, as every loader refuses it. The
    // server's own file is brought back to the clock instead (refusing it would stop the server
    // from starting over a clock that stepped back), and a primary's data is kept as it is.
    let loaded = loaded.and_then(|mut filter| match &mut filter {
        Filter::Windowed(windowed) => {
            let origin = crate::glue::module::io_origin(rdb);
            let now = crate::glue::module::now();
            match windowed.settle_clock(now, origin.clock_trust()) {
                Ok(settled) => {
                    if let Some(why) = clock_warning(settled, now) {
                        crate::glue::log::io_warning(rdb, &why);
                    }
                    Ok(filter)
                }
                Err(err) => Err(stored::LoadError::from(err).to_string()),
            }
        }
        Filter::Chain(_) => Ok(filter),
    });
    match loaded {
        Ok(filter) => {
            crate::stats::filter_added(&filter);
            note_loaded(&filter);
            Box::into_raw(Box::new(filter)).cast()
        }
        Err(why) => {
            crate::glue::log::io_warning(rdb, &format!("cannot load a filter: {why}"));
            std::ptr::null_mut()
        }
    }
}

/// The warning for a windowed filter a loader found ahead of the clock and kept, if one is due
/// (at most one every ten seconds: a full sync can hold many).
pub fn clock_warning(settled: Settled, now: u64) -> Option<String> {
    static LAST: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let what = match settled {
        Settled::OnTime => return None,
        Settled::KeptAhead => "kept it as its primary sent it".to_string(),
        Settled::BroughtBack { millis } => format!(
            "moved it {} seconds back, so that its items expire on this clock",
            millis.div_ceil(1000)
        ),
    };
    crate::glue::log::rarely(&LAST, now).then(|| {
        format!(
            "a windowed filter starts more than a window after this server's clock (did the clock \
             step back?): {what}"
        )
    })
}

/// When the sweep should first look at the windowed filter RDB loading just read
/// (`Filter::first_look`), for the `loaded` keyspace event that follows it (which names the key:
/// the sweep registers it); `None` for anything else.
static LOADED: std::sync::Mutex<Option<u64>> = std::sync::Mutex::new(None);

fn note_loaded(filter: &Filter) {
    let next = filter.first_look();
    *LOADED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner()) = next;
}

/// The next expiry RDB loading noted for the filter it just read, if any (once).
pub fn take_loaded() -> Option<u64> {
    LOADED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .take()
}

unsafe extern "C" fn aof_rewrite(
    aof: *mut raw::RedisModuleIO,
    key: *mut raw::RedisModuleString,
    value: *mut c_void,
) {
    guarded(
        NO_CTX,
        "aof_rewrite",
        || (),
        || rewrite(aof, key, filter(value)),
    );
}

/// Emits the BF.LOADCHUNK sequence of one filter: its header, then its data chunks (for a filter
/// being restored, the ones that have arrived, so the replay is restoring at the same point).
unsafe fn rewrite(aof: *mut raw::RedisModuleIO, key: *mut raw::RedisModuleString, filter: &Filter) {
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
    let tag = dump::dump_tag(filter);
    emit(dump::tagged(tag, 1), &dump::header(filter));
    for (offset, chunk) in filter.loaded_chunks() {
        emit(
            dump::tagged(tag, dump::next_iterator(offset, chunk.len())),
            &chunk,
        );
    }
}

unsafe extern "C" fn mem_usage(value: *const c_void) -> usize {
    guarded(NO_CTX, "mem_usage", || 0, || memory_usage(filter(value)))
}

unsafe extern "C" fn digest(md: *mut raw::RedisModuleDigest, value: *mut c_void) {
    guarded(NO_CTX, "digest", || (), || digest_filter(md, filter(value)));
}

/// Feeds a filter's parameters and bits to DEBUG DIGEST.
unsafe fn digest_filter(md: *mut raw::RedisModuleDigest, filter: &Filter) {
    let add_number = |number: u64| raw::RedisModule_DigestAddLongLong.unwrap()(md, number as i64);
    match filter {
        Filter::Chain(chain) => digest_chain(md, chain),
        Filter::Windowed(windowed) => {
            // A windowed filter's parameters, then each generation: its slot, rule and first
            // part's number, and each part with its expiry.
            let shape = windowed.shape();
            add_number(3 << 32);
            add_number(shape.window.as_seconds());
            add_number(shape.capacity);
            add_number(shape.error.to_bits());
            add_number(match shape.growth {
                Growth::Scaling { expansion } => u64::from(expansion),
                Growth::Fixed => 0,
            });
            for generation in windowed.generations() {
                add_number(generation.slot());
                add_number(match generation.rule() {
                    Rule::Budget(budget) => budget,
                    Rule::Legacy => u64::MAX,
                });
                add_number(u64::from(generation.first()));
                for part in generation.parts() {
                    add_number(part.expires_at());
                    digest_sub_filter(md, part.filter());
                }
            }
        }
    }
    // A filter being restored differs from the finished one. (Filters in use digest as they
    // always did.)
    if let Some(next) = filter.restoring() {
        add_number(u64::MAX);
        add_number(next);
    }
    raw::RedisModule_DigestEndSequence.unwrap()(md);
}

/// Feeds a chain's parameters and bits to DEBUG DIGEST.
unsafe fn digest_chain(md: *mut raw::RedisModuleDigest, chain: &bf_filter::Chain) {
    let add_number = |number: u64| raw::RedisModule_DigestAddLongLong.unwrap()(md, number as i64);
    // An imported filter's hashing changes every answer: it is part of the value. (Native
    // filters digest as they always did.)
    if let Format::RedisBloom(options) = chain.format() {
        add_number(1 << 32 | u64::from(options.flags()));
    }
    add_number(match chain.growth() {
        Growth::Scaling { expansion } => u64::from(expansion),
        Growth::Fixed => 0,
    });
    for filter in chain.filters() {
        digest_sub_filter(md, filter);
    }
}

/// Feeds a sub-filter's shape, items and bits to DEBUG DIGEST.
unsafe fn digest_sub_filter(md: *mut raw::RedisModuleDigest, filter: &SubFilter) {
    let add_number = |number: u64| raw::RedisModule_DigestAddLongLong.unwrap()(md, number as i64);
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

unsafe extern "C" fn free(value: *mut c_void) {
    let filter = Box::from_raw(value.cast::<Filter>());
    guarded(
        NO_CTX,
        "free",
        || (),
        || crate::stats::filter_freed(&filter),
    );
    drop(filter);
}

unsafe extern "C" fn free_effort(_key: *mut raw::RedisModuleString, value: *const c_void) -> usize {
    // The number of blocks to hand back: a big filter (over 64 of them) is freed in the
    // background by UNLINK and lazy-free.
    guarded(
        NO_CTX,
        "free_effort",
        || 1,
        || {
            let mut blocks = 1;
            filter(value).visit_allocations(&mut |_, _| blocks += 1);
            blocks
        },
    )
}

unsafe extern "C" fn copy(
    _from: *mut raw::RedisModuleString,
    _to: *mut raw::RedisModuleString,
    value: *const c_void,
) -> *mut c_void {
    // A copy the server has no memory for is refused (COPY answers an error), not an abort.
    let copied = guarded(NO_CTX, "copy", || None, || filter(value).try_clone().ok());
    match copied {
        Some(copy) => {
            crate::stats::filter_added(&copy);
            Box::into_raw(Box::new(copy)).cast()
        }
        None => std::ptr::null_mut(),
    }
}
