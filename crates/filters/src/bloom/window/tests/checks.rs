//! Loaders' checks of stored generations and of a filter's clock against the server's.

use super::*;

/// A filter with a generation in each of five slots (each of the first four takes its item at
/// the end of its slot, so the first is still held in the fifth), three parts in the last.
fn five_generations() -> Windowed {
    let mut filter = windowed(12, ERROR, scaling());
    for slot in 0..4 {
        let at = START + (slot + 1) * SLOT - 1;
        filter.add(&item("g", slot), at, u64::MAX).unwrap();
    }
    for i in 0..5 {
        let at = START + 4 * SLOT + i;
        filter.add(&item("h", i), at, u64::MAX).unwrap();
    }
    assert_eq!(filter.generations().len(), 5);
    assert_eq!(filter.generations()[4].parts().len(), 3);
    filter
}

#[test]
fn stored_generations_are_checked() {
    let filter = five_generations();
    let shape = *filter.shape();
    let outlines: Vec<Outline> = filter
        .generations()
        .iter()
        .map(Generation::outline)
        .collect();
    assert_eq!(check_generations(&shape, &outlines), Ok(()));
    let refused = |change: &dyn Fn(&mut Vec<Outline>)| {
        let mut forged = outlines.clone();
        change(&mut forged);
        check_generations(&shape, &forged).unwrap_err()
    };
    let corrupt = |what: &'static str| FilterError::Corrupt(what);
    assert_eq!(
        refused(&|g| {
            let mut extra = g[4].clone();
            extra.slot += 1;
            g.push(extra);
        }),
        corrupt("more generations than a windowed filter keeps (5)")
    );
    assert_eq!(
        refused(&|g| g[4].slot += 1),
        corrupt("generations span more than a window and its slack")
    );
    assert_eq!(
        refused(&|g| g.swap(0, 1)),
        corrupt("generations out of order")
    );
    assert_eq!(
        refused(&|g| g[4].parts[0].2 += SLOT),
        corrupt("a part's expiry outside its generation's slot")
    );
    assert_eq!(
        refused(&|g| g[4].parts[1].2 = g[4].parts[0].2 - 1),
        corrupt("a part's expiry outside its generation's slot")
    );
    assert_eq!(
        refused(&|g| g[4].parts[0].1 -= 1),
        corrupt("a part's items: over its capacity, or an older part not full")
    );
    assert_eq!(
        refused(&|g| g[4].first += 6),
        corrupt("a part not sized as its generation sizes it")
    );
    assert_eq!(
        refused(&|g| g[4].rule = Rule::Budget(13)),
        corrupt("a generation's budget over the capacity")
    );
    assert_eq!(
        refused(&|g| g[0].parts.clear()),
        corrupt("a generation without sub-filters")
    );
}

#[test]
fn a_filter_from_more_than_a_window_ahead_of_the_clock_is_refused() {
    let filter = five_generations();
    let newest = filter.shape().slot_start(filter.generations()[4].slot());
    assert_eq!(filter.check_clock(newest), Ok(()));
    assert_eq!(filter.check_clock(newest - WINDOW_MS), Ok(()));
    assert!(filter.check_clock(newest - WINDOW_MS - 1).is_err());
    assert_eq!(windowed(10, ERROR, scaling()).check_clock(0), Ok(()));
}

#[test]
fn a_filter_ahead_of_the_clock_is_refused_kept_or_brought_back_as_the_loader_trusts_it() {
    let filter = five_generations();
    let newest = filter.shape().slot_start(filter.generations()[4].slot());
    // Within the allowance: nothing to do, whatever the trust.
    for trust in [ClockTrust::Check, ClockTrust::Keep, ClockTrust::BringBack] {
        let mut copy = filter.clone();
        assert_eq!(
            copy.settle_clock(newest - WINDOW_MS, trust),
            Ok(Settled::OnTime)
        );
        assert_eq!(copy, filter);
    }
    // An hour and a bit behind the filter's clock.
    let now = newest - 3_600_000 - 7_000;
    let mut copy = filter.clone();
    assert!(copy.settle_clock(now, ClockTrust::Check).is_err());
    assert_eq!(
        copy.settle_clock(now, ClockTrust::Keep),
        Ok(Settled::KeptAhead)
    );
    assert_eq!(copy, filter);
    let moved = match copy.settle_clock(now, ClockTrust::BringBack) {
        Ok(Settled::BroughtBack { millis }) => millis,
        other => panic!("{other:?}"),
    };
    // Whole slots, so that the newest generation is now's slot.
    assert_eq!(moved % SLOT, 0);
    assert_eq!(copy.generations()[4].slot(), copy.shape().slot_at(now));
    assert_eq!(copy.check_clock(now), Ok(()));
    // The same filter, as if its items had come `moved` earlier: every item held, each part
    // expiring that much earlier, and the result passes every loader's checks.
    let outlines: Vec<Outline> = copy.generations().iter().map(Generation::outline).collect();
    assert_eq!(check_generations(copy.shape(), &outlines), Ok(()));
    for (moved_gen, gen) in copy.generations().iter().zip(filter.generations()) {
        assert_eq!(moved_gen.slot() * SLOT + moved, gen.slot() * SLOT);
        for (moved_part, part) in moved_gen.parts().iter().zip(gen.parts()) {
            assert_eq!(moved_part.expires_at() + moved, part.expires_at());
            assert_eq!(moved_part.filter(), part.filter());
        }
    }
    let at = now;
    for slot in 0..4 {
        assert!(copy.contains(&item("g", slot), at));
    }
    for i in 0..5 {
        assert!(copy.contains(&item("h", i), at));
    }
    // Near the epoch it moves no slot below 0.
    let mut early = filter.clone();
    let oldest = early.generations()[0].slot();
    assert_eq!(
        early.settle_clock(0, ClockTrust::BringBack),
        Ok(Settled::BroughtBack {
            millis: oldest * SLOT
        })
    );
    assert_eq!(early.generations()[0].slot(), 0);
}
