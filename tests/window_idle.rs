//! Idle windowed keys (issue 22, item 3): a windowed workload never silently turns into a filter
//! that remembers forever. The key of an idle windowed filter stays (empty, a few dozen bytes),
//! so a later BF.ADD still forgets on schedule; the sweep returns the memory of its expired parts
//! within about a second of their expiry, on the primary and through replication, however the
//! filter reached its key (a command, RESTORE, COPY, RENAME, MOVE, SWAPDB, an RDB load).

mod common;

use common::{
    bf_size, digest, error_text, generations, info_bf, madd, names, now_ms, ok, sleep_until,
    timed_by, Conn, Frame, Server,
};
use std::thread::sleep;
use std::time::Duration;

/// Waits for `key`'s Size to come back to `size`: its expired parts swept. A request sent after
/// `deadline` must find it so (a slow reply to one sent before it is no failure).
fn wait_for_size(conn: &mut Conn, key: &str, size: i64, deadline: u64) {
    loop {
        let sent = now_ms();
        let found = bf_size(conn, key);
        if found == size {
            return;
        }
        assert!(sent <= deadline, "{key}: Size {found} not back to {size}");
        sleep(Duration::from_millis(50));
    }
}

#[test]
fn an_idle_windowed_key_stays_windowed_and_forgets_what_it_takes_next() {
    // The docs' pattern, RESERVE then ADD (before: after an idle window the key had expired, and
    // BF.ADD made a plain filter of capacity 100 that remembered v2 forever).
    let server = Server::start();
    let mut conn = server.conn();
    ok(
        &mut conn,
        &["BF.RESERVE", "feed", "0.001", "5000", "WINDOW", "1"],
    );
    let empty = bf_size(&mut conn, "feed");
    assert_eq!(conn.call(&["BF.ADD", "feed", "v1"]), Frame::Int(1));
    let added = now_ms();
    assert!(bf_size(&mut conn, "feed") > empty);
    sleep_until(added + 1500);
    // Gone from the filter, and its memory with it; the key stays, without a time to live.
    wait_for_size(&mut conn, "feed", empty, added + 5000);
    assert_eq!(conn.call(&["EXISTS", "feed"]), Frame::Int(1));
    assert_eq!(conn.call(&["PTTL", "feed"]), Frame::Int(-1));
    assert_eq!(conn.call(&["BF.ADD", "feed", "v2"]), Frame::Int(1));
    let second = now_ms();
    assert_eq!(
        conn.call(&["BF.INFO", "feed", "WINDOW"]),
        Frame::Array(vec![Frame::Int(1)])
    );
    assert_eq!(
        conn.call(&["BF.INFO", "feed", "CAPACITY"]),
        Frame::Array(vec![Frame::Int(5000)])
    );
    assert_eq!(conn.call(&["BF.EXISTS", "feed", "v1"]), Frame::Int(0));
    sleep_until(second + 1100);
    assert_eq!(conn.call(&["BF.EXISTS", "feed", "v2"]), Frame::Int(0));
    // The size an idle windowed key keeps: the filter's value and its parameters (Size), and
    // with the key's own bytes (MEMORY USAGE: the server's part, by server).
    assert_eq!(empty, 96);
    let key_bytes = common::flavor().key_bytes();
    assert_eq!(
        conn.call(&["MEMORY", "USAGE", "feed"]).int(),
        96 + key_bytes
    );
}

#[test]
fn writes_refused_for_a_window_under_maxmemory_do_not_make_a_forever_filter() {
    let server = Server::start();
    let mut conn = server.conn();
    ok(
        &mut conn,
        &["BF.RESERVE", "w", "0.01", "20000", "WINDOW", "1"],
    );
    let empty = bf_size(&mut conn, "w");
    assert!(!madd(&mut conn, "w", &names("a", 0, 5000)).is_error());
    let added = now_ms();
    // Every write refused (noeviction, a maxmemory below what is used) for one and a half
    // windows.
    ok(&mut conn, &["CONFIG", "SET", "maxmemory", "1"]);
    while now_ms() < added + 1500 {
        let refused = conn.call(&["BF.ADD", "w", "x"]);
        assert!(error_text(&refused).starts_with("OOM "), "{refused:?}");
        sleep(Duration::from_millis(100));
    }
    // The sweep freed the expired parts all the same (it only frees).
    wait_for_size(&mut conn, "w", empty, added + 2500);
    ok(&mut conn, &["CONFIG", "SET", "maxmemory", "0"]);
    // Writes come back to a windowed filter, which forgets on schedule.
    assert_eq!(conn.call(&["BF.ADD", "w", "x"]), Frame::Int(1));
    let x = now_ms();
    assert_eq!(
        conn.call(&["BF.INFO", "w", "WINDOW"]),
        Frame::Array(vec![Frame::Int(1)])
    );
    sleep_until(x + 1100);
    assert_eq!(conn.call(&["BF.EXISTS", "w", "x"]), Frame::Int(0));
}

#[test]
fn the_sweep_returns_an_idle_filters_memory_on_the_primary_and_its_replica() {
    let primary = Server::start();
    let replica = Server::start();
    replica.replicate(&primary);
    let mut conn = primary.conn();
    let mut mirror = replica.conn();
    ok(
        &mut conn,
        &["BF.RESERVE", "w", "0.01", "10000", "WINDOW", "1"],
    );
    let empty = bf_size(&mut conn, "w");
    let written = timed_by(|| madd(&mut conn, "w", &names("a", 0, 5000)));
    assert!(!written.reply.is_error());
    let added = written.answered;
    // A key written after it and never touched again: the filter's idle time keeps up with it.
    ok(&mut conn, &["SET", "mark", "x"]);
    replica.catch_up(&primary);
    // The replica holds the part until the primary's sweep drops it, a window after the write
    // at the earliest.
    let held = timed_by(|| bf_size(&mut mirror, "w"));
    if held.live(written.sent + 1000..=added + 1000) == Some(true) {
        assert!(held.reply > empty, "{held:?}");
    }
    // Nothing reads or writes the key for two seconds (INFO says when the sweep has run).
    loop {
        let sent = now_ms();
        if info_bf(&primary, "bf_swept_parts") > 0 {
            break;
        }
        assert!(sent <= added + 2200, "not swept");
        sleep(Duration::from_millis(50));
    }
    // The sweep does not touch the key's idle time: once the server's LRU clock (whole seconds,
    // moved on by its cron) counts two seconds since `mark` was written, the filter has been idle
    // as long, both read in one transaction.
    loop {
        let transaction = [
            vec!["MULTI"],
            vec!["OBJECT", "IDLETIME", "w"],
            vec!["OBJECT", "IDLETIME", "mark"],
            vec!["EXEC"],
        ];
        let idle = common::pipeline(&mut conn, &transaction)
            .pop()
            .unwrap()
            .items();
        let (filter, mark) = (idle[0].int(), idle[1].int());
        assert!(
            filter >= mark,
            "idle for {filter} s, the key written after it {mark} s"
        );
        if mark >= 2 {
            break;
        }
        sleep(Duration::from_millis(100));
    }
    // Both came back to an empty filter.
    assert_eq!(bf_size(&mut conn, "w"), empty);
    replica.catch_up(&primary);
    assert_eq!(bf_size(&mut mirror, "w"), empty);
    assert_eq!(digest(&mut mirror, "w"), digest(&mut conn, "w"));
    // The replica applied the primary's sweep; it sweeps nothing itself.
    assert_eq!(info_bf(&replica, "bf_swept_parts"), 0);
    assert_eq!(
        info_bf(&replica, "bf_expired_generations"),
        info_bf(&primary, "bf_expired_generations")
    );
}

#[test]
fn the_sweep_follows_filters_however_they_reach_their_key() {
    let server = Server::start();
    let mut conn = server.conn();
    // Each key, the database it ends in, and how it got there. The module hears of no keyspace
    // event: the data type's callbacks name what loading, RESTORE and COPY make; a filter that
    // moved is found when it is due, under its name in another database or by a walk over the
    // keys.
    let keys = [
        ("renamed", "0"),
        ("copied", "0"),
        ("copied-away", "6"),
        ("restored", "0"),
        ("restored-away", "4"),
        ("moved", "1"),
        ("swapped", "3"),
        ("reloaded", "0"),
        ("renamed-away", "5"),
    ];
    let sources = ["a", "b", "c", "d", "e", "f", "g", "h", "i"];
    for key in sources {
        ok(
            &mut conn,
            &["BF.RESERVE", key, "0.01", "10000", "WINDOW", "1"],
        );
    }
    let empty = bf_size(&mut conn, "a");
    let first_add = now_ms();
    for key in sources {
        assert!(!madd(&mut conn, key, &names("x", 0, 2000)).is_error());
    }
    let added = now_ms();
    // Reloaded first (every key comes back through RDB loading), then moved about: the names the
    // reload registered go stale.
    ok(&mut conn, &["RENAME", "f", "reloaded"]);
    ok(&mut conn, &["DEBUG", "RELOAD"]);
    ok(&mut conn, &["RENAME", "a", "renamed"]);
    assert_eq!(conn.call(&["COPY", "b", "copied"]), Frame::Int(1));
    assert_eq!(conn.call(&["DEL", "b"]), Frame::Int(1));
    // Into another database (Redis 7.0's COPY does not name it to the module).
    assert_eq!(
        conn.call(&["COPY", "g", "copied-away", "DB", "6"]),
        Frame::Int(1)
    );
    assert_eq!(conn.call(&["DEL", "g"]), Frame::Int(1));
    let payload = conn.call(&["DUMP", "c"]).bytes();
    assert_eq!(conn.call(&["DEL", "c"]), Frame::Int(1));
    assert_eq!(
        conn.call(&[b"RESTORE".as_slice(), b"restored", b"0", &payload]),
        Frame::ok()
    );
    let payload = conn.call(&["DUMP", "h"]).bytes();
    assert_eq!(conn.call(&["DEL", "h"]), Frame::Int(1));
    ok(&mut conn, &["SELECT", "4"]);
    assert_eq!(
        conn.call(&[b"RESTORE".as_slice(), b"restored-away", b"0", &payload]),
        Frame::ok()
    );
    ok(&mut conn, &["SELECT", "0"]);
    ok(&mut conn, &["RENAME", "d", "moved"]);
    assert_eq!(conn.call(&["MOVE", "moved", "1"]), Frame::Int(1));
    ok(&mut conn, &["RENAME", "e", "swapped"]);
    assert_eq!(conn.call(&["MOVE", "swapped", "2"]), Frame::Int(1));
    ok(&mut conn, &["SWAPDB", "2", "3"]);
    // Moved, then renamed where it went: only the walk finds it.
    assert_eq!(conn.call(&["MOVE", "i", "5"]), Frame::Int(1));
    ok(&mut conn, &["SELECT", "5"]);
    ok(&mut conn, &["RENAME", "i", "renamed-away"]);
    ok(&mut conn, &["SELECT", "0"]);
    // Every filter is watched until its part expires, a window after its last item, so not before
    // a second after the first add: the count is checked only where a busy machine left time.
    let watched = info_bf(&server, "bf_sweep_keys");
    let moved = now_ms();
    if moved < first_add + 700 {
        assert_eq!(watched, keys.len() as u64);
    }
    // A second after the adds, every copy has swept its parts, in whichever database it is: the
    // sweep looks within a second of a part's expiry, or of a filter's arrival where a busy
    // machine moved it after that (a lost filter's walk starts a second after a fruitless one).
    sleep_until(added + 1000);
    let deadline = (added + 1000).max(moved) + 2500;
    for (key, db) in keys {
        ok(&mut conn, &["SELECT", db]);
        wait_for_size(&mut conn, key, empty, deadline);
        assert_eq!(generations(&mut conn, key), vec![], "{key}");
    }
    ok(&mut conn, &["SELECT", "0"]);
    assert_eq!(info_bf(&server, "bf_sweep_keys"), 0);
}

#[test]
fn a_promoted_replica_and_an_aof_reload_sweep_what_they_brought() {
    // A replica registers what its full sync loads and what it replays, moves included, and
    // sweeps it once promoted (its primary gone before anything expired: a window of 6 s leaves
    // the full sync time).
    let primary = Server::start();
    let replica = Server::start();
    let mut conn = primary.conn();
    for key in ["synced", "replayed"] {
        ok(
            &mut conn,
            &["BF.RESERVE", key, "0.01", "10000", "WINDOW", "6"],
        );
    }
    let empty = bf_size(&mut conn, "synced");
    assert!(!madd(&mut conn, "synced", &names("x", 0, 2000)).is_error());
    let added = now_ms();
    replica.replicate(&primary);
    assert!(!madd(&mut conn, "replayed", &names("x", 0, 2000)).is_error());
    ok(&mut conn, &["RENAME", "replayed", "replayed-renamed"]);
    replica.catch_up(&primary);
    drop(conn);
    drop(primary);
    let mut mirror = replica.conn();
    // Both watched, unless a busy machine let the primary sweep them before it went (the replica
    // then applied that sweep: nothing is left to watch).
    let watched = info_bf(&replica, "bf_sweep_keys");
    if now_ms() < added + 5000 {
        assert_eq!(watched, 2);
    }
    ok(&mut mirror, &["REPLICAOF", "NO", "ONE"]);
    // Promoted before or after the parts expired, it sweeps them itself: within a second of
    // their expiry, or of the promotion; the deadline only catches a blow-up on a busy machine.
    let deadline = (added + 6000).max(now_ms()) + 10_000;
    sleep_until(added + 6000);
    for key in ["synced", "replayed-renamed"] {
        wait_for_size(&mut mirror, key, empty, deadline);
    }
    assert_eq!(info_bf(&replica, "bf_sweep_keys"), 0);

    // An AOF of commands (BF.LOADCHUNK for each filter), then one with an RDB preamble, loaded
    // again by DEBUG LOADAOF: each filter is registered again as it comes back.
    for preamble in ["no", "yes"] {
        let server = Server::with(
            common::Options::aof_without_preamble().config("aof-use-rdb-preamble", preamble),
        );
        let mut conn = server.conn();
        ok(
            &mut conn,
            &["BF.RESERVE", "w", "0.01", "10000", "WINDOW", "1"],
        );
        assert!(!madd(&mut conn, "w", &names("x", 0, 2000)).is_error());
        let added = now_ms();
        assert!(!conn.call(&["BGREWRITEAOF"]).is_error());
        server.wait_for_aof_rewrite();
        ok(&mut conn, &["DEBUG", "LOADAOF"]);
        // Registered again, unless a busy machine loaded it past its expiry (then the load
        // settled it against the clock, with nothing left to sweep).
        let watched = info_bf(&server, "bf_sweep_keys");
        if now_ms() < added + 900 {
            assert_eq!(watched, 1, "preamble {preamble}");
        }
        sleep_until(added + 1000);
        wait_for_size(&mut conn, "w", empty, added + 5000);
    }
}

/// `used_cpu_sys` + `used_cpu_user` of a server, in milliseconds.
fn cpu_ms(conn: &mut Conn) -> f64 {
    let info = conn.call(&["INFO", "cpu"]).text();
    let field = |name: &str| -> f64 {
        info.lines()
            .find_map(|line| line.strip_prefix(name))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    };
    (field("used_cpu_sys:") + field("used_cpu_user:")) * 1000.0
}

#[test]
fn a_replica_waits_for_its_primarys_sweep_without_spinning() {
    let primary = Server::start();
    let replica = Server::start();
    replica.replicate(&primary);
    let mut conn = primary.conn();
    let mut mirror = replica.conn();
    ok(
        &mut conn,
        &["BF.RESERVE", "w", "0.01", "1000", "WINDOW", "1"],
    );
    assert!(!madd(&mut conn, "w", &names("a", 0, 100)).is_error());
    let added = now_ms();
    replica.catch_up(&primary);
    // The replica knows the key and when it is due; past that, it leaves the sweep to its
    // primary, and looks again a second later, not every millisecond.
    assert_eq!(info_bf(&replica, "bf_sweep_keys"), 1);
    sleep_until(added + 1500);
    // Against a server of the same binary with nothing to sweep, over the same 3 s: servers idle
    // at different rates (Redis 8.2 spent 10 to 15 ms in 3 s on its own crons here, 7.0 about
    // 6), and a replica that spun on the key would spend hundreds.
    let idle = Server::start();
    let mut idle_conn = idle.conn();
    let (before, idle_before) = (cpu_ms(&mut mirror), cpu_ms(&mut idle_conn));
    sleep(Duration::from_secs(3));
    let spent = cpu_ms(&mut mirror) - before;
    let baseline = cpu_ms(&mut idle_conn) - idle_before;
    assert!(
        spent < baseline + 50.0,
        "the idle replica used {spent} ms of CPU in 3 s, a server with no key {baseline} ms"
    );
    replica.catch_up(&primary);
    assert_eq!(digest(&mut mirror, "w"), digest(&mut conn, "w"));
}
