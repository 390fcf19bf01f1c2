//! The bit array of one sub-filter, stored as pieces whose sizes the allocator serves exactly.
//!
//! A sub-filter of `bits` bits (a multiple of 64) is kept as `bits >> 27` full blocks of 16 MiB,
//! then the remainder split by its binary digits into pieces of 8 MiB, 4 MiB, ... 8 bytes, largest
//! first. Every piece is a power of two, a size jemalloc (Redis's allocator) hands out without
//! rounding up, so the memory a filter costs is its bit count / 8 plus a little bookkeeping, where
//! one contiguous array would be charged up to 25% more by the next size class. Full blocks also make
//! big filters load and move in 16 MiB steps, each allocated only when its bytes arrive.
//!
//! Bit `i` of the array is bit `i % 8` (least significant first) of byte `i / 8` of the concatenated
//! pieces: the same layout on every platform, and RedisBloom's.

use bitvec::boxed::BitBox;
use bitvec::order::Lsb0;
use std::borrow::Cow;

/// log2 of the bits in a full block.
const BLOCK_BITS_LOG2: u32 = 27;
/// Bytes in a full block: the largest piece, and the largest chunk a filter is moved in.
pub const BLOCK_BYTES: usize = 1 << (BLOCK_BITS_LOG2 - 3);
/// log2 of the smallest piece, in bits (one 64-bit word).
const WORD_BITS_LOG2: u32 = 6;

/// A fixed-size array of bits, all zero at first.
#[derive(Clone, PartialEq, Eq)]
pub struct BitStore {
    bits: u64,
    pieces: Vec<BitBox<u8, Lsb0>>,
}

impl std::fmt::Debug for BitStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BitStore")
            .field("bits", &self.bits)
            .field("pieces", &self.pieces.len())
            .finish()
    }
}

/// The byte lengths of the pieces that hold `bits` bits, in order.
pub fn piece_lengths(bits: u64) -> impl Iterator<Item = usize> {
    let full_blocks = bits >> BLOCK_BITS_LOG2;
    let tail = bits & ((1 << BLOCK_BITS_LOG2) - 1);
    let blocks = (0..full_blocks).map(|_| BLOCK_BYTES);
    let tail_pieces = (WORD_BITS_LOG2..BLOCK_BITS_LOG2)
        .rev()
        .filter(move |&log2| tail & (1 << log2) != 0)
        .map(|log2| 1usize << (log2 - 3));
    blocks.chain(tail_pieces)
}

/// Which piece holds bit `index` of an array of `bits` bits, and at which bit offset in it.
#[inline]
fn locate(bits: u64, index: u64) -> (usize, usize) {
    let block_region = bits & !((1 << BLOCK_BITS_LOG2) - 1);
    if index < block_region {
        return (
            (index >> BLOCK_BITS_LOG2) as usize,
            (index & ((1 << BLOCK_BITS_LOG2) - 1)) as usize,
        );
    }
    // In the tail: the pieces follow the tail's binary digits, largest first, so the piece holding
    // offset t is the one for the highest bit where t and the tail length differ (the tail has a 1
    // there, t a 0, and they agree above it).
    let tail = bits - block_region;
    let offset = index - block_region;
    let digit = 63 - (offset ^ tail).leading_zeros();
    let piece = (block_region >> BLOCK_BITS_LOG2) + u64::from((tail >> digit >> 1).count_ones());
    (piece as usize, (offset & ((1 << digit) - 1)) as usize)
}

/// Checks that a bit count can be stored: positive and a multiple of 64.
fn check_bit_count(bits: u64) -> bool {
    bits > 0 && bits.is_multiple_of(64) && usize::try_from(bits / 8).is_ok()
}

impl BitStore {
    /// An array of `bits` zero bits; `None` unless `bits` is a positive multiple of 64.
    ///
    /// The pieces come from the allocator's zeroing allocation, so pages of a large filter are
    /// only touched when a bit on them is first set.
    pub fn zeroed(bits: u64) -> Option<BitStore> {
        if !check_bit_count(bits) {
            return None;
        }
        let mut pieces = Vec::with_capacity(piece_lengths(bits).count());
        pieces.extend(
            piece_lengths(bits)
                .map(|len| BitBox::from_boxed_slice(vec![0u8; len].into_boxed_slice())),
        );
        Some(BitStore { bits, pieces })
    }

    /// Rebuilds an array from its pieces' bytes, as [`BitStore::pieces`] gave them; `None` if the
    /// lengths are not exactly those [`piece_lengths`] gives for `bits`.
    pub fn from_pieces(bits: u64, pieces: Vec<Box<[u8]>>) -> Option<BitStore> {
        if !check_bit_count(bits) || !pieces.iter().map(|p| p.len()).eq(piece_lengths(bits)) {
            return None;
        }
        let mut pieces: Vec<_> = pieces.into_iter().map(BitBox::from_boxed_slice).collect();
        pieces.shrink_to_fit();
        Some(BitStore { bits, pieces })
    }

    /// Number of bits.
    pub fn bits(&self) -> u64 {
        self.bits
    }

    /// Reads bit `index`; `index` must be below [`BitStore::bits`].
    #[inline]
    pub fn get(&self, index: u64) -> bool {
        let (piece, offset) = locate(self.bits, index);
        self.pieces[piece][offset]
    }

    /// Sets bit `index` to one; `index` must be below [`BitStore::bits`].
    #[inline]
    pub fn set(&mut self, index: u64) {
        let (piece, offset) = locate(self.bits, index);
        self.pieces[piece].set(offset, true);
    }

    /// The pieces' bytes in order; concatenated, they are the whole array.
    pub fn pieces(&self) -> impl ExactSizeIterator<Item = &[u8]> + Clone {
        self.pieces.iter().map(|piece| piece.as_raw_slice())
    }

    /// The bytes `offset..offset + len` of the array (byte `i` holds bits `8i..8i+8`): borrowed
    /// when they lie within one piece, copied otherwise; `None` past the end.
    pub fn read_bytes(&self, offset: u64, len: usize) -> Option<Cow<'_, [u8]>> {
        let end = offset.checked_add(len as u64)?;
        if end > self.bits / 8 {
            return None;
        }
        let mut copy: Option<Vec<u8>> = None;
        let mut start = 0u64;
        for piece in self.pieces() {
            let piece_end = start + piece.len() as u64;
            if offset >= start && end <= piece_end {
                let from = (offset - start) as usize;
                return Some(Cow::Borrowed(&piece[from..from + len]));
            }
            if offset < piece_end && end > start {
                let from = offset.max(start) - start;
                let to = end.min(piece_end) - start;
                copy.get_or_insert_with(|| Vec::with_capacity(len))
                    .extend_from_slice(&piece[from as usize..to as usize]);
            }
            start = piece_end;
        }
        Some(Cow::Owned(copy.unwrap_or_default()))
    }

    /// Overwrites the bytes from `offset` with `bytes`; false (and nothing written) if they do
    /// not fit in the array.
    pub fn write_bytes(&mut self, offset: u64, bytes: &[u8]) -> bool {
        let Some(end) = offset.checked_add(bytes.len() as u64) else {
            return false;
        };
        if end > self.bits / 8 {
            return false;
        }
        let mut start = 0u64;
        for piece in &mut self.pieces {
            let raw = piece.as_raw_mut_slice();
            let piece_end = start + raw.len() as u64;
            if offset < piece_end && end > start {
                let from = offset.max(start);
                let to = end.min(piece_end);
                raw[(from - start) as usize..(to - start) as usize]
                    .copy_from_slice(&bytes[(from - offset) as usize..(to - offset) as usize]);
            }
            start = piece_end;
        }
        true
    }

    /// Number of ones in the array.
    pub fn count_ones(&self) -> u64 {
        self.pieces.iter().map(|p| p.count_ones() as u64).sum()
    }

    /// Calls `visit` with the address and length of every heap allocation the array owns.
    pub fn visit_allocations(&self, visit: &mut dyn FnMut(*const u8, usize)) {
        if self.pieces.capacity() > 0 {
            visit(
                self.pieces.as_ptr().cast(),
                self.pieces.capacity() * std::mem::size_of::<BitBox<u8, Lsb0>>(),
            );
        }
        for piece in self.pieces() {
            visit(piece.as_ptr(), piece.len());
        }
    }

    /// Heap bytes an array of `bits` bits owns, by the same count as `visit_allocations`.
    pub fn planned_bytes(bits: u64) -> u64 {
        let pieces = piece_lengths(bits).count() as u64;
        bits / 8 + pieces * std::mem::size_of::<BitBox<u8, Lsb0>>() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_are_full_blocks_then_the_tail_by_binary_digits() {
        assert_eq!(piece_lengths(64).collect::<Vec<_>>(), [8]);
        assert_eq!(piece_lengths(960).collect::<Vec<_>>(), [64, 32, 16, 8]);
        let big = (3u64 << 27) + (1 << 20) + 64;
        assert_eq!(
            piece_lengths(big).collect::<Vec<_>>(),
            [BLOCK_BYTES, BLOCK_BYTES, BLOCK_BYTES, 1 << 17, 8]
        );
        for bits in [64u64, 960, 1 << 27, (1 << 27) - 64, 123_456 * 64] {
            assert_eq!(piece_lengths(bits).sum::<usize>() as u64 * 8, bits);
            assert!(piece_lengths(bits).all(|len| len.is_power_of_two()));
        }
    }

    #[test]
    fn every_bit_has_exactly_one_home() {
        for words in 1..=70u64 {
            let bits = words * 64;
            let lengths: Vec<usize> = piece_lengths(bits).collect();
            let mut seen: Vec<Vec<bool>> =
                lengths.iter().map(|&len| vec![false; len * 8]).collect();
            for index in 0..bits {
                let (piece, offset) = locate(bits, index);
                assert!(!seen[piece][offset], "bits {bits}, index {index}");
                seen[piece][offset] = true;
            }
            assert!(seen.iter().flatten().all(|&hit| hit));
        }
    }

    #[test]
    fn bit_order_is_the_concatenation_of_the_pieces() {
        for bits in [64u64, 960, 4096 + 64] {
            let mut store = BitStore::zeroed(bits).unwrap();
            for index in (0..bits).step_by(7) {
                store.set(index);
            }
            let bytes: Vec<u8> = store.pieces().flatten().copied().collect();
            for index in 0..bits {
                let byte_bit = bytes[(index / 8) as usize] >> (index % 8) & 1 == 1;
                assert_eq!(byte_bit, index % 7 == 0);
                assert_eq!(store.get(index), index % 7 == 0);
            }
        }
    }

    #[test]
    fn blocks_and_tail_meet_without_overlap() {
        let bits = (1u64 << 27) + 128;
        let mut store = BitStore::zeroed(bits).unwrap();
        for index in [
            0,
            (1 << 27) - 1,
            1 << 27,
            (1 << 27) + 63,
            (1 << 27) + 64,
            bits - 1,
        ] {
            assert!(!store.get(index));
            store.set(index);
            assert!(store.get(index));
        }
        assert_eq!(store.count_ones(), 6);
        assert_eq!(store.pieces().len(), 2);
    }

    #[test]
    fn from_pieces_takes_only_the_exact_layout() {
        let mut store = BitStore::zeroed(960).unwrap();
        store.set(5);
        store.set(959);
        let pieces: Vec<Box<[u8]>> = store.pieces().map(Box::from).collect();
        assert_eq!(BitStore::from_pieces(960, pieces.clone()), Some(store));
        assert_eq!(BitStore::from_pieces(1024, pieces.clone()), None);
        let mut short = pieces.clone();
        short.pop();
        assert_eq!(BitStore::from_pieces(960, short), None);
        let mut swapped = pieces;
        swapped.swap(0, 1);
        assert_eq!(BitStore::from_pieces(960, swapped), None);
    }

    #[test]
    fn byte_ranges_read_and_write_across_pieces() {
        // 960 bits: pieces of 64, 32, 16 and 8 bytes.
        let mut store = BitStore::zeroed(960).unwrap();
        let pattern: Vec<u8> = (0..120u8).collect();
        assert!(store.write_bytes(0, &pattern));
        assert_eq!(store.read_bytes(0, 120).unwrap().as_ref(), &pattern[..]);
        assert!(matches!(store.read_bytes(64, 32), Some(Cow::Borrowed(_))));
        assert!(matches!(store.read_bytes(60, 8), Some(Cow::Owned(_))));
        assert_eq!(store.read_bytes(60, 8).unwrap().as_ref(), &pattern[60..68]);
        assert!(store.write_bytes(100, &[0xff; 20]));
        assert_eq!(store.read_bytes(99, 3).unwrap().as_ref(), &[99, 0xff, 0xff]);
        assert!(store.get(100 * 8) && store.get(959));
        assert!(!store.write_bytes(110, &[0; 11]));
        assert!(!store.write_bytes(u64::MAX, &[0; 2]));
        assert_eq!(store.read_bytes(110, 11), None);
        assert_eq!(store.read_bytes(120, 0).unwrap().as_ref(), &[] as &[u8]);
    }

    #[test]
    fn bit_counts_must_be_positive_multiples_of_64() {
        assert!(BitStore::zeroed(0).is_none());
        assert!(BitStore::zeroed(100).is_none());
        assert!(BitStore::zeroed(128).is_some());
    }

    #[test]
    fn planned_bytes_counts_what_visit_allocations_sees() {
        for bits in [64u64, 960, 1 << 20, (1 << 27) + 64] {
            let store = BitStore::zeroed(bits).unwrap();
            let mut seen = 0u64;
            store.visit_allocations(&mut |_, len| seen += len as u64);
            assert_eq!(seen, BitStore::planned_bytes(bits));
        }
    }
}
