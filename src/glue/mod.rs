//! The edge between Rust and the Redis module API: loading, the allocator, the data type's
//! callbacks, configs, INFO, command registration and dispatch, the per-call context with its
//! replies, key access, timers and events. Every `unsafe` block of the module crate lives here,
//! but the entry point `RedisModule_OnLoad` (in `lib.rs`), which hands over to `module::load`.

#[cfg(any(test, not(feature = "standalone")))]
pub mod aligned;
#[cfg(not(any(test, feature = "standalone")))]
pub mod alloc;
pub mod background;
pub mod call;
pub mod command;
pub mod config;
pub mod datatype;
pub mod guard;
pub mod huge_pages;
pub mod info;
pub mod kernel;
pub mod key;
pub mod log;
pub mod module;
pub mod value;

use filters::bloom::window::ClockTrust;

/// Where data a command or a loader takes comes from, as far as trusting its clock goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// A client (RESTORE, LOADCHUNK, a command).
    Client,
    /// The server's own files, loading (its RDB file, its AOF, `DEBUG RELOAD`).
    OwnData,
    /// Its primary: the replication stream, a full sync, or anything a replica holds.
    Primary,
}

impl Origin {
    /// A command's origin: a client's unless the server says it must be obeyed (`must_obey`,
    /// Valkey 8.1+; elsewhere the context flags tell: its primary's stream, or an AOF loading),
    /// then the primary's (its stream, or on Valkey 9 a slot import, which the server treats like
    /// a primary), or on a server loading its own AOF, its own (a replica's own files are its
    /// primary's data too).
    fn of_command(flags: u32, must_obey: Option<bool>) -> Origin {
        use redis_module::raw;
        let replicated = flags & raw::REDISMODULE_CTX_FLAGS_REPLICATED != 0;
        let loading = flags & raw::REDISMODULE_CTX_FLAGS_LOADING != 0;
        match must_obey {
            Some(false) if !loading => Origin::Client,
            None if !replicated && !loading => Origin::Client,
            _ if loading && !replicated => Origin::of_loading(flags),
            _ => Origin::Primary,
        }
    }

    /// A value's origin as a loader reads it, from the server's context flags: a replica holds its
    /// primary's data (a full sync, or a RESTORE its primary sent, which carries no client to tell
    /// by); a server loading, its own; anything else is a client's RESTORE.
    fn of_value(flags: u32) -> Origin {
        use redis_module::raw;
        if flags & raw::REDISMODULE_CTX_FLAGS_LOADING != 0 {
            Origin::of_loading(flags)
        } else if flags & raw::REDISMODULE_CTX_FLAGS_SLAVE != 0 {
            Origin::Primary
        } else {
            Origin::Client
        }
    }

    /// How far a loader trusts the clock of a windowed filter from here (see
    /// [`ClockTrust`]): a client's is checked, a primary's kept, the server's own brought back.
    pub fn clock_trust(self) -> ClockTrust {
        match self {
            Origin::Client => ClockTrust::Check,
            Origin::Primary => ClockTrust::Keep,
            Origin::OwnData => ClockTrust::BringBack,
        }
    }

    fn of_loading(flags: u32) -> Origin {
        if flags & redis_module::raw::REDISMODULE_CTX_FLAGS_SLAVE != 0 {
            Origin::Primary
        } else {
            Origin::OwnData
        }
    }
}
