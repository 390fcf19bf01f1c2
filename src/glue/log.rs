//! Writing to the server's log. Messages are passed as data, never as the format string: they may
//! hold text a client or an admin typed (a `%s` in a module argument must not reach printf).
//!
//! The server starts each line with the module's name (`<bf>`) when it knows which module logs:
//! with a context, or an RDB/AOF stream. Without one it writes `<module>`, and the message then
//! says `bf:` itself.

use redis_module::raw;
use std::ffi::CString;

fn text(message: &str) -> CString {
    CString::new(message.replace('\0', "\\0")).unwrap_or_default()
}

/// Logs a warning, with the load-time or command context if there is one (it names the module).
/// Outside a server (unit tests) it goes to standard error.
pub fn warning(ctx: *mut raw::RedisModuleCtx, message: &str) {
    log(ctx, c"warning", message);
}

/// Logs a notice (shown at the server's default log level), as [`warning`] does.
pub fn notice(ctx: *mut raw::RedisModuleCtx, message: &str) {
    log(ctx, c"notice", message);
}

fn log(ctx: *mut raw::RedisModuleCtx, level: &std::ffi::CStr, message: &str) {
    // SAFETY: reading a function pointer the server filled in at load (or never did).
    let Some(log) = (unsafe { raw::RedisModule_Log }) else {
        eprintln!("{message}");
        return;
    };
    let message = if ctx.is_null() {
        text(&format!("bf: {message}"))
    } else {
        text(message)
    };
    // SAFETY: a context from the server or null (allowed); NUL-terminated level, format and
    // message; "%s" takes exactly the one string given.
    unsafe {
        log(ctx, level.as_ptr(), c"%s".as_ptr(), message.as_ptr());
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

/// True if a warning last given at `last` (milliseconds, by the server's clock) may be given again
/// at `now`, and notes `now`: at most one every ten seconds, for a warning that could otherwise
/// come once per key or per command.
pub fn rarely(last: &std::sync::atomic::AtomicU64, now: u64) -> bool {
    use std::sync::atomic::Ordering;
    let before = last.load(Ordering::Relaxed);
    if before != 0 && now < before.saturating_add(10_000) {
        return false;
    }
    last.store(now.max(1), Ordering::Relaxed);
    true
}
