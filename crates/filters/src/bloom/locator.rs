//! [`Locator`]: where a Bloom filter's newest sub-filter lies in memory, as plain numbers. A
//! single `BF.ADD` or `BF.EXISTS` that kept one from an earlier call on the same key hashes its
//! item and asks the CPU for the item's probe lines before the server has looked the key up, so
//! that the wait for memory (up to one random line per probe of a big filter: most of a single
//! command's time there) runs beside the lookup instead of after it. The item's hash goes with the
//! hashing it was made by ([`EarlyHash`]); a filter takes it only if it hashes items that way.
//!
//! A locator is only ever prefetched from, never read through: one that went stale (its filter
//! grew, moved or was freed; another key's under the same tag) costs wasted loads, not an answer.
//! It keeps the addresses of the sub-filter's first [`PIECES`] pieces (every piece of a bit array
//! up to 128 MiB, and of any array its first 7/8 at least; see `crate::bits`): a probe past them
//! is not prefetched ahead, only later, as every probe is, by the filter itself.

use crate::bits::{prefetch_address, BitStore, Layout};
use crate::bloom::probes::{Hashing, Mixed, Plain, Probing};
use crate::bloom::sizing::Shape;
use crate::hash::ItemHash;

/// The most pieces of a bit array whose addresses a locator keeps.
pub const PIECES: usize = 16;
/// The words a locator takes ([`Locator::to_words`]).
pub const WORDS: usize = 4 + PIECES;
/// The most probes an add prefetches ahead: as many as a chain asks for of one item itself, so
/// that the chain need not ask again for its newest sub-filter (`Chain::add_early`).
pub const EARLY_PROBES: u32 = 16;

/// The probes a lookup prefetches ahead: a lookup stops at its item's first unset bit, which for
/// an absent item in a half-full filter is the first probe half the time and among the first
/// three seven times in eight; the rest are asked for once these are found set
/// (`SubFilter::contains_asked_by`), so that an absent item costs no lines it never reads.
pub const LOOKUP_PROBES: u32 = 3;
/// The smallest bit array worth a prefetch ahead, in bytes: as for a chain's own prefetch, below it
/// an item's lines are mostly in the core's own caches.
const WORTH_KEEPING: u64 = 1 << 20;

/// Where a chain's newest sub-filter (or a windowed filter's newest part) lies, and how the filter
/// hashes items.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Locator {
    hashing: Hashing,
    /// The sub-filter's number, from which this module's probing derives its pair of hashes
    /// (`ItemHash::for_sub_filter`; RedisBloom's use one pair throughout).
    index: u64,
    /// The bits its probes range over.
    probe_bits: u64,
    /// Probes prefetched ahead: its hash count, at most [`EARLY_PROBES`].
    probes: u32,
    /// Cache lines per block: 0 for the classic layout, 1 or 2 for the blocked one.
    lines: u8,
    /// The bit count of its array, which decides how the array is cut into pieces.
    store_bits: u64,
    /// log2 of the bits of the array's equal pieces.
    stride_log2: u8,
    /// How many of `pieces` are its pieces' addresses.
    piece_count: u8,
    pieces: [usize; PIECES],
}

/// The words that say which sub-filter a locator locates (its number and bit count, and the first
/// and last pieces it keeps): equal words, the same sub-filter, as long as it lives (see
/// [`Locator::place`]). A sub-filter's shape never changes; its chain's hashing may not match
/// (a key made again with another hashing can reuse the addresses): the early hash says which it
/// was made by.
pub const PLACE_WORDS: usize = 4;

/// An item hashed before its filter was in hand, with the hashing it was made by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EarlyHash {
    hashing: Hashing,
    hash: ItemHash,
    /// How many of its first probes' lines were asked for in the located sub-filter.
    probes: u8,
    /// The located sub-filter is the filter's newest (the caller checked its place): the filter
    /// need not ask again for those lines.
    asked: bool,
}

impl EarlyHash {
    /// The hash, if it was made by `hashing` (a filter's own): `None` otherwise.
    #[inline]
    pub fn hash_for(self, hashing: Hashing) -> Option<ItemHash> {
        (self.hashing == hashing).then_some(self.hash)
    }

    /// The same hash, its lines in the filter's newest sub-filter asked for already (the caller
    /// found the locator it was made by to be that sub-filter's).
    #[inline]
    pub fn asked(self) -> EarlyHash {
        EarlyHash {
            asked: true,
            ..self
        }
    }

    /// How many of its first probes' lines in the filter's newest sub-filter were asked for: 0 if
    /// none (or the sub-filter was another).
    #[inline]
    pub fn asked_probes(&self) -> u32 {
        if self.asked {
            u32::from(self.probes)
        } else {
            0
        }
    }
}

impl Locator {
    /// The locator of sub-filter number `index` of a filter hashing by `hashing`, of shape
    /// `shape`, its bits in `bits`.
    pub(crate) fn of(hashing: Hashing, index: usize, shape: &Shape, bits: &BitStore) -> Locator {
        let mut pieces = [0; PIECES];
        let mut piece_count = 0;
        for (kept, address) in pieces.iter_mut().zip(bits.piece_addresses()) {
            *kept = address;
            piece_count += 1;
        }
        Locator {
            hashing,
            index: index as u64,
            probe_bits: shape.bits,
            probes: shape.hash_count.min(EARLY_PROBES),
            lines: shape.lines,
            store_bits: bits.bits(),
            stride_log2: bits.layout().stride_log2() as u8,
            piece_count,
            pieces,
        }
    }

    /// Whether a sub-filter of `shape` is big enough for a prefetch ahead to pay.
    #[inline(always)]
    pub fn is_worth_keeping(shape: &Shape) -> bool {
        shape.bits >= WORTH_KEEPING * 8
    }

    /// Hashes `item` as the located filter does and asks for its probes' lines there; the hash,
    /// for the filter to take if it hashes the same way.
    #[inline]
    pub fn prefetch(&self, item: &[u8]) -> EarlyHash {
        let words = self.to_words();
        Locator::prefetch_from(|i| words[i], item, EARLY_PROBES)
    }

    /// [`Locator::prefetch`] of the locator whose words ([`Locator::to_words`]) `word` reads, one
    /// at a time as they are needed (a command reads them where they are kept, and needs the
    /// addresses of the pieces its item's probes fall in only). Any words make a locator, which
    /// prefetches somewhere and is never read through.
    /// It asks for the lines of the first `probes` probes at most ([`EARLY_PROBES`] for an add,
    /// [`LOOKUP_PROBES`] for a lookup).
    #[inline(always)]
    pub fn prefetch_from(word: impl Fn(usize) -> u64, item: &[u8], probes: u32) -> EarlyHash {
        let hashing = Locator::hashing_of(word(0));
        let hash = hashing.hash(item);
        let asked = Locator::lines_in(&word, &hash, probes, prefetch_address);
        EarlyHash {
            hashing,
            hash,
            probes: asked as u8,
            asked: false,
        }
    }

    /// The hashing the first word of a locator's names (any other value: this module's).
    #[inline(always)]
    fn hashing_of(packed: u64) -> Hashing {
        match packed & 0xff {
            1 => Hashing::Murmur64,
            2 => Hashing::Murmur32,
            _ => Hashing::Xxh3,
        }
    }

    /// The place of the locator that `words` ([`Locator::to_words`]) are: which sub-filter it
    /// locates.
    #[inline(always)]
    pub fn place(words: &[u64; WORDS]) -> [u64; PLACE_WORDS] {
        Locator::place_from(|i| words[i])
    }

    /// [`Locator::place`] of the words `word` reads.
    #[inline(always)]
    pub fn place_from(word: impl Fn(usize) -> u64) -> [u64; PLACE_WORDS] {
        let kept = ((word(0) >> 16) as u8).clamp(1, PIECES as u8);
        [word(1), word(3), word(4), word(3 + usize::from(kept))]
    }

    /// The [`Locator::place`] of the locator of sub-filter number `index`, its bits in `bits`,
    /// without making the whole locator: a command compares it with that of the hint it used.
    #[inline(always)]
    pub(crate) fn place_of(index: usize, bits: &BitStore) -> [u64; PLACE_WORDS] {
        let kept = bits.piece_count().min(PIECES);
        [
            index as u64,
            bits.bits(),
            bits.piece_address(0) as u64,
            bits.piece_address(kept.max(1) - 1) as u64,
        ]
    }

    /// The first word of [`Locator::to_words`].
    #[inline(always)]
    fn packed(hashing: Hashing, lines: u8, stride_log2: u8, piece_count: u8, probes: u32) -> u64 {
        let hashing = match hashing {
            Hashing::Xxh3 => 0,
            Hashing::Murmur64 => 1,
            Hashing::Murmur32 => 2,
        };
        hashing
            | u64::from(lines) << 8
            | u64::from(piece_count) << 16
            | u64::from(stride_log2) << 24
            | u64::from(probes) << 32
    }

    /// Calls `visit` with an address in each line of the located sub-filter that the item's
    /// first probes (at most [`EARLY_PROBES`]) touch, in the pieces it knows.
    #[cfg(test)]
    fn lines_of(&self, hash: &ItemHash, visit: impl FnMut(usize)) {
        let words = self.to_words();
        Locator::lines_in(&|i| words[i], hash, EARLY_PROBES, visit);
    }

    /// [`Locator::lines_of`] of the locator whose words `word` reads, of its first `most` probes
    /// at most: how many probes that was.
    #[inline(always)]
    fn lines_in(
        word: &impl Fn(usize) -> u64,
        hash: &ItemHash,
        most: u32,
        mut visit: impl FnMut(usize),
    ) -> u32 {
        let packed = word(0);
        let lines = ((packed >> 8) as u8).min(2);
        let piece_count = ((packed >> 16) as u8).min(PIECES as u8);
        let probes = ((packed >> 32) as u32).min(EARLY_PROBES).min(most);
        let (index, probe_bits, store_bits) = (word(1), word(2), word(3));
        let layout = Layout::with_stride(store_bits, u32::from((packed >> 24) as u8));
        let shape = Shape {
            capacity: 0,
            error: 0.5,
            hash_count: probes,
            bits: probe_bits.max(1),
            lines,
        };
        let at = |position: u64| {
            // Any words make a locator: a position past the array is not asked for.
            if position < store_bits {
                let (piece, offset) = layout.locate(store_bits, position);
                if piece < usize::from(piece_count) {
                    visit((word(4 + piece) as usize).wrapping_add(offset >> 3));
                }
            }
        };
        match Locator::hashing_of(packed) {
            Hashing::Xxh3 => Mixed::lines(&hash.for_sub_filter(index as usize), &shape, probes, at),
            Hashing::Murmur64 | Hashing::Murmur32 => Plain::lines(hash, &shape, probes, at),
        }
        probes
    }

    /// Its words, to keep between commands in plain atomics.
    #[inline]
    pub fn to_words(&self) -> [u64; WORDS] {
        let packed = Locator::packed(
            self.hashing,
            self.lines,
            self.stride_log2,
            self.piece_count,
            self.probes,
        );
        let mut words = [0; WORDS];
        words[..4].copy_from_slice(&[packed, self.index, self.probe_bits, self.store_bits]);
        for (word, &piece) in words[4..].iter_mut().zip(&self.pieces) {
            *word = piece as u64;
        }
        words
    }

    /// The locator [`Locator::to_words`] gave `words`. Any words make one (each field held to its
    /// range), which prefetches somewhere and is never read through.
    #[inline]
    pub fn from_words(words: [u64; WORDS]) -> Locator {
        let packed = words[0];
        let hashing = Locator::hashing_of(packed);
        let mut pieces = [0; PIECES];
        for (piece, &word) in pieces.iter_mut().zip(&words[4..]) {
            *piece = word as usize;
        }
        Locator {
            hashing,
            index: words[1],
            probe_bits: words[2],
            probes: ((packed >> 32) as u32).min(EARLY_PROBES),
            lines: ((packed >> 8) as u8).min(2),
            store_bits: words[3],
            stride_log2: (packed >> 24) as u8,
            piece_count: ((packed >> 16) as u8).min(PIECES as u8),
            pieces,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bloom::chain::Chain;
    use crate::bloom::growth::Growth;
    use crate::bloom::sizing::Layout as ArrayLayout;

    fn chains() -> Vec<Chain> {
        let scaling = Growth::Scaling { expansion: 2 };
        let mut chains = vec![
            Chain::with_layout(ArrayLayout::Classic, 1_000_000, 0.01, scaling, u64::MAX).unwrap(),
            Chain::with_layout(ArrayLayout::Blocked, 1_000_000, 0.01, scaling, u64::MAX).unwrap(),
            Chain::with_layout(ArrayLayout::Blocked, 100_000, 1e-9, scaling, u64::MAX).unwrap(),
        ];
        // Grown: the newest sub-filter is the second.
        let mut grown =
            Chain::with_layout(ArrayLayout::Classic, 100, 0.01, scaling, u64::MAX).unwrap();
        for i in 0..150u32 {
            grown.add(&i.to_le_bytes(), u64::MAX).unwrap();
        }
        chains.push(grown);
        chains
    }

    /// The locator of a chain's newest sub-filter, whatever its size.
    fn located(chain: &Chain) -> Locator {
        let index = chain.filters().len() - 1;
        let newest = &chain.filters()[index];
        Locator::of(
            chain.format().hashing(),
            index,
            newest.shape(),
            newest.bits(),
        )
    }

    #[test]
    fn only_sub_filters_of_a_mebibyte_and_more_are_located() {
        let sizes: Vec<bool> = chains()
            .iter()
            .map(|chain| chain.locator().is_some())
            .collect();
        // 1M items at 1%: 1.2 MB; blocked, a little more; 100K at 1e-9: 540 KB; 150 items: bytes.
        assert_eq!(sizes, [true, true, false, false]);
        let chain = &chains()[0];
        assert_eq!(chain.locator(), Some(located(chain)));
    }

    #[test]
    fn a_locator_survives_its_words_and_hashes_as_its_filter_does() {
        for chain in chains() {
            let locator = located(&chain);
            assert_eq!(Locator::from_words(locator.to_words()), locator);
            for item in [&b"a"[..], b"item:1", b""] {
                let early = locator.prefetch(item);
                assert_eq!(
                    early.hash_for(chain.format().hashing()),
                    Some(chain.hash(item))
                );
            }
        }
    }

    #[test]
    fn a_locator_asks_for_the_lines_its_filter_reads() {
        // The lines the locator asks for are those of the bytes the newest sub-filter reads for
        // the item's first probes (up to 4): every address, in every layout and growth.
        for chain in chains() {
            let locator = located(&chain);
            let index = chain.filters().len() - 1;
            let newest = &chain.filters()[index];
            for i in 0..200u32 {
                let item = i.to_le_bytes();
                let hash = chain.hash(&item);
                let mut asked = Vec::new();
                locator.lines_of(&hash, |address| asked.push(address));
                let mut read = Vec::new();
                let probes = newest.shape().hash_count.min(EARLY_PROBES);
                Mixed::lines(
                    &hash.for_sub_filter(index),
                    newest.shape(),
                    probes,
                    |position| read.push(newest.bits().address_of(position)),
                );
                assert_eq!(asked, read);
                assert!(!asked.is_empty());
            }
        }
    }

    #[test]
    fn a_place_is_made_alike_from_words_and_from_the_filter() {
        for chain in chains() {
            let locator = located(&chain);
            let index = chain.filters().len() - 1;
            let newest = &chain.filters()[index];
            let place = Locator::place_of(index, newest.bits());
            assert_eq!(Locator::place(&locator.to_words()), place);
            assert!(chain.is_at(&place));
            let other = &chains()[0];
            assert!(!other.is_at(&place));
        }
    }

    #[test]
    fn an_early_hash_of_another_hashing_is_not_taken() {
        let chain = &chains()[0];
        let early = located(chain).prefetch(b"x");
        assert_eq!(early.hash_for(Hashing::Murmur64), None);
        assert_eq!(early.hash_for(Hashing::Xxh3), Some(chain.hash(b"x")));
    }

    #[test]
    fn any_words_make_a_locator_that_prefetches_without_reading() {
        // Garbage words: positions past the array, pieces at address 0, huge counts. A prefetch of
        // any address is harmless; nothing may panic.
        for words in [
            [0u64; WORDS],
            [u64::MAX; WORDS],
            std::array::from_fn(|i| (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)),
        ] {
            let locator = Locator::from_words(words);
            for item in [&b"a"[..], b"item:1"] {
                locator.prefetch(item);
            }
        }
    }
}
