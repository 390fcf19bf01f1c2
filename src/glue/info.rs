//! The module's INFO section: the callback the server calls for `INFO bf` (and INFO everything),
//! which adds the fields `crate::stats` counts.

use redis_module::raw;
use std::os::raw::c_int;

/// Registers the INFO callback. `ctx` is the module's load-time context.
pub fn register(ctx: *mut raw::RedisModuleCtx) {
    // SAFETY: a valid load-time context and a callback of the expected signature.
    unsafe { raw::RedisModule_RegisterInfoFunc.unwrap()(ctx, Some(info)) };
}

extern "C" fn info(ctx: *mut raw::RedisModuleInfoCtx, _for_crash_report: c_int) {
    super::guard::guarded(std::ptr::null_mut(), "INFO", || (), || add_fields(ctx));
}

fn add_fields(ctx: *mut raw::RedisModuleInfoCtx) {
    let fields = crate::stats::fields();
    // SAFETY: the server's INFO context of the running callback; an empty section name means the
    // module's own section, and field names are prefixed with the module name by the server.
    unsafe {
        raw::RedisModule_InfoAddSection.unwrap()(ctx, c"".as_ptr());
        for (name, value) in fields {
            raw::RedisModule_InfoAddFieldLongLong.unwrap()(ctx, name.as_ptr(), value);
        }
        let huge = super::huge_pages::status();
        raw::RedisModule_InfoAddFieldCString.unwrap()(ctx, c"huge_pages".as_ptr(), huge.as_ptr());
        let bytes = i64::try_from(super::huge_pages::bytes()).unwrap_or(i64::MAX);
        raw::RedisModule_InfoAddFieldLongLong.unwrap()(ctx, c"huge_pages_bytes".as_ptr(), bytes);
    }
}
