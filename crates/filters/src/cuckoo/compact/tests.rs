//! Compaction within its budget: RedisBloom's moves exactly where its walk fits the budget, the
//! budget held on the shapes that made RedisBloom's walk take seconds, progress from one
//! compaction to the next where one is not enough, and never an item lost.

use super::super::{Cuckoo, Limits, Params, Table};
use super::{Budget, COMPACTION_PROBES};

/// RedisBloom's compaction as it stands, unbounded: for each sub-filter from the newest down to
/// the second, every fingerprint into the first empty slot of its two buckets in the oldest older
/// sub-filter that has one; the newest freed once emptied; stop at a sub-filter not emptied unless
/// `keep_going`. The buckets it probed for room.
fn redisbloom_compact(filter: &mut Cuckoo, keep_going: bool) -> u64 {
    let size = filter.params().bucket_size;
    let hashing = filter.hashing();
    let mut probes = 0u64;
    let mut index = filter.tables.len() - 1;
    while index > 0 {
        let (older, rest) = filter.tables.split_at_mut(index);
        let table = &mut rest[0];
        let mut all_moved = true;
        for bucket in 0..table.buckets() {
            for slot in 0..size {
                let fingerprint = table.get(bucket, slot);
                if fingerprint == 0 {
                    continue;
                }
                let second = hashing.alternate(bucket, fingerprint, table.bits());
                let mut moved = false;
                'older: for target in older.iter_mut() {
                    for candidate in [bucket, second] {
                        probes += 1;
                        let at = target.bucket_of(candidate);
                        if let Some(empty) = target.empty_slot(at) {
                            let shorter = hashing.shorten(fingerprint, table.bits(), target.bits());
                            target.swap(at, empty, shorter);
                            moved = true;
                            break 'older;
                        }
                    }
                }
                if moved {
                    table.swap(bucket, slot, 0);
                } else {
                    all_moved = false;
                }
            }
        }
        let emptied = all_moved && table.is_empty();
        if emptied && index == filter.tables.len() - 1 {
            filter.drop_newest(1);
        }
        if !emptied && !keep_going {
            break;
        }
        index -= 1;
    }
    filter.deletes = 0;
    probes
}

/// A small xorshift generator: the same filters on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, bound: u64) -> u64 {
        self.next() % bound
    }
}

fn item(tag: u8, index: u64) -> [u8; 9] {
    let mut item = [tag; 9];
    item[1..].copy_from_slice(&index.to_le_bytes());
    item
}

/// A filter grown by adds to several sub-filters, then thinned by deletes (without the
/// compaction a delete would run).
fn grown_and_thinned(rng: &mut Rng, bucket_size: u64, expansion: u64, bounded: bool) -> Cuckoo {
    let params = Params::new(bucket_size, 1 + rng.below(40), expansion).unwrap();
    let bound = bounded.then(|| super::super::Bound::for_error(0.01).unwrap());
    let buckets = 1 << (1 + rng.below(5));
    let mut filter = Cuckoo::new(buckets, params, bound, u64::MAX).unwrap();
    let count = 50 + rng.below(1500);
    // Distinct items of one fingerprint and buckets in a tiny filter can be refused as copies.
    let added: Vec<u64> = (0..count)
        .filter(|&index| filter.add(&item(b'a', index), &Limits::NONE).is_ok())
        .collect();
    for index in added {
        if rng.below(100) < 20 + rng.below(60) {
            let print = filter.print(&item(b'a', index));
            assert!(print.fixed(|print| filter.remove(print)));
            filter.items -= 1;
            filter.deletes += 1;
        }
    }
    filter
}

#[test]
fn a_compaction_that_fits_the_budget_makes_redisbloom_s_moves() {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut compared = 0;
    for round in 0..400 {
        let bucket_size = [1, 2, 3, 4][round % 4];
        let bounded = round % 5 == 4;
        let bucket_size = if bounded { 4 } else { bucket_size };
        let expansion = [1, 2, 4][round % 3];
        let filter = grown_and_thinned(&mut rng, bucket_size, expansion, bounded);
        for keep_going in [false, true] {
            let mut ours = filter.clone();
            let mut theirs = filter.clone();
            let spent = ours.compact(keep_going);
            let probes = redisbloom_compact(&mut theirs, keep_going);
            if probes * 2 > COMPACTION_PROBES {
                continue;
            }
            compared += 1;
            assert_eq!(ours, theirs, "round {round}, keep_going {keep_going}");
            // A probe here skips older sub-filters that were full: never more than RedisBloom's
            // (for buckets of one-byte slots, each probe takes one from the budget), and one
            // for each sub-filter walked.
            let walked = filter.tables().len() as u64 - 1;
            if !bounded {
                assert!(
                    spent.probes <= probes + walked,
                    "{spent:?} against {probes}"
                );
            }
        }
    }
    assert!(compared > 600, "{compared}");
}

/// `count` sub-filters of `buckets` buckets of `size` slots (expansion 1), each full of
/// fingerprints but for the slots `holes` names (in every sub-filter but the newest).
fn forged(count: usize, buckets: u64, size: u8, holes: &[usize]) -> Cuckoo {
    let params = Params::new(u64::from(size), 20, 1).unwrap();
    let mut items = 0;
    let tables = (0..count)
        .map(|index| {
            let mut data: Vec<u8> = (0..buckets * u64::from(size))
                .map(|slot| ((slot.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 56) as u8) | 1)
                .collect();
            if index + 1 < count {
                for &hole in holes {
                    data[hole] = 0;
                }
            }
            items += data.iter().filter(|&&byte| byte != 0).count() as u64;
            Table::from_bytes(buckets, size, 8, &data).unwrap()
        })
        .collect();
    Cuckoo::from_parts(params, None, tables, items, 0).unwrap()
}

#[test]
fn no_shape_makes_a_compaction_pass_its_budget() {
    // RedisBloom's walk of these probes every older sub-filter for every fingerprint: 65,535
    // sub-filters of one slot took 16 s in a server; one hole in each of 4,096 two-slot ones
    // keeps all of them worth trying.
    let cases = [
        (
            "65,535 full one-slot sub-filters",
            forged(65_535, 1, 1, &[]),
        ),
        (
            "4,096 two-slot sub-filters, one hole each",
            forged(4096, 2, 1, &[1]),
        ),
        (
            "64 sub-filters of 2^14 buckets of 4, one hole",
            forged(64, 1 << 14, 4, &[5]),
        ),
        (
            "16 sub-filters of 2^10 buckets of 255, one hole",
            forged(16, 1 << 10, 255, &[300]),
        ),
    ];
    for (name, filter) in cases {
        for keep_going in [false, true] {
            let mut ours = filter.clone();
            let spent = ours.compact(keep_going);
            assert!(
                spent.slots <= Budget::FULL.slots && spent.probes <= Budget::FULL.probes,
                "{name}: {spent:?}"
            );
            assert_eq!(ours.deletes(), 0);
            assert_eq!(ours.items(), filter.items(), "{name}");
        }
    }
    // What RedisBloom's walk would have cost on the smallest of them, to show what is bounded.
    let mut theirs = forged(4096, 2, 1, &[1]);
    assert!(redisbloom_compact(&mut theirs, true) > 100 * COMPACTION_PROBES);
}

#[test]
fn compactions_past_the_budget_go_on_where_the_last_stopped_and_lose_nothing() {
    // 32 sub-filters of 8,192 buckets of 4, as CF.INSERT fills them, then a tenth deleted: one
    // compaction cannot empty the newest, a few in a row do.
    let params = Params::new(4, 20, 1).unwrap();
    let mut filter = Cuckoo::new(8192, params, None, u64::MAX).unwrap();
    let mut added = 0;
    let full = |filter: &Cuckoo| {
        let newest = &filter.tables()[filter.tables().len() - 1];
        filter.tables().len() == 32 && newest.occupied() * 10 >= newest.buckets() * 4 * 9
    };
    while !full(&filter) {
        filter.add(&item(b'a', added), &Limits::NONE).unwrap();
        added += 1;
    }
    for index in (0..added).step_by(10) {
        let print = filter.print(&item(b'a', index));
        assert!(print.fixed(|print| filter.remove(print)));
        filter.items -= 1;
    }
    let mut reference = filter.clone();
    redisbloom_compact(&mut reference, true);
    assert!(reference.tables().len() < 32, "RedisBloom's would free one");
    let mut calls = 0;
    while filter.tables().len() == 32 {
        let spent = filter.compact(true);
        assert!(spent.probes <= COMPACTION_PROBES);
        calls += 1;
        assert!(calls < 100, "no progress");
    }
    assert!(
        calls > 1,
        "one compaction was enough: not a test of the budget"
    );
    for index in (0..added).filter(|index| index % 10 != 0) {
        assert!(filter.contains(&item(b'a', index)), "{index}");
    }
}

#[test]
fn a_big_filter_s_compaction_works_on_a_window_and_moves_what_it_can() {
    // Newer slots past the slot budget: a window of the newest, from a drawn bucket.
    let params = Params::new(2, 20, 2).unwrap();
    let mut tables = vec![
        Table::new(1 << 19, 2, 8).unwrap(),
        Table::new(1 << 20, 2, 8).unwrap(),
    ];
    let fingerprint = 0x5a;
    for bucket in 0..(1 << 20) {
        for slot in 0..2 {
            tables[1].swap(bucket, slot, fingerprint);
        }
    }
    let items = 2 << 20;
    let mut filter = Cuckoo::from_parts(params, None, tables, items, 0).unwrap();
    let spent = filter.compact(false);
    assert_eq!(spent.probes, COMPACTION_PROBES);
    let moved = filter.tables()[0].occupied();
    // Each fingerprint found room at its first or second probe.
    assert!(
        (COMPACTION_PROBES / 2..=COMPACTION_PROBES).contains(&moved),
        "{moved}"
    );
    assert_eq!(filter.tables()[1].occupied(), items - moved);
}

#[test]
fn full_older_sub_filters_are_passed_over_and_the_moves_stay_redisbloom_s() {
    // 1,000 full one-slot sub-filters, 1,000 empty ones, 1,000 holding one fingerprint each:
    // RedisBloom's walk probes every full one (and every one filled on the way) for each
    // fingerprint, 3 million probes; here each fingerprint takes one, into the first with room.
    let params = Params::new(1, 20, 1).unwrap();
    let tables = (0..3000)
        .map(|index| {
            let slot = if (1000..2000).contains(&index) {
                0
            } else {
                0x5a
            };
            Table::from_bytes(1, 1, 8, &[slot]).unwrap()
        })
        .collect();
    let filter = Cuckoo::from_parts(params, None, tables, 2000, 0).unwrap();
    let mut ours = filter.clone();
    let mut theirs = filter;
    let spent = ours.compact(true);
    assert!(redisbloom_compact(&mut theirs, true) > 10 * COMPACTION_PROBES);
    assert_eq!(ours, theirs);
    // One probe per fingerprint, one per sub-filter walked.
    assert_eq!(spent.probes, 1000 + 2999);
    assert_eq!(ours.tables().len(), 2000);
}
