//! Every copy of a windowed filter (`WINDOW seconds`) has the parts and generations of the
//! original, on a real server: a replica and an AOF replay agree with the primary across parts and
//! generations (also when a write is refused after dropping expired parts), and so do an AOF
//! rewrite, DEBUG RELOAD, chunk replay, COPY and RESTORE mid-window; the time a windowed write
//! carries (AT) is taken only from a primary or the AOF. The filters themselves: `window.rs`.

mod common;

use common::{
    bf_size, debug_lines, digest, error_text, exists, generations, info_bf, madd, names, now_ms,
    ok, scandump, sleep_into_next_slot, sleep_until, Conn, Frame, Options, Server,
};
use std::thread::sleep;
use std::time::Duration;

/// Writes `item:<next>...` in eight phases 400 ms apart to two filters of a `window`-second
/// window, one reserved (capacity 40, parts of 7 items) and one created by BF.INSERT (capacity
/// 100): new generations, parts past the budget, expiry. `check` runs after each phase.
fn eight_phases(conn: &mut Conn, window: &str, mut check: impl FnMut(&mut Conn, usize)) {
    ok(
        conn,
        &[
            "BF.RESERVE",
            "r",
            "0.01",
            "40",
            "WINDOW",
            window,
            "EXPANSION",
            "2",
        ],
    );
    let mut next = 0;
    for phase in 0..8 {
        let items = names("item", next, 30);
        next += 30;
        let mut command = vec!["BF.INSERT", "i", "WINDOW", window, "ERROR", "0.05", "ITEMS"];
        command.extend(items.iter().map(String::as_str));
        assert!(!conn.call(&command).is_error());
        assert!(!madd(conn, "r", &items).is_error());
        check(conn, phase);
        if phase < 7 {
            sleep(Duration::from_millis(400));
        }
    }
    // A generation took more than the window's capacity: a part past its budget, grown by 2.
    assert!(debug_lines(conn, "r")
        .iter()
        .any(|line| line.contains("capacity:14 ")));
}

/// BF.DEBUG and DEBUG DIGEST-VALUE of each key.
fn states(conn: &mut Conn, keys: &[&str]) -> Vec<(Frame, Vec<String>)> {
    keys.iter()
        .map(|key| (digest(conn, key), debug_lines(conn, key)))
        .collect()
}

#[test]
fn a_replica_makes_the_same_parts_as_its_primary() {
    let primary = Server::start();
    let replica = Server::start();
    replica.replicate(&primary);
    let mut conn = primary.conn();
    let mut mirror = replica.conn();
    eight_phases(&mut conn, "2", |conn, phase| {
        replica.catch_up(&primary);
        assert_eq!(
            states(&mut mirror, &["r", "i"]),
            states(conn, &["r", "i"]),
            "phase {phase}"
        );
    });
    assert!(info_bf(&primary, "bf_expired_generations") > 0);

    // Without any write from the primary, the replica hides what expired by its own clock.
    ok(
        &mut conn,
        &["BF.RESERVE", "q", "0.01", "100", "WINDOW", "2"],
    );
    sleep_into_next_slot(500, 50);
    assert_eq!(conn.call(&["BF.ADD", "q", "old"]), Frame::Int(1));
    let old = now_ms();
    sleep_until(old + 1000);
    assert_eq!(conn.call(&["BF.ADD", "q", "new"]), Frame::Int(1));
    replica.catch_up(&primary);
    sleep_until(old + 2000 + 20);
    for reader in [&mut mirror, &mut conn] {
        assert_eq!(exists(reader, "q", "old"), 0);
        assert_eq!(exists(reader, "q", "new"), 1);
        assert_eq!(reader.call(&["BF.CARD", "q"]), Frame::Int(1));
        assert_eq!(generations(reader, "q").len(), 1);
    }
    // The primary drops it (its next write, or its sweep), and the replica with it.
    assert_eq!(conn.call(&["BF.ADD", "q", "newer"]), Frame::Int(1));
    replica.catch_up(&primary);
    assert_eq!(states(&mut mirror, &["q"]), states(&mut conn, &["q"]));
    assert_eq!(
        info_bf(&replica, "bf_expired_generations"),
        info_bf(&primary, "bf_expired_generations")
    );
    // A new replica (a full sync) gets the same. "r" and "i" have expired and been swept: their
    // keys stay, empty.
    let late = Server::start();
    late.replicate(&primary);
    assert_eq!(
        states(&mut late.conn(), &["q", "r", "i"]),
        states(&mut conn, &["q", "r", "i"])
    );
    assert_eq!(conn.call(&["EXISTS", "r", "i"]), Frame::Int(2));
}

#[test]
fn an_aof_replay_makes_the_same_parts_whenever_it_runs() {
    let options = Options::default()
        .config("appendonly", "yes")
        .config("appendfsync", "always");
    let mut server = Server::with(options.clone());
    let mut conn = server.conn();
    // A 10-second window: nothing expires before the replay, which runs later.
    eight_phases(&mut conn, "10", |_, _| {});
    let before = states(&mut conn, &["r", "i"]);
    drop(conn);
    server.restart_with(options);
    let mut conn = server.conn();
    assert_eq!(states(&mut conn, &["r", "i"]), before);
    let text = server.aof_text();
    assert!(
        text.contains(
            "\r\nWINDOW\r\n$2\r\n10\r\n$6\r\nLAYOUT\r\n$7\r\nCLASSIC\r\n$2\r\nAT\r\n$13\r\n"
        ),
        "no BF.INSERT ... WINDOW 10 LAYOUT CLASSIC AT <ms> in the AOF"
    );
}

#[test]
fn single_adds_within_a_slot_reach_a_replica_and_the_aof_with_their_time() {
    let options = Options::default()
        .config("appendonly", "yes")
        .config("appendfsync", "always");
    let mut primary = Server::with(options.clone());
    let replica = Server::start();
    replica.replicate(&primary);
    let mut conn = primary.conn();
    // Slots of 15 minutes: after the first add, the others land in its generation's part, which
    // has room (BF.ADD's lean path, which a held item leaves unchanged and unpropagated).
    ok(
        &mut conn,
        &["BF.RESERVE", "w", "0.01", "1000", "WINDOW", "3600"],
    );
    assert_eq!(conn.call(&["BF.ADD", "w", "first"]), Frame::Int(1));
    let mut last = (0, 0);
    for item in ["a", "b", "c"] {
        let sent = now_ms();
        assert_eq!(conn.call(&["BF.ADD", "w", item]), Frame::Int(1));
        last = (sent, now_ms());
    }
    assert_eq!(conn.call(&["BF.ADD", "w", "a"]), Frame::Int(0));
    assert_eq!(conn.call(&["BF.ADD", "w", "first"]), Frame::Int(0));
    // One generation of four items, expiring an hour after the last new one.
    let listed = generations(&mut conn, "w");
    assert_eq!(listed.len(), 1, "{listed:?}");
    let (_, until, size) = listed[0];
    assert_eq!(size, 4);
    assert!(
        (last.0 + 3_600_000..=last.1 + 3_600_000).contains(&until),
        "{until} {last:?}"
    );
    replica.catch_up(&primary);
    let before = states(&mut conn, &["w"]);
    assert_eq!(states(&mut replica.conn(), &["w"]), before);
    // Each new item went out with its time, the held ones not at all.
    let text = primary.aof_text();
    assert_eq!(text.matches("\r\nBF.INSERT\r\n").count(), 4, "{text}");
    assert_eq!(text.matches("\r\nAT\r\n").count(), 4, "{text}");
    drop(conn);
    primary.restart_with(options);
    assert_eq!(states(&mut primary.conn(), &["w"]), before);
}

#[test]
fn a_write_refused_after_dropping_expired_parts_still_reaches_replicas() {
    let primary = Server::start();
    let replica = Server::start();
    replica.replicate(&primary);
    let mut conn = primary.conn();
    ok(
        &mut conn,
        &["BF.RESERVE", "w", "0.01", "2000", "WINDOW", "2"],
    );
    sleep_into_next_slot(500, 50);
    assert_eq!(conn.call(&["BF.ADD", "w", "a"]), Frame::Int(1));
    // After the reply: the server took `a` no later than this.
    let first = now_ms();
    let one = bf_size(&mut conn, "w");
    sleep_into_next_slot(500, 50);
    assert_eq!(conn.call(&["BF.ADD", "w", "b"]), Frame::Int(1));
    let two = bf_size(&mut conn, "w");
    // Room for one generation only from now on (the smallest ceiling there is).
    assert!(one <= 1024 && two > 1024, "{one} {two}");
    ok(&mut conn, &["CONFIG", "SET", "bf.max-filter-bytes", "1024"]);
    sleep_until(first + 2000 + 50);
    // The first part has expired: dropped (by this write, or by the sweep before it); the write
    // then finds no room for a new generation.
    let refused = conn.call(&["BF.ADD", "w", "c"]);
    assert!(
        error_text(&refused).starts_with("ERR filter would use "),
        "{refused:?}"
    );
    assert_eq!(generations(&mut conn, "w").len(), 1);
    replica.catch_up(&primary);
    let mut mirror = replica.conn();
    assert_eq!(states(&mut mirror, &["w"]), states(&mut conn, &["w"]));
    assert_eq!(info_bf(&replica, "bf_expired_generations"), 1);
}

#[test]
fn an_aof_rewrite_debug_reload_chunks_copy_and_restore_keep_the_parts() {
    let options = Options::aof_without_preamble();
    let mut server = Server::with(options.clone());
    let mut conn = server.conn();
    ok(&mut conn, &["BF.RESERVE", "w", "0.01", "50", "WINDOW", "5"]);
    sleep_into_next_slot(1250, 50);
    let items = names("item", 0, 60);
    for (index, half) in items.chunks(30).enumerate() {
        if index > 0 {
            sleep_into_next_slot(1250, 50);
        }
        assert!(!madd(&mut conn, "w", half).is_error());
    }
    let expected_generations = generations(&mut conn, "w");
    assert_eq!(expected_generations.len(), 2);
    let expected = (digest(&mut conn, "w"), debug_lines(&mut conn, "w"));

    // DEBUG RELOAD (an RDB round trip).
    ok(&mut conn, &["DEBUG", "RELOAD"]);
    assert_eq!(
        (digest(&mut conn, "w"), debug_lines(&mut conn, "w")),
        expected
    );

    // SCANDUMP / LOADCHUNK: the header carries the generations and their parts' expiry.
    for (iterator, data) in &scandump(&mut conn, "w") {
        assert_eq!(
            common::loadchunk(&mut conn, "chunks", *iterator, data),
            Frame::ok()
        );
    }
    // COPY, and DUMP / RESTORE, as MIGRATE does.
    assert_eq!(conn.call(&["COPY", "w", "copy"]), Frame::Int(1));
    let payload = conn.call(&["DUMP", "w"]).bytes();
    assert_eq!(
        conn.call(&[b"RESTORE".as_slice(), b"restored", b"0", &payload]),
        Frame::ok()
    );
    for key in ["chunks", "copy", "restored"] {
        assert_eq!(
            (digest(&mut conn, key), debug_lines(&mut conn, key)),
            expected,
            "{key}"
        );
        assert_eq!(conn.call(&["PTTL", key]), Frame::Int(-1), "{key}");
    }
    let mut probe: Vec<&str> = vec!["BF.MEXISTS", "restored"];
    probe.extend(items.iter().map(String::as_str));
    probe.push("absent");
    let mut answers = vec![Frame::Int(1); 60];
    answers.push(Frame::Int(0));
    assert_eq!(conn.call(&probe), Frame::Array(answers));

    // An AOF rewrite (no RDB preamble: the module's own commands) and a restart.
    assert!(!conn.call(&["BGREWRITEAOF"]).is_error());
    server.wait_for_aof_rewrite();
    drop(conn);
    server.restart_with(options);
    let mut conn = server.conn();
    for key in ["w", "chunks", "copy", "restored"] {
        assert_eq!(
            (digest(&mut conn, key), debug_lines(&mut conn, key)),
            expected,
            "{key}"
        );
    }
    assert!(
        now_ms() < expected_generations[0].1,
        "too slow for a 5-second window"
    );
}

#[test]
fn at_is_taken_only_from_a_primary_or_the_aof() {
    let server = Server::start();
    let mut conn = server.conn();
    let error = Frame::error(
        "ERR AT is only taken from a primary or the AOF: a windowed filter keeps the primary's time",
    );
    let at = (now_ms() - 60_000).to_string();
    let command = ["BF.INSERT", "w", "WINDOW", "2", "AT", &at, "ITEMS", "x"];
    assert_eq!(conn.call(&command), error);
    ok(&mut conn, &["MULTI"]);
    assert_eq!(conn.call(&command), Frame::simple("QUEUED"));
    assert_eq!(conn.call(&["EXEC"]), Frame::Array(vec![error.clone()]));
    let script =
        format!("return redis.pcall('BF.INSERT', 'w', 'WINDOW', '2', 'AT', '{at}', 'ITEMS', 'x')");
    assert_eq!(conn.call(&["EVAL", &script, "0"]), error);
    assert_eq!(
        conn.call(&["BF.INSERT", "w", "AT", "soon", "ITEMS", "x"]),
        Frame::error("ERR bad time: AT takes a whole number of milliseconds")
    );
    assert_eq!(conn.call(&["EXISTS", "w"]), Frame::Int(0));
    assert_eq!(info_bf(&server, "bf_filters"), 0);
}
