//! Loading the module: the server's module API is bound, the module named and its data type
//! created before anything else, then the module's own setup runs. Any refusal is logged once,
//! with its reason.

use super::Origin;
use redis_module::native_types::RedisType;
use redis_module::raw;
use std::ffi::CStr;
use std::os::raw::{c_int, c_void};
use std::sync::atomic::{AtomicPtr, Ordering};

/// What the server knows a module by: its name and version, and its data types with each type's
/// name (which the redis-module crate's `RedisType` keeps to itself).
pub struct Identity {
    pub name: &'static CStr,
    pub version: c_int,
    pub data_types: &'static [(&'static RedisType, &'static str)],
}

/// What `RedisModule_OnLoad` does: binds the module API, names the module, creates its data types,
/// then runs `init` with the load arguments as bytes. `init`'s error is logged as the reason the
/// module refuses to load.
///
/// # Safety
/// `ctx`, `argv` and `argc` must be what the server passed to `RedisModule_OnLoad`.
pub unsafe fn load(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
    module: &Identity,
    init: fn(*mut raw::RedisModuleCtx, &[&[u8]]) -> Result<(), String>,
) -> c_int {
    let Identity {
        name,
        version,
        data_types,
    } = *module;
    // Nothing may be allocated before this: the module's allocator is the server's, reached
    // through the API this call binds.
    // SAFETY: the server's load context (the caller's contract); the name is NUL-terminated.
    let init_result = unsafe {
        raw::Export_RedisModule_Init(
            ctx,
            name.as_ptr(),
            version,
            raw::REDISMODULE_APIVER_1 as c_int,
        )
    };
    if init_result == raw::REDISMODULE_ERR as c_int {
        // Init binds the API before it checks the name, so the refusal can be logged.
        // SAFETY: Init has bound the API; the name is NUL-terminated.
        let busy = unsafe { raw::RedisModule_IsModuleNameBusy }
            // SAFETY: as above.
            .is_some_and(|busy| unsafe { busy(name.as_ptr()) } != 0);
        if busy {
            let name = name.to_string_lossy();
            // The module has no name yet: the server writes `<module>`, the line says `bf:`.
            let why = format!("the module name {name} is taken");
            let line = format!("{name}: refusing to load: {}", taken(&why));
            crate::glue::log::warning(ctx, &line);
        }
        return raw::REDISMODULE_ERR as c_int;
    }
    bind_optional_api();
    for (data_type, type_name) in data_types {
        if data_type.create_data_type(ctx).is_err() {
            let why = format!("the data type name {type_name} is taken");
            crate::glue::log::warning(ctx, &format!("refusing to load: {}", taken(&why)));
            return raw::REDISMODULE_ERR as c_int;
        }
    }
    let argv: &[*mut raw::RedisModuleString] = match usize::try_from(argc) {
        // SAFETY: the server's `argc` load arguments (the caller's contract).
        Ok(count) if count > 0 && !argv.is_null() => unsafe {
            std::slice::from_raw_parts(argv, count)
        },
        _ => &[],
    };
    let args: Vec<&[u8]> = argv
        .iter()
        .map(|&arg| {
            let mut len = 0;
            // SAFETY: a load argument, a valid string whose bytes live as long as the load.
            unsafe {
                let ptr = raw::RedisModule_StringPtrLen.unwrap()(arg, &mut len);
                std::slice::from_raw_parts(ptr.cast::<u8>(), len)
            }
        })
        .collect();
    let outcome = crate::glue::guard::guarded(
        ctx,
        "loading",
        || Err("the module's setup failed (see above)".to_string()),
        || init(ctx, &args),
    );
    match outcome {
        Ok(()) => raw::REDISMODULE_OK as c_int,
        Err(why) => {
            crate::glue::log::warning(ctx, &format!("refusing to load: {why}"));
            raw::REDISMODULE_ERR as c_int
        }
    }
}

/// Why a module cannot load when a name it needs is taken: `why`, the likely cause and what to
/// do (the one line it logs, after "refusing to load: ").
pub fn taken(why: &str) -> String {
    format!(
        "{why}, most likely by another Bloom filter module such as RedisBloom \
         (Redis 8's distributions load it from their modules directory), or by this module \
         loaded twice; MODULE LIST names the modules loaded: remove the other's loadmodule line \
         and restart the server with this one's (a module with a data type cannot be unloaded) \
         (docs/migrating.md, \"Replacing RedisBloom on Redis 8\")"
    )
}

/// `RedisModule_MustObeyClient(ctx)`: Valkey's own answer (8.1 and later) to whether the running
/// command must be applied as sent, because it comes from the primary, the AOF or a slot being
/// imported. Bound at load through `RedisModule_GetApi` (the redis-module crate's bindings follow
/// Redis, which has no such function); null where the server has none.
static MUST_OBEY: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());

/// `VALKEYMODULE_OPTIONS_HANDLE_ATOMIC_SLOT_MIGRATION` (Valkey 9): the module's keys may be loaded
/// into a slot being imported before the node owns it, and its commands replicate with correct
/// keys (so `CLUSTER MIGRATESLOTS` can move them). Not in Redis's headers.
const HANDLE_ATOMIC_SLOT_MIGRATION: c_int = 1 << 5;

/// Binds what only some servers have, after Init: `MustObeyClient`.
fn bind_optional_api() {
    let mut function: *mut c_void = std::ptr::null_mut();
    // SAFETY: GetApi was bound by Init; it writes the function's address, or nothing and an
    // error when the server has no such function.
    let found = unsafe {
        raw::RedisModule_GetApi.is_some_and(|get_api| {
            get_api(
                c"RedisModule_MustObeyClient".as_ptr(),
                std::ptr::from_mut(&mut function).cast(),
            ) == raw::REDISMODULE_OK as c_int
        })
    };
    if found && !function.is_null() {
        MUST_OBEY.store(function, Ordering::Relaxed);
    }
}

/// True on Valkey 8.1 and later (the servers with `MustObeyClient`).
pub fn is_valkey() -> bool {
    !MUST_OBEY.load(Ordering::Relaxed).is_null()
}

/// Whether the command running in `ctx` must be obeyed (see [`MUST_OBEY`]); `None` where the
/// server cannot tell (Redis, Valkey before 8.1): the caller reads the context flags instead.
pub fn must_obey(ctx: *mut raw::RedisModuleCtx) -> Option<bool> {
    let function = MUST_OBEY.load(Ordering::Relaxed);
    if function.is_null() {
        return None;
    }
    // SAFETY: the address GetApi gave for `int MustObeyClient(RedisModuleCtx *)`; `ctx` is the
    // running command's context.
    let must_obey: unsafe extern "C" fn(*mut raw::RedisModuleCtx) -> c_int =
        unsafe { std::mem::transmute(function) };
    // SAFETY: as above: the function GetApi named, called with the command's own context.
    Some(unsafe { must_obey(ctx) } != 0)
}

/// The module options to set: handling IO errors (rdb_load refuses corrupt input with an error
/// instead of the server aborting) and async loading (filters need no care for it) everywhere,
/// and atomic slot migration where the server offers it (Valkey 9: the option is among
/// `GetModuleOptionsAll`'s, and the server is Valkey, which `MustObeyClient` tells; Redis may one
/// day give the same bit another meaning).
fn options() -> c_int {
    let mut options = (raw::REDISMODULE_OPTIONS_HANDLE_IO_ERRORS
        | raw::REDISMODULE_OPTIONS_HANDLE_REPL_ASYNC_LOAD) as c_int;
    // SAFETY: reading a function pointer the server filled in (or left empty) at load.
    let all = unsafe { raw::RedisModule_GetModuleOptionsAll.map_or(0, |all| all()) };
    if is_valkey() && all & HANDLE_ATOMIC_SLOT_MIGRATION != 0 {
        options |= HANDLE_ATOMIC_SLOT_MIGRATION;
    }
    options
}

/// Sets the module's [`options`]. `ctx` is the module's load-time context.
pub fn set_options(ctx: *mut raw::RedisModuleCtx) {
    // SAFETY: a valid load-time context.
    unsafe { raw::RedisModule_SetModuleOptions.unwrap()(ctx, options()) };
}

/// The server's clock, in milliseconds since the epoch (outside a command: the sweep, loaders).
pub fn now() -> u64 {
    // SAFETY: a function the server filled in at load.
    let now = unsafe { raw::RedisModule_Milliseconds.unwrap()() };
    u64::try_from(now).unwrap_or(0)
}

/// Where a value being read from `io` comes from (see [`Origin`]).
pub fn io_origin(io: *mut raw::RedisModuleIO) -> Origin {
    // SAFETY: functions the server filled in at load; `io` is the stream of the running
    // callback, and the context it gives lives as long as that stream.
    let flags = unsafe {
        let ctx = raw::RedisModule_GetContextFromIO.unwrap()(io);
        raw::RedisModule_GetContextFlags.unwrap()(ctx) as u32
    };
    Origin::of_value(flags)
}
