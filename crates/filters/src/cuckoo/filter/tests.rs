//! A command's budget of evictions: one walk on a full filter and no more, walks while the budget
//! holds them and never cut short, none at all without a limit (a replay's adds), and a filter
//! left exactly as a replica leaves it when sent only the items the command added.

use super::super::{Cuckoo, Limits, Params};
use super::{bucket_lines, eviction_weight, Adding, COMMAND_EVICTIONS, NEAR_BYTES, WALK_EVICTIONS};
use crate::cuckoo::{Print, Table};
use crate::error::FilterError;

/// `count` distinct items of kind `tag` from `first`.
fn items(tag: &str, first: u32, count: u32) -> Vec<Vec<u8>> {
    (first..first + count)
        .map(|i| format!("{tag}:{i}").into_bytes())
        .collect()
}

/// A filter of `buckets` buckets of `bucket_size`, with `max_iterations` and `expansion`.
fn filter(buckets: u64, bucket_size: u64, max_iterations: u64, expansion: u64) -> Cuckoo {
    let params = Params::new(bucket_size, max_iterations, expansion).unwrap();
    Cuckoo::new(buckets, params, None, u64::MAX).unwrap()
}

/// Adds items one at a time, with no more bytes than the filter has now, until one is refused.
fn fill(filter: &mut Cuckoo) {
    let limits = Limits {
        max_bytes: filter.planned_size(),
        ..Limits::NONE
    };
    for item in items("fill", 0, 1 << 20) {
        if filter.add(&item, &limits).is_err() {
            return;
        }
    }
    panic!("never refused");
}

/// The adds of one client command: a limit on sub-filters past any reached here, no byte limit,
/// and the command's budget of evictions.
fn command() -> Adding<impl FnMut(&Cuckoo) -> u64> {
    Adding::new(Limits::NONE.max_tables, |_: &Cuckoo| u64::MAX).limited(COMMAND_EVICTIONS)
}

/// Adds `batch` within `adding` (ADD, or the NX form if `unique`); the answers, as CF.INSERT
/// gives them (1 added, 0 held, -1 refused), and the items added.
fn run<F: FnMut(&Cuckoo) -> u64>(
    filter: &mut Cuckoo,
    batch: &[Vec<u8>],
    adding: &mut Adding<F>,
    unique: bool,
) -> (Vec<i8>, Vec<Vec<u8>>) {
    let mut answers = Vec::new();
    let mut added = Vec::new();
    for item in batch {
        let print = filter.print(item);
        let outcome = match unique {
            false => filter.add_within(print, adding).map(|()| true),
            true => filter.add_unique_within(print, adding),
        };
        answers.push(match outcome {
            Ok(true) => 1,
            Ok(false) => 0,
            Err(_) => -1,
        });
        if outcome == Ok(true) {
            added.push(item.clone());
        }
    }
    (answers, added)
}

/// What a replica or an AOF replay does with what a command sent: each added item, no limit.
fn replay(filter: &mut Cuckoo, added: &[Vec<u8>]) {
    let mut adding = Adding::new(Limits::NONE.max_tables, |_: &Cuckoo| u64::MAX);
    for item in added {
        let print = filter.print(item);
        filter.add_within(print, &mut adding).unwrap();
    }
}

#[test]
fn a_batch_into_a_full_filter_makes_one_walk_and_a_replica_ends_the_same() {
    // Issue 52's filter: 1,024 buckets of 4, MAXITERATIONS 65535, EXPANSION 0, filled.
    let mut primary = filter(1024, 4, 65_535, 0);
    fill(&mut primary);
    let mut replica = primary.clone();
    let unlimited_cost = {
        let mut copy = primary.clone();
        let mut adding = Adding::new(Limits::NONE.max_tables, |_: &Cuckoo| u64::MAX);
        run(&mut copy, &items("new", 0, 2000), &mut adding, false);
        adding.evictions
    };

    let mut adding = command();
    let (answers, added) = run(&mut primary, &items("new", 0, 2000), &mut adding, false);
    let refused = answers.iter().filter(|&&answer| answer == -1).count();
    assert_eq!(refused + added.len(), 2000);
    assert!(refused > 1000 && !added.is_empty(), "{refused} refused");
    // The first item with no empty slot walked, found no room and showed the filter full; the
    // others went in only where they found an empty slot.
    assert_eq!(
        (adding.walks, adding.evictions),
        (1, u64::from(WALK_EVICTIONS))
    );
    assert!(
        unlimited_cost > 1000 * u64::from(WALK_EVICTIONS),
        "{unlimited_cost}"
    );

    replay(&mut replica, &added);
    assert_eq!(primary, replica);
}

#[test]
fn the_nx_form_answers_held_items_without_a_walk() {
    let mut primary = filter(1024, 4, 65_535, 0);
    fill(&mut primary);
    let mut replica = primary.clone();
    let mut batch = items("fill", 0, 100);
    batch.extend(items("new", 0, 500));
    let mut adding = command();
    let (answers, added) = run(&mut primary, &batch, &mut adding, true);
    assert!(answers[..100].iter().all(|&answer| answer == 0));
    assert!(answers[100..].contains(&-1) && answers[100..].contains(&1));
    assert_eq!(adding.walks, 1);
    replay(&mut replica, &added);
    assert_eq!(primary, replica);
}

#[test]
fn walks_start_while_the_budget_holds_them_whole() {
    // One item added again and again: once its two buckets hold nothing but its copies, each
    // add walks its MAXITERATIONS (at most WALK_EVICTIONS) between them and is refused.
    for max_iterations in [1000u64, 65_535] {
        let mut primary = filter(64, 2, max_iterations, 1);
        for _ in 0..4 {
            primary.add(b"same", &Limits::NONE).unwrap();
        }
        let before = primary.clone();
        let mut adding = command();
        let batch = vec![b"same".to_vec(); 400];
        let (answers, added) = run(&mut primary, &batch, &mut adding, false);
        assert!(added.is_empty() && answers.iter().all(|&answer| answer == -1));
        // As many whole walks as fit in the budget, and at least the first; none longer than
        // WALK_EVICTIONS.
        let length = max_iterations.min(u64::from(WALK_EVICTIONS));
        let walks = (COMMAND_EVICTIONS / length).max(1);
        assert_eq!(adding.walks, walks, "{max_iterations}");
        assert_eq!(adding.evictions, walks * length);
        assert_eq!(primary, before, "every walk undone");
        // Items with an empty slot still go in, without a walk.
        let fresh = items("fresh", 0, 20);
        let (answers, _) = run(&mut primary, &fresh, &mut adding, false);
        assert!(answers.iter().all(|&answer| answer == 1));
        assert_eq!(adding.walks, walks);
    }
}

#[test]
fn the_budget_weighs_an_eviction_by_its_sub_filter_s_size_and_bucket_width() {
    // One item again and again, as above: as many longest walks as the budget holds at their
    // weight, each refused and undone. Buckets of 2 in sub-filters of 128 bytes and 64 MiB
    // (weights 1 and 2); buckets of 255, four cache lines each, whose walks are a quarter as long
    // (weight 4, and 8 past 32 MiB).
    for (buckets, bucket_size, weight, length) in [
        (64u64, 2u64, 1u64, 16_384u64),
        (1 << 25, 2, 2, 16_384),
        (64, 255, 4, 4096),
        (1 << 18, 255, 8, 4096),
    ] {
        let mut filter = filter(buckets, bucket_size, 65_535, 1);
        let bytes = filter.tables()[0].bytes().len() as u64;
        assert_eq!(eviction_weight(bytes, bucket_size), weight, "{bytes}");
        assert_eq!(u64::from(filter.walk_length()), length);
        for _ in 0..2 * bucket_size {
            filter.add(b"same", &Limits::NONE).unwrap();
        }
        let mut adding = command();
        let (answers, _) = run(&mut filter, &vec![b"same".to_vec(); 20], &mut adding, false);
        assert!(answers.iter().all(|&answer| answer == -1));
        let walks = (COMMAND_EVICTIONS / (weight * length)).max(1);
        assert_eq!(adding.walks, walks, "{buckets} buckets of {bucket_size}");
        assert_eq!(adding.evictions, walks * length);
    }
    assert_eq!(
        [
            (0, 4),
            (NEAR_BYTES, 64),
            (NEAR_BYTES + 1, 4),
            (NEAR_BYTES, 65),
            (1 << 40, 255)
        ]
        .map(|(bytes, bucket)| eviction_weight(bytes, bucket)),
        [1, 1, 2, 2, 8]
    );
    assert_eq!(
        [0, 1, 64, 65, 128, 255, 510].map(bucket_lines),
        [1, 1, 1, 2, 2, 4, 8]
    );
}

/// The bucket that RedisBloom's walk of `print` (65,535 swaps) in a sub-filter of `slots`, full,
/// reaches first after more than [`WALK_EVICTIONS`] swaps, if any (a walk often circles among a
/// few hundred buckets).
fn reached_past_the_cap(filter: &Cuckoo, print: &Print) -> Option<u64> {
    let mut table = filter.tables()[0].try_clone().unwrap();
    let size = u32::from(filter.params().bucket_size);
    let mut bucket = table.bucket_of(print.first());
    let mut carried = print.fingerprint(8);
    let mut seen = std::collections::HashSet::from([bucket]);
    for step in 1..=65_535u32 {
        carried = table.swap(bucket, ((step - 1) % size) as u8, carried);
        bucket = table.bucket_of(filter.hashing().alternate(bucket, carried, 8));
        if step > u32::from(WALK_EVICTIONS) && !seen.contains(&bucket) {
            return Some(bucket);
        }
        seen.insert(bucket);
    }
    None
}

#[test]
fn a_walk_that_would_find_room_past_walk_evictions_grows_the_filter() {
    // A full sub-filter of 2^16 buckets of 4 with one empty slot, in a bucket an item's walk
    // reaches first after WALK_EVICTIONS swaps: RedisBloom's walk (MAXITERATIONS 65535) would
    // place the item there; this one stops short, undoes its swaps and grows the filter, and a
    // replay, with no budget, does the same.
    let buckets = 1u64 << 16;
    let fingerprint = |slot: u64| {
        let mixed = (slot ^ 0x5bd1_e995).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        ((mixed ^ (mixed >> 29)).wrapping_mul(0xbf58_476d_1ce4_e5b9) >> 56).max(1) as u8
    };
    let slots: Vec<u8> = (0..buckets * 4).map(fingerprint).collect();
    let params = Params::new(4, 65_535, 1).unwrap();
    let filter_of = |bytes: &[u8]| {
        let table = Table::from_bytes(buckets, 4, 8, bytes).unwrap();
        let items = bytes.iter().filter(|&&byte| byte != 0).count() as u64;
        Cuckoo::from_parts(params, None, vec![table], items, 0).unwrap()
    };
    let full = filter_of(&slots);
    let (item, target) = (0..1000)
        .map(|index| format!("walker:{index}").into_bytes())
        .find_map(|item| {
            Some((
                item.clone(),
                reached_past_the_cap(&full, &full.print(&item))?,
            ))
        })
        .expect("an item whose walk reaches a new bucket past the cap");
    let mut holed = slots.clone();
    holed[target as usize * 4 + 3] = 0;

    let mut primary = filter_of(&holed);
    let mut replica = primary.clone();
    let mut adding = command();
    let print = primary.print(&item);
    assert_eq!(primary.add_within(print, &mut adding), Ok(()));
    assert_eq!(adding.evictions, u64::from(WALK_EVICTIONS));
    assert_eq!(primary.tables().len(), 2, "grown");
    assert_eq!(primary.tables()[0].bytes(), &holed[..], "every swap undone");
    replay(&mut replica, &[item]);
    assert_eq!(primary, replica);
}

#[test]
fn the_first_walk_of_a_command_is_whole_whatever_the_budget() {
    let mut filter = filter(64, 2, 65_535, 1);
    for _ in 0..4 {
        filter.add(b"same", &Limits::NONE).unwrap();
    }
    let mut adding = Adding::new(Limits::NONE.max_tables, |_: &Cuckoo| u64::MAX).limited(1000);
    let refused = filter.add_within(filter.print(b"same"), &mut adding);
    assert_eq!(refused, Err(FilterError::TooManyCopies));
    assert_eq!(
        (adding.walks, adding.evictions),
        (1, u64::from(WALK_EVICTIONS))
    );
    let refused = filter.add_within(filter.print(b"same"), &mut adding);
    assert_eq!(refused, Err(FilterError::Full));
    assert_eq!(adding.walks, 1);
}

#[test]
fn a_filter_that_cannot_grow_is_full_for_the_rest_of_the_command() {
    // Growable, but held to its size now: the first item that walks and finds no room is
    // refused as too large, and no item after it walks.
    let mut primary = filter(256, 4, 500, 2);
    fill(&mut primary);
    let size = primary.planned_size();
    let mut replica = primary.clone();
    let mut adding =
        Adding::new(Limits::NONE.max_tables, move |_: &Cuckoo| size).limited(COMMAND_EVICTIONS);
    let (answers, added) = run(&mut primary, &items("new", 0, 1000), &mut adding, false);
    let first_refused = answers.iter().position(|&answer| answer == -1).unwrap();
    assert!(answers[first_refused + 1..].contains(&1));
    assert_eq!(primary.tables().len(), 1);
    let walks = adding.walks;
    assert!(walks >= 1 && adding.evictions <= walks * 500);
    // No walk after the refusal: the same batch again walks not at all.
    let (_, again) = run(&mut primary, &items("new", 0, 1000), &mut adding, false);
    assert_eq!(adding.walks, walks);
    replay(&mut replica, &added);
    replay(&mut replica, &again);
    assert_eq!(primary, replica);
}

#[test]
fn without_a_limit_every_item_walks() {
    // A replay's adds: no budget, and a refusal does not stop the next item's walk.
    let mut full = filter(1024, 4, 500, 0);
    fill(&mut full);
    let mut adding = Adding::new(Limits::NONE.max_tables, |_: &Cuckoo| u64::MAX);
    let (answers, _) = run(&mut full, &items("new", 0, 300), &mut adding, false);
    let refused = answers.iter().filter(|&&answer| answer == -1).count() as u64;
    assert!(refused > 100, "{refused}");
    assert!(adding.walks >= refused && adding.evictions >= refused * 500);

    let mut copies = filter(64, 2, 65_535, 1);
    for _ in 0..4 {
        copies.add(b"same", &Limits::NONE).unwrap();
    }
    let mut adding = Adding::new(Limits::NONE.max_tables, |_: &Cuckoo| u64::MAX);
    run(&mut copies, &vec![b"same".to_vec(); 3], &mut adding, false);
    assert_eq!(
        (adding.walks, adding.evictions),
        (3, 3 * u64::from(WALK_EVICTIONS))
    );
}

#[test]
fn no_walk_passes_walk_evictions_whatever_max_iterations_says() {
    // Two filters alike but for MAXITERATIONS (65,535, and the cap), filled past their first
    // sub-filter with no budget (as a replica applies them): every add takes the same steps, so
    // they end with the same bytes, and each keeps its MAXITERATIONS as set.
    let mut long = filter(1024, 4, 65_535, 1);
    let mut capped = filter(1024, 4, u64::from(WALK_EVICTIONS), 1);
    let mut walked = Vec::new();
    for filter in [&mut long, &mut capped] {
        let mut adding = Adding::new(Limits::NONE.max_tables, |_: &Cuckoo| u64::MAX);
        let (answers, _) = run(filter, &items("walk", 0, 12_000), &mut adding, false);
        assert!(answers.iter().all(|&answer| answer == 1));
        walked.push((adding.walks, adding.evictions));
    }
    assert_eq!(long.tables(), capped.tables());
    assert_eq!(walked[0], walked[1]);
    assert!(long.tables().len() > 1, "the walks had to fail to grow it");
    assert_eq!(long.params().max_iterations, 65_535);
    // A walk that finds no room makes exactly WALK_EVICTIONS swaps, undone.
    let mut copies = filter(64, 2, 65_535, 1);
    for _ in 0..4 {
        copies.add(b"same", &Limits::NONE).unwrap();
    }
    let before = copies.clone();
    let mut adding = Adding::new(Limits::NONE.max_tables, |_: &Cuckoo| u64::MAX);
    let refused = copies.add_within(copies.print(b"same"), &mut adding);
    assert_eq!(refused, Err(FilterError::TooManyCopies));
    assert_eq!(adding.evictions, u64::from(WALK_EVICTIONS));
    assert_eq!(copies, before);
}
