//! What a cuckoo filter is made of: its parameters ([`Params`]: bucket size, eviction budget,
//! expansion), the bucket count for a capacity, the bounded error rate of this module's filters
//! ([`Bound`]) with each sub-filter's slot width, the limits an insert works within, and the
//! checks every loader runs on a stored shape.

use super::table::MAX_BUCKETS;
use crate::error::FilterError;

/// The largest bucket size (a slot count, RedisBloom's bound).
pub const MAX_BUCKET_SIZE: u8 = 255;
/// The largest `MAXITERATIONS`.
pub const MAX_ITERATIONS: u16 = u16::MAX;
/// The largest expansion (after rounding up to a power of two).
pub const MAX_EXPANSION: u16 = 32768;
/// The most sub-filters a filter may ever have, whatever `cf-max-expansions` says (RedisBloom's
/// count is 16 bits wide).
pub const MAX_TABLES: u64 = 65_535;
/// The bucket size of a filter with a bounded error rate.
pub const BOUNDED_BUCKET_SIZE: u8 = 4;
/// The smallest error rate a bound may have.
pub const MIN_BOUNDED_ERROR: f64 = 1e-12;

/// How a filter is made and grows: what `CF.RESERVE` sets and `CF.INFO` shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Params {
    /// Slots per bucket, 1 to 255.
    pub bucket_size: u8,
    /// Swaps an insert may make before the filter grows, 1 to 65535.
    pub max_iterations: u16,
    /// Each new sub-filter's bucket count over the newest one's: 0 (never grow) or a power of
    /// two up to 32768.
    pub expansion: u16,
}

impl Params {
    /// Parameters as asked: the expansion rounded up to a power of two, as RedisBloom keeps it.
    pub fn new(
        bucket_size: u64,
        max_iterations: u64,
        expansion: u64,
    ) -> Result<Params, FilterError> {
        let bucket_size = u8::try_from(bucket_size)
            .ok()
            .filter(|&size| size >= 1)
            .ok_or(FilterError::Corrupt("bucket size out of range"))?;
        let max_iterations = u16::try_from(max_iterations)
            .ok()
            .filter(|&iterations| iterations >= 1)
            .ok_or(FilterError::Corrupt("max iterations out of range"))?;
        let expansion = match u16::try_from(expansion) {
            Ok(0) => 0,
            Ok(expansion) if expansion <= MAX_EXPANSION => expansion.next_power_of_two(),
            _ => return Err(FilterError::Corrupt("expansion out of range")),
        };
        Ok(Params {
            bucket_size,
            max_iterations,
            expansion,
        })
    }
}

/// The bucket count of a new filter for `capacity` items: `capacity / bucket_size` rounded up to a
/// power of two (at least 1), as RedisBloom sizes it. It may pass [`MAX_BUCKETS`]: the filter's
/// size refuses it then (a size past every limit, or past what any server could allocate). No
/// power of two holds the count only past 2^63 items: refused as 2^64 bytes or more.
pub fn buckets_for(capacity: u64, bucket_size: u8) -> Result<u64, FilterError> {
    let wanted = capacity / u64::from(bucket_size.max(1));
    wanted
        .max(1)
        .checked_next_power_of_two()
        .ok_or(FilterError::TooLarge { bytes: u64::MAX })
}

/// A filter's bounded error rate (`ERROR rate`, this module's): its rate and the width of its
/// first sub-filter's fingerprints; each newer sub-filter's are two bits wider, up to 64, so the
/// sub-filters' false-positive rates add up to at most the rate however far the filter grows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bound {
    /// The rate's bits (never 0: the rate is positive), so that an absent bound costs nothing
    /// in the filter's value.
    error: std::num::NonZeroU64,
    pub first_bits: u8,
}

impl Bound {
    /// The bound for `error` (from [`MIN_BOUNDED_ERROR`] up to, not including, 1): the narrowest
    /// even first width whose sub-filters' rates add up to at most `error`. A sub-filter of
    /// `bits`-bit slots answers a lookup of an absent item wrongly with a chance of at most
    /// `2 * 4 / 2^(bits - 1)` (two buckets of four slots, each matching one of `2^(bits - 1)`
    /// fingerprints); widths growing by two bits make these a geometric series of ratio 1/4 (its
    /// sum: 4/3 of the first term), and the sub-filters past 64 bits add at most 65,535 times
    /// `8 / 2^63`.
    pub fn for_error(error: f64) -> Result<Bound, FilterError> {
        if !(MIN_BOUNDED_ERROR..1.0).contains(&error) {
            return Err(FilterError::BadErrorRate);
        }
        let tail = MAX_TABLES as f64 * Bound::rate_of(64);
        let first_bits = (2u8..=64)
            .step_by(2)
            .find(|&bits| Bound::rate_of(bits) * 4.0 / 3.0 + tail <= error)
            .ok_or(FilterError::BadErrorRate)?;
        let error = std::num::NonZeroU64::new(error.to_bits()).ok_or(FilterError::BadErrorRate)?;
        Ok(Bound { error, first_bits })
    }

    /// The rate.
    pub fn error(&self) -> f64 {
        f64::from_bits(self.error.get())
    }

    /// The most a sub-filter of `bits`-bit slots adds to the false-positive rate.
    pub fn rate_of(bits: u8) -> f64 {
        2.0 * f64::from(BOUNDED_BUCKET_SIZE) / 2f64.powi(i32::from(bits) - 1)
    }

    /// The slot width of sub-filter `index`.
    pub fn bits(&self, index: usize) -> u8 {
        let wider = u64::from(self.first_bits) + 2 * index as u64;
        wider.min(64) as u8
    }
}

/// The slot width of sub-filter `index`: 8 bits for RedisBloom's filters.
pub fn slot_bits(bound: Option<Bound>, index: usize) -> u8 {
    bound.map_or(8, |bound| bound.bits(index))
}

/// What an insert may take: how many sub-filters the filter may have (`cf-max-expansions`),
/// and how many bytes in all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_tables: u64,
    pub max_bytes: u64,
}

impl Limits {
    /// No limit but the format's: for writes a primary or the AOF replays.
    pub const NONE: Limits = Limits {
        max_tables: MAX_TABLES,
        max_bytes: u64::MAX,
    };
}

/// Checks that a bound goes with its parameters: bucket size 4, and the first width its rate
/// gives.
pub(crate) fn check_bound(params: Params, bound: Option<Bound>) -> Result<(), FilterError> {
    let Some(bound) = bound else {
        return Ok(());
    };
    if params.bucket_size != BOUNDED_BUCKET_SIZE {
        return Err(FilterError::Corrupt("a bounded filter's bucket size is 4"));
    }
    match Bound::for_error(bound.error()) {
        Ok(expected) if expected == bound => Ok(()),
        _ => Err(FilterError::Corrupt(
            "a fingerprint width that does not match the error rate",
        )),
    }
}

/// Checks a stored filter's shape: at least one sub-filter and at most [`MAX_TABLES`], a
/// power-of-two first bucket count, each next one `expansion` times the one before (a single one
/// when the expansion is 0), and no more items than slots.
pub(crate) fn check_shape(
    params: Params,
    buckets: impl IntoIterator<Item = u64>,
    items: u64,
) -> Result<(), FilterError> {
    let mut count = 0u64;
    let mut slots = 0u64;
    let mut expected = None;
    for buckets in buckets {
        count += 1;
        if count > MAX_TABLES {
            return Err(FilterError::Corrupt("too many sub-filters"));
        }
        if !buckets.is_power_of_two() || buckets > MAX_BUCKETS {
            return Err(FilterError::Corrupt(
                "a bucket count that is not a power of two",
            ));
        }
        if expected.is_some_and(|expected| buckets != expected) {
            return Err(FilterError::Corrupt(
                "sub-filters do not follow the expansion",
            ));
        }
        expected = Some(buckets.saturating_mul(u64::from(params.expansion)));
        slots = slots.saturating_add(buckets.saturating_mul(u64::from(params.bucket_size)));
    }
    if count == 0 {
        return Err(FilterError::Corrupt("no sub-filters"));
    }
    if params.expansion == 0 && count > 1 {
        return Err(FilterError::Corrupt(
            "a filter of expansion 0 with several sub-filters",
        ));
    }
    if items > slots {
        return Err(FilterError::Corrupt("more items than slots"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_take_the_narrowest_width_whose_rates_add_up_under_the_rate() {
        for (error, first_bits) in [(0.01, 12), (0.001, 16), (0.1, 8), (1e-6, 26)] {
            let bound = Bound::for_error(error).unwrap();
            assert_eq!(bound.first_bits, first_bits, "{error}");
            let tail = MAX_TABLES as f64 * Bound::rate_of(64);
            let sum: f64 = (0..MAX_TABLES as usize)
                .map(|i| Bound::rate_of(bound.bits(i)))
                .sum();
            assert!(sum <= error, "{error}: {sum}");
            let narrower = Bound::rate_of(first_bits - 2) * 4.0 / 3.0 + tail;
            assert!(narrower > error, "{error}");
        }
        assert!(Bound::for_error(1.0).is_err());
        assert!(Bound::for_error(1e-13).is_err());
        assert_eq!(Bound::for_error(0.01).unwrap().bits(40), 64);
    }
}
