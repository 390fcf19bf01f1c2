//! Hashing an item once, on the floor both families stand on: [`ItemHash`], the xxh3-128 of an
//! item's bytes with a fixed seed (so every server, replica and AOF replay computes the same bits),
//! which the Bloom filter expands into probes (`bloom::probes`) and the cuckoo filter's bounded
//! kind into a fingerprint; MurmurHash64A and MurmurHash2, the hashes of RedisBloom's stored
//! filters; and [`tag`], a cheap tag of a key name for the hints of where big filters lie.

use xxhash_rust::xxh3::xxh3_128_with_seed;

/// The fixed xxh3 seed. Changing it changes every filter's bits: it is part of the on-disk format.
pub const ITEM_HASH_SEED: u64 = 0;

/// The hash of one item: two 64-bit numbers (the halves of its xxh3-128, or RedisBloom's pair).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ItemHash {
    pub(crate) h1: u64,
    pub(crate) h2: u64,
}

impl ItemHash {
    /// Hashes an item's bytes with xxh3-128 (the Bloom filter's `Hashing::Xxh3`).
    pub fn of(item: &[u8]) -> ItemHash {
        let wide = xxh3_128_with_seed(item, ITEM_HASH_SEED);
        ItemHash {
            h1: wide as u64,
            h2: (wide >> 64) as u64,
        }
    }
}

/// A 64-bit tag of a key name, never 0, from its length and its first and last eight bytes (a
/// dozen instructions): to tell a key from the last one used, where a collision (two long names
/// that differ only in their middle) costs nothing but a wasted prefetch.
#[inline]
pub fn tag(bytes: &[u8]) -> u64 {
    const MIX: u64 = 0x9e37_79b9_7f4a_7c15;
    let word = |at: usize| {
        bytes
            .get(at..at + 8)
            .and_then(|eight| eight.first_chunk::<8>())
            .map_or(0, |eight| u64::from_le_bytes(*eight))
    };
    let len = bytes.len();
    let (head, tail) = if len >= 8 {
        (word(0), word(len - 8))
    } else {
        (little_endian_tail(bytes), 0)
    };
    let mixed = (head ^ (len as u64).rotate_left(56)).wrapping_mul(MIX) ^ tail.rotate_left(29);
    mixed.wrapping_mul(MIX) | 1
}

/// MurmurHash64A (Austin Appleby's MurmurHash2 for 64-bit machines): the input is read as
/// little-endian 64-bit words, the last 1 to 7 bytes as a little-endian tail.
pub fn murmur64a(data: &[u8], seed: u64) -> u64 {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    const R: u32 = 47;
    // RedisBloom passes the length as a C int; items are at most 512 MB, so it fits.
    let mut h = seed ^ (data.len() as u64).wrapping_mul(M);
    let mut words = data.chunks_exact(8);
    for word in &mut words {
        let mut k = u64::from_le_bytes(word.try_into().unwrap_or([0; 8]));
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let tail = words.remainder();
    if !tail.is_empty() {
        h ^= little_endian_tail(tail);
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^ (h >> R)
}

/// The 1 to 7 bytes of `tail` as a little-endian number, read in at most three loads (a loop
/// over the bytes was a fifth of hashing a short item).
#[inline]
fn little_endian_tail(tail: &[u8]) -> u64 {
    let (mut value, mut at) = (0u64, 0usize);
    if let Some(four) = tail.first_chunk::<4>() {
        value = u64::from(u32::from_le_bytes(*four));
        at = 4;
    }
    if let Some(two) = tail.get(at..).and_then(|rest| rest.first_chunk::<2>()) {
        value |= u64::from(u16::from_le_bytes(*two)) << (8 * at);
        at += 2;
    }
    if let Some(&byte) = tail.get(at) {
        value |= u64::from(byte) << (8 * at);
    }
    value
}

/// MurmurHash2 (Austin Appleby's 32-bit original): little-endian 32-bit words, then a tail of 1 to
/// 3 bytes.
pub fn murmur2(data: &[u8], seed: u32) -> u32 {
    const M: u32 = 0x5bd1_e995;
    const R: u32 = 24;
    let mut h = seed ^ data.len() as u32;
    let mut words = data.chunks_exact(4);
    for word in &mut words {
        let mut k = u32::from_le_bytes(word.try_into().unwrap_or([0; 4]));
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M);
        h ^= k;
    }
    let tail = words.remainder();
    if !tail.is_empty() {
        for (index, byte) in tail.iter().enumerate() {
            h ^= u32::from(*byte) << (8 * index);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^ (h >> 15)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_tags_tell_names_apart_by_length_head_and_tail() {
        let names: [&[u8]; 8] = [
            b"",
            b"a",
            b"b",
            b"ab",
            b"cuckoo",
            b"cuckoo\0",
            b"user:1:filter",
            b"user:2:filter",
        ];
        for (i, a) in names.iter().enumerate() {
            assert_ne!(tag(a), 0);
            assert_eq!(tag(a), tag(a));
            for b in &names[i + 1..] {
                assert_ne!(tag(a), tag(b), "{a:?} {b:?}");
            }
        }
        assert_ne!(tag(b"0123456789abcdefX"), tag(b"0123456789abcdefY"));
    }

    #[test]
    fn the_hash_is_the_standard_xxh3_128_of_the_bytes() {
        // Pinned: a change here changes every stored filter.
        let hash = ItemHash::of(b"hello");
        let wide = xxhash_rust::xxh3::xxh3_128(b"hello");
        assert_eq!(hash.h1, wide as u64);
        assert_eq!(hash.h2, (wide >> 64) as u64);
        assert_ne!(ItemHash::of(b"hello"), ItemHash::of(b"hello\0"));
        assert_eq!(ItemHash::of(b""), ItemHash::of(&[]));
    }

    /// SMHasher's verification value: hash the keys `[]`, `[0]`, `[0, 1]`, ... `[0..255]` with seeds
    /// 256, 255, ... 1, concatenate the hashes (little-endian), hash that with seed 0, and read the
    /// first four bytes of the result as a little-endian number.
    fn verification<const N: usize>(hash: impl Fn(&[u8], u32) -> [u8; N]) -> u32 {
        let key: Vec<u8> = (0..=255u8).collect();
        let mut all = Vec::new();
        for length in 0..256usize {
            all.extend(hash(&key[..length], 256 - length as u32));
        }
        let last = hash(&all, 0);
        u32::from_le_bytes([last[0], last[1], last[2], last[3]])
    }

    #[test]
    fn murmur_hashes_match_the_published_verification_values() {
        // The values SMHasher publishes for MurmurHash2 and MurmurHash64A.
        assert_eq!(
            verification(|data, seed| murmur2(data, seed).to_le_bytes()),
            0x2786_4c1e
        );
        assert_eq!(
            verification(|data, seed| murmur64a(data, u64::from(seed)).to_le_bytes()),
            0x1f0d_3804
        );
    }
}
