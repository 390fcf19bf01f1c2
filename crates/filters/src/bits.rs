//! Filter memory in pieces whose sizes the allocator serves exactly: a Bloom sub-filter's bit
//! array, a cuckoo sub-filter's buckets, zeroed on demand, and the prefetch hints both ask with.
//!
//! A sub-filter of `bits` bits (a multiple of 64) is kept as equal pieces of a power-of-two size,
//! the *stride* (the largest power of two up to an eighth of the array, between 256 bytes and
//! 16 MiB), then the remainder: one piece per binary digit of it from 128 bytes up, and one piece
//! for what is left below 128 bytes. Jemalloc (Redis's allocator) hands out powers of two, and every
//! multiple of 16 bytes below 128, without rounding up, so a filter costs its bit count / 8 plus a
//! little bookkeeping (under 1% plus 512 bytes per sub-filter), where one contiguous array would be
//! charged up to 25% more by the next size class. Big filters also load and move piece by piece,
//! each allocated only when its bytes arrive.
//!
//! Finding a bit is a shift and a mask in the equal pieces (at least 7/8 of any array over 2 KiB),
//! and a table lookup in the remainder.
//!
//! Bit `i` of the array is bit `i % 8` (least significant first) of byte `i / 8` of the concatenated
//! pieces: the same layout on every platform, and RedisBloom's.

use crate::bytes::{charged, charged_array};
use crate::error::FilterError;
use std::borrow::Cow;

/// log2 of the largest stride, in bits (16 MiB).
const MAX_STRIDE_LOG2: u32 = 27;
/// log2 of the smallest stride, in bits (256 bytes).
const MIN_STRIDE_LOG2: u32 = 11;
/// log2 of the size, in bits, below which the remainder's binary digits share one piece (128
/// bytes: below it jemalloc serves every multiple of 16 bytes exactly).
const MERGED_LOG2: u32 = 10;
/// log2 of the largest block [`BitStore::block`] gives, in bits (blocks are of 512 or 1,024).
const MAX_BLOCK_LOG2: u32 = 16;
/// The largest piece, in bytes.
pub const MAX_PIECE_BYTES: usize = 1 << (MAX_STRIDE_LOG2 - 3);

/// A fixed-size array of bits, all zero at first.
#[derive(Clone, PartialEq, Eq)]
pub struct BitStore {
    bits: u64,
    /// Allocated to the exact count (a function of `bits` alone).
    pieces: Box<[Box<[u8]>]>,
    /// Where each bit lives, precomputed from `bits` because it is needed on every probe.
    layout: Layout,
}

/// log2 of the stride, in bits, of an array of `bits` bits.
fn stride_log2(bits: u64) -> u32 {
    let eighth = bits >> 3;
    let log2 = 63u32.saturating_sub(eighth.leading_zeros());
    log2.clamp(MIN_STRIDE_LOG2, MAX_STRIDE_LOG2)
}

/// The byte lengths of the pieces that hold `bits` bits, in order.
pub fn piece_lengths(bits: u64) -> impl Iterator<Item = usize> {
    let stride = stride_log2(bits);
    let full = bits >> stride;
    let tail = bits & ((1 << stride) - 1);
    let strides = (0..full).map(move |_| 1usize << (stride - 3));
    let digits = (MERGED_LOG2..stride)
        .rev()
        .filter(move |&log2| tail & (1 << log2) != 0)
        .map(|log2| 1usize << (log2 - 3));
    let low = tail & ((1 << MERGED_LOG2) - 1);
    let merged = (low > 0).then_some((low / 8) as usize);
    strides.chain(digits).chain(merged)
}

/// The addressing of an array of a given bit count.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Layout {
    /// Bits held by the equal pieces.
    stride_region: u64,
    stride_log2: u32,
}

impl Layout {
    /// The addressing of an array of `bits` bits in pieces of 2^`stride_log2` bits (its own
    /// stride: see [`Layout::stride_log2`]; any other makes an addressing that finds nothing).
    #[inline(always)]
    pub(crate) fn with_stride(bits: u64, stride_log2: u32) -> Layout {
        let stride_log2 = stride_log2.clamp(MIN_STRIDE_LOG2, MAX_STRIDE_LOG2);
        Layout {
            stride_region: bits & !((1 << stride_log2) - 1),
            stride_log2,
        }
    }

    /// log2 of the size of its equal pieces, in bits.
    #[inline(always)]
    pub(crate) fn stride_log2(&self) -> u32 {
        self.stride_log2
    }

    pub(crate) fn of(bits: u64) -> Layout {
        let stride_log2 = stride_log2(bits);
        Layout {
            stride_region: bits & !((1 << stride_log2) - 1),
            stride_log2,
        }
    }

    /// Which piece holds bit `index` of an array of `bits` bits, and at which bit offset in it.
    #[inline(always)]
    pub(crate) fn locate(&self, bits: u64, index: u64) -> (usize, usize) {
        self.in_strides(index)
            .unwrap_or_else(|| self.locate_in_remainder(bits, index))
    }

    /// [`Layout::locate`] with the remainder's case out of line: for a probe loop that must stay
    /// small enough to be inlined itself (a single lookup's), where the probes past the equal
    /// pieces (at most an eighth of an array over 2 KiB) pay the call.
    #[inline(always)]
    pub(crate) fn locate_lean(&self, bits: u64, index: u64) -> (usize, usize) {
        self.in_strides(index)
            .unwrap_or_else(|| self.locate_out_of_line(bits, index))
    }

    /// [`Layout::locate`] of a bit in the equal pieces: a shift and a mask; `None` past them.
    #[inline(always)]
    fn in_strides(&self, index: u64) -> Option<(usize, usize)> {
        let mask = (1 << self.stride_log2) - 1;
        (index < self.stride_region).then_some((
            (index >> self.stride_log2) as usize,
            (index & mask) as usize,
        ))
    }

    /// [`Layout::locate_in_remainder`], not inlined.
    #[inline(never)]
    fn locate_out_of_line(&self, bits: u64, index: u64) -> (usize, usize) {
        self.locate_in_remainder(bits, index)
    }

    /// [`Layout::locate`] of a bit past the equal pieces.
    #[inline(always)]
    fn locate_in_remainder(&self, bits: u64, index: u64) -> (usize, usize) {
        // In the remainder: its pieces follow its binary digits, largest first, so the piece
        // holding offset t is the one for the highest bit where t and the remainder's length
        // differ (the length has a 1 there, t a 0, and they agree above it), and it comes after
        // one piece per digit of the length above that one; below 128 bytes, the merged piece,
        // after every digit's piece.
        let tail = bits - self.stride_region;
        let offset = index - self.stride_region;
        let digit = 63 - (offset ^ tail).leading_zeros();
        let digit = digit.max(MERGED_LOG2 - 1);
        let first = (self.stride_region >> self.stride_log2) as usize;
        let width = digit.max(MERGED_LOG2);
        (
            first + (tail >> (digit + 1)).count_ones() as usize,
            (offset & ((1 << width) - 1)) as usize,
        )
    }
}

impl std::fmt::Debug for BitStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BitStore")
            .field("bits", &self.bits)
            .field("pieces", &self.pieces.len())
            .finish()
    }
}

/// Which piece holds bit `index` of an array of `bits` bits, and at which bit offset in it.
#[cfg(test)]
fn locate(bits: u64, index: u64) -> (usize, usize) {
    Layout::of(bits).locate(bits, index)
}

/// A hint to load the cache line holding `byte`; a no-op where the target has no such hint.
#[inline(always)]
pub(crate) fn prefetch_byte(byte: &u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch only hints the cache; `byte` is a valid reference anyway.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
            (byte as *const u8).cast::<i8>(),
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = byte;
}

/// A hint to load the cache line holding the byte at `address`, which need not be valid: a
/// prefetch never faults and reads nothing the program sees (a stale address costs a wasted load
/// at most). A no-op where the target has no such hint.
#[inline(always)]
pub(crate) fn prefetch_address(address: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `_mm_prefetch` needs SSE, part of every x86_64 CPU; a prefetch only hints the
    // cache: it does not fault on an unmapped address, and dereferences nothing.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
            std::ptr::without_provenance::<i8>(address),
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = address;
}

/// Checks that a bit count can be stored: positive and a multiple of 64.
fn check_bit_count(bits: u64) -> bool {
    bits > 0 && bits.is_multiple_of(64) && usize::try_from(bits / 8).is_ok()
}

/// A zeroed block of `len` bytes (a bit array's piece, a cuckoo filter's buckets), or `None` if
/// the allocator has no memory for it: filters are the one allocation here whose size a client
/// chooses, so running out must be an error reply, not an abort of the whole server.
pub(crate) fn zeroed_piece(len: usize) -> Option<Box<[u8]>> {
    let layout = std::alloc::Layout::array::<u8>(len).ok()?;
    if len == 0 {
        return None;
    }
    // SAFETY: the layout has a non-zero size. A non-null pointer from `alloc_zeroed` owns `len`
    // zeroed bytes allocated with this layout, which is what a Box<[u8]> of `len` bytes frees.
    unsafe {
        let ptr = std::alloc::alloc_zeroed(layout);
        if ptr.is_null() {
            return None;
        }
        Some(Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, len)))
    }
}

impl BitStore {
    /// An array of `bits` zero bits. Refused with [`FilterError::Corrupt`] unless `bits` is a
    /// positive multiple of 64, and with [`FilterError::OutOfMemory`] if the allocator cannot
    /// provide it (what was taken is given back).
    pub fn zeroed(bits: u64) -> Result<BitStore, FilterError> {
        if !check_bit_count(bits) {
            return Err(FilterError::Corrupt("bit count"));
        }
        let mut pieces = Vec::new();
        pieces
            .try_reserve_exact(piece_lengths(bits).count())
            .map_err(|_| FilterError::OutOfMemory { bytes: bits / 8 })?;
        for len in piece_lengths(bits) {
            let piece = zeroed_piece(len).ok_or(FilterError::OutOfMemory { bytes: bits / 8 })?;
            pieces.push(piece);
        }
        Ok(BitStore {
            bits,
            pieces: pieces.into_boxed_slice(),
            layout: Layout::of(bits),
        })
    }

    /// A copy of the array, or [`FilterError::OutOfMemory`] if the allocator cannot provide it.
    pub fn try_clone(&self) -> Result<BitStore, FilterError> {
        let mut copy = BitStore::zeroed(self.bits)?;
        for (to, from) in copy.pieces.iter_mut().zip(&self.pieces) {
            to.copy_from_slice(from);
        }
        Ok(copy)
    }

    /// Rebuilds an array from its pieces' bytes, as [`BitStore::pieces`] gave them; `None` if the
    /// lengths are not exactly those [`piece_lengths`] gives for `bits`.
    pub fn from_pieces(bits: u64, pieces: Vec<Box<[u8]>>) -> Option<BitStore> {
        if !check_bit_count(bits) || !pieces.iter().map(|p| p.len()).eq(piece_lengths(bits)) {
            return None;
        }
        Some(BitStore {
            bits,
            pieces: pieces.into_boxed_slice(),
            layout: Layout::of(bits),
        })
    }

    /// Number of bits.
    pub fn bits(&self) -> u64 {
        self.bits
    }

    /// Reads bit `index`; `index` must be below [`BitStore::bits`].
    #[inline]
    pub fn get(&self, index: u64) -> bool {
        let (piece, offset) = self.layout.locate(self.bits, index);
        self.pieces[piece][offset >> 3] >> (offset & 7) & 1 == 1
    }

    /// [`BitStore::get`], for a probe loop that must stay small ([`Layout::locate_lean`]).
    #[inline(always)]
    pub fn get_lean(&self, index: u64) -> bool {
        let (piece, offset) = self.layout.locate_lean(self.bits, index);
        self.pieces[piece][offset >> 3] >> (offset & 7) & 1 == 1
    }

    /// Sets bit `index` to one; `index` must be below [`BitStore::bits`].
    #[inline]
    pub fn set(&mut self, index: u64) {
        let (piece, offset) = self.layout.locate(self.bits, index);
        self.pieces[piece][offset >> 3] |= 1 << (offset & 7);
    }

    /// Sets bit `index` to one; true if it was zero. A bit already set is not written, so that
    /// adding an item that is present does not dirty its cache lines.
    #[inline]
    pub fn set_if_unset(&mut self, index: u64) -> bool {
        let (piece, offset) = self.layout.locate(self.bits, index);
        let byte = &mut self.pieces[piece][offset >> 3];
        let mask = 1 << (offset & 7);
        let unset = *byte & mask == 0;
        if unset {
            *byte |= mask;
        }
        unset
    }

    /// The bytes of the block of 2^`width_log2` bits (at least 8) that starts at bit `start`, a
    /// multiple of the block's size: a blocked Bloom sub-filter's block of one or two cache
    /// lines, whose probes then each read a byte of it, not a piece's. `None` unless the array
    /// holds the whole block in one piece, which every block of such a sub-filter is: pieces are
    /// aligned powers of two of 1,024 bits or more, and a last piece of what is left.
    #[inline(always)]
    pub fn block(&self, start: u64, width_log2: u32) -> Option<&[u8]> {
        let (piece, from, len) = self.block_place(start, width_log2)?;
        self.pieces.get(piece)?.get(from..from + len)
    }

    /// [`BitStore::block`], to write.
    #[inline(always)]
    pub fn block_mut(&mut self, start: u64, width_log2: u32) -> Option<&mut [u8]> {
        let (piece, from, len) = self.block_place(start, width_log2)?;
        self.pieces.get_mut(piece)?.get_mut(from..from + len)
    }

    /// Which piece holds the block of [`BitStore::block`], its first byte there and its bytes.
    #[inline(always)]
    fn block_place(&self, start: u64, width_log2: u32) -> Option<(usize, usize, usize)> {
        if start >= self.bits || !(3..=MAX_BLOCK_LOG2).contains(&width_log2) {
            return None;
        }
        let (piece, offset) = self.layout.locate(self.bits, start);
        Some((piece, offset >> 3, 1 << (width_log2 - 3)))
    }

    /// Asks the CPU to bring the cache line of bit `index` in, without waiting for it.
    #[inline]
    pub fn prefetch(&self, index: u64) {
        let (piece, offset) = self.layout.locate(self.bits, index);
        prefetch_byte(&self.pieces[piece][offset >> 3]);
    }

    /// Its addressing.
    #[inline(always)]
    pub(crate) fn layout(&self) -> Layout {
        self.layout
    }

    /// How many pieces it has.
    #[inline(always)]
    pub(crate) fn piece_count(&self) -> usize {
        self.pieces.len()
    }

    /// The address of piece `index`'s first byte (0 past the last): a few of them, with the bit
    /// count, tell one array from another while both live.
    #[inline(always)]
    pub(crate) fn piece_address(&self, index: usize) -> usize {
        self.pieces
            .get(index)
            .map_or(0, |piece| piece.as_ptr() as usize)
    }

    /// The address of each piece's first byte, in order (for the Bloom filter's locator, which only
    /// ever prefetches from them).
    pub(crate) fn piece_addresses(&self) -> impl Iterator<Item = usize> + '_ {
        self.pieces.iter().map(|piece| piece.as_ptr() as usize)
    }

    /// The address of the byte holding bit `index` (for tests of what a locator asks for).
    #[cfg(test)]
    pub(crate) fn address_of(&self, index: u64) -> usize {
        let (piece, offset) = self.layout.locate(self.bits, index);
        std::ptr::from_ref(&self.pieces[piece][offset >> 3]) as usize
    }

    /// The pieces' bytes in order; concatenated, they are the whole array.
    pub fn pieces(&self) -> impl ExactSizeIterator<Item = &[u8]> + Clone {
        self.pieces.iter().map(|piece| &piece[..])
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
        for piece in self.pieces.iter_mut() {
            let raw = piece;
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
        self.pieces()
            .flatten()
            .map(|byte| u64::from(byte.count_ones()))
            .sum()
    }

    /// Calls `visit` with the address and length of every heap allocation the array owns.
    pub fn visit_allocations(&self, visit: &mut dyn FnMut(*const u8, usize)) {
        visit(
            self.pieces.as_ptr().cast(),
            std::mem::size_of_val(&*self.pieces),
        );
        for piece in self.pieces() {
            visit(piece.as_ptr(), piece.len());
        }
    }

    /// What the allocator charges ([`crate::bytes`]) for the blocks an array of `bits` bits (a
    /// multiple of 64) owns: its pieces and the array of them, as `visit_allocations` lists them.
    /// Computed from the bit count, without walking the pieces.
    pub fn planned_bytes(bits: u64) -> u64 {
        let stride = stride_log2(bits);
        let full = bits >> stride;
        let tail = bits & ((1 << stride) - 1);
        let digits = u64::from((tail >> MERGED_LOG2).count_ones());
        let merged = (tail & ((1 << MERGED_LOG2) - 1)) / 8;
        let pieces = full + digits + u64::from(merged > 0);
        // Every piece but the merged one is a power of two, which the allocator serves exactly.
        (bits / 8 - merged)
            .saturating_add(charged(merged))
            .saturating_add(charged_array::<Box<[u8]>>(pieces))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_are_equal_strides_then_the_remainder_by_binary_digits() {
        // Small arrays: under 256 bytes, one merged piece; then 256-byte strides.
        assert_eq!(piece_lengths(64).collect::<Vec<_>>(), [8]);
        assert_eq!(piece_lengths(960).collect::<Vec<_>>(), [120]);
        assert_eq!(piece_lengths(2496).collect::<Vec<_>>(), [256, 56]);
        // 1,977,504 bytes: 128 KiB strides (the largest power of two up to an eighth), then the
        // remainder's digits from 128 bytes up, then the 32 bytes below.
        let lengths: Vec<usize> = piece_lengths(1_977_504 * 8).collect();
        assert_eq!(lengths[..15], [131072; 15]);
        assert_eq!(lengths[15..], [8192, 2048, 1024, 128, 32]);
        // Big arrays: 16 MiB strides.
        let big = (70u64 << 27) + (1 << 20) + 64;
        let lengths: Vec<usize> = piece_lengths(big).collect();
        assert_eq!(lengths[..70], [MAX_PIECE_BYTES; 70]);
        assert_eq!(lengths[70..], [1 << 17, 8]);
        for bits in [
            64u64,
            960,
            1 << 27,
            (1 << 27) - 64,
            123_456 * 64,
            1_977_504 * 8,
            big,
        ] {
            assert_eq!(piece_lengths(bits).sum::<usize>() as u64 * 8, bits);
            // Powers of two, or a merged piece under 128 bytes.
            assert!(piece_lengths(bits).all(|len| len.is_power_of_two() || len < 128));
            // Bookkeeping stays small: at most 15 strides (or as many 16 MiB ones as it takes)
            // and one piece per remainder digit from 128 bytes to 16 MiB, plus the merged one.
            let strides = (bits >> 27).max(15);
            assert!(piece_lengths(bits).count() as u64 <= strides + 18, "{bits}");
        }
    }

    #[test]
    fn every_bit_has_exactly_one_home() {
        for words in (1..=70u64).chain([255, 256, 257, 300, 1023]) {
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
    fn every_aligned_block_is_whole_in_one_piece() {
        // Arrays whose remainders have every kind of piece, down to the last few words.
        for bits in [1024u64, 4096 + 512, 9_600_000, (1 << 20) + 1536] {
            for width_log2 in [9, 10] {
                // A fresh array for each width, so that a block found at the wrong place cannot
                // meet bits the other width set.
                let mut store = BitStore::zeroed(bits).unwrap();
                for start in (0..bits >> width_log2).map(|block| block << width_log2) {
                    if start + (1 << width_log2) > bits {
                        break;
                    }
                    let block = store.block(start, width_log2).unwrap();
                    assert_eq!(block.len() << 3, 1 << width_log2, "bits {bits}, at {start}");
                    // Nothing set there yet (a block found at another's place would hold the bits
                    // set for that one).
                    assert!(
                        block.iter().all(|&byte| byte == 0),
                        "bits {bits}, at {start}"
                    );
                    // Its bytes are the array's, in order: a bit set through the block is the
                    // array's bit at the same offset, and the other way round.
                    let last = start + (1 << width_log2) - 1;
                    store.set(last);
                    assert_eq!(store.block(start, width_log2).unwrap().last(), Some(&0x80));
                    store.block_mut(start, width_log2).unwrap()[0] |= 1;
                    assert!(store.get(start));
                }
            }
            // Nothing past the end, and no width it does not give.
            let mut store = BitStore::zeroed(bits).unwrap();
            assert!(store.block(bits, 9).is_none());
            assert!(store.block_mut(bits + 512, 9).is_none());
            assert!(store.block(0, 40).is_none());
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
    fn strides_and_remainder_meet_without_overlap() {
        // 2^27 + 128 bits: eight 2 MiB strides and a 16-byte remainder.
        let bits = (1u64 << 27) + 128;
        let mut store = BitStore::zeroed(bits).unwrap();
        assert_eq!(store.pieces().len(), 9);
        for index in [
            0,
            (1 << 24) - 1,
            1 << 24,
            (1 << 27) - 1,
            1 << 27,
            (1 << 27) + 63,
            bits - 1,
        ] {
            assert!(!store.get(index));
            store.set(index);
            assert!(store.get(index));
        }
        assert_eq!(store.count_ones(), 7);
    }

    #[test]
    fn from_pieces_takes_only_the_exact_layout() {
        // 3008 bits: pieces of 256 and 120 bytes.
        let mut store = BitStore::zeroed(3008).unwrap();
        store.set(5);
        store.set(3007);
        let pieces: Vec<Box<[u8]>> = store.pieces().map(Box::from).collect();
        assert_eq!(BitStore::from_pieces(3008, pieces.clone()), Some(store));
        assert_eq!(BitStore::from_pieces(3072, pieces.clone()), None);
        let mut short = pieces.clone();
        short.pop();
        assert_eq!(BitStore::from_pieces(3008, short), None);
        let mut swapped = pieces;
        swapped.swap(0, 1);
        assert_eq!(BitStore::from_pieces(3008, swapped), None);
    }

    #[test]
    fn byte_ranges_read_and_write_across_pieces() {
        // 3008 bits: a 256-byte stride, then a 120-byte merged piece.
        let mut store = BitStore::zeroed(3008).unwrap();
        assert_eq!(store.pieces().len(), 2);
        let pattern: Vec<u8> = (0..=255u8).chain(0..120).collect();
        assert!(store.write_bytes(0, &pattern));
        assert_eq!(store.read_bytes(0, 376).unwrap().as_ref(), &pattern[..]);
        assert!(matches!(store.read_bytes(64, 32), Some(Cow::Borrowed(_))));
        assert!(matches!(store.read_bytes(250, 10), Some(Cow::Owned(_))));
        assert_eq!(
            store.read_bytes(250, 10).unwrap().as_ref(),
            &pattern[250..260]
        );
        assert!(store.write_bytes(300, &[0xff; 76]));
        assert_eq!(
            store.read_bytes(299, 3).unwrap().as_ref(),
            &[43, 0xff, 0xff]
        );
        assert!(store.get(300 * 8) && store.get(3007));
        assert!(!store.write_bytes(370, &[0; 7]));
        assert!(!store.write_bytes(u64::MAX, &[0; 2]));
        assert_eq!(store.read_bytes(370, 7), None);
        assert_eq!(store.read_bytes(376, 0).unwrap().as_ref(), &[] as &[u8]);
    }

    #[test]
    fn bit_counts_must_be_positive_multiples_of_64() {
        assert!(BitStore::zeroed(0).is_err());
        assert!(BitStore::zeroed(100).is_err());
        assert!(BitStore::zeroed(128).is_ok());
    }

    #[test]
    fn planned_bytes_charges_what_visit_allocations_sees() {
        let mut counts = vec![64u64, 960, 1 << 20, (1 << 27) + 64, (3 << 27) + 1088];
        counts.extend((1..200).map(|words| words * 64 * 7));
        for bits in counts {
            let store = BitStore::zeroed(bits).unwrap();
            let mut seen = 0u64;
            store.visit_allocations(&mut |_, len| seen += charged(len as u64));
            assert_eq!(seen, BitStore::planned_bytes(bits), "{bits} bits");
        }
    }
}
