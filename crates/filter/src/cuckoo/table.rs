//! One sub-filter of a cuckoo filter: a power-of-two number of buckets, each of `bucket_size`
//! slots holding a fingerprint or 0 for an empty slot, in one zeroed block. Slots of 8 bits (every
//! filter made without `ERROR`) are laid out as RedisBloom lays them out: bucket `i`, slot `s` is
//! byte `i * bucket_size + s`, so a sub-filter's bytes are RedisBloom's, dumped and stored as they
//! are. Wider or narrower slots (filters with a bounded error rate) are packed, little-endian,
//! slot after slot, each bucket a whole number of bytes. The block (a power of two times the
//! bucket's bytes, one of the allocator's size classes for every usual bucket) is charged what it
//! holds.

use crate::bits::{prefetch_byte, zeroed_piece};
use crate::FilterError;

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
    #[inline]
    pub fn swap(&mut self, bucket: u64, slot: u8, fingerprint: u64) -> u64 {
        let old = if self.bits == 8 {
            let at = bucket as usize * usize::from(self.bucket_size) + usize::from(slot);
            u64::from(std::mem::replace(&mut self.slots[at], fingerprint as u8))
        } else {
            let offset = self.bit_offset(bucket, slot);
            let old = read_bits(&self.slots, offset, self.bits);
            write_bits(&mut self.slots, offset, self.bits, fingerprint);
            old
        };
        self.occupied = self.occupied + u64::from(fingerprint != 0) - u64::from(old != 0);
        old
    }

    /// The first empty slot of `bucket`.
    #[inline]
    pub fn empty_slot(&self, bucket: u64) -> Option<u8> {
        self.find(bucket, 0)
    }

    /// The first slot of `bucket` holding `fingerprint`.
    #[inline]
    pub fn find(&self, bucket: u64, fingerprint: u64) -> Option<u8> {
        if self.bits == 8 {
            return self
                .byte_bucket(bucket)
                .iter()
                .position(|&held| u64::from(held) == fingerprint)
                .map(|slot| slot as u8);
        }
        (0..self.bucket_size).find(|&slot| self.get(bucket, slot) == fingerprint)
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
}
