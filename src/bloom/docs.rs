//! What `COMMAND DOCS` says about each `BF.*` command: a summary, its complexity and its arguments, from
//! which `redis-cli` draws its hints while one types. `since` is this module's version; the group
//! is `module`, as the server reports for every module command.

use crate::glue::command::{Arg, Docs};

/// k: hash functions; f: sub-filters in the chain; n: items (or bytes) in the call.
const ONE_ITEM: &std::ffi::CStr =
    c"O(k * f): k hash functions in each of the filter's f sub-filters";
const MANY_ITEMS: &std::ffi::CStr =
    c"O(n * k * f): n items, k hash functions in each of the filter's f sub-filters";

/// BF.RESERVE key error_rate capacity [EXPANSION expansion] [NONSCALING] [WINDOW seconds]
/// [LAYOUT CLASSIC|BLOCKED]
pub const RESERVE: Docs = Docs {
    summary: c"Creates an empty Bloom filter for a capacity and a false-positive rate",
    complexity: c"O(1)",
    args: &[
        Arg::key(c"key"),
        Arg::double(c"error_rate"),
        Arg::integer(c"capacity"),
        Arg::integer(c"expansion").token(c"EXPANSION").optional(),
        Arg::pure_token(c"nonscaling", c"NONSCALING").optional(),
        Arg::integer(c"seconds").token(c"WINDOW").optional(),
        LAYOUT,
    ],
};

/// `[LAYOUT CLASSIC|BLOCKED]`, of BF.RESERVE and BF.INSERT.
const LAYOUT: Arg = Arg::one_of(
    c"layout",
    &[
        Arg::pure_token(c"classic", c"CLASSIC"),
        Arg::pure_token(c"blocked", c"BLOCKED"),
    ],
)
.token(c"LAYOUT")
.optional();

/// BF.ADD key item
pub const ADD: Docs = Docs {
    summary: c"Adds an item to a Bloom filter, creating the filter if it does not exist",
    complexity: ONE_ITEM,
    args: &[Arg::key(c"key"), Arg::string(c"item")],
};

/// BF.MADD key item [item ...]
pub const MADD: Docs = Docs {
    summary: c"Adds items to a Bloom filter, creating the filter if it does not exist",
    complexity: MANY_ITEMS,
    args: &[Arg::key(c"key"), Arg::string(c"item").multiple()],
};

/// BF.INSERT key [CAPACITY capacity] [ERROR error] [EXPANSION expansion] [NOCREATE] [NONSCALING]
/// [WINDOW seconds] [LAYOUT CLASSIC|BLOCKED] ITEMS item [item ...] (and `AT milliseconds`, which only a primary or the AOF
/// sends: not shown to clients)
pub const INSERT: Docs = Docs {
    summary:
        c"Adds items to a Bloom filter, creating it with the given options if it does not exist",
    complexity: MANY_ITEMS,
    args: &[
        Arg::key(c"key"),
        Arg::integer(c"capacity").token(c"CAPACITY").optional(),
        Arg::double(c"error").token(c"ERROR").optional(),
        Arg::integer(c"expansion").token(c"EXPANSION").optional(),
        Arg::pure_token(c"nocreate", c"NOCREATE").optional(),
        Arg::pure_token(c"nonscaling", c"NONSCALING").optional(),
        Arg::integer(c"seconds").token(c"WINDOW").optional(),
        LAYOUT,
        Arg::pure_token(c"items", c"ITEMS"),
        Arg::string(c"item").multiple(),
    ],
};

/// BF.EXISTS key item
pub const EXISTS: Docs = Docs {
    summary: c"Tells whether an item may have been added to a Bloom filter",
    complexity: ONE_ITEM,
    args: &[Arg::key(c"key"), Arg::string(c"item")],
};

/// BF.MEXISTS key item [item ...]
pub const MEXISTS: Docs = Docs {
    summary: c"Tells, for each item, whether it may have been added to a Bloom filter",
    complexity: MANY_ITEMS,
    args: &[Arg::key(c"key"), Arg::string(c"item").multiple()],
};

/// BF.INFO key [CAPACITY | SIZE | FILTERS | ITEMS | EXPANSION | WINDOW | LAYOUT]
pub const INFO: Docs = Docs {
    summary:
        c"Returns the capacity, size, sub-filter count, item count, expansion (and window, layout) of a Bloom filter",
    complexity: c"O(f): the filter's f sub-filters",
    args: &[
        Arg::key(c"key"),
        Arg::one_of(
            c"single_value",
            &[
                Arg::pure_token(c"capacity", c"CAPACITY"),
                Arg::pure_token(c"size", c"SIZE"),
                Arg::pure_token(c"filters", c"FILTERS"),
                Arg::pure_token(c"items", c"ITEMS"),
                Arg::pure_token(c"expansion", c"EXPANSION"),
                Arg::pure_token(c"window", c"WINDOW"),
                Arg::pure_token(c"layout", c"LAYOUT"),
            ],
        )
        .optional(),
    ],
};

/// BF.CARD key
pub const CARD: Docs = Docs {
    summary: c"Returns the number of items added to a Bloom filter (0 if there is no such key)",
    complexity: c"O(1)",
    args: &[Arg::key(c"key")],
};

/// BF.DEBUG key
pub const DEBUG: Docs = Docs {
    summary: c"Describes a Bloom filter and each of its sub-filters, one line each",
    complexity: c"O(f): the filter's f sub-filters",
    args: &[Arg::key(c"key")],
};

/// BF.SCANDUMP key iterator
pub const SCANDUMP: Docs = Docs {
    summary: c"Returns the next chunk of a Bloom filter's bytes, to save it a chunk at a time",
    complexity: c"O(n) for a chunk of n bytes",
    args: &[Arg::key(c"key"), Arg::integer(c"iterator")],
};

/// BF.LOADCHUNK key iterator data
pub const LOADCHUNK: Docs = Docs {
    summary: c"Restores a chunk of a Bloom filter saved with BF.SCANDUMP",
    complexity: c"O(n) for a chunk of n bytes",
    args: &[
        Arg::key(c"key"),
        Arg::integer(c"iterator"),
        Arg::string(c"data"),
    ],
};
