//! Section `batches`: BF.MADD and BF.MEXISTS of 100 items, and single items, on a 100M-item
//! filter far bigger than the CPU's caches against the same on a filter in them.

use crate::common::Server;
use crate::measure::{batch_of_100, measure, size};
use crate::report::Row;
use crate::server::{fill, reserve, reserve_small};

/// Measures this section and appends its rows.
pub fn rows(server: &Server, rows: &mut Vec<Row>) {
    let mut conn = server.conn();
    reserve_small(&mut conn);
    let capacity = size(100_000_000);
    reserve(&mut conn, "huge", capacity);
    fill(&mut conn, "huge", capacity / 2);
    batch_rows(server, capacity, rows);
    single_rows(server, capacity, rows);
    conn.call(&["DEL", "huge"]);
}

/// Batches of 100, ns per item: in cache, and on the huge filter against in cache.
fn batch_rows(server: &Server, capacity: u64, rows: &mut Vec<Row>) {
    let requests = size(50_000);
    let per_item = |verb: &str, key: &str, keyspace: u64| -> f64 {
        let args = batch_of_100(verb, key);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        measure(server, &verb.to_lowercase(), requests, keyspace, &args).usec * 1000.0 / 100.0
    };
    let small_madd = per_item("BF.MADD", "small", 100_000);
    let small_mexists = per_item("BF.MEXISTS", "small", 100_000);
    let huge_madd = per_item("BF.MADD", "huge", capacity);
    let huge_mexists = per_item("BF.MEXISTS", "huge", capacity);
    for (name, value, base) in [
        (
            "BF.MADD x100, 100K-item filter (in cache)",
            small_madd,
            None,
        ),
        (
            "BF.MEXISTS x100, 100K-item filter (in cache)",
            small_mexists,
            None,
        ),
        (
            "BF.MADD x100, 100M-item filter half full (138 MB)",
            huge_madd,
            Some(small_madd),
        ),
        (
            "BF.MEXISTS x100, 100M-item filter half full (138 MB)",
            huge_mexists,
            Some(small_mexists),
        ),
    ] {
        let mut row = Row::new("batches, ns per item", name, value, "ns");
        if let Some(base) = base {
            row = row.against("same batch in cache", base, 3.0);
        }
        rows.push(row);
    }
}

/// Single items: all the cache lines of an item are requested before the first is tested, so
/// a filter far bigger than the caches costs at most twice the one in them.
fn single_rows(server: &Server, capacity: u64, rows: &mut Vec<Row>) {
    let singles = size(300_000);
    for verb in ["BF.ADD", "BF.EXISTS"] {
        let name = verb.to_lowercase();
        let command = |key| [verb, key, "item:__rand_int__"];
        let small = measure(server, &name, singles, 100_000, &command("small"));
        let huge = measure(server, &name, singles, capacity, &command("huge"));
        rows.push(
            Row::new(
                "single items, usec per call",
                format!("{verb}, 100M-item filter half full (138 MB)"),
                huge.usec,
                "us",
            )
            .against("the same on the 100K-item filter", small.usec, 2.0),
        );
    }
}
