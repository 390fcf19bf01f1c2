//! A command's budget of evictions: one walk on a full filter and no more, walks while the budget
//! holds them and never cut short, none at all without a limit (a replay's adds), and a filter
//! left exactly as a replica leaves it when sent only the items the command added.

use super::super::{Cuckoo, Limits, Params};
use super::{eviction_weight, Adding, COMMAND_EVICTIONS, WALK_EVICTIONS};
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
    // add walks its MAXITERATIONS between them and is refused.
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
fn the_budget_weighs_an_eviction_by_the_size_of_its_sub_filter() {
    // One item again and again, as above, in sub-filters of 128 bytes and 64 MiB: as many longest
    // walks as the budget holds at their weight (1 and 2), each refused and undone.
    for (buckets, weight) in [(64u64, 1u64), (1 << 25, 2)] {
        let mut filter = filter(buckets, 2, 65_535, 1);
        assert_eq!(eviction_weight(buckets * 2), weight);
        for _ in 0..4 {
            filter.add(b"same", &Limits::NONE).unwrap();
        }
        let mut adding = command();
        let (answers, _) = run(&mut filter, &vec![b"same".to_vec(); 20], &mut adding, false);
        assert!(answers.iter().all(|&answer| answer == -1));
        let walks = COMMAND_EVICTIONS / (weight * u64::from(WALK_EVICTIONS));
        assert_eq!(adding.walks, walks, "{buckets} buckets");
        assert_eq!(adding.evictions, walks * u64::from(WALK_EVICTIONS));
    }
    assert_eq!(
        [0, 0x200_0000, 0x200_0001, u64::MAX].map(eviction_weight),
        [1, 1, 2, 2]
    );
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
