//! Every copy of a windowed filter (`WINDOW seconds`) has the parts and generations of the
//! original, on a real server: a replica and an AOF replay agree with the primary across parts and
//! generations (also when a write is refused after dropping expired parts), and so do an AOF
//! rewrite, DEBUG RELOAD, chunk replay, COPY and RESTORE mid-window; the time a windowed write
//! carries (AT) is taken only from a primary or the AOF. The filters themselves: `window.rs`.

mod common;

use common::{
    bf_size, debug_lines, digest, exists, generations, info_bf, madd, names, now_ms, ok, scandump,
    sleep_into_next_slot, sleep_until, timed, timed_by, Conn, Frame, Options, Server, Timed,
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

/// What a windowed filter holds, as DEBUG DIGEST-VALUE (every part held, expired or not) and
/// BF.DEBUG (the live ones) give it.
type State = (Frame, Vec<String>);

/// BF.DEBUG and DEBUG DIGEST-VALUE of each key.
fn states(conn: &mut Conn, keys: &[&str]) -> Vec<State> {
    keys.iter()
        .map(|key| (digest(conn, key), debug_lines(conn, key)))
        .collect()
}

/// What `read` finds on `replica`, caught up with `primary`, and on the primary at the same
/// moment. Expiry and the sweep change a windowed filter one way only: where the primary's reads
/// before and after the replica's agree, nothing changed between them. Read again until they
/// agree (a part expiring between two reads, however long a busy machine made them, is no
/// difference between the servers).
fn at_one_moment<T: PartialEq + std::fmt::Debug>(
    primary: &Server,
    replica: &Server,
    mut read: impl FnMut(&Server) -> T,
) -> (T, T) {
    for _ in 0..100 {
        let before = read(primary);
        replica.catch_up(primary);
        let mirrored = read(replica);
        if read(primary) == before {
            return (mirrored, before);
        }
    }
    panic!("the primary's filters changed between every two reads of 100");
}

/// [`states`] of `keys` on a replica and on its primary, at one moment ([`at_one_moment`]).
fn replica_and_primary(
    primary: &Server,
    replica: &Server,
    keys: &[&str],
) -> (Vec<State>, Vec<State>) {
    at_one_moment(primary, replica, |server| states(&mut server.conn(), keys))
}

/// [`states`] of `keys` in one transaction, timed; the first key is read again at the end, and
/// the whole read again until both agree (nothing expired or was swept in between).
fn states_together(conn: &mut Conn, keys: &[&str]) -> Timed<Vec<State>> {
    let mut transaction = vec![vec!["MULTI"]];
    for key in keys.iter().chain(&keys[..1]) {
        transaction.push(vec!["DEBUG", "DIGEST-VALUE", key]);
        transaction.push(vec!["BF.DEBUG", key]);
    }
    transaction.push(vec!["EXEC"]);
    for _ in 0..100 {
        let read = timed_by(|| common::pipeline(conn, &transaction).pop().unwrap().items());
        let mut found: Vec<State> = read
            .reply
            .chunks(2)
            .map(|pair| {
                (
                    pair[0].clone(),
                    pair[1].items().iter().map(Frame::text).collect(),
                )
            })
            .collect();
        let again = found.pop().unwrap();
        if again == found[0] {
            return Timed {
                reply: found,
                sent: read.sent,
                answered: read.answered,
            };
        }
    }
    panic!("{keys:?} changed within every one of 100 transactions");
}

/// Asserts that every one of `keys` holds what `expected` describes: the same as one another at
/// any time (read together), and as `expected` where the read came back before its first part's
/// expiry at `first_expiry` (after it, BF.DEBUG hides that part and the sweep drops it).
fn assert_kept(conn: &mut Conn, keys: &[&str], expected: &State, first_expiry: u64) {
    let read = states_together(conn, keys);
    for (key, state) in keys.iter().zip(&read.reply) {
        assert_eq!(state, &read.reply[0], "{key} and {}", keys[0]);
    }
    if read.live(first_expiry..=first_expiry) == Some(true) {
        assert_eq!(&read.reply[0], expected, "{keys:?}");
    }
}

#[test]
fn a_replica_makes_the_same_parts_as_its_primary() {
    let primary = Server::start();
    let replica = Server::start();
    replica.replicate(&primary);
    let mut conn = primary.conn();
    let mut mirror = replica.conn();
    eight_phases(&mut conn, "2", |_, phase| {
        let (mirrored, original) = replica_and_primary(&primary, &replica, &["r", "i"]);
        assert_eq!(mirrored, original, "phase {phase}");
    });
    assert!(info_bf(&primary, "bf_expired_generations") > 0);

    // Without any write from the primary, the replica hides what expired by its own clock.
    ok(
        &mut conn,
        &["BF.RESERVE", "q", "0.01", "100", "WINDOW", "2"],
    );
    sleep_into_next_slot(500, 50);
    let old = timed(&mut conn, &["BF.ADD", "q", "old"]);
    assert_eq!(old.reply, Frame::Int(1));
    sleep_until(old.answered + 1000);
    let new = timed(&mut conn, &["BF.ADD", "q", "new"]);
    assert_eq!(new.reply, Frame::Int(1));
    // Each part expires a window after its write, which the primary made between the request
    // and its reply, and which the replica was given with its time.
    let new_expiry = new.sent + 2000..=new.answered + 2000;
    replica.catch_up(&primary);
    sleep_until(old.answered + 2000 + 20);
    for reader in [&mut mirror, &mut conn] {
        assert_eq!(exists(reader, "q", "old"), 0);
        timed(reader, &["BF.EXISTS", "q", "new"]).assert_by_expiry(
            new_expiry.clone(),
            Frame::Int(1),
            Frame::Int(0),
        );
        timed(reader, &["BF.CARD", "q"]).assert_by_expiry(
            new_expiry.clone(),
            Frame::Int(1),
            Frame::Int(0),
        );
        timed_by(|| generations(reader, "q").len()).assert_by_expiry(new_expiry.clone(), 1, 0);
    }
    // The primary drops it (its next write, or its sweep), and the replica with it.
    assert_eq!(conn.call(&["BF.ADD", "q", "newer"]), Frame::Int(1));
    let (mirrored, original) = at_one_moment(&primary, &replica, |server| {
        (
            states(&mut server.conn(), &["q"]),
            info_bf(server, "bf_expired_generations"),
        )
    });
    assert_eq!(mirrored, original);
    // A new replica (a full sync) gets the same. "r" and "i" have expired and been swept: their
    // keys stay, empty.
    let late = Server::start();
    late.replicate(&primary);
    let (mirrored, original) = replica_and_primary(&primary, &late, &["q", "r", "i"]);
    assert_eq!(mirrored, original);
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
    let first_expiry = ["r", "i"]
        .iter()
        .flat_map(|key| generations(&mut conn, key))
        .map(|(_, until, _)| until)
        .min()
        .unwrap();
    drop(conn);
    server.restart_with(options);
    let mut conn = server.conn();
    // The same, where the replay and the read came before the first part expired (after it,
    // BF.DEBUG hides that part and the sweep drops it).
    let after = timed_by(|| states(&mut conn, &["r", "i"]));
    if after.live(first_expiry..=first_expiry) == Some(true) {
        assert_eq!(after.reply, before);
    }
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
    let first = timed(&mut conn, &["BF.ADD", "w", "first"]);
    assert_eq!(first.reply, Frame::Int(1));
    let mut last = (0, 0);
    for item in ["a", "b", "c"] {
        let added = timed(&mut conn, &["BF.ADD", "w", item]);
        assert_eq!(added.reply, Frame::Int(1));
        last = (added.sent, added.answered);
    }
    assert_eq!(conn.call(&["BF.ADD", "w", "a"]), Frame::Int(0));
    assert_eq!(conn.call(&["BF.ADD", "w", "first"]), Frame::Int(0));
    // One generation of four items, expiring an hour after the last new one (or two, where the
    // adds straddled the end of a slot).
    let listed = generations(&mut conn, "w");
    let one_slot = first.sent / 900_000 == last.1 / 900_000;
    assert!(
        listed.len() == 1 || (!one_slot && listed.len() == 2),
        "{listed:?}"
    );
    assert_eq!(listed.iter().map(|&(_, _, size)| size).sum::<u64>(), 4);
    let (_, until, _) = *listed.last().unwrap();
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
    let one = bf_size(&mut conn, "w");
    let a_expiry = generations(&mut conn, "w")[0].1;
    sleep_into_next_slot(500, 50);
    let b = timed(&mut conn, &["BF.ADD", "w", "b"]);
    assert_eq!(b.reply, Frame::Int(1));
    let b_expiry = b.sent + 2000..=b.answered + 2000;
    // Room for one generation only from now on (the smallest ceiling there is): `a`'s part and
    // `b`'s take more, while `a`'s is held (dropped after its expiry at the earliest).
    let two = timed_by(|| bf_size(&mut conn, "w"));
    assert!(one <= 1024, "{one}");
    if two.live(a_expiry..=a_expiry) == Some(true) {
        assert!(two.reply > 1024, "{two:?}");
    }
    ok(&mut conn, &["CONFIG", "SET", "bf.max-filter-bytes", "1024"]);
    sleep_until(a_expiry + 1);
    // The first part has expired: dropped (by this write, or by the sweep before it); the write
    // then finds no room for a new generation beside `b`'s (where a busy machine sent it after
    // `b`'s part expired too, it had room).
    let c = timed(&mut conn, &["BF.ADD", "w", "c"]);
    let refused =
        matches!(&c.reply, Frame::Error(text) if text.starts_with("ERR filter would use "));
    assert!(refused || c.reply == Frame::Int(1), "{c:?}");
    if let Some(b_live) = c.live(b_expiry.clone()) {
        assert_eq!(refused, b_live, "{c:?}");
    }
    let listed = timed_by(|| generations(&mut conn, "w").len());
    if refused {
        listed.assert_by_expiry(b_expiry, 1, 0);
    } else {
        assert_eq!(listed.reply, 1);
    }
    // The replica holds what its primary holds (read at one moment): the drop reached it.
    let (mirrored, original) = at_one_moment(&primary, &replica, |server| {
        (
            states(&mut server.conn(), &["w"]),
            info_bf(server, "bf_expired_generations"),
        )
    });
    assert_eq!(mirrored, original);
    assert!(original.1 >= 1, "{original:?}");
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
    // Each copy is compared with the others at any time, and with `expected` where it was read
    // before the first part expired.
    let first_expiry = expected_generations[0].1;

    // DEBUG RELOAD (an RDB round trip).
    ok(&mut conn, &["DEBUG", "RELOAD"]);
    assert_kept(&mut conn, &["w"], &expected, first_expiry);

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
    let keys = ["w", "chunks", "copy", "restored"];
    assert_kept(&mut conn, &keys, &expected, first_expiry);
    for key in keys {
        assert_eq!(conn.call(&["PTTL", key]), Frame::Int(-1), "{key}");
    }
    let mut probe: Vec<&str> = vec!["BF.MEXISTS", "restored"];
    probe.extend(items.iter().map(String::as_str));
    probe.push("absent");
    let mut answers = vec![Frame::Int(1); 60];
    answers.push(Frame::Int(0));
    let found = timed(&mut conn, &probe);
    if found.live(first_expiry..=first_expiry) == Some(true) {
        assert_eq!(found.reply, Frame::Array(answers));
    }

    // An AOF rewrite (no RDB preamble: the module's own commands) and a restart.
    assert!(!conn.call(&["BGREWRITEAOF"]).is_error());
    server.wait_for_aof_rewrite();
    drop(conn);
    server.restart_with(options);
    let mut conn = server.conn();
    assert_kept(&mut conn, &keys, &expected, first_expiry);
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
