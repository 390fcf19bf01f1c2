//! Section `walks`: no cuckoo add stalls the server. Filters of `MAXITERATIONS 65535` (RedisBloom's
//! longest walk), every slot taken by a fingerprint of no pattern, loaded by `CF.LOADCHUNK`: of
//! buckets of 4 at 4 KiB, 4 MiB and 256 MiB (where an eviction misses every cache) and of 255 at
//! 255 MiB (a bucket spans four cache lines), the slowest of ten refused `CF.ADD`s (each walks
//! `filters::cuckoo::WALK_EVICTIONS`, over the lines of a bucket, and undoes them) and of three
//! `CF.INSERT`s of 2,000 new items (one walk in all: the first item's, then the filter is full);
//! and of buckets of 4 at 256 MiB with one free slot in 1,024 buckets, three `CF.INSERT`s of 2,000
//! whose walks find room after about a thousand evictions each until the command's budget
//! (`COMMAND_EVICTIONS`) is spent. Each as the server's slow log times it, held to 10 ms. With
//! `REDISBLOOM_SO`, RedisBloom's refused `CF.ADD` on the 256 MiB filter beside ours: it walks all
//! 65,535 (no target).

use crate::common::{Conn, Frame, Server};
use crate::compaction::{load, scattered};
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
    log_every_call(&mut conn);
    let mut biggest = 0.0;
    // Powers of two, as bucket counts must be (BENCH_QUICK shrinks them).
    let (mib, big) = (
        size(1 << 20).next_power_of_two(),
        size(1 << 26).next_power_of_two(),
    );
    for (label, buckets, bucket_size) in [
        ("4 KiB, buckets of 4", 1u64 << 10, 4u8),
        ("4 MiB, buckets of 4", mib, 4),
        ("256 MiB, buckets of 4", big, 4),
        ("255 MiB, buckets of 255", mib, 255),
    ] {
        load(&mut conn, "full", &filter(buckets, bucket_size, None));
        let refused = slowest_refusal(&mut conn, 10);
        rows.push(bounded(
            &format!("refused CF.ADD x10, full filter of {label}"),
            refused,
        ));
        let insert = slowest_run(&mut conn, &new_items(2000), 3);
        rows.push(bounded(
            &format!("CF.INSERT of 2,000 new items x3, full filter of {label}"),
            insert,
        ));
        if bucket_size == 4 {
            biggest = refused;
        }
    }
    load(&mut conn, "full", &filter(big, 4, Some(1024)));
    let budget = slowest_run(&mut conn, &new_items(2000), 3);
    rows.push(bounded(
        "CF.INSERT of 2,000 new items x3, 256 MiB, one free slot in 1,024 buckets",
        budget,
    ));
    conn.call(&["DEL", "full"]);
    // The later sections measure a server that logs only slow calls, as by default.
    log_slow_calls_only(&mut conn);

    if let Some(module) = std::env::var_os("REDISBLOOM_SO").map(PathBuf::from) {
        let theirs = server::start_with_module(&module);
        let mut conn = theirs.conn();
        log_every_call(&mut conn);
        load(&mut conn, "full", &filter(big, 4, None));
        let redisbloom = slowest_refusal(&mut conn, 3);
        rows.push(
            Row::new(
                GROUP,
                "RedisBloom's refused CF.ADD x3, full filter of 256 MiB, buckets of 4",
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

/// The slowest of `count` `CF.ADD`s of new items into `full`, each refused, in milliseconds of
/// the server's time.
fn slowest_refusal(conn: &mut Conn, count: usize) -> f64 {
    (0..count)
        .map(|index| {
            let item = format!("walker:{index}");
            let (reply, ms) = server_ms(conn, &["CF.ADD", "full", &item]);
            // RedisBloom 2.4 answers it without the ERR code.
            let text = crate::common::error_text(&reply);
            assert!(text.ends_with("Filter is full"), "{item}: {reply:?}");
            ms
        })
        .fold(0.0, f64::max)
}

/// The slowest of `count` runs of `command`, in milliseconds of the server's time.
fn slowest_run(conn: &mut Conn, command: &[String], count: usize) -> f64 {
    (0..count)
        .map(|_| {
            let (reply, ms) = server_ms(conn, command);
            assert!(!reply.is_error(), "{reply:?}");
            ms
        })
        .fold(0.0, f64::max)
}

/// `command`'s reply and what it held the server for, in milliseconds, as the server's slow log
/// times it (every call logged: `slowlog-log-slower-than 0`): without the network and the
/// client's scheduling, which make a wall clock's slowest of ten a draw of this VM's noise.
fn server_ms<A: AsRef<[u8]>>(conn: &mut Conn, command: &[A]) -> (Frame, f64) {
    assert_eq!(conn.call(&["SLOWLOG", "RESET"]), Frame::ok());
    let reply = conn.call(command);
    let log = conn.call(&["SLOWLOG", "GET", "1"]);
    let micros = log.items()[0].items()[2].int();
    (reply, micros as f64 / 1e3)
}

/// Logs every call in the slow log, for [`server_ms`].
fn log_every_call(conn: &mut Conn) {
    let config = ["CONFIG", "SET", "slowlog-log-slower-than", "0"];
    assert_eq!(conn.call(&config), Frame::ok());
}

/// Back to the default: only calls of 10 ms or more logged, the log emptied.
fn log_slow_calls_only(conn: &mut Conn) {
    let config = ["CONFIG", "SET", "slowlog-log-slower-than", "10000"];
    assert_eq!(conn.call(&config), Frame::ok());
    assert_eq!(conn.call(&["SLOWLOG", "RESET"]), Frame::ok());
}

/// `CF.INSERT full NOCREATE ITEMS new:0 ... new:(count - 1)`.
fn new_items(count: usize) -> Vec<String> {
    let mut insert = ["CF.INSERT", "full", "NOCREATE", "ITEMS"]
        .map(String::from)
        .to_vec();
    insert.extend((0..count).map(|i| format!("new:{i}")));
    insert
}

/// One sub-filter of `buckets` buckets of `bucket_size` that never grows (`EXPANSION 0`) and walks
/// up to 65,535 evictions, every slot taken by a fingerprint of no pattern but, with `free_every`,
/// the last of every `free_every`-th bucket.
fn filter(buckets: u64, bucket_size: u8, free_every: Option<u64>) -> Cuckoo {
    let params = Params::new(u64::from(bucket_size), 65_535, 0).unwrap();
    let size = usize::from(bucket_size);
    let slots = buckets as usize * size;
    let mut bytes: Vec<u8> = (0..slots as u64).map(scattered).collect();
    if let Some(every) = free_every {
        for bucket in (0..buckets as usize).step_by(every as usize) {
            bytes[bucket * size + size - 1] = 0;
        }
    }
    let items = bytes.iter().filter(|&&byte| byte != 0).count() as u64;
    let table = Table::from_bytes(buckets, bucket_size, 8, &bytes).unwrap();
    Cuckoo::from_parts(params, None, vec![table], items, 0).unwrap()
}
