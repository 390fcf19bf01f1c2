//! Section `cuckoo`: cuckoo filters (`CF.*`) side by side with RedisBloom's, when `REDISBLOOM_SO`
//! names a build of it, on two filters both servers hold with the same bytes (the commands are
//! RedisBloom's step for step), each of 16,777,216 slots filled with 10,000,000 items: one tuned
//! (buckets of 4, MAXITERATIONS 500) and one with RedisBloom's defaults (buckets of 2,
//! MAXITERATIONS 20, what `CF.ADD` on a missing key makes). Single CF.ADD, CF.EXISTS and CF.DEL,
//! and CF.MEXISTS of 100, per item, in pairs of runs in ABBA order, with A/A rows (the tuned
//! filter's commands against a second server with this build: the run's noise); the memory each
//! server takes for the tuned filter; and single lookups on a filter small enough to stay in
//! cache, the command's cost without the wait for memory.

use crate::common::{Conn, Frame, Server};
use crate::measure::{batch_of_100, size};
use crate::redisbloom::{side_by_side, Workload, GROUP};
use crate::report::Row;
use crate::server;
use std::path::PathBuf;

/// The tuned filter both servers hold.
const KEY: &str = "cuckoo";

/// The filter of RedisBloom's defaults both servers hold.
const DEFAULT_KEY: &str = "cuckoo-default";

/// A small filter both hold too (1,024 slots, 500 items: in cache), for a lookup's cost without
/// the wait for memory that every item of the big one has.
const IN_CACHE: &str = "cuckoo-in-cache";

/// Measures this section and appends its rows.
pub fn rows(_main: &Server, rows: &mut Vec<Row>) {
    let Some(module) = std::env::var_os("REDISBLOOM_SO").map(PathBuf::from) else {
        println!("(skipped the cuckoo filters against RedisBloom: set REDISBLOOM_SO)");
        return;
    };
    // Servers that hold these filters and nothing else (see the redisbloom section).
    let ours = &server::start();
    let theirs = server::start_with_module(&module);
    let used: Vec<i64> = [ours, &theirs].into_iter().map(load).collect();
    // Both hold the same bytes: the same commands, RedisBloom's algorithm.
    for key in [KEY, DEFAULT_KEY] {
        let dump = |server: &Server| server.conn().call(&["CF.SCANDUMP", key, "1"]);
        assert_eq!(dump(ours), dump(&theirs), "the two filters {key} differ");
    }
    rows.push(
        Row::new(
            "cuckoo filters against RedisBloom 2.4 (usec per item)",
            "used_memory for a 10M-item filter (16.8M slots)",
            used[0] as f64,
            "bytes",
        )
        .against("RedisBloom", used[1] as f64, 1.005),
    );
    for workload in workloads() {
        rows.push(side_by_side(ours, &theirs, workload, GROUP, "RedisBloom"));
    }
    drop(theirs);
    // The A/A rows: the tuned filter's single commands against a second server with this build
    // and the same filters.
    let same = server::start();
    load(&same);
    for mut workload in workloads().into_iter().take(3) {
        workload.limit = f64::INFINITY;
        rows.push(side_by_side(
            ours,
            &same,
            workload,
            AA_GROUP,
            "this build (A/A)",
        ));
    }
}

const AA_GROUP: &str = "cuckoo filters: this build against itself (A/A), usec per item";

fn workloads() -> [Workload; 8] {
    // redis-benchmark's random items from a billion: mostly new ones (adds, lookups of absent
    // items, deletes that find nothing), as the Bloom filter's rows take them.
    let on = |verb: &str, key: &str| vec![verb.to_string(), key.into(), "item:__rand_int__".into()];
    let single = |verb: &str| on(verb, KEY);
    let default = |verb: &str| on(verb, DEFAULT_KEY);
    [
        Workload {
            label: "CF.ADD, 10M-item filter (buckets of 4, MAXITERATIONS 500), new items",
            name: "cf.add",
            requests: size(300_000),
            command: single("CF.ADD"),
            per: 1.0,
            limit: 0.8,
        },
        Workload {
            label: "CF.EXISTS, the same filter",
            name: "cf.exists",
            requests: size(1_000_000),
            command: single("CF.EXISTS"),
            per: 1.0,
            limit: 0.8,
        },
        Workload {
            label: "CF.DEL, the same filter",
            name: "cf.del",
            requests: size(300_000),
            command: single("CF.DEL"),
            per: 1.0,
            limit: 0.8,
        },
        Workload {
            label: "CF.MEXISTS x100, the same filter, per item",
            name: "cf.mexists",
            requests: size(20_000),
            command: batch_of_100("CF.MEXISTS", KEY),
            per: 100.0,
            limit: 0.8,
        },
        Workload {
            label: "CF.ADD, 10M-item filter of RedisBloom's defaults (buckets of 2), new items",
            name: "cf.add",
            requests: size(300_000),
            command: default("CF.ADD"),
            per: 1.0,
            limit: 0.8,
        },
        Workload {
            label: "CF.EXISTS, the same filter",
            name: "cf.exists",
            requests: size(1_000_000),
            command: default("CF.EXISTS"),
            per: 1.0,
            limit: 0.8,
        },
        Workload {
            label: "CF.DEL, the same filter",
            name: "cf.del",
            requests: size(300_000),
            command: default("CF.DEL"),
            per: 1.0,
            limit: 0.8,
        },
        // No target: what a single lookup costs where no item waits for memory (the big
        // filter's row less this one is that wait).
        Workload {
            label: "CF.EXISTS, a 1,024-slot filter (in cache)",
            name: "cf.exists",
            requests: size(1_000_000),
            command: on("CF.EXISTS", IN_CACHE),
            per: 1.0,
            limit: f64::INFINITY,
        },
    ]
}

/// Reserves and fills the section's three filters on `server`: the memory the tuned one took.
fn load(server: &Server) -> i64 {
    let items = size(10_000_000);
    let mut conn = server.conn();
    let before = memory(&mut conn);
    let capacity = (items * 16 / 10).next_power_of_two().to_string();
    let tuned = [
        "CF.RESERVE",
        KEY,
        &capacity,
        "BUCKETSIZE",
        "4",
        "MAXITERATIONS",
        "500",
    ];
    assert_eq!(conn.call(&tuned), Frame::ok());
    fill(&mut conn, KEY, items);
    let used = memory(&mut conn) - before;
    let small = ["CF.RESERVE", IN_CACHE, "1024", "BUCKETSIZE", "4"];
    assert_eq!(conn.call(&small), Frame::ok());
    fill(&mut conn, IN_CACHE, 500);
    let default = ["CF.RESERVE", DEFAULT_KEY, &capacity, "BUCKETSIZE", "2"];
    assert_eq!(conn.call(&default), Frame::ok());
    fill(&mut conn, DEFAULT_KEY, items);
    used
}

/// Adds `count` items (`item:0`...) to `key` with pipelined CF.INSERT of 1,000 items each.
fn fill(conn: &mut Conn, key: &str, count: u64) {
    let mut pending = 0;
    let mut start = 0;
    while start < count {
        let end = (start + 1000).min(count);
        let mut args = vec!["CF.INSERT".to_string(), key.into(), "ITEMS".into()];
        args.extend((start..end).map(|i| format!("item:{i:012}")));
        conn.send(&args);
        pending += 1;
        if pending == 64 {
            (0..pending).for_each(|_| assert!(!conn.read().is_error()));
            pending = 0;
        }
        start = end;
    }
    (0..pending).for_each(|_| assert!(!conn.read().is_error()));
}

/// The server's used_memory.
fn memory(conn: &mut Conn) -> i64 {
    let info = conn.call(&["INFO", "memory"]).text();
    info.lines()
        .find_map(|line| line.strip_prefix("used_memory:"))
        .and_then(|value| value.trim().parse().ok())
        .expect("used_memory in INFO memory")
}
