//! The bytes a windowed filter takes, by the byte-size model (`crate::bytes`).

use super::{Generation, Part, Windowed};
use crate::bits::BitStore;
use crate::bloom::sizing::Shape;
use crate::bloom::sub_filter::storage_bits;
use crate::bytes::{charged_array, VALUE_BYTES};

/// What the allocator charges ([`crate::bytes`]) for a windowed filter whose generations hold
/// parts of these shapes: the key's value, the filter's box, the array of generations, each
/// generation's array of parts and each part's bits. The figure `Size` reports and the size
/// limits bound.
pub(crate) fn planned_windowed<'a, G, P>(generations: G) -> u64
where
    G: IntoIterator<Item = P>,
    P: IntoIterator<Item = &'a Shape>,
{
    let mut count = 0u64;
    let mut total = VALUE_BYTES.saturating_add(charged_array::<Windowed>(1));
    for parts in generations {
        count += 1;
        let mut held = 0u64;
        for shape in parts {
            held += 1;
            total = total.saturating_add(BitStore::planned_bytes(storage_bits(shape.bits)));
        }
        total = total.saturating_add(charged_array::<Part>(held));
    }
    total.saturating_add(charged_array::<Generation>(count))
}
