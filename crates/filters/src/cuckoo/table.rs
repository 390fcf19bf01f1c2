//! One sub-filter of a cuckoo filter: a power-of-two number of buckets, each of `bucket_size`
//! slots holding a fingerprint or 0 for an empty slot, in one zeroed block. Slots of 8 bits (every
//! filter made without `ERROR`) are laid out as RedisBloom lays them out: bucket `i`, slot `s` is
//! byte `i * bucket_size + s`, so a sub-filter's bytes are RedisBloom's, dumped and stored as they
//! are. Wider or narrower slots (filters with a bounded error rate) are packed, little-endian,
//! slot after slot, each bucket a whole number of bytes. The block (a power of two times the
//! bucket's bytes, one of the allocator's size classes for every usual bucket) is charged what it
//! holds.

use super::print::Print;
use crate::bits::{prefetch_byte, zeroed_piece};
use crate::error::FilterError;

/// The first of `slots` (a bucket of one-byte slots) holding `fingerprint`. RedisBloom's usual
/// buckets of 4 are compared at once, as one word whose bytes that match become zero: the lowest
/// zero byte flagged is the first match (a borrow can flag only bytes above a real zero).
#[inline]
fn find_byte(slots: &[u8], fingerprint: u64) -> Option<u8> {
    const ONES: u32 = 0x0101_0101;
    let wanted = u8::try_from(fingerprint).ok()?;
    if let Ok(&four) = <&[u8; 4]>::try_from(slots) {
        let word = u32::from_le_bytes(four) ^ (u32::from(wanted) * ONES);
        let zero = word.wrapping_sub(ONES) & !word & (ONES << 7);
        return (zero != 0).then(|| (zero.trailing_zeros() / 8) as u8);
    }
    slots
        .iter()
        .position(|&held| held == wanted)
        .map(|slot| slot as u8)
}

/// The largest number of buckets of one sub-filter: 2^56 (RedisBloom's bit-field), far past
/// any byte limit.
pub const MAX_BUCKETS: u64 = 1 << 56;

/// One sub-filter: its buckets of fingerprints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    buckets: u64,
    bucket_size: u8,
    /// The width of a slot, 1 to 64 bits (8 for RedisBloom's filters).
    bits: u8,
    /// Slots holding a fingerprint: kept so that a compaction knows when it emptied the table
    /// without walking it (counted once when a table is loaded).
    occupied: u64,
    slots: Box<[u8]>,
}

/// The bytes of one bucket of `bucket_size` slots of `bits` bits, if it is a whole number.
pub fn bucket_bytes(bucket_size: u8, bits: u8) -> Option<u64> {
    let total = u64::from(bucket_size) * u64::from(bits);
    ((1..=64).contains(&bits) && total > 0 && total % 8 == 0).then_some(total / 8)
}

/// The bytes a table of `buckets` buckets of `bucket_size` slots of `bits` bits holds.
pub fn table_bytes(buckets: u64, bucket_size: u8, bits: u8) -> Option<u64> {
    buckets.checked_mul(bucket_bytes(bucket_size, bits)?)
}

impl Table {
    /// An empty table of `buckets` buckets (a power of two, at most [`MAX_BUCKETS`]) of
    /// `bucket_size` slots of `bits` bits (a bucket a whole number of bytes).
    pub fn new(buckets: u64, bucket_size: u8, bits: u8) -> Result<Table, FilterError> {
        if !buckets.is_power_of_two() || buckets > MAX_BUCKETS || bucket_size == 0 {
            return Err(FilterError::Corrupt("bucket count"));
        }
        let len = table_bytes(buckets, bucket_size, bits)
            .and_then(|len| usize::try_from(len).ok())
            .ok_or(FilterError::Corrupt("bucket count"))?;
        let slots = zeroed_piece(len).ok_or(FilterError::OutOfMemory { bytes: len as u64 })?;
        Ok(Table {
            buckets,
            bucket_size,
            bits,
            occupied: 0,
            slots,
        })
    }

    /// A table holding `data`, its bytes as dumped (exactly [`table_bytes`] of them).
    pub fn from_bytes(
        buckets: u64,
        bucket_size: u8,
        bits: u8,
        data: &[u8],
    ) -> Result<Table, FilterError> {
        if Some(data.len() as u64) != table_bytes(buckets, bucket_size, bits) {
            return Err(FilterError::Corrupt("bucket data of the wrong length"));
        }
        let mut table = Table::new(buckets, bucket_size, bits)?;
        table.write_bytes(0, data)?;
        Ok(table)
    }

    /// A copy, or [`FilterError::OutOfMemory`].
    pub fn try_clone(&self) -> Result<Table, FilterError> {
        let mut copy = Table::new(self.buckets, self.bucket_size, self.bits)?;
        copy.slots.copy_from_slice(&self.slots);
        copy.occupied = self.occupied;
        Ok(copy)
    }

    /// The width of its slots, in bits.
    pub fn bits(&self) -> u8 {
        self.bits
    }

    /// Where it lies: the address of its first byte, its bucket mask (the count less one) and the
    /// bytes of one bucket (see [`super::Locator`]).
    #[inline]
    pub(crate) fn whereabouts(&self) -> (usize, u64, u64) {
        (
            self.slots.as_ptr() as usize,
            self.buckets - 1,
            self.bucket_bytes(),
        )
    }

    /// The bytes of one bucket.
    #[inline]
    pub fn bucket_bytes(&self) -> u64 {
        u64::from(self.bucket_size) * u64::from(self.bits) / 8
    }

    /// Its number of buckets.
    pub fn buckets(&self) -> u64 {
        self.buckets
    }

    /// Its bytes, as dumped and stored: `buckets * bucket_size` of them.
    pub fn bytes(&self) -> &[u8] {
        &self.slots
    }

    /// True if no slot holds a fingerprint.
    pub fn is_empty(&self) -> bool {
        self.occupied == 0
    }

    /// The slots holding a fingerprint.
    pub fn occupied(&self) -> u64 {
        self.occupied
    }

    /// True if every slot holds a fingerprint.
    pub fn is_full(&self) -> bool {
        self.occupied == self.buckets * u64::from(self.bucket_size)
    }

    /// The bucket `index` falls in (its low bits: the count is a power of two).
    #[inline]
    pub fn bucket_of(&self, index: u64) -> u64 {
        index & (self.buckets - 1)
    }

    /// The slots of `bucket`, for one-byte slots.
    #[inline]
    fn byte_bucket(&self, bucket: u64) -> &[u8] {
        let size = usize::from(self.bucket_size);
        let start = bucket as usize * size;
        &self.slots[start..start + size]
    }

    /// The bit offset of `slot` of `bucket`, for packed slots.
    #[inline]
    fn bit_offset(&self, bucket: u64, slot: u8) -> u64 {
        (bucket * u64::from(self.bucket_size) + u64::from(slot)) * u64::from(self.bits)
    }

    /// The fingerprint in `slot` of `bucket` (0: empty).
    #[inline]
    pub fn get(&self, bucket: u64, slot: u8) -> u64 {
        if self.bits == 8 {
            u64::from(
                self.slots[bucket as usize * usize::from(self.bucket_size) + usize::from(slot)],
            )
        } else {
            read_bits(&self.slots, self.bit_offset(bucket, slot), self.bits)
        }
    }

    /// Writes `fingerprint` (0: empty) to `slot` of `bucket`; the one it replaced.
    #[inline(always)]
    pub fn swap(&mut self, bucket: u64, slot: u8, fingerprint: u64) -> u64 {
        let old = if self.bits == 8 {
            let at = bucket as usize * usize::from(self.bucket_size) + usize::from(slot);
            u64::from(std::mem::replace(&mut self.slots[at], fingerprint as u8))
        } else {
            self.swap_packed(bucket, slot, fingerprint)
        };
        self.occupied = self.occupied + u64::from(fingerprint != 0) - u64::from(old != 0);
        old
    }

    /// [`Table::swap`]'s write in packed slots, out of line as [`Table::find_packed`] is.
    #[inline(never)]
    fn swap_packed(&mut self, bucket: u64, slot: u8, fingerprint: u64) -> u64 {
        let offset = self.bit_offset(bucket, slot);
        let old = read_bits(&self.slots, offset, self.bits);
        write_bits(&mut self.slots, offset, self.bits, fingerprint);
        old
    }

    /// The first empty slot of `bucket`.
    #[inline]
    pub fn empty_slot(&self, bucket: u64) -> Option<u8> {
        self.find(bucket, 0)
    }

    /// The first slot of `bucket` holding `fingerprint`.
    #[inline(always)]
    pub fn find(&self, bucket: u64, fingerprint: u64) -> Option<u8> {
        if self.bits == 8 {
            return find_byte(self.byte_bucket(bucket), fingerprint);
        }
        self.find_packed(bucket, fingerprint)
    }

    /// [`Table::find`] in packed slots: out of line, so that the byte slots' lookup is a few
    /// instructions where it is used.
    #[inline(never)]
    fn find_packed(&self, bucket: u64, fingerprint: u64) -> Option<u8> {
        (0..self.bucket_size).find(|&slot| self.get(bucket, slot) == fingerprint)
    }

    /// The print's fingerprint here and its two buckets, the second's line asked for at once:
    /// both are read, or may be, and their misses overlap.
    #[inline(always)]
    fn buckets_of(&self, print: &Print) -> (u64, [u64; 2]) {
        let second = self.bucket_of(print.second());
        self.prefetch(second);
        let first = self.bucket_of(print.first());
        (print.fingerprint(self.bits), [first, second])
    }

    /// True if either of the print's buckets holds its fingerprint.
    #[inline(always)]
    pub fn holds(&self, print: &Print) -> bool {
        let (fingerprint, [first, second]) = self.buckets_of(print);
        self.find(first, fingerprint).is_some() || self.find(second, fingerprint).is_some()
    }

    /// Puts the print's fingerprint in the first empty slot of its first bucket, else of its
    /// second: false if both are full.
    #[inline(always)]
    pub fn place(&mut self, print: &Print) -> bool {
        self.put_in(print, 0, |fingerprint| fingerprint)
    }

    /// Empties the first slot holding the print's fingerprint, in its first bucket before its
    /// second: false if neither holds it.
    #[inline(always)]
    pub fn remove(&mut self, print: &Print) -> bool {
        self.put_in(print, print.fingerprint(self.bits), |_| 0)
    }

    /// Writes `new(fingerprint)` over the first slot of the print's buckets holding `old`.
    #[inline(always)]
    fn put_in(&mut self, print: &Print, old: u64, new: impl Fn(u64) -> u64) -> bool {
        let (fingerprint, [first, second]) = self.buckets_of(print);
        let found = match self.find(first, old) {
            Some(slot) => Some((first, slot)),
            None => self.find(second, old).map(|slot| (second, slot)),
        };
        if let Some((bucket, slot)) = found {
            self.swap(bucket, slot, new(fingerprint));
        }
        found.is_some()
    }

    /// How many slots of `bucket` hold `fingerprint`.
    pub fn count(&self, bucket: u64, fingerprint: u64) -> u64 {
        (0..self.bucket_size)
            .filter(|&slot| self.get(bucket, slot) == fingerprint)
            .count() as u64
    }

    /// Asks the CPU to load `bucket`'s cache line.
    #[inline]
    pub fn prefetch(&self, bucket: u64) {
        let byte = self.bit_offset(bucket, 0) / 8;
        prefetch_byte(&self.slots[byte as usize]);
    }

    /// Overwrites its bytes from `offset` with `bytes` (a dump chunk), keeping the count of
    /// occupied slots (of the slots the bytes touch, counted before and after).
    pub fn write_bytes(&mut self, offset: u64, bytes: &[u8]) -> Result<(), FilterError> {
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        let end = start
            .checked_add(bytes.len())
            .filter(|&end| end <= self.slots.len())
            .ok_or(FilterError::Corrupt(
                "chunk passes the end of its sub-filter",
            ))?;
        let bits = u64::from(self.bits);
        let first = start as u64 * 8 / bits;
        let last = (end as u64 * 8).div_ceil(bits);
        let before = self.occupied_between(first, last);
        self.slots[start..end].copy_from_slice(bytes);
        let after = self.occupied_between(first, last);
        self.occupied = self.occupied - before + after;
        Ok(())
    }

    /// The occupied slots among slots `first..last`, counted through the whole table.
    fn occupied_between(&self, first: u64, last: u64) -> u64 {
        let size = u64::from(self.bucket_size);
        (first..last)
            .filter(|&slot| self.get(slot / size, (slot % size) as u8) != 0)
            .count() as u64
    }

    /// Calls `visit` with its one heap block.
    pub fn visit_allocations(&self, visit: &mut dyn FnMut(*const u8, usize)) {
        visit(self.slots.as_ptr(), self.slots.len());
    }
}

/// The `width` bits (1 to 64) of `bytes` from bit `offset`, little-endian.
#[inline]
fn read_bits(bytes: &[u8], offset: u64, width: u8) -> u64 {
    let start = (offset / 8) as usize;
    let shift = (offset % 8) as u32;
    let mut window = [0u8; 16];
    let end = (start + 16).min(bytes.len());
    window[..end - start].copy_from_slice(&bytes[start..end]);
    let value = u128::from_le_bytes(window) >> shift;
    (value & ((1u128 << width) - 1)) as u64
}

/// Writes the low `width` bits of `value` to `bytes` from bit `offset`, little-endian.
#[inline]
fn write_bits(bytes: &mut [u8], offset: u64, width: u8, value: u64) {
    let start = (offset / 8) as usize;
    let shift = (offset % 8) as u32;
    let end = (start + 16).min(bytes.len());
    let mut window = [0u8; 16];
    window[..end - start].copy_from_slice(&bytes[start..end]);
    let mask = ((1u128 << width) - 1) << shift;
    let merged = (u128::from_le_bytes(window) & !mask) | ((u128::from(value) << shift) & mask);
    bytes[start..end].copy_from_slice(&merged.to_le_bytes()[..end - start]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_slots_hold_what_is_written_and_nothing_else_changes() {
        for bits in [2u8, 6, 10, 12, 14, 30, 46, 64] {
            let mut table = Table::new(8, 4, bits).unwrap();
            let mask = if bits == 64 {
                u64::MAX
            } else {
                (1 << bits) - 1
            };
            let value = |bucket: u64, slot: u8| {
                (bucket * 31 + u64::from(slot) * 7 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15) & mask
            };
            for bucket in 0..8 {
                for slot in 0..4 {
                    table.swap(bucket, slot, value(bucket, slot));
                }
            }
            for bucket in 0..8 {
                for slot in 0..4 {
                    assert_eq!(table.get(bucket, slot), value(bucket, slot), "{bits} bits");
                }
            }
            assert_eq!(table.swap(3, 2, 0), value(3, 2));
            assert_eq!(table.get(3, 1), value(3, 1));
            assert_eq!(table.get(3, 3), value(3, 3));
            assert_eq!(table.empty_slot(3), Some(2));
        }
    }

    /// The word-at-once lookup in buckets of 4 against a byte-by-byte one, for every bucket of
    /// bytes near the wanted one (where a borrow could flag the wrong byte) and every size.
    #[test]
    fn a_byte_bucket_lookup_finds_the_first_match_or_none() {
        for wanted in [0u64, 1, 2, 0x7f, 0x80, 0x81, 0xfe, 0xff, 0x100] {
            let w = wanted as u8;
            let near = [
                0,
                1,
                w,
                w.wrapping_add(1),
                w.wrapping_sub(1),
                w ^ 0x80,
                0xff,
            ];
            for size in 1..=5usize {
                for code in 0..near.len().pow(size as u32) {
                    let bucket: Vec<u8> = (0..size)
                        .map(|slot| near[code / near.len().pow(slot as u32) % near.len()])
                        .collect();
                    let expected = bucket
                        .iter()
                        .position(|&held| u64::from(held) == wanted)
                        .map(|slot| slot as u8);
                    assert_eq!(find_byte(&bucket, wanted), expected, "{bucket:?} {wanted}");
                }
            }
        }
    }
}
