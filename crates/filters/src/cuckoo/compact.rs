//! Compaction: after deletes, fingerprints of newer sub-filters move into empty slots of older
//! ones (no evictions), and a newest sub-filter left empty is freed. RedisBloom does it inside
//! `CF.DEL` once more than a tenth of the items were deleted since the last one, and on
//! `CF.COMPACT`, walking every newer sub-filter and, for each fingerprint, the two buckets of every
//! older one until one has room: work in proportion to the newer slots times the older
//! sub-filters, seconds for a filter of thousands of sub-filters.
//!
//! Here one compaction does at most a [`Budget`] of work: it reads at most [`COMPACTION_SLOTS`]
//! slots of the newer sub-filters and probes at most [`COMPACTION_PROBES`] buckets of the older
//! ones, counting every bucket it reads for room (one more per 32 bytes of a wider bucket) and
//! each sub-filter it walks as one more. An older sub-filter with no empty slot when the
//! compaction starts is never tried (its occupied count says so), one that fills up on the way is
//! passed over from then on in a step (`Open`), and a sub-filter with no older one to move into
//! is not read at all. A compaction that fits the budget is RedisBloom's, move for move, so small
//! filters keep RedisBloom's bytes. One that does not stops where its budget ran out, having made
//! the first of RedisBloom's moves; on a filter too big to walk (more newer slots than the budget
//! reads) it works on a window of each sub-filter, from a bucket drawn from the filter's state
//! instead of the first, so that the next compaction works elsewhere. Either way the moves are a
//! function of the filter alone: a replica, holding the same filter, makes the same ones.

use super::filter::Cuckoo;
use super::print::Hashing;
use super::table::Table;

/// The most slots of newer sub-filters one compaction reads.
pub const COMPACTION_SLOTS: u64 = 1 << 20;
/// The most buckets of older sub-filters one compaction reads for room.
pub const COMPACTION_PROBES: u64 = 1 << 16;

/// What one compaction may still do, and (spent) what it did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Slots of newer sub-filters it may still read.
    pub slots: u64,
    /// Buckets of older sub-filters it may still probe.
    pub probes: u64,
}

impl Budget {
    /// A whole compaction's budget.
    pub const FULL: Budget = Budget {
        slots: COMPACTION_SLOTS,
        probes: COMPACTION_PROBES,
    };

    /// What was spent of the whole budget, if this is what is left of it.
    pub fn spent(&self) -> Budget {
        Budget {
            slots: COMPACTION_SLOTS - self.slots,
            probes: COMPACTION_PROBES - self.probes,
        }
    }

    /// Takes one probe of `cost`; false if not enough is left.
    #[inline]
    fn probe(&mut self, cost: u64) -> bool {
        if self.probes < cost {
            return false;
        }
        self.probes -= cost;
        true
    }
}

impl Cuckoo {
    /// Moves fingerprints of newer sub-filters into older ones and frees the newest if it
    /// empties; then counts no deletes. `keep_going` (CF.COMPACT) goes on past a sub-filter that
    /// could not be emptied; otherwise (after CF.DEL) it stops there, as RedisBloom does. What it
    /// spent of its [`Budget`] is returned.
    pub fn compact(&mut self, keep_going: bool) -> Budget {
        let mut budget = Budget::FULL;
        let mut open = Open::of(self);
        let size = u64::from(self.params().bucket_size);
        let walked: u64 = self.tables[1..].iter().fold(0, |slots, table| {
            slots.saturating_add(table.buckets() * size)
        });
        let windowed = walked > COMPACTION_SLOTS;
        let mut index = self.tables.len() - 1;
        // Each sub-filter walked takes a probe too: a filter of thousands of them each holding
        // little costs its walk of them.
        while index > 0 && budget.slots > 0 && budget.probe(1) {
            let start = if windowed {
                self.window_start(index)
            } else {
                0
            };
            if !self.compact_table(index, start, &mut open, &mut budget) && !keep_going {
                break;
            }
            index -= 1;
        }
        // RedisBloom frees the newest sub-filter as soon as it is emptied, then walks the next;
        // freed all at once here, which ends the same: a sub-filter only ever moves fingerprints
        // into older ones.
        let emptied = self.tables[1..]
            .iter()
            .rev()
            .take_while(|table| table.is_empty())
            .count();
        self.drop_newest(emptied);
        self.deletes = 0;
        budget.spent()
    }

    /// Where a windowed compaction starts in sub-filter `index`: a bucket drawn from the item
    /// count and the sub-filter's occupied slots, which each compaction that moved anything
    /// changes (so the next works on another window), and which a replica has too.
    fn window_start(&self, index: usize) -> u64 {
        let table = &self.tables[index];
        let mixed =
            (self.items ^ table.occupied().rotate_left(32)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        (mixed >> 32) & (table.buckets() - 1)
    }

    /// Moves what it can of sub-filter `index`, from bucket `start` (wrapping) while the budget
    /// lasts, into the older sub-filters with room. True if it is empty.
    fn compact_table(
        &mut self,
        index: usize,
        start: u64,
        open: &mut Open,
        budget: &mut Budget,
    ) -> bool {
        let older = open.before(index);
        if older > 0 {
            let size = self.params().bucket_size;
            let hashing = self.hashing();
            let (below, rest) = self.tables.split_at_mut(index);
            let table = &mut rest[0];
            let buckets = table.buckets();
            // A probe reads one bucket of an older sub-filter: one unit, and one more per 32 bytes
            // of a wider bucket (its slots are at most as wide as this sub-filter's).
            let cost = 1 + u64::from(size) * u64::from(table.bits()) / 256;
            'walk: for step in 0..buckets {
                if table.is_empty() || budget.slots < u64::from(size) {
                    break;
                }
                budget.slots -= u64::from(size);
                let bucket = (start + step) & (buckets - 1);
                for slot in 0..size {
                    let fingerprint = table.get(bucket, slot);
                    if fingerprint == 0 {
                        continue;
                    }
                    let moved = Move {
                        bucket,
                        fingerprint,
                        bits: table.bits(),
                        cost,
                    };
                    match moved.down(below, open, older, hashing, budget) {
                        Some(true) => {
                            table.swap(bucket, slot, 0);
                        }
                        Some(false) => {}
                        None => break 'walk,
                    }
                }
            }
        }
        self.tables[index].is_empty()
    }
}

/// The sub-filters a fingerprint may move into: those with an empty slot, oldest first (the newest
/// left out: nothing moves into it). One that fills up during the compaction is passed over from
/// then on in a step or two (each entry points at the next one that may have room, the chains
/// shortened as they are followed), so that a compaction never probes a full sub-filter.
struct Open {
    /// Sub-filter indexes, ascending.
    tables: Vec<u16>,
    /// For each entry, itself while it has room, else a later entry (the last points past the
    /// end).
    next: Vec<u32>,
}

impl Open {
    /// The sub-filters of `filter` with room. At most [`super::shape::MAX_TABLES`] of them; none
    /// if the lists cannot be had (then nothing moves: a compaction is never owed).
    fn of(filter: &Cuckoo) -> Open {
        let newest = filter.tables.len() - 1;
        let mut open = Open {
            tables: Vec::new(),
            next: Vec::new(),
        };
        if open.tables.try_reserve_exact(newest).is_err()
            || open.next.try_reserve_exact(newest + 1).is_err()
        {
            open.tables.clear();
            return open;
        }
        open.tables.extend(
            (0..newest)
                .filter(|&index| !filter.tables[index].is_full())
                .filter_map(|index| u16::try_from(index).ok()),
        );
        open.next.extend(0..=open.tables.len() as u32);
        open
    }

    /// How many entries are sub-filters older than `index`.
    fn before(&self, index: usize) -> usize {
        self.tables
            .partition_point(|&table| usize::from(table) < index)
    }

    /// The first entry from `entry` on that may have room (the count of entries if none).
    fn find(&mut self, entry: usize) -> usize {
        let mut root = entry;
        while (self.next[root] as usize) != root {
            root = self.next[root] as usize;
        }
        let mut at = entry;
        while at != root {
            at = std::mem::replace(&mut self.next[at], root as u32) as usize;
        }
        root
    }

    /// Passes over `entry` from now on: its sub-filter is full.
    fn close(&mut self, entry: usize) {
        self.next[entry] = entry as u32 + 1;
    }
}

/// A fingerprint of a newer sub-filter looking for room in older ones.
struct Move {
    /// The bucket it is in (the newer sub-filter's).
    bucket: u64,
    fingerprint: u64,
    /// The newer sub-filter's slot width.
    bits: u8,
    /// What one probe of an older bucket takes from the budget.
    cost: u64,
}

impl Move {
    /// Puts the fingerprint in the first empty slot of its bucket or its other one, in the oldest
    /// of the first `older` entries of `open` that has one, shortened to that sub-filter's width
    /// (the item's own fingerprint there). `Some(moved)`, or `None` if the budget ran out first.
    fn down(
        &self,
        tables: &mut [Table],
        open: &mut Open,
        older: usize,
        hashing: Hashing,
        budget: &mut Budget,
    ) -> Option<bool> {
        let second = hashing.alternate(self.bucket, self.fingerprint, self.bits);
        let mut entry = open.find(0);
        while entry < older {
            let table = &mut tables[usize::from(open.tables[entry])];
            let moved = hashing.shorten(self.fingerprint, self.bits, table.bits());
            for bucket in [self.bucket, second] {
                if !budget.probe(self.cost) {
                    return None;
                }
                let at = table.bucket_of(bucket);
                if let Some(slot) = table.empty_slot(at) {
                    table.swap(at, slot, moved);
                    if table.is_full() {
                        open.close(entry);
                    }
                    return Some(true);
                }
            }
            entry = open.find(entry + 1);
        }
        Some(false)
    }
}

#[cfg(test)]
mod tests;
