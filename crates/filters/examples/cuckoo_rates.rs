//! The false-positive rate and memory of cuckoo filters as they grow, for docs/performance.md:
//! RedisBloom's kind (bucket size 2, expansion 1, as CF.ADD makes it) against this module's
//! bounded kind (`ERROR 0.01` and `ERROR 0.001`, bucket size 4, here with expansion 1 so that 32
//! growths stay small), after 1, 4, 8, 16 and 32 growths: the share of 1,000,000 never-added items
//! each answers true for, and the bits it takes per item held; then the bits per item of one full
//! sub-filter (filled until the next item would grow it) and its false-positive rate.
//!
//! `cargo run --release -p filters --example cuckoo_rates`

use filters::cuckoo::{Bound, Cuckoo, Limits, Params};

fn item(tag: u8, index: u32) -> [u8; 5] {
    let mut item = [tag; 5];
    item[1..].copy_from_slice(&index.to_le_bytes());
    item
}

fn main() {
    const PROBES: u32 = 1_000_000;
    let kinds: [(&str, Params, Option<f64>); 3] = [
        ("RedisBloom's (b2)", Params::new(2, 20, 1).unwrap(), None),
        ("ERROR 0.01", Params::new(4, 500, 1).unwrap(), Some(0.01)),
        ("ERROR 0.001", Params::new(4, 500, 1).unwrap(), Some(0.001)),
    ];
    println!("| filter | 1 growth | 4 | 8 | 16 | 32 growths |");
    println!("|---|---|---|---|---|---|");
    for (name, params, error) in kinds {
        let bound = error.map(|error| Bound::for_error(error).unwrap());
        let mut filter = Cuckoo::new(512, params, bound, u64::MAX).unwrap();
        let mut added = 0u32;
        let mut cells = Vec::new();
        for growths in [1usize, 4, 8, 16, 32] {
            while filter.tables().len() < growths + 1 {
                filter.add(&item(b'a', added), &Limits::NONE).unwrap();
                added += 1;
            }
            let hits = (0..PROBES)
                .filter(|&i| filter.contains(&item(b'p', i)))
                .count();
            let rate = hits as f64 / f64::from(PROBES);
            let bits = filter.planned_size() as f64 * 8.0 / f64::from(added);
            cells.push(format!("{:.3}% ({bits:.1} bits/item)", rate * 100.0));
        }
        println!("| {name} | {} |", cells.join(" | "));
    }
    println!();
    println!("| filter | load when full | bits per item | false positives |");
    println!("|---|---|---|---|");
    let full: [(&str, Params, Option<f64>); 4] = [
        ("RedisBloom's (b2)", Params::new(2, 20, 1).unwrap(), None),
        ("RedisBloom's (b4)", Params::new(4, 20, 1).unwrap(), None),
        ("ERROR 0.01", Params::new(4, 500, 2).unwrap(), Some(0.01)),
        ("ERROR 0.001", Params::new(4, 500, 2).unwrap(), Some(0.001)),
    ];
    for (name, params, error) in full {
        let bound = error.map(|error| Bound::for_error(error).unwrap());
        // Fill until the first growth, then rebuild the filter one item short of it.
        let fresh = || Cuckoo::new(1 << 18, params, bound, u64::MAX).unwrap();
        let mut filter = fresh();
        let mut added = 0u32;
        while filter.tables().len() == 1 {
            filter.add(&item(b'a', added), &Limits::NONE).unwrap();
            added += 1;
        }
        added -= 1;
        let mut filter = fresh();
        for index in 0..added {
            filter.add(&item(b'a', index), &Limits::NONE).unwrap();
        }
        let slots = (1u64 << 18) * u64::from(params.bucket_size);
        let hits = (0..PROBES)
            .filter(|&i| filter.contains(&item(b'p', i)))
            .count();
        println!(
            "| {name} | {:.1}% | {:.2} | {:.3}% |",
            f64::from(added) * 100.0 / slots as f64,
            filter.planned_size() as f64 * 8.0 / f64::from(added),
            hits as f64 * 100.0 / f64::from(PROBES)
        );
    }
}
