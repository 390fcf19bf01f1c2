//! Opening a key that should hold a filter: the one place that decides "missing", "ours" or
//! WRONGTYPE, and that hands filters to and from the keyspace. Written once for both families
//! ([`Key`] of a [`Value`] type: [`FilterKey`] for Bloom filters, `Key<Cuckoo>` for cuckoo ones).

use super::value::Value;
use crate::error::BfError;
use crate::glue::call::Call;
use filters::bloom::Filter;
use redis_module::raw;
use std::marker::PhantomData;
use std::os::raw::{c_int, c_void};

/// How a key is opened.
#[derive(Clone, Copy)]
pub enum Access {
    Read,
    Write,
}

/// An open key that should hold a `T`; closed when dropped.
pub struct Key<T: Value> {
    key: *mut raw::RedisModuleKey,
    /// The key's name, when this module made the string (a key opened by name, outside a
    /// command): freed after the key is closed.
    name: Option<*mut raw::RedisModuleString>,
    value: PhantomData<T>,
}

/// A key that should hold a Bloom filter.
pub type FilterKey = Key<Filter>;

/// What an open key holds, for a command that may create a filter: the filter, or the room for
/// one (the key is empty).
pub enum Entry<'k, T: Value = Filter> {
    Filter(&'k mut T),
    Empty(Vacant<'k, T>),
}

/// An empty key, open for writing: [`Vacant::create`] stores a filter in it.
pub struct Vacant<'k, T: Value = Filter>(&'k mut Key<T>);

impl<'k, T: Value> Vacant<'k, T> {
    /// Stores a new filter in the key and returns it.
    pub fn create(self, filter: T) -> Result<&'k mut T, BfError> {
        self.0.create(filter)
    }
}

impl<T: Value> Key<T> {
    /// Opens the key named by argument `index` of the call.
    pub fn open(call: &Call, index: usize, access: Access) -> Key<T> {
        // SAFETY: the context and the argument string are valid for the whole call, and the key
        // is closed (by Drop) before the call returns.
        let key = unsafe { open_key(call.ctx(), call.arg_string(index), mode(access)) };
        Key {
            key,
            name: None,
            value: PhantomData,
        }
    }

    /// Opens the key `name` of the context's selected database, outside a command (the sweep, an
    /// event), without touching its LRU/LFU idle time.
    ///
    /// # Safety
    /// `ctx` must be a valid context for as long as the key is open.
    pub unsafe fn open_name(ctx: *mut raw::RedisModuleCtx, name: &[u8], access: Access) -> Key<T> {
        // SAFETY: a valid buffer; the string is freed by Drop, after the key is closed.
        let string = unsafe {
            raw::RedisModule_CreateString.unwrap()(
                std::ptr::null_mut(),
                name.as_ptr().cast(),
                name.len(),
            )
        };
        let mode = mode(access) | raw::REDISMODULE_OPEN_KEY_NOTOUCH;
        // SAFETY: the caller's context, and the string just made.
        let key = unsafe { open_key(ctx, string, mode) };
        Key {
            key,
            name: Some(string),
            value: PhantomData,
        }
    }

    /// Deletes the key (open for writing): a filter that a failed command created must not stay.
    pub fn delete(&mut self) {
        if !self.key.is_null() {
            // SAFETY: a key open for writing, not yet closed.
            unsafe { raw::RedisModule_DeleteKey.unwrap()(self.key) };
        }
    }

    /// The value's pointer if the key holds a filter, `None` if it is empty, WRONGTYPE otherwise.
    fn value(&self) -> Result<Option<*mut T>, BfError> {
        if self.key.is_null() {
            return Ok(None);
        }
        // SAFETY: a non-null key opened by `open` and not yet closed. The type is asked first:
        // it is null for an empty key or a key of a non-module type, so a filter costs one call.
        unsafe {
            let raw_type = super::datatype::raw_type::<T>();
            if raw::RedisModule_ModuleTypeGetType.unwrap()(self.key) == raw_type {
                let value = raw::RedisModule_ModuleTypeGetValue.unwrap()(self.key);
                return Ok(Some(value.cast::<T>()));
            }
            if raw::RedisModule_KeyType.unwrap()(self.key)
                == raw::REDISMODULE_KEYTYPE_EMPTY as c_int
            {
                return Ok(None);
            }
            Err(BfError::WrongType)
        }
    }

    /// The filter the key holds, if any.
    pub fn filter(&self) -> Result<Option<&T>, BfError> {
        // SAFETY: a value of our type is a `Box<Filter>` set by `create` or by rdb_load/copy, and
        // stays alive while the key is open.
        Ok(self.value()?.map(|chain| unsafe { &*chain }))
    }

    /// The filter the key holds, if any, to change it (the key must be open for writing).
    pub fn filter_mut(&mut self) -> Result<Option<&mut T>, BfError> {
        // SAFETY: as in `filter`; `&mut self` makes this the only reference handed out.
        Ok(self.value()?.map(|chain| unsafe { &mut *chain }))
    }

    /// The filter the key holds, or the room for one; WRONGTYPE for a key of another type. One
    /// look at the key, where `filter` then `create` would take two.
    pub fn entry(&mut self) -> Result<Entry<'_, T>, BfError> {
        match self.value()? {
            // SAFETY: as in `filter_mut`.
            Some(chain) => Ok(Entry::Filter(unsafe { &mut *chain })),
            None => Ok(Entry::Empty(Vacant(self))),
        }
    }

    /// Stores a new filter in the empty key (open for writing) and returns it.
    pub fn create(&mut self, filter: T) -> Result<&mut T, BfError> {
        let value = Box::into_raw(Box::new(filter));
        // SAFETY: the key is open for writing; on success Redis owns the box and frees it through
        // the type's free callback.
        let status = unsafe {
            raw::RedisModule_ModuleTypeSetValue.unwrap()(
                self.key,
                super::datatype::raw_type::<T>(),
                value.cast::<c_void>(),
            )
        };
        if status != raw::REDISMODULE_OK as c_int {
            // SAFETY: Redis did not take the value; it is still ours to free.
            drop(unsafe { Box::from_raw(value) });
            return Err(BfError::Internal);
        }
        // SAFETY: the value now lives in the keyspace for at least as long as the key is open.
        let filter = unsafe { &mut *value };
        filter.entered();
        Ok(filter)
    }
}

impl<T: Value> Key<T> {
    /// When the key expires (milliseconds since the epoch), if it has a time to live.
    pub fn expires_at(&self) -> Option<u64> {
        if self.key.is_null() {
            return None;
        }
        // SAFETY: a key opened by `open` that holds a value, not yet closed; reading a function
        // pointer the server filled in (or left empty, before Redis 6.2.2) at load.
        let expiry = unsafe { raw::RedisModule_GetAbsExpire.map(|get| get(self.key)) }?;
        // REDISMODULE_NO_EXPIRE (-1) is no time to live.
        u64::try_from(expiry).ok()
    }

    /// Removes the key's time to live (the key must be open for writing).
    pub fn persist(&mut self) {
        if !self.key.is_null() {
            // SAFETY: a key open for writing, not yet closed.
            unsafe {
                raw::RedisModule_SetExpire.unwrap()(self.key, raw::REDISMODULE_NO_EXPIRE.into());
            }
        }
    }
}

/// The open mode of an access.
fn mode(access: Access) -> u32 {
    match access {
        Access::Read => raw::REDISMODULE_READ,
        Access::Write => raw::REDISMODULE_READ | raw::REDISMODULE_WRITE,
    }
}

/// RedisModule_OpenKey.
///
/// # Safety
/// A valid context and key name, and a mode the server takes.
unsafe fn open_key(
    ctx: *mut raw::RedisModuleCtx,
    name: *mut raw::RedisModuleString,
    mode: u32,
) -> *mut raw::RedisModuleKey {
    // SAFETY: as the caller promises.
    unsafe {
        raw::RedisModule_OpenKey.unwrap()(ctx, name, mode as c_int).cast::<raw::RedisModuleKey>()
    }
}

impl<T: Value> Drop for Key<T> {
    fn drop(&mut self) {
        if !self.key.is_null() {
            // SAFETY: opened by `open`, closed once.
            unsafe { raw::RedisModule_CloseKey.unwrap()(self.key) };
        }
        if let Some(name) = self.name.take() {
            // SAFETY: made by `open_name` without a context, freed once, after the key.
            unsafe { raw::RedisModule_FreeString.unwrap()(std::ptr::null_mut(), name) };
        }
    }
}
