//! Server-wide settings: the defaults a filter gets when a command does not say, and the ceiling on
//! the size of one filter. Each is a Redis 7 module config (`CONFIG GET/SET bf.<name>`), and can be
//! given as a module load argument (`loadmodule libredis_bf.so error-rate 0.001`), under its own
//! name or RedisBloom's (`ERROR_RATE`, `INITIAL_SIZE`).
//!
//! | config | default | range |
//! |---|---|---|
//! | `bf.error-rate` | 0.01 | 2^-1020 (8.9e-308) up to, not including, 1 |
//! | `bf.initial-size` | 100 | 1 to 2^63 - 1 |
//! | `bf.expansion-factor` | 2 | 1 to 32768 |
//! | `bf.max-filter-bytes` | 1 GiB | 1 KiB and up |

use crate::error::BfError;
use crate::glue::guard::guarded;
use crate::parse::{parse_capacity, parse_error_rate, parse_expansion};
use bf_filter::MAX_EXPANSION;
use redis_module::raw;
use std::ffi::CStr;
use std::os::raw::{c_char, c_int, c_longlong, c_void};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// The smallest accepted `bf.max-filter-bytes`.
pub const MIN_FILTER_BYTES_LIMIT: u64 = 1024;

static ERROR_RATE: AtomicU64 = AtomicU64::new(f64::to_bits(0.01));
static INITIAL_SIZE: AtomicU64 = AtomicU64::new(100);
static EXPANSION: AtomicU64 = AtomicU64::new(2);
static MAX_FILTER_BYTES: AtomicU64 = AtomicU64::new(1 << 30);

/// Parameters for filters created without explicit ones.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Defaults {
    pub error: f64,
    pub capacity: u64,
    pub expansion: u16,
}

/// The current defaults (`bf.error-rate`, `bf.initial-size`, `bf.expansion-factor`).
pub fn defaults() -> Defaults {
    Defaults {
        error: f64::from_bits(ERROR_RATE.load(Ordering::Relaxed)),
        capacity: INITIAL_SIZE.load(Ordering::Relaxed),
        // Kept within 1 to MAX_EXPANSION by the config's bounds.
        expansion: u16::try_from(EXPANSION.load(Ordering::Relaxed)).unwrap_or(MAX_EXPANSION),
    }
}

/// The most bytes one filter may take (`bf.max-filter-bytes`).
pub fn max_filter_bytes() -> u64 {
    MAX_FILTER_BYTES.load(Ordering::Relaxed)
}

/// One setting, by any of the names it answers to.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Setting {
    ErrorRate,
    InitialSize,
    ExpansionFactor,
    MaxFilterBytes,
}

impl Setting {
    /// The setting a load-argument name stands for: ours (with or without `bf.`) or RedisBloom's,
    /// in any letter case.
    fn named(name: &[u8]) -> Option<Setting> {
        let name = String::from_utf8_lossy(name).to_ascii_lowercase();
        let name = name.strip_prefix("bf.").unwrap_or(&name);
        match name {
            "error-rate" | "error_rate" => Some(Setting::ErrorRate),
            "initial-size" | "initial_size" => Some(Setting::InitialSize),
            "expansion-factor" => Some(Setting::ExpansionFactor),
            "max-filter-bytes" => Some(Setting::MaxFilterBytes),
            _ => None,
        }
    }

    fn config_name(self) -> &'static str {
        match self {
            Setting::ErrorRate => "bf.error-rate",
            Setting::InitialSize => "bf.initial-size",
            Setting::ExpansionFactor => "bf.expansion-factor",
            Setting::MaxFilterBytes => "bf.max-filter-bytes",
        }
    }

    fn range(self) -> &'static str {
        match self {
            Setting::ErrorRate => "a number from 8.900295434028806e-308 up to, not including, 1",
            Setting::InitialSize => "a whole number from 1 to 9223372036854775807",
            Setting::ExpansionFactor => "a whole number from 1 to 32768",
            Setting::MaxFilterBytes => "a size of at least 1024 bytes (units kb, mb, gb allowed)",
        }
    }

    /// Checks a value and stores it. A refusal names the setting as `named` (what the user typed:
    /// `ERROR_RATE` for a load argument, `bf.error-rate` for CONFIG SET).
    fn set(self, value: &[u8], named: &str) -> Result<(), String> {
        let refused = || {
            format!(
                "bad value '{}' for {named}: must be {}",
                crate::error::quote_token(value),
                self.range()
            )
        };
        match self {
            Setting::ErrorRate => {
                let error = parse_error_rate(value).map_err(|_: BfError| refused())?;
                ERROR_RATE.store(error.to_bits(), Ordering::Relaxed);
            }
            Setting::InitialSize => {
                let size = parse_capacity(value).map_err(|_| refused())?;
                INITIAL_SIZE.store(size, Ordering::Relaxed);
            }
            Setting::ExpansionFactor => {
                let expansion = parse_expansion(value).map_err(|_| refused())?;
                EXPANSION.store(u64::from(expansion), Ordering::Relaxed);
            }
            Setting::MaxFilterBytes => {
                let bytes = parse_memory(value)
                    .filter(|&bytes| bytes >= MIN_FILTER_BYTES_LIMIT && bytes <= i64::MAX as u64)
                    .ok_or_else(refused)?;
                MAX_FILTER_BYTES.store(bytes, Ordering::Relaxed);
            }
        }
        Ok(())
    }
}

/// A byte size as Redis writes them: digits, optionally followed by k, kb, m, mb, g or gb (any
/// letter case; `k` is 1000, `kb` 1024).
fn parse_memory(text: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(text).ok()?.to_ascii_lowercase();
    let digits_end = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(digits_end);
    if digits.is_empty() {
        return None;
    }
    let multiplier: u64 = match unit {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1000 * 1000,
        "mb" => 1024 * 1024,
        "g" => 1000 * 1000 * 1000,
        "gb" => 1024 * 1024 * 1024,
        _ => return None,
    };
    digits.parse::<u64>().ok()?.checked_mul(multiplier)
}

/// Applies the module's load arguments: pairs of a setting name and its value. An unknown name, a
/// missing value or a bad one is an error that says which and why.
pub fn apply_load_arguments(args: &[&[u8]]) -> Result<(), String> {
    if !args.len().is_multiple_of(2) {
        let last = crate::error::quote_token(args[args.len() - 1]);
        return Err(format!("module argument '{last}' needs a value"));
    }
    for pair in args.chunks(2) {
        let setting = Setting::named(pair[0]).ok_or_else(|| {
            format!(
                "unknown module argument '{}' (known: error-rate, initial-size, \
                 expansion-factor, max-filter-bytes, ERROR_RATE, INITIAL_SIZE)",
                crate::error::quote_token(pair[0])
            )
        })?;
        setting.set(pair[1], &crate::error::quote_token(pair[0]))?;
    }
    Ok(())
}

/// The text `bf.error-rate` reads back as, kept alive for the server (which copies it).
struct ErrorRateText(*mut raw::RedisModuleString);

// SAFETY: config callbacks run on the server's main thread only; the mutex orders them anyway.
unsafe impl Send for ErrorRateText {}

static ERROR_RATE_TEXT: Mutex<Option<ErrorRateText>> = Mutex::new(None);

unsafe extern "C" fn get_error_rate(
    _name: *const c_char,
    _privdata: *mut c_void,
) -> *mut raw::RedisModuleString {
    let mut text = ERROR_RATE_TEXT.lock().unwrap_or_else(|e| e.into_inner());
    // Debug formatting: the shortest text that reads back exactly, with an exponent when small.
    let value = format!("{:?}", f64::from_bits(ERROR_RATE.load(Ordering::Relaxed)));
    if let Some(old) = text.take() {
        raw::RedisModule_FreeString.unwrap()(std::ptr::null_mut(), old.0);
    }
    let fresh = raw::RedisModule_CreateString.unwrap()(
        std::ptr::null_mut(),
        value.as_ptr().cast::<c_char>(),
        value.len(),
    );
    *text = Some(ErrorRateText(fresh));
    fresh
}

/// Hands the server an error message for a refused CONFIG SET (it frees the string).
unsafe fn refuse(err: *mut *mut raw::RedisModuleString, message: &str) -> c_int {
    if !err.is_null() {
        *err = raw::RedisModule_CreateString.unwrap()(
            std::ptr::null_mut(),
            message.as_ptr().cast::<c_char>(),
            message.len(),
        );
    }
    raw::REDISMODULE_ERR as c_int
}

unsafe extern "C" fn set_error_rate(
    _name: *const c_char,
    value: *mut raw::RedisModuleString,
    _privdata: *mut c_void,
    err: *mut *mut raw::RedisModuleString,
) -> c_int {
    let mut len = 0;
    let ptr = raw::RedisModule_StringPtrLen.unwrap()(value, &mut len);
    let bytes = std::slice::from_raw_parts(ptr.cast::<u8>(), len);
    let set = guarded(
        std::ptr::null_mut(),
        "CONFIG SET bf.error-rate",
        || Err("internal error (see the log)".into()),
        || Setting::ErrorRate.set(bytes, Setting::ErrorRate.config_name()),
    );
    match set {
        Ok(()) => raw::REDISMODULE_OK as c_int,
        Err(why) => refuse(err, &why),
    }
}

unsafe extern "C" fn get_numeric(_name: *const c_char, privdata: *mut c_void) -> c_longlong {
    (*privdata.cast::<AtomicU64>()).load(Ordering::Relaxed) as c_longlong
}

unsafe extern "C" fn set_numeric(
    _name: *const c_char,
    value: c_longlong,
    privdata: *mut c_void,
    _err: *mut *mut raw::RedisModuleString,
) -> c_int {
    // The server checked the range registered below before calling.
    (*privdata.cast::<AtomicU64>()).store(value as u64, Ordering::Relaxed);
    raw::REDISMODULE_OK as c_int
}

/// Registers the configs with their current values as defaults, then lets the server apply what
/// its config file says about them.
pub fn register(ctx: *mut raw::RedisModuleCtx) -> Result<(), String> {
    let numeric: [(&CStr, &AtomicU64, u32, i64, i64); 3] = [
        (
            c"initial-size",
            &INITIAL_SIZE,
            raw::REDISMODULE_CONFIG_DEFAULT,
            1,
            i64::MAX,
        ),
        (
            c"expansion-factor",
            &EXPANSION,
            raw::REDISMODULE_CONFIG_DEFAULT,
            1,
            32768,
        ),
        (
            c"max-filter-bytes",
            &MAX_FILTER_BYTES,
            raw::REDISMODULE_CONFIG_MEMORY,
            MIN_FILTER_BYTES_LIMIT as i64,
            i64::MAX,
        ),
    ];
    let default_error = std::ffi::CString::new(format!("{:?}", defaults().error))
        .map_err(|_| "bad default error rate")?;
    // SAFETY: a load-time context; names and defaults are NUL-terminated; the callbacks match
    // the server's signatures; privdata points to statics that live as long as the module.
    unsafe {
        let registered = raw::RedisModule_RegisterStringConfig.unwrap()(
            ctx,
            c"error-rate".as_ptr(),
            default_error.as_ptr(),
            raw::REDISMODULE_CONFIG_DEFAULT,
            Some(get_error_rate),
            Some(set_error_rate),
            None,
            std::ptr::null_mut(),
        );
        if registered != raw::REDISMODULE_OK as c_int {
            return Err("could not register config bf.error-rate".into());
        }
        for (name, value, flags, min, max) in numeric {
            let registered = raw::RedisModule_RegisterNumericConfig.unwrap()(
                ctx,
                name.as_ptr(),
                value.load(Ordering::Relaxed) as c_longlong,
                flags,
                min,
                max,
                Some(get_numeric),
                Some(set_numeric),
                None,
                (value as *const AtomicU64).cast_mut().cast::<c_void>(),
            );
            if registered != raw::REDISMODULE_OK as c_int {
                return Err(format!(
                    "could not register config bf.{}",
                    name.to_string_lossy()
                ));
            }
        }
        if raw::RedisModule_LoadConfigs.unwrap()(ctx) != raw::REDISMODULE_OK as c_int {
            return Err("a bf.* value in the server's configuration was refused".into());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_sizes_read_like_redis_writes_them() {
        assert_eq!(parse_memory(b"1024"), Some(1024));
        assert_eq!(parse_memory(b"2kb"), Some(2048));
        assert_eq!(parse_memory(b"2k"), Some(2000));
        assert_eq!(parse_memory(b"1GB"), Some(1 << 30));
        assert_eq!(parse_memory(b"3mb"), Some(3 << 20));
        for bad in [
            &b""[..],
            b"kb",
            b"1.5mb",
            b"-1",
            b"1tb",
            b"99999999999999999999gb",
        ] {
            assert_eq!(parse_memory(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn load_arguments_name_settings_in_both_dialects() {
        assert_eq!(Setting::named(b"error-rate"), Some(Setting::ErrorRate));
        assert_eq!(Setting::named(b"ERROR_RATE"), Some(Setting::ErrorRate));
        assert_eq!(
            Setting::named(b"bf.initial-size"),
            Some(Setting::InitialSize)
        );
        assert_eq!(Setting::named(b"INITIAL_SIZE"), Some(Setting::InitialSize));
        assert_eq!(
            Setting::named(b"expansion-factor"),
            Some(Setting::ExpansionFactor)
        );
        assert_eq!(
            Setting::named(b"max-filter-bytes"),
            Some(Setting::MaxFilterBytes)
        );
        assert_eq!(Setting::named(b"error"), None);
    }

    #[test]
    fn bad_load_arguments_say_which_and_why() {
        assert_eq!(
            apply_load_arguments(&[b"error-rate"]),
            Err("module argument 'error-rate' needs a value".into())
        );
        assert_eq!(
            apply_load_arguments(&[b"ERROR_RATE", b"2"]),
            Err(
                "bad value '2' for ERROR_RATE: must be a number from 8.900295434028806e-308 \
                 up to, not including, 1"
                    .into()
            )
        );
        assert!(apply_load_arguments(&[b"colour", b"blue"])
            .unwrap_err()
            .starts_with("unknown module argument 'colour'"));
        assert!(apply_load_arguments(&[b"max-filter-bytes", b"1000"])
            .unwrap_err()
            .contains("at least 1024 bytes"));
    }
}
