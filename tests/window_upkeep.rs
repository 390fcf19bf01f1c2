//! The sweep's bookkeeping and filters of the first release of windowed filters (issue 22, from
//! its review): the sweep forgets keys that go away, leaves a WATCH alone when it finds nothing to
//! drop, waits while writes are paused; a first-release filter's key loses the time to live that
//! release gave it (items added since must outlive it), and a replica applies the writes to such a
//! filter even below today's error-rate floor.

mod common;

use common::payload::{Envelope, Field};
use common::{digest, info_bf, now_ms, ok, sleep_until, Conn, Frame, Server};
use std::thread::sleep;
use std::time::Duration;

/// Waits up to `millis` for `INFO bf` field `field` to read `value` (a deadline that only catches
/// a value that never comes: a busy machine's lazy-free thread may take seconds).
fn wait_for_info(server: &Server, field: &str, value: u64, millis: u64) {
    let deadline = now_ms() + millis;
    while info_bf(server, field) != value {
        assert!(
            now_ms() < deadline,
            "{field} is {}, not {value}",
            info_bf(server, field)
        );
        sleep(Duration::from_millis(20));
    }
}

#[test]
fn the_sweep_forgets_keys_deleted_expired_renamed_moved_or_flushed() {
    let server = Server::start();
    let mut conn = server.conn();
    for key in ["a", "b", "c", "d", "e", "f"] {
        assert_eq!(
            conn.call(&["BF.INSERT", key, "WINDOW", "600", "ITEMS", "x"]),
            Frame::Array(vec![Frame::Int(1)])
        );
    }
    assert_eq!(info_bf(&server, "bf_sweep_keys"), 6);
    assert_eq!(conn.call(&["DEL", "a"]), Frame::Int(1));
    assert_eq!(conn.call(&["UNLINK", "b"]), Frame::Int(1));
    // A filter leaves the registry as it is freed, which a server that frees lazily (Redis 8 and
    // Valkey flush so by default) does on another thread a moment later.
    wait_for_info(&server, "bf_sweep_keys", 4, 10_000);
    assert_eq!(conn.call(&["PEXPIRE", "c", "1"]), Frame::Int(1));
    sleep(Duration::from_millis(5));
    assert_eq!(conn.call(&["EXISTS", "c"]), Frame::Int(0));
    // Expired, and freed (lazily where the server frees expired keys so).
    wait_for_info(&server, "bf_sweep_keys", 3, 10_000);
    // Renamed and moved keys are followed, not counted twice.
    ok(&mut conn, &["RENAME", "d", "d2"]);
    assert_eq!(conn.call(&["MOVE", "e", "1"]), Frame::Int(1));
    assert_eq!(info_bf(&server, "bf_sweep_keys"), 3);
    ok(&mut conn, &["FLUSHDB"]);
    wait_for_info(&server, "bf_sweep_keys", 1, 10_000);
    ok(&mut conn, &["FLUSHALL"]);
    wait_for_info(&server, "bf_sweep_keys", 0, 10_000);
    // Keys of other types come and go without a trace.
    ok(&mut conn, &["SET", "s", "1"]);
    assert_eq!(conn.call(&["DEL", "s", "missing"]), Frame::Int(1));
    assert_eq!(info_bf(&server, "bf_sweep_keys"), 0);
}

#[test]
fn a_sweep_that_finds_nothing_to_drop_leaves_a_watch_alone() {
    let server = Server::start();
    let mut conn = server.conn();
    let mut other = server.conn();
    // The sweep looks at a filter of the first release as soon as it arrives (its key may have
    // that release's time to live to remove). This one has a time to live of its user's own and
    // nothing expired: the sweep finds nothing to do. RESTORE and WATCH go in one read, so that
    // the look comes after both.
    let (payload, expires) = first_release_payload(&mut conn, 600, 0.01, &["y"]);
    let own = (expires + 10_000).to_string();
    let replies = common::pipeline(
        &mut conn,
        &[
            vec![
                b"RESTORE".as_slice(),
                b"k",
                own.as_bytes(),
                &payload,
                b"ABSTTL",
            ],
            vec![b"WATCH".as_slice(), b"k"],
        ],
    );
    assert_eq!(replies, vec![Frame::ok(), Frame::ok()]);
    sleep(Duration::from_millis(300));
    assert_eq!(info_bf(&server, "bf_swept_parts"), 0);
    assert_eq!(info_bf(&server, "bf_sweep_keys"), 1);
    ok(&mut conn, &["MULTI"]);
    assert_eq!(conn.call(&["BF.EXISTS", "k", "y"]), Frame::simple("QUEUED"));
    assert_eq!(conn.call(&["EXEC"]), Frame::Array(vec![Frame::Int(1)]));
    // A real change still fails a WATCH, as any write does.
    ok(&mut conn, &["WATCH", "k"]);
    assert!(!other.call(&["BF.ADD", "k", "z"]).is_error());
    ok(&mut conn, &["MULTI"]);
    assert_eq!(conn.call(&["BF.EXISTS", "k", "z"]), Frame::simple("QUEUED"));
    assert_eq!(conn.call(&["EXEC"]), Frame::NullArray);
}

#[test]
fn the_sweep_waits_while_writes_are_paused() {
    let server = Server::start();
    let mut conn = server.conn();
    assert!(!conn
        .call(&["BF.INSERT", "w", "WINDOW", "1", "ITEMS", "x"])
        .is_error());
    let added = now_ms();
    // Paused for longer than the test can take, and unpaused by the test: a busy machine that
    // wakes the test late cannot see the pause end before the check.
    ok(&mut conn, &["CLIENT", "PAUSE", "600000", "WRITE"]);
    // The part expires by 1.25 s; the sweep would drop it within a second after.
    sleep_until(added + 2500);
    assert_eq!(info_bf(&server, "bf_swept_parts"), 0);
    // Reads still hide what expired.
    assert_eq!(conn.call(&["BF.EXISTS", "w", "x"]), Frame::Int(0));
    ok(&mut conn, &["CLIENT", "UNPAUSE"]);
    wait_for_info(&server, "bf_swept_parts", 1, 10_000);
}

/// A windowed filter as the first release stored it (encoding version 102): window `window`
/// seconds, capacity 16 at `error`, one generation in the current slot holding `items`; and when
/// that release made its key expire (with its newest generation, a window after its slot). Its
/// sub-filter is sized as that release sized a generation's first one, which a plain filter of
/// capacity 5 at `error * 5/11` is (the same sub-filter, the same fields).
fn first_release_payload(
    conn: &mut Conn,
    window: u64,
    error: f64,
    items: &[&str],
) -> (Vec<u8>, u64) {
    let generation_error = error * 5.0 / 11.0;
    // The bit arrays as plain strings, which the payload reader takes (not LZF-compressed).
    ok(conn, &["CONFIG", "SET", "rdbcompression", "no"]);
    ok(
        conn,
        &["BF.RESERVE", "plain", &format!("{generation_error:?}"), "5"],
    );
    for item in items {
        assert_eq!(conn.call(&["BF.ADD", "plain", item]), Frame::Int(1));
    }
    let dump = conn.call(&["DUMP", "plain"]).bytes();
    assert_eq!(conn.call(&["DEL", "plain"]), Frame::Int(1));
    let envelope = Envelope::from_dump(&dump);
    let chain = envelope.fields(&dump);
    // A chain: kind, hash family, expansion, then its sub-filters and the restoring field.
    assert!(matches!(chain[0], Field::Unsigned(0)));
    let slot_ms = window * 250;
    let slot = now_ms() / slot_ms;
    let mut fields = vec![
        Field::Unsigned(1),
        Field::Unsigned(window),
        Field::Unsigned(16),
        Field::Double(error),
        Field::Unsigned(2),
        Field::Unsigned(1),
        Field::Unsigned(slot),
    ];
    fields.extend_from_slice(&chain[3..]);
    let payload = envelope.with_encoding_version(102).payload(&fields);
    (payload, (slot + 5) * slot_ms)
}

#[test]
fn a_first_release_filters_key_loses_that_releases_time_to_live() {
    let primary = Server::start();
    let replica = Server::start();
    replica.replicate(&primary);
    let mut conn = primary.conn();
    let mut mirror = replica.conn();
    let (payload, expires) = first_release_payload(&mut conn, 60, 0.01, &["old"]);
    let expiry = expires.to_string();
    // Restored as that release's key was: expiring with its generation. The sweep looks at it at
    // once and removes that time to live, on the replica too.
    assert_eq!(
        conn.call(&[
            b"RESTORE".as_slice(),
            b"idle",
            expiry.as_bytes(),
            &payload,
            b"ABSTTL"
        ]),
        Frame::ok()
    );
    let deadline = now_ms() + 10_000;
    while conn.call(&["PTTL", "idle"]) != Frame::Int(-1) {
        assert!(now_ms() < deadline, "the first release's TTL stayed");
        sleep(Duration::from_millis(20));
    }
    // A write removes it too (here before the sweep can run), and says so to the replica.
    ok(&mut conn, &["MULTI"]);
    for command in [
        vec![
            b"RESTORE".as_slice(),
            b"busy",
            expiry.as_bytes(),
            &payload,
            b"ABSTTL",
        ],
        vec![b"BF.ADD".as_slice(), b"busy", b"new"],
        vec![b"PTTL".as_slice(), b"busy"],
    ] {
        assert_eq!(conn.call(&command), Frame::simple("QUEUED"));
    }
    assert_eq!(
        conn.call(&["EXEC"]),
        Frame::Array(vec![Frame::ok(), Frame::Int(1), Frame::Int(-1)])
    );
    // A time to live of the user's own (not the first release's) stays.
    let own = (expires + 10_000).to_string();
    assert_eq!(
        conn.call(&[
            b"RESTORE".as_slice(),
            b"owned",
            own.as_bytes(),
            &payload,
            b"ABSTTL"
        ]),
        Frame::ok()
    );
    assert!(!conn.call(&["BF.ADD", "owned", "new"]).is_error());
    replica.catch_up(&primary);
    for key in ["idle", "busy", "owned"] {
        assert_eq!(
            mirror.call(&["PTTL", key]).int() == -1,
            key != "owned",
            "{key}"
        );
        assert_eq!(digest(&mut mirror, key), digest(&mut conn, key), "{key}");
        assert_eq!(mirror.call(&["BF.EXISTS", key, "old"]), Frame::Int(1));
    }
    assert!(conn.call(&["PTTL", "owned"]).int() > 0);
}

#[test]
fn a_replica_applies_writes_to_a_first_release_filter_below_todays_error_floor() {
    let primary = Server::start();
    let replica = Server::start();
    replica.replicate(&primary);
    let mut conn = primary.conn();
    let mut mirror = replica.conn();
    // Below what WINDOW takes today.
    let refused = conn.call(&["BF.RESERVE", "new", "1e-292", "16", "WINDOW", "60"]);
    assert!(
        common::error_text(&refused).starts_with("ERR bad error rate"),
        "{refused:?}"
    );
    let (payload, _) = first_release_payload(&mut conn, 60, 1e-292, &["old"]);
    assert_eq!(
        conn.call(&[b"RESTORE".as_slice(), b"w", b"0", &payload]),
        Frame::ok()
    );
    assert_eq!(
        conn.call(&["BF.MADD", "w", "a", "b"]),
        Frame::Array(vec![Frame::Int(1), Frame::Int(1)])
    );
    replica.catch_up(&primary);
    assert_eq!(
        mirror.call(&["BF.MEXISTS", "w", "old", "a", "b", "c"]),
        Frame::Array(vec![
            Frame::Int(1),
            Frame::Int(1),
            Frame::Int(1),
            Frame::Int(0)
        ])
    );
    assert_eq!(digest(&mut mirror, "w"), digest(&mut conn, "w"));
    assert!(
        !replica.log().contains("bad error rate"),
        "{}",
        replica.log()
    );
}
