//! Lookups in the classic and the blocked layout, in the core alone (no server): a 100K-item
//! filter (in the CPU's caches) and a 20M-item one (far bigger), each half full at 1%, a million
//! lookups (a quarter of them present) one at a time and as one batch, each layout twice,
//! alternately. `cargo run --release -p filters --example layout_timing`.

use filters::bloom::sizing::Layout;
use filters::bloom::{Chain, Growth};
use std::time::Instant;

fn main() {
    let growth = Growth::Scaling { expansion: 2 };
    for (capacity, label) in [(100_000u64, "100K"), (20_000_000, "20M")] {
        for layout in [
            Layout::Classic,
            Layout::Blocked,
            Layout::Classic,
            Layout::Blocked,
        ] {
            let mut chain = Chain::with_layout(layout, capacity, 0.01, growth, u64::MAX).unwrap();
            for i in 0..capacity / 2 {
                chain.add(format!("item:{i}").as_bytes(), u64::MAX).unwrap();
            }
            let items: Vec<String> = (0..1_000_000u64)
                .map(|i| format!("item:{}", (i * 2_654_435_761) % (capacity * 2)))
                .collect();
            let start = Instant::now();
            let found = items
                .iter()
                .filter(|item| chain.contains(item.as_bytes()))
                .count();
            let single = start.elapsed().as_nanos() as f64 / items.len() as f64;
            let start = Instant::now();
            let mut in_batch = 0;
            chain.contains_many(items.iter().map(|item| item.as_bytes()), |present| {
                in_batch += usize::from(present)
            });
            let batch = start.elapsed().as_nanos() as f64 / items.len() as f64;
            assert_eq!(found, in_batch);
            println!(
                "{label} {layout:?}: one at a time {single:.1} ns, in one batch {batch:.1} ns \
                 per lookup ({found} found)"
            );
        }
    }
}
