//! The server's side of the module's data types (`MBbloom--`, `MBbloomCF`): the callbacks the
//! server calls to save, load, rewrite, digest, measure, copy and free a value, written once over
//! [`Value`]. What they read and write is each family's (`crate::bloom::datatype`, `crate::cuckoo::datatype`).

use super::guard::guarded;
use super::value::{Arrival, Digest, Loading, Value};
use filters::fields::{FieldSink, FieldSource, LoadError};
use redis_module::raw;
use std::os::raw::{c_char, c_int, c_void};
use std::sync::atomic::Ordering;

/// The type methods of a value type `T`: the callbacks below, for `T`.
pub const fn methods<T: Value>() -> raw::RedisModuleTypeMethods {
    raw::RedisModuleTypeMethods {
        version: raw::REDISMODULE_TYPE_METHOD_VERSION as u64,
        rdb_load: Some(rdb_load::<T>),
        rdb_save: Some(rdb_save::<T>),
        aof_rewrite: Some(aof_rewrite::<T>),
        mem_usage: Some(mem_usage::<T>),
        digest: Some(digest::<T>),
        free: Some(free::<T>),
        aux_load: None,
        aux_save: None,
        aux_save_triggers: 0,
        free_effort: Some(free_effort::<T>),
        unlink: None,
        copy: Some(copy::<T>),
        defrag: None,
        mem_usage2: None,
        free_effort2: None,
        unlink2: None,
        // Redis 7.2 and newer (and Valkey) call it in place of `copy`, naming the databases too.
        copy2: Some(copy2::<T>),
        aux_save2: None,
    }
}

/// Remembers `T`'s type handle once the server has created it (at load time).
pub fn remember_raw_type<T: Value>() {
    T::handle().store(*T::data_type().raw_type.borrow(), Ordering::Relaxed);
}

/// The server's handle for `T`'s type.
#[inline]
pub fn raw_type<T: Value>() -> *mut raw::RedisModuleType {
    T::handle().load(Ordering::Relaxed)
}

/// The value a value pointer stands for.
///
/// # Safety
/// `value` must be a value of `T`'s type: a `Box<T>` leaked into the keyspace, alive for `'a`.
unsafe fn value_of<'a, T>(value: *const c_void) -> &'a T {
    // SAFETY: the caller's contract.
    unsafe { &*value.cast::<T>() }
}

/// The RDB stream of a save or load callback, as a field stream (`filters::fields`) for either
/// family's stored form.
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

impl Rdb {
    /// The next string of the stream: the server's buffer holding it and its length, or `None`
    /// if the stream failed.
    fn load_string(&mut self) -> Option<(*mut c_char, usize)> {
        let mut len = 0;
        // SAFETY: the IO context of the running rdb_load.
        let ptr = unsafe { raw::RedisModule_LoadStringBuffer.unwrap()(self.0, &mut len) };
        (!raw::is_io_error(self.0) && !ptr.is_null()).then_some((ptr, len))
    }
}

/// Takes a string the server read into a buffer of exactly `len` bytes (allocated with
/// RedisModule_Alloc, which is also this module's global allocator) as a Box that frees it the
/// same way; an empty one is given back, as a Box of nothing owns no allocation.
fn boxed((ptr, len): (*mut c_char, usize)) -> Box<[u8]> {
    if len == 0 {
        // SAFETY: the server's buffer, given back to its allocator.
        unsafe { raw::RedisModule_Free.unwrap()(ptr.cast()) };
        return Box::new([]);
    }
    // SAFETY: see above: `len` initialized bytes from the allocator Box<[u8]> frees with.
    unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr.cast::<u8>(), len)) }
}

impl FieldSource for Rdb {
    fn unsigned(&mut self) -> Option<u64> {
        raw::load_unsigned(self.0).ok()
    }

    fn double(&mut self) -> Option<f64> {
        raw::load_double(self.0).ok()
    }

    fn buffer(&mut self, expected: usize) -> Result<Box<[u8]>, LoadError> {
        let string = self.load_string().ok_or(LoadError::Truncated)?;
        let len = string.1;
        // Never empty: a bit-array piece has at least 8 bytes, a sub-filter's buckets at least 1.
        let bytes = boxed(string);
        if len != expected || len == 0 {
            return Err(LoadError::WrongLength {
                len: len as u64,
                expected: expected as u64,
            });
        }
        // A filter's array read whole: its pages are already touched, and the kernel merges
        // them into huge ones in the background.
        // SAFETY: the box's own `len` bytes, from the server's allocator.
        unsafe { super::huge_pages::ask(bytes.as_ptr().cast_mut(), len) };
        Ok(bytes)
    }

    fn any_buffer(&mut self) -> Result<Box<[u8]>, LoadError> {
        self.load_string().map(boxed).ok_or(LoadError::Truncated)
    }
}

/// DEBUG DIGEST's digest of the running callback.
struct ServerDigest(*mut raw::RedisModuleDigest);

impl Digest for ServerDigest {
    fn number(&mut self, number: u64) {
        // SAFETY: the digest of the running callback.
        unsafe { raw::RedisModule_DigestAddLongLong.unwrap()(self.0, number as i64) };
    }

    fn bytes(&mut self, bytes: &[u8]) {
        // SAFETY: as above; the server reads `bytes` and does not keep or write them.
        unsafe {
            raw::RedisModule_DigestAddStringBuffer.unwrap()(
                self.0,
                bytes.as_ptr().cast::<c_char>().cast_mut(),
                bytes.len(),
            );
        }
    }

    fn end_sequence(&mut self) {
        // SAFETY: as above.
        unsafe { raw::RedisModule_DigestEndSequence.unwrap()(self.0) };
    }
}

/// No context to log through: the callbacks below run without one.
const NO_CTX: *mut raw::RedisModuleCtx = std::ptr::null_mut();

/// # Safety
/// Called by the server with the IO of a save and a value of this type.
unsafe extern "C" fn rdb_save<T: Value>(rdb: *mut raw::RedisModuleIO, value: *mut c_void) {
    // SAFETY: a value of this type (the server's contract).
    let value = unsafe { value_of::<T>(value) };
    guarded(NO_CTX, "rdb_save", || (), || value.save(&mut Rdb(rdb)));
}

extern "C" fn rdb_load<T: Value>(rdb: *mut raw::RedisModuleIO, encver: c_int) -> *mut c_void {
    let loaded = guarded(
        NO_CTX,
        "rdb_load",
        || Err("the loader failed (see the log)".to_string()),
        || {
            let loading = Loading {
                origin: super::module::io_origin(rdb),
                now: super::module::now(),
                warn: &mut |why| super::log::io_warning(rdb, why),
            };
            T::load(&mut Rdb(rdb), encver, loading)
        },
    );
    match loaded {
        Ok(value) => {
            let value = Box::into_raw(Box::new(value));
            // SAFETY: the box just made, which the server owns from the return on.
            let value_ref = unsafe { &*value };
            value_ref.entered();
            // SAFETY: the IO of the running rdb_load, and functions the server filled in (or
            // left empty) at load. The server names the key it reads (RDB loading, RESTORE) and
            // its database, or gives a null name; the context it makes lives while the IO does.
            let (ctx, name, db) = unsafe {
                (
                    raw::RedisModule_GetContextFromIO.unwrap()(rdb),
                    raw::RedisModule_GetKeyNameFromIO
                        .and_then(|name_of| string_bytes(name_of(rdb))),
                    raw::RedisModule_GetDbIdFromIO.map(|db_of| db_of(rdb)),
                )
            };
            let arrival = Arrival {
                name,
                db,
                copied_from: None,
                ctx,
            };
            guarded(NO_CTX, "rdb_load", || (), || value_ref.arrived(&arrival));
            value.cast()
        }
        Err(why) => {
            super::log::io_warning(rdb, &format!("cannot load a filter: {why}"));
            std::ptr::null_mut()
        }
    }
}

/// # Safety
/// Called by the server with the IO of a rewrite, the key's name and a value of this type.
unsafe extern "C" fn aof_rewrite<T: Value>(
    aof: *mut raw::RedisModuleIO,
    key: *mut raw::RedisModuleString,
    value: *mut c_void,
) {
    let mut emit = |iterator: u64, bytes: &[u8]| {
        // SAFETY: the rewrite's IO and key; "slb" reads the key as a string, the iterator as a
        // long long and the chunk as a buffer of `bytes.len()` bytes.
        unsafe {
            raw::RedisModule_EmitAOF.unwrap()(
                aof,
                T::LOADCHUNK.as_ptr(),
                c"slb".as_ptr(),
                key,
                iterator as std::os::raw::c_longlong,
                bytes.as_ptr().cast::<c_char>(),
                bytes.len(),
            );
        }
    };
    // SAFETY: a value of this type (the server's contract).
    let value = unsafe { value_of::<T>(value) };
    guarded(NO_CTX, "aof_rewrite", || (), || value.rewrite(&mut emit));
}

/// # Safety
/// Called by the server with a value of this type.
unsafe extern "C" fn mem_usage<T: Value>(value: *const c_void) -> usize {
    // SAFETY: a value of this type (the server's contract).
    let value = unsafe { value_of::<T>(value) };
    guarded(NO_CTX, "mem_usage", || 0, || value.memory_usage())
}

/// # Safety
/// Called by the server with a digest and a value of this type.
unsafe extern "C" fn digest<T: Value>(md: *mut raw::RedisModuleDigest, value: *mut c_void) {
    // SAFETY: a value of this type (the server's contract).
    let value = unsafe { value_of::<T>(value) };
    guarded(
        NO_CTX,
        "digest",
        || (),
        || value.digest(&mut ServerDigest(md)),
    );
}

/// # Safety
/// Called by the server with a value of this type, which it forgets.
unsafe extern "C" fn free<T: Value>(value: *mut c_void) {
    // SAFETY: the Box this module leaked into the keyspace, handed back once.
    let value = unsafe { Box::from_raw(value.cast::<T>()) };
    guarded(NO_CTX, "free", || (), || value.left());
    drop(value);
}

/// # Safety
/// Called by the server with a value of this type.
unsafe extern "C" fn free_effort<T: Value>(
    _key: *mut raw::RedisModuleString,
    value: *const c_void,
) -> usize {
    // SAFETY: a value of this type (the server's contract).
    let value = unsafe { value_of::<T>(value) };
    // The number of blocks to hand back: a big filter (over 64 of them) is freed in the
    // background by UNLINK and lazy-free.
    guarded(
        NO_CTX,
        "free_effort",
        || 1,
        || {
            let mut blocks = 1;
            value.visit_allocations(&mut |_, _| blocks += 1);
            blocks
        },
    )
}

/// # Safety
/// Called by the server with a value of this type.
unsafe extern "C" fn copy<T: Value>(
    _from: *mut raw::RedisModuleString,
    to: *mut raw::RedisModuleString,
    value: *const c_void,
) -> *mut c_void {
    // SAFETY: the server's strings for the copy's key, valid during the callback.
    let name = unsafe { string_bytes(to) };
    // SAFETY: a value of this type (the server's contract).
    unsafe { copy_to::<T>(value, name, None) }
}

/// # Safety
/// Called by the server (7.2 and newer) with the copy's context and a value of this type.
unsafe extern "C" fn copy2<T: Value>(
    ctx: *mut raw::RedisModuleKeyOptCtx,
    value: *const c_void,
) -> *mut c_void {
    // SAFETY: the copy's own context, and what it names, valid during the callback (the
    // server that calls copy2 has both functions).
    let (name, db) = unsafe {
        (
            raw::RedisModule_GetToKeyNameFromOptCtx.and_then(|name_of| string_bytes(name_of(ctx))),
            raw::RedisModule_GetToDbIdFromOptCtx.map(|db_of| db_of(ctx)),
        )
    };
    // SAFETY: a value of this type (the server's contract).
    unsafe { copy_to::<T>(value, name, db) }
}

/// The copy of `value` for COPY into key `name` of database `db` (when the server says which).
///
/// # Safety
/// `value` must be a value of `T`'s type.
unsafe fn copy_to<T: Value>(
    value: *const c_void,
    name: Option<&[u8]>,
    db: Option<i32>,
) -> *mut c_void {
    // SAFETY: the caller's contract.
    let value_ref = unsafe { value_of::<T>(value) };
    // A copy the server has no memory for is refused (COPY answers an error), not an abort.
    let copied = guarded(NO_CTX, "copy", || None, || value_ref.try_clone());
    match copied {
        Some(copy) => {
            let copy = Box::into_raw(Box::new(copy));
            // SAFETY: the box just made, which the server owns from the return on.
            let copy_ref = unsafe { &*copy };
            copy_ref.entered();
            let arrival = Arrival {
                name,
                db,
                copied_from: Some(value as usize),
                ctx: std::ptr::null_mut(),
            };
            guarded(NO_CTX, "copy", || (), || copy_ref.arrived(&arrival));
            copy.cast()
        }
        None => std::ptr::null_mut(),
    }
}

/// The bytes of a string the server passes to a callback, `None` for a null one.
///
/// # Safety
/// `string` must be null or a valid string that outlives the slice.
unsafe fn string_bytes<'a>(string: *const raw::RedisModuleString) -> Option<&'a [u8]> {
    if string.is_null() {
        return None;
    }
    let mut len = 0;
    // SAFETY: a valid string (the caller's contract); the server only reads it.
    unsafe {
        let ptr = raw::RedisModule_StringPtrLen.unwrap()(string, &mut len);
        Some(std::slice::from_raw_parts(ptr.cast::<u8>(), len))
    }
}
