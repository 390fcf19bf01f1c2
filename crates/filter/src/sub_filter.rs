//! One fixed-size Bloom filter: a shape, a bit array, and the number of items it took.

use crate::bits::BitStore;
use crate::hash::ItemHash;
use crate::sizing::Shape;
use crate::FilterError;

/// A Bloom filter of fixed size; a [`crate::Chain`] is a list of them.
#[derive(Debug, Clone, PartialEq)]
pub struct SubFilter {
    shape: Shape,
    items: u64,
    bits: BitStore,
}

impl SubFilter {
    /// An empty sub-filter of the given shape.
    pub fn new(shape: Shape) -> Result<SubFilter, FilterError> {
        let bits = BitStore::zeroed(shape.bits)?;
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

    /// True if every probe bit of the item is set.
    #[inline]
    pub fn contains(&self, hash: &ItemHash) -> bool {
        hash.probes(self.shape.hash_count, self.shape.bits)
            .all(|position| self.bits.get(position))
    }

    /// Starts loading the cache lines the item's probes will touch.
    #[inline]
    pub fn prefetch(&self, hash: &ItemHash) {
        for position in hash.probes(self.shape.hash_count, self.shape.bits) {
            self.bits.prefetch(position);
        }
    }

    /// Sets the item's probe bits and counts it if one of them was unset (it was new); true if
    /// it was. The caller has checked that there is room.
    #[inline]
    pub fn insert_if_new(&mut self, hash: &ItemHash) -> bool {
        let mut new = false;
        for position in hash.probes(self.shape.hash_count, self.shape.bits) {
            new |= self.bits.set_if_unset(position);
        }
        self.items += u64::from(new);
        new
    }

    /// Sets the item's probe bits and counts it; the caller has checked that it is new.
    #[inline]
    pub fn insert(&mut self, hash: &ItemHash) {
        for position in hash.probes(self.shape.hash_count, self.shape.bits) {
            self.bits.set(position);
        }
        self.items += 1;
    }
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
