//! The cuckoo filter's promises, measured: RedisBloom's filters answer every item they hold and
//! grow as RedisBloom's; filters with a bounded error rate keep their false-positive rate under it
//! through 32 growths and through deletes; compaction never loses an item.

use super::shape::Bound;
use super::{Cuckoo, Limits, Params};

/// `count` distinct items of kind `tag` from `first`.
fn items(tag: u8, first: u32, count: u32) -> impl Iterator<Item = [u8; 5]> {
    (first..first + count).map(move |i| {
        let mut item = [tag; 5];
        item[1..].copy_from_slice(&i.to_le_bytes());
        item
    })
}

/// The share of `probes` never-added items the filter answers true for.
fn false_positive_rate(filter: &Cuckoo, probes: u32) -> f64 {
    let hits = items(b'p', 0, probes)
        .filter(|i| filter.contains(i))
        .count();
    hits as f64 / f64::from(probes)
}

/// Adds items until the filter has `tables` sub-filters; the number added.
fn grow_to(filter: &mut Cuckoo, tables: usize, added: &mut u32) {
    while filter.tables().len() < tables {
        let item = items(b'a', *added, 1).next().unwrap_or_default();
        filter.add(&item, &Limits::NONE).unwrap();
        *added += 1;
    }
}

#[test]
fn bounded_filters_keep_their_rate_through_32_growths_and_deletes() {
    for error in [0.01, 0.001] {
        let params = Params::new(4, 500, 1).unwrap();
        let bound = Bound::for_error(error).ok();
        let mut filter = Cuckoo::new(256, params, bound, u64::MAX).unwrap();
        let mut added = 0;
        for growths in [1, 4, 8, 16, 32] {
            grow_to(&mut filter, growths + 1, &mut added);
            let rate = false_positive_rate(&filter, 400_000);
            assert!(rate <= error, "{error} after {growths} growths: {rate}");
        }
        assert!(items(b'a', 0, added).all(|i| filter.contains(&i)));
        // Deleting half leaves the other half found and the rate under the bound.
        for item in items(b'a', 0, added).step_by(2) {
            assert!(filter.delete(&item));
        }
        for (index, item) in items(b'a', 0, added).enumerate() {
            assert_eq!(
                filter.contains(&item),
                index % 2 == 1 || filter.count(&item) > 0
            );
        }
        assert!(items(b'a', 0, added)
            .skip(1)
            .step_by(2)
            .all(|i| filter.contains(&i)));
        filter.compact(true);
        assert!(items(b'a', 0, added)
            .skip(1)
            .step_by(2)
            .all(|i| filter.contains(&i)));
        assert!(false_positive_rate(&filter, 400_000) <= error);
    }
}

#[test]
fn redisbloom_filters_hold_every_item_through_growth_deletes_and_compaction() {
    for (size, expansion) in [(1u64, 1u64), (2, 2), (4, 4), (3, 1)] {
        let params = Params::new(size, 20, expansion).unwrap();
        let mut filter = Cuckoo::new(16, params, None, u64::MAX).unwrap();
        for item in items(b'a', 0, 3000) {
            filter.add(&item, &Limits::NONE).unwrap();
        }
        assert!(filter.tables().len() > 1);
        assert!(items(b'a', 0, 3000).all(|i| filter.contains(&i)));
        for item in items(b'a', 0, 3000).step_by(3) {
            assert!(filter.delete(&item));
        }
        filter.compact(true);
        let kept = items(b'a', 0, 3000).enumerate().filter(|(i, _)| i % 3 != 0);
        assert!(kept.map(|(_, item)| item).all(|i| filter.contains(&i)));
        assert_eq!(filter.items(), 2000);
    }
}
