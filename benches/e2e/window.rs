//! Section `window`: windowed filters against plain ones of the same capacity and error rate:
//! what a command costs, the memory per item in steady state (items arriving evenly for three
//! windows) and after a burst (a window's capacity at once), and the most memory under the
//! arrival patterns that cost the most.

use crate::common::{Conn, Frame, Server};
use crate::measure::{alternate, measure_once, median, size};
use crate::report::Row;
use crate::server::{fill, fill_named};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const GROUP: &str = "windowed filters against plain ones";

/// Measures this section and appends its rows.
pub fn rows(server: &Server, rows: &mut Vec<Row>) {
    let mut conn = server.conn();
    cost_rows(server, &mut conn, rows);
    memory_rows(&mut conn, rows);
    pattern_rows(server, rows);
}

/// Cost: 100,000 items an hour against a plain filter of 100,000 items, both holding every item
/// the benchmark asks for (redis-benchmark's `__rand_int__` is 12 digits, zero-padded).
fn cost_rows(server: &Server, conn: &mut Conn, rows: &mut Vec<Row>) {
    conn.call(&["DEL", "hourly", "plain100k"]);
    assert_eq!(
        conn.call(&["BF.RESERVE", "hourly", "0.01", "100000", "WINDOW", "3600"]),
        Frame::ok()
    );
    assert_eq!(
        conn.call(&["BF.RESERVE", "plain100k", "0.01", "100000"]),
        Frame::ok()
    );
    for key in ["hourly", "plain100k"] {
        fill_named(conn, key, 100_000, |i| format!("item:{i:012}"));
    }
    for (label, name, verb) in [
        ("BF.ADD, 100K items an hour, items held", "bf.add", "BF.ADD"),
        ("BF.EXISTS, the same filter", "bf.exists", "BF.EXISTS"),
    ] {
        let run = |key| {
            let command = [verb, key, "item:__rand_int__"];
            measure_once(server, name, size(300_000), 100_000, &command)
        };
        for (against, baseline, limit) in [
            ("plain100k", "plain filter, 100K items", 1.5),
            // The A/A row: the plain filter against itself, the run's noise.
            ("plain100k", "the same (A/A)", f64::INFINITY),
        ] {
            let mine_key = if limit.is_finite() {
                "hourly"
            } else {
                "plain100k"
            };
            let runs = alternate(|| run(mine_key), || run(against));
            let pairs = runs.iter().map(|(a, b)| a / b).collect();
            let (mine, plain): (Vec<f64>, Vec<f64>) = runs.into_iter().unzip();
            let label = if limit.is_finite() {
                label.to_string()
            } else {
                format!("{verb}, the plain filter against itself (A/A)")
            };
            rows.push(
                Row::new(GROUP, label, median(mine), "us")
                    .against(baseline, median(plain), limit)
                    .with_pairs(pairs),
            );
        }
    }
    conn.call(&["DEL", "hourly", "plain100k"]);
}

/// Memory: `capacity` items per 4-second window, arriving evenly (the most MEMORY USAGE over
/// the third window) or in one burst, against a plain filter of the same capacity.
fn memory_rows(conn: &mut Conn, rows: &mut Vec<Row>) {
    let capacity = size(400_000);
    conn.call(&["DEL", "plain", "steady", "burst"]);
    for (key, extra) in [
        ("plain", &[][..]),
        ("steady", &["WINDOW", "4"][..]),
        ("burst", &["WINDOW", "4"][..]),
    ] {
        let mut args = vec!["BF.RESERVE", key, "0.01"];
        let capacity = capacity.to_string();
        args.push(&capacity);
        args.extend(extra);
        assert_eq!(conn.call(&args), Frame::ok());
    }
    fill(conn, "plain", capacity);
    fill(conn, "burst", capacity);
    // Read at once: nothing writes to it again, so its parts are swept within the window.
    let burst = conn.call(&["MEMORY", "USAGE", "burst"]).int() as f64;
    let steady = steady_peak(conn, capacity, 4);
    let plain = conn.call(&["MEMORY", "USAGE", "plain"]).int() as f64;
    let per_item = |bytes: f64| bytes / capacity as f64;
    for (label, bytes, limit) in [
        (
            "MEMORY USAGE per item, windowed, items arriving evenly (most over the third window)",
            steady,
            2.0,
        ),
        (
            "MEMORY USAGE per item, windowed, a window's items in one burst",
            burst,
            3.0,
        ),
    ] {
        rows.push(
            Row::new(
                GROUP,
                format!("{label}, {capacity} items per window at 1%"),
                per_item(bytes),
                "bytes",
            )
            .against("plain filter", per_item(plain), limit),
        );
    }
    conn.call(&["DEL", "plain", "steady", "burst"]);
}

/// Feeds `steady` a window's `capacity` evenly for three windows of `window` seconds, in ten
/// ticks a second; the most MEMORY USAGE it took over the third.
fn steady_peak(conn: &mut Conn, capacity: u64, window: u64) -> f64 {
    let ticks = window * 10;
    let per_tick = capacity / ticks;
    let start = Instant::now();
    let mut next = 0u64;
    let mut sizes = Vec::new();
    for tick in 0..ticks * 3 {
        let due = Duration::from_millis(tick * 100);
        if let Some(wait) = due.checked_sub(start.elapsed()) {
            std::thread::sleep(wait);
        }
        let mut args = vec!["BF.MADD".to_string(), "steady".into()];
        args.extend((next..next + per_tick).map(|i| format!("item:{i}")));
        next += per_tick;
        assert!(!conn.call(&args).is_error());
        if tick >= ticks * 2 {
            sizes.push(conn.call(&["MEMORY", "USAGE", "steady"]).int() as f64);
        }
    }
    sizes.iter().copied().fold(0.0, f64::max)
}

/// The capacity of the pattern filters: 16,000 items per 4-second window at 1%.
const PATTERN_CAPACITY: u64 = 16_000;
/// Ticks of 250 ms: 4 a slot, 16 a window, 48 in all.
const TICKS: usize = 48;

/// An arrival pattern: its row's label, the filter's extra BF.RESERVE arguments, and the items
/// added on each tick.
struct Pattern {
    label: &'static str,
    extra: &'static [&'static str],
    counts: Vec<u64>,
}

/// Windowed filters under the arrival patterns that cost the most memory (issue 22), each with
/// at most the capacity in any window, fed on ticks of a quarter of a slot for three windows;
/// the most MEMORY USAGE each took against a plain filter's.
fn pattern_rows(server: &Server, rows: &mut Vec<Row>) {
    let mut conn = server.conn();
    let patterns = patterns();
    conn.call(&["DEL", "plain16k"]);
    assert_eq!(
        conn.call(&[
            "BF.RESERVE",
            "plain16k",
            "0.01",
            &PATTERN_CAPACITY.to_string()
        ]),
        Frame::ok()
    );
    let plain = conn.call(&["MEMORY", "USAGE", "plain16k"]).int() as f64;
    for (index, pattern) in patterns.iter().enumerate() {
        let key = format!("pattern{index}");
        conn.call(&["DEL", &key]);
        let mut args = vec!["BF.RESERVE", &key, "0.01", "16000", "WINDOW", "4"];
        args.extend(pattern.extra.iter());
        assert_eq!(conn.call(&args), Frame::ok());
        // Within the capacity in any window of 16 ticks.
        assert!(pattern
            .counts
            .windows(16)
            .all(|w| w.iter().sum::<u64>() <= PATTERN_CAPACITY));
    }
    let peaks = feed_patterns(&mut conn, &patterns);
    for (index, (pattern, peak)) in patterns.iter().zip(peaks).enumerate() {
        rows.push(
            Row::new(
                GROUP,
                format!(
                    "most MEMORY USAGE, {}; 16,000 items per 4 s window at 1%",
                    pattern.label
                ),
                peak,
                "bytes",
            )
            .against("plain filter", plain, 3.0),
        );
        conn.call(&["DEL", &format!("pattern{index}")]);
    }
    conn.call(&["DEL", "plain16k"]);
}

fn patterns() -> Vec<Pattern> {
    let capacity = PATTERN_CAPACITY;
    let part = capacity / 8;
    let slot_of = |tick: usize| tick / 4;
    let counts = |count: &dyn Fn(usize) -> u64| (0..TICKS).map(count).collect::<Vec<u64>>();
    let two_of_four = |t: usize| {
        if t.is_multiple_of(4) && slot_of(t) % 4 < 2 {
            5250
        } else {
            0
        }
    };
    vec![
        Pattern {
            label: "5,250 items in two slots of every four (5.89x before), EXPANSION 4",
            extra: &[],
            counts: counts(&two_of_four),
        },
        Pattern {
            label: "the same, EXPANSION 64 (76.8x before)",
            extra: &["EXPANSION", "64"],
            counts: counts(&two_of_four),
        },
        Pattern {
            label: "alternating: a part and one item, then one item",
            extra: &[],
            counts: counts(&|t| match (t % 4, slot_of(t) % 2) {
                (0, 0) => part + 1,
                (0, _) => 1,
                _ => 0,
            }),
        },
        Pattern {
            label: "a ramp up to a quarter of the capacity a slot and down",
            extra: &[],
            counts: counts(&|t| {
                let slot = slot_of(t) as u64;
                let level = if slot < 6 { slot } else { 12 - slot };
                capacity / 4 * level / 6 / 4
            }),
        },
        Pattern {
            label: "a window's items straddling a slot boundary, twice",
            extra: &[],
            counts: counts(&|t| match t {
                3 | 4 | 21 | 22 => capacity / 2,
                _ => 0,
            }),
        },
    ]
}

/// Feeds every pattern its items tick by tick, from a slot boundary of the server's clock
/// (1-second slots); the most MEMORY USAGE each filter took.
fn feed_patterns(conn: &mut Conn, patterns: &[Pattern]) -> Vec<f64> {
    let mut peaks = vec![0.0f64; patterns.len()];
    let mut next = 0u64;
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    std::thread::sleep(Duration::from_millis(
        1000 - now.as_millis() as u64 % 1000 + 5,
    ));
    let start = Instant::now();
    for tick in 0..TICKS {
        let due = Duration::from_millis(tick as u64 * 250);
        if let Some(wait) = due.checked_sub(start.elapsed()) {
            std::thread::sleep(wait);
        }
        for (index, pattern) in patterns.iter().enumerate() {
            let key = format!("pattern{index}");
            let count = pattern.counts[tick];
            if count > 0 {
                let mut args = vec!["BF.MADD".to_string(), key.clone()];
                args.extend((next..next + count).map(|i| format!("item:{i}")));
                next += count;
                assert!(!conn.call(&args).is_error());
            }
            let bytes = conn.call(&["MEMORY", "USAGE", &key]).int() as f64;
            peaks[index] = peaks[index].max(bytes);
        }
    }
    peaks
}
