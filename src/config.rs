//! Server-wide settings: the defaults a filter gets when a command does not say, and the ceiling on
//! the size of one filter. Each is a Redis 7 module config (`CONFIG GET/SET bf.<name>`), and can be
//! given as a module load argument (`loadmodule libredis_bf.so error-rate 0.001`), under its own
//! name or RedisBloom's (`ERROR_RATE`, `INITIAL_SIZE`, and Redis 8's `bf-error-rate`,
//! `bf-initial-size`, `bf-expansion-factor`). Where the server takes configs without the module's
//! prefix (Redis 8), Redis 8's names are configs too, each the same setting as its `bf.` twin.
//!
//! | config | Redis 8's name | default | range |
//! |---|---|---|---|
//! | `bf.error-rate` | `bf-error-rate` | 0.01 | 2^-1020 (8.9e-308) up to, not including, 1 |
//! | `bf.initial-size` | `bf-initial-size` | 100 | 1 to 2^63 - 1 |
//! | `bf.expansion-factor` | `bf-expansion-factor` | 2 | 0 (NONSCALING) to 32768 |
//! | `bf.max-filter-bytes` | | 1 GiB | 1 KiB and up |
//! | `bf.layout` | | classic | classic, blocked |
//! | `bf.huge-pages` | | yes | yes, no |

mod cuckoo;

use crate::error::BfError;
use crate::parse::{parse_capacity, parse_error_rate, parse_expansion, parse_layout, parse_whole};
pub use cuckoo::{
    cuckoo_defaults, limits as cuckoo_limits, max_tables as cuckoo_max_tables, CfSetting,
};
use filters::bloom::sizing::Layout;
use filters::bloom::{Growth, MAX_EXPANSION};
use std::ffi::CStr;
use std::sync::atomic::{AtomicU64, Ordering};

/// The smallest accepted `bf.max-filter-bytes`.
pub const MIN_FILTER_BYTES_LIMIT: u64 = 1024;

static ERROR_RATE: AtomicU64 = AtomicU64::new(f64::to_bits(0.01));
static INITIAL_SIZE: AtomicU64 = AtomicU64::new(100);
static EXPANSION: AtomicU64 = AtomicU64::new(2);
static MAX_FILTER_BYTES: AtomicU64 = AtomicU64::new(1 << 30);
/// `bf.layout`: 0 classic, 1 blocked (the values its enum config is registered with).
static LAYOUT: AtomicU64 = AtomicU64::new(0);
/// `bf.huge-pages`: 1 yes, 0 no (see `crate::glue::huge_pages`).
static HUGE_PAGES: AtomicU64 = AtomicU64::new(1);

/// Parameters for filters created without explicit ones.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Defaults {
    pub error: f64,
    pub capacity: u64,
    /// Scaling by `bf.expansion-factor`, or NONSCALING where it is 0 (as RedisBloom 8 reads
    /// its `bf-expansion-factor`).
    pub growth: Growth,
    pub layout: Layout,
}

/// The current defaults (`bf.error-rate`, `bf.initial-size`, `bf.expansion-factor`,
/// `bf.layout`).
pub fn defaults() -> Defaults {
    // Kept within 0 to MAX_EXPANSION by the config's bounds.
    let expansion = u16::try_from(EXPANSION.load(Ordering::Relaxed)).unwrap_or(MAX_EXPANSION);
    Defaults {
        error: f64::from_bits(ERROR_RATE.load(Ordering::Relaxed)),
        capacity: INITIAL_SIZE.load(Ordering::Relaxed),
        growth: match expansion {
            0 => Growth::Fixed,
            expansion => Growth::Scaling { expansion },
        },
        layout: layout_of(LAYOUT.load(Ordering::Relaxed)),
    }
}

/// The layout stored as `value` in `bf.layout` (0 classic, 1 blocked).
fn layout_of(value: u64) -> Layout {
    if value == 1 {
        Layout::Blocked
    } else {
        Layout::Classic
    }
}

/// The enum config `bf.layout` as the server registers it: its name after `bf.`, its values'
/// names and numbers, and where the number lives.
pub struct EnumConfig {
    pub name: &'static CStr,
    pub names: [&'static CStr; 2],
    pub values: [i32; 2],
    pub value: &'static AtomicU64,
}

/// The enum configs: `bf.layout`, `bf.huge-pages`.
pub fn enum_configs() -> [EnumConfig; 2] {
    [
        EnumConfig {
            name: c"layout",
            names: [c"classic", c"blocked"],
            values: [0, 1],
            value: &LAYOUT,
        },
        EnumConfig {
            name: c"huge-pages",
            names: [c"no", c"yes"],
            values: [0, 1],
            value: &HUGE_PAGES,
        },
    ]
}

/// True if big filters ask the kernel for huge pages (`bf.huge-pages`).
pub fn huge_pages() -> bool {
    HUGE_PAGES.load(Ordering::Relaxed) == 1
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
    Layout,
    HugePages,
    /// A cuckoo filter's default or limit (`config::cuckoo`).
    Cuckoo(CfSetting),
}

impl Setting {
    /// The setting a load-argument name stands for: ours (with or without `bf.`) or RedisBloom's,
    /// in any letter case.
    fn named(name: &[u8]) -> Option<Setting> {
        let name = String::from_utf8_lossy(name).to_ascii_lowercase();
        let name = name
            .strip_prefix("bf.")
            .or_else(|| name.strip_prefix("bf-"))
            .unwrap_or(&name);
        match name {
            "error-rate" | "error_rate" => Some(Setting::ErrorRate),
            "initial-size" | "initial_size" => Some(Setting::InitialSize),
            "expansion-factor" => Some(Setting::ExpansionFactor),
            "max-filter-bytes" => Some(Setting::MaxFilterBytes),
            "layout" => Some(Setting::Layout),
            "huge-pages" => Some(Setting::HugePages),
            _ => CfSetting::named(name).map(Setting::Cuckoo),
        }
    }

    fn range(self) -> String {
        String::from(match self {
            Setting::ErrorRate => "a number from 8.900295434028806e-308 up to, not including, 1",
            Setting::InitialSize => "a whole number from 1 to 9223372036854775807",
            Setting::ExpansionFactor => "a whole number from 0 (NONSCALING) to 32768",
            Setting::MaxFilterBytes => "a size of at least 1024 bytes (units kb, mb, gb allowed)",
            Setting::Layout => "classic or blocked",
            Setting::HugePages => "yes or no",
            Setting::Cuckoo(setting) => return setting.range(),
        })
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
                let expansion = match value {
                    b"0" => 0,
                    value => parse_expansion(value).map_err(|_| refused())?,
                };
                EXPANSION.store(u64::from(expansion), Ordering::Relaxed);
            }
            Setting::MaxFilterBytes => {
                let bytes = parse_memory(value)
                    .filter(|&bytes| bytes >= MIN_FILTER_BYTES_LIMIT && bytes <= i64::MAX as u64)
                    .ok_or_else(refused)?;
                MAX_FILTER_BYTES.store(bytes, Ordering::Relaxed);
            }
            Setting::Layout => {
                let layout = parse_layout(value).map_err(|_| refused())?;
                LAYOUT.store(u64::from(layout == Layout::Blocked), Ordering::Relaxed);
            }
            Setting::HugePages => {
                let yes = match value.to_ascii_lowercase().as_slice() {
                    b"yes" => 1,
                    b"no" => 0,
                    _ => return Err(refused()),
                };
                HUGE_PAGES.store(yes, Ordering::Relaxed);
            }
            Setting::Cuckoo(setting) => {
                let number = parse_whole(value).ok_or_else(refused)?;
                if !setting.set(number) {
                    return Err(refused());
                }
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
                 expansion-factor, max-filter-bytes, layout, huge-pages, cf-initial-size, cf-bucket-size, \
                 cf-max-iterations, cf-expansion-factor, cf-max-expansions, ERROR_RATE, \
                 INITIAL_SIZE, CF_MAX_EXPANSIONS, bf-error-rate, bf-initial-size, \
                 bf-expansion-factor)",
                crate::error::quote_token(pair[0])
            )
        })?;
        setting.set(pair[1], &crate::error::quote_token(pair[0]))?;
    }
    Ok(())
}

/// A numeric config as the server registers it: its name after `bf.`, where its value lives, its
/// range, and whether the server reads it as a memory size (`1mb`).
pub struct Numeric {
    pub name: &'static CStr,
    pub value: &'static AtomicU64,
    pub memory: bool,
    pub min: i64,
    pub max: i64,
}

/// The numeric configs: `bf.initial-size`, `bf.expansion-factor`, `bf.max-filter-bytes`, then
/// the cuckoo filters' `bf.cf-*`.
pub fn numeric() -> Vec<Numeric> {
    let cuckoo = cuckoo::SETTINGS.into_iter().map(|setting| Numeric {
        name: setting.name,
        value: setting.value,
        memory: false,
        min: setting.min as i64,
        max: setting.max as i64,
    });
    let bloom = [
        Numeric {
            name: c"initial-size",
            value: &INITIAL_SIZE,
            memory: false,
            min: 1,
            max: i64::MAX,
        },
        Numeric {
            name: c"expansion-factor",
            value: &EXPANSION,
            memory: false,
            min: 0,
            max: i64::from(MAX_EXPANSION),
        },
        Numeric {
            name: c"max-filter-bytes",
            value: &MAX_FILTER_BYTES,
            memory: true,
            min: MIN_FILTER_BYTES_LIMIT as i64,
            max: i64::MAX,
        },
    ];
    bloom.into_iter().chain(cuckoo).collect()
}

/// The name of the one string config (an error rate is not an integer), after `bf.`.
pub const ERROR_RATE_NAME: &CStr = c"error-rate";

/// The text `bf.error-rate` reads as: the shortest that reads back exactly (Debug formatting,
/// with an exponent when small).
pub fn error_rate_text() -> String {
    format!("{:?}", f64::from_bits(ERROR_RATE.load(Ordering::Relaxed)))
}

/// `CONFIG SET bf.error-rate`: checks the value and stores it, or says why not.
pub fn set_error_rate(value: &[u8]) -> Result<(), String> {
    Setting::ErrorRate.set(value, "bf.error-rate")
}

/// One of Redis 8's names for RedisBloom's configs (registered without the module's prefix where
/// the server takes that): a twin of one `bf.*` setting, read and set as text as RedisBloom 8
/// registers them. Its registered default is the empty text, which setting ignores while the
/// server applies defaults at load, so that a `bf.*` line of the config file is never undone by
/// its twin's default (and a twin's line wins over its `bf.*` name's default, applied first).
pub struct Redis8Name {
    pub name: &'static CStr,
    setting: Setting,
}

/// Redis 8's names, in the order they are registered (after every `bf.*` config).
pub const REDIS8_NAMES: [Redis8Name; 8] = [
    Redis8Name {
        name: c"bf-error-rate",
        setting: Setting::ErrorRate,
    },
    Redis8Name {
        name: c"bf-initial-size",
        setting: Setting::InitialSize,
    },
    Redis8Name {
        name: c"bf-expansion-factor",
        setting: Setting::ExpansionFactor,
    },
    Redis8Name {
        name: c"cf-initial-size",
        setting: Setting::Cuckoo(cuckoo::SETTINGS[0]),
    },
    Redis8Name {
        name: c"cf-bucket-size",
        setting: Setting::Cuckoo(cuckoo::SETTINGS[1]),
    },
    Redis8Name {
        name: c"cf-max-iterations",
        setting: Setting::Cuckoo(cuckoo::SETTINGS[2]),
    },
    Redis8Name {
        name: c"cf-expansion-factor",
        setting: Setting::Cuckoo(cuckoo::SETTINGS[3]),
    },
    Redis8Name {
        name: c"cf-max-expansions",
        setting: Setting::Cuckoo(cuckoo::SETTINGS[4]),
    },
];

impl Redis8Name {
    /// Its value, as text: its twin's.
    pub fn get(&self) -> String {
        match self.setting {
            Setting::ErrorRate => error_rate_text(),
            Setting::InitialSize => INITIAL_SIZE.load(Ordering::Relaxed).to_string(),
            Setting::ExpansionFactor => EXPANSION.load(Ordering::Relaxed).to_string(),
            Setting::MaxFilterBytes => MAX_FILTER_BYTES.load(Ordering::Relaxed).to_string(),
            Setting::Cuckoo(setting) => setting.value.load(Ordering::Relaxed).to_string(),
            Setting::Layout => String::from(match layout_of(LAYOUT.load(Ordering::Relaxed)) {
                Layout::Classic => "classic",
                Layout::Blocked => "blocked",
            }),
            Setting::HugePages => String::from(if huge_pages() { "yes" } else { "no" }),
        }
    }

    /// Sets its twin, or says why not; the empty text while `applying_defaults` changes nothing.
    pub fn set(&self, value: &[u8], applying_defaults: bool) -> Result<(), String> {
        if value.is_empty() && applying_defaults {
            return Ok(());
        }
        self.setting.set(value, &self.name.to_string_lossy())
    }
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
        assert_eq!(Setting::named(b"bf-error-rate"), Some(Setting::ErrorRate));
        assert_eq!(
            Setting::named(b"bf-expansion-factor"),
            Some(Setting::ExpansionFactor)
        );
        assert_eq!(Setting::named(b"error"), None);
    }

    #[test]
    fn redis8_names_are_twins_that_ignore_their_empty_default_at_load() {
        let [rate, size, expansion, ..] = &REDIS8_NAMES;
        assert_eq!(size.set(b"", true), Ok(()));
        assert!(size
            .set(b"", false)
            .unwrap_err()
            .starts_with("bad value '' for bf-initial-size"));
        assert_eq!(expansion.set(b"0", false), Ok(()));
        assert_eq!(expansion.get(), "0");
        assert_eq!(defaults().growth, Growth::Fixed);
        assert_eq!(expansion.set(b"2", false), Ok(()));
        assert_eq!(defaults().growth, Growth::Scaling { expansion: 2 });
        assert!(rate
            .set(b"2", false)
            .unwrap_err()
            .contains("for bf-error-rate: must be"));
        assert_eq!(rate.get(), error_rate_text());
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
