//! `BF.EXISTS key item`: whether the item may have been added.

use crate::error::BfError;
use crate::glue::call::Call;
use crate::glue::key::{Access, FilterKey};

/// BF.EXISTS: false for a missing key.
pub fn exists(call: &Call) -> Result<(), BfError> {
    let item = super::Args::get(&call.args(), 2);
    let key = FilterKey::open(call, 1, Access::Read);
    let found = key.filter()?.is_some_and(|chain| chain.contains(item));
    call.reply_bool(found);
    Ok(())
}
