//! Cuckoo filters in the module, which can forget an item: the `CF.*` commands and the
//! `MBbloomCF` data type. The same rooms as the `BF.*`
//! family, in the same order: parse every argument into a typed request, open the key
//! (`Key<Cuckoo>`: missing, ours or WRONGTYPE), apply in the core (`filters::cuckoo`), reply,
//! propagate what changed (a creation spelled out with every parameter), notify, count.
//!
//! - [`create`]: `CF.RESERVE` and the creation every add may make;
//! - [`add`]: `CF.ADD`, `CF.ADDNX`, `CF.INSERT`, `CF.INSERTNX`;
//! - [`read`]: `CF.EXISTS`, `CF.MEXISTS`, `CF.COUNT`, `CF.INFO`, `CF.DEBUG`;
//! - [`delete`]: `CF.DEL`, `CF.COMPACT`;
//! - [`dump`]: `CF.SCANDUMP`, `CF.LOADCHUNK`;
//! - [`docs`]: what `COMMAND DOCS` says of them;
//! - [`datatype`]: what the `MBbloomCF` type reads and writes.

pub mod add;
pub mod create;
pub mod datatype;
pub mod delete;
pub mod docs;
pub mod dump;
pub mod read;

use crate::error::BfError;
use crate::glue::call::Call;
use crate::glue::key::{Access, Key};
use crate::glue::value::Value;
use crate::hint::{self, Hints};
use filters::cuckoo::{Cuckoo, Locator, Print};

/// A key that should hold a cuckoo filter.
pub type CuckooKey = Key<Cuckoo>;

/// Opens the key of the call (argument 1).
pub fn open(call: &Call, access: Access) -> CuckooKey {
    Key::open(call, 1, access)
}

/// Where the big filters of recent single-item commands (CF.ADD, CF.ADDNX, CF.EXISTS, CF.DEL)
/// lie.
static HINTS: Hints<4> = Hints::new();

/// A single-item command's item, hashed before its key is opened if a recent such command kept
/// where this key's filter lies (a big one): see [`crate::hint`].
pub struct Early {
    /// The key's tag, if it was made (0 if not).
    tag: u64,
    /// The item's print, made as the hinted filter hashes, if a hint was kept for the key.
    print: Option<Print>,
}

impl Early {
    /// Before the key is opened: if a hint is kept for this key, hashes `item` as its filter does
    /// and asks for its bucket lines there. One load and nothing more while no big filter has
    /// been used.
    #[inline(always)]
    pub fn hash(call: &Call, item: &[u8]) -> Early {
        if !HINTS.in_use() {
            return Early {
                tag: 0,
                print: None,
            };
        }
        let tag = hint::tag(call);
        let print = HINTS
            .get(tag)
            .map(|words| Locator::from_words(words).prefetch(item));
        Early { tag, print }
    }

    /// The item's print for `filter` (the early one where it was hashed as the filter hashes);
    /// keeps where the filter lies for the next command on its key if it is big enough to wait
    /// for, forgets it if not. Kept before the add or delete: after one that grows the filter (or
    /// a compaction that frees its newest sub-filter), the next command's prefetch is wasted once.
    #[inline(always)]
    pub fn print(self, call: &Call, filter: &Cuckoo, item: &[u8]) -> Print {
        let locator = filter.locator();
        if locator.is_worth_keeping() {
            let tag = match self.tag {
                0 => hint::tag(call),
                tag => tag,
            };
            HINTS.keep(tag, locator.to_words());
        } else if self.tag != 0 {
            HINTS.forget(self.tag);
        }
        filter.print_with(item, self.print)
    }
}

/// Checks that a filter answers adds and lookups: it is not being rebuilt by CF.LOADCHUNK.
pub fn in_use(filter: &Cuckoo) -> Result<(), BfError> {
    match filter.restoring() {
        None => Ok(()),
        Some(loaded) => Err(BfError::BeingRestored {
            loadchunk: <Cuckoo as Value>::LOADCHUNK,
            loaded,
            total: filter.dump_len(),
        }),
    }
}

/// The limits a write of this call works within: a client's are `cf-max-expansions` and the size
/// limit (`bf.max-filter-bytes`, `maxmemory`) for a filter of `existing` bytes; a primary's or the
/// AOF's, none but the format's (they apply as they did where they were first run).
pub fn limits(call: &Call, existing: usize) -> filters::cuckoo::Limits {
    if call.is_replay() {
        return filters::cuckoo::Limits::NONE;
    }
    let limit = call.size_limit().growing(existing as u64);
    crate::config::cuckoo_limits(limit.bytes())
}
