//! An item as a cuckoo filter sees it, by RedisBloom's rules: a 64-bit MurmurHash64A (seed 0), an
//! 8-bit fingerprint (the hash modulo 255, plus one: 0 marks an empty slot), the first bucket from
//! the hash's low bits and the second by XOR with the fingerprint times `0x5bd1e995` (a 64-bit
//! product), which is its own inverse within any power-of-two bucket count.

use crate::hash::murmur64a;

/// The multiplier of the alternate bucket.
const ALTERNATE: u64 = 0x5bd1_e995;

/// An item's hash and fingerprint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Print {
    hash: u64,
    fingerprint: u8,
}

impl Print {
    /// The print of `item`.
    #[inline]
    pub fn of(item: &[u8]) -> Print {
        let hash = murmur64a(item, 0);
        Print {
            hash,
            fingerprint: (hash % 255 + 1) as u8,
        }
    }

    /// Its fingerprint, 1 to 255.
    #[inline]
    pub fn fingerprint(&self) -> u8 {
        self.fingerprint
    }

    /// Its first bucket index, before the table's bucket count is applied.
    #[inline]
    pub fn first(&self) -> u64 {
        self.hash
    }

    /// Its second bucket index, before the table's bucket count is applied.
    #[inline]
    pub fn second(&self) -> u64 {
        alternate(self.hash, self.fingerprint)
    }
}

/// The other bucket of a fingerprint found in bucket `index`.
#[inline]
pub fn alternate(index: u64, fingerprint: u8) -> u64 {
    index ^ u64::from(fingerprint).wrapping_mul(ALTERNATE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_are_redisbloom_s() {
        // RedisBloom 2.4.23, CF.RESERVE sd 8 (4 buckets) then a, b, c: a (fingerprint 0xc4) and
        // c (0xcb) in bucket 1, b (0x10) in bucket 3 (the fact sheet's SCANDUMP).
        for (item, fingerprint, bucket) in [(b"a", 0xc4, 1), (b"b", 0x10, 3), (b"c", 0xcb, 1)] {
            let print = Print::of(item);
            assert_eq!(print.fingerprint(), fingerprint);
            assert_eq!(print.first() & 3, bucket);
        }
        // The empty item hashes to 0: fingerprint 1.
        assert_eq!(Print::of(b"").fingerprint(), 1);
        for buckets in [1u64, 2, 64, 1 << 20] {
            let print = Print::of(b"x");
            let second = print.second() & (buckets - 1);
            let back = alternate(second, print.fingerprint()) & (buckets - 1);
            assert_eq!(back, print.first() & (buckets - 1));
        }
    }
}
