//! Section `layout`: the blocked layout (`LAYOUT BLOCKED`) against the classic one and against
//! RedisBloom (when `REDISBLOOM_SO` names a build of it): memory per item at the same error
//! rate, a filter in the CPU's caches, and the big filters whose every probe is a cache miss.
//! Comparisons run in pairs in ABBA order and report the median of the pairs' ratios; the rows
//! with a target have an A/A row beside them (the same key on both sides: the run's noise).

use crate::common::{Conn, Frame, Server};
use crate::measure::{alternate, batch_of_100, measure_once, median, size};
use crate::report::Row;
use crate::server::{self, fill};
use std::path::PathBuf;

const GROUP: &str = "blocked layout (usec per call, ns per item in batches, bytes per item)";

/// One side of a comparison: a server, the command's name in commandstats, the command, the
/// items per call, and the range of the random items (`item:0` to below it).
#[derive(Clone)]
pub struct Side<'a> {
    pub server: &'a Server,
    pub name: &'a str,
    pub command: Vec<String>,
    pub per: f64,
    pub keyspace: u64,
}

/// Random items for the big filters and the RedisBloom rows: far more than they hold, so adds
/// are new items and lookups mostly absent ones.
pub const ANY_ITEM: u64 = 1_000_000_000;
/// Random items for the 100K-item filters: within their capacity, so that they stay 100K-item
/// filters in the caches however many adds are measured (half of these items are in them).
const SMALL_ITEMS: u64 = 100_000;

/// Measures this section and appends its rows.
pub fn rows(server: &Server, rows: &mut Vec<Row>) {
    let mut conn = server.conn();
    memory_rows(&mut conn, rows);
    in_cache_rows(server, &mut conn, rows);
    let theirs = std::env::var_os("REDISBLOOM_SO")
        .map(PathBuf::from)
        .map(|module| server::start_with_module(&module));
    if theirs.is_none() {
        println!("(layout: skipped the rows against RedisBloom: set REDISBLOOM_SO)");
    }
    let hundred = size(100_000_000);
    for (error, label) in [(0.01, "1%"), (0.001, "0.1%")] {
        for (key, layout) in [("huge-c", "CLASSIC"), ("huge-b", "BLOCKED")] {
            reserve(&mut conn, key, error, hundred, layout);
            fill(&mut conn, key, hundred / 2);
        }
        big_rows(server, label, rows);
        conn.call(&["DEL", "huge-c"]);
        if error == 0.01 {
            single_rows(server, rows);
            if let Some(theirs) = &theirs {
                redisbloom_rows(server, theirs, rows);
            }
        }
        conn.call(&["DEL", "huge-b"]);
    }
    conn.call(&["DEL", "small-b"]);
}

/// `BF.RESERVE key error capacity LAYOUT layout`, which must succeed.
pub fn reserve(conn: &mut Conn, key: &str, error: f64, capacity: u64, layout: &str) {
    let reply = conn.call(&[
        "BF.RESERVE",
        key,
        &error.to_string(),
        &capacity.to_string(),
        "LAYOUT",
        layout,
    ]);
    assert_eq!(reply, Frame::ok(), "{key}");
}

/// MEMORY USAGE per item of a 10M-item filter at 1% and at 0.1%, blocked against classic: the
/// bits are allocated at creation, so the filters need no items.
fn memory_rows(conn: &mut Conn, rows: &mut Vec<Row>) {
    let items = size(10_000_000);
    for (error, label, limit) in [(0.01, "1%", 1.06), (0.001, "0.1%", 1.10)] {
        let mut per_item = |layout: &str| {
            reserve(conn, "mem-layout", error, items, layout);
            let usage = conn.call(&["MEMORY", "USAGE", "mem-layout"]).int() as f64;
            conn.call(&["DEL", "mem-layout"]);
            usage / items as f64
        };
        let classic = per_item("CLASSIC");
        let blocked = per_item("BLOCKED");
        rows.push(
            Row::new(
                GROUP,
                format!("MEMORY USAGE per item, 10M items at {label}, blocked"),
                blocked,
                "bytes",
            )
            .against("classic", classic, limit),
        );
    }
}

/// A 100K-item filter (in the caches), blocked against classic: single items and batches.
fn in_cache_rows(server: &Server, conn: &mut Conn, rows: &mut Vec<Row>) {
    server::reserve_small(conn);
    reserve(conn, "small-b", 0.01, 100_000, "BLOCKED");
    for key in ["small", "small-b"] {
        fill(conn, key, 50_000);
    }
    for (verb, per) in [
        ("BF.ADD", 1.0),
        ("BF.EXISTS", 1.0),
        ("BF.MADD", 100.0),
        ("BF.MEXISTS", 100.0),
    ] {
        let command = |key: &str| command(verb, key, per);
        let blocked = Side {
            server,
            name: &verb.to_lowercase(),
            command: command("small-b"),
            per,
            keyspace: SMALL_ITEMS,
        };
        let classic = Side {
            command: command("small"),
            ..blocked.clone()
        };
        let label = format!(
            "{verb}{}, 100K-item filter (in cache), blocked",
            suffix(per)
        );
        rows.push(pairs(&label, &blocked, &classic, "classic", 1.0));
    }
}

/// The command of one measure: one random item, or a batch of 100.
pub fn command(verb: &str, key: &str, per: f64) -> Vec<String> {
    if per > 1.0 {
        batch_of_100(verb, key)
    } else {
        vec![
            verb.to_string(),
            key.to_string(),
            "item:__rand_int__".into(),
        ]
    }
}

pub fn suffix(per: f64) -> &'static str {
    if per > 1.0 {
        " x100, per item"
    } else {
        ""
    }
}

/// The 100M-item filters half full at one error rate, blocked against classic: batches of 100
/// and single items.
fn big_rows(server: &Server, label: &str, rows: &mut Vec<Row>) {
    for (verb, per) in [
        ("BF.MADD", 100.0),
        ("BF.MEXISTS", 100.0),
        ("BF.ADD", 1.0),
        ("BF.EXISTS", 1.0),
    ] {
        let blocked = Side {
            server,
            name: &verb.to_lowercase(),
            command: command(verb, "huge-b", per),
            per,
            keyspace: ANY_ITEM,
        };
        let classic = Side {
            command: command(verb, "huge-c", per),
            ..blocked.clone()
        };
        let row = format!(
            "{verb}{}, 100M-item filter half full at {label}, blocked",
            suffix(per)
        );
        rows.push(pairs(&row, &blocked, &classic, "classic", f64::INFINITY));
    }
}

/// Single items on the 100M-item blocked filter half full (at 1%) against the same on the
/// blocked 100K-item filter: one cache miss an item instead of one a probe.
fn single_rows(server: &Server, rows: &mut Vec<Row>) {
    for verb in ["BF.ADD", "BF.EXISTS"] {
        let big = Side {
            server,
            name: &verb.to_lowercase(),
            command: command(verb, "huge-b", 1.0),
            per: 1.0,
            keyspace: size(100_000_000),
        };
        let small = Side {
            command: command(verb, "small-b", 1.0),
            keyspace: SMALL_ITEMS,
            ..big.clone()
        };
        let label = format!("{verb}, 100M-item blocked filter half full at 1%");
        rows.push(pairs(
            &label,
            &big,
            &small,
            "the same on the 100K-item blocked filter",
            1.3,
        ));
        rows.push(pairs(
            &format!("{verb}, 100M-item blocked filter (A/A: against itself)"),
            &big,
            &big,
            "the same",
            f64::INFINITY,
        ));
    }
}

/// The blocked filters against RedisBloom's filters of the same capacity, as full, at 1%: single
/// items on 10M-item filters, batches on the 100M-item ones.
fn redisbloom_rows(server: &Server, theirs: &Server, rows: &mut Vec<Row>) {
    let (ten, hundred) = (size(10_000_000), size(100_000_000));
    let mut ours = server.conn();
    reserve(&mut ours, "ten-b", 0.01, ten, "BLOCKED");
    fill(&mut ours, "ten-b", ten / 2);
    let mut them = theirs.conn();
    for (key, capacity) in [("ten", ten), ("hundred", hundred)] {
        server::reserve(&mut them, key, capacity);
        fill(&mut them, key, capacity / 2);
    }
    for (verb, key, theirs_key, per, limit) in [
        ("BF.ADD", "ten-b", "ten", 1.0, 0.6),
        ("BF.EXISTS", "ten-b", "ten", 1.0, 0.6),
        ("BF.MADD", "huge-b", "hundred", 100.0, 0.25),
        ("BF.MEXISTS", "huge-b", "hundred", 100.0, 0.18),
    ] {
        let name = verb.to_lowercase();
        let ours_side = Side {
            server,
            name: &name,
            command: command(verb, key, per),
            per,
            keyspace: ANY_ITEM,
        };
        let redisbloom = Side {
            server: theirs,
            name: &name,
            command: command(verb, theirs_key, per),
            per,
            keyspace: ANY_ITEM,
        };
        let size = if per > 1.0 { "100M" } else { "10M" };
        let label = format!(
            "{verb}{}, {size}-item blocked filter half full",
            suffix(per)
        );
        rows.push(pairs(&label, &ours_side, &redisbloom, "RedisBloom", limit));
    }
    ours.call(&["DEL", "ten-b"]);
    for key in ["ten", "hundred"] {
        them.call(&["DEL", key]);
    }
}

/// Pairs of runs of `a` and `b` in ABBA order (`measure::alternate`), with new random items each
/// run; the row is `a`'s median (per call, or per item in ns for batches) against `b`'s.
pub fn pairs(label: &str, a: &Side, b: &Side, baseline: &str, limit: f64) -> Row {
    let requests = if a.per > 1.0 {
        size(20_000)
    } else {
        size(300_000)
    };
    let unit_scale = if a.per > 1.0 { 1000.0 } else { 1.0 };
    let run = |side: &Side| {
        let command: Vec<&str> = side.command.iter().map(String::as_str).collect();
        measure_once(side.server, side.name, requests, side.keyspace, &command) / side.per
            * unit_scale
    };
    let runs = alternate(|| run(a), || run(b));
    let ratios = runs.iter().map(|(x, y)| x / y).collect();
    let (first, second): (Vec<f64>, Vec<f64>) = runs.into_iter().unzip();
    let unit = if a.per > 1.0 { "ns" } else { "us" };
    Row::new(GROUP, label, median(first), unit)
        .against(baseline, median(second), limit)
        .with_pairs(ratios)
}
