//! [`Cuckoo`], what a `CF.*` key holds: a chain of [`Table`]s that grows by the expansion when an
//! item finds no room, with RedisBloom's insertion, eviction, deletion and counting, step for step
//! (but for walks past [`WALK_EVICTIONS`], below), so that the same commands leave the same bytes
//! (for filters made without `ERROR`; those made with it take the same steps with this module's
//! hashing and wider slots: see `super::print`).
//!
//! An insert looks for an empty slot in the item's two buckets of each sub-filter, newest first;
//! failing that it evicts in the newest one: starting at the item's first bucket, it swaps the
//! item into slot 0, 1, 2, ... (one more each step, modulo the bucket size) and carries the
//! fingerprint it displaced to that fingerprint's other bucket, until one has an empty slot or
//! `max_iterations` swaps were made (at most [`WALK_EVICTIONS`], fewer in buckets wider than a
//! cache line, where RedisBloom's walk goes on to 65,535), which it then undoes in reverse. No
//! randomness: a replica makes the same moves. Then the filter grows by a sub-filter `expansion`
//! times the newest (or, with expansion 0, refuses the item), and the item goes there.
//!
//! A client's command spends at most [`COMMAND_EVICTIONS`] over all its items, each eviction
//! weighed by its sub-filter's size and bucket width (see [`Adding::limited`] and
//! [`eviction_weight`]): a batch cannot hold the server for its items times `max_iterations`.

use super::locator::Locator;
use super::print::{Hashing, Print};
use super::shape::{check_bound, check_shape, slot_bits, Bound, Limits, Params, MAX_TABLES};
use super::table::{table_bytes, Table, MAX_BUCKETS};
use crate::bytes::{charged, charged_array};
use crate::error::FilterError;
use crate::restoring::Restoring;

mod budget;
pub use budget::{
    bucket_lines, eviction_weight, Adding, COMMAND_EVICTIONS, NEAR_BYTES, WALK_EVICTIONS,
};

/// A cuckoo filter: the value of one `CF.*` key.
#[derive(Debug, Clone, PartialEq)]
pub struct Cuckoo {
    params: Params,
    /// A bounded error rate (this module's `ERROR`); `None` for RedisBloom's filters.
    bound: Option<Bound>,
    /// Oldest first; never empty. Sub-filter `i` has the first one's buckets times
    /// `expansion^i`. Allocated to the exact count.
    pub(crate) tables: Box<[Table]>,
    /// Items added less items deleted (a copy added twice counts twice), as RedisBloom counts.
    pub(crate) items: u64,
    /// Deletes since the last compaction.
    pub(crate) deletes: u64,
    /// While the filter is being rebuilt from dump chunks: where the restore stands.
    pub(crate) restoring: Option<Box<Restoring>>,
}

impl Cuckoo {
    /// An empty filter of one sub-filter of `buckets` buckets, refused past `max_bytes`; with
    /// `bound`, this module's kind, with a bounded error rate (bucket size 4).
    pub fn new(
        buckets: u64,
        params: Params,
        bound: Option<Bound>,
        max_bytes: u64,
    ) -> Result<Cuckoo, FilterError> {
        check_bound(params, bound)?;
        let bits = slot_bits(bound, 0);
        let bytes = Cuckoo::planned_bytes(params.bucket_size, [(buckets, bits)]);
        if bytes > max_bytes {
            return Err(FilterError::TooLarge { bytes });
        }
        if buckets > MAX_BUCKETS {
            // At least 2^56 bytes under a limit set that high: more than any server allocates
            // (and more buckets than RedisBloom's format counts).
            return Err(FilterError::OutOfMemory { bytes });
        }
        Ok(Cuckoo {
            params,
            bound,
            tables: Box::new([Table::new(buckets, params.bucket_size, bits)?]),
            items: 0,
            deletes: 0,
            restoring: None,
        })
    }

    /// A filter rebuilt from stored parts, checked: the sub-filters' bucket counts follow the
    /// expansion from the first, each has the slot width its place gives it, and the items fit in
    /// the slots.
    pub fn from_parts(
        params: Params,
        bound: Option<Bound>,
        tables: Vec<Table>,
        items: u64,
        deletes: u64,
    ) -> Result<Cuckoo, FilterError> {
        check_bound(params, bound)?;
        check_shape(params, tables.iter().map(Table::buckets), items)?;
        let widths = tables
            .iter()
            .enumerate()
            .all(|(index, table)| table.bits() == slot_bits(bound, index));
        if !widths {
            return Err(FilterError::Corrupt(
                "a sub-filter's slots of the wrong width",
            ));
        }
        Ok(Cuckoo {
            params,
            bound,
            tables: tables.into_boxed_slice(),
            items,
            deletes,
            restoring: None,
        })
    }

    /// A copy, or [`FilterError::OutOfMemory`].
    pub fn try_clone(&self) -> Result<Cuckoo, FilterError> {
        let mut tables = Vec::new();
        tables
            .try_reserve_exact(self.tables.len())
            .map_err(|_| FilterError::OutOfMemory { bytes: 0 })?;
        for table in self.tables.iter() {
            tables.push(table.try_clone()?);
        }
        Ok(Cuckoo {
            tables: tables.into_boxed_slice(),
            restoring: self.restoring.clone(),
            ..*self
        })
    }

    /// How it was made.
    pub fn params(&self) -> Params {
        self.params
    }

    /// Its bounded error rate, if it has one.
    pub fn bound(&self) -> Option<Bound> {
        self.bound
    }

    /// How it hashes items.
    #[inline]
    pub fn hashing(&self) -> Hashing {
        match self.bound {
            None => Hashing::RedisBloom,
            Some(bound) => Hashing::Bounded {
                first_bits: bound.first_bits,
            },
        }
    }

    /// The print of `item` as this filter takes it.
    #[inline]
    pub fn print(&self, item: &[u8]) -> Print {
        match self.hashing() {
            // RedisBloom's hashing (every filter made without ERROR) spelled out: compiled for
            // it, not chosen item by item.
            Hashing::RedisBloom => Print::of(item, Hashing::RedisBloom),
            hashing => Print::of(item, hashing),
        }
    }

    /// The print of `item`: `early` (made by a [`Locator`] before the filter was in hand) if it
    /// was hashed as this filter hashes, else a new one.
    #[inline]
    pub fn print_with(&self, item: &[u8], early: Option<Print>) -> Print {
        match early {
            Some(print) if print.hashing() == self.hashing() => print,
            _ => self.print(item),
        }
    }

    /// Where its newest sub-filter lies (the one an add tries first and the biggest), for a
    /// later command to prefetch an item's buckets from before it has the filter.
    #[inline]
    pub fn locator(&self) -> Locator {
        Locator::new(
            self.hashing(),
            self.tables[self.tables.len() - 1].whereabouts(),
        )
    }

    /// Its sub-filters, oldest first.
    pub fn tables(&self) -> &[Table] {
        &self.tables
    }

    /// The first sub-filter's bucket count (`CF.INFO`'s "Number of buckets").
    pub fn buckets(&self) -> u64 {
        self.tables[0].buckets()
    }

    /// Items added less items deleted.
    pub fn items(&self) -> u64 {
        self.items
    }

    /// Deletes since the last compaction.
    pub fn deletes(&self) -> u64 {
        self.deletes
    }

    /// True if `item` may have been added (and not deleted since).
    pub fn contains(&self, item: &[u8]) -> bool {
        self.contains_print(&self.print(item))
    }

    /// [`Cuckoo::contains`] for the item's print (made as [`Cuckoo::print_with`] makes it).
    #[inline]
    pub fn contains_print(&self, print: &Print) -> bool {
        debug_assert_eq!(print.hashing(), self.hashing());
        print.fixed(|print| self.holds(print))
    }

    #[inline(always)]
    fn holds(&self, print: &Print) -> bool {
        if let [table] = &*self.tables {
            return table.holds(print);
        }
        self.prefetch(print);
        self.tables.iter().any(|table| table.holds(print))
    }

    /// Asks the CPU to load the item's second bucket in every sub-filter (and the first of all
    /// but the newest), so that the misses of a lookup overlap rather than follow one another:
    /// an item's two buckets are two random cache lines of a big filter.
    #[inline]
    fn prefetch(&self, print: &Print) {
        for table in self.tables.iter() {
            table.prefetch(table.bucket_of(print.second()));
            table.prefetch(table.bucket_of(print.first()));
        }
    }

    /// Looks up items in order, loading each item's buckets a few items ahead so that their
    /// cache misses overlap.
    pub fn contains_many<'a>(
        &self,
        items: impl IntoIterator<Item = &'a [u8]>,
        mut answer: impl FnMut(bool),
    ) {
        const AHEAD: usize = 8;
        let mut ring = [self.print(b""); AHEAD];
        let (mut head, mut held) = (0usize, 0usize);
        for item in items {
            let print = self.print(item);
            for table in self.tables.iter() {
                table.prefetch(table.bucket_of(print.first()));
                table.prefetch(table.bucket_of(print.second()));
            }
            if held == AHEAD {
                answer(self.holds(&ring[head]));
                ring[head] = print;
                head = (head + 1) % AHEAD;
            } else {
                ring[(head + held) % AHEAD] = print;
                held += 1;
            }
        }
        for offset in 0..held {
            answer(self.holds(&ring[(head + offset) % AHEAD]));
        }
    }

    /// How many times `item`'s fingerprint is found in its buckets of every sub-filter (twice
    /// where its two buckets are one), as RedisBloom counts.
    pub fn count(&self, item: &[u8]) -> u64 {
        let print = self.print(item);
        self.tables
            .iter()
            .map(|table| {
                let fingerprint = print.fingerprint(table.bits());
                table.count(table.bucket_of(print.first()), fingerprint)
                    + table.count(table.bucket_of(print.second()), fingerprint)
            })
            .sum()
    }

    /// Refuses a new item when the filter has `max_tables` sub-filters already, whether or not
    /// the item would need one more (RedisBloom's rule, checked here before every item).
    pub fn check_room(&self, max_tables: u64) -> Result<(), FilterError> {
        if self.tables.len() as u64 >= max_tables {
            return Err(FilterError::MaxExpansions);
        }
        Ok(())
    }

    /// Adds `item` (another copy if it is there already).
    pub fn add(&mut self, item: &[u8], limits: &Limits) -> Result<(), FilterError> {
        self.add_print(self.print(item), limits)
    }

    /// [`Cuckoo::add`] for the item's print.
    #[inline]
    pub fn add_print(&mut self, print: Print, limits: &Limits) -> Result<(), FilterError> {
        self.add_within(print, &mut limits.adding())
    }

    /// Adds `item` unless it may be there already: true if added.
    pub fn add_unique(&mut self, item: &[u8], limits: &Limits) -> Result<bool, FilterError> {
        self.add_unique_print(self.print(item), limits)
    }

    /// [`Cuckoo::add_unique`] for the item's print.
    pub fn add_unique_print(&mut self, print: Print, limits: &Limits) -> Result<bool, FilterError> {
        self.add_unique_within(print, &mut limits.adding())
    }

    /// [`Cuckoo::add_print`] within `adding`'s limits, counting its evictions there.
    #[inline]
    pub fn add_within<F: FnMut(&Cuckoo) -> u64>(
        &mut self,
        print: Print,
        adding: &mut Adding<F>,
    ) -> Result<(), FilterError> {
        debug_assert_eq!(print.hashing(), self.hashing());
        self.check_room(adding.max_tables)?;
        print.fixed(|&print| self.insert(print, adding))
    }

    /// [`Cuckoo::add_unique_print`] within `adding`'s limits, counting its evictions there.
    pub fn add_unique_within<F: FnMut(&Cuckoo) -> u64>(
        &mut self,
        print: Print,
        adding: &mut Adding<F>,
    ) -> Result<bool, FilterError> {
        debug_assert_eq!(print.hashing(), self.hashing());
        self.check_room(adding.max_tables)?;
        print.fixed(|&print| {
            if self.holds(&print) {
                return Ok(false);
            }
            self.insert(print, adding)?;
            Ok(true)
        })
    }

    #[inline(always)]
    fn insert<F: FnMut(&Cuckoo) -> u64>(
        &mut self,
        print: Print,
        adding: &mut Adding<F>,
    ) -> Result<(), FilterError> {
        if self.place(&print) {
            self.added();
            return Ok(());
        }
        self.insert_evicting(print, adding)
    }

    /// The rest of an insert whose buckets are full: evictions, then growth (out of line, so
    /// that the usual insert, an empty slot found, sets up none of it). One walk of evictions
    /// per item, whatever refuses it after: the byte limit is asked for only then. An item whose
    /// walk the command's budget does not allow is refused as the filter being full, unchanged.
    #[inline(never)]
    fn insert_evicting<F: FnMut(&Cuckoo) -> u64>(
        &mut self,
        print: Print,
        adding: &mut Adding<F>,
    ) -> Result<(), FilterError> {
        let (length, weight) = self.walk_shape();
        if !adding.may_walk(u64::from(length), weight) {
            return Err(FilterError::Full);
        }
        let (placed, swaps) = self.evict(&print, length);
        adding.walked(swaps, weight);
        if placed {
            self.added();
            return Ok(());
        }
        if self.params.expansion == 0 {
            adding.found_full();
            return Err(FilterError::Full);
        }
        if self.copies_fill_buckets(&print) {
            // Only this item's buckets are full of it: another item may still find room.
            return Err(FilterError::TooManyCopies);
        }
        let max_bytes = (adding.max_bytes)(self);
        if let Err(err) = self.grow(max_bytes) {
            adding.found_full();
            return Err(err);
        }
        // The new sub-filter is empty: the item's first bucket there has room.
        if !self.place(&print) {
            return Err(FilterError::CannotGrow);
        }
        self.added();
        Ok(())
    }

    /// Counts an item placed.
    #[inline]
    fn added(&mut self) {
        self.items = self.items.saturating_add(1);
        self.keep_items_within_slots();
    }

    /// Puts the print in the first empty slot of its first bucket, else its second, in the
    /// newest sub-filter that has one.
    #[inline(always)]
    fn place(&mut self, print: &Print) -> bool {
        if let [table] = &mut *self.tables {
            return table.place(print);
        }
        self.prefetch(print);
        self.tables.iter_mut().rev().any(|table| table.place(print))
    }

    /// The most swaps one walk of this filter makes: its `max_iterations`, at most
    /// [`WALK_EVICTIONS`] over the cache lines a bucket of its newest sub-filter spans.
    pub fn walk_length(&self) -> u16 {
        self.walk_shape().0
    }

    /// [`Cuckoo::walk_length`], and what each of its swaps weighs in a command's budget
    /// ([`eviction_weight`]), both of the newest sub-filter, where a walk is made.
    fn walk_shape(&self) -> (u16, u64) {
        let Some(table) = self.tables.last() else {
            return (0, 1);
        };
        let bucket = table.bucket_bytes();
        let longest = u64::from(WALK_EVICTIONS) / bucket_lines(bucket);
        let longest = u16::try_from(longest).unwrap_or(WALK_EVICTIONS);
        let length = self.params.max_iterations.min(longest);
        (length, eviction_weight(table.bytes().len() as u64, bucket))
    }

    /// RedisBloom's eviction in the newest sub-filter (see the module documentation), at most
    /// `iterations` swaps ([`Cuckoo::walk_length`]): whether the item found room (false: every
    /// swap undone) and the swaps it made before.
    fn evict(&mut self, print: &Print, iterations: u16) -> (bool, u64) {
        let size = u32::from(self.params.bucket_size);
        let iterations = u32::from(iterations);
        let hashing = self.hashing();
        let Some(table) = self.tables.last_mut() else {
            return (false, 0);
        };
        let bits = table.bits();
        let mut bucket = table.bucket_of(print.first());
        let mut carried = print.fingerprint(bits);
        for step in 0..iterations {
            carried = table.swap(bucket, (step % size) as u8, carried);
            bucket = table.bucket_of(hashing.alternate(bucket, carried, bits));
            if let Some(empty) = table.empty_slot(bucket) {
                table.swap(bucket, empty, carried);
                return (true, u64::from(step) + 1);
            }
        }
        // Back the way it came: each fingerprint carried returns to the slot it was taken from,
        // in the bucket its other bucket leads back to.
        for step in (0..iterations).rev() {
            bucket = table.bucket_of(hashing.alternate(bucket, carried, bits));
            carried = table.swap(bucket, (step % size) as u8, carried);
        }
        (false, u64::from(iterations))
    }

    /// True if the print's buckets in the newest sub-filter hold nothing but copies of it: the
    /// same item added over and over, which growth would never satisfy (each new sub-filter would
    /// fill with copies too: RedisBloom grew to gigabytes that way).
    fn copies_fill_buckets(&self, print: &Print) -> bool {
        let Some(table) = self.tables.last() else {
            return false;
        };
        let fingerprint = print.fingerprint(table.bits());
        let first = table.bucket_of(print.first());
        let second = table.bucket_of(print.second());
        let size = u64::from(self.params.bucket_size);
        let wanted = if first == second { size } else { 2 * size };
        let mut found = table.count(first, fingerprint);
        if first != second {
            found += table.count(second, fingerprint);
        }
        found == wanted
    }

    /// Adds a sub-filter `expansion` times the newest, refused past `max_bytes`.
    fn grow(&mut self, max_bytes: u64) -> Result<(), FilterError> {
        let newest = self.tables[self.tables.len() - 1].buckets();
        let buckets = newest
            .checked_mul(u64::from(self.params.expansion))
            .filter(|&buckets| buckets <= MAX_BUCKETS)
            .ok_or(FilterError::CannotGrow)?;
        if self.tables.len() as u64 >= MAX_TABLES {
            return Err(FilterError::CannotGrow);
        }
        let bits = slot_bits(self.bound, self.tables.len());
        let bytes = Cuckoo::planned_bytes(
            self.params.bucket_size,
            self.table_shapes().chain(std::iter::once((buckets, bits))),
        )
        .saturating_add(self.restoring_bytes());
        if bytes > max_bytes {
            return Err(FilterError::TooLarge { bytes });
        }
        let added = Table::new(buckets, self.params.bucket_size, bits)?;
        let mut tables = std::mem::take(&mut self.tables).into_vec();
        let room = tables.try_reserve_exact(1);
        if room.is_ok() {
            tables.push(added);
        }
        self.tables = tables.into_boxed_slice();
        room.map_err(|_| FilterError::OutOfMemory { bytes: 0 })
    }

    /// Removes one copy of `item`'s fingerprint: in the newest sub-filter that has it, its first
    /// bucket before its second. False (and nothing changed) if none has it. Compaction may
    /// follow (see `super::compact`).
    pub fn delete(&mut self, item: &[u8]) -> bool {
        self.delete_print(&self.print(item))
    }

    /// [`Cuckoo::delete`] for the item's print.
    pub fn delete_print(&mut self, print: &Print) -> bool {
        debug_assert_eq!(print.hashing(), self.hashing());
        if !print.fixed(|print| self.remove(print)) {
            return false;
        }
        self.items = self.items.saturating_sub(1);
        self.deletes = self.deletes.saturating_add(1);
        if self.tables.len() > 1 && self.deletes as f64 > self.items as f64 * 0.1 {
            self.compact(false);
        }
        true
    }

    /// Empties one slot holding the print's fingerprint, in the newest sub-filter that has one.
    #[inline(always)]
    pub(crate) fn remove(&mut self, print: &Print) -> bool {
        if let [table] = &mut *self.tables {
            return table.remove(print);
        }
        self.prefetch(print);
        self.tables
            .iter_mut()
            .rev()
            .any(|table| table.remove(print))
    }

    /// Removes the `count` newest sub-filters (emptied by a compaction), never the first.
    pub(crate) fn drop_newest(&mut self, count: usize) {
        let keep = self.tables.len().saturating_sub(count).max(1);
        if keep < self.tables.len() {
            let mut tables = std::mem::take(&mut self.tables).into_vec();
            tables.truncate(keep);
            self.tables = tables.into_boxed_slice();
            self.keep_items_within_slots();
        }
    }

    /// Its slots, in every sub-filter.
    fn slots(&self) -> u64 {
        let size = u64::from(self.params.bucket_size);
        self.tables.iter().fold(0u64, |slots, table| {
            slots.saturating_add(table.buckets().saturating_mul(size))
        })
    }

    /// Holds the item count to the slots, as every loader checks it (`check_shape`). In a filter
    /// whose count matches its fingerprints it always is (each item takes a slot), and this does
    /// nothing; but a count loaded above them (RedisBloom's releases that lost a fingerprint when
    /// an eviction failed, a forged RESTORE or CF.LOADCHUNK header) would otherwise pass the slots
    /// as items are added (or a compaction frees a sub-filter), and the filter would save as data
    /// that no loader takes back: an RDB the server cannot start from.
    fn keep_items_within_slots(&mut self) {
        let newest = self.tables[self.tables.len() - 1].buckets();
        if self.items > newest.saturating_mul(u64::from(self.params.bucket_size)) {
            self.items = self.items.min(self.slots());
        }
    }

    /// Each sub-filter's bucket count and slot width.
    pub(crate) fn table_shapes(&self) -> impl Iterator<Item = (u64, u8)> + '_ {
        self.tables
            .iter()
            .map(|table| (table.buckets(), table.bits()))
    }

    /// What the allocator charges for a filter of sub-filters of these bucket counts and slot
    /// widths: the value (the box the server keeps it in), the array of sub-filters and each
    /// one's buckets (see [`crate::bytes`]).
    pub fn planned_bytes(bucket_size: u8, tables: impl IntoIterator<Item = (u64, u8)>) -> u64 {
        let (count, total) =
            tables
                .into_iter()
                .fold((0u64, 0u64), |(count, total), (buckets, bits)| {
                    let bytes = table_bytes(buckets, bucket_size, bits).map_or(u64::MAX, charged);
                    (count + 1, total.saturating_add(bytes))
                });
        charged_array::<Cuckoo>(1)
            .saturating_add(charged_array::<Table>(count))
            .saturating_add(total)
    }

    fn restoring_bytes(&self) -> u64 {
        if self.restoring.is_some() {
            Restoring::charged()
        } else {
            0
        }
    }

    /// What the allocator charged for the filter when it had only its first `count` sub-filters
    /// (adds only append them): an add learns what it grew by without sizing every filter first.
    pub fn planned_size_of_first(&self, count: usize) -> u64 {
        Cuckoo::planned_bytes(self.params.bucket_size, self.table_shapes().take(count))
            .saturating_add(self.restoring_bytes())
    }

    /// What the allocator charges for the filter: what `Size` reports.
    pub fn planned_size(&self) -> u64 {
        Cuckoo::planned_bytes(self.params.bucket_size, self.table_shapes())
            .saturating_add(self.restoring_bytes())
    }

    /// Calls `visit` with every heap allocation the filter owns (not the value's own box).
    pub fn visit_allocations(&self, visit: &mut dyn FnMut(*const u8, usize)) {
        visit(
            self.tables.as_ptr().cast(),
            std::mem::size_of_val(&*self.tables),
        );
        for table in self.tables.iter() {
            table.visit_allocations(visit);
        }
        if let Some(restoring) = &self.restoring {
            visit(
                std::ptr::from_ref::<Restoring>(restoring).cast(),
                std::mem::size_of::<Restoring>(),
            );
        }
    }
}

impl Limits {
    /// An add within these limits.
    pub fn adding(&self) -> Adding<impl FnMut(&Cuckoo) -> u64> {
        let max_bytes = self.max_bytes;
        Adding::new(self.max_tables, move |_: &Cuckoo| max_bytes)
    }
}

#[cfg(test)]
mod tests;
