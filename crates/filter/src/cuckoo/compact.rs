//! Compaction: after deletes, fingerprints of newer sub-filters move into empty slots of older
//! ones (no evictions), and a newest sub-filter left empty is freed. RedisBloom does it inside
//! `CF.DEL` once more than a tenth of the items were deleted since the last one, and on
//! `CF.COMPACT`, walking every newer sub-filter: work in proportion to the filter's bytes, which
//! stalls a server holding a big one. Here a compaction examines at most [`COMPACTION_SLOTS`]
//! slots: one that fits (every filter up to a million slots past its first sub-filter) is
//! RedisBloom's, move for move, so small filters keep RedisBloom's bytes; a bigger one works on a
//! window of that many slots of the newest sub-filter, starting at a bucket drawn from the
//! filter's state (so a replica, holding the same state, makes the same moves), and the next
//! compaction works on another window.

use super::filter::Cuckoo;
use super::print::Hashing;
use super::table::Table;

/// The most slots one compaction examines.
pub const COMPACTION_SLOTS: u64 = 1 << 20;

impl Cuckoo {
    /// Moves fingerprints of newer sub-filters into older ones and frees the newest if it
    /// empties; then counts no deletes. `keep_going` (CF.COMPACT) goes on past a sub-filter that
    /// could not be emptied; otherwise (after CF.DEL) it stops there, as RedisBloom does.
    pub fn compact(&mut self, keep_going: bool) {
        let size = u64::from(self.params().bucket_size);
        let newer: u64 = self.tables[1..].iter().map(|t| t.buckets() * size).sum();
        if newer <= COMPACTION_SLOTS {
            let mut newest = self.tables.len() - 1;
            while newest > 0 {
                if !self.compact_table(newest, 0, u64::MAX) && !keep_going {
                    break;
                }
                newest -= 1;
            }
        } else {
            let newest = self.tables.len() - 1;
            let buckets = self.tables[newest].buckets();
            let mixed = (self.items ^ self.tables[newest].occupied().rotate_left(32))
                .wrapping_mul(0x9e37_79b9_7f4a_7c15);
            let start = (mixed >> 32) & (buckets - 1);
            self.compact_table(newest, start, (COMPACTION_SLOTS / size).max(1));
        }
        self.deletes = 0;
    }

    /// Moves what it can of sub-filter `index`, `count` buckets from bucket `start` (wrapping),
    /// into older sub-filters; frees it if it is the newest and emptied. True if every
    /// fingerprint it held moved.
    fn compact_table(&mut self, index: usize, start: u64, count: u64) -> bool {
        let size = self.params().bucket_size;
        let hashing = self.hashing();
        let (older, rest) = self.tables.split_at_mut(index);
        let table = &mut rest[0];
        let buckets = table.buckets();
        let mut all_moved = true;
        for step in 0..count.min(buckets) {
            let bucket = (start + step) & (buckets - 1);
            for slot in 0..size {
                let fingerprint = table.get(bucket, slot);
                if fingerprint != 0 {
                    if move_down(older, hashing, bucket, fingerprint, table.bits()) {
                        table.swap(bucket, slot, 0);
                    } else {
                        all_moved = false;
                    }
                }
            }
        }
        let emptied = self.tables[index].is_empty();
        if emptied && index == self.tables.len() - 1 {
            self.drop_newest();
        }
        all_moved && emptied
    }
}

/// Puts `fingerprint`, found in bucket `bucket` of a newer sub-filter of `bits`-bit slots, in the
/// first empty slot of that bucket or its other one, in the oldest of `older` that has one
/// (shortened to its width: the item's own fingerprint there).
fn move_down(
    older: &mut [Table],
    hashing: Hashing,
    bucket: u64,
    fingerprint: u64,
    bits: u8,
) -> bool {
    let second = hashing.alternate(bucket, fingerprint, bits);
    for table in older.iter_mut() {
        let moved = hashing.shorten(fingerprint, bits, table.bits());
        for index in [bucket, second] {
            let at = table.bucket_of(index);
            if let Some(slot) = table.empty_slot(at) {
                table.swap(at, slot, moved);
                return true;
            }
        }
    }
    false
}
