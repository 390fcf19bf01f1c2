//! Sizing of blocked sub-filters: every probe of an item in one block of one or two 64-byte cache
//! lines, the block chosen by the item's hash.
//!
//! A blocked filter of `B` blocks of `W` bits holding `n` items puts `j` items in a given block
//! with probability Poisson(`j`; `n/B`): the binomial it really is, for any `B`, is less spread
//! out (smaller in the convex order), and the false-positive rate of a block is convex in its
//! load up to where a fraction `(k-1)/k` of its bits is set, which every design here reaches
//! only at 1.8 (at 10%, k = 3) to 4.5 times its mean load, where the Poisson chance is below
//! 1e-12, so the Poisson mixture is an upper bound. A block holding `j` items has each bit set with probability
//! `f = 1 - (1 - 1/W)^(kj)`; a lookup of an absent item tests its `D` distinct probe bits, and the
//! occupancy of distinct bits is negatively associated, so all are set with probability at most
//! `f^D`. Hence the bound this module sizes by:
//!
//! ```text
//! FP <= sum_j Poisson(j; n/B) * sum_d P(D = d) * f_j^d
//! ```
//!
//! where `P(D = d)` is the chance that `k` draws among `W` bits hit `d` distinct ones. For an
//! error rate, the design is the block width and hash count that need the fewest bits per item
//! for the bound to stay at or below the rate (a grid of 1/64 bit per item, searched exactly):
//! one line (512 bits) while that costs at most [`MAX_COST`] times the classic filter's bits per
//! item, else two lines (1,024 bits), else none (the sub-filter is classic: at very small error
//! rates one block cannot hold enough bits per item cheaply). Only error rates in
//! [`ERROR_RATES`] are designed for.
//!
//! Every step is a fixed sequence of multiplications and one `exp` per evaluation, so every
//! server computes the same shape for the same capacity and error rate, as loaders require.

use super::{bits_per_item, hash_count};
use std::cell::RefCell;

/// Bits in one cache line.
pub const LINE_BITS: u64 = 512;
/// The most memory a blocked sub-filter may take, relative to a classic one at the same error
/// rate, before a wider block (or the classic layout) is used instead.
pub const MAX_COST: f64 = 1.10;
/// Bits per item are chosen on a grid of 1/`GRID` bits.
const GRID: u64 = 64;
/// The error rates blocked sub-filters are designed for. Below the smallest, two lines cost more
/// than [`MAX_COST`] anyway (from about 3e-5 on), and the search would grow with the hash count
/// (a chain's thousandth sub-filter has a thousand); above the largest, designs have one or two
/// hashes, whose rate turns concave near the mean load, where the bound no longer bounds (and
/// blocks would hold hundreds of items). Outside, sub-filters are classic.
pub const ERROR_RATES: std::ops::RangeInclusive<f64> = 1e-6..=0.1;

/// Designs kept, per thread, for the error rates asked for last: a chain's sub-filters, or a
/// windowed filter's parts, ask for a few rates again and again (a search takes about 0.1 ms).
const RECENT_DESIGNS: usize = 8;

/// An error rate's bits and its design (`None`: classic).
type Remembered = Option<(u64, Option<Design>)>;

thread_local! {
    /// The last [`RECENT_DESIGNS`] designs, and where the next one goes.
    static RECENT: RefCell<([Remembered; RECENT_DESIGNS], usize)> =
        const { RefCell::new(([None; RECENT_DESIGNS], 0)) };
}

/// The design of a blocked sub-filter for one error rate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Design {
    /// Cache lines per block: 1 or 2.
    pub lines: u8,
    /// Probes per item, all in the item's block.
    pub hash_count: u32,
    /// Bits per item, in units of 1/64 bit.
    pub grid_bits_per_item: u64,
}

impl Design {
    /// The cheapest blocked design for `error`, or `None` where one costs more than
    /// [`MAX_COST`] times the classic layout with two lines per block.
    pub fn of(error: f64) -> Option<Design> {
        RECENT.with(|recent| {
            let mut recent = recent.borrow_mut();
            if let Some((_, design)) = recent
                .0
                .iter()
                .flatten()
                .find(|(bits, _)| *bits == error.to_bits())
            {
                return *design;
            }
            let design = Design::search(error);
            let next = recent.1;
            recent.0[next] = Some((error.to_bits(), design));
            recent.1 = (next + 1) % RECENT_DESIGNS;
            design
        })
    }

    /// [`Design::of`], computed.
    fn search(error: f64) -> Option<Design> {
        if !ERROR_RATES.contains(&error) {
            return None;
        }
        let classic = bits_per_item(error);
        let classic_hashes = hash_count(error);
        let bound = (classic * MAX_COST * GRID as f64).ceil() as u64;
        [1u8, 2].into_iter().find_map(|lines| {
            let width = LINE_BITS * u64::from(lines);
            let fewest = classic_hashes.saturating_sub(4).max(1);
            (fewest..=classic_hashes)
                .filter_map(|hashes| {
                    let grid = cheapest(error, width, hashes, bound)?;
                    Some(Design {
                        lines,
                        hash_count: hashes,
                        grid_bits_per_item: grid,
                    })
                })
                // The fewest bits; among equals, the fewest probes.
                .min_by_key(|design| (design.grid_bits_per_item, design.hash_count))
        })
    }

    /// Bits in one block.
    pub fn block_bits(&self) -> u64 {
        LINE_BITS * u64::from(self.lines)
    }

    /// Blocks for `capacity` items: `capacity * bits per item / block bits`, rounded up (in
    /// exact integer arithmetic; at least one).
    pub fn blocks(&self, capacity: u64) -> u128 {
        let grid_bits = u128::from(capacity) * u128::from(self.grid_bits_per_item);
        grid_bits
            .div_ceil(u128::from(GRID) * u128::from(self.block_bits()))
            .max(1)
    }
}

/// The fewest bits per item (in 1/64 bit, at most `bound`) for which `hashes` probes in blocks
/// of `width` bits keep the bound at or below `error`, if any does.
fn cheapest(error: f64, width: u64, hashes: u32, bound: u64) -> Option<u64> {
    let distinct = distinct_probes(hashes, width);
    let meets = |grid: u64| {
        let load = (width * GRID) as f64 / grid as f64;
        false_positive_bound(load, width, hashes, &distinct) <= error
    };
    if !meets(bound) {
        return None;
    }
    // Half the classic bits per item, and at most 256 items per block on average (where the
    // Poisson chances are still normal numbers): far below anything a design reaches.
    let floor = (bits_per_item(error) * GRID as f64 / 2.0) as u64;
    let mut low = floor.max(width * GRID / 256).min(bound);
    if meets(low) {
        return Some(low);
    }
    // meets(high) holds, meets(low) does not.
    let mut high = bound;
    while high - low > 1 {
        let middle = low + (high - low) / 2;
        if meets(middle) {
            high = middle;
        } else {
            low = middle;
        }
    }
    Some(high)
}

/// `P(D = d)` for `d` in `0..=hashes`: the chance that `hashes` uniform draws among `width` bits
/// hit exactly `d` distinct ones.
fn distinct_probes(hashes: u32, width: u64) -> Vec<f64> {
    let width = width as f64;
    let mut chances = vec![0.0; hashes as usize + 1];
    chances[0] = 1.0;
    for drawn in 0..hashes as usize {
        for distinct in (0..=drawn).rev() {
            let chance = chances[distinct];
            let new = chance * (width - distinct as f64) / width;
            chances[distinct + 1] += new;
            chances[distinct] = chance - new;
        }
    }
    chances
}

/// The bound on the false-positive rate of blocks of `width` bits holding `load` items on
/// average, `hashes` probes each (see the module documentation).
fn false_positive_bound(load: f64, width: u64, hashes: u32, distinct: &[f64]) -> f64 {
    let mut unset_one = 1.0;
    let keep = 1.0 - 1.0 / width as f64;
    for _ in 0..hashes {
        unset_one *= keep;
    }
    // Far enough into the tail that what is left weighs nothing next to any rate designed for.
    let last = (load + 12.0 * load.sqrt() + 12.0).ceil() as u64;
    let mut poisson = (-load).exp();
    let mut unset = 1.0;
    let mut total = 0.0;
    for items in 0..=last {
        let set = 1.0 - unset;
        let mut all_set = 0.0;
        for chance in distinct.iter().rev() {
            all_set = all_set * set + chance;
        }
        total += poisson * all_set;
        poisson *= load / (items + 1) as f64;
        unset *= unset_one;
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_at_one_percent_and_a_tenth_of_a_percent_two_below() {
        let at = |error: f64| Design::of(error).unwrap();
        let cost =
            |error: f64| at(error).grid_bits_per_item as f64 / GRID as f64 / bits_per_item(error);
        assert_eq!((at(0.01).lines, at(0.01).hash_count), (1, 6));
        assert!(cost(0.01) <= 1.05, "{}", cost(0.01));
        assert_eq!(at(0.005).lines, 1);
        assert!(cost(0.005) <= 1.06, "{}", cost(0.005));
        assert_eq!(at(0.001).lines, 1);
        assert!(cost(0.001) <= 1.10, "{}", cost(0.001));
        assert_eq!(at(0.0005).lines, 2);
        assert!(cost(0.0005) <= 1.06, "{}", cost(0.0005));
        assert_eq!(at(1e-4).lines, 2);
        assert!(cost(1e-4) <= 1.10, "{}", cost(1e-4));
        // Far below, one block cannot hold the bits cheaply: the classic layout.
        assert_eq!(Design::of(1e-5), None);
        assert_eq!(Design::of(1e-7), None);
        assert_eq!(Design::of(1e-300), None);
        // Above 10%, too: one or two hashes, a rate concave near the mean load.
        assert_eq!(Design::of(0.1).map(|design| design.hash_count), Some(3));
        assert_eq!(Design::of(0.11), None);
        assert_eq!(Design::of(0.25), None);
        assert_eq!(Design::of(0.99), None);
    }

    #[test]
    fn distinct_probe_chances_add_up_and_match_the_birthday_chance() {
        let chances = distinct_probes(6, 512);
        assert!((chances.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        let all_distinct: f64 = (0..6).map(|i| (512.0 - i as f64) / 512.0).product();
        assert!((chances[6] - all_distinct).abs() < 1e-12);
        assert_eq!(chances[0], 0.0);
    }

    #[test]
    fn the_bound_falls_as_blocks_hold_fewer_items() {
        let distinct = distinct_probes(6, 512);
        let mut last = 1.0;
        for load in [80.0, 60.0, 51.0, 40.0, 20.0] {
            let bound = false_positive_bound(load, 512, 6, &distinct);
            assert!(bound < last, "{load}: {bound}");
            last = bound;
        }
    }
}
