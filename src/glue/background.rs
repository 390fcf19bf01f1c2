//! The module's work outside commands: the sweep's timer (the Bloom family's `bloom::sweep`,
//! wired in by `lib.rs`), and its walk over a database's keys. A [`Background`] is the context the
//! server gives such a callback, with what the sweep asks of it. The module listens to no keyspace
//! or server event ([`register`] says why).

use crate::glue::guard::guarded;
use crate::glue::key::{Access, FilterKey};
use crate::glue::value::{Arrival, Value};
use redis_module::raw;
use std::ffi::CStr;
use std::os::raw::{c_char, c_int, c_void};

/// What the module does outside commands (wired by `lib.rs`, so that this glue calls no module
/// code by name).
pub struct Handlers {
    /// The sweep's timer fired.
    pub timer: fn(&Background),
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

    /// The context of the callback a value arrived in (RDB loading, RESTORE), if it has one (a
    /// COPY has none).
    pub fn of_arrival(arrival: &Arrival) -> Option<Background> {
        // SAFETY: the context the server made for the running callback, which the arrival (and
        // so the wrapper, in the callee) does not outlive.
        (!arrival.ctx.is_null()).then(|| unsafe { Background::new(arrival.ctx) })
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

    /// One step of a walk over the selected database's keys (one bucket of its table: a few
    /// keys), calling `visit` with each key's name and, if it holds a value of type `T`, the
    /// value's address. False once the walk has seen the whole database.
    pub fn scan<T: Value>(
        &self,
        cursor: &mut ScanCursor,
        visit: &mut dyn FnMut(&[u8], Option<usize>),
    ) -> bool {
        let mut data = Visit {
            raw_type: super::datatype::raw_type::<T>(),
            visit,
        };
        // SAFETY: a valid context and cursor; `data` outlives the call, which runs
        // `on_scanned` (no panic crosses it: `visit` is the sweep's, which does not panic).
        unsafe {
            raw::RedisModule_Scan.unwrap()(
                self.ctx,
                cursor.0,
                Some(on_scanned),
                std::ptr::from_mut(&mut data).cast(),
            ) != 0
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

/// Installs `handlers` (at load). The module subscribes to no keyspace or server event: the server
/// would then take its modules' path for every event of every key (a `GET` of a missing key fires
/// one) and at every turn of its event loop; what the sweep must learn, the data type's own
/// callbacks tell it (`crate::bloom::sweep`).
pub fn register(handlers: &'static Handlers) {
    let _ = HANDLERS.set(handlers);
}

/// Where a walk over a database's keys stands (`Background::scan`).
pub struct ScanCursor(*mut raw::RedisModuleScanCursor);

impl ScanCursor {
    /// A walk from the start.
    pub fn new() -> ScanCursor {
        // SAFETY: a function the server filled in at load; the cursor is destroyed by Drop.
        ScanCursor(unsafe { raw::RedisModule_ScanCursorCreate.unwrap()() })
    }

    /// Back to the start (for the next database).
    pub fn restart(&mut self) {
        // SAFETY: a cursor made by `new`, not yet destroyed.
        unsafe { raw::RedisModule_ScanCursorRestart.unwrap()(self.0) };
    }
}

impl Default for ScanCursor {
    fn default() -> ScanCursor {
        ScanCursor::new()
    }
}

impl Drop for ScanCursor {
    fn drop(&mut self) {
        // SAFETY: made by `new`, destroyed once.
        unsafe { raw::RedisModule_ScanCursorDestroy.unwrap()(self.0) };
    }
}

/// What a step of a scan calls for each key: its name, and the address of its value if it holds
/// one of type `T`.
struct Visit<'v> {
    raw_type: *mut raw::RedisModuleType,
    visit: &'v mut dyn FnMut(&[u8], Option<usize>),
}

extern "C" fn on_scanned(
    _ctx: *mut raw::RedisModuleCtx,
    name: *mut raw::RedisModuleString,
    key: *mut raw::RedisModuleKey,
    data: *mut c_void,
) {
    // SAFETY: the `Visit` that `Background::scan` passed, alive during its call to RM_Scan.
    let visit = unsafe { &mut *data.cast::<Visit>() };
    // SAFETY: the key's name and the key the server opened for this callback, valid during it.
    let (name, value) = unsafe {
        let mut len = 0;
        let ptr = raw::RedisModule_StringPtrLen.unwrap()(name, &mut len);
        let ours =
            !key.is_null() && raw::RedisModule_ModuleTypeGetType.unwrap()(key) == visit.raw_type;
        let value = ours.then(|| raw::RedisModule_ModuleTypeGetValue.unwrap()(key) as usize);
        (std::slice::from_raw_parts(ptr.cast::<u8>(), len), value)
    };
    (visit.visit)(name, value);
}
