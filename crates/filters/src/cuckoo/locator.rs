//! [`Locator`]: where a cuckoo filter's newest sub-filter lies in memory, as plain numbers. A
//! command that kept one from an earlier call on the same key hashes its item and asks the CPU
//! for the item's two bucket lines before the server has looked the key up, so that the wait for
//! memory (two random lines of a big filter, most of a single command's time there) runs beside
//! the lookup instead of after it. A locator is only ever prefetched from, never read through:
//! one that went stale (its filter grew, moved or was freed) costs a wasted load, not an answer.

use super::print::{Hashing, Print};
use crate::bits::prefetch_address;

/// The smallest sub-filter worth a prefetch ahead, in bytes.
const WORTH_KEEPING: u64 = 256 << 10;

/// Where a filter's newest sub-filter lies, and how the filter hashes items.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Locator {
    /// How the filter hashes items (a print made another way is not its own).
    hashing: Hashing,
    /// The address of the sub-filter's first byte.
    base: usize,
    /// Its bucket count less one (the count is a power of two).
    mask: u64,
    /// The bytes of one bucket.
    bucket_bytes: u64,
}

impl Locator {
    /// The locator of a sub-filter at `base`, of `mask + 1` buckets of `bucket_bytes` bytes.
    pub(crate) fn new(hashing: Hashing, (base, mask, bucket_bytes): (usize, u64, u64)) -> Locator {
        Locator {
            hashing,
            base,
            mask,
            bucket_bytes,
        }
    }

    /// Hashes `item` as the located filter does and asks for its two buckets' lines there; the
    /// print, for the filter to take if it hashes the same way ([`super::Cuckoo::print_with`]).
    #[inline]
    pub fn prefetch(&self, item: &[u8]) -> Print {
        let print = Print::of(item, self.hashing);
        for index in [print.second(), print.first()] {
            let offset = (index & self.mask).wrapping_mul(self.bucket_bytes);
            prefetch_address(self.base.wrapping_add(offset as usize));
        }
        print
    }

    /// Whether its sub-filter is big enough for a prefetch ahead to pay: 256 KiB or more, past
    /// what a core's own (L2) cache holds of it on most CPUs, where a lookup waits for the shared
    /// cache or memory. A smaller one's lines are at hand and the hint would only cost time.
    #[inline]
    pub fn is_worth_keeping(&self) -> bool {
        (self.mask.saturating_add(1)).saturating_mul(self.bucket_bytes) >= WORTH_KEEPING
    }

    /// Its four words, to keep between commands in plain atomics.
    #[inline]
    pub fn to_words(self) -> [u64; 4] {
        let hashing = match self.hashing {
            Hashing::RedisBloom => 0,
            Hashing::Bounded { first_bits } => u64::from(first_bits),
        };
        [hashing, self.base as u64, self.mask, self.bucket_bytes]
    }

    /// The locator [`Locator::to_words`] gave `words`. Any words make one (a fingerprint width
    /// out of range is held to 1..=64), which prefetches somewhere and is never read through.
    #[inline]
    pub fn from_words([hashing, base, mask, bucket_bytes]: [u64; 4]) -> Locator {
        let hashing = match hashing {
            0 => Hashing::RedisBloom,
            bits => Hashing::Bounded {
                first_bits: bits.min(64) as u8,
            },
        };
        Locator {
            hashing,
            base: base as usize,
            mask,
            bucket_bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cuckoo::shape::{Bound, Params};
    use crate::cuckoo::Cuckoo;

    fn filters() -> Vec<Cuckoo> {
        let params = |bucket_size| Params {
            bucket_size,
            max_iterations: 20,
            expansion: 1,
        };
        let mut filters = vec![
            Cuckoo::new(1024, params(4), None, u64::MAX).unwrap(),
            Cuckoo::new(64, params(1), None, u64::MAX).unwrap(),
        ];
        let bound = Bound::for_error(0.01).unwrap();
        filters.push(Cuckoo::new(256, params(4), Some(bound), u64::MAX).unwrap());
        filters
    }

    #[test]
    fn a_locator_survives_its_words_and_prints_as_its_filter_does() {
        for filter in filters() {
            let locator = filter.locator();
            assert_eq!(Locator::from_words(locator.to_words()), locator);
            for item in [&b"a"[..], b"item:1", b""] {
                let early = locator.prefetch(item);
                assert_eq!(early, filter.print(item));
                assert_eq!(filter.print_with(item, Some(early)), early);
            }
        }
    }

    #[test]
    fn a_print_made_for_another_hashing_is_made_again() {
        let mut filters = filters();
        let params = filters[2].params();
        let finer = Bound::for_error(0.0001).unwrap();
        filters.push(Cuckoo::new(256, params, Some(finer), u64::MAX).unwrap());
        // RedisBloom's hashing, 12-bit and 16-bit fingerprints (ERROR 0.01 and 0.0001).
        let kinds = [&filters[0], &filters[2], &filters[3]];
        assert_ne!(kinds[1].hashing(), kinds[2].hashing());
        for from in kinds {
            for to in kinds {
                let early = from.locator().prefetch(b"x");
                assert_eq!(to.print_with(b"x", Some(early)), to.print(b"x"));
                assert_eq!(early == to.print(b"x"), from.hashing() == to.hashing());
            }
        }
        assert_eq!(kinds[1].print_with(b"x", None), kinds[1].print(b"x"));
    }

    #[test]
    fn only_sub_filters_of_256_kib_and_more_are_worth_a_hint() {
        let params = Params {
            bucket_size: 4,
            max_iterations: 20,
            expansion: 1,
        };
        let worth = |buckets| {
            let filter = Cuckoo::new(buckets, params, None, u64::MAX).unwrap();
            filter.locator().is_worth_keeping()
        };
        assert!(!worth(32768));
        assert!(worth(65536));
        let words = |mask: u64, bucket_bytes: u64| Locator::from_words([0, 0, mask, bucket_bytes]);
        // Words from no filter: sizes past u64 are big, not an overflow.
        assert!(words(u64::MAX, u64::MAX).is_worth_keeping());
        assert!(!words(0, 1).is_worth_keeping());
    }

    #[test]
    fn any_words_make_a_locator_that_prefetches_without_a_fault() {
        for words in [
            [0, 0, 0, 0],
            [u64::MAX; 4],
            [65, 8, u64::MAX, 3],
            [12, 0x1000, 7, 6],
        ] {
            let locator = Locator::from_words(words);
            locator.prefetch(b"anything");
        }
    }
}
