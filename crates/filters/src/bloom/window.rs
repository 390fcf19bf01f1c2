//! Windowed Bloom filters: remember an item for a window of time, not forever.
//!
//! Time is cut into *slots* of a quarter of the window ([`GENERATIONS`] per window), counted from
//! the Unix epoch in milliseconds, so every server agrees on them: slot `k` covers
//! `[k * slot, (k + 1) * slot)`. The items added during one slot go into that slot's
//! *generation*, a list of sub-filters (*parts*) filled one after the other. Each part expires on
//! its own: a window after the last item it took. An item added at `t` is therefore held at least
//! until `t + window`, and at most until `t + window * 5/4` (its part's last item came in the same
//! slot): the slack is one slot.
//!
//! Sizing, for `capacity` items per window (C) at false-positive rate `error` (p):
//! - a generation may hold its *budget* of items: what the window leaves after the three slots
//!   before it, `C - (items of slots k-3, k-2, k-1)`; with at most C items in any window no slot
//!   ever takes more;
//! - its parts hold `ceil(C/G)` items each (the last one cut to the budget), where G is 6 up to
//!   an error rate of 2% and 8 above it ([`parts_per_window`]), at an error rate proportional to
//!   their capacity: `p * capacity / (C + ceil(C/G))`, a seventh of p for a whole part (a ninth
//!   for G = 8). Every item then costs at most `p / (C + ceil(C/G))` of false-positive rate,
//!   however the items are spread over parts and generations. Classic parts are lean
//!   ([`Shape::lean`]): the fewest probes whose bits stay within 4% of the optimum's (7 instead
//!   of 10 at 1%, for 3.1% more bits), since a lookup of a held item asks the parts newer than
//!   its own in vain first (2.5 of them on average in a full generation of six);
//! - at any time, the live parts hold the items of the last window (at most C) and at most the
//!   older part of one that straddles its start (less than `ceil(C/G)`): the false-positive rate
//!   is at most p, whatever the arrival pattern, with at most C items in any window;
//! - memory: the live parts are full but for the newest of each of the five generations that can
//!   be live, so their bits are at most `(C + C/G + 5 C/G) * L * bits_per_item(p/(G+1))`, that
//!   is `(1 + 6/G) * L * (1 + ln((G+1)/2) / ln(2)^2 / bits_per_item(p/2))` times a plain
//!   filter's, where `L` (at most 1.04) is what the lean parts take over the optimum: 2.55x at 1%
//!   and 2.57x at 2% (G = 6), 2.69x at 10% (G = 8), under 3x up to 20%. Fewer, larger parts make
//!   a lookup ask fewer of them; at high error rates an item has few bits, and the finer split
//!   keeps the bound under 3x. Measured on simulated time by the unit tests, worst patterns
//!   included;
//! - past its budget (more than C items in a window) a generation keeps growing as a scaling
//!   filter does: each part `expansion` times the last at half its error rate. A NONSCALING
//!   windowed filter refuses those items instead: it takes C items in any window, however they
//!   arrive, and no more.
//!
//! Time is whatever the caller says it is (milliseconds since the epoch): the module passes the
//! primary's clock, and replicas and AOF replays the time the primary propagated, so every copy
//! makes the same parts with the same expiry. Reads take the reader's own clock and skip parts
//! that have expired by it; writes drop them.
//!
//! Filters saved by the first release of windowed filters (stored revision 102, dump version 2)
//! still load: their generations keep the sizing they were made with ([`Rule::Legacy`]) and
//! expire whole, on their old schedule; every generation made after that is sized as above.

use crate::bloom::locator::EarlyHash;
use crate::bloom::sizing::{Shape, MIN_ERROR_RATE};
use crate::bloom::sub_filter::SubFilter;
use crate::error::FilterError;
use crate::hash::ItemHash;

/// Generations (slots) per window.
pub const GENERATIONS: u64 = 4;
/// The most generations a filter holds: the slot of now and the four before it.
pub const MAX_GENERATIONS: usize = GENERATIONS as usize + 1;
/// Parts per window's capacity: a part holds `1/G` of it, G = 6 up to this error rate, 8 above.
pub const FINER_PARTS_ABOVE: f64 = 0.02;

/// G, the number of parts a window's capacity is cut into at error rate `error` (see the module
/// documentation).
pub fn parts_per_window(error: f64) -> u64 {
    if error > FINER_PARTS_ABOVE {
        8
    } else {
        6
    }
}
/// The shortest window, in seconds.
pub const MIN_WINDOW_SECONDS: u64 = 1;
/// The longest window, in seconds: ten years of 365.25 days.
pub const MAX_WINDOW_SECONDS: u64 = 10 * 36_525 * 864;
/// The expansion of a windowed filter's generations past their budget when none is given.
pub const DEFAULT_EXPANSION: u16 = 4;

/// The largest capacity (what BF.INFO reports as an integer).
const MAX_CAPACITY: u64 = i64::MAX as u64;

/// The smallest error rate a windowed filter may be asked for: a part of one item gets
/// `error / (C + ceil(C/6))`, which must be a rate a filter can be built and grown for whatever
/// the capacity.
pub const MIN_WINDOWED_ERROR_RATE: f64 = MIN_ERROR_RATE * (MAX_CAPACITY as f64 * 7.0 / 6.0 + 2.0);

/// The floor of the first release's windowed filters, whose generations were built for
/// `error * 5/11` ([`Rule::Legacy`]).
const LEGACY_MIN_ERROR_RATE: f64 = MIN_ERROR_RATE * 11.0 / 5.0 * (1.0 + f64::EPSILON);

/// A window's length, checked: from [`MIN_WINDOW_SECONDS`] to [`MAX_WINDOW_SECONDS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    seconds: u64,
}

impl Window {
    /// A window of `seconds`, if in range.
    pub fn seconds(seconds: u64) -> Result<Window, FilterError> {
        if (MIN_WINDOW_SECONDS..=MAX_WINDOW_SECONDS).contains(&seconds) {
            Ok(Window { seconds })
        } else {
            Err(FilterError::BadWindow)
        }
    }

    /// The window, in seconds.
    pub fn as_seconds(self) -> u64 {
        self.seconds
    }

    /// The window, in milliseconds.
    pub fn as_millis(self) -> u64 {
        self.seconds * 1000
    }

    /// One slot: a quarter of the window, in milliseconds (exact: 250 per second).
    pub fn slot_millis(self) -> u64 {
        self.as_millis() / GENERATIONS
    }
}

/// One sub-filter of a generation and when it expires: a window after the last item it took.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    filter: SubFilter,
    expires_at: u64,
}

impl Part {
    /// A part rebuilt from stored pieces (checked with its generation by
    /// [`Windowed::from_parts`]).
    pub fn new(filter: SubFilter, expires_at: u64) -> Part {
        Part { filter, expires_at }
    }

    /// Its sub-filter.
    pub fn filter(&self) -> &SubFilter {
        &self.filter
    }

    /// When it expires, in milliseconds since the epoch: it holds items until just before.
    pub fn expires_at(&self) -> u64 {
        self.expires_at
    }

    pub(crate) fn filter_mut(&mut self) -> &mut SubFilter {
        &mut self.filter
    }
}

/// The items added during one slot: its parts, oldest first.
#[derive(Debug, Clone, PartialEq)]
pub struct Generation {
    slot: u64,
    rule: Rule,
    /// The number of its first part in the generation (parts before it have expired). It picks
    /// the part's shape and the derivation of the item hash the part uses, which must not change
    /// as older parts go.
    first: u32,
    parts: Box<[Part]>,
}

impl Generation {
    /// A generation rebuilt from stored pieces (checked by [`Windowed::from_parts`]).
    pub fn from_parts(slot: u64, rule: Rule, first: u32, parts: Vec<Part>) -> Generation {
        Generation {
            slot,
            rule,
            first,
            parts: parts.into_boxed_slice(),
        }
    }

    /// A generation of the first release: its chain's sub-filters, which all expired together
    /// a window after the slot ended.
    pub(crate) fn legacy(shape: &WindowedShape, slot: u64, filters: Vec<SubFilter>) -> Generation {
        let expires_at = shape.expiry(slot);
        let parts = filters
            .into_iter()
            .map(|filter| Part { filter, expires_at })
            .collect();
        Generation::from_parts(slot, Rule::Legacy, 0, parts)
    }

    /// Its slot's number, counted from the epoch.
    pub fn slot(&self) -> u64 {
        self.slot
    }

    /// How its parts are sized.
    pub fn rule(&self) -> Rule {
        self.rule
    }

    /// The number of its first part (see the field).
    pub fn first(&self) -> u32 {
        self.first
    }

    /// Its parts, oldest first, expired or not.
    pub fn parts(&self) -> &[Part] {
        &self.parts
    }

    pub(crate) fn parts_mut(&mut self) -> &mut [Part] {
        &mut self.parts
    }

    /// Its parts holding items at `now`, oldest first.
    pub fn live_parts(&self, now: u64) -> impl DoubleEndedIterator<Item = &Part> + Clone {
        self.parts.iter().filter(move |part| part.expires_at > now)
    }

    /// Items it took, in every part it still has.
    pub fn items(&self) -> u64 {
        self.parts
            .iter()
            .map(|part| part.filter.items())
            .fold(0, u64::saturating_add)
    }

    /// When its last part expires.
    pub fn expires_at(&self) -> u64 {
        self.parts.last().map_or(0, |part| part.expires_at)
    }

    /// The hash part `position` (of `parts`) probes with.
    fn part_hash(&self, hash: &ItemHash, position: usize) -> ItemHash {
        hash.for_sub_filter(self.first as usize + position)
    }
}
/// What a loader does with a windowed filter that starts further ahead of its clock than
/// [`Windowed::check_clock`] allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClockTrust {
    /// Refuse it (a client's data: such a time came from no real write).
    Check,
    /// Keep it as it is (a primary's: its clock is the filter's).
    Keep,
    /// Bring it back to the clock (the server's own data, written before its clock stepped back:
    /// refusing it would lose it, or stop the server from starting).
    BringBack,
}

/// What [`Windowed::settle_clock`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settled {
    /// The filter was within the clock's allowance: nothing.
    OnTime,
    /// It was ahead, and kept so.
    KeptAhead,
    /// It was ahead, and moved this many milliseconds back.
    BroughtBack { millis: u64 },
}

/// What [`Windowed::expire`] dropped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Expired {
    /// Parts (sub-filters) dropped.
    pub parts: usize,
    /// Generations dropped whole.
    pub generations: usize,
}

/// A filter that holds each item for a window of time: the value of a `BF.*` key reserved with
/// `WINDOW`.
#[derive(Debug, Clone, PartialEq)]
pub struct Windowed {
    shape: WindowedShape,
    /// Oldest first, one per slot; their parts' expiry times never decrease from the first part
    /// of the first generation to the last of the last. Allocated to the exact count, so that the
    /// bytes the filter takes depend on its parts alone.
    generations: Box<[Generation]>,
    /// While the filter is being rebuilt from dump chunks: as for a chain (see `crate::bloom::dump`).
    pub(crate) restoring: Option<Box<crate::restoring::Restoring>>,
}

impl Windowed {
    /// An empty windowed filter: no generation until the first item.
    pub fn new(shape: WindowedShape) -> Windowed {
        Windowed {
            shape,
            generations: Box::new([]),
            restoring: None,
        }
    }

    /// A windowed filter rebuilt from stored generations, checked as one that this filter could
    /// have made (see [`check_generations`]).
    pub fn from_parts(
        shape: WindowedShape,
        generations: Vec<Generation>,
    ) -> Result<Windowed, FilterError> {
        let outlines: Vec<Outline> = generations.iter().map(Generation::outline).collect();
        check_generations(&shape, &outlines)?;
        Ok(Windowed {
            shape,
            generations: generations.into_boxed_slice(),
            restoring: None,
        })
    }

    /// The parameters it was created with.
    pub fn shape(&self) -> &WindowedShape {
        &self.shape
    }

    /// Every generation it holds, oldest first, with their parts expired or not.
    pub fn generations(&self) -> &[Generation] {
        &self.generations
    }

    pub(crate) fn generations_mut(&mut self) -> &mut [Generation] {
        &mut self.generations
    }

    /// The generations holding items at `now`, oldest first.
    pub fn live(&self, now: u64) -> impl DoubleEndedIterator<Item = &Generation> + Clone {
        self.generations
            .iter()
            .filter(move |generation| generation.expires_at() > now)
    }

    /// True if the item may have been added within the window before `now` (and certainly was
    /// not, or was longer ago than the slack allows, if false).
    pub fn contains(&self, item: &[u8], now: u64) -> bool {
        self.contains_hash(&ItemHash::of(item), now)
    }

    fn contains_hash(&self, hash: &ItemHash, now: u64) -> bool {
        // Newest first; expiry times only grow towards the newest, so the first expired part ends
        // the search. (Requesting every live part's first probes before reading any was tried:
        // in cache it saves no miss and costs every part's hash, also for items found in the
        // newest part; measured slower, see docs/performance.md.)
        for generation in self.generations.iter().rev() {
            for (position, part) in generation.parts.iter().enumerate().rev() {
                if part.expires_at <= now {
                    return false;
                }
                if part.filter.contains(&generation.part_hash(hash, position)) {
                    return true;
                }
            }
        }
        false
    }

    /// Items it holds at `now`: those of its live parts.
    pub fn items(&self, now: u64) -> u64 {
        self.generations
            .iter()
            .flat_map(|generation| generation.live_parts(now))
            .map(|part| part.filter.items())
            .fold(0, u64::saturating_add)
    }

    /// When its oldest part expires (when a sweep next has something to drop), if it has one.
    pub fn next_expiry(&self) -> Option<u64> {
        let oldest = self.generations.first()?;
        oldest.parts.first().map(|part| part.expires_at)
    }

    /// When its newest generation of the first release expires, if it has one: the first release
    /// gave the key that time to live (it expired with its newest generation), which a loader of
    /// its filters finds still set.
    pub fn legacy_expiry(&self) -> Option<u64> {
        self.generations
            .iter()
            .filter(|generation| generation.rule == Rule::Legacy)
            .map(Generation::expires_at)
            .max()
    }

    /// True if some part has expired at `now`.
    pub fn has_expired(&self, now: u64) -> bool {
        self.next_expiry().is_some_and(|expiry| expiry <= now)
    }

    /// Drops the parts that have expired at `now`, and the generations left with none.
    pub fn expire(&mut self, now: u64) -> Expired {
        let mut expired = Expired::default();
        if !self.has_expired(now) {
            return expired;
        }
        let mut generations = std::mem::take(&mut self.generations).into_vec();
        let whole = generations
            .iter()
            .take_while(|generation| generation.expires_at() <= now)
            .count();
        expired.generations = whole;
        expired.parts = generations[..whole]
            .iter()
            .map(|generation| generation.parts.len())
            .sum();
        generations.drain(..whole);
        if let Some(oldest) = generations.first_mut() {
            let gone = oldest
                .parts
                .iter()
                .take_while(|part| part.expires_at <= now)
                .count();
            if gone > 0 {
                let mut parts = std::mem::take(&mut oldest.parts).into_vec();
                parts.drain(..gone);
                oldest.parts = parts.into_boxed_slice();
                // At most a part per 8th of the capacity plus the growths: the count fits.
                oldest.first = oldest.first.saturating_add(gone as u32);
                expired.parts += gone;
            }
        }
        self.generations = generations.into_boxed_slice();
        expired
    }

    /// True if adding `items` new items at `now` could make it take more memory: a new slot's
    /// generation, or a new part.
    pub fn may_grow_within(&self, items: u64, now: u64) -> bool {
        match self.generations.last() {
            Some(newest) if newest.slot >= self.shape.slot_at(now) => {
                newest.parts.last().is_none_or(|part| {
                    let filter = &part.filter;
                    items > filter.shape().capacity - filter.items()
                })
            }
            _ => true,
        }
    }

    /// Adds an item at time `now`: `Ok(true)` if it was new. An item a live part holds answers
    /// false and keeps its place (its life is not extended). A new item goes into the generation
    /// of `now`'s slot (made if needed; a `now` before the newest slot adds there), in its newest
    /// part, or a new part past it, and that part then expires a window after `now`. Expired parts
    /// are dropped first. Past `max_bytes` (the whole filter) a new part is refused, as past the
    /// budget of a NONSCALING filter; either way nothing is added.
    pub fn add(&mut self, item: &[u8], now: u64, max_bytes: u64) -> Result<bool, FilterError> {
        self.add_early(item, None, now, max_bytes)
    }

    /// [`Windowed::add`] of an item maybe hashed early (see [`Windowed::contains_early`]).
    pub fn add_early(
        &mut self,
        item: &[u8],
        early: Option<EarlyHash>,
        now: u64,
        max_bytes: u64,
    ) -> Result<bool, FilterError> {
        self.expire(now);
        let hash = early::early_or_own(item, early);
        if self.contains_hash(&hash, now) {
            return Ok(false);
        }
        self.insert_new(&hash, now, max_bytes)?;
        Ok(true)
    }

    /// Inserts an item the filter does not hold.
    fn insert_new(&mut self, hash: &ItemHash, now: u64, max_bytes: u64) -> Result<(), FilterError> {
        let slot = self.shape.slot_at(now);
        let current = match self.generations.last() {
            Some(newest) if newest.slot >= slot => Some(self.generations.len() - 1),
            _ => None,
        };
        let (slot, rule, index) = match current.map(|at| &self.generations[at]) {
            Some(generation) => {
                if generation.parts.last().is_some_and(|p| !p.filter.is_full()) {
                    self.insert_in_newest_part(hash, now);
                    return Ok(());
                }
                let index = generation.first as usize + generation.parts.len();
                let index = u32::try_from(index).map_err(|_| FilterError::CannotGrow)?;
                (generation.slot, generation.rule, index)
            }
            None => (slot, Rule::Budget(self.budget_at(slot)), 0),
        };
        let shape = self.shape.part_shape(rule, index)?;
        // The filter with the new part, as its Size will count it.
        let mut outline: Vec<Vec<&Shape>> = self
            .generations
            .iter()
            .map(|generation| generation.parts.iter().map(|p| p.filter.shape()).collect())
            .collect();
        match current {
            Some(at) => outline[at].push(&shape),
            None => outline.push(vec![&shape]),
        }
        let bytes = planned_windowed(outline);
        if bytes > max_bytes {
            return Err(FilterError::TooLarge { bytes });
        }
        let part = Part {
            filter: SubFilter::new(shape)?,
            expires_at: 0,
        };
        match current {
            Some(at) => {
                let generation = &mut self.generations[at];
                let mut parts = std::mem::take(&mut generation.parts).into_vec();
                let room = parts.try_reserve_exact(1);
                if room.is_ok() {
                    parts.push(part);
                }
                generation.parts = parts.into_boxed_slice();
                room.map_err(|_| FilterError::OutOfMemory { bytes: 0 })?;
            }
            None => {
                let generation = Generation::from_parts(slot, rule, 0, vec![part]);
                let mut generations = std::mem::take(&mut self.generations).into_vec();
                let room = generations.try_reserve_exact(1);
                if room.is_ok() {
                    generations.push(generation);
                }
                self.generations = generations.into_boxed_slice();
                room.map_err(|_| FilterError::OutOfMemory { bytes: 0 })?;
            }
        }
        self.insert_in_newest_part(hash, now);
        Ok(())
    }

    /// Sets the item's bits in the newest part (which has room) and moves its expiry to a window
    /// after `now` (taken within the generation's slot, and never before an older part's).
    fn insert_in_newest_part(&mut self, hash: &ItemHash, now: u64) {
        let window = self.shape.window.as_millis();
        let slot_millis = self.shape.window.slot_millis();
        let Some(generation) = self.generations.last_mut() else {
            return;
        };
        let start = generation.slot.saturating_mul(slot_millis);
        let taken = now.clamp(start, start.saturating_add(slot_millis - 1));
        let position = generation.parts.len() - 1;
        let item_hash = generation.part_hash(hash, position);
        let floor = position
            .checked_sub(1)
            .map_or(0, |older| generation.parts[older].expires_at);
        let part = &mut generation.parts[position];
        part.filter.insert(&item_hash);
        part.expires_at = part.expires_at.max(floor).max(taken.saturating_add(window));
    }

    /// The items slot `slot` may take within the window: the capacity, less what the three
    /// slots before it took.
    fn budget_at(&self, slot: u64) -> u64 {
        let held = self
            .generations
            .iter()
            .filter(|generation| {
                generation.slot < slot && generation.slot.saturating_add(GENERATIONS) > slot
            })
            .map(Generation::items)
            .fold(0, u64::saturating_add);
        self.shape.capacity.saturating_sub(held)
    }

    /// Bytes the filter takes as `bf.max-filter-bytes` counts them: itself, its generations and
    /// every part with its bits.
    pub fn planned_size(&self) -> u64 {
        let restoring = if self.restoring.is_some() {
            crate::restoring::Restoring::charged()
        } else {
            0
        };
        planned_windowed(
            self.generations
                .iter()
                .map(|g| g.parts.iter().map(|part| part.filter.shape())),
        )
        .saturating_add(restoring)
    }

    /// Bytes an empty filter with one part (its first item's) would take: what creating it must
    /// fit in.
    pub fn first_item_bytes(shape: &WindowedShape) -> Result<u64, FilterError> {
        let part = shape.part_shape(Rule::Budget(shape.capacity), 0)?;
        Ok(planned_windowed([[&part]]))
    }

    /// Checks that the filter does not start in the future: its newest generation's slot starts
    /// at most a window after `now` (an allowance for the clocks of servers that pass filters
    /// between them). A filter from further ahead would hold its items for longer than its window.
    pub fn check_clock(&self, now: u64) -> Result<(), FilterError> {
        match self.generations.last() {
            Some(newest)
                if self.shape.slot_start(newest.slot)
                    > now.saturating_add(self.shape.window.as_millis()) =>
            {
                Err(FilterError::Corrupt(
                    "a generation starts more than a window after this server's clock",
                ))
            }
            _ => Ok(()),
        }
    }

    /// Checks a filter a loader read against the clock ([`Windowed::check_clock`]) and, if it
    /// starts further ahead than that allows, does what `trust` says: refuse it, keep it as it is,
    /// or bring it back to `now`.
    pub fn settle_clock(&mut self, now: u64, trust: ClockTrust) -> Result<Settled, FilterError> {
        match (self.check_clock(now), trust) {
            (Ok(()), _) => Ok(Settled::OnTime),
            (Err(err), ClockTrust::Check) => Err(err),
            (Err(_), ClockTrust::Keep) => Ok(Settled::KeptAhead),
            (Err(_), ClockTrust::BringBack) => Ok(Settled::BroughtBack {
                millis: self.bring_back(now),
            }),
        }
    }

    /// Moves every generation back by whole slots, so that the newest one is `now`'s (or, near the
    /// epoch, the oldest slot 0), and every part's expiry with it: the filter is the same, as if
    /// its items had come that much earlier. Returns how far back it moved, in milliseconds.
    fn bring_back(&mut self, now: u64) -> u64 {
        let (Some(oldest), Some(newest)) = (self.generations.first(), self.generations.last())
        else {
            return 0;
        };
        let slots = newest
            .slot
            .saturating_sub(self.shape.slot_at(now))
            .min(oldest.slot);
        let millis = slots * self.shape.window.slot_millis();
        for generation in self.generations.iter_mut() {
            generation.slot -= slots;
            for part in generation.parts.iter_mut() {
                part.expires_at = part.expires_at.saturating_sub(millis);
            }
        }
        millis
    }

    /// A copy, or [`FilterError::OutOfMemory`].
    pub fn try_clone(&self) -> Result<Windowed, FilterError> {
        let mut generations = Vec::new();
        generations
            .try_reserve_exact(self.generations.len())
            .map_err(|_| FilterError::OutOfMemory { bytes: 0 })?;
        for generation in self.generations.iter() {
            let mut parts = Vec::new();
            parts
                .try_reserve_exact(generation.parts.len())
                .map_err(|_| FilterError::OutOfMemory { bytes: 0 })?;
            for part in generation.parts.iter() {
                parts.push(Part {
                    filter: part.filter.try_clone()?,
                    expires_at: part.expires_at,
                });
            }
            generations.push(Generation {
                slot: generation.slot,
                rule: generation.rule,
                first: generation.first,
                parts: parts.into_boxed_slice(),
            });
        }
        Ok(Windowed {
            shape: self.shape,
            generations: generations.into_boxed_slice(),
            restoring: self.restoring.clone(),
        })
    }

    /// Calls `visit` with every heap allocation the filter owns (not the filter itself).
    pub fn visit_allocations(&self, visit: &mut dyn FnMut(*const u8, usize)) {
        if !self.generations.is_empty() {
            visit(
                self.generations.as_ptr().cast(),
                std::mem::size_of_val(&*self.generations),
            );
        }
        for generation in self.generations.iter() {
            if !generation.parts.is_empty() {
                visit(
                    generation.parts.as_ptr().cast(),
                    std::mem::size_of_val(&*generation.parts),
                );
            }
            for part in generation.parts.iter() {
                part.filter.bits().visit_allocations(visit);
            }
        }
        if let Some(restoring) = &self.restoring {
            visit(
                std::ptr::from_ref::<crate::restoring::Restoring>(restoring).cast(),
                std::mem::size_of::<crate::restoring::Restoring>(),
            );
        }
    }
}

mod bytes;
mod check;
mod early;
mod shape;

pub(crate) use bytes::planned_windowed;
pub use check::{check_generations, Outline};
pub use shape::{Rule, WindowedShape};

#[cfg(test)]
mod tests;
