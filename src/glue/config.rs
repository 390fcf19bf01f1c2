//! The configs' side of the server's API: registering `bf.*` with the server and the callbacks it
//! calls for CONFIG GET and SET. What the settings are, their ranges and checks, is
//! `crate::config`'s. Redis 8's names for RedisBloom's configs (`bf-error-rate`, ...) are
//! registered too, without the module's prefix, where the server takes that (Redis 8): each reads
//! and sets its `bf.` twin.

use super::guard::guarded;
use crate::config::{self, EnumConfig, Numeric};
use redis_module::raw;
use std::ffi::CStr;
use std::os::raw::{c_char, c_int, c_longlong, c_void};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

/// The text a string config reads back as, kept alive for the server (which copies it).
struct ConfigText(*mut raw::RedisModuleString);

// SAFETY: config callbacks run on the server's main thread only; the mutex orders them anyway.
unsafe impl Send for ConfigText {}

/// What `bf.error-rate` last read back as.
static ERROR_RATE_TEXT: Mutex<Option<ConfigText>> = Mutex::new(None);
/// What a Redis 8 name last read back as.
static REDIS8_TEXT: Mutex<Option<ConfigText>> = Mutex::new(None);

/// Hands the server `text` as a string config's value, freeing the one handed out before from
/// `kept` (the server copies a value before it asks again).
fn hand_out(kept: &Mutex<Option<ConfigText>>, text: &str) -> *mut raw::RedisModuleString {
    let mut kept = kept.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(old) = kept.take() {
        // SAFETY: made by `new_string` on the last call, which the server has copied by now.
        unsafe { raw::RedisModule_FreeString.unwrap()(std::ptr::null_mut(), old.0) };
    }
    let fresh = new_string(text);
    *kept = Some(ConfigText(fresh));
    fresh
}

/// The bytes of a value the server passes to a set callback.
///
/// # Safety
/// `value` is a valid string of the server's, and stays valid while the bytes are used.
unsafe fn value_bytes<'a>(value: *mut raw::RedisModuleString) -> &'a [u8] {
    let mut len = 0;
    // SAFETY: by the caller's contract.
    unsafe {
        let ptr = raw::RedisModule_StringPtrLen.unwrap()(value, &mut len);
        std::slice::from_raw_parts(ptr.cast::<u8>(), len)
    }
}

/// A string the server will own or that this module keeps (`RedisModule_CreateString` with no
/// context, so that no automatic memory management frees it).
fn new_string(text: &str) -> *mut raw::RedisModuleString {
    // SAFETY: a null context is allowed for strings that outlive any command; the pointer and
    // length describe `text`, which the server copies.
    unsafe {
        raw::RedisModule_CreateString.unwrap()(
            std::ptr::null_mut(),
            text.as_ptr().cast::<c_char>(),
            text.len(),
        )
    }
}

extern "C" fn get_error_rate(
    _name: *const c_char,
    _privdata: *mut c_void,
) -> *mut raw::RedisModuleString {
    hand_out(&ERROR_RATE_TEXT, &config::error_rate_text())
}

/// Hands the server an error message for a refused CONFIG SET (it frees the string).
///
/// # Safety
/// `err` is null or the error slot the server passed to a set callback.
unsafe fn refuse(err: *mut *mut raw::RedisModuleString, message: &str) -> c_int {
    if !err.is_null() {
        // SAFETY: a valid slot for the server's error string, by the caller's contract.
        unsafe { *err = new_string(message) };
    }
    raw::REDISMODULE_ERR as c_int
}

/// # Safety
/// Called by the server with a valid string `value` and error slot `err`.
unsafe extern "C" fn set_error_rate(
    _name: *const c_char,
    value: *mut raw::RedisModuleString,
    _privdata: *mut c_void,
    err: *mut *mut raw::RedisModuleString,
) -> c_int {
    // SAFETY: the server's valid string, for this call.
    let bytes = unsafe { value_bytes(value) };
    let set = guarded(
        std::ptr::null_mut(),
        "CONFIG SET bf.error-rate",
        || Err("internal error (see the log)".into()),
        || config::set_error_rate(bytes),
    );
    match set {
        Ok(()) => raw::REDISMODULE_OK as c_int,
        // SAFETY: the server's error slot for this call.
        Err(why) => unsafe { refuse(err, &why) },
    }
}

/// The privdata a numeric or enum config is registered with: where its value lives.
fn privdata(value: &'static AtomicU64) -> *mut c_void {
    std::ptr::from_ref(value).cast_mut().cast::<c_void>()
}

/// The value a numeric or enum config's callbacks read and write.
///
/// # Safety
/// `privdata` is what [`privdata`] made for the config the server calls back for.
unsafe fn slot(privdata: *mut c_void) -> &'static AtomicU64 {
    // SAFETY: by the caller's contract, a pointer to a static.
    unsafe { &*privdata.cast::<AtomicU64>() }
}

/// Maps the server's answer to a registration to an error naming the config.
fn registered(answer: c_int, name: &CStr) -> Result<(), String> {
    if answer != raw::REDISMODULE_OK as c_int {
        return Err(format!(
            "could not register config bf.{}",
            name.to_string_lossy()
        ));
    }
    Ok(())
}

/// # Safety
/// `privdata` is the one [`register_numeric`] gave.
unsafe extern "C" fn get_numeric(_name: *const c_char, privdata: *mut c_void) -> c_longlong {
    // SAFETY: the privdata registered with this config.
    unsafe { slot(privdata) }.load(Ordering::Relaxed) as c_longlong
}

/// # Safety
/// As [`get_numeric`].
unsafe extern "C" fn set_numeric(
    _name: *const c_char,
    value: c_longlong,
    privdata: *mut c_void,
    _err: *mut *mut raw::RedisModuleString,
) -> c_int {
    // The server checked the range registered below before calling.
    // SAFETY: the privdata registered with this config.
    unsafe { slot(privdata) }.store(value as u64, Ordering::Relaxed);
    raw::REDISMODULE_OK as c_int
}

/// Registers one numeric config, with its current value as the default.
fn register_numeric(ctx: *mut raw::RedisModuleCtx, config: &Numeric) -> Result<(), String> {
    let flags = if config.memory {
        raw::REDISMODULE_CONFIG_MEMORY
    } else {
        raw::REDISMODULE_CONFIG_DEFAULT
    };
    // SAFETY: a load-time context; the name is NUL-terminated; the callbacks match the server's
    // signatures; privdata points to a static that lives as long as the module.
    let answer = unsafe {
        raw::RedisModule_RegisterNumericConfig.unwrap()(
            ctx,
            config.name.as_ptr(),
            config.value.load(Ordering::Relaxed) as c_longlong,
            flags,
            config.min,
            config.max,
            Some(get_numeric),
            Some(set_numeric),
            None,
            privdata(config.value),
        )
    };
    registered(answer, config.name)
}

/// # Safety
/// `privdata` is the one [`register_enum`] gave.
unsafe extern "C" fn get_enum(_name: *const c_char, privdata: *mut c_void) -> c_int {
    // SAFETY: the privdata registered with this config.
    unsafe { slot(privdata) }.load(Ordering::Relaxed) as c_int
}

/// # Safety
/// As [`get_enum`].
unsafe extern "C" fn set_enum(
    _name: *const c_char,
    value: c_int,
    privdata: *mut c_void,
    _err: *mut *mut raw::RedisModuleString,
) -> c_int {
    // The server only passes one of the values registered below.
    // SAFETY: the privdata registered with this config.
    unsafe { slot(privdata) }.store(value as u64, Ordering::Relaxed);
    raw::REDISMODULE_OK as c_int
}

/// Registers an enum config (the server matches its names in any letter case), with its
/// current value as the default.
fn register_enum(ctx: *mut raw::RedisModuleCtx, config: &EnumConfig) -> Result<(), String> {
    let mut names = config.names.map(CStr::as_ptr);
    // SAFETY: a load-time context; the name and the value names are NUL-terminated statics;
    // the server copies the arrays; the callbacks match its signatures; privdata points to a
    // static that lives as long as the module.
    let answer = unsafe {
        raw::RedisModule_RegisterEnumConfig.unwrap()(
            ctx,
            config.name.as_ptr(),
            config.value.load(Ordering::Relaxed) as c_int,
            raw::REDISMODULE_CONFIG_DEFAULT,
            names.as_mut_ptr(),
            config.values.as_ptr(),
            config.values.len() as c_int,
            Some(get_enum),
            Some(set_enum),
            None,
            privdata(config.value),
        )
    };
    registered(answer, config.name)
}

/// True while the server applies the configs' defaults and its config file at load
/// (`RedisModule_LoadConfigs`): Redis 8's names ignore their empty default then.
static APPLYING_DEFAULTS: AtomicBool = AtomicBool::new(false);

/// The Redis 8 name a privdata stands for: its index in `config::REDIS8_NAMES`.
fn redis8_name(privdata: *mut c_void) -> Option<&'static config::Redis8Name> {
    config::REDIS8_NAMES.get(privdata as usize)
}

extern "C" fn get_redis8(
    _name: *const c_char,
    privdata: *mut c_void,
) -> *mut raw::RedisModuleString {
    let value = redis8_name(privdata).map(config::Redis8Name::get);
    hand_out(&REDIS8_TEXT, &value.unwrap_or_default())
}

/// # Safety
/// Called by the server with a valid string `value` and error slot `err`.
unsafe extern "C" fn set_redis8(
    _name: *const c_char,
    value: *mut raw::RedisModuleString,
    privdata: *mut c_void,
    err: *mut *mut raw::RedisModuleString,
) -> c_int {
    // SAFETY: the server's valid string, for this call.
    let bytes = unsafe { value_bytes(value) };
    let applying_defaults = APPLYING_DEFAULTS.load(Ordering::Relaxed);
    let set = guarded(
        std::ptr::null_mut(),
        "CONFIG SET of a Redis 8 name",
        || Err("internal error (see the log)".into()),
        || match redis8_name(privdata) {
            Some(name) => name.set(bytes, applying_defaults),
            None => Err("internal error: no such config".into()),
        },
    );
    match set {
        Ok(()) => raw::REDISMODULE_OK as c_int,
        // SAFETY: the server's error slot for this call.
        Err(why) => unsafe { refuse(err, &why) },
    }
}

/// Registers Redis 8's names for RedisBloom's configs, without the module's prefix, after every
/// `bf.` config (see `config::Redis8Name`). False where the server refuses unprefixed configs
/// (before Redis 8, Valkey 8.0) or would prefix them anyway (Valkey 9 takes the flag and names
/// them `bf.bf-error-rate`): there the names are load arguments only.
fn register_redis8_names(ctx: *mut raw::RedisModuleCtx) -> bool {
    // SAFETY: a function the server filled in at load (0x00MMmmpp), or none.
    let version = unsafe { raw::RedisModule_GetServerVersion.map_or(0, |version| version()) };
    // Asked only of servers that may take the flag: Redis 7 logs a warning for it.
    if version < 0x0008_0000 || super::module::is_valkey() {
        return false;
    }
    config::REDIS8_NAMES
        .iter()
        .enumerate()
        .all(|(index, name)| {
            // SAFETY: a load-time context; the name and the empty default are NUL-terminated
            // statics; the callbacks match the server's signatures; privdata is an index, never
            // dereferenced.
            let answer = unsafe {
                raw::RedisModule_RegisterStringConfig.unwrap()(
                    ctx,
                    name.name.as_ptr(),
                    c"".as_ptr(),
                    raw::REDISMODULE_CONFIG_UNPREFIXED,
                    Some(get_redis8),
                    Some(set_redis8),
                    None,
                    index as *mut c_void,
                )
            };
            answer == raw::REDISMODULE_OK as c_int
        })
}

/// Registers the configs with their current values as defaults, then lets the server apply what
/// its config file says about them. `ctx` is the module's load-time context.
pub fn register(ctx: *mut raw::RedisModuleCtx) -> Result<(), String> {
    let default_error =
        std::ffi::CString::new(config::error_rate_text()).map_err(|_| "bad default error rate")?;
    // SAFETY: a load-time context; name and default are NUL-terminated; the callbacks match the
    // server's signatures.
    let answer = unsafe {
        raw::RedisModule_RegisterStringConfig.unwrap()(
            ctx,
            config::ERROR_RATE_NAME.as_ptr(),
            default_error.as_ptr(),
            raw::REDISMODULE_CONFIG_DEFAULT,
            Some(get_error_rate),
            Some(set_error_rate),
            None,
            std::ptr::null_mut(),
        )
    };
    registered(answer, config::ERROR_RATE_NAME)?;
    for numeric in config::numeric() {
        register_numeric(ctx, &numeric)?;
    }
    for config in config::enum_configs() {
        register_enum(ctx, &config)?;
    }
    if !register_redis8_names(ctx) {
        super::log::notice(
            ctx,
            "this server takes no unprefixed module configs: RedisBloom's Redis 8 names \
             (bf-error-rate, bf-initial-size, bf-expansion-factor, cf-*) are accepted as load \
             arguments only",
        );
    }
    APPLYING_DEFAULTS.store(true, Ordering::Relaxed);
    // SAFETY: the load-time context.
    let loaded = unsafe { raw::RedisModule_LoadConfigs.unwrap()(ctx) };
    APPLYING_DEFAULTS.store(false, Ordering::Relaxed);
    if loaded != raw::REDISMODULE_OK as c_int {
        return Err("a bf.* value in the server's configuration was refused".into());
    }
    Ok(())
}
