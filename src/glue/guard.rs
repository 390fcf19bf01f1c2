//! Panics stop at the edge: every callback the server calls (commands, data-type callbacks,
//! configs, INFO) runs its body under `catch_unwind`, so that a bug becomes an error reply or a
//! refused operation and a log line, never an unwinding across C frames or a dead server.

use redis_module::raw;
use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// What a panic said, as text.
fn message(panic: &(dyn Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into())
}

/// Runs `body`; if it panics, logs `what` and the panic's message and returns `fallback`.
pub fn guarded<T>(
    ctx: *mut raw::RedisModuleCtx,
    what: &str,
    fallback: impl FnOnce() -> T,
    body: impl FnOnce() -> T,
) -> T {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(value) => value,
        Err(panic) => {
            crate::glue::log::warning(ctx, &format!("{what} panicked: {}", message(&*panic)));
            fallback()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_the_fallback() {
        let value = guarded(std::ptr::null_mut(), "a test", || 7, || panic!("boom"));
        assert_eq!(value, 7);
        assert_eq!(guarded(std::ptr::null_mut(), "a test", || 7, || 3), 3);
    }
}
