//! Windowed filters in every loader, against forged input (issue 22, item 1): no loader (chunks,
//! RESTORE and so RDB, the AOF) takes a windowed filter whose generations no real filter could
//! have (more than five, spanning more than the window and its slack, a client's starting more than
//! a window ahead of the clock); nothing is left at the key. (The server's own files from ahead of
//! its clock are brought back to it: tests/window_clock.rs.) And dumps taken while the filter changes
//! (item 2): they either load complete, as the header described the filter, or fail loudly at
//! BF.SCANDUMP or BF.LOADCHUNK; never short.

mod common;

use common::payload::{Envelope, Field};
use common::{
    bf_size, error_text, generations, loadchunk, madd, names, now_ms, ok, sleep_into_next_slot,
    sleep_until, timed, timed_by, Conn, Frame, Options, Server, Timed,
};

/// A 2-second window: slots of 500 ms.
const SLOT: u64 = 500;

/// `BF.SCANDUMP key iterator`: (next iterator, bytes), or the error.
fn scan(conn: &mut Conn, key: &str, iterator: i64) -> Result<(i64, Vec<u8>), Frame> {
    let reply = conn.call(&["BF.SCANDUMP", key, &iterator.to_string()]);
    if reply.is_error() {
        return Err(reply);
    }
    let items = reply.items();
    Ok((items[0].int(), items[1].bytes()))
}

/// The generations of a windowed dump header (version 3), as (offset, slot, parts).
fn header_generations(header: &[u8]) -> Vec<(usize, u64, usize)> {
    assert_eq!(&header[..8], b"redis-bf");
    assert_eq!(u32::from_le_bytes(header[8..12].try_into().unwrap()), 3);
    let count = u32::from_le_bytes(header[40..44].try_into().unwrap());
    let mut at = 44;
    let mut generations = Vec::new();
    for _ in 0..count {
        let slot = u64::from_le_bytes(header[at..at + 8].try_into().unwrap());
        let parts = u32::from_le_bytes(header[at + 24..at + 28].try_into().unwrap()) as usize;
        generations.push((at, slot, parts));
        at += 28 + 44 * parts;
    }
    assert_eq!(at, header.len());
    generations
}

/// The generation at `at` (with `parts` parts), moved `slots` slots later: its slot and its
/// parts' expiry, consistently.
fn moved(header: &[u8], at: usize, parts: usize, slots: u64) -> Vec<u8> {
    let mut generation = header[at..at + 28 + 44 * parts].to_vec();
    let slot = u64::from_le_bytes(generation[..8].try_into().unwrap()) + slots;
    generation[..8].copy_from_slice(&slot.to_le_bytes());
    for part in 0..parts {
        let expiry_at = 28 + part * 44 + 36;
        let expiry = u64::from_le_bytes(generation[expiry_at..expiry_at + 8].try_into().unwrap());
        let later = expiry + slots * SLOT;
        generation[expiry_at..expiry_at + 8].copy_from_slice(&later.to_le_bytes());
    }
    generation
}

/// A header with `count` generations: the first of `header`, and copies of it `shifts` slots
/// later.
fn with_generations(header: &[u8], shifts: &[u64]) -> Vec<u8> {
    let (at, _, parts) = header_generations(header)[0];
    let mut forged = header[..44].to_vec();
    forged[40..44].copy_from_slice(&(shifts.len() as u32).to_le_bytes());
    for &shift in shifts {
        forged.extend(moved(header, at, parts, shift));
    }
    forged
}

/// A windowed filter of one item in one part, its dump (header and data chunk).
fn one_item_filter(conn: &mut Conn) -> Vec<(i64, Vec<u8>)> {
    ok(conn, &["BF.RESERVE", "src", "0.01", "100", "WINDOW", "2"]);
    assert_eq!(conn.call(&["BF.ADD", "src", "item"]), Frame::Int(1));
    common::scandump(conn, "src")
}

#[test]
fn loadchunk_refuses_generations_no_real_filter_has_and_leaves_nothing() {
    let server = Server::start();
    let mut conn = server.conn();
    let chunks = one_item_filter(&mut conn);
    // Forged headers go with untagged iterators (a forger does not know a dump's tag; LOADCHUNK
    // takes untagged ones, as written by the first release of windowed filters).
    let untagged = |iterator: i64| iterator & ((1 << 38) - 1);
    let (header_iterator, header) = (untagged(chunks[0].0), chunks[0].1.clone());
    let invalid = |what: &str| Frame::error(&format!("ERR invalid chunk: {what}"));
    let too_many = invalid("more generations than a windowed filter keeps (5)");
    // The count alone says 20,000 (before: 20,000 generations, a 4-second MEXISTS).
    let mut count = header.clone();
    count[40..44].copy_from_slice(&20_000u32.to_le_bytes());
    let cases = [
        ("20,000 generations", count, too_many.clone()),
        (
            "six generations",
            with_generations(&header, &[0, 1, 2, 3, 4, 5]),
            too_many,
        ),
        (
            "five generations over six slots",
            with_generations(&header, &[0, 1, 2, 3, 5]),
            invalid("generations span more than a window and its slack"),
        ),
        (
            "a generation a minute ahead",
            with_generations(&header, &[120]),
            invalid("a generation starts more than a window after this server's clock"),
        ),
    ];
    for (what, forged, expected) in cases {
        assert_eq!(
            loadchunk(&mut conn, "forged", header_iterator, &forged),
            expected,
            "{what}"
        );
        assert_eq!(conn.call(&["EXISTS", "forged"]), Frame::Int(0), "{what}");
    }
    // Within a window of the clock (a primary's a little ahead), it is taken, and loads.
    let ahead = with_generations(&header, &[3]);
    assert_eq!(
        loadchunk(&mut conn, "near", header_iterator, &ahead),
        Frame::ok()
    );
    assert_eq!(
        loadchunk(&mut conn, "near", untagged(chunks[1].0), &chunks[1].1),
        Frame::ok()
    );
    assert_eq!(conn.call(&["BF.EXISTS", "near", "item"]), Frame::Int(1));
}

#[test]
fn restore_refuses_generations_no_real_filter_has() {
    let server = Server::start();
    let mut conn = server.conn();
    one_item_filter(&mut conn);
    // The bit array as a plain string, which the payload reader takes (not LZF-compressed).
    ok(&mut conn, &["CONFIG", "SET", "rdbcompression", "no"]);
    let payload = conn.call(&["DUMP", "src"]).bytes();
    let envelope = Envelope::from_dump(&payload);
    let fields = envelope.fields(&payload);
    // kind, window, capacity, error, expansion, generation count, then the generation: slot,
    // rule, budget, first, parts, and the part: capacity, error, hashes, bits, items, expiry.
    assert!(matches!(fields[0], Field::Unsigned(1)));
    assert!(matches!(fields[5], Field::Unsigned(1)));
    assert!(matches!(fields[13], Field::Unsigned(7)));
    let forge = |change: &dyn Fn(&mut Vec<Field>)| {
        let mut forged = fields.clone();
        change(&mut forged);
        envelope.payload(&forged)
    };
    let shift = |field: &mut Field, by: u64| {
        if let Field::Unsigned(value) = field {
            *value += by;
        }
    };
    let cases: [(&str, Vec<u8>, &str); 3] = [
        (
            "six generations",
            forge(&|f| f[5] = Field::Unsigned(6)),
            "6 generations: a windowed filter keeps at most 5",
        ),
        (
            "a minute ahead",
            forge(&|f| {
                shift(&mut f[6], 120);
                shift(&mut f[16], 120 * SLOT);
            }),
            "a generation starts more than a window after this server's clock",
        ),
        (
            // Ten hashes where the part's lean sizing takes seven, as builds before it wrote.
            "a part sized at the optimum",
            forge(&|f| f[13] = Field::Unsigned(10)),
            "a part not sized as its generation sizes it",
        ),
    ];
    for (what, forged, reason) in cases {
        assert_eq!(
            conn.call(&[b"RESTORE".as_slice(), b"forged", b"0", &forged]),
            Frame::error("ERR Bad data format"),
            "{what}"
        );
        assert_eq!(conn.call(&["EXISTS", "forged"]), Frame::Int(0));
        let log = server.log();
        assert!(
            log.contains(&format!("cannot load a filter: {reason}")),
            "{what}: {log}"
        );
    }
    // The real payload restores.
    assert_eq!(
        conn.call(&[b"RESTORE".as_slice(), b"real", b"0", &payload]),
        Frame::ok()
    );
    assert_eq!(conn.call(&["BF.EXISTS", "real", "item"]), Frame::Int(1));
}

/// A command as the AOF holds it.
fn resp(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        out.extend(format!("${}\r\n", arg.len()).into_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// A server (AOF on, fsync always) restarted on its AOF with forged commands appended after `src`
/// and its one item: a 20,000-generation header at `chunks`, a write at `ahead` an hour ahead (as
/// if the clock had stepped back since), a change of time alone for `gone`, a key that is gone;
/// then an honest write (`later`) to `src`. With it, the restart timed: the server replayed its
/// AOF between the two instants.
fn server_replaying_forged_windowed_writes() -> (Server, Timed<()>) {
    let options = Options::default()
        .config("appendonly", "yes")
        .config("appendfsync", "always");
    let mut server = Server::with(options);
    let mut conn = server.conn();
    let chunks = one_item_filter(&mut conn);
    let mut count = chunks[0].1.clone();
    count[40..44].copy_from_slice(&20_000u32.to_le_bytes());
    drop(conn);
    server.kill();
    let hour_ahead = (now_ms() + 3_600_000).to_string();
    let iterator = chunks[0].0.to_string();
    let mut forged = resp(&[b"BF.LOADCHUNK", b"chunks", iterator.as_bytes(), &count]);
    forged.extend(resp(&[
        b"BF.INSERT",
        b"ahead",
        b"CAPACITY",
        b"100",
        b"ERROR",
        b"0.01",
        b"EXPANSION",
        b"4",
        b"WINDOW",
        b"2",
        b"AT",
        hour_ahead.as_bytes(),
        b"ITEMS",
        b"x",
    ]));
    // A change of time alone, for a key that is gone.
    let now = now_ms().to_string();
    forged.extend(resp(&[
        b"BF.INSERT",
        b"gone",
        b"CAPACITY",
        b"100",
        b"ERROR",
        b"0.01",
        b"EXPANSION",
        b"4",
        b"WINDOW",
        b"2",
        b"AT",
        now.as_bytes(),
        b"ITEMS",
    ]));
    forged.extend(resp(&[b"BF.ADD", b"src", b"later"]));
    let dir = server.dir.join("appendonlydir");
    let incr = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".incr.aof"))
        .unwrap();
    let mut bytes = std::fs::read(&incr).unwrap();
    bytes.extend(forged);
    std::fs::write(&incr, bytes).unwrap();
    // Ready once the server answers that it is done loading.
    let relaunched = timed_by(|| server.relaunch().unwrap());
    (server, relaunched)
}

#[test]
fn an_aof_replay_refuses_generations_no_real_filter_has() {
    let (server, _) = server_replaying_forged_windowed_writes();
    let mut conn = server.conn();
    assert_eq!(conn.call(&["EXISTS", "chunks"]), Frame::Int(0));
    assert_eq!(
        conn.call(&["BF.MEXISTS", "src", "item", "later"]),
        Frame::Array(vec![Frame::Int(1), Frame::Int(1)])
    );
    let log = server.log();
    let reason = "ERR invalid chunk: more generations than a windowed filter keeps (5)";
    assert!(log.contains(reason), "{reason}: {log}");
    assert!(!log.contains("internal error"), "{log}");
    assert_eq!(log.matches("AOF-loading-client").count(), 1, "{log}");
}

#[test]
fn an_aof_replay_applies_a_write_from_ahead_of_the_clock_now() {
    let (server, relaunched) = server_replaying_forged_windowed_writes();
    let mut conn = server.conn();
    // A change of time alone for a key that is gone: nothing to do, no key made.
    assert_eq!(conn.call(&["EXISTS", "gone"]), Frame::Int(0));
    // The write from an hour ahead is applied when the AOF is replayed, and expires a window (at
    // most a window and a slot) after that: judged by when the server was restarted and when it
    // answered, not by how soon after the restart this test got to ask.
    let expiry = relaunched.sent + 2_000..=relaunched.answered + 2_500;
    let listed = timed_by(|| generations(&mut conn, "ahead"));
    let held = timed(&mut conn, &["BF.EXISTS", "ahead", "x"]);
    match listed.reply[..] {
        [(_, until, 1)] => {
            assert!(expiry.contains(&until), "{until}, against {expiry:?}");
            held.assert_by_expiry(until..=until, Frame::Int(1), Frame::Int(0));
        }
        [] => {
            assert_ne!(listed.live(expiry.clone()), Some(true), "{listed:?}");
            assert_eq!(held.reply, Frame::Int(0));
        }
        _ => panic!("{listed:?}"),
    }
    let log = server.log();
    let reason = "the AOF holds windowed writes from more than a window after this server's clock";
    assert!(log.contains(reason), "{reason}: {log}");
}

#[test]
fn a_dump_fails_at_scandump_when_the_filters_oldest_items_expire_under_it() {
    let server = Server::start();
    let mut conn = server.conn();
    let changed = Err(Frame::error(
        "ERR the filter changed since this dump began (its oldest items expired, or the key holds \
         another filter): start again at iterator 0",
    ));
    // Each step is judged by the parts' expiries BF.DEBUG reports and when its requests went and
    // came back. Where a busy machine let a part expire before a step that needs it live, the
    // steps are taken again on a fresh key (two seconds each).
    for attempt in 0.. {
        assert!(
            attempt < 5,
            "five attempts, each too slow for its parts' lives"
        );
        let (key, copy, again) = (
            format!("w{attempt}"),
            format!("copy{attempt}"),
            format!("again{attempt}"),
        );
        ok(
            &mut conn,
            &["BF.RESERVE", &key, "0.01", "1000", "WINDOW", "2"],
        );
        sleep_into_next_slot(SLOT, 20);
        let old = timed_by(|| madd(&mut conn, &key, &names("old", 0, 50)));
        assert!(!old.reply.is_error());
        sleep_into_next_slot(SLOT, 20);
        sleep_into_next_slot(SLOT, 20);
        assert!(!madd(&mut conn, &key, &names("new", 0, 50)).is_error());
        // The old items' part and the new ones', in generations at least two slots apart, as the
        // server made them; only the new ones where the old ones expired before the read.
        let listed = timed_by(|| generations(&mut conn, &key));
        let (old_until, new_until) = match listed.reply[..] {
            [(old_from, old_until, 50), (new_from, new_until, 50)] => {
                assert!(new_from >= old_from + 2 * SLOT, "{listed:?}");
                (old_until, new_until)
            }
            [(_, _, 50)] => {
                let expiry = old.sent + 2000..=old.answered + 2000;
                assert_ne!(listed.live(expiry), Some(true), "{listed:?}");
                continue;
            }
            _ => panic!("{listed:?}"),
        };
        // The header and the old items' chunk, read while the old items were live.
        let header = timed_by(|| scan(&mut conn, &key, 0));
        let (first, header_bytes) = header.reply.clone().unwrap();
        if header_generations(&header_bytes).len() == 1 {
            assert_ne!(header.live(old_until..=old_until), Some(true));
            continue;
        }
        let chunk = timed_by(|| scan(&mut conn, &key, first));
        let (second, old_chunk) = match chunk.reply.clone() {
            Ok(read) => read,
            refused => {
                assert_eq!(refused, changed);
                assert_ne!(chunk.live(old_until..=old_until), Some(true));
                continue;
            }
        };
        // The old items expire, and a write sent after that drops them (or the sweep did): every
        // later offset moves.
        sleep_until(old_until + 1);
        assert_eq!(conn.call(&["BF.ADD", &key, "trigger"]), Frame::Int(1));
        assert_eq!(scan(&mut conn, &key, second), changed);
        // What was loaded is not a filter that answers short: it is still being restored.
        assert_eq!(
            loadchunk(&mut conn, &copy, first, &header_bytes),
            Frame::ok()
        );
        assert_eq!(loadchunk(&mut conn, &copy, second, &old_chunk), Frame::ok());
        let refused = conn.call(&["BF.EXISTS", &copy, "new:0"]);
        assert!(
            error_text(&refused).starts_with("ERR filter is being restored by BF.LOADCHUNK"),
            "{refused:?}"
        );
        // Started again, the dump is whole: the new items and the trigger, not the old ones, where
        // the new items' part was still live when the last reply came back.
        let restored = timed_by(|| {
            for (iterator, data) in common::scandump(&mut conn, &key) {
                assert_eq!(loadchunk(&mut conn, &again, iterator, &data), Frame::ok());
            }
            let mut probe = vec!["BF.MEXISTS".to_string(), again.clone()];
            probe.extend(names("new", 0, 50));
            probe.push("trigger".into());
            (conn.call(&probe).items(), conn.call(&["BF.CARD", &again]))
        });
        if restored.live(new_until..=new_until) != Some(true) {
            continue;
        }
        let (answers, card) = restored.reply;
        assert!(answers.iter().all(|answer| *answer == Frame::Int(1)));
        assert_eq!(card, Frame::Int(51));
        return;
    }
}

#[test]
fn a_chunk_of_another_dump_is_refused() {
    let server = Server::start();
    let mut conn = server.conn();
    for key in ["a", "b"] {
        ok(
            &mut conn,
            &["BF.RESERVE", key, "0.01", "1000", "WINDOW", "60"],
        );
    }
    // Their oldest parts are in different slots (15 seconds each), so their dumps differ.
    assert_eq!(conn.call(&["BF.ADD", "a", "x"]), Frame::Int(1));
    sleep_into_next_slot(15_000, 10);
    assert_eq!(conn.call(&["BF.ADD", "b", "x"]), Frame::Int(1));
    let (a, b) = (
        common::scandump(&mut conn, "a"),
        common::scandump(&mut conn, "b"),
    );
    assert_ne!(a[1].0, b[1].0);
    assert_eq!(loadchunk(&mut conn, "copy", a[0].0, &a[0].1), Frame::ok());
    assert_eq!(
        loadchunk(&mut conn, "copy", b[1].0, &b[1].1),
        Frame::error(
            "ERR invalid chunk: it belongs to another dump than the header's (the iterator's tag \
             differs)"
        )
    );
    assert_eq!(loadchunk(&mut conn, "copy", a[1].0, &a[1].1), Frame::ok());
    assert_eq!(conn.call(&["BF.EXISTS", "copy", "x"]), Frame::Int(1));
}

#[test]
fn windowed_scandump_iterators_are_exact_in_a_double_and_must_carry_the_filters_tag() {
    let server = Server::start();
    let mut conn = server.conn();
    ok(
        &mut conn,
        &["BF.RESERVE", "w", "0.01", "1000", "WINDOW", "60"],
    );
    assert!(!madd(&mut conn, "w", &names("item", 0, 10)).is_error());
    let chunks = common::scandump(&mut conn, "w");
    // Tagged, yet below 2^53: node-redis and Lua read integers as doubles and pass them back.
    for (iterator, _) in &chunks {
        assert!(*iterator > 1 << 38, "{iterator} carries no tag");
        assert!(*iterator < 1 << 53, "{iterator} is not exact in a double");
        assert_eq!(*iterator as f64 as i64, *iterator);
    }
    let tag = chunks[1].0 >> 38;
    let changed = Frame::error(
        "ERR the filter changed since this dump began (its oldest items expired, or the key holds \
         another filter): start again at iterator 0",
    );
    // An untagged iterator is no dump this filter began.
    assert_eq!(
        scan(&mut conn, "w", chunks[1].0 & ((1 << 38) - 1)),
        Err(changed)
    );
    // The tag with position 0 names no chunk.
    assert_eq!(
        scan(&mut conn, "w", tag << 38),
        Err(Frame::error("ERR invalid iterator"))
    );
    assert_eq!(scan(&mut conn, "w", chunks[1].0), Ok((0, Vec::new())));
}

/// Loads a dump read with SCANDUMP into `copy`, chunk by chunk as they are read, after `between`
/// has run once the header was read; the chunks LOADCHUNK refused.
fn copy_while_changing(
    conn: &mut Conn,
    key: &str,
    copy: &str,
    between: impl FnOnce(&mut Conn),
) -> Vec<Frame> {
    let (mut iterator, header) = scan(conn, key, 0).unwrap();
    assert_eq!(loadchunk(conn, copy, iterator, &header), Frame::ok());
    between(conn);
    let mut refused = Vec::new();
    loop {
        let (next, data) = scan(conn, key, iterator).unwrap();
        if next == 0 {
            return refused;
        }
        let reply = loadchunk(conn, copy, next, &data);
        if reply != Frame::ok() {
            refused.push(reply);
        }
        iterator = next;
    }
}

#[test]
fn a_dump_taken_while_items_arrive_loads_the_filter_its_header_described() {
    let server = Server::start();
    let mut conn = server.conn();
    let not_restoring = Frame::error(
        "ERR invalid chunk: the filter is not being restored (data chunks only follow the header \
         chunk that created it)",
    );
    // A windowed filter: 25 items in parts of 10, then 25 more arrive mid-dump (into the newest
    // part of the header and into new parts after it).
    ok(
        &mut conn,
        &["BF.RESERVE", "w", "0.01", "80", "WINDOW", "60"],
    );
    assert!(!madd(&mut conn, "w", &names("early", 0, 25)).is_error());
    let size = bf_size(&mut conn, "w");
    let described = generations(&mut conn, "w");
    let refused = copy_while_changing(&mut conn, "w", "copy", |conn| {
        assert!(!madd(conn, "w", &names("late", 0, 25)).is_error());
    });
    // The copy is whole (in use) and is the filter as the header described it; the chunks of the
    // parts added after the header are refused, loudly.
    assert!(!refused.is_empty());
    assert!(refused.iter().all(|reply| *reply == not_restoring));
    assert_eq!(conn.call(&["BF.CARD", "copy"]), Frame::Int(25));
    assert_eq!(bf_size(&mut conn, "copy"), size);
    assert_eq!(generations(&mut conn, "copy"), described);
    let mut probe = vec!["BF.MEXISTS".to_string(), "copy".to_string()];
    probe.extend(names("early", 0, 25));
    assert!(conn
        .call(&probe)
        .items()
        .iter()
        .all(|a| *a == Frame::Int(1)));
    // It forgets nothing earlier than the source: each part expires no earlier there.
    let source = generations(&mut conn, "w");
    assert!(described[0].1 <= source[0].1);

    // A chain that grows a sub-filter mid-dump: the same.
    ok(&mut conn, &["BF.RESERVE", "c", "0.01", "100"]);
    common::fill(&mut conn, "c", 100);
    let info = conn.call(&["BF.INFO", "c"]);
    let refused = copy_while_changing(&mut conn, "c", "chain", |conn| {
        assert!(!madd(conn, "c", &names("late", 0, 150)).is_error());
        assert_eq!(
            conn.call(&["BF.INFO", "c", "FILTERS"]).items()[0],
            Frame::Int(2)
        );
    });
    assert_eq!(refused, vec![not_restoring]);
    assert_eq!(conn.call(&["BF.INFO", "chain"]), info);
    let mut probe = vec!["BF.MEXISTS".to_string(), "chain".to_string()];
    probe.extend((0..100).map(|i| format!("item:{i}")));
    // Every name `fill` sent before the dump (at least these) answers 1 in the copy.
    assert!(conn
        .call(&probe)
        .items()
        .iter()
        .all(|a| *a == Frame::Int(1)));
}
