//! The checks every loader runs on a windowed filter's generations before a bit is read or
//! allocated: what a real filter could hold.

use super::{Generation, Rule, WindowedShape, GENERATIONS, MAX_CAPACITY, MAX_GENERATIONS};
use crate::bloom::sizing::Shape;
use crate::error::FilterError;

/// A generation without its bits: what the loaders check before a bit is read or allocated.
#[derive(Debug, Clone, PartialEq)]
pub struct Outline {
    pub slot: u64,
    pub rule: Rule,
    /// The number of its first part.
    pub first: u32,
    /// Each part's shape, item count and expiry.
    pub parts: Vec<(Shape, u64, u64)>,
}

impl Generation {
    /// Its outline.
    pub fn outline(&self) -> Outline {
        Outline {
            slot: self.slot,
            rule: self.rule,
            first: self.first,
            parts: self
                .parts
                .iter()
                .map(|part| (*part.filter.shape(), part.filter.items(), part.expires_at))
                .collect(),
        }
    }
}

/// Checks stored generations against what a windowed filter can hold, before any bit is read
/// into them:
/// - at most [`MAX_GENERATIONS`], one per slot, oldest first, spanning at most the window and
///   its slack (five slots);
/// - in each, at least one part, each of the shape its number gives under the generation's rule,
///   every part but the newest full, the budget within the capacity;
/// - each part expiring between a window after its slot starts and a window after it ends, never
///   before the part before it.
pub fn check_generations(
    shape: &WindowedShape,
    generations: &[Outline],
) -> Result<(), FilterError> {
    if generations.len() > MAX_GENERATIONS {
        return Err(FilterError::Corrupt(
            "more generations than a windowed filter keeps (5)",
        ));
    }
    for pair in generations.windows(2) {
        if pair[0].slot >= pair[1].slot {
            return Err(FilterError::Corrupt("generations out of order"));
        }
    }
    if let (Some(oldest), Some(newest)) = (generations.first(), generations.last()) {
        if newest.slot - oldest.slot > GENERATIONS {
            return Err(FilterError::Corrupt(
                "generations span more than a window and its slack",
            ));
        }
        if shape.expiry(newest.slot) == u64::MAX {
            return Err(FilterError::Corrupt("generation slot out of range"));
        }
    }
    let mut floor = 0;
    for generation in generations {
        check_generation(shape, generation, &mut floor)?;
    }
    Ok(())
}

/// Checks one generation (see [`check_generations`]); `floor` is the expiry of the part before.
fn check_generation(
    shape: &WindowedShape,
    generation: &Outline,
    floor: &mut u64,
) -> Result<(), FilterError> {
    if generation.parts.is_empty() {
        return Err(FilterError::Corrupt("a generation without sub-filters"));
    }
    if let Rule::Budget(budget) = generation.rule {
        if budget > shape.capacity {
            return Err(FilterError::Corrupt(
                "a generation's budget over the capacity",
            ));
        }
    }
    let start = shape.slot_start(generation.slot);
    let earliest = start.saturating_add(shape.window.as_millis());
    let latest = earliest.saturating_add(shape.window.slot_millis());
    let newest = generation.parts.len() - 1;
    let mut capacity = 0u64;
    for (position, (stored, items, expiry)) in generation.parts.iter().enumerate() {
        let index = u32::try_from(generation.first as usize + position)
            .map_err(|_| FilterError::Corrupt("a part number out of range"))?;
        let expected = shape
            .part_shape(generation.rule, index)
            .map_err(|_| FilterError::Corrupt("a part past what its generation can grow"))?;
        if *stored != expected || expected.error.to_bits() != stored.error.to_bits() {
            return Err(FilterError::Corrupt(
                "a part not sized as its generation sizes it",
            ));
        }
        if *items > expected.capacity || (position < newest && *items != expected.capacity) {
            return Err(FilterError::Corrupt(
                "a part's items: over its capacity, or an older part not full",
            ));
        }
        if *expiry < earliest || *expiry > latest || *expiry < *floor {
            return Err(FilterError::Corrupt(
                "a part's expiry outside its generation's slot",
            ));
        }
        *floor = *expiry;
        capacity = capacity
            .checked_add(expected.capacity)
            .filter(|total| *total <= MAX_CAPACITY)
            .ok_or(FilterError::Corrupt("a generation's capacity out of range"))?;
    }
    Ok(())
}
