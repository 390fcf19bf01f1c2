//! A windowed filter for the single commands that hash their item before they have the filter
//! (`crate::bloom::locator`): where its newest part lies, and lookups of an item hashed early.

use super::Windowed;
use crate::bloom::locator::{EarlyHash, Locator, PLACE_WORDS};
use crate::bloom::probes::Hashing;
use crate::hash::ItemHash;

impl Windowed {
    /// [`Windowed::contains`] of an item maybe hashed early (taken if it was hashed as a windowed
    /// filter hashes: xxh3).
    pub fn contains_early(&self, item: &[u8], early: Option<EarlyHash>, now: u64) -> bool {
        self.contains_hash(&early_or_own(item, early), now)
    }

    /// Where its newest part lies (the one a new item goes to while its generation is current,
    /// and the first a lookup tries), for a later command to prefetch an item's lines from before
    /// it has the filter; `None` if it has no live part at `now`, or the part is too small for it
    /// to pay.
    pub fn locator(&self, now: u64) -> Option<Locator> {
        let generation = self.generations.last()?;
        let position = generation.parts.len().checked_sub(1)?;
        let part = &generation.parts[position];
        let shape = part.filter.shape();
        (part.expires_at > now && Locator::is_worth_keeping(shape)).then(|| {
            Locator::of(
                Hashing::Xxh3,
                generation.first as usize + position,
                shape,
                part.filter.bits(),
            )
        })
    }

    /// Whether `place` (see [`Locator::place_of`]) is where its newest part lies, live at `now`.
    #[inline]
    pub fn is_at(&self, place: &[u64; PLACE_WORDS], now: u64) -> bool {
        let Some(generation) = self.generations.last() else {
            return false;
        };
        let Some(position) = generation.parts.len().checked_sub(1) else {
            return false;
        };
        let part = &generation.parts[position];
        let index = generation.first as usize + position;
        part.expires_at > now && *place == Locator::place_of(index, part.filter.bits())
    }
}

/// The item's hash as a windowed filter hashes it (xxh3): `early`'s if it was made that way.
#[inline]
pub(super) fn early_or_own(item: &[u8], early: Option<EarlyHash>) -> ItemHash {
    match early.and_then(|early| early.hash_for(Hashing::Xxh3)) {
        Some(hash) => hash,
        None => ItemHash::of(item),
    }
}
