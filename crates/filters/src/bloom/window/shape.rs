//! How a windowed filter's parts are sized: its parameters ([`WindowedShape`]), the rule a
//! generation is sized by ([`Rule`]), and the shape of each of its parts.

use super::Window;
use super::{
    parts_per_window, GENERATIONS, LEGACY_MIN_ERROR_RATE, MAX_CAPACITY, MIN_WINDOWED_ERROR_RATE,
};
use crate::bloom::chain::Growth;
use crate::bloom::sizing::{check_requested_error_rate, Layout, Shape};
use crate::error::FilterError;

/// How a generation's parts are sized.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Parts of `ceil(C/8)` items up to this many items (the budget: what the window left for
    /// the slot when the generation was made), the last one cut; past it, parts that grow by the
    /// expansion at half the error each.
    Budget(u64),
    /// A generation made by the first release of windowed filters: a scaling chain built for
    /// `ceil(5C/16)` items at `error * 5/11`, growing by the expansion.
    Legacy,
}

/// How a windowed filter's generations are built: the parameters the filter was created with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WindowedShape {
    /// Items per window.
    pub capacity: u64,
    /// The false-positive rate asked for.
    pub error: f64,
    /// How a generation grows past its budget.
    pub growth: Growth,
    pub window: Window,
    /// How its parts lay out an item's probes.
    pub layout: Layout,
}

impl WindowedShape {
    /// Checks the parameters of a windowed filter.
    pub fn new(
        capacity: u64,
        error: f64,
        growth: Growth,
        window: Window,
    ) -> Result<WindowedShape, FilterError> {
        WindowedShape::with_floor(capacity, error, growth, window, MIN_WINDOWED_ERROR_RATE)
    }

    /// Checks the parameters of a stored windowed filter: down to the floor of the first release,
    /// whose filters may have a lower error rate than this one makes (saved again by this release,
    /// in its own format, they must still load).
    pub(crate) fn stored(
        capacity: u64,
        error: f64,
        growth: Growth,
        window: Window,
    ) -> Result<WindowedShape, FilterError> {
        WindowedShape::with_floor(capacity, error, growth, window, LEGACY_MIN_ERROR_RATE)
    }

    fn with_floor(
        capacity: u64,
        error: f64,
        growth: Growth,
        window: Window,
        floor: f64,
    ) -> Result<WindowedShape, FilterError> {
        check_requested_error_rate(error)?;
        if error < floor {
            return Err(FilterError::BadErrorRate);
        }
        if capacity == 0 || capacity > MAX_CAPACITY {
            return Err(FilterError::BadCapacity);
        }
        Ok(WindowedShape {
            capacity,
            error,
            growth,
            window,
            layout: Layout::Classic,
        })
    }

    /// The same parameters, with parts in `layout`.
    pub fn with_layout(self, layout: Layout) -> WindowedShape {
        WindowedShape { layout, ..self }
    }

    /// The capacity of a whole part: a sixth (or an eighth, above 2%) of the window's, rounded up.
    pub fn part_capacity(&self) -> u64 {
        self.capacity.div_ceil(parts_per_window(self.error)).max(1)
    }

    /// The error rate of a part of `capacity` items within the budget: proportional to its
    /// capacity, so that every item costs the same share of the error rate.
    fn part_error(&self, capacity: u64) -> f64 {
        let denominator = self.capacity.saturating_add(self.part_capacity()) as f64;
        self.error * capacity as f64 / denominator
    }

    /// The number of the slot that time `now` falls in.
    pub fn slot_at(&self, now: u64) -> u64 {
        now / self.window.slot_millis()
    }

    /// When slot `slot` starts, in milliseconds (saturating).
    pub fn slot_start(&self, slot: u64) -> u64 {
        slot.saturating_mul(self.window.slot_millis())
    }

    /// When a generation of the first release expired: a window after its slot ends.
    pub fn expiry(&self, slot: u64) -> u64 {
        slot.saturating_add(GENERATIONS + 1)
            .saturating_mul(self.window.slot_millis())
    }

    /// The shape of part number `index` of a generation sized by `rule`: the parts' sizing (see
    /// the module documentation). [`FilterError::Full`] past the budget of a NONSCALING filter,
    /// [`FilterError::CannotGrow`] where a part's capacity or error rate would leave the range.
    pub fn part_shape(&self, rule: Rule, index: u32) -> Result<Shape, FilterError> {
        let index = u64::from(index);
        match rule {
            Rule::Budget(budget) => {
                let size = self.part_capacity();
                let whole = budget.div_ceil(size);
                let (capacity, error) = if index < whole {
                    let capacity = size.min(budget - index * size);
                    (capacity, self.part_error(capacity))
                } else {
                    self.grown(size, self.part_error(size), index - whole + 1)?
                };
                match self.layout {
                    Layout::Classic => Shape::lean(capacity, error),
                    Layout::Blocked => Shape::sized(capacity, error, Layout::Blocked),
                }
            }
            Rule::Legacy => {
                let capacity = u64::try_from((u128::from(self.capacity) * 5).div_ceil(16))
                    .unwrap_or(u64::MAX)
                    .max(1);
                let generation_error = self.error * 5.0 / 11.0;
                let error = match self.growth {
                    Growth::Scaling { .. } => generation_error / 2.0,
                    Growth::Fixed => generation_error,
                };
                let (capacity, error) = self.grown(capacity, error, index)?;
                Shape::sized(capacity, error, self.layout)
            }
        }
    }

    /// The capacity and error rate `steps` growths after a part of `capacity` items at `error`:
    /// each one `expansion` times the capacity at half the error, as a scaling chain grows.
    fn grown(&self, capacity: u64, error: f64, steps: u64) -> Result<(u64, f64), FilterError> {
        let (mut capacity, mut error) = (capacity, error);
        if steps > 0 {
            let Growth::Scaling { expansion } = self.growth else {
                return Err(FilterError::Full);
            };
            for _ in 0..steps {
                capacity = capacity
                    .checked_mul(u64::from(expansion))
                    .filter(|capacity| *capacity <= MAX_CAPACITY)
                    .ok_or(FilterError::CannotGrow)?;
                // Half of it must stay a normal double (as for a chain's growth).
                if error < 2.0 * f64::MIN_POSITIVE {
                    return Err(FilterError::CannotGrow);
                }
                error /= 2.0;
            }
        }
        Ok((capacity, error))
    }
}
