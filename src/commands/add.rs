//! `BF.ADD key item`: adds one item, creating a filter with the server's defaults if the key is
//! missing.

use crate::config;
use crate::error::BfError;
use crate::glue::call::Call;
use crate::glue::key::{Access, FilterKey};
use bf_filter::{Chain, Growth};

/// BF.ADD: true if the item was new, false if the filter (maybe) held it already.
pub fn add(call: &Call) -> Result<(), BfError> {
    let item = super::Args::get(&call.args(), 2);
    let limit = config::max_filter_bytes();
    let mut key = FilterKey::open(call, 1, Access::Write);
    let added = match key.filter_mut()? {
        Some(chain) => chain.add(item, limit),
        None => {
            // Build and fill the new filter before it enters the keyspace, so an error leaves
            // the key missing, as it was.
            let defaults = config::defaults();
            let growth = Growth::Scaling {
                expansion: defaults.expansion,
            };
            let mut chain = Chain::new(defaults.capacity, defaults.error, growth, limit)
                .map_err(|err| BfError::from_filter(err, limit))?;
            let added = chain.add(item, limit);
            if added.is_ok() {
                key.create(chain)?;
            }
            added
        }
    }
    .map_err(|err| BfError::from_filter(err, limit))?;
    call.reply_bool(added);
    if added {
        call.replicate_verbatim();
    }
    Ok(())
}
