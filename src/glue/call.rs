//! One command invocation: its arguments as bytes, its replies, its side effects (replication,
//! keyspace notifications). The only place command code meets the reply half of the module API.

use crate::commands::Args;
use crate::error::BfError;
use redis_module::raw;
use std::ffi::CString;

/// The context and arguments of the command being run.
pub struct Call<'a> {
    ctx: *mut raw::RedisModuleCtx,
    argv: &'a [*mut raw::RedisModuleString],
}

/// The arguments of a command as Redis passed them; `get(0)` is the command name.
#[derive(Clone, Copy)]
pub struct RedisArgs<'a> {
    argv: &'a [*mut raw::RedisModuleString],
}

impl<'a> Args<'a> for RedisArgs<'a> {
    fn len(&self) -> usize {
        self.argv.len()
    }

    fn get(&self, index: usize) -> &'a [u8] {
        let mut len = 0;
        // SAFETY: argv holds valid strings for the whole command call, which outlives 'a; the
        // pointer and length describe the string's own buffer, which Redis does not change
        // while the command runs.
        unsafe {
            let ptr = raw::RedisModule_StringPtrLen.unwrap()(self.argv[index], &mut len);
            std::slice::from_raw_parts(ptr.cast::<u8>(), len)
        }
    }
}

impl<'a> Call<'a> {
    /// Wraps what Redis passed to a command callback.
    ///
    /// # Safety
    /// `ctx` must be the callback's context and `argv` its `argc` arguments.
    pub unsafe fn new(
        ctx: *mut raw::RedisModuleCtx,
        argv: *mut *mut raw::RedisModuleString,
        argc: usize,
    ) -> Call<'a> {
        let argv = if argv.is_null() {
            &[]
        } else {
            std::slice::from_raw_parts(argv, argc)
        };
        Call { ctx, argv }
    }

    /// The raw context, for the key layer.
    pub(crate) fn ctx(&self) -> *mut raw::RedisModuleCtx {
        self.ctx
    }

    /// The arguments, as bytes.
    pub fn args(&self) -> RedisArgs<'a> {
        RedisArgs { argv: self.argv }
    }

    /// The argument at `index` as the server's own string (to open it as a key).
    pub(crate) fn arg_string(&self, index: usize) -> *mut raw::RedisModuleString {
        self.argv[index]
    }

    /// Replies `OK`.
    pub fn reply_ok(&self) {
        // SAFETY: a valid context and a NUL-terminated literal.
        unsafe {
            raw::RedisModule_ReplyWithSimpleString.unwrap()(self.ctx, c"OK".as_ptr());
        }
    }

    /// Replies a boolean: `#t`/`#f` in RESP3, `:1`/`:0` in RESP2.
    pub fn reply_bool(&self, value: bool) {
        // SAFETY: a valid context.
        unsafe {
            raw::RedisModule_ReplyWithBool.unwrap()(self.ctx, i32::from(value));
        }
    }

    /// Replies an error, as a whole reply or as an element of an array.
    pub fn reply_error(&self, err: &BfError) {
        // Messages never hold NUL (client tokens are escaped by `quote_token`).
        let text = CString::new(err.to_string()).unwrap_or_else(|_| c"ERR".to_owned());
        // SAFETY: a valid context and a NUL-terminated string that lives through the call.
        unsafe {
            raw::RedisModule_ReplyWithError.unwrap()(self.ctx, text.as_ptr());
        }
    }

    /// Propagates the command as it was received to replicas and the AOF.
    pub fn replicate_verbatim(&self) {
        // SAFETY: a valid context.
        unsafe {
            raw::RedisModule_ReplicateVerbatim.unwrap()(self.ctx);
        }
    }
}
