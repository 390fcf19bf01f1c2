//! One fixed-size Bloom filter: a shape, a bit array, and the number of items it took.

use crate::bits::BitStore;
use crate::hash::{Hashing, ItemHash};
use crate::sizing::Shape;
use crate::FilterError;

/// A Bloom filter of fixed size; a [`crate::Chain`] is a list of them.
///
/// How it finds an item's bits depends on how the item was hashed (`ItemHash::hashing`): this
/// module's probe sequence for xxh3-128, RedisBloom's `(a + i*b) mod bits` for its hashings (a
/// power-of-two `bits` makes that RedisBloom's masking of its older releases). For RedisBloom's
/// 32-bit hashing, whose first releases computed `a + i*b` in 32 bits where every later one uses
/// 64, an item is present if its bits are set under either (new items use 64 bits, as RedisBloom
/// does today): no false negatives, whichever release set the bits.
#[derive(Debug, Clone, PartialEq)]
pub struct SubFilter {
    shape: Shape,
    items: u64,
    bits: BitStore,
}

impl SubFilter {
    /// An empty sub-filter of the given shape. The bit array holds `shape.bits` bits, rounded up
    /// to whole 64-bit words ([`storage_bits`]).
    pub fn new(shape: Shape) -> Result<SubFilter, FilterError> {
        let bits = BitStore::zeroed(storage_bits(shape.bits))?;
        Ok(SubFilter {
            shape,
            items: 0,
            bits,
        })
    }

    /// A sub-filter rebuilt from stored parts, checked by [`check_stored`]; the bit array must
    /// have the shape's bit count.
    pub fn from_parts(shape: Shape, items: u64, bits: BitStore) -> Result<SubFilter, FilterError> {
        check_stored(&shape, items)?;
        if bits.bits() != shape.bits {
            return Err(FilterError::Corrupt("bit array of the wrong size"));
        }
        Ok(SubFilter { shape, items, bits })
    }

    /// A sub-filter of an imported chain rebuilt from parts its caller has checked
    /// (`redisbloom::check_link`); the bit array must be [`storage_bits`] long.
    pub(crate) fn imported(
        shape: Shape,
        items: u64,
        bits: BitStore,
    ) -> Result<SubFilter, FilterError> {
        if bits.bits() != storage_bits(shape.bits) {
            return Err(FilterError::Corrupt("bit array of the wrong size"));
        }
        Ok(SubFilter { shape, items, bits })
    }

    /// A copy, or [`FilterError::OutOfMemory`] if the allocator cannot provide it.
    pub fn try_clone(&self) -> Result<SubFilter, FilterError> {
        Ok(SubFilter {
            shape: self.shape,
            items: self.items,
            bits: self.bits.try_clone()?,
        })
    }

    /// The same sub-filter claiming `items` items (for one rebuilt from a dump header).
    pub(crate) fn with_items(mut self, items: u64) -> SubFilter {
        self.items = items;
        self
    }

    /// The bit array, to fill from a dump.
    pub(crate) fn bits_mut(&mut self) -> &mut BitStore {
        &mut self.bits
    }

    /// The sub-filter's shape.
    pub fn shape(&self) -> &Shape {
        &self.shape
    }

    /// Items added to this sub-filter.
    pub fn items(&self) -> u64 {
        self.items
    }

    /// True once it holds as many items as it was built for.
    pub fn is_full(&self) -> bool {
        self.items >= self.shape.capacity
    }

    /// The bit array.
    pub fn bits(&self) -> &BitStore {
        &self.bits
    }

    /// Calls `visit` with the item's probe positions until it returns false; false if it did.
    /// One match per call, not per probe: each arm is a loop of its own.
    #[inline]
    fn each_position(&self, hash: &ItemHash, mut visit: impl FnMut(u64) -> bool) -> bool {
        let (count, bits) = (self.shape.hash_count, self.shape.bits);
        match hash.hashing() {
            Hashing::Xxh3 => hash.probes(count, bits).all(visit),
            Hashing::Murmur64 | Hashing::Murmur32 => {
                hash.plain(count).all(|value| visit(value % bits))
            }
        }
    }

    /// True if every probe bit of the item is set.
    #[inline]
    pub fn contains(&self, hash: &ItemHash) -> bool {
        self.each_position(hash, |position| self.bits.get(position))
            || (hash.hashing() == Hashing::Murmur32
                && hash
                    .plain32(self.shape.hash_count)
                    .all(|value| self.bits.get(value % self.shape.bits)))
    }

    /// Starts loading the cache lines the item's probes will touch.
    #[inline]
    pub fn prefetch(&self, hash: &ItemHash) {
        self.each_position(hash, |position| {
            self.bits.prefetch(position);
            true
        });
    }

    /// Sets the item's probe bits and counts it if one of them was unset (it was new); true if
    /// it was. The caller has checked that there is room.
    #[inline]
    pub fn insert_if_new(&mut self, hash: &ItemHash) -> bool {
        if hash.hashing() == Hashing::Murmur32 && self.contains(hash) {
            // Present, maybe under the 32-bit arithmetic only: not new, as for RedisBloom.
            return false;
        }
        let (count, bits) = (self.shape.hash_count, self.shape.bits);
        let store = &mut self.bits;
        let mut new = false;
        match hash.hashing() {
            Hashing::Xxh3 => {
                for position in hash.probes(count, bits) {
                    new |= store.set_if_unset(position);
                }
            }
            Hashing::Murmur64 | Hashing::Murmur32 => {
                for value in hash.plain(count) {
                    new |= store.set_if_unset(value % bits);
                }
            }
        }
        self.items += u64::from(new);
        new
    }

    /// Sets the item's probe bits and counts it; the caller has checked that it is new.
    #[inline]
    pub fn insert(&mut self, hash: &ItemHash) {
        let (count, bits) = (self.shape.hash_count, self.shape.bits);
        let store = &mut self.bits;
        match hash.hashing() {
            Hashing::Xxh3 => {
                for position in hash.probes(count, bits) {
                    store.set(position);
                }
            }
            Hashing::Murmur64 | Hashing::Murmur32 => {
                for value in hash.plain(count) {
                    store.set(value % bits);
                }
            }
        }
        self.items += 1;
    }
}

/// Bits of the array that holds a sub-filter of `bits` bits: whole 64-bit words. (Equal for
/// this module's own filters; RedisBloom's first releases did not round.)
pub fn storage_bits(bits: u64) -> u64 {
    bits.max(1).next_multiple_of(64)
}

/// Checks a stored sub-filter before anything is allocated for it: its hash count and bit count
/// must be the ones the sizing gives for its capacity and error rate, and it cannot hold more
/// items than its capacity.
pub fn check_stored(shape: &Shape, items: u64) -> Result<(), FilterError> {
    let expected = Shape::new(shape.capacity, shape.error)
        .map_err(|_| FilterError::Corrupt("sub-filter capacity or error rate out of range"))?;
    if expected.hash_count != shape.hash_count {
        return Err(FilterError::Corrupt(
            "hash count does not match the error rate",
        ));
    }
    if expected.bits != shape.bits {
        return Err(FilterError::Corrupt(
            "bit count does not match the capacity",
        ));
    }
    if items > shape.capacity {
        return Err(FilterError::Corrupt("more items than capacity"));
    }
    Ok(())
}
