//! Section `walks`: no cuckoo add stalls the server. Full filters of buckets of 4 and
//! `MAXITERATIONS 65535` (RedisBloom's longest walk), every slot taken by a fingerprint of no
//! pattern, at 4 KiB, 4 MiB and 256 MiB (where an eviction is a miss of every cache): the slowest
//! of ten refused `CF.ADD`s (each walks `filters::cuckoo::WALK_EVICTIONS` and undoes them) and of
//! three `CF.INSERT`s of 2,000 new items (one walk in all: `COMMAND_EVICTIONS`), each held to
//! 10 ms. With `REDISBLOOM_SO`, RedisBloom's refused `CF.ADD` on the 256 MiB filter beside ours:
//! it walks all 65,535 (no target).

use crate::common::Server;
use crate::compaction::{load, slowest};
use crate::measure::size;
use crate::report::Row;
use crate::server;
use filters::cuckoo::{Cuckoo, Params, Table};
use std::path::PathBuf;

const GROUP: &str = "bounded work: a cuckoo add's slowest call, ms";

/// The bound every row of ours is held to, in milliseconds.
const BOUND_MS: f64 = 10.0;

/// Measures this section and appends its rows.
pub fn rows(server: &Server, rows: &mut Vec<Row>) {
    let mut conn = server.conn();
    let mut biggest = 0.0;
    for (label, bytes) in [
        ("4 KiB", 1u64 << 12),
        ("4 MiB", size(1 << 22)),
        ("256 MiB", size(1 << 28)),
    ] {
        load(&mut conn, "full", &full_filter(bytes / 4));
        let refused = slowest_refusal(&mut conn, 10);
        rows.push(bounded(
            &format!("refused CF.ADD x10, full filter of {label}, MAXITERATIONS 65535"),
            refused,
        ));
        let insert = slowest(&mut conn, &new_items(2000), 3);
        rows.push(bounded(
            &format!("CF.INSERT of 2,000 new items x3, full filter of {label}"),
            insert,
        ));
        biggest = refused;
    }
    conn.call(&["DEL", "full"]);

    if let Some(module) = std::env::var_os("REDISBLOOM_SO").map(PathBuf::from) {
        let theirs = server::start_with_module(&module);
        let mut conn = theirs.conn();
        load(&mut conn, "full", &full_filter(size(1 << 28) / 4));
        let redisbloom = slowest_refusal(&mut conn, 3);
        rows.push(
            Row::new(
                GROUP,
                "RedisBloom's refused CF.ADD x3, the 256 MiB filter",
                redisbloom,
                "ms",
            )
            .against("ours", biggest, f64::INFINITY),
        );
    }
}

fn bounded(name: &str, ms: f64) -> Row {
    Row::new(GROUP, name, ms, "ms").against("the bound", BOUND_MS, 1.0)
}

/// The slowest of `count` `CF.ADD`s of new items into `full`, each refused, in milliseconds.
fn slowest_refusal(conn: &mut crate::common::Conn, count: usize) -> f64 {
    (0..count)
        .map(|index| {
            let item = format!("walker:{index}");
            let started = std::time::Instant::now();
            let reply = conn.call(&["CF.ADD", "full", &item]);
            let ms = started.elapsed().as_secs_f64() * 1e3;
            // RedisBloom 2.4 answers it without the ERR code.
            let text = crate::common::error_text(&reply);
            assert!(text.ends_with("Filter is full"), "{item}: {reply:?}");
            ms
        })
        .fold(0.0, f64::max)
}

/// `CF.INSERT full NOCREATE ITEMS new:0 ... new:(count - 1)`.
fn new_items(count: usize) -> Vec<String> {
    let mut insert = ["CF.INSERT", "full", "NOCREATE", "ITEMS"]
        .map(String::from)
        .to_vec();
    insert.extend((0..count).map(|i| format!("new:{i}")));
    insert
}

/// One sub-filter of `buckets` buckets of 4 that never grows (`EXPANSION 0`) and walks up to
/// 65,535 evictions, every slot taken by a fingerprint of no pattern.
fn full_filter(buckets: u64) -> Cuckoo {
    let params = Params::new(4, 65_535, 0).unwrap();
    let slots = (buckets * 4) as usize;
    let fingerprint =
        |slot: usize| ((slot as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 56) as u8 | 1;
    let bytes: Vec<u8> = (0..slots).map(fingerprint).collect();
    let table = Table::from_bytes(buckets, 4, 8, &bytes).unwrap();
    Cuckoo::from_parts(params, None, vec![table], slots as u64, 0).unwrap()
}
