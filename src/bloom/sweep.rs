//! Idle windowed Bloom filters forget too. A write to a windowed filter drops its expired parts itself;
//! for a key nothing writes to any more, the sweep does: within about a second of a part's expiry
//! it drops it, returns its memory, and propagates the change to replicas and the AOF exactly as
//! a write would (`BF.INSERT key ... AT now ITEMS`, with no item). The key itself stays, as an
//! empty windowed filter once everything has expired, so that a later `BF.ADD` still forgets on
//! schedule (users who want an idle filter gone set their own EXPIRE, or DEL it).
//!
//! The module keeps a registry of the windowed keys it knows of, each with the time its oldest
//! part expires. A write registers its key when it makes or drops a part, and so do the ways a
//! filter enters a key without a command of this module: RDB loading (at start, `DEBUG RELOAD`, a
//! replica's full sync), `RESTORE`, `COPY`, `RENAME` and `MOVE`; `SWAPDB` swaps the registry's
//! databases; a key deleted, expired, evicted, renamed or moved away, or flushed, is forgotten. A
//! timer looks at the registry at most a second after its earliest entry is due. An
//! entry whose key no longer holds a windowed filter is forgotten; a filter the registry never
//! heard of is still swept by its next write. Only a primary that is not loading writes; a replica
//! keeps its registry (fed by the writes it replays) for the day it is promoted.

use crate::glue::background::{self, Background};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

/// The longest the timer waits between two looks at the registry, in milliseconds.
const MAX_DELAY: u64 = 1000;
/// The most keys one look sweeps (the rest wait for the next, a millisecond later).
const BATCH: usize = 1000;

/// The windowed keys known to this server, by database and name, with the time each next has a
/// part to drop.
#[derive(Debug, Default)]
pub struct Registry {
    by_due: BTreeSet<(u64, i32, Vec<u8>)>,
    by_key: BTreeMap<(i32, Vec<u8>), u64>,
}

impl Registry {
    /// An empty registry.
    pub const fn new() -> Registry {
        Registry {
            by_due: BTreeSet::new(),
            by_key: BTreeMap::new(),
        }
    }

    /// Notes that `key` of database `db` has something to drop at `due`; an earlier time already
    /// noted stays (the sweep then finds nothing yet, and notes the real time).
    pub fn schedule(&mut self, db: i32, key: &[u8], due: u64) {
        let entry = (db, key.to_vec());
        if let Some(&known) = self.by_key.get(&entry) {
            if known <= due {
                return;
            }
            self.by_due.remove(&(known, db, entry.1.clone()));
        }
        self.by_due.insert((due, db, entry.1.clone()));
        self.by_key.insert(entry, due);
    }

    /// The earliest time something is due.
    pub fn next_due(&self) -> Option<u64> {
        self.by_due.first().map(|(due, _, _)| *due)
    }

    /// Takes out up to `limit` keys due at `now`, earliest first.
    pub fn take_due(&mut self, now: u64, limit: usize) -> Vec<(i32, Vec<u8>)> {
        let mut taken = Vec::new();
        while taken.len() < limit {
            match self.by_due.first() {
                Some((due, _, _)) if *due <= now => {}
                _ => break,
            }
            if let Some((_, db, key)) = self.by_due.pop_first() {
                self.by_key.remove(&(db, key.clone()));
                taken.push((db, key));
            }
        }
        taken
    }

    /// Forgets `key` of database `db` (it was deleted, or moved away).
    pub fn remove(&mut self, db: i32, key: &[u8]) {
        if self.by_key.is_empty() {
            return;
        }
        if let Some(due) = self.by_key.remove(&(db, key.to_vec())) {
            self.by_due.remove(&(due, db, key.to_vec()));
        }
    }

    /// Forgets every key of database `db`, or of every database if `db` is `None` (FLUSHDB,
    /// FLUSHALL).
    pub fn clear(&mut self, db: Option<i32>) {
        match db {
            None => *self = Registry::new(),
            Some(db) => {
                self.by_key.retain(|(key_db, _), _| *key_db != db);
                self.by_due.retain(|(_, key_db, _)| *key_db != db);
            }
        }
    }

    /// Databases `a` and `b` swapped their keys (SWAPDB).
    pub fn swap_db(&mut self, a: i32, b: i32) {
        let swap = |db: i32| match db {
            db if db == a => b,
            db if db == b => a,
            db => db,
        };
        let entries: Vec<(u64, i32, Vec<u8>)> = std::mem::take(&mut self.by_due)
            .into_iter()
            .map(|(due, db, key)| (due, swap(db), key))
            .collect();
        self.by_key = entries
            .iter()
            .map(|(due, db, key)| ((*db, key.clone()), *due))
            .collect();
        self.by_due = entries.into_iter().collect();
    }

    /// Keys registered.
    pub fn len(&self) -> usize {
        self.by_key.len()
    }
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry::new());
/// True while a timer is pending: it re-arms itself as long as the registry has entries.
static ARMED: AtomicBool = AtomicBool::new(false);
/// Tells `INFO bf` how many keys the registry holds.
fn count(registry: &Registry) {
    crate::stats::sweep_keys(registry.len());
}

fn registry() -> MutexGuard<'static, Registry> {
    // The registry holds no invariant a panic could break halfway: use it as it is.
    REGISTRY
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Registers `key` of database `db`, which holds a windowed filter that next has something to
/// drop at `due`, and makes sure the timer will look at it.
pub fn schedule(bg: &Background, db: i32, key: &[u8], due: u64) {
    let mut registry = registry();
    registry.schedule(db, key, due);
    count(&registry);
    drop(registry);
    arm(bg, due);
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

/// Sweeps one key: given the database, the key's name and the time, drops what expired there
/// (and propagates it); the time the key next has something to drop, if it is still a windowed
/// filter.
pub type SweepOne = fn(&Background, i32, &[u8], u64) -> Option<u64>;

/// The timer's work: sweeps the keys that are due with `sweep_one` (on a primary), registers
/// them again for their next expiry, then re-arms.
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
    for (db, key) in due {
        if !bg.select_db(db) {
            continue;
        }
        if let Some(next) = sweep_one(bg, db, &key, now) {
            registry().schedule(db, &key, next);
        }
    }
    let next = {
        let registry = registry();
        count(&registry);
        registry.next_due()
    };
    if let Some(next) = next {
        arm(bg, next);
    }
}

/// SWAPDB swapped databases `a` and `b`.
pub fn on_swapdb(a: i32, b: i32) {
    registry().swap_db(a, b);
}

/// `key` of database `db` was deleted, expired, evicted, or renamed or moved away.
pub fn forget(db: i32, key: &[u8]) {
    let mut registry = registry();
    registry.remove(db, key);
    count(&registry);
}

/// FLUSHDB emptied database `db` (FLUSHALL: every database, `db` -1).
pub fn on_flush(db: i32) {
    let mut registry = registry();
    registry.clear((db >= 0).then_some(db));
    count(&registry);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_registered_once_at_its_earliest_time() {
        let mut registry = Registry::new();
        registry.schedule(0, b"a", 500);
        registry.schedule(0, b"a", 700);
        registry.schedule(0, b"a", 300);
        registry.schedule(1, b"a", 400);
        registry.schedule(0, b"b", 600);
        assert_eq!(registry.len(), 3);
        assert_eq!(registry.next_due(), Some(300));
        assert_eq!(registry.take_due(299, 10), vec![]);
        assert_eq!(
            registry.take_due(500, 10),
            vec![(0, b"a".to_vec()), (1, b"a".to_vec())]
        );
        assert_eq!(registry.len(), 1);
        assert_eq!(registry.next_due(), Some(600));
    }

    #[test]
    fn a_look_takes_at_most_its_batch() {
        let mut registry = Registry::new();
        for i in 0..10u32 {
            registry.schedule(0, &i.to_le_bytes(), u64::from(i));
        }
        assert_eq!(registry.take_due(100, 4).len(), 4);
        assert_eq!(registry.len(), 6);
        assert_eq!(registry.next_due(), Some(4));
    }

    #[test]
    fn deleted_keys_and_flushed_databases_are_forgotten() {
        let mut registry = Registry::new();
        registry.schedule(0, b"a", 10);
        registry.schedule(0, b"b", 20);
        registry.schedule(1, b"a", 30);
        registry.schedule(2, b"c", 40);
        registry.remove(0, b"a");
        registry.remove(0, b"missing");
        assert_eq!(registry.len(), 3);
        assert_eq!(registry.next_due(), Some(20));
        registry.clear(Some(1));
        assert_eq!(
            registry.take_due(100, 10),
            vec![(0, b"b".to_vec()), (2, b"c".to_vec())]
        );
        registry.schedule(3, b"d", 50);
        registry.clear(None);
        assert_eq!(registry.len(), 0);
        assert_eq!(registry.next_due(), None);
    }

    #[test]
    fn swapdb_moves_entries_between_databases() {
        let mut registry = Registry::new();
        registry.schedule(0, b"a", 10);
        registry.schedule(1, b"b", 20);
        registry.schedule(2, b"c", 30);
        registry.swap_db(0, 1);
        assert_eq!(
            registry.take_due(100, 10),
            vec![(1, b"a".to_vec()), (0, b"b".to_vec()), (2, b"c".to_vec())]
        );
    }
}
