//! The `CF.*` commands: cuckoo filters, which can forget an item. The same rooms as the `BF.*`
//! family, in the same order: parse every argument into a typed request, open the key
//! (`Key<Cuckoo>`: missing, ours or WRONGTYPE), apply in the core (`bf_filter::cuckoo`), reply,
//! propagate what changed (a creation spelled out with every parameter), notify, count.
//!
//! - [`create`]: `CF.RESERVE` and the creation every add may make;
//! - [`add`]: `CF.ADD`, `CF.ADDNX`, `CF.INSERT`, `CF.INSERTNX`;
//! - [`read`]: `CF.EXISTS`, `CF.MEXISTS`, `CF.COUNT`, `CF.INFO`, `CF.DEBUG`;
//! - [`delete`]: `CF.DEL`, `CF.COMPACT`;
//! - [`dump`]: `CF.SCANDUMP`, `CF.LOADCHUNK`;
//! - [`docs`]: what `COMMAND DOCS` says of them.

pub mod add;
pub mod create;
pub mod delete;
pub mod docs;
pub mod dump;
pub mod read;

use crate::error::BfError;
use crate::glue::call::Call;
use crate::glue::key::{Access, Key};
use crate::glue::value::Value;
use bf_filter::cuckoo::Cuckoo;

/// A key that should hold a cuckoo filter.
pub type CuckooKey = Key<Cuckoo>;

/// Opens the key of the call (argument 1).
pub fn open(call: &Call, access: Access) -> CuckooKey {
    Key::open(call, 1, access)
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
pub fn limits(call: &Call, existing: usize) -> bf_filter::cuckoo::Limits {
    if call.is_replay() {
        return bf_filter::cuckoo::Limits::NONE;
    }
    let limit = call.size_limit().growing(existing as u64);
    crate::config::cuckoo_limits(limit.bytes())
}
