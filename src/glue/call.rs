//! One command invocation: its arguments as bytes, its replies, its side effects (replication).
//! The only place command code meets the reply half of the module API.

use crate::parse::Args;

use crate::config;
use crate::error::BfError;
use crate::error::{MaxMemory, SizeLimit};
use redis_module::raw;
use std::cell::Cell;
use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_long};

/// The context and arguments of the command being run.
pub struct Call<'a> {
    ctx: *mut raw::RedisModuleCtx,
    argv: &'a [*mut raw::RedisModuleString],
    /// Replies given so far inside an array opened with `reply_array_open`, if one is open.
    open_array: Cell<Option<usize>>,
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

/// A string argument made for a propagated command; freed on drop.
struct OwnedString(*mut raw::RedisModuleString);

impl Drop for OwnedString {
    fn drop(&mut self) {
        // SAFETY: created by `Call::string` with this context, freed once.
        unsafe { raw::RedisModule_FreeString.unwrap()(std::ptr::null_mut(), self.0) };
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
            // SAFETY: the server's `argc` arguments, valid for the callback (the caller's
            // contract).
            unsafe { std::slice::from_raw_parts(argv, argc) }
        };
        Call {
            ctx,
            argv,
            open_array: Cell::new(None),
        }
    }

    /// The raw context, for the key layer.
    pub(crate) fn ctx(&self) -> *mut raw::RedisModuleCtx {
        self.ctx
    }

    /// The arguments, as bytes.
    pub fn args(&self) -> RedisArgs<'a> {
        RedisArgs { argv: self.argv }
    }

    /// The key's name: argument 1.
    pub fn args_key(&self) -> &'a [u8] {
        self.args().get(1)
    }

    /// The argument at `index` as the server's own string (to open it as a key).
    pub(crate) fn arg_string(&self, index: usize) -> *mut raw::RedisModuleString {
        self.argv[index]
    }

    fn flags(&self) -> u32 {
        // SAFETY: a valid context.
        unsafe { raw::RedisModule_GetContextFlags.unwrap()(self.ctx) as u32 }
    }

    /// The server's clock, in milliseconds since the epoch (what a windowed filter's slots count
    /// from): the time the server took for this command where it keeps one (7.2 and later), else
    /// a read of the system clock (about 30 ns).
    pub fn now(&self) -> u64 {
        // SAFETY: functions the server filled in at load (or, for the newer one, left empty).
        let now = unsafe {
            match raw::RedisModule_CachedMicroseconds {
                Some(cached) => cached() / 1000,
                None => raw::RedisModule_Milliseconds.unwrap()(),
            }
        };
        u64::try_from(now).unwrap_or(0)
    }

    /// The time a lookup in a windowed filter asks at, given the filter's first expiry (`None`:
    /// it has no part): [`Call::now`], unless that would read the system clock (Redis 7.0, which
    /// keeps no command time for modules) and nothing of the filter expires within
    /// [`COARSE_MARGIN_MS`] of the kernel's coarse clock: then that clock, the time of the
    /// kernel's last tick (7 ns a read here, against 36 for the precise one). A lookup depends on
    /// time only through which parts have expired; the coarse clock is never ahead of the precise
    /// one and behind it by a tick (4 ms here), so within the margin both times see the same
    /// parts live, and the answer is the same.
    pub fn lookup_time(&self, first_expiry: Option<u64>) -> u64 {
        // SAFETY: a read of the API table, bound at load.
        if unsafe { raw::RedisModule_CachedMicroseconds }.is_none() {
            if let Some(coarse) = coarse_clock() {
                if first_expiry.is_none_or(|due| due > coarse.saturating_add(COARSE_MARGIN_MS)) {
                    return coarse;
                }
            }
        }
        self.now()
    }

    /// True when the client speaks RESP3.
    pub fn is_resp3(&self) -> bool {
        self.flags() & raw::REDISMODULE_CTX_FLAGS_RESP3 != 0
    }

    /// Where the command comes from, as far as trusting its clock goes (see [`Origin`]).
    pub fn origin(&self) -> super::Origin {
        super::Origin::of_command(self.flags(), super::module::must_obey(self.ctx))
    }

    /// True when the command comes from a primary, an AOF being loaded or (Valkey 9) the node a
    /// slot is being imported from: it must apply exactly as it did where it was first run,
    /// whatever this server's own settings. The context flags say it, and so does the server's
    /// own answer where it has one (`MustObeyClient`, Valkey 8.1+).
    pub fn is_replay(&self) -> bool {
        super::module::must_obey(self.ctx) == Some(true)
            || self.flags()
                & (raw::REDISMODULE_CTX_FLAGS_REPLICATED | raw::REDISMODULE_CTX_FLAGS_LOADING)
                != 0
    }

    /// Notes one more reply, which is an element if an open array is being filled.
    fn counted(&self) {
        if let Some(elements) = self.open_array.get() {
            self.open_array.set(Some(elements + 1));
        }
    }

    /// Closes an array left open by a handler that did not finish (it panicked), with an error
    /// as its last element, so that the client still gets a well-formed reply.
    pub(crate) fn close_abandoned_array(&self, err: &BfError) -> bool {
        if self.open_array.get().is_none() {
            return false;
        }
        self.reply_error(err);
        self.end_array();
        true
    }

    /// What a filter this command creates or grows may take: `bf.max-filter-bytes`, and the room
    /// under `maxmemory` where the server would refuse a write that passes it; no limit for a
    /// command from a primary or an AOF, which must apply as it did where it was first run.
    pub fn size_limit(&self) -> SizeLimit {
        if self.is_replay() {
            SizeLimit::unlimited()
        } else {
            SizeLimit::new(config::max_filter_bytes(), self.memory())
        }
    }

    /// `maxmemory` and the memory in use, if a maxmemory is set, and whether the server makes
    /// room by evicting. It refuses a write that passes `maxmemory` under `noeviction`, or a
    /// `volatile-*` policy with no key to evict; under an eviction policy the module leaves
    /// room-making to the server, as a native write of the same size does (the command runs and
    /// the server evicts), but for a filter bigger than `maxmemory` itself, which no eviction can
    /// make room for.
    fn memory(&self) -> Option<MaxMemory> {
        // SAFETY: a valid context; the server-info data is freed before returning, and the policy
        // text is copied before that.
        let (memory, policy) = unsafe {
            // Cheap first: the ratio is 0 when no maxmemory is set.
            if raw::RedisModule_GetUsedMemoryRatio?() <= 0.0 {
                return None;
            }
            let info = raw::RedisModule_GetServerInfo?(self.ctx, c"memory".as_ptr());
            if info.is_null() {
                return None;
            }
            let field = |name: &CStr| {
                let mut err = 0;
                let value = raw::RedisModule_ServerInfoGetFieldUnsigned.unwrap()(
                    info,
                    name.as_ptr(),
                    &mut err,
                );
                (err == 0).then_some(value)
            };
            let memory = field(c"maxmemory").zip(field(c"used_memory"));
            let policy =
                raw::RedisModule_ServerInfoGetFieldC.unwrap()(info, c"maxmemory_policy".as_ptr());
            let policy = (!policy.is_null()).then(|| CStr::from_ptr(policy).to_bytes().to_vec());
            raw::RedisModule_FreeServerInfo.unwrap()(self.ctx, info);
            (memory, policy)
        };
        let refuses = match policy.as_deref() {
            Some(b"noeviction") => true,
            Some(policy) if policy.starts_with(b"volatile-") => !self.has_volatile_keys(),
            _ => false,
        };
        memory
            .filter(|&(maxmemory, _)| maxmemory > 0)
            .map(|(maxmemory, used)| MaxMemory {
                maxmemory,
                used,
                evicts: !refuses,
            })
    }

    /// True if some key of some database has a time to live: what a `volatile-*` policy evicts.
    fn has_volatile_keys(&self) -> bool {
        // SAFETY: a valid context; "c" takes one NUL-terminated string; the reply is read before
        // it is freed.
        unsafe {
            let reply = raw::RedisModule_Call.unwrap()(
                self.ctx,
                c"INFO".as_ptr(),
                c"c".as_ptr(),
                c"keyspace".as_ptr(),
            );
            if reply.is_null() {
                // Unknown: let the server decide, as it does for its own writes.
                return true;
            }
            let mut len = 0;
            let text = raw::RedisModule_CallReplyStringPtr.unwrap()(reply, &mut len);
            let found = !text.is_null() && {
                let text = std::slice::from_raw_parts(text.cast::<u8>(), len);
                // "db0:keys=3,expires=1,avg_ttl=..." per database that has keys.
                text.split(|&byte| byte == b',').any(|field| {
                    field
                        .strip_prefix(b"expires=")
                        .is_some_and(|count| count != b"0")
                })
            };
            raw::RedisModule_FreeCallReply.unwrap()(reply);
            found
        }
    }

    /// Replies `OK`.
    pub fn reply_ok(&self) {
        self.reply_simple(c"OK");
    }

    /// Replies a simple string (field names).
    pub fn reply_simple(&self, text: &CStr) {
        self.counted();
        // SAFETY: a valid context and a NUL-terminated string.
        unsafe {
            raw::RedisModule_ReplyWithSimpleString.unwrap()(self.ctx, text.as_ptr());
        }
    }

    /// Replies a boolean: `#t`/`#f` in RESP3, `:1`/`:0` in RESP2.
    pub fn reply_bool(&self, value: bool) {
        self.counted();
        // SAFETY: a valid context.
        unsafe {
            raw::RedisModule_ReplyWithBool.unwrap()(self.ctx, i32::from(value));
        }
    }

    /// Replies an integer.
    pub fn reply_integer(&self, value: i64) {
        self.counted();
        // SAFETY: a valid context.
        unsafe {
            raw::RedisModule_ReplyWithLongLong.unwrap()(self.ctx, value);
        }
    }

    /// Replies a bulk string.
    pub fn reply_bulk(&self, bytes: &[u8]) {
        self.counted();
        // SAFETY: a valid context; Redis copies the buffer before returning.
        unsafe {
            raw::RedisModule_ReplyWithStringBuffer.unwrap()(
                self.ctx,
                bytes.as_ptr().cast::<c_char>(),
                bytes.len(),
            );
        }
    }

    /// Replies a null (RESP2 null bulk, RESP3 null).
    pub fn reply_null(&self) {
        self.counted();
        // SAFETY: a valid context.
        unsafe {
            raw::RedisModule_ReplyWithNull.unwrap()(self.ctx);
        }
    }

    /// Starts an array of `len` elements; the next `len` replies fill it.
    pub fn reply_array(&self, len: usize) {
        self.counted();
        // SAFETY: a valid context.
        unsafe {
            raw::RedisModule_ReplyWithArray.unwrap()(self.ctx, len as c_long);
        }
    }

    /// Starts an array whose length is given when it ends, by [`Call::end_array`]; the replies
    /// in between are its elements (only flat arrays are built this way).
    pub fn reply_array_open(&self) {
        self.open_array.set(Some(0));
        // SAFETY: a valid context; POSTPONED_LEN is the documented marker.
        unsafe {
            raw::RedisModule_ReplyWithArray.unwrap()(
                self.ctx,
                raw::REDISMODULE_POSTPONED_LEN as c_long,
            );
        }
    }

    /// Ends the array opened with [`Call::reply_array_open`], with the elements replied since.
    pub fn end_array(&self) {
        let Some(len) = self.open_array.take() else {
            return;
        };
        // SAFETY: a valid context with an open postponed array.
        unsafe {
            raw::RedisModule_ReplySetArrayLength.unwrap()(self.ctx, len as c_long);
        }
    }

    /// Starts a map of `len` pairs (a flat array of `2 * len` in RESP2).
    pub fn reply_map(&self, len: usize) {
        self.counted();
        // SAFETY: a valid context.
        unsafe {
            raw::RedisModule_ReplyWithMap.unwrap()(self.ctx, len as c_long);
        }
    }

    /// Replies an error, as a whole reply or as an element of an array (and counts it).
    pub fn reply_error(&self, err: &BfError) {
        self.counted();
        crate::stats::error_replied();
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

    /// Fires a keyspace notification of the module class (`bf.add`, ...) for the key at argument
    /// `key_index`.
    pub fn notify(&self, event: &CStr, key_index: usize) {
        // SAFETY: a valid context, a NUL-terminated event name and the call's own key string.
        unsafe {
            raw::RedisModule_NotifyKeyspaceEvent.unwrap()(
                self.ctx,
                raw::REDISMODULE_NOTIFY_MODULE,
                event.as_ptr(),
                self.argv[key_index],
            );
        }
    }

    /// A server string for a propagated argument.
    fn string(&self, bytes: &[u8]) -> OwnedString {
        // SAFETY: a valid buffer; the string is freed by OwnedString.
        OwnedString(unsafe {
            raw::RedisModule_CreateString.unwrap()(
                std::ptr::null_mut(),
                bytes.as_ptr().cast::<c_char>(),
                bytes.len(),
            )
        })
    }

    /// Propagates `command` with `made` (new arguments) followed by the arguments of this call
    /// in `passed` (passed on without copying).
    pub fn replicate(&self, command: &CStr, made: &[&[u8]], passed: std::ops::Range<usize>) {
        let made: Vec<OwnedString> = made.iter().map(|bytes| self.string(bytes)).collect();
        let mut argv: Vec<*mut raw::RedisModuleString> = made.iter().map(|s| s.0).collect();
        argv.extend_from_slice(&self.argv[passed]);
        // SAFETY: a valid context; "v" takes an array of strings and its length, which the
        // server retains as it needs; `made` outlives the call.
        unsafe {
            raw::RedisModule_Replicate.unwrap()(
                self.ctx,
                command.as_ptr(),
                c"v".as_ptr(),
                argv.as_mut_ptr(),
                argv.len(),
            );
        }
    }
}

/// How far from the coarse clock a windowed filter's first expiry must be for a lookup to use
/// that clock ([`Call::lookup_time`]): far beyond the clock's lag (a kernel tick).
pub const COARSE_MARGIN_MS: u64 = 1000;

/// The wall clock at the kernel's last tick (`CLOCK_REALTIME_COARSE`), in milliseconds since the
/// epoch; `None` where there is none.
fn coarse_clock() -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        /// `struct timespec` on 64-bit Linux.
        #[repr(C)]
        struct Timespec {
            seconds: i64,
            nanos: i64,
        }
        const CLOCK_REALTIME_COARSE: std::os::raw::c_int = 5;
        extern "C" {
            fn clock_gettime(
                clock: std::os::raw::c_int,
                time: *mut Timespec,
            ) -> std::os::raw::c_int;
        }
        let mut time = Timespec {
            seconds: 0,
            nanos: 0,
        };
        // SAFETY: libc's clock_gettime writing the struct it is given.
        if unsafe { clock_gettime(CLOCK_REALTIME_COARSE, &mut time) } != 0 {
            return None;
        }
        let millis = u64::try_from(time.seconds).ok()?.checked_mul(1000)?;
        millis.checked_add(u64::try_from(time.nanos / 1_000_000).ok()?)
    }
    #[cfg(not(target_os = "linux"))]
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_coarse_clock_is_the_wall_clock_a_tick_late_at_most() {
        let before = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64;
        let coarse = coarse_clock().unwrap();
        let after = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64;
        assert!(coarse <= after, "{coarse} > {after}");
        // A tick is 1 to 10 ms; allow for a loaded machine, far below the margin.
        assert!(
            coarse + 100 >= before,
            "{coarse} is {} ms late",
            before - coarse
        );
        const { assert!(100 < COARSE_MARGIN_MS) };
    }
}
