//! An item as a cuckoo filter sees it: where its buckets are and what fingerprint it leaves, in
//! either of two hashings.
//!
//! - **RedisBloom's** (filters made without `ERROR`): a 64-bit MurmurHash64A (seed 0), an 8-bit
//!   fingerprint (the hash modulo 255, plus one: 0 marks an empty slot), the first bucket from the
//!   hash's low bits and the second by XOR with the fingerprint times `0x5bd1e995` (a 64-bit
//!   product), its own inverse within any power-of-two bucket count.
//! - **Bounded** (`ERROR rate`, this module's): xxh3-128; the low half picks the first bucket, the
//!   high half gives each sub-filter its fingerprint, as wide as that sub-filter's slots: its top
//!   `bits` bits with the lowest set (so never 0, and `bits - 1` bits of it are the item's). Every
//!   fingerprint is a prefix of the longer ones, and the second bucket comes from the shortest
//!   (the first sub-filter's) by RedisBloom's XOR: so an item's two buckets in an older, smaller
//!   sub-filter are its buckets in a newer one reduced, and a fingerprint moved down (compaction)
//!   is the item's own there. Two items that look alike in a newer sub-filter look alike in every
//!   older one, which keeps deleting an added item from removing another's only copy.

use crate::hash::{murmur64a, ItemHash};

/// The multiplier of the alternate bucket.
const ALTERNATE: u64 = 0x5bd1_e995;

/// How a filter hashes items.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hashing {
    /// RedisBloom's, for filters made without `ERROR`: 8-bit fingerprints.
    RedisBloom,
    /// This module's, for filters with a bounded error rate; `first_bits` is the first
    /// sub-filter's fingerprint width, which the second bucket derives from.
    Bounded { first_bits: u8 },
}

/// An item's hash, before a sub-filter takes its fingerprint from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Print {
    index: u64,
    material: u64,
    hashing: Hashing,
}

impl Print {
    /// The print of `item`.
    #[inline]
    pub fn of(item: &[u8], hashing: Hashing) -> Print {
        let (index, material) = match hashing {
            Hashing::RedisBloom => {
                let hash = murmur64a(item, 0);
                (hash, hash % 255 + 1)
            }
            Hashing::Bounded { .. } => {
                let hash = ItemHash::of(item);
                (hash.h1, hash.h2)
            }
        };
        Print {
            index,
            material,
            hashing,
        }
    }

    /// Runs `op` on the print, its hashing a constant where it is RedisBloom's (every filter
    /// made without ERROR): the steps after are compiled for it, not chosen at each one.
    #[inline(always)]
    pub(crate) fn fixed<R>(&self, op: impl FnOnce(&Print) -> R) -> R {
        match self.hashing {
            Hashing::RedisBloom => op(&Print {
                hashing: Hashing::RedisBloom,
                ..*self
            }),
            Hashing::Bounded { .. } => op(self),
        }
    }

    /// The hashing it was made with.
    #[inline]
    pub fn hashing(&self) -> Hashing {
        self.hashing
    }

    /// Its fingerprint in a sub-filter of `bits`-bit slots.
    #[inline]
    pub fn fingerprint(&self, bits: u8) -> u64 {
        match self.hashing {
            Hashing::RedisBloom => self.material,
            Hashing::Bounded { .. } => prefix(self.material, bits),
        }
    }

    /// Its first bucket index, before a sub-filter's bucket count is applied.
    #[inline]
    pub fn first(&self) -> u64 {
        self.index
    }

    /// Its second bucket index, before a sub-filter's bucket count is applied.
    #[inline]
    pub fn second(&self) -> u64 {
        let key = match self.hashing {
            Hashing::RedisBloom => self.material,
            Hashing::Bounded { first_bits } => prefix(self.material, first_bits),
        };
        alternate_by_key(self.index, key)
    }
}

/// The top `bits` bits of `material`, with the lowest set.
#[inline]
fn prefix(material: u64, bits: u8) -> u64 {
    (material >> (64 - u32::from(bits))) | 1
}

impl Hashing {
    /// The other bucket of `fingerprint`, found in bucket `index` of a sub-filter of `bits`-bit
    /// slots.
    #[inline]
    pub fn alternate(self, index: u64, fingerprint: u64, bits: u8) -> u64 {
        alternate_by_key(index, self.key(fingerprint, bits))
    }

    /// What a fingerprint of a sub-filter of `bits`-bit slots becomes in one of `to` bits (an
    /// older one, `to <= bits`).
    #[inline]
    pub fn shorten(self, fingerprint: u64, bits: u8, to: u8) -> u64 {
        match self {
            Hashing::RedisBloom => fingerprint,
            Hashing::Bounded { .. } => (fingerprint >> (bits - to)) | 1,
        }
    }

    /// What a fingerprint's second bucket derives from.
    #[inline]
    fn key(self, fingerprint: u64, bits: u8) -> u64 {
        match self {
            Hashing::RedisBloom => fingerprint,
            Hashing::Bounded { first_bits } => self.shorten(fingerprint, bits, first_bits),
        }
    }
}

/// `index` XOR the key times `0x5bd1e995`.
#[inline]
fn alternate_by_key(index: u64, key: u64) -> u64 {
    index ^ key.wrapping_mul(ALTERNATE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redisbloom_prints_are_redisbloom_s() {
        // RedisBloom 2.4.23, CF.RESERVE sd 8 (4 buckets) then a, b, c: a (fingerprint 0xc4) and
        // c (0xcb) in bucket 1, b (0x10) in bucket 3 (the fact sheet's SCANDUMP).
        let hashing = Hashing::RedisBloom;
        for (item, fingerprint, bucket) in [(b"a", 0xc4, 1), (b"b", 0x10, 3), (b"c", 0xcb, 1)] {
            let print = Print::of(item, hashing);
            assert_eq!(print.fingerprint(8), fingerprint);
            assert_eq!(print.first() & 3, bucket);
        }
        // The empty item hashes to 0: fingerprint 1.
        assert_eq!(Print::of(b"", hashing).fingerprint(8), 1);
    }

    #[test]
    fn buckets_pair_up_and_nest_across_sub_filters() {
        for hashing in [Hashing::RedisBloom, Hashing::Bounded { first_bits: 12 }] {
            for item in 0u32..1000 {
                let print = Print::of(&item.to_le_bytes(), hashing);
                for (log2, bits) in [(0, 12u8), (6, 14), (20, 16)] {
                    let bits = if hashing == Hashing::RedisBloom {
                        8
                    } else {
                        bits
                    };
                    let mask = (1u64 << log2) - 1;
                    let fingerprint = print.fingerprint(bits);
                    assert_ne!(fingerprint, 0);
                    let second = print.second() & mask;
                    let first = print.first() & mask;
                    assert_eq!(hashing.alternate(first, fingerprint, bits) & mask, second);
                    assert_eq!(hashing.alternate(second, fingerprint, bits) & mask, first);
                    // Reduced to an older sub-filter of 64 buckets and 12-bit prints: the
                    // item's own buckets and fingerprint there.
                    if log2 >= 6 && bits >= 12 {
                        let older = hashing.shorten(fingerprint, bits, 12.min(bits));
                        let own = print.fingerprint(if bits == 8 { 8 } else { 12 });
                        assert_eq!(older, own);
                        let back = hashing.alternate(first & 63, older, 12.min(bits)) & 63;
                        assert_eq!(back, print.second() & 63);
                    }
                }
            }
        }
    }
}
