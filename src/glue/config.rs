//! The configs' side of the server's API: registering `bf.*` with the server and the callbacks it
//! calls for CONFIG GET and SET. What the settings are, their ranges and checks, is
//! `crate::config`'s.

use super::guard::guarded;
use crate::config::{self, EnumConfig, Numeric};
use redis_module::raw;
use std::ffi::CStr;
use std::os::raw::{c_char, c_int, c_longlong, c_void};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// The text `bf.error-rate` reads back as, kept alive for the server (which copies it).
struct ErrorRateText(*mut raw::RedisModuleString);

// SAFETY: config callbacks run on the server's main thread only; the mutex orders them anyway.
unsafe impl Send for ErrorRateText {}

static ERROR_RATE_TEXT: Mutex<Option<ErrorRateText>> = Mutex::new(None);

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
    let mut text = ERROR_RATE_TEXT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(old) = text.take() {
        // SAFETY: made by `new_string` below on the last call, which the server has copied by
        // now (it copies the value it gets before calling again).
        unsafe { raw::RedisModule_FreeString.unwrap()(std::ptr::null_mut(), old.0) };
    }
    let fresh = new_string(&config::error_rate_text());
    *text = Some(ErrorRateText(fresh));
    fresh
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
    let mut len = 0;
    // SAFETY: `value` is the server's valid string; its bytes stay valid for this call.
    let bytes = unsafe {
        let ptr = raw::RedisModule_StringPtrLen.unwrap()(value, &mut len);
        std::slice::from_raw_parts(ptr.cast::<u8>(), len)
    };
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
    register_enum(ctx, &config::layout_config())?;
    // SAFETY: the load-time context.
    if unsafe { raw::RedisModule_LoadConfigs.unwrap()(ctx) } != raw::REDISMODULE_OK as c_int {
        return Err("a bf.* value in the server's configuration was refused".into());
    }
    Ok(())
}
