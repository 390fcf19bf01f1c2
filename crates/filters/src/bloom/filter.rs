//! What a `BF.*` key holds: a scaling [`Chain`] (every filter RedisBloom's dialect makes), or a
//! [`Windowed`] filter (reserved with `WINDOW`). The commands, persistence and dumps work on this
//! one type; each operation takes the time (milliseconds since the epoch), which only windowed
//! filters read.

use crate::bloom::chain::{Chain, Growth};
use crate::bloom::locator::{EarlyHash, Locator, PLACE_WORDS};
use crate::bloom::probes::Hashing;
use crate::bloom::sub_filter::SubFilter;
use crate::bloom::window::{Expired, Window, Windowed};
use crate::error::FilterError;

/// The value of one `BF.*` key.
#[derive(Debug, Clone, PartialEq)]
pub enum Filter {
    /// A filter that remembers every item.
    Chain(Chain),
    /// A filter that remembers each item for a window of time. (Boxed: a value the size of a
    /// chain is one allocator size class, where a bigger one would waste a rounding.)
    Windowed(Box<Windowed>),
}

// The value's box is charged exactly its size (one allocator size class), as the byte-size model
// counts it.
const _: () = assert!(
    std::mem::size_of::<Filter>() as u64 == crate::bytes::VALUE_BYTES,
    "the byte-size model counts the value's box as VALUE_BYTES"
);

impl From<Chain> for Filter {
    fn from(chain: Chain) -> Filter {
        Filter::Chain(chain)
    }
}

impl From<Windowed> for Filter {
    fn from(windowed: Windowed) -> Filter {
        Filter::Windowed(Box::new(windowed))
    }
}

impl Filter {
    /// True if the item may have been added (within the window before `now`, for a windowed
    /// filter); false if it certainly was not.
    pub fn contains(&self, item: &[u8], now: u64) -> bool {
        match self {
            Filter::Chain(chain) => chain.contains(item),
            Filter::Windowed(windowed) => windowed.contains(item, now),
        }
    }

    /// [`Filter::contains`] of an item maybe hashed before the filter was in hand (by a
    /// [`Locator`]): the early hash is taken only if the filter hashes items that way.
    #[inline]
    pub fn contains_early(&self, item: &[u8], early: Option<EarlyHash>, now: u64) -> bool {
        match self {
            Filter::Chain(chain) => chain.contains_early(item, early),
            Filter::Windowed(windowed) => windowed.contains_early(item, early, now),
        }
    }

    /// [`Filter::add`] of an item maybe hashed early (see [`Filter::contains_early`]).
    #[inline]
    pub fn add_early(
        &mut self,
        item: &[u8],
        early: Option<EarlyHash>,
        now: u64,
        max_bytes: u64,
    ) -> Result<bool, FilterError> {
        match self {
            Filter::Chain(chain) => chain.add_early(item, early, max_bytes),
            Filter::Windowed(windowed) => windowed.add_early(item, early, now, max_bytes),
        }
    }

    /// Where the sub-filter an item is first looked for in lies (a chain's newest, a windowed
    /// filter's newest live part at `now`), for a later command to prefetch the item's lines from
    /// before it has the filter; `None` where that sub-filter is too small for it to pay.
    #[inline]
    pub fn locator(&self, now: u64) -> Option<Locator> {
        match self {
            Filter::Chain(chain) => chain.locator(),
            Filter::Windowed(windowed) => windowed.locator(now),
        }
    }

    /// Whether `place` (the first words of a [`Locator`]'s) is where the sub-filter
    /// [`Filter::locator`] locates at `now` lies.
    #[inline]
    pub fn is_at(&self, place: &[u64; PLACE_WORDS], now: u64) -> bool {
        match self {
            Filter::Chain(chain) => chain.is_at(place),
            Filter::Windowed(windowed) => windowed.is_at(place, now),
        }
    }

    /// Looks up items in order, answering each through `answer`.
    pub fn contains_many<'a>(
        &self,
        items: impl IntoIterator<Item = &'a [u8]>,
        now: u64,
        mut answer: impl FnMut(bool),
    ) {
        match self {
            Filter::Chain(chain) => chain.contains_many(items, answer),
            Filter::Windowed(windowed) => {
                for item in items {
                    answer(windowed.contains(item, now));
                }
            }
        }
    }

    /// Adds an item at time `now`; `Ok(true)` if it was new (see [`Chain::add`] and
    /// [`Windowed::add`]).
    pub fn add(&mut self, item: &[u8], now: u64, max_bytes: u64) -> Result<bool, FilterError> {
        match self {
            Filter::Chain(chain) => chain.add(item, max_bytes),
            Filter::Windowed(windowed) => windowed.add(item, now, max_bytes),
        }
    }

    /// Adds items in order, as [`Filter::add`] one after the other would, answering each through
    /// `answer`; `answer` returns false to stop.
    pub fn add_many<'a>(
        &mut self,
        items: impl IntoIterator<Item = &'a [u8]>,
        now: u64,
        max_bytes: u64,
        mut answer: impl FnMut(Result<bool, FilterError>) -> bool,
    ) {
        match self {
            Filter::Chain(chain) => chain.add_many(items, max_bytes, answer),
            Filter::Windowed(windowed) => {
                for item in items {
                    if !answer(windowed.add(item, now, max_bytes)) {
                        return;
                    }
                }
            }
        }
    }

    /// Items it holds (at `now`, for a windowed filter: those of its live generations).
    pub fn items(&self, now: u64) -> u64 {
        match self {
            Filter::Chain(chain) => chain.items(),
            Filter::Windowed(windowed) => windowed.items(now),
        }
    }

    /// Its capacity: of all sub-filters together, or, for a windowed filter, the items per window
    /// it was made for.
    pub fn capacity(&self) -> u64 {
        match self {
            Filter::Chain(chain) => chain.capacity(),
            Filter::Windowed(windowed) => windowed.shape().capacity,
        }
    }

    /// How it grows (a windowed filter: each generation).
    pub fn growth(&self) -> Growth {
        match self {
            Filter::Chain(chain) => chain.growth(),
            Filter::Windowed(windowed) => windowed.shape().growth,
        }
    }

    /// The window of a windowed filter.
    pub fn window(&self) -> Option<Window> {
        match self {
            Filter::Chain(_) => None,
            Filter::Windowed(windowed) => Some(windowed.shape().window),
        }
    }

    /// How its sub-filters lay out an item's probes.
    pub fn layout(&self) -> crate::bloom::sizing::Layout {
        match self {
            Filter::Chain(chain) => chain.format().layout(),
            Filter::Windowed(windowed) => windowed.shape().layout,
        }
    }

    /// How it hashes items.
    pub fn hashing(&self) -> Hashing {
        match self {
            Filter::Chain(chain) => chain.format().hashing(),
            Filter::Windowed(_) => Hashing::Xxh3,
        }
    }

    /// Its sub-filters holding items at `now`, oldest first.
    pub fn live_sub_filters(&self, now: u64) -> Vec<&SubFilter> {
        match self {
            Filter::Chain(chain) => chain.filters().iter().collect(),
            Filter::Windowed(windowed) => windowed
                .generations()
                .iter()
                .flat_map(|generation| generation.live_parts(now))
                .map(|part| part.filter())
                .collect(),
        }
    }

    /// True if adding `items` new items at `now` could make it take more memory: the only time
    /// the size limit has to be asked for.
    pub fn may_grow_within(&self, items: u64, now: u64) -> bool {
        match self {
            Filter::Chain(chain) => chain.may_grow_within(items),
            Filter::Windowed(windowed) => windowed.may_grow_within(items, now),
        }
    }

    /// Bytes it takes as `bf.max-filter-bytes` counts them.
    pub fn planned_size(&self) -> u64 {
        match self {
            Filter::Chain(chain) => chain.planned_size(),
            Filter::Windowed(windowed) => windowed.planned_size(),
        }
    }

    /// Calls `visit` with every heap allocation it owns (not the value itself).
    pub fn visit_allocations(&self, visit: &mut dyn FnMut(*const u8, usize)) {
        match self {
            Filter::Chain(chain) => chain.visit_allocations(visit),
            Filter::Windowed(windowed) => {
                visit(
                    std::ptr::from_ref::<Windowed>(windowed).cast(),
                    std::mem::size_of::<Windowed>(),
                );
                windowed.visit_allocations(visit);
            }
        }
    }

    /// A copy, or [`FilterError::OutOfMemory`].
    pub fn try_clone(&self) -> Result<Filter, FilterError> {
        Ok(match self {
            Filter::Chain(chain) => Filter::Chain(chain.try_clone()?),
            Filter::Windowed(windowed) => Filter::Windowed(Box::new(windowed.try_clone()?)),
        })
    }

    /// True if a windowed filter holds parts that have expired at `now` (the next write drops
    /// them).
    pub fn has_expired(&self, now: u64) -> bool {
        match self {
            Filter::Chain(_) => false,
            Filter::Windowed(windowed) => windowed.has_expired(now),
        }
    }

    /// Drops what has expired at `now` (a windowed filter's parts and generations).
    pub fn expire(&mut self, now: u64) -> Expired {
        match self {
            Filter::Chain(_) => Expired::default(),
            Filter::Windowed(windowed) => windowed.expire(now),
        }
    }

    /// When a windowed filter next has something to drop (its oldest part expires): when a sweep
    /// should look at an idle key.
    pub fn next_expiry(&self) -> Option<u64> {
        match self {
            Filter::Chain(_) => None,
            Filter::Windowed(windowed) => windowed.next_expiry(),
        }
    }

    /// When a sweep should first look at a windowed filter that entered a key (loaded, restored,
    /// copied, renamed or moved): at once if it has generations of the first release, whose key
    /// that release gave a time to live (`Windowed::legacy_expiry`) that its loader may find
    /// still set; else at [`Filter::next_expiry`].
    pub fn first_look(&self) -> Option<u64> {
        match self {
            Filter::Windowed(windowed) if windowed.legacy_expiry().is_some() => Some(0),
            _ => self.next_expiry(),
        }
    }

    /// Every sub-filter whose bits a dump carries, in order: all of them, expired or not.
    pub(crate) fn dumped_sub_filters(&self) -> Box<dyn Iterator<Item = &SubFilter> + '_> {
        match self {
            Filter::Chain(chain) => Box::new(chain.filters().iter()),
            Filter::Windowed(windowed) => Box::new(
                windowed
                    .generations()
                    .iter()
                    .flat_map(|generation| generation.parts())
                    .map(|part| part.filter()),
            ),
        }
    }

    /// True if [`Filter::dumped_sub_filters`] has one at `index` (without walking a chain).
    pub(crate) fn has_dumped_sub_filter(&self, mut index: usize) -> bool {
        match self {
            Filter::Chain(chain) => index < chain.filters().len(),
            Filter::Windowed(windowed) => {
                for generation in windowed.generations() {
                    let count = generation.parts().len();
                    if index < count {
                        return true;
                    }
                    index -= count;
                }
                false
            }
        }
    }

    /// The sub-filter at `index` of [`Filter::dumped_sub_filters`], to fill from a dump.
    pub(crate) fn dumped_sub_filter_mut(&mut self, mut index: usize) -> &mut SubFilter {
        match self {
            Filter::Chain(chain) => chain.filter_mut(index),
            Filter::Windowed(windowed) => {
                for generation in windowed.generations_mut() {
                    let count = generation.parts().len();
                    if index < count {
                        return generation.parts_mut()[index].filter_mut();
                    }
                    index -= count;
                }
                // Callers index within dumped_sub_filters().
                unreachable!("no sub-filter at that index")
            }
        }
    }
}
