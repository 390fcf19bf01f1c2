//! Writing to the server's log. Messages are passed as data, never as the format string: they may
//! hold text a client or an admin typed (a `%s` in a module argument must not reach printf).

use redis_module::raw;
use std::ffi::CString;

fn text(message: &str) -> CString {
    CString::new(message.replace('\0', "\\0")).unwrap_or_default()
}

/// Logs a warning, with the load-time or command context if there is one (it names the module).
pub fn warning(ctx: *mut raw::RedisModuleCtx, message: &str) {
    let message = text(message);
    // SAFETY: a context from the server or null (allowed); NUL-terminated level, format and
    // message; "%s" takes exactly the one string given.
    unsafe {
        raw::RedisModule_Log.unwrap()(ctx, c"warning".as_ptr(), c"%s".as_ptr(), message.as_ptr());
    }
}

/// Logs a warning about an RDB or AOF stream being read or written.
pub fn io_warning(io: *mut raw::RedisModuleIO, message: &str) {
    let message = text(message);
    // SAFETY: the IO context of the running callback; as in `warning`.
    unsafe {
        raw::RedisModule_LogIOError.unwrap()(
            io,
            c"warning".as_ptr(),
            c"%s".as_ptr(),
            message.as_ptr(),
        );
    }
}
