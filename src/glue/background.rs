//! The module's work outside commands: the sweep's timer and the keyspace and server events it
//! listens to (the Bloom family's `bloom::sweep`, wired in by `lib.rs`). A [`Background`] is the context the server gives such a
//! callback, with what the sweep asks of it.

use crate::glue::guard::guarded;
use crate::glue::key::{Access, FilterKey};
use redis_module::raw;
use std::ffi::CStr;
use std::os::raw::{c_char, c_int, c_void};

/// What the module does on each event it listens to (wired by `lib.rs`, so that this glue calls
/// no module code by name).
pub struct Handlers {
    /// The sweep's timer fired.
    pub timer: fn(&Background),
    /// A keyspace event (its name) for a key (its name), in the context's selected database.
    pub keyspace: fn(&Background, &[u8], &[u8]),
    /// SWAPDB swapped two databases.
    pub swapdb: fn(i32, i32),
    /// FLUSHDB emptied a database (FLUSHALL, or a replica's full sync: every one, -1).
    pub flush: fn(i32),
}

static HANDLERS: std::sync::OnceLock<&'static Handlers> = std::sync::OnceLock::new();

/// The context of a timer or event callback.
pub struct Background {
    ctx: *mut raw::RedisModuleCtx,
}

pub use crate::glue::module::now;

impl Background {
    /// A command's context as a background one, to act on other keys or schedule work.
    pub fn of_call(call: &super::call::Call) -> Background {
        // SAFETY: the command's own context, valid for the call, which the wrapper does not
        // outlive in the command's code.
        unsafe { Background::new(call.ctx()) }
    }

    /// Wraps the context of a callback or a command.
    ///
    /// # Safety
    /// `ctx` must be valid for as long as the wrapper is used.
    pub unsafe fn new(ctx: *mut raw::RedisModuleCtx) -> Background {
        Background { ctx }
    }

    fn flags(&self) -> u32 {
        // SAFETY: a valid context.
        unsafe { raw::RedisModule_GetContextFlags.unwrap()(self.ctx) as u32 }
    }

    /// True on a primary that is not loading, and not holding writes back for its replicas
    /// (`CLIENT PAUSE WRITE`, a `FAILOVER` under way, where the server's own expiry waits too):
    /// where the sweep may write.
    pub fn may_write(&self) -> bool {
        let flags = self.flags();
        // SAFETY: the server sets the API pointer at load and never changes it; the call takes
        // no argument (Redis 6.0 and newer).
        let paused =
            unsafe { raw::RedisModule_AvoidReplicaTraffic.is_some_and(|avoid| avoid() != 0) };
        flags & raw::REDISMODULE_CTX_FLAGS_MASTER != 0
            && flags & raw::REDISMODULE_CTX_FLAGS_LOADING == 0
            && !paused
    }

    /// The selected database.
    pub fn db(&self) -> i32 {
        // SAFETY: a valid context.
        unsafe { raw::RedisModule_GetSelectedDb.unwrap()(self.ctx) }
    }

    /// Selects database `db`; false if there is none of that number.
    pub fn select_db(&self, db: i32) -> bool {
        // SAFETY: a valid context.
        unsafe { raw::RedisModule_SelectDb.unwrap()(self.ctx, db) == raw::REDISMODULE_OK as c_int }
    }

    /// Opens key `name` of the selected database, without touching its idle time.
    pub fn open(&self, name: &[u8], access: Access) -> FilterKey {
        // SAFETY: the context outlives the key, which the caller drops first.
        unsafe { FilterKey::open_name(self.ctx, name, access) }
    }

    /// Propagates `command` with `args` to replicas and the AOF, in the selected database.
    pub fn replicate(&self, command: &CStr, args: &[&[u8]]) {
        let strings: Vec<*mut raw::RedisModuleString> = args
            .iter()
            .map(|bytes| {
                // SAFETY: a valid buffer; freed below.
                unsafe {
                    raw::RedisModule_CreateString.unwrap()(
                        std::ptr::null_mut(),
                        bytes.as_ptr().cast::<c_char>(),
                        bytes.len(),
                    )
                }
            })
            .collect();
        let mut argv = strings.clone();
        // SAFETY: a valid context; "v" takes an array of strings and its length, which the
        // server copies or retains as it needs.
        unsafe {
            raw::RedisModule_Replicate.unwrap()(
                self.ctx,
                command.as_ptr(),
                c"v".as_ptr(),
                argv.as_mut_ptr(),
                argv.len(),
            );
        }
        for string in strings {
            // SAFETY: made above without a context, freed once.
            unsafe { raw::RedisModule_FreeString.unwrap()(std::ptr::null_mut(), string) };
        }
    }

    /// Starts the sweep's timer, to fire in `delay` milliseconds.
    pub fn start_timer(&self, delay: u64) {
        // SAFETY: a valid context and a callback of the expected signature.
        unsafe {
            raw::RedisModule_CreateTimer.unwrap()(
                self.ctx,
                i64::try_from(delay).unwrap_or(i64::MAX),
                Some(on_timer),
                std::ptr::null_mut(),
            );
        }
    }
}

extern "C" fn on_timer(ctx: *mut raw::RedisModuleCtx, _data: *mut c_void) {
    guarded(
        ctx,
        "the sweep",
        || (),
        || {
            if let Some(handlers) = HANDLERS.get() {
                // SAFETY: the timer callback's own context.
                (handlers.timer)(&unsafe { Background::new(ctx) });
            }
        },
    );
}

/// Listens to keyspace events of the generic, loaded, expired and evicted classes (the ways a
/// filter enters or leaves a key without a command of this module) and to SWAPDB and FLUSHDB,
/// answering with `handlers`.
pub fn subscribe(ctx: *mut raw::RedisModuleCtx, handlers: &'static Handlers) -> Result<(), String> {
    let _ = HANDLERS.set(handlers);
    let types = raw::REDISMODULE_NOTIFY_GENERIC
        | raw::REDISMODULE_NOTIFY_LOADED
        | raw::REDISMODULE_NOTIFY_EXPIRED
        | raw::REDISMODULE_NOTIFY_EVICTED;
    // SAFETY: a valid load-time context and a callback of the expected signature.
    let subscribed = unsafe {
        raw::RedisModule_SubscribeToKeyspaceEvents.unwrap()(ctx, types as c_int, Some(on_keyspace))
    };
    if subscribed != raw::REDISMODULE_OK as c_int {
        return Err("could not subscribe to keyspace events".into());
    }
    // The header's RedisModuleEvent_SwapDB is a static of the C header, not a symbol: made here.
    let swapdb = raw::RedisModuleEvent {
        id: raw::REDISMODULE_EVENT_SWAPDB,
        dataver: 1,
    };
    let flushdb = raw::RedisModuleEvent {
        id: raw::REDISMODULE_EVENT_FLUSHDB,
        dataver: 1,
    };
    // SAFETY: as above.
    unsafe {
        raw::RedisModule_SubscribeToServerEvent.unwrap()(ctx, swapdb, Some(on_swapdb));
        raw::RedisModule_SubscribeToServerEvent.unwrap()(ctx, flushdb, Some(on_flushdb));
    }
    Ok(())
}

extern "C" fn on_keyspace(
    ctx: *mut raw::RedisModuleCtx,
    _type: c_int,
    event: *const c_char,
    key: *mut raw::RedisModuleString,
) -> c_int {
    guarded(
        ctx,
        "a keyspace event",
        || (),
        || {
            // SAFETY: the server passes a NUL-terminated event name and the key's string, both
            // valid for the callback.
            let (event, name) = unsafe {
                let mut len = 0;
                let ptr = raw::RedisModule_StringPtrLen.unwrap()(key, &mut len);
                (
                    CStr::from_ptr(event).to_bytes(),
                    std::slice::from_raw_parts(ptr.cast::<u8>(), len),
                )
            };
            if let Some(handlers) = HANDLERS.get() {
                // SAFETY: the callback's own context.
                (handlers.keyspace)(&unsafe { Background::new(ctx) }, event, name);
            }
        },
    );
    raw::REDISMODULE_OK as c_int
}

extern "C" fn on_swapdb(
    ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    _subevent: u64,
    data: *mut c_void,
) {
    guarded(
        ctx,
        "a SWAPDB event",
        || (),
        || {
            if data.is_null() {
                return;
            }
            // SAFETY: the server passes a RedisModuleSwapDbInfo for this event.
            let info = unsafe { &*data.cast::<raw::RedisModuleSwapDbInfo>() };
            if let Some(handlers) = HANDLERS.get() {
                (handlers.swapdb)(info.dbnum_first, info.dbnum_second);
            }
        },
    );
}

extern "C" fn on_flushdb(
    ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    subevent: u64,
    data: *mut c_void,
) {
    guarded(
        ctx,
        "a FLUSHDB event",
        || (),
        || {
            if data.is_null() || subevent != raw::REDISMODULE_SUBEVENT_FLUSHDB_END {
                return;
            }
            // SAFETY: the server passes a RedisModuleFlushInfo for this event.
            let info = unsafe { &*data.cast::<raw::RedisModuleFlushInfo>() };
            if let Some(handlers) = HANDLERS.get() {
                (handlers.flush)(info.dbnum);
            }
        },
    );
}
