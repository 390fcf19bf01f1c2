//! What `COMMAND DOCS` says about each `CF.*` command (the same shape as the `BF.*` commands'
//! docs: `glue::command::Docs`).

use crate::glue::command::{Arg, Docs};

/// b: the bucket size; f: sub-filters; n: items in the call.
const ONE_ITEM: &std::ffi::CStr =
    c"O(b * f): the item's two buckets of b slots in each of f sub-filters";
const MANY_ITEMS: &std::ffi::CStr =
    c"O(n * b * f): n items, two buckets of b slots in each of f sub-filters";

/// CF.RESERVE key capacity [BUCKETSIZE bucketsize] [MAXITERATIONS maxiterations]
/// [EXPANSION expansion] [ERROR error]
pub const RESERVE: Docs = Docs {
    summary: c"Creates an empty cuckoo filter for a capacity",
    complexity: c"O(1)",
    args: &[
        Arg::key(c"key"),
        Arg::integer(c"capacity"),
        Arg::integer(c"bucketsize").token(c"BUCKETSIZE").optional(),
        Arg::integer(c"maxiterations")
            .token(c"MAXITERATIONS")
            .optional(),
        Arg::integer(c"expansion").token(c"EXPANSION").optional(),
        Arg::double(c"error").token(c"ERROR").optional(),
    ],
};

/// CF.ADD key item
pub const ADD: Docs = Docs {
    summary: c"Adds an item to a cuckoo filter (another copy if it is there), creating the filter if it does not exist",
    complexity: ONE_ITEM,
    args: &[Arg::key(c"key"), Arg::string(c"item")],
};

/// CF.ADDNX key item
pub const ADDNX: Docs = Docs {
    summary: c"Adds an item to a cuckoo filter unless it may be there already",
    complexity: ONE_ITEM,
    args: &[Arg::key(c"key"), Arg::string(c"item")],
};

/// CF.INSERT key [CAPACITY capacity] [NOCREATE] ITEMS item [item ...]
pub const INSERT: Docs = Docs {
    summary:
        c"Adds items to a cuckoo filter, creating it with the given capacity if it does not exist",
    complexity: MANY_ITEMS,
    args: INSERT_ARGS,
};

/// CF.INSERTNX key [CAPACITY capacity] [NOCREATE] ITEMS item [item ...]
pub const INSERTNX: Docs = Docs {
    summary: c"Adds items to a cuckoo filter unless they may be there already, creating it if it does not exist",
    complexity: MANY_ITEMS,
    args: INSERT_ARGS,
};

const INSERT_ARGS: &[Arg] = &[
    Arg::key(c"key"),
    Arg::integer(c"capacity").token(c"CAPACITY").optional(),
    Arg::double(c"error").token(c"ERROR").optional(),
    Arg::pure_token(c"nocreate", c"NOCREATE").optional(),
    Arg::pure_token(c"items", c"ITEMS"),
    Arg::string(c"item").multiple(),
];

/// CF.EXISTS key item
pub const EXISTS: Docs = Docs {
    summary: c"Tells whether an item may be in a cuckoo filter",
    complexity: ONE_ITEM,
    args: &[Arg::key(c"key"), Arg::string(c"item")],
};

/// CF.MEXISTS key item [item ...]
pub const MEXISTS: Docs = Docs {
    summary: c"Tells, for each item, whether it may be in a cuckoo filter",
    complexity: MANY_ITEMS,
    args: &[Arg::key(c"key"), Arg::string(c"item").multiple()],
};

/// CF.COUNT key item
pub const COUNT: Docs = Docs {
    summary: c"Counts the copies of an item's fingerprint in its buckets of a cuckoo filter",
    complexity: ONE_ITEM,
    args: &[Arg::key(c"key"), Arg::string(c"item")],
};

/// CF.DEL key item
pub const DEL: Docs = Docs {
    summary: c"Removes one copy of an item from a cuckoo filter",
    complexity: c"O(b * f), then a compaction of at most 2^20 slots read and 2^16 buckets probed",
    args: &[Arg::key(c"key"), Arg::string(c"item")],
};

/// CF.COMPACT key
pub const COMPACT: Docs = Docs {
    summary: c"Moves fingerprints into older sub-filters of a cuckoo filter, freeing newer ones it empties",
    complexity: c"O(min(m, 2^20) + min(p, 2^16)) for m slots past the first sub-filter and p probes of older buckets",
    args: &[Arg::key(c"key")],
};

/// CF.INFO key
pub const INFO: Docs = Docs {
    summary: c"Returns the size, buckets, sub-filters, items, deletes, bucket size, expansion and max iterations of a cuckoo filter",
    complexity: c"O(1)",
    args: &[Arg::key(c"key")],
};

/// CF.DEBUG key
pub const DEBUG: Docs = Docs {
    summary: c"Describes a cuckoo filter in one line",
    complexity: c"O(1)",
    args: &[Arg::key(c"key")],
};

/// CF.SCANDUMP key iterator
pub const SCANDUMP: Docs = Docs {
    summary: c"Returns the next chunk of a cuckoo filter's bytes, to save it a chunk at a time",
    complexity: c"O(n) for a chunk of n bytes",
    args: &[Arg::key(c"key"), Arg::integer(c"iterator")],
};

/// CF.LOADCHUNK key iterator data
pub const LOADCHUNK: Docs = Docs {
    summary: c"Restores a chunk of a cuckoo filter saved with CF.SCANDUMP",
    complexity: c"O(n) for a chunk of n bytes",
    args: &[
        Arg::key(c"key"),
        Arg::integer(c"iterator"),
        Arg::string(c"data"),
    ],
};
