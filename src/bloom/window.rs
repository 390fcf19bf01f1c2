//! The windowed Bloom filters' time protocol: how a windowed filter's time travels, in one place.
//!
//! - A write to a windowed filter runs at the primary's clock (`Call::now`: the time the server
//!   took for the command where it keeps one, 7.2 and newer).
//! - It propagates as `BF.INSERT key CAPACITY c ERROR e EXPANSION n|NONSCALING WINDOW w AT t
//!   ITEMS item...` with the items it applied, so that a replica or an AOF replay makes the same
//!   parts with the same expiry (and builds the same filter if the key is missing there).
//! - A change of time alone (expired parts dropped by a write that added nothing, or by the sweep)
//!   propagates the same way with no item.
//! - `AT` is taken from a primary or the AOF only: a client cannot move a filter's time. A
//!   primary's stream is obeyed (its clock is the filter's). In an AOF being loaded, a time more
//!   than a window ahead of this server's clock (the clock stepped back since it was written) is
//!   taken as now, as the server's own windowed filters loaded from further ahead are brought
//!   back to its clock (`settle_clock`; a client's are refused).
//! - After a write that made or dropped a part, the filter is registered with the sweep
//!   (`crate::bloom::sweep`), which drops what expires if nothing writes to the key again.

use super::sweep;
use crate::error::BfError;
use crate::glue::background::Background;
use crate::glue::call::Call;
use crate::glue::key::{Access, FilterKey};
use crate::glue::Origin;
use crate::size::memory_usage;
use crate::stats;
use filters::bloom::window::{Windowed, WindowedShape};
use filters::bloom::Filter;
use filters::FilterError;
use std::ops::Range;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

/// The arguments after the key of a propagated windowed write at `now`, up to and including
/// `ITEMS` (the items it applied follow): the filter's creation spelled out, then `AT now ITEMS`.
fn time_change(shape: &WindowedShape, now: u64) -> TimeChange {
    TimeChange {
        creation: creation_words(shape),
        at: now.to_string(),
    }
}

/// Propagates a windowed write at `now` that applied the items at arguments `items` (none for a
/// change of time alone): `BF.INSERT key <creation> AT now ITEMS item...` (see [`time_change`]).
pub fn replicate_write(call: &Call, shape: &WindowedShape, now: u64, items: Range<usize>) {
    let change = time_change(shape, now);
    let mut made: Vec<&[u8]> = vec![call.args_key()];
    made.extend(change.words());
    call.replicate(c"BF.INSERT", &made, items);
}

/// What [`time_change`] gives: the creation words (shared) and the time.
struct TimeChange {
    creation: Arc<[String]>,
    at: String,
}

impl TimeChange {
    /// Every argument, as bytes.
    fn words(&self) -> impl Iterator<Item = &[u8]> {
        let creation = self.creation.iter().map(String::as_bytes);
        creation.chain([&b"AT"[..], self.at.as_bytes(), &b"ITEMS"[..]])
    }
}

/// The creation words of the last windowed shape a write propagated. Every write to a windowed
/// filter spells its creation out, and those words depend on the shape alone: made once per shape
/// in a row instead of every time (formatting them was a fifth of a windowed add's instructions).
static LAST_CREATION: Mutex<Option<(WindowedShape, Arc<[String]>)>> = Mutex::new(None);

/// The creation words of a windowed filter of `shape` (see `super::creation_words`).
fn creation_words(shape: &WindowedShape) -> Arc<[String]> {
    let mut last = LAST_CREATION.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((cached, words)) = last.as_ref() {
        if cached == shape {
            return Arc::clone(words);
        }
    }
    let words: Arc<[String]> = super::creation_words(
        shape.capacity,
        shape.error,
        shape.growth,
        Some(shape.window),
        shape.layout,
    )
    .into();
    *last = Some((*shape, Arc::clone(&words)));
    words
}

/// Checks that a time given with `AT` comes from a primary or the AOF.
pub fn check_at(call: &Call, at: Option<u64>) -> Result<(), BfError> {
    if at.is_some() && !call.is_replay() {
        return Err(BfError::TimeFromClient);
    }
    Ok(())
}

/// The time a windowed write happens at: `at` if given (a primary's, or the AOF's), else this
/// server's clock. An `at` more than a window ahead of the clock, in an AOF being loaded, was
/// written before the clock stepped back (no real write has such a time): it is taken as now, with
/// a warning, so that the write is neither lost nor held past its window.
pub fn write_time(call: &Call, at: Option<u64>, shape: &WindowedShape) -> u64 {
    static LAST_WARNING: AtomicU64 = AtomicU64::new(0);
    let now = call.now();
    match at {
        Some(at)
            if call.origin() == Origin::OwnData
                && at > now.saturating_add(shape.window.as_millis()) =>
        {
            if crate::glue::log::rarely(&LAST_WARNING, now) {
                crate::glue::log::warning(
                    call.ctx(),
                    "the AOF holds windowed writes from more than a window after this server's \
                     clock (did the clock step back?): they are applied at this clock's time",
                );
            }
            now
        }
        Some(at) => at,
        None => now,
    }
}

/// Refuses a windowed filter a client loads (a BF.LOADCHUNK header) from more than a window ahead
/// of this server's clock; the AOF's and a primary's pass, for [`settle_clock`] once loaded.
pub fn check_clock(call: &Call, windowed: &Windowed) -> Result<(), FilterError> {
    match call.origin() {
        Origin::Client => windowed.check_clock(call.now()),
        Origin::OwnData | Origin::Primary => Ok(()),
    }
}

/// Settles a windowed filter a command loaded whole (BF.LOADCHUNK's last chunk) against this
/// server's clock: the AOF's brought back, a primary's kept (`Windowed::settle_clock`). A
/// client's was checked at its header ([`check_clock`]): the last chunk completes it whatever the
/// clock did since, as the chunk is then propagated.
pub fn settle_clock(call: &Call, windowed: &mut Windowed) {
    let trust = match call.origin() {
        Origin::Client => return,
        origin => origin.clock_trust(),
    };
    let now = call.now();
    // Keeping or bringing back never refuses.
    if let Ok(settled) = windowed.settle_clock(now, trust) {
        if let Some(why) = crate::bloom::datatype::clock_warning(settled, now) {
            crate::glue::log::warning(call.ctx(), &why);
        }
    }
}

/// Registers the windowed filter at argument 1 with the sweep, if it has something to drop some
/// day.
pub fn register(call: &Call, filter: &Filter) {
    if let (Filter::Windowed(_), Some(due)) = (filter, filter.next_expiry()) {
        if filter.restoring().is_none() {
            let bg = Background::of_call(call);
            sweep::schedule(&bg, sweep::id_of(filter), bg.db(), call.args_key(), due);
        }
    }
}

/// The sweep's timer (see `crate::bloom::sweep`): sweeps the filters that are due.
pub fn on_timer(bg: &Background) {
    sweep::tick(bg, sweep_key);
}

/// Drops what has expired at `now` in windowed filter `id`, if key `name` of the selected
/// database holds it, and propagates that as a write would; when it next has something to drop.
fn sweep_key(bg: &Background, id: sweep::FilterId, name: &[u8], now: u64) -> sweep::Look {
    use sweep::Look;
    // Looked at for reading first: a key opened for writing counts as modified when it closes
    // (a client's WATCH on it would fail), so it is opened so only when there is work.
    {
        let key = bg.open(name, Access::Read);
        let Ok(Some(filter)) = key.filter() else {
            return Look::Elsewhere;
        };
        if sweep::id_of(filter) != id {
            return Look::Elsewhere;
        }
        // A filter being restored is registered again by its last chunk.
        let Filter::Windowed(windowed) = filter else {
            return Look::Swept(None);
        };
        if filter.restoring().is_some() {
            return Look::Swept(None);
        }
        if !filter.has_expired(now) && !has_legacy_ttl(&key, windowed) {
            return Look::Swept(filter.next_expiry());
        }
    }
    let mut key = bg.open(name, Access::Write);
    let Ok(Some(Filter::Windowed(windowed))) = key.filter() else {
        return Look::Elsewhere;
    };
    if has_legacy_ttl(&key, windowed) {
        key.persist();
        bg.replicate(c"PERSIST", &[name]);
    }
    let Ok(Some(filter)) = key.filter_mut() else {
        return Look::Elsewhere;
    };
    let Filter::Windowed(windowed) = filter else {
        return Look::Swept(None);
    };
    let shape = *windowed.shape();
    if filter.has_expired(now) {
        let before = memory_usage(filter);
        let expired = filter.expire(now);
        stats::generations_expired(expired.generations);
        stats::parts_swept(expired.parts);
        stats::filter_resized(before, filter);
        let words = time_change(&shape, now);
        let mut args: Vec<&[u8]> = vec![name];
        args.extend(words.words());
        bg.replicate(c"BF.INSERT", &args);
    }
    Look::Swept(filter.next_expiry())
}

/// True if the key still has the time to live the first release gave a windowed filter's key (its
/// newest generation's expiry). This release keeps windowed keys (an idle one stays an empty
/// windowed filter), and what a filter takes after the upgrade must outlive that time: a write
/// from a client, or the sweep, removes it and propagates `PERSIST` (see [`drop_legacy_ttl`]).
fn has_legacy_ttl(key: &FilterKey, windowed: &Windowed) -> bool {
    windowed
        .legacy_expiry()
        .is_some_and(|at| key.expires_at() == Some(at))
}

/// After a client's write to a windowed filter that has generations of the first release
/// (`legacy_expiry`, read before the write): removes the time to live that release gave its key,
/// if the key still has it, and propagates that.
pub fn drop_legacy_ttl(call: &Call, key: &mut FilterKey, legacy_expiry: Option<u64>) {
    let Some(at) = legacy_expiry else {
        return;
    };
    if call.origin() == Origin::Client && key.expires_at() == Some(at) {
        key.persist();
        call.replicate(c"PERSIST", &[call.args_key()], 0..0);
    }
}
