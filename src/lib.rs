//! redis-bf: Bloom and cuckoo filters for Redis, as a loadable module speaking RedisBloom's
//! `BF.*` and `CF.*` dialects.
//!
//! This file is registration only: the module's name and version, its data types, and its
//! commands with their flags, arity and key access, and its configs. The filters themselves are
//! the `filters` crate. Each family has its rooms here, side by side: `bloom` (the `BF.*`
//! commands, the `MBbloom--` data type, the sweep of windowed filters) and `cuckoo` (the `CF.*`
//! commands and the `MBbloomCF` data type); both stand on one floor: `hint` (where big filters
//! lie), settings in `config`, errors in `error`, values in `parse`, sizes in `size`, counters in
//! `stats`, and everything that touches the server's API in `glue`.

#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

mod bloom;
mod config;
mod cuckoo;
mod error;
#[cfg(any(test, feature = "standalone"))]
pub mod fuzzing;
mod glue;
mod hint;
mod parse;
mod size;
mod stats;

use bloom as bf;
use cuckoo as cf;
use glue::command::{dispatch, Command, KeyUse};

/// The module version Redis reports: MAJOR * 10000 + MINOR * 100 + PATCH of the crate version.
const MODULE_VERSION: i32 = version_number();

const fn version_number() -> i32 {
    const fn parse(text: &str) -> i32 {
        let bytes = text.as_bytes();
        let mut value = 0;
        let mut index = 0;
        while index < bytes.len() {
            value = value * 10 + (bytes[index] - b'0') as i32;
            index += 1;
        }
        value
    }
    parse(env!("CARGO_PKG_VERSION_MAJOR")) * 10000
        + parse(env!("CARGO_PKG_VERSION_MINOR")) * 100
        + parse(env!("CARGO_PKG_VERSION_PATCH"))
}

/// Declares a command: its C callback runs `$handler` through [`dispatch`].
macro_rules! command {
    ($name:literal, $handler:path, $flags:literal, $arity:literal, $key:ident, $docs:path) => {{
        extern "C" fn callback(
            ctx: *mut redis_module::raw::RedisModuleCtx,
            argv: *mut *mut redis_module::raw::RedisModuleString,
            argc: std::os::raw::c_int,
        ) -> std::os::raw::c_int {
            dispatch(ctx, argv, argc, $handler)
        }
        Command {
            name: $name,
            callback,
            flags: $flags,
            arity: $arity,
            key: KeyUse::$key,
            docs: $docs,
        }
    }};
}

/// Every command the module registers, in lower case as RedisBloom registers them: what
/// `INFO commandstats` (`cmdstat_bf.add`), `LATENCY`, `COMMAND LIST`, ACL errors and the arity error
/// show after a switch from it.
#[rustfmt::skip]
const COMMANDS: &[Command] = &[
    // BF.RESERVE key error_rate capacity [EXPANSION n] [NONSCALING] [WINDOW seconds]
    command!(c"bf.reserve", bf::reserve::reserve, c"write deny-oom fast", -4, Inserts, bf::docs::RESERVE),
    // BF.ADD key item
    command!(c"bf.add", bf::add::add, c"write deny-oom", 3, Inserts, bf::docs::ADD),
    // BF.MADD key item [item ...]
    command!(c"bf.madd", bf::add::madd, c"write deny-oom", -3, Inserts, bf::docs::MADD),
    // BF.INSERT key [CAPACITY c] [ERROR e] [EXPANSION n] [NOCREATE] [NONSCALING] [WINDOW s] ITEMS item...
    command!(c"bf.insert", bf::add::insert, c"write deny-oom", -4, Inserts, bf::docs::INSERT),
    // BF.EXISTS key item
    command!(c"bf.exists", bf::exists::exists, c"readonly fast", 3, ReadsItems, bf::docs::EXISTS),
    // BF.MEXISTS key item [item ...]
    command!(c"bf.mexists", bf::exists::mexists, c"readonly fast", -3, ReadsItems, bf::docs::MEXISTS),
    // BF.INFO key [CAPACITY | SIZE | FILTERS | ITEMS | EXPANSION | WINDOW]
    command!(c"bf.info", bf::info::info, c"readonly fast", -2, ReadsMetadata, bf::docs::INFO),
    // BF.CARD key
    command!(c"bf.card", bf::info::card, c"readonly fast", 2, ReadsMetadata, bf::docs::CARD),
    // BF.DEBUG key
    command!(c"bf.debug", bf::info::debug, c"readonly", 2, ReadsMetadata, bf::docs::DEBUG),
    // BF.SCANDUMP key iterator
    command!(c"bf.scandump", bf::dump::scandump, c"readonly", 3, ReadsItems, bf::docs::SCANDUMP),
    // BF.LOADCHUNK key iterator data
    command!(c"bf.loadchunk", bf::dump::loadchunk, c"write deny-oom", 4, Loads, bf::docs::LOADCHUNK),
    // CF.RESERVE key capacity [BUCKETSIZE b] [MAXITERATIONS m] [EXPANSION e] [ERROR rate]
    command!(c"cf.reserve", cf::create::reserve, c"write deny-oom fast", -3, Inserts, cf::docs::RESERVE),
    // CF.ADD key item
    command!(c"cf.add", cf::add::add, c"write deny-oom", 3, Inserts, cf::docs::ADD),
    // CF.ADDNX key item
    command!(c"cf.addnx", cf::add::addnx, c"write deny-oom", 3, Inserts, cf::docs::ADDNX),
    // CF.INSERT key [CAPACITY c] [ERROR rate] [NOCREATE] ITEMS item...
    command!(c"cf.insert", cf::add::insert, c"write deny-oom", -4, Inserts, cf::docs::INSERT),
    // CF.INSERTNX key [CAPACITY c] [ERROR rate] [NOCREATE] ITEMS item...
    command!(c"cf.insertnx", cf::add::insertnx, c"write deny-oom", -4, Inserts, cf::docs::INSERTNX),
    // CF.EXISTS key item
    command!(c"cf.exists", cf::read::exists, c"readonly fast", 3, ReadsItems, cf::docs::EXISTS),
    // CF.MEXISTS key item [item ...]
    command!(c"cf.mexists", cf::read::mexists, c"readonly fast", -3, ReadsItems, cf::docs::MEXISTS),
    // CF.COUNT key item
    command!(c"cf.count", cf::read::count, c"readonly fast", 3, ReadsItems, cf::docs::COUNT),
    // CF.DEL key item
    command!(c"cf.del", cf::delete::del, c"write fast", 3, Deletes, cf::docs::DEL),
    // CF.COMPACT key
    command!(c"cf.compact", cf::delete::compact, c"write", 2, Updates, cf::docs::COMPACT),
    // CF.INFO key
    command!(c"cf.info", cf::read::info, c"readonly fast", 2, ReadsMetadata, cf::docs::INFO),
    // CF.DEBUG key
    command!(c"cf.debug", cf::read::debug, c"readonly", 2, ReadsMetadata, cf::docs::DEBUG),
    // CF.SCANDUMP key iterator
    command!(c"cf.scandump", cf::dump::scandump, c"readonly", 3, ReadsItems, cf::docs::SCANDUMP),
    // CF.LOADCHUNK key iterator data
    command!(c"cf.loadchunk", cf::dump::loadchunk, c"write deny-oom", 4, Loads, cf::docs::LOADCHUNK),
];

/// Sets the module up once the server knows it: load arguments and configs, the INFO section,
/// the commands. A refusal is logged once, with its reason, and the module does not load.
fn init(ctx: *mut redis_module::raw::RedisModuleCtx, args: &[&[u8]]) -> Result<(), String> {
    glue::datatype::remember_raw_type::<filters::bloom::Filter>();
    glue::datatype::remember_raw_type::<filters::cuckoo::Cuckoo>();
    glue::huge_pages::read_kernel_mode();
    config::apply_load_arguments(args)?;
    glue::config::register(ctx)?;
    glue::module::set_options(ctx);
    glue::info::register(ctx);
    glue::command::register(ctx, COMMANDS)?;
    glue::background::register(&BACKGROUND);
    Ok(())
}

/// What the module does outside commands: the sweep of idle windowed filters (see [`bloom::sweep`]).
static BACKGROUND: glue::background::Handlers = glue::background::Handlers {
    timer: bf::window::on_timer,
};

// Inside Redis every byte goes through the server's allocator. Unit tests, and the fuzzers that
// link this crate (feature `standalone`), run outside Redis with the system's.
#[cfg(not(any(test, feature = "standalone")))]
#[global_allocator]
static ALLOCATOR: glue::alloc::RedisAllocator = glue::alloc::RedisAllocator;

/// The module's name (`bf`, RedisBloom's), version and data type.
static IDENTITY: glue::module::Identity = glue::module::Identity {
    name: c"bf",
    version: MODULE_VERSION,
    data_types: &[
        (&bf::datatype::BLOOM_TYPE, bf::datatype::TYPE_NAME),
        (&cf::datatype::CUCKOO_TYPE, cf::datatype::TYPE_NAME),
    ],
};

/// The entry point Redis calls when it loads the module: the module's name (`bf`) and version,
/// its data type, then [`init`]. (Written out rather than generated by the redis-module crate's
/// macro, which logs warnings about server features the module does not use.)
///
/// # Safety
/// Called by the server only, with its load context and the module's arguments.
#[no_mangle]
pub unsafe extern "C" fn RedisModule_OnLoad(
    ctx: *mut redis_module::raw::RedisModuleCtx,
    argv: *mut *mut redis_module::raw::RedisModuleString,
    argc: std::os::raw::c_int,
) -> std::os::raw::c_int {
    // SAFETY: what the server passed to this entry point (its contract).
    unsafe { glue::module::load(ctx, argv, argc, &IDENTITY, init) }
}
