//! One fixed-size Bloom filter: a shape, a bit array, and the number of items it took.

use crate::bits::BitStore;
use crate::bloom::probes::{Mixed, Probing};
use crate::bloom::sizing::{Layout, Shape};
use crate::error::FilterError;
use crate::hash::ItemHash;

/// A Bloom filter of fixed size; a [`crate::bloom::Chain`] is a list of them.
///
/// How it finds an item's bits is its chain's [`Probing`]: this module's probe sequence for
/// xxh3-128, RedisBloom's `(a + i*b) mod bits` for its hashings (a power-of-two `bits` makes that
/// the masking of RedisBloom's older releases). For RedisBloom's 32-bit hashing, whose first
/// releases computed `a + i*b` in 32 bits where every later one uses 64, an item is present if its
/// bits are set under either where the two differ (new items use 64 bits, as RedisBloom does
/// today): no false negatives, whichever release set the bits.
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

    /// A windowed filter's part rebuilt from stored parts: its loader has found the shape equal
    /// to the one its generation gives it (`WindowedShape::part_shape`, lean for classic parts),
    /// so only the item count ([`check_items`]) and the bit array's size are checked here.
    pub fn from_part(shape: Shape, items: u64, bits: BitStore) -> Result<SubFilter, FilterError> {
        check_items(&shape, items)?;
        if bits.bits() != shape.bits {
            return Err(FilterError::Corrupt("bit array of the wrong size"));
        }
        Ok(SubFilter { shape, items, bits })
    }

    /// A sub-filter of an imported chain rebuilt from parts its caller has checked
    /// (`growth::check_link`); the bit array must be [`storage_bits`] long.
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

    /// True if every probe bit of the item is set (this module's probing).
    #[inline]
    pub fn contains(&self, hash: &ItemHash) -> bool {
        self.contains_by::<Mixed>(hash)
    }

    /// True if every probe bit of the item is set, by probing `P`.
    #[inline(always)]
    pub fn contains_by<P: Probing>(&self, hash: &ItemHash) -> bool {
        if let Some(block) = self.block::<P>(hash) {
            return block.all();
        }
        let (count, bits) = (self.shape.hash_count, self.shape.bits);
        P::each(hash, &self.shape, count, |position| self.bits.get(position))
            || (P::LEGACY
                && arithmetic_differs(bits)
                && hash.plain32(count).all(|value| self.bits.get(value % bits)))
    }

    /// [`SubFilter::contains_by`] of an item whose first `asked` probes' lines were asked for
    /// already: once those are all found set (the item may well be there), the lines of the rest
    /// are asked for at once, before any is read; an item found absent among the first costs no
    /// other line. In a blocked sub-filter the item's block was asked for whole, and is read as
    /// [`SubFilter::contains_by`] reads it. (RedisBloom's 32-bit arithmetic of old, where it
    /// differs, is tried as [`SubFilter::contains_by`] tries it.)
    #[inline(always)]
    pub fn contains_asked_by<P: Probing>(&self, hash: &ItemHash, asked: u32) -> bool {
        // A blocked sub-filter's item has one block, whose lines were all asked for.
        if let Some(block) = self.block::<P>(hash) {
            return block.all();
        }
        let (count, bits) = (self.shape.hash_count, self.shape.bits);
        let mut probe = 0;
        P::each(hash, &self.shape, count, |position| {
            if probe == asked {
                self.ask_after::<P>(hash, asked);
            }
            probe += 1;
            self.bits.get_lean(position)
        }) || (P::LEGACY
            && arithmetic_differs(bits)
            && hash.plain32(count).all(|value| self.bits.get(value % bits)))
    }

    /// Asks for the lines of the item's probes after its first `asked` (up to 16 in all), for
    /// [`SubFilter::contains_asked_by`] once those are found set. Out of line, so that the probe
    /// loop around it stays small: a lookup that asked for every line early never calls it.
    #[inline(never)]
    fn ask_after<P: Probing>(&self, hash: &ItemHash, asked: u32) {
        let mut seen = 0;
        P::lines(hash, &self.shape, self.shape.hash_count.min(16), |later| {
            if seen >= asked {
                self.bits.prefetch(later);
            }
            seen += 1;
        });
    }

    /// Starts loading the cache lines of the item's first `count` probes (at most its hash
    /// count), by probing `P`.
    #[inline(always)]
    pub fn prefetch_by<P: Probing>(&self, hash: &ItemHash, count: u32) {
        let count = count.min(self.shape.hash_count);
        P::lines(hash, &self.shape, count, |position| {
            self.bits.prefetch(position)
        });
    }

    /// Sets the item's probe bits and counts it if one of them was unset (it was new); true if
    /// it was. The caller has checked that there is room. (This module's probing.)
    #[inline]
    pub fn insert_if_new(&mut self, hash: &ItemHash) -> bool {
        self.insert_if_new_by::<Mixed>(hash)
    }

    /// [`SubFilter::insert_if_new`] by probing `P`. An item found under RedisBloom's old 32-bit
    /// arithmetic is not new.
    #[inline(always)]
    pub fn insert_if_new_by<P: Probing>(&mut self, hash: &ItemHash) -> bool {
        if P::LEGACY && self.contains_by::<P>(hash) {
            return false;
        }
        if let Some(mut block) = self.block_mut::<P>(hash) {
            let new = block.set_all();
            self.items += u64::from(new);
            return new;
        }
        let store = &mut self.bits;
        let mut new = false;
        P::each(hash, &self.shape, self.shape.hash_count, |position| {
            new |= store.set_if_unset(position);
            true
        });
        self.items += u64::from(new);
        new
    }

    /// Sets the item's probe bits and counts it; the caller has checked that it is new. (This
    /// module's probing.)
    #[inline]
    pub fn insert(&mut self, hash: &ItemHash) {
        self.insert_by::<Mixed>(hash);
    }

    /// [`SubFilter::insert`] by probing `P`.
    #[inline(always)]
    pub fn insert_by<P: Probing>(&mut self, hash: &ItemHash) {
        if let Some(mut block) = self.block_mut::<P>(hash) {
            block.set_all();
            self.items += 1;
            return;
        }
        let store = &mut self.bits;
        P::each(hash, &self.shape, self.shape.hash_count, |position| {
            store.set(position);
            true
        });
        self.items += 1;
    }
}

impl SubFilter {
    /// The item's block, if the sub-filter is blocked (and probed by [`Mixed`], the probing with
    /// blocks).
    #[inline(always)]
    fn block<P: Probing>(&self, hash: &ItemHash) -> Option<Block<&[u8]>> {
        let (start, width_log2) = self.block_place::<P>(hash)?;
        let bytes = self.bits.block(start, width_log2)?;
        Some(Block::new(bytes, hash, width_log2, self.shape.hash_count))
    }

    /// [`SubFilter::block`], to set bits in.
    #[inline(always)]
    fn block_mut<P: Probing>(&mut self, hash: &ItemHash) -> Option<Block<&mut [u8]>> {
        let (start, width_log2) = self.block_place::<P>(hash)?;
        let count = self.shape.hash_count;
        let bytes = self.bits.block_mut(start, width_log2)?;
        Some(Block::new(bytes, hash, width_log2, count))
    }

    /// Where the item's block starts and log2 of its bits ([`Mixed::block`]); `None` for a
    /// classic sub-filter, or one probed otherwise.
    #[inline(always)]
    fn block_place<P: Probing>(&self, hash: &ItemHash) -> Option<(u64, u32)> {
        (P::BLOCKS && self.shape.lines != 0)
            .then(|| Mixed::block(hash, self.shape.bits, self.shape.lines))
    }
}

/// An item's block in a blocked sub-filter: its bytes, found once, and the item's probes in it
/// ([`Mixed::each_in_block`]), each a bit of those bytes (bit `i` of the block is bit `i % 8`
/// of its byte `i / 8`, as in the whole array).
struct Block<B> {
    bytes: B,
    hash: ItemHash,
    width_log2: u32,
    /// The sub-filter's hash count.
    count: u32,
}

impl<B> Block<B> {
    #[inline(always)]
    fn new(bytes: B, hash: &ItemHash, width_log2: u32, count: u32) -> Block<B> {
        Block {
            bytes,
            hash: *hash,
            width_log2,
            count,
        }
    }
}

impl Block<&[u8]> {
    /// Whether the item's probes are all set.
    #[inline(always)]
    fn all(&self) -> bool {
        Mixed::each_in_block(&self.hash, self.width_log2, self.count, |offset| {
            self.bytes
                .get((offset >> 3) as usize)
                .is_some_and(|byte| byte >> (offset & 7) & 1 == 1)
        })
    }
}

impl Block<&mut [u8]> {
    /// Sets the item's probes; whether one of them was unset (the item is new). A bit already
    /// set is not written, so that adding an item that is present does not dirty its line.
    #[inline(always)]
    fn set_all(&mut self) -> bool {
        let mut new = false;
        Mixed::each_in_block(&self.hash, self.width_log2, self.count, |offset| {
            if let Some(byte) = self.bytes.get_mut((offset >> 3) as usize) {
                let mask = 1 << (offset & 7);
                if *byte & mask == 0 {
                    *byte |= mask;
                    new = true;
                }
            }
            true
        });
        new
    }
}

/// True if RedisBloom's 32-bit and 64-bit probe arithmetic can give different positions in a
/// sub-filter of `bits` bits: unless it is a power of two no larger than 2^32, where both reduce
/// to the same low bits.
fn arithmetic_differs(bits: u64) -> bool {
    !bits.is_power_of_two() || bits > 1 << 32
}

/// Bits of the array that holds a sub-filter of `bits` bits: whole 64-bit words. (Equal for
/// this module's own filters; RedisBloom's first releases did not round.)
pub fn storage_bits(bits: u64) -> u64 {
    bits.max(1).next_multiple_of(64)
}

/// Checks a sub-filter's shape and item count as [`stored_shape`] does, in the layout its
/// shape says (a blocked filter's classic sub-filters are sized as classic ones).
pub fn check_stored(shape: &Shape, items: u64) -> Result<(), FilterError> {
    let layout = if shape.lines == 0 {
        Layout::Classic
    } else {
        Layout::Blocked
    };
    let expected = stored_shape(shape, items, layout)?;
    if expected.lines != shape.lines {
        return Err(FilterError::Corrupt("block does not match the error rate"));
    }
    Ok(())
}

/// Checks a stored sub-filter of a filter in `layout` before anything is allocated for it: its
/// hash count and bit count must be the ones the sizing gives for its capacity and error rate,
/// and it cannot hold more items than its capacity. The shape it must have (with its block,
/// which stored fields do not repeat: the sizing gives it).
pub fn stored_shape(read: &Shape, items: u64, layout: Layout) -> Result<Shape, FilterError> {
    let expected = Shape::sized(read.capacity, read.error, layout)
        .map_err(|_| FilterError::Corrupt("sub-filter capacity or error rate out of range"))?;
    if expected.hash_count != read.hash_count {
        return Err(FilterError::Corrupt(
            "hash count does not match the error rate",
        ));
    }
    if expected.bits != read.bits {
        return Err(FilterError::Corrupt(
            "bit count does not match the capacity",
        ));
    }
    check_items(read, items)?;
    Ok(expected)
}

/// Checks that a stored sub-filter holds no more items than its capacity.
pub fn check_items(shape: &Shape, items: u64) -> Result<(), FilterError> {
    if items > shape.capacity {
        return Err(FilterError::Corrupt("more items than capacity"));
    }
    Ok(())
}
