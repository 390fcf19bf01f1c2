//! Windowed filters: remember an item for a window of time, not forever.
//!
//! A windowed filter is a list of *generations*, each a scaling [`Chain`] that takes the items
//! added during one *slot* of time: a quarter of the window ([`GENERATIONS`] slots per window).
//! Slots are counted from the Unix epoch, in milliseconds, so every server agrees on them: slot
//! `k` covers `[k * slot, (k + 1) * slot)`. An item goes into the generation of the slot it was
//! added in, and that generation is dropped when its last item has been held for a whole window:
//! at `(k + 1) * slot + window`. So an item added at `t` is held at least until `t + window` and
//! at most until `t + window * 5/4`: the slack is one slot. At any time, the generations of the
//! last five slots are live.
//!
//! Why generations of scaling chains. The literature offers age-partitioned Bloom filters and
//! their kin, which use memory better when items arrive at a steady pace, but size their slices
//! for a fixed number of items per slice: a burst of a window's items in one slice breaks their
//! false-positive rate. A chain per slot takes a burst by growing, as a plain scaling filter does,
//! drops a slot's memory whole when it expires, and keeps every other property of the plain
//! filters (the same sizing, hashing, bit format and checks).
//!
//! Sizing. For `capacity` items per window at false-positive rate `error`:
//! - each generation's chain is built for `capacity * 5/16` items (a quarter of the window's, with
//!   a quarter more as headroom for uneven arrival) at `error * 5/11`, growing by the filter's
//!   expansion (4 unless given) when a slot takes more;
//! - a lookup asks every live generation, so the false-positive rates add up. With at most
//!   `capacity` items in any window, the four newest generations hold at most `capacity` items
//!   (at most three full chains: `3/2 * error * 5/11`) and the oldest at most `capacity` (its first
//!   sub-filter full and the second partly: about `1/2 * error * 5/11`), about `error * 10/11` in
//!   all, at or below `error` however the items arrived;
//! - memory against a plain filter of the same capacity and error rate: five generations of
//!   `capacity * 5/16` items at a quarter of the error rate, about 1.8x at 1% and 1.97x at 10%
//!   when items arrive evenly; one generation grown by 4 when a window's items come in one burst,
//!   about 2.0x at 1% (the unit tests measure both). A generation is only allocated when its slot
//!   receives an item.
//!
//! Time is whatever the caller says it is (milliseconds since the epoch): the module passes the
//! primary's clock, and replicas and AOF replays the time the primary propagated, so every copy
//! makes the same generations at the same instants. Reads take the reader's own clock and skip
//! generations that have expired by it; writes drop them.

use crate::chain::{Chain, Growth};
use crate::sizing::{check_requested_error_rate, Shape, MIN_ERROR_RATE};
use crate::FilterError;
use std::num::NonZeroU64;

/// Generations (slots) per window.
pub const GENERATIONS: u64 = 4;
/// The shortest window, in seconds.
pub const MIN_WINDOW_SECONDS: u64 = 1;
/// The longest window, in seconds: ten years of 365.25 days.
pub const MAX_WINDOW_SECONDS: u64 = 10 * 36_525 * 864;
/// The expansion of a windowed filter's generations when none is given: a burst of a window's
/// items fits its slot's chain in two sub-filters.
pub const DEFAULT_EXPANSION: u16 = 4;

/// The smallest error rate a windowed filter may be asked for: its generations are built for
/// `error * 5/11`, which must itself be one a filter can be built and grown for.
pub const MIN_WINDOWED_ERROR_RATE: f64 = MIN_ERROR_RATE * 11.0 / 5.0 * (1.0 + f64::EPSILON);

/// The generations' share of the error rate, as a fraction (numerator, denominator).
const ERROR_SHARE: (f64, f64) = (5.0, 11.0);
/// The generations' capacity, as a fraction of the window's: a quarter, plus a quarter of that.
const CAPACITY_SHARE: (u128, u128) = (5, 16);

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

/// The items added during one slot.
#[derive(Debug, Clone, PartialEq)]
pub struct Generation {
    slot: u64,
    chain: Chain,
}

impl Generation {
    /// A generation rebuilt from stored parts.
    pub fn from_parts(slot: u64, chain: Chain) -> Generation {
        Generation { slot, chain }
    }

    /// Its slot's number, counted from the epoch.
    pub fn slot(&self) -> u64 {
        self.slot
    }

    /// The items of its slot.
    pub fn chain(&self) -> &Chain {
        &self.chain
    }

    pub(crate) fn chain_mut(&mut self) -> &mut Chain {
        &mut self.chain
    }
}

/// How a windowed filter's generations are built: the parameters the filter was created with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WindowedShape {
    /// Items per window.
    pub capacity: u64,
    /// The false-positive rate asked for.
    pub error: f64,
    /// How each generation's chain grows.
    pub growth: Growth,
    pub window: Window,
}

impl WindowedShape {
    /// Checks the parameters of a windowed filter.
    pub fn new(
        capacity: u64,
        error: f64,
        growth: Growth,
        window: Window,
    ) -> Result<WindowedShape, FilterError> {
        check_requested_error_rate(error)?;
        if error < MIN_WINDOWED_ERROR_RATE {
            return Err(FilterError::BadErrorRate);
        }
        if capacity == 0 || capacity > i64::MAX as u64 {
            return Err(FilterError::BadCapacity);
        }
        Ok(WindowedShape {
            capacity,
            error,
            growth,
            window,
        })
    }

    /// Items each generation's chain is first built for.
    pub fn generation_capacity(&self) -> u64 {
        let (numerator, denominator) = CAPACITY_SHARE;
        let scaled = (u128::from(self.capacity) * numerator).div_ceil(denominator);
        u64::try_from(scaled).unwrap_or(u64::MAX).max(1)
    }

    /// The error rate each generation's chain is built for.
    pub fn generation_error(&self) -> f64 {
        self.error * ERROR_SHARE.0 / ERROR_SHARE.1
    }

    /// The number of the slot that time `now` falls in.
    pub fn slot_at(&self, now: u64) -> u64 {
        now / self.window.slot_millis()
    }

    /// When the generation of slot `slot` expires: a window after its slot ends.
    pub fn expiry(&self, slot: u64) -> u64 {
        slot.saturating_add(GENERATIONS + 1)
            .saturating_mul(self.window.slot_millis())
    }

    /// An empty chain for a new generation, refused past `max_bytes`.
    fn new_generation(&self, max_bytes: u64) -> Result<Chain, FilterError> {
        Chain::new(
            self.generation_capacity(),
            self.generation_error(),
            self.growth,
            max_bytes,
        )
    }
}

/// A filter that holds each item for a window of time: the value of a `BF.*` key reserved with
/// `WINDOW`.
#[derive(Debug, Clone, PartialEq)]
pub struct Windowed {
    shape: WindowedShape,
    /// Oldest first, by slot; never two of one slot. Allocated to the exact count (a new one is
    /// made once a slot), so that the bytes the filter takes depend on its generations alone.
    generations: Box<[Generation]>,
    /// While the filter is being rebuilt from dump chunks: as for a chain (see `crate::dump`).
    pub(crate) restoring: Option<NonZeroU64>,
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

    /// A windowed filter rebuilt from stored generations, checked: oldest first, one per slot,
    /// each built as this filter builds them.
    pub fn from_parts(
        shape: WindowedShape,
        generations: Vec<Generation>,
    ) -> Result<Windowed, FilterError> {
        for pair in generations.windows(2) {
            if pair[0].slot >= pair[1].slot {
                return Err(FilterError::Corrupt("generations out of order"));
            }
        }
        if let Some(last) = generations.last() {
            if shape.expiry(last.slot) == u64::MAX {
                return Err(FilterError::Corrupt("generation slot out of range"));
            }
        }
        for generation in &generations {
            check_generation(&shape, generation.chain())?;
        }
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

    /// Every generation it holds, expired or not, oldest first.
    pub fn generations(&self) -> &[Generation] {
        &self.generations
    }

    pub(crate) fn generations_mut(&mut self) -> &mut [Generation] {
        &mut self.generations
    }

    /// The generations that hold items at `now`, oldest first.
    pub fn live(&self, now: u64) -> impl DoubleEndedIterator<Item = &Generation> + Clone {
        let shape = self.shape;
        self.generations
            .iter()
            .filter(move |generation| shape.expiry(generation.slot) > now)
    }

    /// True if the item may have been added within the window before `now` (and certainly was
    /// not, or was longer ago than the slack allows, if false).
    pub fn contains(&self, item: &[u8], now: u64) -> bool {
        self.live(now)
            .rev()
            .any(|generation| generation.chain.contains(item))
    }

    /// Items added to the generations live at `now`.
    pub fn items(&self, now: u64) -> u64 {
        self.live(now).map(|g| g.chain.items()).sum()
    }

    /// True if some generation has expired at `now`.
    pub fn has_expired(&self, now: u64) -> bool {
        self.generations
            .first()
            .is_some_and(|oldest| self.shape.expiry(oldest.slot) <= now)
    }

    /// Drops the generations that have expired at `now`; how many.
    pub fn expire(&mut self, now: u64) -> usize {
        let shape = self.shape;
        let expired = self
            .generations
            .iter()
            .take_while(|generation| shape.expiry(generation.slot) <= now)
            .count();
        if expired > 0 {
            let mut generations = std::mem::take(&mut self.generations).into_vec();
            generations.drain(..expired);
            self.generations = generations.into_boxed_slice();
        }
        expired
    }

    /// True if adding `items` new items at `now` could make it take more memory: a new slot's
    /// generation, or the growth of the current one.
    pub fn may_grow_within(&self, items: u64, now: u64) -> bool {
        match self.generations.last() {
            Some(newest) if newest.slot >= self.shape.slot_at(now) => {
                newest.chain.may_grow_within(items)
            }
            _ => true,
        }
    }

    /// When its newest generation expires, if it has one: when the whole filter is empty again,
    /// and the time to live its key carries.
    pub fn expires_at(&self) -> Option<u64> {
        self.generations
            .last()
            .map(|generation| self.shape.expiry(generation.slot))
    }

    /// Adds an item at time `now`, as [`Chain::add`] does: `Ok(true)` if it was new. An item a
    /// live generation holds answers false and keeps its place (its life is not extended). The
    /// item goes into the generation of `now`'s slot, made if needed; time never runs backwards
    /// for a filter (a `now` before its newest slot adds there). Expired generations are dropped
    /// first. Past `max_bytes` (all generations together) a new generation or a growth is
    /// refused, and nothing changes but the expiry.
    pub fn add(&mut self, item: &[u8], now: u64, max_bytes: u64) -> Result<bool, FilterError> {
        self.expire(now);
        if self.contains(item, now) {
            return Ok(false);
        }
        let current = self.current_generation(now, max_bytes)?;
        let others = self.planned_size() - self.generations[current].chain.planned_size();
        self.generations[current]
            .chain
            .add(item, max_bytes.saturating_sub(others))
            .map_err(|err| match err {
                FilterError::TooLarge { bytes } => FilterError::TooLarge {
                    bytes: bytes.saturating_add(others),
                },
                other => other,
            })
    }

    /// The index of the generation that items added at `now` go into, made if the slot has none
    /// yet.
    fn current_generation(&mut self, now: u64, max_bytes: u64) -> Result<usize, FilterError> {
        let slot = self.shape.slot_at(now);
        let newest = self.generations.last().map(|g| g.slot);
        if newest.is_none_or(|newest| slot > newest) {
            let chain = self
                .shape
                .new_generation(max_bytes.saturating_sub(self.planned_size()))
                .map_err(|err| match err {
                    FilterError::TooLarge { bytes } => FilterError::TooLarge {
                        bytes: bytes.saturating_add(self.planned_size()),
                    },
                    other => other,
                })?;
            let mut generations = std::mem::take(&mut self.generations).into_vec();
            let room = generations.try_reserve_exact(1);
            if room.is_ok() {
                generations.push(Generation { slot, chain });
            }
            self.generations = generations.into_boxed_slice();
            room.map_err(|_| FilterError::OutOfMemory { bytes: 0 })?;
        }
        Ok(self.generations.len() - 1)
    }

    /// Bytes the filter takes as `bf.max-filter-bytes` counts them: itself and every
    /// generation's chain.
    pub fn planned_size(&self) -> u64 {
        self.generations
            .iter()
            .map(|g| g.chain.planned_size() + 8)
            .fold(std::mem::size_of::<Windowed>() as u64, u64::saturating_add)
    }

    /// A copy, or [`FilterError::OutOfMemory`].
    pub fn try_clone(&self) -> Result<Windowed, FilterError> {
        let mut generations = Vec::new();
        generations
            .try_reserve_exact(self.generations.len())
            .map_err(|_| FilterError::OutOfMemory { bytes: 0 })?;
        for generation in &self.generations {
            generations.push(Generation {
                slot: generation.slot,
                chain: generation.chain.try_clone()?,
            });
        }
        Ok(Windowed {
            shape: self.shape,
            generations: generations.into_boxed_slice(),
            restoring: self.restoring,
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
            generation.chain.visit_allocations(visit);
        }
    }
}

/// Checks that a stored generation's chain is one this filter builds: its first sub-filter is
/// sized for the generation's capacity and error rate, and it grows as the filter's generations
/// grow.
fn check_generation(shape: &WindowedShape, chain: &Chain) -> Result<(), FilterError> {
    if chain.growth() != shape.growth || chain.format() != crate::chain::Format::Native {
        return Err(FilterError::Corrupt(
            "a generation not built for its windowed filter",
        ));
    }
    check_generation_shape(shape, chain.filters()[0].shape())
}

/// Checks that `first` is the first sub-filter a generation of this filter gets.
pub(crate) fn check_generation_shape(
    shape: &WindowedShape,
    first: &Shape,
) -> Result<(), FilterError> {
    if first.capacity != shape.generation_capacity() || first.error != first_error(shape) {
        return Err(FilterError::Corrupt(
            "a generation not built for its windowed filter",
        ));
    }
    Ok(())
}

/// The error rate of a generation's first sub-filter.
fn first_error(shape: &WindowedShape) -> f64 {
    match shape.growth {
        Growth::Scaling { .. } => shape.generation_error() / 2.0,
        Growth::Fixed => shape.generation_error(),
    }
}

#[cfg(test)]
mod tests;
