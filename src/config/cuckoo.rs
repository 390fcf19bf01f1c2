//! The cuckoo filters' defaults: what `CF.ADD`, `CF.ADDNX` and `CF.INSERT` give a filter they
//! create, and how many sub-filters a filter may have. Configs `bf.cf-*` (and, where the server
//! takes unprefixed ones, Redis 8's `cf-*` names for RedisBloom's, twins of them), load arguments
//! under either name and RedisBloom 2.4's `CF_MAX_EXPANSIONS`.
//!
//! | config | Redis 8's name | default | range |
//! |---|---|---|---|
//! | `bf.cf-initial-size` | `cf-initial-size` | 1024 | 2 to 2^63 - 1 (at least twice the bucket size when used) |
//! | `bf.cf-bucket-size` | `cf-bucket-size` | 2 | 1 to 255 |
//! | `bf.cf-max-iterations` | `cf-max-iterations` | 20 | 1 to 65535 |
//! | `bf.cf-expansion-factor` | `cf-expansion-factor` | 1 | 0 to 32768 (rounded up to a power of two) |
//! | `bf.cf-max-expansions` | `cf-max-expansions` | 32 | 1 to 65535 |

use filters::cuckoo::shape::MAX_TABLES;
use filters::cuckoo::{Limits, Params};
use std::ffi::CStr;
use std::sync::atomic::{AtomicU64, Ordering};

static INITIAL_SIZE: AtomicU64 = AtomicU64::new(1024);
static BUCKET_SIZE: AtomicU64 = AtomicU64::new(2);
static MAX_ITERATIONS: AtomicU64 = AtomicU64::new(20);
static EXPANSION: AtomicU64 = AtomicU64::new(1);
static MAX_EXPANSIONS: AtomicU64 = AtomicU64::new(32);

/// One cuckoo setting: its name after `bf.`, where its value lives and its range.
#[derive(Debug, Clone, Copy)]
pub struct CfSetting {
    pub name: &'static CStr,
    pub value: &'static AtomicU64,
    pub min: u64,
    pub max: u64,
}

/// The cuckoo settings, in the order they are registered.
pub const SETTINGS: [CfSetting; 5] = [
    CfSetting {
        name: c"cf-initial-size",
        value: &INITIAL_SIZE,
        min: 2,
        max: i64::MAX as u64,
    },
    CfSetting {
        name: c"cf-bucket-size",
        value: &BUCKET_SIZE,
        min: 1,
        max: 255,
    },
    CfSetting {
        name: c"cf-max-iterations",
        value: &MAX_ITERATIONS,
        min: 1,
        max: 65535,
    },
    CfSetting {
        name: c"cf-expansion-factor",
        value: &EXPANSION,
        min: 0,
        max: 32768,
    },
    CfSetting {
        name: c"cf-max-expansions",
        value: &MAX_EXPANSIONS,
        min: 1,
        max: MAX_TABLES,
    },
];

impl CfSetting {
    /// The setting a name (after `bf.` is taken off, lower case) stands for: `cf-initial-size`,
    /// or RedisBloom 2.4's `cf_max_expansions`.
    pub fn named(name: &str) -> Option<CfSetting> {
        let name = if name == "cf_max_expansions" {
            "cf-max-expansions"
        } else {
            name
        };
        SETTINGS
            .into_iter()
            .find(|setting| setting.name.to_bytes() == name.as_bytes())
    }

    /// What a value must be, for a refusal.
    pub fn range(&self) -> String {
        format!("a whole number from {} to {}", self.min, self.max)
    }

    /// Stores `value` if it is within the range.
    pub fn set(&self, value: u64) -> bool {
        let fits = (self.min..=self.max).contains(&value);
        if fits {
            self.value.store(value, Ordering::Relaxed);
        }
        fits
    }
}

/// What a filter created without explicit parameters gets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CuckooDefaults {
    pub capacity: u64,
    pub bucket_size: u64,
    pub max_iterations: u64,
    pub expansion: u64,
}

/// The current defaults.
pub fn cuckoo_defaults() -> CuckooDefaults {
    CuckooDefaults {
        capacity: INITIAL_SIZE.load(Ordering::Relaxed),
        bucket_size: BUCKET_SIZE.load(Ordering::Relaxed),
        max_iterations: MAX_ITERATIONS.load(Ordering::Relaxed),
        expansion: EXPANSION.load(Ordering::Relaxed),
    }
}

impl CuckooDefaults {
    /// The parameters they give (the ranges of the configs make them valid).
    pub fn params(&self) -> Params {
        Params::new(self.bucket_size, self.max_iterations, self.expansion).unwrap_or(Params {
            bucket_size: 2,
            max_iterations: 20,
            expansion: 1,
        })
    }
}

/// `cf-max-expansions`: the most sub-filters a filter may reach through a client's adds.
pub fn max_tables() -> u64 {
    MAX_EXPANSIONS.load(Ordering::Relaxed)
}

/// The limits of a client's add: `cf-max-expansions`, and `max_bytes`.
pub fn limits(max_bytes: u64) -> Limits {
    Limits {
        max_tables: max_tables(),
        max_bytes,
    }
}

impl PartialEq for CfSetting {
    fn eq(&self, other: &CfSetting) -> bool {
        self.name == other.name
    }
}
