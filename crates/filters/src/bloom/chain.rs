//! The scaling chain: what a `BF.*` key holds.
//!
//! A chain starts with one sub-filter. A scaling chain's first sub-filter is built for half the
//! requested error rate; when the newest one holds its capacity, a new one is added with
//! `capacity * expansion` items at half the newest one's error, so the compounded false-positive
//! rate of the whole chain stays below the requested one. A fixed (NONSCALING) chain has a single
//! sub-filter built for the requested rate and refuses items once it is full.
//!
//! An item is hashed once; the hash serves every sub-filter. An add first checks every sub-filter
//! and counts the item only if none holds it.

use crate::bits::BitStore;
use crate::bloom::growth::{check_imported_successor, check_link_count, RedisBloomOptions};
pub use crate::bloom::growth::{Growth, MAX_EXPANSION};
use crate::bloom::probes::{Hashing, Mixed, Plain, Plain32, Probing};
use crate::bloom::sizing::{check_requested_error_rate, Layout, Shape};
use crate::bloom::sub_filter::{storage_bits, SubFilter};
use crate::bytes::{charged_array, VALUE_BYTES};
use crate::error::FilterError;
use crate::hash::ItemHash;
use crate::restoring::Restoring;

/// Items the batch operations hash at a time, into a buffer on the stack.
const GROUP: usize = 32;
/// How many items ahead of the one being processed the batch operations prefetch: enough to keep
/// the memory system busy (each item touches up to k cache lines) without flooding it.
const AHEAD: usize = 8;
/// The most probe positions a batch prefetches for one item, newest sub-filter first. A lookup
/// stops at the first zero bit of each sub-filter, so prefetching every probe of every sub-filter
/// would cost a long chain (a thousand sub-filters of EXPANSION 1) or a many-hash filter (about
/// 1,000 hashes at an error of 1e-300) far more than the lookup itself; with this bound a batch
/// does at most a constant more per item than the same items sent one command each.
const PREFETCH_PROBES: u32 = 16;
/// Sub-filters whose bit array is smaller than this are taken to be in the CPU's caches (it is
/// the size of a core's L2 on the machines measured) and are not prefetched: the probes'
/// arithmetic would cost more than it saves.
const PREFETCH_MIN_BYTES: u64 = 1 << 20;

/// Where a chain's hashing and sizing come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Made by this module: xxh3-128 ([`Hashing::Xxh3`]) and RedisBloom's sizing formulas.
    Native,
    /// Made by this module in the blocked layout (`LAYOUT BLOCKED`): xxh3-128, each item's
    /// probes in one block of its sub-filters, sized by `sizing::blocked`.
    Blocked,
    /// Imported from RedisBloom, and kept as RedisBloom made it: its hashing and its sizing,
    /// as its option flags say, for the sub-filters it made and the ones added here.
    RedisBloom(RedisBloomOptions),
}

impl Format {
    /// How the chain hashes items.
    pub fn hashing(self) -> Hashing {
        match self {
            Format::Native | Format::Blocked => Hashing::Xxh3,
            Format::RedisBloom(options) => options.hashing(),
        }
    }

    /// How the chain's sub-filters lay out an item's probes.
    pub fn layout(self) -> Layout {
        match self {
            Format::Blocked => Layout::Blocked,
            Format::Native | Format::RedisBloom(_) => Layout::Classic,
        }
    }

    /// This module's format for chains of `layout`.
    pub fn native(layout: Layout) -> Format {
        match layout {
            Layout::Classic => Format::Native,
            Layout::Blocked => Format::Blocked,
        }
    }
}

/// A Bloom filter that may grow: the value of one `BF.*` key.
#[derive(Debug, Clone, PartialEq)]
pub struct Chain {
    format: Format,
    growth: Growth,
    /// Allocated to the exact count, so that the bytes a chain occupies depend on its sub-filters
    /// alone, not on how it came to be (grown one by one, or loaded all at once).
    filters: Box<[SubFilter]>,
    /// While the chain is being rebuilt from dump chunks: where the restore stands (see
    /// `crate::bloom::dump`). `None` for a chain in use.
    pub(crate) restoring: Option<Box<Restoring>>,
}

impl Chain {
    /// An empty chain for `capacity` items at `error`, refused with [`FilterError::TooLarge`] if it
    /// would take more than `max_bytes` (checked before anything is allocated).
    pub fn new(
        capacity: u64,
        error: f64,
        growth: Growth,
        max_bytes: u64,
    ) -> Result<Chain, FilterError> {
        Chain::with_layout(Layout::Classic, capacity, error, growth, max_bytes)
    }

    /// [`Chain::new`] in `layout`.
    pub fn with_layout(
        layout: Layout,
        capacity: u64,
        error: f64,
        growth: Growth,
        max_bytes: u64,
    ) -> Result<Chain, FilterError> {
        check_requested_error_rate(error)?;
        if capacity > MAX_CAPACITY {
            return Err(FilterError::BadCapacity);
        }
        let first_error = match growth {
            Growth::Scaling { .. } => error / 2.0,
            Growth::Fixed => error,
        };
        let shape = Shape::sized(capacity, first_error, layout)?;
        let bytes = Chain::planned_bytes(std::iter::once(&shape));
        if bytes > max_bytes {
            return Err(FilterError::TooLarge { bytes });
        }
        Ok(Chain {
            format: Format::native(layout),
            growth,
            filters: Box::new([SubFilter::new(shape)?]),
            restoring: None,
        })
    }

    /// A chain rebuilt from stored sub-filters, checked against the growth rule: a fixed chain
    /// has one sub-filter; in a scaling chain each sub-filter has `expansion` times the capacity
    /// and half the error of the one before it, and only the newest may have room left.
    pub fn from_parts(growth: Growth, filters: Vec<SubFilter>) -> Result<Chain, FilterError> {
        Chain::from_parts_in(Layout::Classic, growth, filters)
    }

    /// [`Chain::from_parts`] of a chain in `layout`, whose every sub-filter must have the block
    /// the layout's sizing gives it.
    pub fn from_parts_in(
        layout: Layout,
        growth: Growth,
        filters: Vec<SubFilter>,
    ) -> Result<Chain, FilterError> {
        if filters.is_empty() {
            return Err(FilterError::Corrupt("no sub-filters"));
        }
        for filter in &filters {
            let shape = filter.shape();
            if Shape::sized(shape.capacity, shape.error, layout)?.lines != shape.lines {
                return Err(FilterError::Corrupt("block does not match the layout"));
            }
        }
        for pair in filters.windows(2) {
            check_successor(growth, pair[0].shape(), pair[0].items(), pair[1].shape())?;
        }
        check_total_capacity(&filters)?;
        Ok(Chain {
            format: Format::native(layout),
            growth,
            filters: filters.into_boxed_slice(),
            restoring: None,
        })
    }

    /// A chain imported from RedisBloom, from sub-filters its caller checked one by one
    /// (`growth::check_link`). RedisBloom's own releases sized new sub-filters by different rules
    /// over the years, so only what every release did is checked between them: at most
    /// [`crate::bloom::growth::MAX_IMPORTED_LINKS`], each at half the error rate of the one before or less
    /// ([`check_imported_successor`]); a NONSCALING chain has exactly one.
    pub(crate) fn imported(
        options: RedisBloomOptions,
        growth: Growth,
        filters: Vec<SubFilter>,
    ) -> Result<Chain, FilterError> {
        check_link_count(filters.len() as u64)?;
        if growth == Growth::Fixed && filters.len() > 1 {
            return Err(FilterError::Corrupt(
                "a non-scaling filter with several sub-filters",
            ));
        }
        for pair in filters.windows(2) {
            check_imported_successor(pair[0].shape(), pair[1].shape())?;
        }
        check_total_capacity(&filters)?;
        Ok(Chain {
            format: Format::RedisBloom(options),
            growth,
            filters: filters.into_boxed_slice(),
            restoring: None,
        })
    }

    /// Where the chain's hashing and sizing come from.
    pub fn format(&self) -> Format {
        self.format
    }

    /// A copy (for COPY), or [`FilterError::OutOfMemory`] if the allocator cannot provide it.
    pub fn try_clone(&self) -> Result<Chain, FilterError> {
        let mut filters = Vec::new();
        filters
            .try_reserve_exact(self.filters.len())
            .map_err(|_| FilterError::OutOfMemory { bytes: 0 })?;
        for filter in &self.filters {
            filters.push(filter.try_clone()?);
        }
        Ok(Chain {
            format: self.format,
            growth: self.growth,
            filters: filters.into_boxed_slice(),
            restoring: self.restoring.clone(),
        })
    }

    /// How the chain grows.
    pub fn growth(&self) -> Growth {
        self.growth
    }

    /// The sub-filters, oldest first.
    pub fn filters(&self) -> &[SubFilter] {
        &self.filters
    }

    /// Items added (an item counts when it was new).
    pub fn items(&self) -> u64 {
        self.filters.iter().map(SubFilter::items).sum()
    }

    /// Total capacity of all sub-filters.
    pub fn capacity(&self) -> u64 {
        self.filters.iter().map(|f| f.shape().capacity).sum()
    }

    /// True while the chain is being rebuilt from a dump (see [`crate::bloom::Filter::restoring`]): it
    /// answers no add or lookup until its last chunk has arrived.
    #[inline]
    pub fn is_restoring(&self) -> bool {
        self.restoring.is_some()
    }

    /// True if adding `items` new items could make the chain grow.
    pub fn may_grow_within(&self, items: u64) -> bool {
        let newest = self.newest();
        matches!(self.growth, Growth::Scaling { .. })
            && items > newest.shape().capacity - newest.items()
    }

    /// True if the item may have been added; false if it certainly was not.
    ///
    /// The cache lines of the item's probes in big sub-filters are all requested before the first
    /// is tested, so that their memory latencies overlap instead of adding up (see
    /// [`Chain::prefetch`]).
    pub fn contains(&self, item: &[u8]) -> bool {
        let hash = self.hash(item);
        self.prefetch(&hash);
        self.contains_hash(&hash)
    }

    /// An item's hash, as this chain hashes items.
    #[inline]
    pub fn hash(&self, item: &[u8]) -> ItemHash {
        self.format.hashing().hash(item)
    }

    /// [`Chain::contains`] for an item already hashed (by [`Chain::hash`]), without prefetching.
    #[inline]
    pub fn contains_hash(&self, hash: &ItemHash) -> bool {
        match self.format.hashing() {
            Hashing::Xxh3 => self.contains_by::<Mixed>(hash),
            Hashing::Murmur64 => self.contains_by::<Plain>(hash),
            Hashing::Murmur32 => self.contains_by::<Plain32>(hash),
        }
    }

    #[inline(always)]
    fn contains_by<P: Probing>(&self, hash: &ItemHash) -> bool {
        // Newest first: it is the biggest, so most items that are present are found there.
        self.filters
            .iter()
            .enumerate()
            .rev()
            .any(|(index, filter)| filter.contains_by::<P>(&P::for_sub_filter(hash, index)))
    }

    /// Adds an item; `Ok(true)` if it was new, `Ok(false)` if the chain already (maybe) held it.
    ///
    /// Growing the chain past `max_bytes` is refused with [`FilterError::TooLarge`], and a full
    /// fixed chain refuses new items with [`FilterError::Full`]; either way nothing changes.
    ///
    /// Prefetches as [`Chain::contains`] does.
    pub fn add(&mut self, item: &[u8], max_bytes: u64) -> Result<bool, FilterError> {
        let hash = self.hash(item);
        self.prefetch(&hash);
        self.add_hash(&hash, max_bytes)
    }

    /// [`Chain::add`] for an item already hashed (by [`Chain::hash`]), without prefetching.
    #[inline]
    pub fn add_hash(&mut self, hash: &ItemHash, max_bytes: u64) -> Result<bool, FilterError> {
        match self.format.hashing() {
            Hashing::Xxh3 => self.add_by::<Mixed>(hash, max_bytes),
            Hashing::Murmur64 => self.add_by::<Plain>(hash, max_bytes),
            Hashing::Murmur32 => self.add_by::<Plain32>(hash, max_bytes),
        }
    }

    #[inline(always)]
    fn add_by<P: Probing>(&mut self, hash: &ItemHash, max_bytes: u64) -> Result<bool, FilterError> {
        let newest = self.filters.len() - 1;
        let older = &self.filters[..newest];
        if older
            .iter()
            .enumerate()
            .any(|(index, f)| f.contains_by::<P>(&P::for_sub_filter(hash, index)))
        {
            return Ok(false);
        }
        let newest_hash = P::for_sub_filter(hash, newest);
        if !self.filters[newest].is_full() {
            // One pass over the probes: the item is new exactly when one of its bits was unset.
            return Ok(self.filters[newest].insert_if_new_by::<P>(&newest_hash));
        }
        if self.filters[newest].contains_by::<P>(&newest_hash) {
            return Ok(false);
        }
        self.grow(max_bytes)?;
        let grown = self.filters.len() - 1;
        self.filters[grown].insert_by::<P>(&P::for_sub_filter(hash, grown));
        Ok(true)
    }

    fn grow(&mut self, max_bytes: u64) -> Result<(), FilterError> {
        let next = match self.format {
            Format::Native | Format::Blocked => {
                next_shape(self.growth, self.newest().shape(), self.format.layout())
            }
            Format::RedisBloom(options) => {
                crate::bloom::growth::next_link(options, self.growth, self.newest().shape())
            }
        };
        let shape = next.map_err(|err| match err {
            FilterError::TooLarge { bytes } => FilterError::TooLarge {
                bytes: bytes.saturating_add(self.planned_size()),
            },
            other => other,
        })?;
        match self.capacity().checked_add(shape.capacity) {
            Some(total) if total <= MAX_CAPACITY => {}
            _ => return Err(FilterError::CannotGrow),
        }
        let shapes = self.filters.iter().map(SubFilter::shape);
        let bytes = Chain::planned_bytes(shapes.chain(std::iter::once(&shape)));
        if bytes > max_bytes {
            return Err(FilterError::TooLarge { bytes });
        }
        let added = SubFilter::new(shape)?;
        let mut filters = std::mem::take(&mut self.filters).into_vec();
        let room = filters.try_reserve_exact(1);
        if room.is_ok() {
            filters.push(added);
        }
        // Exactly one sub-filter more, or (out of memory) the ones it had, without reallocating.
        self.filters = filters.into_boxed_slice();
        room.map_err(|_| FilterError::OutOfMemory { bytes: 0 })
    }

    /// Starts loading the cache lines of the item's first [`PREFETCH_PROBES`] probes in the
    /// sub-filters of [`PREFETCH_MIN_BYTES`] and more, newest first (the biggest: each sub-filter
    /// is at least as big as the one before it, so the walk stops at the first small one).
    #[inline(always)]
    fn prefetch(&self, hash: &ItemHash) {
        self.prefetch_probes(hash, PREFETCH_PROBES);
    }

    /// [`Chain::prefetch`] of the first `probes` probes at most.
    #[inline(always)]
    fn prefetch_probes(&self, hash: &ItemHash, probes: u32) {
        // Most filters are small: one look at the newest sub-filter settles it, inline.
        if self.newest().shape().bits >= PREFETCH_MIN_BYTES * 8 {
            self.prefetch_big(hash, probes);
        }
    }

    #[inline(never)]
    fn prefetch_big(&self, hash: &ItemHash, probes: u32) {
        match self.format.hashing() {
            Hashing::Xxh3 => self.prefetch_by::<Mixed>(hash, probes, 0),
            Hashing::Murmur64 | Hashing::Murmur32 => self.prefetch_by::<Plain>(hash, probes, 0),
        }
    }

    /// Prefetches the first `probes` probes in the big sub-filters, newest first, past the
    /// `skip` newest.
    #[inline(always)]
    fn prefetch_by<P: Probing>(&self, hash: &ItemHash, probes: u32, skip: usize) {
        let mut budget = probes;
        for (index, filter) in self.filters.iter().enumerate().rev().skip(skip) {
            if budget == 0 || filter.shape().bit_bytes() < PREFETCH_MIN_BYTES {
                break;
            }
            let count = filter.shape().hash_count.min(budget);
            filter.prefetch_by::<P>(&P::for_sub_filter(hash, index), count);
            budget -= count;
        }
    }

    /// Looks up items in order, answering each through `answer`, with their memory accesses
    /// overlapped (see [`pipelined`]).
    pub fn contains_many<'a>(
        &self,
        items: impl IntoIterator<Item = &'a [u8]>,
        answer: impl FnMut(bool),
    ) {
        self.contains_many_tuned(items, AHEAD, PREFETCH_PROBES, answer)
    }

    /// [`Chain::contains_many`] prefetching `ahead` items ahead, `probes` probes each.
    fn contains_many_tuned<'a>(
        &self,
        items: impl IntoIterator<Item = &'a [u8]>,
        ahead: usize,
        probes: u32,
        mut answer: impl FnMut(bool),
    ) {
        pipelined(self, items, ahead, probes, |chain, hash| {
            answer(chain.contains_hash(hash));
            true
        });
    }

    /// Adds items in order, exactly as [`Chain::add`] one after the other would, answering each
    /// through `answer`; `answer` returns false to stop (the rest is not added). Memory accesses
    /// are overlapped (see [`pipelined`]).
    pub fn add_many<'a>(
        &mut self,
        items: impl IntoIterator<Item = &'a [u8]>,
        max_bytes: u64,
        answer: impl FnMut(Result<bool, FilterError>) -> bool,
    ) {
        self.add_many_tuned(items, max_bytes, AHEAD, PREFETCH_PROBES, answer)
    }

    /// [`Chain::add_many`] prefetching `ahead` items ahead, `probes` probes each.
    fn add_many_tuned<'a>(
        &mut self,
        items: impl IntoIterator<Item = &'a [u8]>,
        max_bytes: u64,
        ahead: usize,
        probes: u32,
        mut answer: impl FnMut(Result<bool, FilterError>) -> bool,
    ) {
        pipelined(self, items, ahead, probes, |chain, hash| {
            answer(chain.add_hash(hash, max_bytes))
        });
    }

    pub(crate) fn filter_mut(&mut self, index: usize) -> &mut SubFilter {
        &mut self.filters[index]
    }

    fn newest(&self) -> &SubFilter {
        // A chain always has at least one sub-filter: `new` makes one, `from_parts` demands one.
        &self.filters[self.filters.len() - 1]
    }

    /// Bytes a chain of these sub-filter shapes takes: the bit arrays and the bookkeeping of the
    /// chain and of each sub-filter. This is the figure `bf.max-filter-bytes` bounds; it depends
    /// on the shapes alone, so every server makes the same decision for the same filter.
    pub fn planned_bytes<'a>(shapes: impl IntoIterator<Item = &'a Shape>) -> u64 {
        let (count, bits) = shapes
            .into_iter()
            .fold((0u64, 0u64), |(count, total), shape| {
                let bits = BitStore::planned_bytes(storage_bits(shape.bits));
                (count + 1, total.saturating_add(bits))
            });
        VALUE_BYTES
            .saturating_add(charged_array::<SubFilter>(count))
            .saturating_add(bits)
    }

    /// [`Chain::planned_bytes`] of this chain's sub-filters, and the state of a restore in
    /// progress: what `Size` reports.
    pub fn planned_size(&self) -> u64 {
        let restoring = if self.restoring.is_some() {
            Restoring::charged()
        } else {
            0
        };
        Chain::planned_bytes(self.filters.iter().map(SubFilter::shape)).saturating_add(restoring)
    }

    /// Calls `visit` with the address and length of every heap allocation the chain owns (not
    /// counting the chain itself), so the host can ask its allocator what each really costs.
    pub fn visit_allocations(&self, visit: &mut dyn FnMut(*const u8, usize)) {
        visit(
            self.filters.as_ptr().cast(),
            std::mem::size_of_val(&*self.filters),
        );
        for filter in &self.filters {
            filter.bits().visit_allocations(visit);
        }
        if let Some(restoring) = &self.restoring {
            visit(
                std::ptr::from_ref::<Restoring>(restoring).cast(),
                std::mem::size_of::<Restoring>(),
            );
        }
    }
}

/// The largest total capacity of a chain: what BF.INFO can report as an integer. (Items never
/// pass their sub-filter's capacity, so their total fits too.)
const MAX_CAPACITY: u64 = i64::MAX as u64;

/// Checks that the sub-filters' capacities add up to at most [`MAX_CAPACITY`].
fn check_total_capacity(filters: &[SubFilter]) -> Result<(), FilterError> {
    filters
        .iter()
        .try_fold(0u64, |total, filter| {
            total
                .checked_add(filter.shape().capacity)
                .filter(|total| *total <= MAX_CAPACITY)
        })
        .map(|_| ())
        .ok_or(FilterError::Corrupt("total capacity out of range"))
}

/// Checks that a stored sub-filter of shape `newer` may follow one of shape `older` holding
/// `older_items` items: only scaling chains have more than one sub-filter, each has `expansion`
/// times the capacity and half the error rate of the one before it, and a sub-filter is only
/// followed once it is full.
pub fn check_successor(
    growth: Growth,
    older: &Shape,
    older_items: u64,
    newer: &Shape,
) -> Result<(), FilterError> {
    let Growth::Scaling { expansion } = growth else {
        return Err(FilterError::Corrupt(
            "a non-scaling filter with several sub-filters",
        ));
    };
    if older.capacity.checked_mul(u64::from(expansion)) != Some(newer.capacity)
        || older.error / 2.0 != newer.error
    {
        return Err(FilterError::Corrupt(
            "sub-filters do not follow the growth rule",
        ));
    }
    if older_items < older.capacity {
        return Err(FilterError::Corrupt("an older sub-filter is not full"));
    }
    Ok(())
}

/// Runs `visit` on the hash of each item, in order, while the cache lines of the items [`AHEAD`]
/// places further on are being loaded, so that memory latency overlaps instead of adding up.
/// Items are hashed a group at a time into a buffer on the stack: nothing is allocated. `visit`
/// returns false to stop. `chain` is a `&Chain` for lookups, a `&mut Chain` for adds.
fn pipelined<'a, C: std::borrow::Borrow<Chain>>(
    mut chain: C,
    items: impl IntoIterator<Item = &'a [u8]>,
    ahead_items: usize,
    probes: u32,
    mut visit: impl FnMut(&mut C, &ItemHash) -> bool,
) {
    let mut items = items.into_iter();
    let hashing = chain.borrow().format.hashing();
    let mut hashes = [ItemHash::of(&[]); GROUP];
    loop {
        let mut count = 0;
        for (slot, item) in hashes.iter_mut().zip(&mut items) {
            *slot = hashing.hash(item);
            count += 1;
        }
        // A single item has nothing to overlap with.
        let ahead = if count > 1 { ahead_items } else { 0 };
        for hash in &hashes[..count.min(ahead)] {
            chain.borrow().prefetch_probes(hash, probes);
        }
        for index in 0..count {
            if let Some(next) = hashes[..count].get(index + ahead).filter(|_| ahead > 0) {
                chain.borrow().prefetch_probes(next, probes);
            }
            if !visit(&mut chain, &hashes[index]) {
                return;
            }
        }
        if count < GROUP {
            return;
        }
    }
}

/// The shape of the sub-filter that follows `newest` in a chain of `layout` that grows by
/// `growth`.
fn next_shape(growth: Growth, newest: &Shape, layout: Layout) -> Result<Shape, FilterError> {
    let Growth::Scaling { expansion } = growth else {
        return Err(FilterError::Full);
    };
    let capacity = newest
        .capacity
        .checked_mul(u64::from(expansion))
        .ok_or(FilterError::CannotGrow)?;
    // The next error rate, half of this one, must be a normal double: compared before the
    // division, which could round a value just under the normal range up into it.
    if newest.error < 2.0 * f64::MIN_POSITIVE {
        return Err(FilterError::CannotGrow);
    }
    Shape::sized(capacity, newest.error / 2.0, layout)
}

mod early;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_next_sub_filter_has_expansion_times_the_capacity_and_half_the_error() {
        let newest = Shape::new(10, 0.005).unwrap();
        let next = next_shape(Growth::Scaling { expansion: 4 }, &newest, Layout::Classic).unwrap();
        assert_eq!(next, Shape::new(40, 0.0025).unwrap());
        assert_eq!(
            next_shape(Growth::Fixed, &newest, Layout::Classic),
            Err(FilterError::Full)
        );
    }

    #[test]
    fn bookkeeping_is_32_bytes_a_chain_and_80_a_sub_filter() {
        // Both jemalloc size classes. A sub-filter also owns its bit array's pieces and one
        // 16-byte pointer per piece: an EXPANSION 1 chain of 25 small sub-filters is 3,008 bytes
        // in all (it was 4,544 before the pieces' table and the chain's list were made exact).
        assert_eq!(std::mem::size_of::<Chain>(), 32);
        assert_eq!(std::mem::size_of::<SubFilter>(), 80);
    }

    #[test]
    fn a_scaling_chain_at_the_smallest_error_rate_grows_once() {
        use crate::bloom::sizing::MIN_ERROR_RATE;
        let growth = Growth::Scaling { expansion: 1 };
        let mut chain = Chain::new(1, MIN_ERROR_RATE, growth, u64::MAX).unwrap();
        assert_eq!(chain.add(b"a", u64::MAX), Ok(true));
        assert_eq!(chain.add(b"b", u64::MAX), Ok(true));
        assert_eq!(chain.filters().len(), 2);
        assert_eq!(chain.filters()[1].shape().error, f64::MIN_POSITIVE);
        assert_eq!(chain.add(b"c", u64::MAX), Err(FilterError::CannotGrow));
        // Just under the floor, the chain could not have grown: it is refused.
        let below = f64::from_bits(MIN_ERROR_RATE.to_bits() - 1);
        assert_eq!(
            Chain::new(1, below, growth, u64::MAX),
            Err(FilterError::BadErrorRate)
        );
        let first = Shape::new(1, below / 2.0).unwrap();
        assert_eq!(
            next_shape(growth, &first, Layout::Classic),
            Err(FilterError::CannotGrow)
        );
    }

    #[test]
    fn growth_that_would_overflow_the_capacity_or_the_error_is_refused() {
        let huge = Shape {
            capacity: 1 << 50,
            ..Shape::new(1, 0.01).unwrap()
        };
        let growth = Growth::Scaling {
            expansion: MAX_EXPANSION,
        };
        assert_eq!(
            next_shape(growth, &huge, Layout::Classic),
            Err(FilterError::CannotGrow)
        );
        let tiny = Shape::new(1, f64::MIN_POSITIVE).unwrap();
        assert_eq!(
            next_shape(Growth::Scaling { expansion: 1 }, &tiny, Layout::Classic),
            Err(FilterError::CannotGrow)
        );
    }
}
