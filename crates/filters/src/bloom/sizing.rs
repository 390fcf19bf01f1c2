//! Bloom filter sizing: how many bits and hash functions a sub-filter gets for a capacity and an error rate.
//!
//! The formulas are RedisBloom's, to the constant, so that capacities, hash counts and sizes line up
//! with filters that users already run (and with the ones they will import):
//! `bits_per_item = -ln(error) / ln(2)^2`, `hash_count = ceil(ln(2) * bits_per_item)`,
//! `bits = floor(capacity * bits_per_item)`, at least 1, rounded up to a multiple of 64.
//!
//! That is the classic layout, whose probes spread over the whole bit array. The blocked layout
//! ([`Layout::Blocked`]) keeps an item's probes in one block of one or two cache lines, and is
//! sized by its own rule ([`blocked`]), to the same error rate. A windowed filter's classic parts
//! are lean ([`Shape::lean`]): fewer hashes than the optimum for a few percent more bits.

use crate::error::FilterError;

pub mod blocked;

/// How a filter lays an item's probes over its bits, as it was asked for (`LAYOUT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Layout {
    /// Every probe anywhere in the sub-filter's bit array (RedisBloom's layout).
    #[default]
    Classic,
    /// Every probe of an item in one block of one or two 64-byte cache lines, chosen by the
    /// item's hash: one memory access per item, for a few percent more bits. Sub-filters whose
    /// error rate is too small for that to pay are classic (see [`blocked`]).
    Blocked,
}

/// ln(2), with the digits RedisBloom uses (not `std::f64::consts::LN_2`): sizes must match its own
/// to the bit, and the last digit can move a `ceil` or a `floor`.
#[allow(clippy::approx_constant)]
const LN_2: f64 = 0.693147180559945;
/// ln(2)^2, with the digits RedisBloom uses.
const LN_2_SQUARED: f64 = 0.480453013918201;

/// The largest bit count a sub-filter may have: far beyond any memory limit, and small enough that
/// every byte offset fits a `usize` and every rounding below stays exact.
const MAX_BITS: u64 = 1 << 62;

/// Bits per item that give a false-positive rate of `error` with the optimal number of hashes.
pub fn bits_per_item(error: f64) -> f64 {
    -error.ln() / LN_2_SQUARED
}

/// Bits per item that give a false-positive rate of `error` with `hashes` probes per item:
/// `-k / ln(1 - error^(1/k))`, from the same approximation of a full filter's rate,
/// `(1 - e^(-k / bits_per_item))^k`, whose optimum over k is [`bits_per_item`].
pub fn bits_per_item_with(error: f64, hashes: u32) -> f64 {
    let k = f64::from(hashes);
    -k / (-(error.ln() / k).exp()).ln_1p()
}

/// How much more memory than the optimum a lean sub-filter may take ([`Shape::lean`]).
pub const LEAN_MARGIN: f64 = 0.04;

/// Number of hash functions (probes) for a sub-filter built for `error`.
pub fn hash_count(error: f64) -> u32 {
    // error is in (0, 1), so this is between 1 and about 1,100 (for the smallest subnormal error).
    (LN_2 * bits_per_item(error)).ceil() as u32
}

/// The smallest error rate a filter may be asked for: 2^-1020, about 8.9e-308. A scaling
/// filter's first sub-filter is built for half the rate and the next for a quarter; a sub-filter
/// is only added while its error rate is a normal double (the sizing's logarithms and the halving
/// stay exact), so below this a scaling filter could not grow even once. Every rate from here up
/// makes a filter that can be created and can grow (until its error leaves the normal range:
/// 2 sub-filters at the floor, about 70 at 1e-300, over a thousand at 1%).
pub const MIN_ERROR_RATE: f64 = 4.0 * f64::MIN_POSITIVE;

/// Checks that an error rate asked for (by a command or a config) is one a filter can be built
/// and grown for: from [`MIN_ERROR_RATE`] up to, not including, 1.
pub fn check_requested_error_rate(error: f64) -> Result<(), FilterError> {
    if (MIN_ERROR_RATE..1.0).contains(&error) {
        Ok(())
    } else {
        Err(FilterError::BadErrorRate)
    }
}

/// Checks that `error` is a usable false-positive rate for a sub-filter: a finite number strictly
/// between 0 and 1 (sub-filters of a grown chain, and imported ones, go below
/// [`MIN_ERROR_RATE`]).
pub fn check_error_rate(error: f64) -> Result<(), FilterError> {
    if error.is_finite() && error > 0.0 && error < 1.0 {
        Ok(())
    } else {
        Err(FilterError::BadErrorRate)
    }
}

/// The shape of one sub-filter: everything about it that does not change as items are added.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shape {
    /// Items the sub-filter is built to hold at `error`.
    pub capacity: u64,
    /// The false-positive rate it is built for.
    pub error: f64,
    /// Probes per item.
    pub hash_count: u32,
    /// Size of the bit array, a multiple of 64 (of the block, for a blocked sub-filter).
    pub bits: u64,
    /// Cache lines per block: 0 for a classic sub-filter (probes anywhere in the array), 1 or 2
    /// for a blocked one.
    pub lines: u8,
}

impl Shape {
    /// The shape RedisBloom's sizing gives to `capacity` items at `error`.
    pub fn new(capacity: u64, error: f64) -> Result<Shape, FilterError> {
        check_error_rate(error)?;
        if capacity == 0 {
            return Err(FilterError::BadCapacity);
        }
        let exact = (capacity as f64 * bits_per_item(error)).floor();
        // The error rate was checked, so `exact` is a finite positive number here.
        if exact >= MAX_BITS as f64 {
            // Report the size it would have had (saturating), so the error can say how far off it is.
            return Err(FilterError::TooLarge {
                bytes: (exact / 8.0) as u64,
            });
        }
        let bits = (exact as u64).max(1).next_multiple_of(64);
        Ok(Shape {
            capacity,
            error,
            hash_count: hash_count(error),
            bits,
            lines: 0,
        })
    }

    /// The shape of a classic sub-filter of `capacity` items at `error` with the fewest probes
    /// whose bits stay within [`LEAN_MARGIN`] of the optimum ([`bits_per_item_with`]): at 1/700,
    /// 7 probes for 3.1% more bits instead of [`Shape::new`]'s 10. For sub-filters that a lookup
    /// of a held item mostly asks in vain before the one that holds it (a windowed filter's
    /// parts): the vain ones answer after fewer probes too (fewer bits are set), and the one that
    /// holds it costs fewer. The false-positive rate at capacity is at most `error` by the same
    /// approximation as the optimum's; where no count below the optimal one is within the margin,
    /// the shape is [`Shape::new`]'s.
    pub fn lean(capacity: u64, error: f64) -> Result<Shape, FilterError> {
        let optimal = Shape::new(capacity, error)?;
        let limit = bits_per_item(error) * (1.0 + LEAN_MARGIN);
        let Some(hashes) =
            (1..optimal.hash_count).find(|&hashes| bits_per_item_with(error, hashes) <= limit)
        else {
            return Ok(optimal);
        };
        // Rounded up (not floored as the optimum is), so that the rate at capacity is at most
        // `error`. Up to 4% more bits than the optimum's, which may pass MAX_BITS where the
        // optimum did not.
        let exact = (capacity as f64 * bits_per_item_with(error, hashes)).ceil();
        if exact >= MAX_BITS as f64 {
            return Err(FilterError::TooLarge {
                bytes: (exact / 8.0) as u64,
            });
        }
        Ok(Shape {
            hash_count: hashes,
            bits: (exact as u64).max(1).next_multiple_of(64),
            ..optimal
        })
    }

    /// The shape of a sub-filter of `capacity` items at `error` in a filter of `layout`: the
    /// classic sizing ([`Shape::new`]), or the blocked one where a design meets the error rate
    /// within its cost bound ([`blocked::Design`]), classic where none does.
    pub fn sized(capacity: u64, error: f64, layout: Layout) -> Result<Shape, FilterError> {
        let classic = Shape::new(capacity, error)?;
        let design = match layout {
            Layout::Classic => None,
            Layout::Blocked => blocked::Design::of(error),
        };
        let Some(design) = design else {
            return Ok(classic);
        };
        let bits = design.blocks(capacity) * u128::from(design.block_bits());
        if bits >= u128::from(MAX_BITS) {
            return Err(FilterError::TooLarge {
                bytes: u64::try_from(bits / 8).unwrap_or(u64::MAX),
            });
        }
        Ok(Shape {
            hash_count: design.hash_count,
            bits: bits as u64,
            lines: design.lines,
            ..classic
        })
    }

    /// Bytes of the bit array as formats count them: `bits / 8`, rounded up (only filters from
    /// RedisBloom's first releases have a bit count that is not a multiple of 64).
    pub fn bit_bytes(&self) -> u64 {
        self.bits.div_ceil(8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_counts_of_scaling_first_sub_filters_match_the_published_vectors() {
        // A scaling filter's first sub-filter is built for p/2.
        let expected = [
            (0.1, 5),
            (0.01, 8),
            (0.001, 11),
            (1e-4, 15),
            (1e-5, 18),
            (1e-6, 21),
            (1e-7, 25),
        ];
        for (p, k) in expected {
            assert_eq!(hash_count(p / 2.0), k, "p = {p}");
        }
    }

    #[test]
    fn bit_array_sizes_for_a_hundred_million_items_match_the_published_vectors() {
        let mib = |shape: Shape| shape.bit_bytes() as f64 / (1024.0 * 1024.0);
        let a = Shape::new(100_000_000, 0.001 / 2.0).unwrap();
        assert_eq!(format!("{:.1}", mib(a)), "188.6");
        let b = Shape::new(100_000_000, 1e-4 / 2.0).unwrap();
        assert_eq!(format!("{:.1}", mib(b)), "245.7");
    }

    #[test]
    fn bits_are_floored_then_rounded_up_to_a_multiple_of_64() {
        // 100 items at 1%: 958.5 bits per the formula, floored to 958, rounded up to 960.
        let shape = Shape::new(100, 0.01).unwrap();
        assert_eq!(shape.bits, 960);
        assert_eq!(shape.hash_count, 7);
        // One item at 50%: 1.44 bits, floored to 1, rounded up to one word.
        assert_eq!(Shape::new(1, 0.5).unwrap().bits, 64);
        for capacity in [1, 7, 10, 63, 64, 65, 1000, 123_457] {
            for error in [0.3, 0.01, 1e-5] {
                let shape = Shape::new(capacity, error).unwrap();
                assert_eq!(shape.bits % 64, 0);
                assert!(shape.bits as f64 >= (capacity as f64 * bits_per_item(error)).floor());
                assert!((shape.bits as f64) < capacity as f64 * bits_per_item(error) + 65.0);
            }
        }
    }

    #[test]
    fn error_rates_outside_the_open_unit_interval_are_refused() {
        for error in [
            0.0,
            1.0,
            -0.1,
            1.5,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ] {
            assert_eq!(
                Shape::new(100, error),
                Err(FilterError::BadErrorRate),
                "{error}"
            );
        }
    }

    #[test]
    fn requested_error_rates_start_where_a_scaling_filter_can_still_grow() {
        assert_eq!(MIN_ERROR_RATE, 2f64.powi(-1020));
        assert_eq!(format!("{MIN_ERROR_RATE:?}"), "8.900295434028806e-308");
        assert!(check_requested_error_rate(MIN_ERROR_RATE).is_ok());
        let below = f64::from_bits(MIN_ERROR_RATE.to_bits() - 1);
        for bad in [below, 1e-310, 5e-324, 0.0, 1.0, f64::NAN, -0.5] {
            assert_eq!(
                check_requested_error_rate(bad),
                Err(FilterError::BadErrorRate),
                "{bad:?}"
            );
        }
        // At the floor, a scaling chain's first two sub-filters are normal doubles.
        assert!((MIN_ERROR_RATE / 2.0).is_normal() && (MIN_ERROR_RATE / 4.0).is_normal());
    }

    #[test]
    fn lean_shapes_take_the_fewest_probes_within_the_margin() {
        // A whole part of a windowed filter at 1% is built for 1/700 (p/7), at 0.1% for 1/7000.
        for (error, optimal, lean) in [
            (0.01 / 7.0, 10, 7),
            (0.001 / 7.0, 13, 10),
            (0.1 / 9.0, 7, 5),
            (0.3, 2, 2),
        ] {
            let shape = Shape::lean(1_000_000, error).unwrap();
            assert_eq!(Shape::new(1_000_000, error).unwrap().hash_count, optimal);
            assert_eq!(shape.hash_count, lean, "{error}");
        }
        let mut error = 0.9;
        while error > 1e-300 {
            let capacity = 100_000;
            let optimal = Shape::new(capacity, error).unwrap();
            let shape = Shape::lean(capacity, error).unwrap();
            let k = shape.hash_count;
            assert!(k <= optimal.hash_count, "{error}");
            // Below 0.25 (every part of two items or more, and every grown part, of a windowed
            // filter), the rate is convex in the fill up to capacity: k >= 2 at a design rate of
            // at most (1 - 1/k)^k.
            if error < 0.25 {
                assert!(k >= 2 && error <= (1.0 - 1.0 / f64::from(k)).powi(k as i32));
            }
            assert_eq!((shape.capacity, shape.lines), (capacity, 0));
            assert_eq!(shape.bits % 64, 0);
            let limit = capacity as f64 * bits_per_item(error) * (1.0 + LEAN_MARGIN);
            assert!(
                (shape.bits as f64) < limit + 64.0,
                "{error}: {}",
                shape.bits
            );
            if k < optimal.hash_count {
                // The rate at capacity by the sizing's approximation is the one asked for.
                let fill = -(f64::from(k) * capacity as f64 / shape.bits as f64);
                let rate = (-fill.exp()).ln_1p() * f64::from(k);
                assert!(rate <= error.ln() + 1e-12, "{error}: {}", rate.exp());
                // One probe fewer would cost more than the margin.
                assert!(k == 1 || bits_per_item_with(error, k - 1) > limit / capacity as f64);
            } else {
                assert_eq!(shape, optimal, "{error}");
            }
            error /= 1.7;
        }
        // Where the optimum just fits the largest bit count, the lean shape does not.
        let error = 0.01 / 7.0;
        let capacity = (MAX_BITS as f64 * 0.99 / bits_per_item(error)) as u64;
        assert!(Shape::new(capacity, error).is_ok());
        assert!(matches!(
            Shape::lean(capacity, error),
            Err(FilterError::TooLarge { .. })
        ));
    }

    #[test]
    fn a_full_lean_sub_filter_keeps_its_error_rate() {
        use crate::bloom::SubFilter;
        use crate::hash::ItemHash;
        let error = 0.01 / 7.0;
        let capacity = 100_000;
        let mut filter = SubFilter::new(Shape::lean(capacity, error).unwrap()).unwrap();
        for i in 0..capacity {
            filter.insert_if_new(&ItemHash::of(format!("held:{i}").as_bytes()));
        }
        let lookups = 1_000_000;
        let positives = (0..lookups)
            .filter(|i| filter.contains(&ItemHash::of(format!("absent:{i}").as_bytes())))
            .count() as f64;
        // Expected 1,429; four standard deviations above it.
        let expected = error * lookups as f64;
        assert!(positives <= expected + 4.0 * expected.sqrt(), "{positives}");
    }

    #[test]
    fn zero_capacity_is_refused() {
        assert_eq!(Shape::new(0, 0.01), Err(FilterError::BadCapacity));
    }

    #[test]
    fn absurd_sizes_are_refused_before_anything_is_computed_from_them() {
        assert!(matches!(
            Shape::new(u64::MAX, 1e-300),
            Err(FilterError::TooLarge { .. })
        ));
        // The smallest subnormal error rate is still a finite, bounded number of hashes.
        let tiny = Shape::new(1, f64::from_bits(1)).unwrap();
        assert!(tiny.hash_count > 1000 && tiny.hash_count < 1200);
    }
}
