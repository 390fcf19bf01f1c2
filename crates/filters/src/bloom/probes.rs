//! The probe sequence an item's hash ([`ItemHash`]) expands into in every sub-filter of a Bloom filter.
//!
//! An item is hashed exactly once per command, whatever the number of sub-filters: xxh3-128 of its
//! bytes with a fixed seed (so every server, replica and AOF replay computes the same bits). The two
//! 64-bit halves drive *enhanced double hashing*: `x = h1; y = h2; for i in 0..k { probe x; x += y;
//! y += i }`. Each `x` is then mixed (the two halves of `x * 0x9e3779b97f4a7c15` xored together) and
//! mapped onto `[0, bits)` by a multiply-shift (`v * bits >> 64`, Lemire's reduction, which is
//! uniform for every bit count and needs no division).
//!
//! Why the mixing step: any double-hashing family has only two 64-bit numbers of freedom per item,
//! and in the small bit arrays that scaling chains start with (64 to a few thousand bits) the
//! probe sets of different items overlap more than independent hashes would. Measured over 20,000
//! filters of 10 items in 128 bits with 8 hashes: independent hashes 0.24% false positives; plain
//! double hashing modulo bits (RedisBloom's) 1.22%; enhanced double hashing modulo bits 0.31%;
//! enhanced double hashing with multiply-shift but no mixing 0.47%; this sequence 0.24%, the same
//! as independent hashes (and at 256 bits, 20 hashes: 0.0007% against 0.016% unmixed).

//!
//! Filters imported from RedisBloom keep RedisBloom's hashing ([`Hashing::Murmur64`],
//! [`Hashing::Murmur32`]): the same two numbers for every sub-filter, and the plain sequence
//! `a + i*b` modulo the bit count, so that every answer is the one RedisBloom would give.

use crate::bloom::sizing::Shape;
use crate::hash::{murmur2, murmur64a, ItemHash};

/// RedisBloom's seed for the first of its two 64-bit hashes (MurmurHash64A's own constant).
const MURMUR64_SEED: u64 = 0xc6a4_a793_5bd1_e995;
/// RedisBloom's seed for the first of its two 32-bit hashes (before release 1.1).
const MURMUR32_SEED: u32 = 0x9747_b28c;

/// How a chain turns an item into the two numbers its probes come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hashing {
    /// Every filter this module creates: xxh3-128 and the probe sequence described above.
    Xxh3,
    /// RedisBloom's 64-bit hashing (chains with its option 4, every filter it made since 1.1):
    /// `a = MurmurHash64A(item, 0xc6a4a7935bd1e995)`, `b = MurmurHash64A(item, a)`.
    Murmur64,
    /// RedisBloom's 32-bit hashing (chains without option 4, from its first releases):
    /// `a = MurmurHash2(item, 0x9747b28c)`, `b = MurmurHash2(item, a)`.
    Murmur32,
}

impl Hashing {
    /// Hashes an item's bytes (any bytes: items are binary-safe).
    #[inline]
    pub fn hash(self, item: &[u8]) -> ItemHash {
        match self {
            Hashing::Xxh3 => ItemHash::of(item),
            Hashing::Murmur64 => {
                let a = murmur64a(item, MURMUR64_SEED);
                ItemHash {
                    h1: a,
                    h2: murmur64a(item, a),
                }
            }
            Hashing::Murmur32 => {
                let a = murmur2(item, MURMUR32_SEED);
                ItemHash {
                    h1: u64::from(a),
                    h2: u64::from(murmur2(item, a)),
                }
            }
        }
    }
}

/// How the sub-filters of a chain turn an item's hash into bit positions: one type per
/// [`Hashing`], so that the hot paths are compiled once for each, with no branch per probe.
pub trait Probing {
    /// Whether a lookup also tries the 32-bit arithmetic of RedisBloom's first releases, on
    /// sub-filters where it differs from 64-bit arithmetic (see `sub_filter`).
    const LEGACY: bool = false;

    /// Whether this probing is [`Mixed`], the one with a blocked layout: in a blocked sub-filter
    /// every probe of an item falls in one block ([`Mixed::each_in_block`]), whose bytes the
    /// sub-filter then finds once, not a probe's byte at each probe.
    const BLOCKS: bool = false;

    /// Calls `visit` with each of the item's first `count` positions in a sub-filter of `shape`
    /// until it returns false; false if it did.
    fn each(hash: &ItemHash, shape: &Shape, count: u32, visit: impl FnMut(u64) -> bool) -> bool;

    /// Calls `visit` with a position in each cache line that the item's first `count` probes
    /// touch, or may touch (to prefetch them).
    #[inline(always)]
    fn lines(hash: &ItemHash, shape: &Shape, count: u32, mut visit: impl FnMut(u64)) {
        Self::each(hash, shape, count, |position| {
            visit(position);
            true
        });
    }

    /// The hash that sub-filter `index` of a chain uses.
    fn for_sub_filter(hash: &ItemHash, index: usize) -> ItemHash;
}

/// This module's probing, for [`Hashing::Xxh3`]: a pair per sub-filter, and the mixed sequence,
/// over the whole array (classic) or within the item's block (blocked, see [`Mixed::block`]).
pub struct Mixed;

/// RedisBloom's probing, for [`Hashing::Murmur64`]: one pair, `(a + i*b) mod bits`.
pub struct Plain;

/// RedisBloom's probing for [`Hashing::Murmur32`]: as [`Plain`], and lookups also try 32-bit
/// arithmetic.
pub struct Plain32;

/// log2 of the bits of a block of one cache line, less one: a block of `lines` lines (1 or 2)
/// has `2^(BLOCK_LOG2_BASE + lines)` bits.
const BLOCK_LOG2_BASE: u32 = 8;

impl Mixed {
    /// Where the item's block starts in a blocked sub-filter of `bits` bits, and log2 of the
    /// block's bits: the block is the item's first hash reduced onto the block count, and the
    /// probes within it follow the mixed sequence of the second hash, stepped by the first.
    #[inline(always)]
    pub fn block(hash: &ItemHash, bits: u64, lines: u8) -> (u64, u32) {
        let width_log2 = BLOCK_LOG2_BASE + u32::from(lines);
        (
            reduce(hash.h1, bits >> width_log2) << width_log2,
            width_log2,
        )
    }

    /// Calls `visit` with each of the item's first `count` probes in a blocked sub-filter, as
    /// bit offsets within the item's block of 2^`width_log2` bits ([`Mixed::block`]), until it
    /// returns false; false if it did. The mixed sequence of the swapped pair, each value's top
    /// bits the offset.
    #[inline(always)]
    pub fn each_in_block(
        hash: &ItemHash,
        width_log2: u32,
        count: u32,
        mut visit: impl FnMut(u64) -> bool,
    ) -> bool {
        let (mut x, mut y) = (hash.h2, hash.h1);
        for i in 0..count {
            if !visit(mix(x) >> (64 - width_log2)) {
                return false;
            }
            x = x.wrapping_add(y);
            y = y.wrapping_add(u64::from(i));
        }
        true
    }
}

impl Probing for Mixed {
    const BLOCKS: bool = true;

    /// The sequence of [`Probes`], written out as a loop: the hottest code of every command. In
    /// a blocked sub-filter, the same sequence (of the swapped pair) within the item's block
    /// ([`Mixed::each_in_block`], which a sub-filter's own lookups and adds call directly).
    #[inline(always)]
    fn each(
        hash: &ItemHash,
        shape: &Shape,
        count: u32,
        mut visit: impl FnMut(u64) -> bool,
    ) -> bool {
        if shape.lines == 0 {
            let (mut x, mut y) = (hash.h1, hash.h2);
            for i in 0..count {
                if !visit(reduce(mix(x), shape.bits)) {
                    return false;
                }
                x = x.wrapping_add(y);
                y = y.wrapping_add(u64::from(i));
            }
            return true;
        }
        let (base, width_log2) = Mixed::block(hash, shape.bits, shape.lines);
        Mixed::each_in_block(hash, width_log2, count, |offset| visit(base + offset))
    }

    #[inline(always)]
    fn lines(hash: &ItemHash, shape: &Shape, count: u32, mut visit: impl FnMut(u64)) {
        if shape.lines == 0 {
            Mixed::each(hash, shape, count, |position| {
                visit(position);
                true
            });
            return;
        }
        let (base, _) = Mixed::block(hash, shape.bits, shape.lines);
        for line in 0..u64::from(shape.lines) {
            visit(base + line * 512);
        }
    }

    #[inline(always)]
    fn for_sub_filter(hash: &ItemHash, index: usize) -> ItemHash {
        hash.for_sub_filter(index)
    }
}

impl Probing for Plain {
    #[inline(always)]
    fn each(
        hash: &ItemHash,
        shape: &Shape,
        count: u32,
        mut visit: impl FnMut(u64) -> bool,
    ) -> bool {
        let bits = shape.bits;
        hash.plain(count).all(|value| visit(value % bits))
    }

    #[inline(always)]
    fn for_sub_filter(hash: &ItemHash, _index: usize) -> ItemHash {
        *hash
    }
}

impl Probing for Plain32 {
    const LEGACY: bool = true;

    #[inline(always)]
    fn each(hash: &ItemHash, shape: &Shape, count: u32, visit: impl FnMut(u64) -> bool) -> bool {
        Plain::each(hash, shape, count, visit)
    }

    #[inline(always)]
    fn for_sub_filter(hash: &ItemHash, _index: usize) -> ItemHash {
        *hash
    }
}

impl ItemHash {
    /// RedisBloom's plain probe values `a + i*b` for i in `0..hash_count`, in wrapping 64-bit
    /// arithmetic (every release since 1.1), before the sub-filter reduces them.
    #[inline]
    pub fn plain(&self, hash_count: u32) -> impl Iterator<Item = u64> {
        let (a, b) = (self.h1, self.h2);
        (0..u64::from(hash_count)).map(move |i| a.wrapping_add(i.wrapping_mul(b)))
    }

    /// The same values in the wrapping 32-bit arithmetic of RedisBloom's first releases.
    #[inline]
    pub fn plain32(&self, hash_count: u32) -> impl Iterator<Item = u64> {
        let (a, b) = (self.h1 as u32, self.h2 as u32);
        (0..hash_count).map(move |i| u64::from(a.wrapping_add(i.wrapping_mul(b))))
    }

    /// The hash as sub-filter number `index` of a chain uses it: both halves passed through a
    /// strong mixer (MurmurHash3's 64-bit finalizer) together with the index.
    ///
    /// Each sub-filter so gets its own independent-looking pair, and an item's probes in one
    /// sub-filter say nothing about its probes in another. Without this, an item's probe pattern
    /// repeats (scaled) from sub-filter to sub-filter; an item only goes into the newest sub-filter
    /// when the older ones do not hold it, which leaves the sub-filters' set bits anti-correlated,
    /// and the chain's false-positive rate drifts from the product of its sub-filters' rates
    /// towards their sum. Measured on chains of 1,000-item sub-filters grown to 100,000 items at
    /// p = 10% (EXPANSION 1 / 2 / 4): one shared pair 10.04% / 10.01% / 9.60%; independent
    /// hashes 9.88% / 9.71% / 9.41%; this derivation 9.92% / 9.74% / 9.37%.
    /// (RedisBloom's hashings use one pair for every sub-filter, as RedisBloom does: see
    /// [`Probing`].)
    #[inline]
    pub fn for_sub_filter(&self, index: usize) -> ItemHash {
        ItemHash {
            h1: finalize(self.h1 ^ index as u64),
            h2: finalize(self.h2 ^ index as u64),
        }
    }

    /// The first `hash_count` probe positions of this item in a bit array of `bits` bits.
    pub fn probes(&self, hash_count: u32, bits: u64) -> Probes {
        Probes {
            x: self.h1,
            y: self.h2,
            i: 0,
            hash_count,
            bits,
        }
    }
}

/// The probe positions of one item in one sub-filter, each in `[0, bits)`.
#[derive(Debug, Clone)]
pub struct Probes {
    x: u64,
    y: u64,
    i: u32,
    hash_count: u32,
    bits: u64,
}

impl Iterator for Probes {
    type Item = u64;

    #[inline]
    fn next(&mut self) -> Option<u64> {
        if self.i == self.hash_count {
            return None;
        }
        let position = reduce(mix(self.x), self.bits);
        self.x = self.x.wrapping_add(self.y);
        self.y = self.y.wrapping_add(u64::from(self.i));
        self.i += 1;
        Some(position)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = (self.hash_count - self.i) as usize;
        (left, Some(left))
    }
}

impl ExactSizeIterator for Probes {}

/// MurmurHash3's 64-bit finalizer: a bijection whose every output bit depends on every input bit.
#[inline]
fn finalize(mut value: u64) -> u64 {
    value ^= value >> 33;
    value = value.wrapping_mul(0xff51_afd7_ed55_8ccd);
    value ^= value >> 33;
    value = value.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    value ^ (value >> 33)
}

/// Spreads the entropy of a sequence value over all its bits: the fold of a 64x64-bit product.
#[inline]
fn mix(value: u64) -> u64 {
    let product = u128::from(value) * 0x9e37_79b9_7f4a_7c15;
    (product as u64) ^ ((product >> 64) as u64)
}

/// Maps a uniformly distributed 64-bit value onto `[0, range)` without a division.
#[inline]
fn reduce(value: u64, range: u64) -> u64 {
    ((u128::from(value) * u128::from(range)) >> 64) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probes_follow_enhanced_double_hashing() {
        let hash = ItemHash { h1: 5, h2: 3 };
        // The raw sequence: x0 = 5, x1 = 5+3, x2 = 8+3, x3 = 11+4, x4 = 15+6 (y grows by 0, 1, 2...).
        let mut raw = Vec::new();
        let (mut x, mut y) = (5u64, 3u64);
        for i in 0..5u64 {
            raw.push(x);
            x = x.wrapping_add(y);
            y = y.wrapping_add(i);
        }
        assert_eq!(raw, [5, 8, 11, 15, 21]);
        let mapped: Vec<u64> = hash.probes(5, 1 << 40).collect();
        let expected: Vec<u64> = raw.iter().map(|&v| reduce(mix(v), 1 << 40)).collect();
        assert_eq!(mapped, expected);
    }

    #[test]
    fn the_probing_loop_visits_the_probe_sequence() {
        for item in 0..100u32 {
            let hash = ItemHash::of(&item.to_le_bytes());
            let mut visited = Vec::new();
            let shape = Shape {
                bits: 960,
                hash_count: 11,
                ..Shape::new(1, 0.5).unwrap()
            };
            assert!(Mixed::each(&hash, &shape, 11, |p| {
                visited.push(p);
                true
            }));
            assert_eq!(visited, hash.probes(11, 960).collect::<Vec<_>>());
            let mut first = Vec::new();
            assert!(!Mixed::each(&hash, &shape, 11, |p| {
                first.push(p);
                first.len() < 3
            }));
            assert_eq!(first, visited[..3]);
        }
    }

    #[test]
    fn probes_stay_in_range_and_count_is_exact() {
        for bits in [64, 128, 960, 1 << 20, (1 << 33) + 64] {
            for item in 0..200u32 {
                let probes = ItemHash::of(&item.to_le_bytes()).probes(13, bits);
                assert_eq!(probes.len(), 13);
                assert!(probes.clone().all(|p| p < bits));
                assert_eq!(probes.count(), 13);
            }
        }
    }

    #[test]
    fn probes_of_one_item_spread_like_independent_draws_even_in_a_64_bit_array() {
        // k independent draws among m bits hit m * (1 - (1 - 1/m)^k) distinct bits on average:
        // 7.58 of 8 for m = 64. Plain double hashing modulo 64 falls short (an even h2 halves the
        // reachable bits, a multiple of 32 leaves two); this sequence must behave like the draws.
        let (k, m) = (8u32, 64u64);
        let items = 20_000u32;
        let mut distinct_total = 0usize;
        for item in 0..items {
            let mut seen: Vec<u64> = ItemHash::of(&item.to_le_bytes()).probes(k, m).collect();
            seen.sort_unstable();
            seen.dedup();
            distinct_total += seen.len();
        }
        let mean = distinct_total as f64 / f64::from(items);
        let ideal = m as f64 * (1.0 - (1.0 - 1.0 / m as f64).powi(k as i32));
        assert!((mean - ideal).abs() < 0.02, "mean {mean}, ideal {ideal}");
    }

    #[test]
    fn redisbloom_hashings_give_one_pair_for_every_sub_filter() {
        for hashing in [Hashing::Murmur64, Hashing::Murmur32] {
            let hash = hashing.hash(b"item");
            assert_eq!(Plain::for_sub_filter(&hash, 3), hash);
            assert_eq!(Plain32::for_sub_filter(&hash, 3), hash);
            let plain: Vec<u64> = hash.plain(4).collect();
            assert_eq!(plain[0], hash.h1);
            assert_eq!(plain[3], hash.h1.wrapping_add(3u64.wrapping_mul(hash.h2)));
        }
        let hash = Hashing::Murmur64.hash(b"item");
        assert_eq!(hash.h1, murmur64a(b"item", MURMUR64_SEED));
        assert_eq!(hash.h2, murmur64a(b"item", hash.h1));
        let hash = Hashing::Murmur32.hash(b"item");
        let a = murmur2(b"item", MURMUR32_SEED);
        assert_eq!(hash.h1, u64::from(a));
        assert_eq!(hash.h2, u64::from(murmur2(b"item", a)));
        // 32-bit arithmetic wraps at 2^32.
        let wide = ItemHash {
            h1: u64::from(u32::MAX),
            h2: 2,
        };
        assert_eq!(
            wide.plain32(2).collect::<Vec<_>>(),
            [u64::from(u32::MAX), 1]
        );
        assert_eq!(
            wide.plain(2).collect::<Vec<_>>(),
            [u64::from(u32::MAX), u64::from(u32::MAX) + 2]
        );
    }

    #[test]
    fn reduction_is_uniform_over_a_small_range() {
        let mut counts = [0u32; 7];
        for item in 0..70_000u32 {
            let hash = ItemHash::of(&item.to_le_bytes());
            counts[reduce(hash.h1, 7) as usize] += 1;
        }
        for count in counts {
            assert!((9_500..10_500).contains(&count), "{counts:?}");
        }
    }
}
