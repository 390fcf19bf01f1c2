//! Loading the module: the server's module API is bound, the module named and its data type
//! created before anything else, then the module's own setup runs. Any refusal is logged once,
//! with its reason.

use super::Origin;
use redis_module::native_types::RedisType;
use redis_module::raw;
use std::ffi::CStr;
use std::os::raw::c_int;

/// What `RedisModule_OnLoad` does: binds the module API, names the module, creates its data type,
/// then runs `init` with the load arguments as bytes. `init`'s error is logged as the reason the
/// module refuses to load.
///
/// # Safety
/// `ctx`, `argv` and `argc` must be what the server passed to `RedisModule_OnLoad`.
pub unsafe fn load(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
    name: &CStr,
    version: c_int,
    data_type: &RedisType,
    init: fn(*mut raw::RedisModuleCtx, &[&[u8]]) -> Result<(), String>,
) -> c_int {
    // Nothing may be allocated before this: the module's allocator is the server's, reached
    // through the API this call binds.
    if raw::Export_RedisModule_Init(
        ctx,
        name.as_ptr(),
        version,
        raw::REDISMODULE_APIVER_1 as c_int,
    ) == raw::REDISMODULE_ERR as c_int
    {
        return raw::REDISMODULE_ERR as c_int;
    }
    if data_type.create_data_type(ctx).is_err() {
        return raw::REDISMODULE_ERR as c_int;
    }
    let argv: &[*mut raw::RedisModuleString] = match usize::try_from(argc) {
        Ok(count) if count > 0 && !argv.is_null() => std::slice::from_raw_parts(argv, count),
        _ => &[],
    };
    let args: Vec<&[u8]> = argv
        .iter()
        .map(|&arg| {
            let mut len = 0;
            let ptr = raw::RedisModule_StringPtrLen.unwrap()(arg, &mut len);
            std::slice::from_raw_parts(ptr.cast::<u8>(), len)
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
