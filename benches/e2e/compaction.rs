//! Section `compaction`: no compaction of a cuckoo filter stalls the server (its budget: 1,048,576
//! slots read, 65,536 bucket probes; `filters::cuckoo::compact`). The slowest of ten
//! `CF.COMPACT` calls (of one where the first leaves the rest nothing to do, and of a `CF.DEL`
//! that compacts), each held to 10 ms, on the shapes where RedisBloom's walk took longest or
//! where this one does most: 65,535 full one-slot sub-filters (RedisBloom's walk: 16 s), 65,534
//! empty ones freed at once, 65,535 with room in one bucket of two, a third of them full before
//! room (seconds), 32 sub-filters grown with default settings (RedisBloom: about 200 ms), and two
//! sub-filters of 64 MiB whose every probe is a cache miss. With `REDISBLOOM_SO`, RedisBloom's own
//! `CF.COMPACT` on the default-settings filter beside ours (no target).

use crate::common::{Conn, Frame, Server};
use crate::measure::size;
use crate::report::Row;
use crate::server;
use filters::cuckoo::dump::header;
use filters::cuckoo::print::{Hashing, Print};
use filters::cuckoo::{Cuckoo, Params, Table};
use std::path::PathBuf;
use std::time::Instant;

const GROUP: &str = "bounded work: a compaction's slowest call, ms";

/// The bound every row is held to, in milliseconds.
const BOUND_MS: f64 = 10.0;

/// Measures this section and appends its rows.
pub fn rows(server: &Server, rows: &mut Vec<Row>) {
    let mut conn = server.conn();
    let x = Print::of(b"x", Hashing::RedisBloom).fingerprint(8) as u8;

    load(&mut conn, "full", &one_slot_filter(&[x; 65_535], 65_535));
    let full = slowest(&mut conn, &["CF.COMPACT", "full"], 10);
    rows.push(bounded(
        "CF.COMPACT x10, 65,535 full one-slot sub-filters",
        full,
    ));

    // Every sub-filter but the newest empty: its fingerprint moves to the first, and the call
    // frees 65,534 sub-filters.
    let mut slots = vec![0; 65_535];
    slots[65_534] = x;
    load(&mut conn, "emptied", &one_slot_filter(&slots, 1));
    let emptied = slowest(&mut conn, &["CF.COMPACT", "emptied"], 1);
    rows.push(bounded(
        "CF.COMPACT that frees 65,534 sub-filters (once)",
        emptied,
    ));

    // Two buckets of one slot each, every older one with room in its second bucket only: each
    // fingerprint of its first bucket probes them all, and the rest move and free half of them.
    let holes = holed_filter(65_535);
    load(&mut conn, "holes", &holes);
    let holed = slowest(&mut conn, &["CF.COMPACT", "holes"], 10);
    rows.push(bounded(
        "CF.COMPACT x10, 65,535 two-slot sub-filters, one hole each",
        holed,
    ));

    let third = 21_845;
    let mut slots = vec![x; 3 * third];
    slots[third..2 * third].fill(0);
    load(&mut conn, "split", &one_slot_filter(&slots, 10));
    let delete = slowest(&mut conn, &["CF.DEL", "split", "x"], 1);
    rows.push(bounded(
        "CF.DEL that compacts, a third full before room (once)",
        delete,
    ));
    let split = slowest(&mut conn, &["CF.COMPACT", "split"], 10);
    rows.push(bounded("CF.COMPACT x10, the same filter", split));

    default_settings(&mut conn);
    let default = slowest(&mut conn, &["CF.COMPACT", "default"], 10);
    rows.push(bounded(
        "CF.COMPACT x10, 32 sub-filters grown with default settings",
        default,
    ));
    if let Some(module) = std::env::var_os("REDISBLOOM_SO").map(PathBuf::from) {
        let theirs = server::start_with_module(&module);
        let mut conn = theirs.conn();
        default_settings(&mut conn);
        let redisbloom = slowest(&mut conn, &["CF.COMPACT", "default"], 10);
        rows.push(
            Row::new(
                GROUP,
                "RedisBloom's CF.COMPACT x10, the same filter",
                redisbloom,
                "ms",
            )
            .against("ours", default, f64::INFINITY),
        );
    }

    load(
        &mut conn,
        "big",
        &out_of_cache(size(1 << 24).next_power_of_two()),
    );
    let big = slowest(&mut conn, &["CF.COMPACT", "big"], 10);
    rows.push(bounded(
        "CF.COMPACT x10, two sub-filters of 64 MiB, every probe a miss",
        big,
    ));
    conn.call(&["DEL", "full", "emptied", "holes", "split", "default", "big"]);
}

fn bounded(name: &str, ms: f64) -> Row {
    Row::new(GROUP, name, ms, "ms").against("the bound", BOUND_MS, 1.0)
}

/// The slowest of `count` runs of `command`, in milliseconds (the client's wall clock: the
/// server is pinned to a core of its own).
fn slowest(conn: &mut Conn, command: &[&str], count: usize) -> f64 {
    (0..count)
        .map(|_| {
            let started = Instant::now();
            let reply = conn.call(command);
            let ms = started.elapsed().as_secs_f64() * 1e3;
            assert!(!reply.is_error(), "{command:?}: {reply:?}");
            ms
        })
        .fold(0.0, f64::max)
}

/// A filter of one-slot sub-filters (BUCKETSIZE 1, EXPANSION 1): `slots[i]` is sub-filter `i`'s
/// one slot.
fn one_slot_filter(slots: &[u8], items: u64) -> Cuckoo {
    let params = Params::new(1, 20, 1).unwrap();
    let tables = slots
        .iter()
        .map(|&slot| Table::from_bytes(1, 1, 8, &[slot]).unwrap())
        .collect();
    Cuckoo::from_parts(params, None, tables, items, 0).unwrap()
}

/// `count` sub-filters of two one-slot buckets, the newest full, the others full but for their
/// second bucket.
fn holed_filter(count: usize) -> Cuckoo {
    let params = Params::new(1, 20, 1).unwrap();
    let tables = (0..count as u64)
        .map(|index| {
            let second = if index + 1 == count as u64 {
                scattered(2 * index + 1)
            } else {
                0
            };
            Table::from_bytes(2, 1, 8, &[scattered(2 * index), second]).unwrap()
        })
        .collect();
    Cuckoo::from_parts(params, None, tables, count as u64 + 1, 0).unwrap()
}

/// Two sub-filters of `buckets` buckets of 4 (64 MiB each at 2^24), the newer full, the older
/// full but for one slot in 64 buckets: a fingerprint finds room one time in 32, after probes of
/// random lines of the older.
fn out_of_cache(buckets: u64) -> Cuckoo {
    let params = Params::new(4, 20, 1).unwrap();
    let slots = (buckets * 4) as usize;
    let mut older: Vec<u8> = (0..slots as u64).map(scattered).collect();
    for bucket in (0..slots / 4).step_by(64) {
        older[bucket * 4 + 3] = 0;
    }
    let newer: Vec<u8> = (0..slots as u64).map(|slot| scattered(slot + 7)).collect();
    let items = (slots * 2 - slots / 256) as u64;
    let tables = vec![
        Table::from_bytes(buckets, 4, 8, &older).unwrap(),
        Table::from_bytes(buckets, 4, 8, &newer).unwrap(),
    ];
    Cuckoo::from_parts(params, None, tables, items, 0).unwrap()
}

/// A fingerprint of no pattern for slot `slot` (odd, so never an empty slot's 0).
pub(crate) fn scattered(slot: u64) -> u8 {
    (slot.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 56) as u8 | 1
}

/// Puts `filter` at `key` with CF.LOADCHUNK: its header, then its chunks (pipelined).
pub(crate) fn load(conn: &mut Conn, key: &str, filter: &Cuckoo) {
    conn.call(&["DEL", key]);
    let head = header(filter);
    assert_eq!(
        conn.call(&[b"CF.LOADCHUNK".as_slice(), key.as_bytes(), b"1", &head]),
        Frame::ok()
    );
    let mut offset = 0u64;
    let mut pending = 0;
    while let Some(chunk) = filter.chunk(offset).filter(|chunk| !chunk.is_empty()) {
        let iterator = (offset + chunk.len() as u64 + 1).to_string();
        conn.send(&[
            b"CF.LOADCHUNK".as_slice(),
            key.as_bytes(),
            iterator.as_bytes(),
            chunk,
        ]);
        offset += chunk.len() as u64;
        pending += 1;
        if pending == 256 {
            (0..pending).for_each(|_| assert_eq!(conn.read(), Frame::ok()));
            pending = 0;
        }
    }
    (0..pending).for_each(|_| assert_eq!(conn.read(), Frame::ok()));
}

/// `CF.RESERVE default 32768 BUCKETSIZE 4 EXPANSION 1`, filled by CF.INSERT until its 32
/// sub-filters (the default `cf-max-expansions`) refuse items.
fn default_settings(conn: &mut Conn) {
    conn.call(&["DEL", "default"]);
    let reserve = [
        "CF.RESERVE",
        "default",
        "32768",
        "BUCKETSIZE",
        "4",
        "EXPANSION",
        "1",
    ];
    assert_eq!(conn.call(&reserve), Frame::ok());
    for first in (0..).step_by(20_000) {
        let mut insert = vec!["CF.INSERT".to_string(), "default".into(), "ITEMS".into()];
        insert.extend((first..first + 20_000).map(|i| format!("item:{i}")));
        // RedisBloom answers a whole error once the sub-filters are at the limit.
        let reply = conn.call(&insert);
        if reply.is_error() || reply.items().iter().any(|answer| answer != &Frame::Int(1)) {
            return;
        }
    }
}
