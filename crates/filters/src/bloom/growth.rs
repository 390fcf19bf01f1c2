//! How Bloom filter chains grow: [`Growth`] (scaling by a factor, or NONSCALING), and RedisBloom's own rules
//! for the chains it made (its option flags, the sizing of each sub-filter it describes, and the
//! sub-filter it adds to a full chain), which imported chains keep. The scaling chain
//! ([`crate::bloom::chain`]) applies them; the readers of stored forms ([`crate::bloom::stored`],
//! [`crate::bloom::redisbloom`]) check what they read against them.

use crate::bloom::probes::Hashing;
use crate::bloom::sizing::{bits_per_item, check_error_rate, hash_count, Shape};
use crate::error::FilterError;

/// The largest expansion factor (RedisBloom's bound).
pub const MAX_EXPANSION: u16 = 32768;

/// What happens when the newest sub-filter is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Growth {
    /// Add a sub-filter `expansion` times the newest one's capacity (1 to [`MAX_EXPANSION`]).
    /// (16 bits: with [`crate::bloom::Format`], it keeps a [`crate::bloom::Chain`] at 32 bytes, an allocator size
    /// class.)
    Scaling { expansion: u16 },
    /// Refuse new items (NONSCALING).
    Fixed,
}

impl Growth {
    /// A scaling growth, if `expansion` is in range.
    pub fn scaling(expansion: u64) -> Result<Growth, FilterError> {
        match u16::try_from(expansion) {
            Ok(expansion) if (1..=MAX_EXPANSION).contains(&expansion) => {
                Ok(Growth::Scaling { expansion })
            }
            _ => Err(FilterError::BadExpansion),
        }
    }
}

const NO_ROUND: u8 = 1;
const ENTRIES_ARE_BITS: u8 = 2;
const FORCE_64: u8 = 4;
const NO_SCALING: u8 = 8;

/// The largest bit count of a sub-filter (as for this module's own).
pub(crate) const MAX_BITS: u64 = 1 << 62;

/// RedisBloom's option flags of a chain, as it stores them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RedisBloomOptions(u8);

impl RedisBloomOptions {
    /// Checks stored flags: only the four RedisBloom defines, and not "entries given as bits",
    /// which no command ever set.
    pub fn new(flags: u64) -> Result<RedisBloomOptions, FilterError> {
        let flags = u8::try_from(flags)
            .ok()
            .filter(|flags| flags & !0xF == 0)
            .ok_or(FilterError::Corrupt("unknown RedisBloom option flags"))?;
        if flags & ENTRIES_ARE_BITS != 0 {
            return Err(FilterError::Corrupt(
                "RedisBloom's entries-as-bits option is not supported",
            ));
        }
        Ok(RedisBloomOptions(flags))
    }

    /// The flags, as RedisBloom stores them (5 for a scaling filter of a current release).
    pub fn flags(self) -> u32 {
        u32::from(self.0)
    }

    /// How the chain hashes items: 64-bit MurmurHash64A with flag 4, 32-bit MurmurHash2 without.
    pub fn hashing(self) -> Hashing {
        if self.0 & FORCE_64 != 0 {
            Hashing::Murmur64
        } else {
            Hashing::Murmur32
        }
    }

    /// True if new sub-filters are rounded up to a power of two (no flag 1: before 2.2).
    pub fn rounds(self) -> bool {
        self.0 & NO_ROUND == 0
    }

    /// True for a NONSCALING chain (flag 8).
    pub fn fixed(self) -> bool {
        self.0 & NO_SCALING != 0
    }

    /// The chain's growth: NONSCALING, or scaling by `growth` (1 to `MAX_EXPANSION`).
    pub fn growth(self, growth: u64) -> Result<Growth, FilterError> {
        if self.fixed() {
            return Ok(Growth::Fixed);
        }
        Growth::scaling(growth).map_err(|_| FilterError::Corrupt("RedisBloom growth out of range"))
    }
}

/// One sub-filter as RedisBloom describes it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Link {
    /// Capacity.
    pub entries: u64,
    pub error: f64,
    pub hashes: u64,
    /// Bits per item, where the format stores it.
    pub bpe: Option<f64>,
    /// Bit count: the modulus of the probes (0 in some power-of-two sub-filters, which use n2).
    pub bits: u64,
    /// log2 of the bit count of a power-of-two sub-filter, or 0.
    pub n2: u64,
    /// Items added.
    pub items: u64,
}

/// Checks one sub-filter against RedisBloom's sizing; its shape, whose `bits` is the probe
/// modulus (`2^n2` for a power-of-two sub-filter) and whose bit array is [`Shape::bit_bytes`]
/// long.
pub fn check_link(options: RedisBloomOptions, link: &Link) -> Result<Shape, FilterError> {
    check_error_rate(link.error)
        .map_err(|_| FilterError::Corrupt("sub-filter error rate out of range"))?;
    if link.entries == 0 {
        return Err(FilterError::Corrupt("sub-filter of no capacity"));
    }
    let bpe = bits_per_item(link.error);
    if let Some(stored) = link.bpe {
        // The same formula on the same kind of machine: equal, but for the last bits of a
        // different libm.
        if stored.is_nan() || (stored - bpe).abs() > bpe * 1e-12 {
            return Err(FilterError::Corrupt(
                "bits per item do not match the error rate",
            ));
        }
    }
    if link.hashes != u64::from(hash_count(link.error)) {
        return Err(FilterError::Corrupt(
            "hash count does not match the error rate",
        ));
    }
    let wanted = link.entries as f64 * bpe;
    if !wanted.is_finite() || wanted >= MAX_BITS as f64 {
        return Err(FilterError::Corrupt("sub-filter too large"));
    }
    let bits = match link.n2 {
        0 => {
            // Not rounded: the formula's bit count, rounded up at most to whole 64-bit words
            // (and one bit short at most: RedisBloom 1.0 computed it from its stored bits per
            // item, which may differ from ours in the last digit).
            let floor = (wanted as u64).max(1);
            if link.bits < floor.saturating_sub(1).max(1) || link.bits > floor + 64 {
                return Err(FilterError::Corrupt(
                    "bit count does not match the capacity",
                ));
            }
            link.bits
        }
        n2 @ 1..=62 => {
            // RedisBloom sizes every sub-filter of a chain by the chain's options.
            if !options.rounds() {
                return Err(FilterError::Corrupt(
                    "a power-of-two sub-filter in a filter that does not round",
                ));
            }
            let bits = 1u64 << n2;
            // Rounded up to the next power of two, the capacity raised to fill it.
            if wanted > bits as f64 + bpe || bits as f64 > 2.0 * wanted + 64.0 {
                return Err(FilterError::Corrupt(
                    "power-of-two size does not match the capacity",
                ));
            }
            if link.bits != 0 && link.bits != bits && link.bits != bits.div_ceil(8) * 8 {
                return Err(FilterError::Corrupt(
                    "bit count does not match the power-of-two size",
                ));
            }
            bits
        }
        _ => return Err(FilterError::Corrupt("power-of-two size out of range")),
    };
    if link.items > link.entries {
        return Err(FilterError::Corrupt("more items than capacity"));
    }
    Ok(Shape {
        capacity: link.entries,
        error: link.error,
        hash_count: link.hashes as u32,
        bits,
        lines: 0,
    })
}

/// The most sub-filters an imported chain may have. RedisBloom at least halves the error rate with
/// each sub-filter it adds, in every release, and stops when the rate reaches 0: from any rate
/// below 1 that is at most 1,075 sub-filters (an EXPANSION 1 chain started at 1% ends at 1,067). A
/// forged file with more would have every lookup and every add walk them all.
pub const MAX_IMPORTED_LINKS: u64 = 1_100;

/// Checks the number of sub-filters an imported chain declares, before any is read.
pub fn check_link_count(count: u64) -> Result<(), FilterError> {
    if count == 0 {
        return Err(FilterError::Corrupt("no sub-filters"));
    }
    if count > MAX_IMPORTED_LINKS {
        return Err(FilterError::Corrupt(
            "more sub-filters than RedisBloom ever makes (1,100)",
        ));
    }
    Ok(())
}

/// Checks a sub-filter of an imported chain against the one before it: RedisBloom made it at
/// half that one's error rate or less (half since 2.2; before, `0.5^(n+1)` of it for the `n`th
/// sub-filter; its capacity rules changed too). With [`check_link_count`], it bounds the chain as
/// RedisBloom's own are bounded.
pub fn check_imported_successor(older: &Shape, newer: &Shape) -> Result<(), FilterError> {
    if newer.error > older.error * 0.5 {
        return Err(FilterError::Corrupt(
            "a sub-filter not at half the error rate of the one before it or less",
        ));
    }
    Ok(())
}

/// Checks a sub-filter of an imported chain as this module stores it (its bit count is the
/// modulus itself: a power of two in a chain that rounds is taken as rounded).
pub(crate) fn check_stored_link(
    options: RedisBloomOptions,
    capacity: u64,
    error: f64,
    hash_count: u64,
    bits: u64,
    items: u64,
) -> Result<Shape, FilterError> {
    let link = Link {
        entries: capacity,
        error,
        hashes: hash_count,
        bpe: None,
        bits,
        n2: 0,
        items,
    };
    // The stored form keeps the bit count, the modulus, not how RedisBloom sized it: in a chain
    // that rounds, a power of two may have been either (a sub-filter of RedisBloom 1.0 can be one
    // by chance). Both readings give the same probes; either passing is enough.
    let shape = check_link(options, &link).or_else(|err| {
        if options.rounds() && bits.is_power_of_two() {
            let n2 = u64::from(bits.trailing_zeros());
            check_link(options, &Link { n2, ..link })
        } else {
            Err(err)
        }
    })?;
    if shape.bits != bits {
        return Err(FilterError::Corrupt(
            "bit count does not match the sub-filter",
        ));
    }
    Ok(shape)
}

/// The sub-filter RedisBloom adds to a full chain: `capacity * growth` items at half the newest
/// one's error, rounded up to a power of two (capacity raised to fill it) unless the chain has
/// flag 1.
///
/// RedisBloom goes on halving into the subnormal doubles and stops only when the error reaches 0
/// (its sizing refuses an error of 0): an EXPANSION 1 chain started at 1% grows to 1,067
/// sub-filters there (this module's own chains stop at the normal range: 1,015). Imported
/// chains grow as far as RedisBloom let them. (Where RedisBloom's capacity multiplication would
/// wrap around, growth is refused instead.)
pub fn next_link(
    options: RedisBloomOptions,
    growth: Growth,
    newest: &Shape,
) -> Result<Shape, FilterError> {
    let Growth::Scaling { expansion } = growth else {
        return Err(FilterError::Full);
    };
    let entries = newest
        .capacity
        .checked_mul(u64::from(expansion))
        .ok_or(FilterError::CannotGrow)?;
    let error = newest.error * 0.5;
    if error <= 0.0 {
        return Err(FilterError::CannotGrow);
    }
    if !options.rounds() {
        return Shape::new(entries, error);
    }
    let bpe = bits_per_item(error);
    let wanted = entries as f64 * bpe;
    if !wanted.is_finite() {
        return Err(FilterError::CannotGrow);
    }
    // The smallest power of two strictly above `wanted`: one more than its binary exponent.
    let exponent = ((wanted.to_bits() >> 52) & 0x7ff) as i64 - 1023;
    let n2 = (exponent + 1).max(1);
    if n2 > 62 {
        return Err(FilterError::TooLarge {
            bytes: (wanted / 8.0) as u64,
        });
    }
    let bits = 1u64 << n2;
    let spare = (bits as f64 - wanted).trunc();
    Ok(Shape {
        capacity: entries + (spare / bpe) as u64,
        error,
        hash_count: hash_count(error),
        bits,
        lines: 0,
    })
}
