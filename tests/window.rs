//! Windowed filters (`WINDOW seconds`) on a real server, on windows of 1 to 5 seconds: the
//! grammar, an item's lifetime (at least a window, at most five quarters of one), BF.CARD and
//! BF.INFO, the key's time to live, replicas and AOF replays agreeing with the primary across
//! changes of generation, DEBUG RELOAD, chunk replay, COPY and RESTORE mid-window, the size limits
//! on a new generation, AT refused from clients, INFO bf, and memory over many windows.
//!
//! The module keeps four generations per window: the slot of a generation is a quarter of the
//! window, counted from the Unix epoch, and the generation of slot k expires at (k + 5) slots.
//! Times here are the test's clock, which is the server's (same machine); each bound leaves
//! `SLACK` for a command's round trip and scheduling on a busy machine.

mod common;

use common::{boolean, debug_lines, digest, scandump, used_memory, Conn, Frame, Options, Server};
use std::thread::sleep;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch.
fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// Sleeps until the clock reads `at` (milliseconds since the epoch).
fn sleep_until(at: u64) {
    let now = now_ms();
    if at > now {
        sleep(Duration::from_millis(at - now));
    }
}

/// Sleeps until `offset` milliseconds into the next slot of `slot` milliseconds.
fn sleep_into_next_slot(slot: u64, offset: u64) {
    sleep_until((now_ms() / slot + 1) * slot + offset);
}

/// Room for a round trip and scheduling delays, in milliseconds.
const SLACK: u64 = 150;

fn ok(conn: &mut Conn, command: &[&str]) {
    assert_eq!(conn.call(command), Frame::ok(), "{command:?}");
}

/// `BF.ADD`, timed: (the reply, the time just before sending, the time just after the reply).
fn timed_add(conn: &mut Conn, key: &str, item: &str) -> (Frame, u64, u64) {
    let before = now_ms();
    let reply = conn.call(&["BF.ADD", key, item]);
    (reply, before, now_ms())
}

/// The text of an error reply; panics on anything else.
fn error_text(reply: &Frame) -> String {
    match reply {
        Frame::Error(text) => text.clone(),
        other => panic!("not an error: {other:?}"),
    }
}

fn exists(conn: &mut Conn, key: &str, item: &str) -> i64 {
    conn.call(&["BF.EXISTS", key, item]).int()
}

fn info_bf(server: &Server, field: &str) -> u64 {
    server.info_field("bf", field).parse().unwrap()
}

/// The `generation from:<ms> until:<ms> size:<n>` lines of BF.DEBUG, as (from, until, size).
fn generations(conn: &mut Conn, key: &str) -> Vec<(u64, u64, u64)> {
    debug_lines(conn, key)
        .iter()
        .filter_map(|line| line.strip_prefix("generation "))
        .map(|line| {
            let fields: Vec<u64> = line
                .split(' ')
                .map(|field| field.split_once(':').unwrap().1.parse().unwrap())
                .collect();
            (fields[0], fields[1], fields[2])
        })
        .collect()
}

#[test]
fn reserve_and_insert_take_a_window_and_refuse_bad_ones() {
    let server = Server::start();
    let mut conn = server.conn();
    // Options in any order and letter case, with the other options of each command.
    ok(
        &mut conn,
        &["BF.RESERVE", "a", "0.01", "100", "WINDOW", "60"],
    );
    ok(
        &mut conn,
        &[
            "BF.RESERVE",
            "b",
            "0.01",
            "100",
            "window",
            "1",
            "EXPANSION",
            "3",
        ],
    );
    ok(
        &mut conn,
        &[
            "BF.RESERVE",
            "c",
            "0.01",
            "100",
            "NONSCALING",
            "WINDOW",
            "315576000",
        ],
    );
    assert_eq!(
        conn.call(&[
            "BF.INSERT",
            "d",
            "WINDOW",
            "2",
            "CAPACITY",
            "50",
            "ERROR",
            "0.001",
            "ITEMS",
            "x",
            "y"
        ]),
        Frame::Array(vec![Frame::Int(1), Frame::Int(1)])
    );
    for (key, window, capacity, expansion) in [
        ("a", 60, 100, 4),
        ("b", 1, 100, 3),
        ("c", 315_576_000, 100, 0),
        ("d", 2, 50, 4),
    ] {
        let info = conn.call(&["BF.INFO", key]).items();
        assert_eq!(info.len(), 12, "{key}: {info:?}");
        assert_eq!(info[0], Frame::simple("Capacity"));
        assert_eq!(info[1], Frame::Int(capacity), "{key}");
        assert_eq!(info[8], Frame::simple("Expansion rate"));
        let expansion = if expansion == 0 {
            Frame::NullBulk
        } else {
            Frame::Int(expansion)
        };
        assert_eq!(info[9], expansion, "{key}");
        assert_eq!(info[10], Frame::simple("Window"));
        assert_eq!(info[11], Frame::Int(window), "{key}");
        assert_eq!(
            conn.call(&["BF.INFO", key, "WINDOW"]),
            Frame::Array(vec![Frame::Int(window)]),
            "{key}"
        );
    }
    // WINDOW on an existing filter is a creation option: ignored, like CAPACITY.
    assert_eq!(
        conn.call(&["BF.INSERT", "d", "WINDOW", "9", "ITEMS", "z"]),
        Frame::Array(vec![Frame::Int(1)])
    );
    assert_eq!(
        conn.call(&["BF.INFO", "d", "WINDOW"]),
        Frame::Array(vec![Frame::Int(2)])
    );

    let bad_window =
        "ERR bad window: must be a whole number of seconds from 1 to 315576000 (ten years)";
    let refused: [(&[&str], String); 10] = [
        (
            &["BF.RESERVE", "e", "0.01", "100", "WINDOW", "0"],
            bad_window.into(),
        ),
        (
            &["BF.RESERVE", "e", "0.01", "100", "WINDOW", "315576001"],
            bad_window.into(),
        ),
        (
            &["BF.RESERVE", "e", "0.01", "100", "WINDOW", "1.5"],
            bad_window.into(),
        ),
        (
            &["BF.RESERVE", "e", "0.01", "100", "WINDOW", "-1"],
            bad_window.into(),
        ),
        (
            &["BF.RESERVE", "e", "0.01", "100", "WINDOW", "ten"],
            bad_window.into(),
        ),
        (
            &["BF.RESERVE", "e", "0.01", "100", "WINDOW"],
            "ERR option WINDOW needs a value".into(),
        ),
        (
            &[
                "BF.RESERVE",
                "e",
                "0.01",
                "100",
                "WINDOW",
                "2",
                "WINDOW",
                "3",
            ],
            "ERR option WINDOW given more than once".into(),
        ),
        (
            &[
                "BF.RESERVE",
                "e",
                "0.01",
                "100",
                "NONSCALING",
                "WINDOW",
                "2",
                "EXPANSION",
                "2",
            ],
            "ERR EXPANSION cannot be used with NONSCALING".into(),
        ),
        (
            &["BF.INSERT", "e", "WINDOW", "0", "ITEMS", "x"],
            bad_window.into(),
        ),
        (
            &["BF.INSERT", "e", "WINDOW", "2", "NOCREATE", "ITEMS", "x"],
            "ERR not found".into(),
        ),
    ];
    for (command, error) in refused {
        assert_eq!(
            conn.call(command),
            Frame::Error(error.clone()),
            "{command:?}"
        );
    }
    // The error rate a window can take: its generations share it out, so the floor is 11/5 of a
    // plain filter's (the message says how low).
    let small = error_text(&conn.call(&["BF.RESERVE", "probe", "1e-307", "100", "WINDOW", "2"]));
    assert!(
        small.starts_with("ERR bad error rate: must be a number from 1.9")
            && small.ends_with("e-307 up to, not including, 1 for a windowed filter"),
        "{small}"
    );
    ok(&mut conn, &["BF.RESERVE", "plain", "1e-307", "100"]);
    assert_eq!(conn.call(&["DEL", "plain"]), Frame::Int(1));
    for key in ["e", "probe"] {
        assert_eq!(conn.call(&["EXISTS", key]), Frame::Int(0), "{key}");
    }
    assert_eq!(info_bf(&server, "bf_windowed_filters"), 4);
    assert_eq!(info_bf(&server, "bf_filters"), 4);
}

#[test]
fn info_has_a_window_field_for_windowed_filters_only_in_both_protocols() {
    let server = Server::start();
    for (protocol, mut conn) in server.both() {
        let (plain, windowed) = (format!("plain{protocol}"), format!("windowed{protocol}"));
        ok(&mut conn, &["BF.RESERVE", &plain, "0.01", "100"]);
        ok(
            &mut conn,
            &["BF.RESERVE", &windowed, "0.01", "100", "WINDOW", "30"],
        );
        let fields = |reply: Frame| -> Vec<String> {
            match reply {
                Frame::Map(pairs) => pairs.iter().map(|(name, _)| name.text()).collect(),
                Frame::Array(items) => items.iter().step_by(2).map(Frame::text).collect(),
                other => panic!("{other:?}"),
            }
        };
        let usual = [
            "Capacity",
            "Size",
            "Number of filters",
            "Number of items inserted",
            "Expansion rate",
        ];
        assert_eq!(fields(conn.call(&["BF.INFO", &plain])), usual);
        let mut with_window = usual.to_vec();
        with_window.push("Window");
        assert_eq!(fields(conn.call(&["BF.INFO", &windowed])), with_window);
        let answer = conn.call(&["BF.INFO", &windowed, "WINDOW"]);
        let plain_answer = conn.call(&["BF.INFO", &plain, "WINDOW"]);
        // One field: an array of one in RESP2, a map of one in RESP3 (as for the others).
        let window = Frame::simple("Window");
        if protocol == 2 {
            assert_eq!(answer, Frame::Array(vec![Frame::Int(30)]));
            assert_eq!(plain_answer, Frame::Array(vec![Frame::NullBulk]));
        } else {
            assert_eq!(answer, Frame::Map(vec![(window.clone(), Frame::Int(30))]));
            assert_eq!(plain_answer, Frame::Map(vec![(window, Frame::Null)]));
        }
        // The other commands work unchanged, and answer in the protocol's booleans.
        assert_eq!(
            conn.call(&["BF.ADD", &windowed, "x"]),
            boolean(protocol, true)
        );
        assert_eq!(
            conn.call(&["BF.ADD", &windowed, "x"]),
            boolean(protocol, false)
        );
        assert_eq!(
            conn.call(&["BF.EXISTS", &windowed, "x"]),
            boolean(protocol, true)
        );
        assert_eq!(conn.call(&["BF.CARD", &windowed]), Frame::Int(1));
    }
}

#[test]
fn an_item_lives_at_least_a_window_and_at_most_five_quarters_of_one() {
    let server = Server::start();
    let mut conn = server.conn();
    ok(
        &mut conn,
        &["BF.RESERVE", "w", "0.01", "100", "WINDOW", "2"],
    );
    // A keeper in the next slot keeps the key alive past the items' expiry.
    sleep_into_next_slot(500, 100);
    let (reply, a_sent, a_done) = timed_add(&mut conn, "w", "a");
    assert_eq!(reply, Frame::Int(1));
    // Re-added a second later: answered "held", and its life is not extended.
    sleep_until(a_sent + 1000);
    assert_eq!(conn.call(&["BF.ADD", "w", "a"]), Frame::Int(0));
    let (reply, _, keeper_done) = timed_add(&mut conn, "w", "keeper");
    assert_eq!(reply, Frame::Int(1));
    let mut last_held = 0;
    let mut first_gone = None;
    while now_ms() < a_done + 2500 + SLACK + 200 {
        let asked = now_ms();
        let held = exists(&mut conn, "w", "a");
        if asked < a_sent + 2000 {
            assert_eq!(
                held,
                1,
                "forgotten {} ms after it was added",
                asked - a_sent
            );
        }
        if held == 1 {
            assert!(first_gone.is_none(), "held again after it was forgotten");
            last_held = asked;
        } else if first_gone.is_none() {
            first_gone = Some(asked);
        }
        sleep(Duration::from_millis(20));
    }
    let gone = first_gone.expect("never forgotten");
    assert!(
        last_held >= a_sent + 2000,
        "held until {}",
        last_held - a_sent
    );
    assert!(
        gone <= a_done + 2500 + SLACK,
        "forgotten {} ms after",
        gone - a_sent
    );
    // Forgotten means new again: the recrawl after the window.
    assert!(
        now_ms() < keeper_done + 2000,
        "the keeper expired too early for the test"
    );
    assert_eq!(exists(&mut conn, "w", "keeper"), 1);
    assert_eq!(conn.call(&["BF.ADD", "w", "a"]), Frame::Int(1));
    assert_eq!(exists(&mut conn, "w", "a"), 1);
}

#[test]
fn card_counts_live_items_and_the_key_expires_with_its_last_generation() {
    let server = Server::start();
    let mut conn = server.conn();
    ok(
        &mut conn,
        &["BF.RESERVE", "w", "0.01", "100", "WINDOW", "2"],
    );
    // Reserved and empty: no generation, no time to live.
    assert_eq!(conn.call(&["PTTL", "w"]), Frame::Int(-1));
    assert_eq!(generations(&mut conn, "w"), vec![]);
    sleep_into_next_slot(500, 50);
    let first = now_ms();
    assert_eq!(
        conn.call(&["BF.MADD", "w", "a", "b", "c"]),
        Frame::Array(vec![Frame::Int(1); 3])
    );
    let first_done = now_ms();
    let ttl = conn.call(&["PTTL", "w"]).int();
    assert!((2000 - SLACK as i64..=2500).contains(&ttl), "PTTL {ttl}");
    let slot = first / 500;
    assert_eq!(
        generations(&mut conn, "w"),
        vec![(slot * 500, (slot + 5) * 500, 3)]
    );
    assert_eq!(conn.call(&["BF.CARD", "w"]), Frame::Int(3));

    // Three slots later, two more items in a generation of their own.
    sleep_until((slot + 3) * 500 + 50);
    let second = now_ms();
    assert_eq!(
        conn.call(&["BF.MADD", "w", "d", "e"]),
        Frame::Array(vec![Frame::Int(1); 2])
    );
    assert_eq!(conn.call(&["BF.CARD", "w"]), Frame::Int(5));
    let later = second / 500;
    assert_eq!(
        generations(&mut conn, "w"),
        vec![
            (slot * 500, (slot + 5) * 500, 3),
            (later * 500, (later + 5) * 500, 2)
        ]
    );
    // The key's time to live follows the newest generation.
    let ttl = conn.call(&["PTTL", "w"]).int() as u64;
    let expected = (later + 5) * 500 - now_ms();
    assert!(
        ttl.abs_diff(expected) <= SLACK,
        "PTTL {ttl}, expected {expected}"
    );

    // The first generation expires; reads hide it before any write drops it.
    sleep_until((slot + 5) * 500 + 20);
    assert!(
        now_ms() < (later + 5) * 500 - SLACK,
        "too late for the test"
    );
    assert_eq!(conn.call(&["BF.CARD", "w"]), Frame::Int(2));
    assert_eq!(
        conn.call(&["BF.MEXISTS", "w", "a", "b", "c", "d", "e"]),
        Frame::Array([0, 0, 0, 1, 1].iter().map(|&v| Frame::Int(v)).collect())
    );
    assert_eq!(info_bf(&server, "bf_expired_generations"), 0);
    // A write drops it (and counts it).
    assert_eq!(conn.call(&["BF.ADD", "w", "d"]), Frame::Int(0));
    assert_eq!(info_bf(&server, "bf_expired_generations"), 1);
    assert_eq!(
        generations(&mut conn, "w"),
        vec![(later * 500, (later + 5) * 500, 2)]
    );
    assert_eq!(info_bf(&server, "bf_windowed_filters"), 1);

    // Nothing writes any more: the key goes with its last generation.
    sleep_until((later + 5) * 500 + SLACK);
    assert_eq!(conn.call(&["EXISTS", "w"]), Frame::Int(0));
    assert_eq!(conn.call(&["BF.EXISTS", "w", "d"]), Frame::Int(0));
    assert_eq!(info_bf(&server, "bf_windowed_filters"), 0);
    assert_eq!(info_bf(&server, "bf_filters"), 0);
    assert!(first_done < second);
}

/// Writes `item:<next>...` in eight phases 400 ms apart to two filters of a 2-second window, one
/// reserved and one created by BF.INSERT: new generations, growth of a generation past its
/// capacity, expiry. `check` runs after each phase.
fn eight_phases(conn: &mut Conn, mut check: impl FnMut(&mut Conn, usize)) {
    ok(
        conn,
        &[
            "BF.RESERVE",
            "r",
            "0.01",
            "40",
            "WINDOW",
            "2",
            "EXPANSION",
            "2",
        ],
    );
    let mut next = 0;
    for phase in 0..8 {
        let items: Vec<String> = (0..30).map(|i| format!("item:{}", next + i)).collect();
        next += 30;
        let mut command = vec!["BF.INSERT", "i", "WINDOW", "2", "ERROR", "0.05", "ITEMS"];
        command.extend(items.iter().map(String::as_str));
        assert!(!conn.call(&command).is_error());
        let mut command = vec!["BF.MADD", "r"];
        command.extend(items.iter().map(String::as_str));
        assert!(!conn.call(&command).is_error());
        check(conn, phase);
        if phase < 7 {
            sleep(Duration::from_millis(400));
        }
    }
    // A generation grew (13 items, then 26 more), and generations expired.
    assert!(debug_lines(conn, "r")
        .iter()
        .any(|line| line.contains("capacity:26 ")));
}

/// BF.DEBUG and DEBUG DIGEST-VALUE (which covers the key's expiry) of each key.
fn states(conn: &mut Conn, keys: &[&str]) -> Vec<(Frame, Vec<String>)> {
    keys.iter()
        .map(|key| (digest(conn, key), debug_lines(conn, key)))
        .collect()
}

#[test]
fn a_replica_makes_the_same_generations_as_its_primary() {
    let primary = Server::start();
    let replica = Server::start();
    replica.replicate(&primary);
    let mut conn = primary.conn();
    let mut mirror = replica.conn();
    eight_phases(&mut conn, |conn, phase| {
        replica.catch_up(&primary);
        assert_eq!(
            states(&mut mirror, &["r", "i"]),
            states(conn, &["r", "i"]),
            "phase {phase}"
        );
    });
    assert!(info_bf(&primary, "bf_expired_generations") > 0);
    assert_eq!(
        info_bf(&replica, "bf_expired_generations"),
        info_bf(&primary, "bf_expired_generations")
    );

    // Without any write from the primary, the replica hides what expired by its own clock.
    ok(
        &mut conn,
        &["BF.RESERVE", "q", "0.01", "100", "WINDOW", "2"],
    );
    sleep_into_next_slot(500, 50);
    assert_eq!(conn.call(&["BF.ADD", "q", "old"]), Frame::Int(1));
    let old_slot = now_ms() / 500;
    sleep_until((old_slot + 3) * 500 + 50);
    assert_eq!(conn.call(&["BF.ADD", "q", "new"]), Frame::Int(1));
    replica.catch_up(&primary);
    sleep_until((old_slot + 5) * 500 + 20);
    for reader in [&mut mirror, &mut conn] {
        assert_eq!(exists(reader, "q", "old"), 0);
        assert_eq!(exists(reader, "q", "new"), 1);
        assert_eq!(reader.call(&["BF.CARD", "q"]), Frame::Int(1));
    }
    assert_eq!(states(&mut mirror, &["q"]), states(&mut conn, &["q"]));
    // (BF.DEBUG is a read too: it lists the live generations.)
    assert_eq!(generations(&mut mirror, "q").len(), 1);
    // The primary's next write drops it, and the replica with it.
    let dropped = info_bf(&replica, "bf_expired_generations");
    assert_eq!(conn.call(&["BF.ADD", "q", "newer"]), Frame::Int(1));
    replica.catch_up(&primary);
    assert_eq!(info_bf(&replica, "bf_expired_generations"), dropped + 1);
    // "new"'s generation, and "newer"'s.
    assert_eq!(generations(&mut mirror, "q").len(), 2);
    assert_eq!(states(&mut mirror, &["q"]), states(&mut conn, &["q"]));
    // A new replica (a full sync) gets the same ("r" and "i" have expired by now).
    let late = Server::start();
    late.replicate(&primary);
    assert_eq!(states(&mut late.conn(), &["q"]), states(&mut conn, &["q"]));
    assert_eq!(conn.call(&["EXISTS", "r", "i"]), Frame::Int(0));
}

#[test]
fn an_aof_replay_makes_the_same_generations_whenever_it_runs() {
    let options = Options::default()
        .config("appendonly", "yes")
        .config("appendfsync", "always");
    let mut server = Server::with(options.clone());
    let mut conn = server.conn();
    eight_phases(&mut conn, |_, _| {});
    // The AOF carries the primary's times: replayed later, they make the same filters, with the
    // same expiry (the digest covers it). The newest generations live two seconds more.
    let before = states(&mut conn, &["r", "i"]);
    drop(conn);
    server.restart_with(options);
    let mut conn = server.conn();
    assert_eq!(states(&mut conn, &["r", "i"]), before);
    let aof: Vec<u8> = std::fs::read_dir(server.dir.join("appendonlydir"))
        .unwrap()
        .flat_map(|entry| std::fs::read(entry.unwrap().path()).unwrap())
        .collect();
    let text = String::from_utf8_lossy(&aof);
    assert!(
        text.contains("\r\nWINDOW\r\n$1\r\n2\r\n$2\r\nAT\r\n$13\r\n"),
        "no BF.INSERT ... WINDOW 2 AT <ms> in the AOF"
    );
}

#[test]
fn a_write_refused_after_dropping_expired_generations_still_reaches_replicas() {
    let primary = Server::start();
    let replica = Server::start();
    replica.replicate(&primary);
    let mut conn = primary.conn();
    ok(
        &mut conn,
        &["BF.RESERVE", "w", "0.01", "1000", "WINDOW", "2"],
    );
    sleep_into_next_slot(500, 50);
    let first_slot = now_ms() / 500;
    assert_eq!(conn.call(&["BF.ADD", "w", "a"]), Frame::Int(1));
    let one = conn.call(&["BF.INFO", "w", "SIZE"]).items()[0].int();
    sleep_into_next_slot(500, 50);
    assert_eq!(conn.call(&["BF.ADD", "w", "b"]), Frame::Int(1));
    let two = conn.call(&["BF.INFO", "w", "SIZE"]).items()[0].int();
    // Room for one generation only from now on (the smallest ceiling there is).
    assert!(one <= 1024 && two > 1024, "{one} {two}");
    ok(&mut conn, &["CONFIG", "SET", "bf.max-filter-bytes", "1024"]);
    sleep_until((first_slot + 5) * 500 + 50);
    // The write drops the first generation, then finds no room for a new one.
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
fn an_aof_rewrite_debug_reload_chunks_copy_and_restore_keep_generations_and_ttl() {
    let options = Options::default()
        .config("appendonly", "yes")
        .config("appendfsync", "always")
        .config("aof-use-rdb-preamble", "no");
    let mut server = Server::with(options.clone());
    let mut conn = server.conn();
    ok(&mut conn, &["BF.RESERVE", "w", "0.01", "50", "WINDOW", "5"]);
    sleep_into_next_slot(1250, 50);
    let items: Vec<String> = (0..60).map(|i| format!("item:{i}")).collect();
    for (index, half) in items.chunks(30).enumerate() {
        if index > 0 {
            sleep_into_next_slot(1250, 50);
        }
        let mut command = vec!["BF.MADD", "w"];
        command.extend(half.iter().map(String::as_str));
        assert!(!conn.call(&command).is_error());
    }
    let expected_generations = generations(&mut conn, "w");
    assert_eq!(expected_generations.len(), 2);
    let expected = (digest(&mut conn, "w"), debug_lines(&mut conn, "w"));
    let ttl = |conn: &mut Conn, key: &str| conn.call(&["PEXPIRETIME", key]).int();
    let expiry = ttl(&mut conn, "w");
    assert_eq!(expiry as u64, expected_generations[1].1);

    // DEBUG RELOAD (an RDB round trip).
    ok(&mut conn, &["DEBUG", "RELOAD"]);
    assert_eq!(
        (digest(&mut conn, "w"), debug_lines(&mut conn, "w")),
        expected
    );
    assert_eq!(ttl(&mut conn, "w"), expiry);

    // SCANDUMP / LOADCHUNK: the header carries the generations and the key gets their expiry.
    let chunks = scandump(&mut conn, "w");
    for (iterator, data) in &chunks {
        assert_eq!(
            common::loadchunk(&mut conn, "chunks", *iterator, data),
            Frame::ok()
        );
    }
    assert_eq!(
        (
            digest(&mut conn, "chunks"),
            debug_lines(&mut conn, "chunks")
        ),
        expected
    );
    assert_eq!(ttl(&mut conn, "chunks"), expiry);

    // COPY, and DUMP / RESTORE with the expiry (ABSTTL), as MIGRATE does.
    assert_eq!(conn.call(&["COPY", "w", "copy"]), Frame::Int(1));
    let payload = conn.call(&["DUMP", "w"]).bytes();
    assert_eq!(
        conn.call(&[
            b"RESTORE".as_slice(),
            b"restored",
            expiry.to_string().as_bytes(),
            &payload,
            b"ABSTTL"
        ]),
        Frame::ok()
    );
    // RESTORE without one: the next write gives the key its expiry back.
    assert_eq!(
        conn.call(&[b"RESTORE".as_slice(), b"bare", b"0", &payload]),
        Frame::ok()
    );
    assert_eq!(ttl(&mut conn, "bare"), -1);
    assert_eq!(generations(&mut conn, "bare"), generations(&mut conn, "w"));
    for key in ["copy", "restored"] {
        assert_eq!(
            (digest(&mut conn, key), debug_lines(&mut conn, key)),
            expected,
            "{key}"
        );
    }
    let mut probe: Vec<&str> = vec!["BF.MEXISTS", "bare"];
    probe.extend(items.iter().map(String::as_str));
    probe.push("absent");
    let mut answers = vec![Frame::Int(1); 60];
    answers.push(Frame::Int(0));
    assert_eq!(conn.call(&probe), Frame::Array(answers));
    assert_eq!(conn.call(&["BF.ADD", "bare", "item:0"]), Frame::Int(0));
    assert_eq!(ttl(&mut conn, "bare"), expiry);

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
        assert_eq!(ttl(&mut conn, key), expiry, "{key}");
    }
    assert!(
        now_ms() < expected_generations[0].1,
        "too slow for a 5-second window"
    );
}

#[test]
fn a_new_generation_is_held_to_max_filter_bytes_and_maxmemory() {
    let server = Server::start();
    let mut conn = server.conn();
    ok(
        &mut conn,
        &["BF.RESERVE", "w", "0.01", "1000", "WINDOW", "2"],
    );
    sleep_into_next_slot(500, 50);
    assert_eq!(conn.call(&["BF.ADD", "w", "a"]), Frame::Int(1));
    let size = conn.call(&["BF.INFO", "w", "SIZE"]).items()[0].int();
    // Room for what it has, not for a second generation.
    let limit = size.max(1024);
    ok(
        &mut conn,
        &["CONFIG", "SET", "bf.max-filter-bytes", &limit.to_string()],
    );
    let before = (digest(&mut conn, "w"), debug_lines(&mut conn, "w"));
    sleep_into_next_slot(500, 50);
    let refused = conn.call(&["BF.ADD", "w", "b"]);
    let text = error_text(&refused);
    assert!(
        text.starts_with("ERR filter would use ")
            && text.ends_with(&format!(" bytes, over bf.max-filter-bytes ({limit})")),
        "{refused:?}"
    );
    assert_eq!(
        conn.call(&["BF.MADD", "w", "a", "c"]),
        Frame::Array(vec![Frame::Int(0), refused.clone()])
    );
    assert_eq!(
        (digest(&mut conn, "w"), debug_lines(&mut conn, "w")),
        before
    );
    assert_eq!(exists(&mut conn, "w", "a"), 1);
    ok(
        &mut conn,
        &["CONFIG", "SET", "bf.max-filter-bytes", "1073741824"],
    );

    // maxmemory (noeviction) leaves less room than a new generation needs: OOM, nothing changes.
    ok(
        &mut conn,
        &["BF.RESERVE", "big", "0.0001", "2000000", "WINDOW", "2"],
    );
    sleep_into_next_slot(500, 50);
    assert_eq!(conn.call(&["BF.ADD", "big", "a"]), Frame::Int(1));
    let generation = conn.call(&["BF.INFO", "big", "SIZE"]).items()[0].int();
    assert!(generation > 1_000_000, "{generation}");
    let used = used_memory(&mut conn);
    ok(
        &mut conn,
        &[
            "CONFIG",
            "SET",
            "maxmemory",
            &(used + generation / 2).to_string(),
        ],
    );
    let before = (digest(&mut conn, "big"), debug_lines(&mut conn, "big"));
    sleep_into_next_slot(500, 50);
    let refused = conn.call(&["BF.ADD", "big", "b"]);
    assert!(
        error_text(&refused).starts_with("OOM filter would need "),
        "{refused:?}"
    );
    assert_eq!(
        (digest(&mut conn, "big"), debug_lines(&mut conn, "big")),
        before
    );
    // Within the current generation it still adds.
    sleep_into_next_slot(500, 0);
    ok(&mut conn, &["CONFIG", "SET", "maxmemory", "0"]);
    assert_eq!(conn.call(&["BF.ADD", "big", "b"]), Frame::Int(1));
    let slot = now_ms() / 500;
    let room = (used_memory(&mut conn) + 100_000).to_string();
    ok(&mut conn, &["CONFIG", "SET", "maxmemory", &room]);
    assert!(now_ms() / 500 == slot, "too slow for the test");
    assert_eq!(conn.call(&["BF.ADD", "big", "c"]), Frame::Int(1));
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

#[test]
fn memory_stays_bounded_over_many_windows() {
    // A one-second window at 1%, capacity 40,000: 8,000 items a quarter-second slot (32,000 a
    // window, under the capacity) for sixteen slots, each batch sent in the middle of its slot.
    let server = Server::start();
    let mut conn = server.conn();
    ok(&mut conn, &["BF.RESERVE", "plain", "0.01", "40000"]);
    let plain = conn.call(&["BF.INFO", "plain", "SIZE"]).items()[0].int();
    ok(
        &mut conn,
        &["BF.RESERVE", "w", "0.01", "40000", "WINDOW", "1"],
    );
    let mut sizes = Vec::new();
    let mut next = 0;
    sleep_into_next_slot(250, 125);
    for _ in 0..16 {
        let items: Vec<String> = (next..next + 8000).map(|i| format!("item:{i}")).collect();
        next += 8000;
        let mut command = vec!["BF.MADD", "w"];
        command.extend(items.iter().map(String::as_str));
        assert!(!conn.call(&command).is_error());
        sizes.push(conn.call(&["BF.INFO", "w", "SIZE"]).items()[0].int());
        assert!(
            conn.call(&["BF.CARD", "w"]).int() <= 40_000,
            "more than a window's items live"
        );
        sleep_into_next_slot(250, 125);
    }
    // After the first window and a quarter, at most twice the plain filter; and no growth from
    // one window to the next.
    let steady = &sizes[5..];
    let most = *steady.iter().max().unwrap();
    assert!(
        most <= 2 * plain,
        "{most} bytes against {plain} plain: {sizes:?}"
    );
    assert!(
        steady.iter().all(|&size| size == steady[0]),
        "sizes changed across windows: {sizes:?}"
    );
    assert!(info_bf(&server, "bf_expired_generations") >= 10);
}
