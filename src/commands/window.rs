//! The windowed time protocol: how a windowed filter's time travels, in one place.
//!
//! - A write to a windowed filter runs at the primary's clock (`Call::now`: the time the server
//!   took for the command where it keeps one, 7.2 and newer).
//! - It propagates as `BF.INSERT key CAPACITY c ERROR e EXPANSION n|NONSCALING WINDOW w AT t
//!   ITEMS item...` with the items it applied, so that a replica or an AOF replay makes the same
//!   parts with the same expiry (and builds the same filter if the key is missing there).
//! - A change of time alone (expired parts dropped by a write that added nothing, or by the sweep)
//!   propagates the same way with no item.
//! - `AT` is taken from a primary or the AOF only: a client cannot move a filter's time. An AOF
//!   being loaded is checked as every loader is: a time more than a window ahead of this
//!   server's clock is refused (a primary's stream is obeyed: its clock is the filter's).
//! - After a write that made or dropped a part, the key is registered with the sweep
//!   (`crate::sweep`), which drops what expires if nothing writes to the key again.

use super::add::Creation;
use crate::error::BfError;
use crate::glue::background::Background;
use crate::glue::call::Call;
use bf_filter::window::WindowedShape;
use bf_filter::Filter;

/// The arguments after the key of a propagated windowed write at `now`, up to and including
/// `ITEMS` (the items it applied follow).
pub fn time_change(shape: &WindowedShape, now: u64) -> Vec<String> {
    let mut words = Creation::of_windowed(shape).words();
    words.extend(["AT".to_string(), now.to_string(), "ITEMS".to_string()]);
    words
}

/// Checks that a time given with `AT` comes from a primary or the AOF.
pub fn check_at(call: &Call, at: Option<u64>) -> Result<(), BfError> {
    if at.is_some() && !call.is_replay() {
        return Err(BfError::TimeFromClient);
    }
    Ok(())
}

/// True if `at`, read from an AOF being loaded, is more than a window ahead of this server's
/// clock: such a time could come from no real write (see `bf_filter::window`, `check_clock`).
pub fn time_ahead(call: &Call, at: Option<u64>, shape: &WindowedShape) -> bool {
    at.is_some_and(|at| {
        !call.is_from_primary() && at > call.now().saturating_add(shape.window.as_millis())
    })
}

/// Registers the key at argument 1 with the sweep, if it holds a windowed filter with something
/// to drop some day.
pub fn register(call: &Call, filter: &Filter) {
    if let (Filter::Windowed(_), Some(due)) = (filter, filter.next_expiry()) {
        if filter.restoring().is_none() {
            // SAFETY: the command's own context, valid for the call.
            let bg = unsafe { Background::new(call.ctx()) };
            crate::sweep::schedule(&bg, bg.db(), call.args_key(), due);
        }
    }
}
