//! A chain for the single commands that hash their item before they have the chain
//! (`crate::bloom::locator`): where its newest sub-filter lies, and lookups and adds of an item hashed
//! early, which ask for the newest sub-filter's lines only where the early request did not.
//!
//! [`SubFilter::contains_asked_by`]: crate::bloom::SubFilter::contains_asked_by

use super::{Chain, PREFETCH_PROBES};
use crate::bloom::locator::{EarlyHash, Locator, EARLY_PROBES, PLACE_WORDS};
use crate::bloom::probes::{Hashing, Mixed, Plain, Plain32, Probing};
use crate::error::FilterError;
use crate::hash::ItemHash;

impl Chain {
    /// The item's hash: `early`'s (made by a [`Locator`] before the chain was in hand) if it was
    /// made as this chain hashes, else a new one.
    #[inline(always)]
    pub fn hash_with(&self, item: &[u8], early: Option<EarlyHash>) -> ItemHash {
        match early.and_then(|early| early.hash_for(self.format.hashing())) {
            Some(hash) => hash,
            None => self.hash(item),
        }
    }

    /// Where its newest sub-filter lies (the biggest, and the one an add writes to), for a later
    /// command to prefetch an item's lines from before it has the chain; `None` if that
    /// sub-filter is too small for it to pay.
    #[inline(always)]
    pub fn locator(&self) -> Option<Locator> {
        if !Locator::is_worth_keeping(self.newest().shape()) {
            return None;
        }
        Some(self.locate_newest())
    }

    /// [`Chain::locator`] of a newest sub-filter worth it (out of line: most filters are small).
    #[inline(never)]
    fn locate_newest(&self) -> Locator {
        let newest = self.newest();
        Locator::of(
            self.format.hashing(),
            self.filters.len() - 1,
            newest.shape(),
            newest.bits(),
        )
    }

    /// Whether `place` (see [`Locator::place`]) is where its newest sub-filter lies: a hint made
    /// from it is this chain's, as it is now.
    #[inline(always)]
    pub fn is_at(&self, place: &[u64; PLACE_WORDS]) -> bool {
        let index = self.filters.len() - 1;
        *place == Locator::place_of(index, self.filters[index].bits())
    }

    /// [`Chain::contains`] of an item maybe hashed early ([`Chain::hash_with`]). Where the early
    /// request asked for the newest sub-filter's first probes' lines, those are not asked for
    /// again, and the rest only once they are found set
    /// ([`SubFilter::contains_asked_by`](crate::bloom::SubFilter::contains_asked_by)).
    #[inline(always)]
    pub fn contains_early(&self, item: &[u8], early: Option<EarlyHash>) -> bool {
        let hash = self.hash_with(item, early);
        let asked = self.asked_of(early);
        if asked == 0 {
            self.prefetch(&hash);
            return self.contains_hash(&hash);
        }
        if self.filters.len() > 1 {
            self.prefetch_older(&hash);
        }
        match self.format.hashing() {
            Hashing::Xxh3 => self.contains_asked_by::<Mixed>(&hash, asked),
            Hashing::Murmur64 => self.contains_asked_by::<Plain>(&hash, asked),
            Hashing::Murmur32 => self.contains_asked_by::<Plain32>(&hash, asked),
        }
    }

    /// How many of the newest sub-filter's first probes' lines `early` asked for: 0 unless it is
    /// a hash of this chain's hashing made by a locator of that very sub-filter.
    #[inline(always)]
    fn asked_of(&self, early: Option<EarlyHash>) -> u32 {
        match early {
            Some(early) if early.hash_for(self.format.hashing()).is_some() => early.asked_probes(),
            _ => 0,
        }
    }

    /// The newest sub-filter looked up as its first `asked` probes' lines were asked for, then the
    /// older ones as usual.
    #[inline(always)]
    fn contains_asked_by<P: Probing>(&self, hash: &ItemHash, asked: u32) -> bool {
        let newest = self.filters.len() - 1;
        self.filters[newest].contains_asked_by::<P>(&P::for_sub_filter(hash, newest), asked)
            || self.filters[..newest]
                .iter()
                .enumerate()
                .rev()
                .any(|(index, filter)| filter.contains_by::<P>(&P::for_sub_filter(hash, index)))
    }

    /// [`Chain::add`] of an item maybe hashed early (see [`Chain::contains_early`]).
    #[inline(always)]
    pub fn add_early(
        &mut self,
        item: &[u8],
        early: Option<EarlyHash>,
        max_bytes: u64,
    ) -> Result<bool, FilterError> {
        let hash = self.hash_with(item, early);
        self.prefetch_unasked(&hash, early);
        self.add_hash(&hash, max_bytes)
    }

    /// [`Chain::prefetch`], but for the newest sub-filter where `early` asked for its lines (a
    /// hash of this chain's hashing, made by a locator of that very sub-filter).
    #[inline(always)]
    fn prefetch_unasked(&self, hash: &ItemHash, early: Option<EarlyHash>) {
        let newest = self.newest().shape().hash_count.min(EARLY_PROBES);
        if self.asked_of(early) < newest {
            self.prefetch(hash);
        } else if self.filters.len() > 1 {
            self.prefetch_older(hash);
        }
    }

    /// What [`Chain::prefetch`] asks for that an early request (of the newest sub-filter's
    /// probes, as many as it would ask for) did not: the older big sub-filters', within what the
    /// newest leaves of the probes (out of line: a chain of one is the usual case).
    #[inline(never)]
    fn prefetch_older(&self, hash: &ItemHash) {
        let newest = self.newest().shape().hash_count.min(EARLY_PROBES);
        let probes = PREFETCH_PROBES.saturating_sub(newest);
        match self.format.hashing() {
            Hashing::Xxh3 => self.prefetch_by::<Mixed>(hash, probes, 1),
            Hashing::Murmur64 | Hashing::Murmur32 => self.prefetch_by::<Plain>(hash, probes, 1),
        }
    }
}
