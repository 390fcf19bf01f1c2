//! Idle windowed Bloom filters forget too. A write to a windowed filter drops its expired parts itself;
//! for a key nothing writes to any more, the sweep does: within about a second of a part's expiry
//! it drops it, returns its memory, and propagates the change to replicas and the AOF exactly as
//! a write would (`BF.INSERT key ... AT now ITEMS`, with no item). The key itself stays, as an
//! empty windowed filter once everything has expired, so that a later `BF.ADD` still forgets on
//! schedule (users who want an idle filter gone set their own EXPIRE, or DEL it).
//!
//! The module keeps a registry of the windowed filters it knows of, each by its value's address
//! (the same while the filter lives, whatever its key is called), with where it was last seen
//! (database and key name) and the time its oldest part expires. Only the filters' own ways in and
//! out touch it, so that the server's other keys pay nothing for it (the module listens to no
//! keyspace or server event):
//!
//! - a write registers its key when it makes or drops a part; RDB loading (at start, `DEBUG
//!   RELOAD`, a replica's full sync) and `RESTORE` register what they read, under the key and
//!   database the server names to the loader; `COPY` registers the copy (its database is named
//!   from Redis 7.2 on; before, the source's is taken);
//! - a filter freed (`DEL`, `UNLINK`, expiry, eviction, overwritten, flushed) leaves the registry
//!   in the type's free callback, on whichever thread frees it;
//! - a filter that moved without a command of this module (`RENAME`, `MOVE`, `SWAPDB`, `COPY ...
//!   DB` before Redis 7.2) is looked for when it is due: first under the same name in every
//!   database, then by a walk over the keys ([`SCAN_KEYS`] per look, a look each millisecond),
//!   which only a moved filter starts.
//!
//! A timer looks at the registry at most a second after its earliest entry is due. A filter the
//! registry never heard of is still swept by its next write. Only a primary that is not loading
//! writes; a replica keeps its registry (fed by the writes it replays and the data it loads) for
//! the day it is promoted.

use crate::glue::background::{self, Background, ScanCursor};
use filters::bloom::Filter;
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

/// The longest the timer waits between two looks at the registry, in milliseconds.
const MAX_DELAY: u64 = 1000;
/// The most keys one look sweeps (the rest wait for the next, a millisecond later).
const BATCH: usize = 1000;
/// The most keys one look walks over when it searches for filters that moved (the walk goes on
/// a millisecond later).
pub const SCAN_KEYS: usize = 1000;

/// A windowed filter, by the address of its value: what the server holds in the key, which
/// stays the same while the filter lives, whatever its key's name or database.
pub type FilterId = usize;

/// How the sweep knows `filter`: the address of the value its key holds.
pub fn id_of(filter: &Filter) -> FilterId {
    std::ptr::from_ref(filter) as usize
}

/// What the registry knows of one windowed filter.
#[derive(Debug, Clone, PartialEq)]
struct Entry {
    /// When it next has a part to drop.
    due: u64,
    /// The database it was last seen in.
    db: i32,
    /// The key it was last seen under; `None` if the server did not name it.
    name: Option<Vec<u8>>,
    /// It was not where it was last seen when it was due: the walk over the keys looks for it.
    lost: bool,
}

/// The windowed filters known to this server: where each was last seen and when it next has a
/// part to drop.
#[derive(Debug, Default)]
pub struct Registry {
    entries: BTreeMap<FilterId, Entry>,
    /// The entries that are not lost, by due time.
    by_due: BTreeSet<(u64, FilterId)>,
}

impl Registry {
    /// An empty registry.
    pub const fn new() -> Registry {
        Registry {
            entries: BTreeMap::new(),
            by_due: BTreeSet::new(),
        }
    }

    /// Notes that filter `id`, seen as key `name` of database `db` (`None`: a key the server did
    /// not name, which the walk will find), has something to drop at `due`. A known filter takes
    /// the new place; an earlier time already noted stays (the sweep then finds nothing yet, and
    /// notes the real time).
    pub fn schedule(&mut self, id: FilterId, db: i32, name: Option<&[u8]>, due: u64) {
        let due = match self.entries.get(&id) {
            Some(known) => {
                self.by_due.remove(&(known.due, id));
                if known.lost {
                    due
                } else {
                    known.due.min(due)
                }
            }
            None => due,
        };
        let lost = name.is_none();
        self.entries.insert(
            id,
            Entry {
                due,
                db,
                name: name.map(<[u8]>::to_vec),
                lost,
            },
        );
        if !lost {
            self.by_due.insert((due, id));
        }
    }

    /// The database filter `id` was last seen in.
    pub fn db_of(&self, id: FilterId) -> Option<i32> {
        self.entries.get(&id).map(|entry| entry.db)
    }

    /// The earliest time something is due.
    pub fn next_due(&self) -> Option<u64> {
        self.by_due.first().map(|(due, _)| *due)
    }

    /// Takes out up to `limit` filters due at `now`, earliest first, with where each was last
    /// seen. They stay known (a free still forgets them) until [`Registry::reschedule`],
    /// [`Registry::moved`], [`Registry::lose`] or [`Registry::forget`] says what became of them.
    pub fn take_due(&mut self, now: u64, limit: usize) -> Vec<(FilterId, i32, Option<Vec<u8>>)> {
        let mut taken = Vec::new();
        while taken.len() < limit {
            match self.by_due.first() {
                Some(&(due, _)) if due <= now => {}
                _ => break,
            }
            if let Some((_, id)) = self.by_due.pop_first() {
                if let Some(entry) = self.entries.get(&id) {
                    taken.push((id, entry.db, entry.name.clone()));
                }
            }
        }
        taken
    }

    /// Filter `id`, taken out and found where it was, next has something to drop at `due`.
    pub fn reschedule(&mut self, id: FilterId, due: u64) {
        if let Some(entry) = self.entries.get_mut(&id) {
            self.by_due.remove(&(entry.due, id));
            entry.due = due;
            entry.lost = false;
            self.by_due.insert((due, id));
        }
    }

    /// Filter `id` is key `name` of database `db` now, and next has something to drop at `due`
    /// (`now` to sweep it at the next look).
    pub fn moved(&mut self, id: FilterId, db: i32, name: &[u8], due: u64) {
        if let Some(entry) = self.entries.get_mut(&id) {
            self.by_due.remove(&(entry.due, id));
            *entry = Entry {
                due,
                db,
                name: Some(name.to_vec()),
                lost: false,
            };
            self.by_due.insert((due, id));
        }
    }

    /// Filter `id`, taken out, was not where it was last seen: the walk over the keys looks for
    /// it (if it is still alive: a free forgets it).
    pub fn lose(&mut self, id: FilterId) {
        if let Some(entry) = self.entries.get_mut(&id) {
            self.by_due.remove(&(entry.due, id));
            entry.lost = true;
        }
    }

    /// The filters the walk looks for.
    pub fn lost(&self) -> BTreeSet<FilterId> {
        let lost = self.entries.iter().filter(|(_, entry)| entry.lost);
        lost.map(|(id, _)| *id).collect()
    }

    /// The walk found lost filter `id` as key `name` of database `db`: it is swept at the next
    /// look if it is due.
    pub fn found(&mut self, id: FilterId, db: i32, name: &[u8]) {
        if let Some(entry) = self.entries.get(&id).filter(|entry| entry.lost) {
            let due = entry.due;
            self.moved(id, db, name, due);
        }
    }

    /// Forgets filter `id` (it was freed, or has nothing left to drop).
    pub fn forget(&mut self, id: FilterId) {
        if let Some(entry) = self.entries.remove(&id) {
            self.by_due.remove(&(entry.due, id));
        }
    }

    /// Filters registered.
    pub fn len(&self) -> usize {
        self.entries.len()
    }
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry::new());
/// True while a timer is pending: it re-arms itself as long as the registry has entries.
static ARMED: AtomicBool = AtomicBool::new(false);
/// Tells `INFO bf` how many filters the registry holds.
fn count(registry: &Registry) {
    crate::stats::sweep_keys(registry.len());
}

/// The registry. Never held while a key is opened: opening one may free a filter (an expired
/// key), whose free callback takes the registry too.
fn registry() -> MutexGuard<'static, Registry> {
    // The registry holds no invariant a panic could break halfway: use it as it is.
    REGISTRY
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Registers windowed filter `id`, key `name` of database `db`, which next has something to drop
/// at `due`, and makes sure the timer will look at it.
pub fn schedule(bg: &Background, id: FilterId, db: i32, name: &[u8], due: u64) {
    let mut registry = registry();
    registry.schedule(id, db, Some(name), due);
    count(&registry);
    drop(registry);
    arm(bg, due);
}

/// Registers windowed filter `id`, which came into a key without a command of this module and
/// next has something to drop at `due`: loaded (RDB, RESTORE: the server names its key and
/// database) or copied from filter `copied_from` (COPY: the server names the key, and from Redis
/// 7.2 on its database; before, the source's is taken, and a copy into another database is looked
/// for when it is due). Without `bg` (COPY, which has no context to start a timer with) the timer
/// is already running: the copy's source has the same parts to drop, so it is registered.
pub fn arrived(
    bg: Option<&Background>,
    id: FilterId,
    place: (Option<i32>, Option<&[u8]>),
    copied_from: Option<FilterId>,
    due: u64,
) {
    let mut registry = registry();
    let (db, name) = place;
    let db = db
        .or_else(|| copied_from.and_then(|source| registry.db_of(source)))
        .unwrap_or(0);
    registry.schedule(id, db, name, due);
    count(&registry);
    drop(registry);
    if let Some(bg) = bg {
        arm(bg, due);
    }
}

/// Forgets windowed filter `id`: it is being freed (on the main thread or a lazy-free one).
pub fn forget(id: FilterId) {
    let mut registry = registry();
    registry.forget(id);
    count(&registry);
}

/// Starts the timer (if none is pending) for `due`, at most [`MAX_DELAY`] from now.
fn arm(bg: &Background, due: u64) {
    arm_in(bg, due.saturating_sub(background::now()));
}

/// Starts the timer (if none is pending) to fire in `delay` milliseconds, from 1 to
/// [`MAX_DELAY`].
fn arm_in(bg: &Background, delay: u64) {
    if !ARMED.swap(true, Ordering::Relaxed) {
        bg.start_timer(delay.clamp(1, MAX_DELAY));
    }
}

/// What [`SweepOne`] found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Look {
    /// The key does not hold the filter.
    Elsewhere,
    /// The key holds it: what expired was dropped; when it next has something to drop, if ever.
    Swept(Option<u64>),
}

/// Sweeps one filter: given the filter, its key's name (in the selected database) and the time,
/// drops what expired there (and propagates it) if the key holds that filter.
pub type SweepOne = fn(&Background, FilterId, &[u8], u64) -> Look;

/// The timer's work: sweeps the filters that are due with `sweep_one` (on a primary), registers
/// them again for their next expiry, looks for those that moved, then re-arms.
pub fn tick(bg: &Background, sweep_one: SweepOne) {
    ARMED.store(false, Ordering::Relaxed);
    if !bg.may_write() {
        // A replica (or a server loading) keeps its entries, due or not, and looks again later:
        // they are its primary's to sweep.
        if registry().len() > 0 {
            arm_in(bg, MAX_DELAY);
        }
        return;
    }
    let now = background::now();
    let due = registry().take_due(now, BATCH);
    for (id, db, name) in due {
        let Some(name) = name else {
            registry().lose(id);
            continue;
        };
        match find_by_name(bg, id, db, &name, now, sweep_one) {
            Some((at, Some(next))) if at == db => registry().reschedule(id, next),
            Some((at, Some(next))) => registry().moved(id, at, &name, next),
            Some((_, None)) => registry().forget(id),
            None => registry().lose(id),
        }
    }
    let walking = walk(bg, now);
    let next = {
        let registry = registry();
        count(&registry);
        registry.next_due()
    };
    if walking {
        arm_in(bg, 1);
    } else if let Some(next) = next {
        arm(bg, next);
    } else if registry().len() > 0 {
        // Only lost filters: the next walk, a second on.
        arm_in(bg, MAX_DELAY);
    }
}

/// Sweeps filter `id` as key `name` of database `db`, or of any other database (MOVE, SWAPDB, a
/// COPY into another database): the database it was in and its next time, or `None` if no
/// database holds it under that name.
fn find_by_name(
    bg: &Background,
    id: FilterId,
    db: i32,
    name: &[u8],
    now: u64,
    sweep_one: SweepOne,
) -> Option<(i32, Option<u64>)> {
    let others = (0..).filter(|&other| other != db);
    for candidate in std::iter::once(db).chain(others) {
        if !bg.select_db(candidate) {
            if candidate == db {
                continue;
            }
            return None;
        }
        if let Look::Swept(next) = sweep_one(bg, id, name, now) {
            return Some((candidate, next));
        }
    }
    None
}

/// Where a walk over the keys for lost filters stands: the database, and the cursor within it.
struct Walk {
    db: i32,
    cursor: ScanCursor,
}

thread_local! {
    /// The walk under way, if any (the timer runs on the server's main thread only).
    static WALK: RefCell<Option<Walk>> = const { RefCell::new(None) };
    /// No new walk starts before this time: one that found nothing waits a second.
    static NEXT_WALK: Cell<u64> = const { Cell::new(0) };
}

/// Goes on with the walk over every database's keys that looks for lost filters (starting one if
/// there are some), for up to [`SCAN_KEYS`] keys. True if it is not over.
fn walk(bg: &Background, now: u64) -> bool {
    let lost = registry().lost();
    WALK.with_borrow_mut(|walk| {
        if lost.is_empty() {
            *walk = None;
            return false;
        }
        if walk.is_none() && now >= NEXT_WALK.get() {
            *walk = Some(Walk {
                db: 0,
                cursor: ScanCursor::new(),
            });
        }
        let Some(state) = walk.as_mut() else {
            return false;
        };
        let mut budget = SCAN_KEYS;
        let mut found = Vec::new();
        let mut over = false;
        while budget > 0 {
            if !bg.select_db(state.db) {
                over = true;
                break;
            }
            let db = state.db;
            let more = bg.scan::<Filter>(&mut state.cursor, &mut |name, value| {
                budget = budget.saturating_sub(1);
                if let Some(id) = value.filter(|id| lost.contains(id)) {
                    found.push((id, db, name.to_vec()));
                }
            });
            if !more {
                state.db += 1;
                state.cursor.restart();
            }
        }
        {
            let mut registry = registry();
            for (id, db, name) in &found {
                registry.found(*id, *db, name);
            }
        }
        if over {
            *walk = None;
            NEXT_WALK.set(now + MAX_DELAY);
        }
        !over
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filter_is_registered_once_at_its_earliest_time_where_it_was_last_seen() {
        let mut registry = Registry::new();
        registry.schedule(1, 0, Some(b"a"), 500);
        registry.schedule(1, 0, Some(b"a"), 700);
        registry.schedule(1, 2, Some(b"b"), 300);
        registry.schedule(2, 0, Some(b"a"), 400);
        registry.schedule(3, 0, Some(b"c"), 600);
        assert_eq!(registry.len(), 3);
        assert_eq!(registry.next_due(), Some(300));
        assert_eq!(registry.take_due(299, 10), vec![]);
        assert_eq!(
            registry.take_due(500, 10),
            vec![(1, 2, Some(b"b".to_vec())), (2, 0, Some(b"a".to_vec()))]
        );
        // Taken out, still known until the sweep says what became of them.
        assert_eq!(registry.len(), 3);
        assert_eq!(registry.next_due(), Some(600));
        registry.reschedule(1, 900);
        registry.forget(2);
        assert_eq!(registry.len(), 2);
        assert_eq!(registry.take_due(1000, 10).len(), 2);
    }

    #[test]
    fn a_look_takes_at_most_its_batch() {
        let mut registry = Registry::new();
        for i in 0..10u64 {
            registry.schedule(i as usize + 1, 0, Some(&i.to_le_bytes()), i);
        }
        assert_eq!(registry.take_due(100, 4).len(), 4);
        assert_eq!(registry.next_due(), Some(4));
    }

    #[test]
    fn a_freed_filter_is_forgotten_even_while_it_is_taken_out_or_lost() {
        let mut registry = Registry::new();
        registry.schedule(1, 0, Some(b"a"), 10);
        registry.schedule(2, 0, Some(b"b"), 20);
        registry.schedule(3, 0, None, 30);
        assert_eq!(registry.lost(), BTreeSet::from([3]));
        assert_eq!(registry.take_due(15, 10), vec![(1, 0, Some(b"a".to_vec()))]);
        registry.forget(1);
        registry.forget(3);
        // What the sweep says of a filter freed meanwhile changes nothing.
        registry.reschedule(1, 50);
        registry.lose(1);
        registry.found(3, 0, b"c");
        assert_eq!(registry.len(), 1);
        assert_eq!(registry.lost(), BTreeSet::new());
        assert_eq!(registry.next_due(), Some(20));
    }

    #[test]
    fn a_lost_filter_waits_for_the_walk_and_keeps_its_time() {
        let mut registry = Registry::new();
        registry.schedule(1, 0, Some(b"a"), 10);
        assert_eq!(registry.take_due(10, 10).len(), 1);
        registry.lose(1);
        assert_eq!(registry.next_due(), None);
        assert_eq!(registry.lost(), BTreeSet::from([1]));
        // A write under its new name finds it too, with the write's time.
        registry.schedule(1, 3, Some(b"b"), 40);
        assert_eq!(registry.lost(), BTreeSet::new());
        assert_eq!(registry.take_due(40, 10), vec![(1, 3, Some(b"b".to_vec()))]);
        registry.lose(1);
        registry.found(1, 1, b"c");
        assert_eq!(registry.take_due(40, 10), vec![(1, 1, Some(b"c".to_vec()))]);
        registry.moved(1, 2, b"d", 70);
        assert_eq!(registry.db_of(1), Some(2));
        assert_eq!(registry.next_due(), Some(70));
    }
}
