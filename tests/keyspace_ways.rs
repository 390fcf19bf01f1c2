//! Every way a filter comes into a key or leaves one without a command of this module (issue 53):
//! DEL, UNLINK, expiry, eviction, RENAME (over another filter too), MOVE, COPY (over a key, into
//! another database), SWAPDB, FLUSHDB and FLUSHALL, RESTORE (over a key too), replication, RDB and
//! AOF loading. The module listens to no keyspace or server event: `INFO bf` counts filters and
//! their bytes in the data type's callbacks (a value made, loaded or copied enters; a value freed,
//! on whichever thread, leaves), and the sweep's registry follows windowed filters by the same
//! callbacks. After each way, `INFO bf` says what the keys hold: Bloom filters, windowed ones,
//! their bytes, windowed filters with a part to drop some day (`bf_sweep_keys`), cuckoo filters
//! and their bytes. (The sweep finding moved filters again: `window_idle.rs`; answers through
//! hints: `early_hash.rs`.)

mod common;

use common::{now_ms, ok, Conn, Frame, Options, Server};
use std::thread::sleep;
use std::time::Duration;

/// The databases the test uses.
const DATABASES: u32 = 4;

/// What `INFO bf` counts of the keyspace.
#[derive(Debug, Default, PartialEq)]
struct Counts {
    filters: u64,
    windowed: u64,
    bytes: u64,
    sweep_keys: u64,
    cf_filters: u64,
    cf_bytes: u64,
}

/// What the keys of the first [`DATABASES`] databases hold, counted key by key.
fn held(conn: &mut Conn) -> Counts {
    let mut counts = Counts::default();
    for db in 0..DATABASES {
        ok(conn, &["SELECT", &db.to_string()]);
        let keys = conn.call(&["KEYS", "*"]).items();
        for key in keys {
            let key = String::from_utf8(key.bytes()).unwrap();
            match conn.call(&["TYPE", &key]).text().as_str() {
                "MBbloom--" => {
                    counts.filters += 1;
                    counts.bytes += common::bf_size(conn, &key) as u64;
                    let window = conn.call(&["BF.INFO", &key, "WINDOW"]).items();
                    if matches!(window[..], [Frame::Int(_)]) {
                        counts.windowed += 1;
                        let lines = common::debug_lines(conn, &key);
                        if lines.iter().any(|line| line.starts_with("generation")) {
                            counts.sweep_keys += 1;
                        }
                    }
                }
                "MBbloomCF" => {
                    counts.cf_filters += 1;
                    counts.cf_bytes += conn.call(&["CF.INFO", &key]).items()[1].int() as u64;
                }
                _ => {}
            }
        }
    }
    ok(conn, &["SELECT", "0"]);
    counts
}

/// What `INFO bf` says.
fn reported(server: &Server) -> Counts {
    let field = |name: &str| common::info_bf(server, name);
    Counts {
        filters: field("bf_filters"),
        windowed: field("bf_windowed_filters"),
        bytes: field("bf_bytes"),
        sweep_keys: field("bf_sweep_keys"),
        cf_filters: field("bf_cf_filters"),
        cf_bytes: field("bf_cf_bytes"),
    }
}

/// Asserts that `INFO bf` counts what the keys hold after `what`, waiting a moment for filters a
/// lazy free is freeing on another thread.
fn check(server: &Server, what: &str) -> Counts {
    let mut conn = server.conn();
    let deadline = now_ms() + 3000;
    loop {
        let (held, reported) = (held(&mut conn), reported(server));
        if held == reported {
            return held;
        }
        assert!(
            now_ms() < deadline,
            "after {what}: {reported:?}, the keys {held:?}"
        );
        sleep(Duration::from_millis(20));
    }
}

/// A Bloom filter `key` (windowed if `window` is given, with an item so that it has a part to
/// drop), and a cuckoo filter `cf-<key>` beside it, in the connection's database.
fn make(conn: &mut Conn, key: &str, window: Option<&str>) {
    let mut reserve = vec!["BF.RESERVE", key, "0.01", "1000"];
    if let Some(window) = window {
        reserve.extend(["WINDOW", window]);
    }
    ok(conn, &reserve);
    assert!(!conn.call(&["BF.ADD", key, "x"]).is_error());
    let cuckoo = format!("cf-{key}");
    ok(conn, &["CF.RESERVE", &cuckoo, "1000"]);
    assert!(!conn.call(&["CF.ADD", &cuckoo, "x"]).is_error());
}

/// A big filter (over 64 blocks: `free_effort` makes UNLINK and lazy frees free it on another
/// thread), windowed.
fn make_big(conn: &mut Conn, key: &str) {
    let reserve = [
        "BF.RESERVE",
        key,
        "0.0001",
        "4000",
        "EXPANSION",
        "1",
        "WINDOW",
        "600",
    ];
    ok(conn, &reserve);
    let items = common::names("i", 0, 40_000);
    assert!(!common::madd(conn, key, &items).is_error());
}

#[test]
fn info_bf_counts_what_the_keys_hold_through_every_way_in_and_out() {
    let options = Options::default()
        .config("appendonly", "yes")
        .config("lazyfree-lazy-user-del", "yes")
        .config("lazyfree-lazy-server-del", "yes")
        .config("lazyfree-lazy-expire", "yes")
        .config("lazyfree-lazy-eviction", "yes");
    let mut server = Server::with(options);
    let mut conn = server.conn();
    for (key, window) in [
        ("plain", None),
        ("w", Some("600")),
        ("gone", None),
        ("w-gone", Some("600")),
        ("plain-too", None),
    ] {
        make(&mut conn, key, window);
    }
    ok(
        &mut conn,
        &["BF.RESERVE", "w-empty", "0.01", "100", "WINDOW", "600"],
    );
    make_big(&mut conn, "w-big");
    let made = check(&server, "the filters were made");
    assert_eq!((made.windowed, made.sweep_keys, made.cf_filters), (4, 3, 5));

    for command in [
        "DEL gone cf-gone",
        "UNLINK w-big cf-w-gone",
        "UNLINK w-gone",
    ] {
        let words: Vec<&str> = command.split(' ').collect();
        assert!(conn.call(&words).int() >= 1, "{command}");
        check(&server, command);
    }

    // Expired: lazily (a command finds it) and actively (the server's cycle).
    make(&mut conn, "lazy", Some("600"));
    make(&mut conn, "active", Some("600"));
    for key in ["lazy", "cf-lazy", "active", "cf-active"] {
        assert_eq!(conn.call(&["PEXPIRE", key, "1"]), Frame::Int(1));
    }
    sleep(Duration::from_millis(5));
    assert_eq!(conn.call(&["EXISTS", "lazy", "cf-lazy"]), Frame::Int(0));
    check(&server, "expiry");

    // Evicted: the only keys with a time to live, under volatile-ttl.
    make(&mut conn, "evicted", Some("600"));
    for key in ["evicted", "cf-evicted"] {
        assert_eq!(conn.call(&["EXPIRE", key, "100000"]), Frame::Int(1));
    }
    ok(
        &mut conn,
        &["CONFIG", "SET", "maxmemory-policy", "volatile-ttl"],
    );
    ok(&mut conn, &["CONFIG", "SET", "maxmemory", "1"]);
    assert_eq!(conn.call(&["PING"]), Frame::simple("PONG"));
    ok(&mut conn, &["CONFIG", "SET", "maxmemory", "0"]);
    assert_eq!(
        conn.call(&["EXISTS", "evicted", "cf-evicted"]),
        Frame::Int(0)
    );
    check(&server, "eviction");

    // Renamed, and renamed over another filter (which is freed); moved to another database.
    make(&mut conn, "over", None);
    for command in [
        "RENAME w w-renamed",
        "RENAME cf-w cf-renamed",
        "RENAME w-renamed over",
        "RENAME cf-renamed cf-over",
        "MOVE over 1",
        "MOVE cf-over 1",
    ] {
        let words: Vec<&str> = command.split(' ').collect();
        assert!(!conn.call(&words).is_error(), "{command}");
        check(&server, command);
    }
    // Copied, over a key, and into another database; databases swapped.
    ok(&mut conn, &["SELECT", "1"]);
    for command in [
        "COPY over w-copy",
        "COPY cf-over cf-copy",
        "COPY over w-empty-copy",
        "COPY over w-empty-copy REPLACE",
        "COPY over w-far DB 2",
        "COPY cf-over cf-far DB 2",
        "SWAPDB 1 3",
    ] {
        let words: Vec<&str> = command.split(' ').collect();
        assert!(!conn.call(&words).is_error(), "{command}");
        check(&server, command);
    }
    // Restored, and restored over a key.
    ok(&mut conn, &["SELECT", "3"]);
    for (from, to, replace) in [
        ("over", "w-restored", false),
        ("cf-over", "cf-restored", false),
        ("w-copy", "w-restored", true),
        ("over", "cf-restored", true),
    ] {
        let payload = conn.call(&["DUMP", from]).bytes();
        let mut restore = vec![b"RESTORE".as_slice(), to.as_bytes(), b"0", &payload];
        if replace {
            restore.push(b"REPLACE");
        }
        assert_eq!(conn.call(&restore), Frame::ok(), "RESTORE {to}");
        check(&server, &format!("RESTORE {to} (from {from})"));
    }
    ok(&mut conn, &["SELECT", "0"]);
    let before = check(&server, "the moves");

    // A replica by full sync, and by the commands it replays.
    let replica = Server::start();
    replica.replicate(&server);
    replica.catch_up(&server);
    assert_eq!(check(&replica, "a full sync"), before);
    make(&mut conn, "replayed", Some("600"));
    ok(&mut conn, &["RENAME", "replayed", "w-replayed"]);
    assert_eq!(conn.call(&["DEL", "cf-replayed"]), Frame::Int(1));
    replica.catch_up(&server);
    assert_eq!(
        check(&replica, "replayed writes"),
        check(&server, "replayed writes")
    );
    drop(replica);

    // RDB loading (DEBUG RELOAD, a restart), and the AOF: with its RDB preamble, and as
    // commands only (each filter as its LOADCHUNK sequence).
    let before = check(&server, "the replica");
    ok(&mut conn, &["DEBUG", "RELOAD"]);
    assert_eq!(check(&server, "DEBUG RELOAD"), before);
    for preamble in ["yes", "no"] {
        ok(
            &mut conn,
            &["CONFIG", "SET", "aof-use-rdb-preamble", preamble],
        );
        assert!(!conn.call(&["BGREWRITEAOF"]).is_error());
        server.wait_for_aof_rewrite();
        ok(&mut conn, &["DEBUG", "LOADAOF"]);
        assert_eq!(
            check(&server, &format!("DEBUG LOADAOF, preamble {preamble}")),
            before
        );
    }
    drop(conn);
    server.restart();
    assert_eq!(check(&server, "a restart (the AOF)"), before);

    // Flushed: one database, then all of them, lazily.
    let mut conn = server.conn();
    ok(&mut conn, &["SELECT", "3"]);
    ok(&mut conn, &["FLUSHDB"]);
    check(&server, "FLUSHDB");
    ok(&mut conn, &["FLUSHALL", "ASYNC"]);
    assert_eq!(check(&server, "FLUSHALL ASYNC"), Counts::default());
}
