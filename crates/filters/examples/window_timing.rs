//! Lookups of held items in a windowed filter against a plain one, in the core alone (no
//! server): 100,000 items an hour at 1%, all in one slot as `make bench` fills it (one
//! generation of six parts), and a plain 100,000-item filter at 1%; a million lookups of held
//! items, each filter three times, alternately; `BLOCKED=1` gives the windowed filter blocked
//! parts. `cargo run --release -p filters --example window_timing`.

use filters::bloom::sizing::Layout;
use filters::bloom::window::{Window, Windowed, WindowedShape};
use filters::bloom::{Chain, Growth};
use std::hint::black_box;
use std::time::Instant;

const CAPACITY: u64 = 100_000;
/// A time in 2026, in milliseconds since the epoch.
const NOW: u64 = 1_795_561_200_000;

fn main() {
    let mut plain = Chain::new(CAPACITY, 0.01, Growth::Scaling { expansion: 2 }, u64::MAX).unwrap();
    let window = Window::seconds(3600).unwrap();
    let mut shape =
        WindowedShape::new(CAPACITY, 0.01, Growth::Scaling { expansion: 4 }, window).unwrap();
    if std::env::var_os("BLOCKED").is_some() {
        shape = shape.with_layout(Layout::Blocked);
    }
    let mut windowed = Windowed::new(shape);
    for i in 0..CAPACITY {
        let item = format!("item:{i:012}");
        plain.add(item.as_bytes(), u64::MAX).unwrap();
        windowed
            .add(item.as_bytes(), NOW + i / 100, u64::MAX)
            .unwrap();
    }
    let items: Vec<String> = (0..1_000_000u64)
        .map(|i| format!("item:{:012}", (i * 2_654_435_761) % CAPACITY))
        .collect();
    let now = NOW + 60_000;
    for _ in 0..3 {
        let start = Instant::now();
        let found = items
            .iter()
            .filter(|item| black_box(&windowed).contains(item.as_bytes(), now))
            .count();
        let mine = start.elapsed().as_nanos() as f64 / items.len() as f64;
        let start = Instant::now();
        let held = items
            .iter()
            .filter(|item| black_box(&plain).contains(item.as_bytes()))
            .count();
        let theirs = start.elapsed().as_nanos() as f64 / items.len() as f64;
        assert_eq!((found, held), (items.len(), items.len()));
        println!(
            "windowed {mine:.1} ns, plain {theirs:.1} ns per lookup of a held item: {:.2}x",
            mine / theirs
        );
    }
}
