//! One sub-filter of a cuckoo filter: a power-of-two number of buckets, each of `bucket_size`
//! one-byte slots holding a fingerprint (1 to 255) or 0 for an empty slot, in one zeroed block
//! laid out as RedisBloom lays it out: bucket `i`, slot `s` is byte `i * bucket_size + s`. So a
//! sub-filter's bytes are RedisBloom's, dumped and stored as they are, and the block (a power of
//! two times the bucket size, one of the allocator's size classes for every usual bucket size) is
//! charged what it holds.

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
    /// Slots holding a fingerprint: kept so that a compaction knows when it emptied the table
    /// without walking it (counted once when a table is loaded).
    occupied: u64,
    slots: Box<[u8]>,
}

/// The bytes a table of `buckets` buckets of `bucket_size` slots holds.
pub fn table_bytes(buckets: u64, bucket_size: u8) -> Option<u64> {
    buckets.checked_mul(u64::from(bucket_size))
}

impl Table {
    /// An empty table of `buckets` buckets (a power of two, at most [`MAX_BUCKETS`]) of
    /// `bucket_size` slots (at least 1).
    pub fn new(buckets: u64, bucket_size: u8) -> Result<Table, FilterError> {
        if !buckets.is_power_of_two() || buckets > MAX_BUCKETS || bucket_size == 0 {
            return Err(FilterError::Corrupt("bucket count"));
        }
        let len = table_bytes(buckets, bucket_size)
            .and_then(|len| usize::try_from(len).ok())
            .ok_or(FilterError::Corrupt("bucket count"))?;
        let slots = zeroed_piece(len).ok_or(FilterError::OutOfMemory { bytes: len as u64 })?;
        Ok(Table {
            buckets,
            bucket_size,
            occupied: 0,
            slots,
        })
    }

    /// A table holding `data`, its bytes as RedisBloom dumps them (exactly
    /// `buckets * bucket_size` of them).
    pub fn from_bytes(buckets: u64, bucket_size: u8, data: &[u8]) -> Result<Table, FilterError> {
        if Some(data.len() as u64) != table_bytes(buckets, bucket_size) {
            return Err(FilterError::Corrupt("bucket data of the wrong length"));
        }
        let mut table = Table::new(buckets, bucket_size)?;
        table.write_bytes(0, data)?;
        Ok(table)
    }

    /// A copy, or [`FilterError::OutOfMemory`].
    pub fn try_clone(&self) -> Result<Table, FilterError> {
        let mut copy = Table::new(self.buckets, self.bucket_size)?;
        copy.slots.copy_from_slice(&self.slots);
        copy.occupied = self.occupied;
        Ok(copy)
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

    /// The slots of `bucket`.
    #[inline]
    fn bucket(&self, bucket: u64) -> &[u8] {
        let size = usize::from(self.bucket_size);
        let start = bucket as usize * size;
        &self.slots[start..start + size]
    }

    /// The fingerprint in `slot` of `bucket` (0: empty).
    #[inline]
    pub fn get(&self, bucket: u64, slot: u8) -> u8 {
        self.slots[bucket as usize * usize::from(self.bucket_size) + usize::from(slot)]
    }

    /// Writes `fingerprint` (0: empty) to `slot` of `bucket`; the one it replaced.
    #[inline]
    pub fn swap(&mut self, bucket: u64, slot: u8, fingerprint: u8) -> u8 {
        let at = bucket as usize * usize::from(self.bucket_size) + usize::from(slot);
        let old = std::mem::replace(&mut self.slots[at], fingerprint);
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
    pub fn find(&self, bucket: u64, fingerprint: u8) -> Option<u8> {
        self.bucket(bucket)
            .iter()
            .position(|&held| held == fingerprint)
            .map(|slot| slot as u8)
    }

    /// How many slots of `bucket` hold `fingerprint`.
    pub fn count(&self, bucket: u64, fingerprint: u8) -> u64 {
        self.bucket(bucket)
            .iter()
            .filter(|&&held| held == fingerprint)
            .count() as u64
    }

    /// Asks the CPU to load `bucket`'s cache line.
    #[inline]
    pub fn prefetch(&self, bucket: u64) {
        prefetch_byte(&self.slots[bucket as usize * usize::from(self.bucket_size)]);
    }

    /// Overwrites its bytes from `offset` with `bytes` (a dump chunk), keeping the count of
    /// occupied slots.
    pub fn write_bytes(&mut self, offset: u64, bytes: &[u8]) -> Result<(), FilterError> {
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        let target = start
            .checked_add(bytes.len())
            .and_then(|end| self.slots.get_mut(start..end))
            .ok_or(FilterError::Corrupt(
                "chunk passes the end of its sub-filter",
            ))?;
        let before = target.iter().filter(|&&byte| byte != 0).count() as u64;
        target.copy_from_slice(bytes);
        let after = bytes.iter().filter(|&&byte| byte != 0).count() as u64;
        self.occupied = self.occupied - before + after;
        Ok(())
    }

    /// Calls `visit` with its one heap block.
    pub fn visit_allocations(&self, visit: &mut dyn FnMut(*const u8, usize)) {
        visit(self.slots.as_ptr(), self.slots.len());
    }
}
