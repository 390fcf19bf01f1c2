//! What one cuckoo command may cost and take: no compaction stalls the server whatever the filter
//! (RedisBloom's walk probes every older sub-filter for every fingerprint: 16 s for a filter of
//! 65,535 one-slot sub-filters, 155 ms and more for one made with default settings), an item
//! refused at a size limit makes its evictions once (`INFO bf`'s `bf_cf_evictions` counts them),
//! and a refusal names a size that exists, or says in words that none can be counted.
//!
//! The time bounds only catch a stall: each is twenty times or more what the command takes here,
//! and a quarter or less of what it took before the budget counted every probe. Each is held by the
//! fastest of several runs of the command on copies of the same filter, as the server timed them
//! (`INFO commandstats`), which a busy machine's scheduling does not slow by seconds every time.

mod common;

use common::payload::{Envelope, Field};
use common::{fastest_on_copies, info_bf, Conn, Frame, Options, Server};
use filters::cuckoo::print::{Hashing, Print};
use filters::cuckoo::Cuckoo;

fn call(conn: &mut Conn, line: &str) -> Frame {
    conn.call(&line.split(' ').collect::<Vec<_>>())
}

/// What one compaction may take here, at most, in microseconds of the server's time: catches a
/// walk in proportion to the sub-filters times the slots (seconds), not a slow machine.
const STALL_USEC: f64 = 1_000_000.0;

/// The fingerprint of `item` in a filter made without ERROR.
fn fingerprint(item: &[u8]) -> u8 {
    Print::of(item, Hashing::RedisBloom).fingerprint(8) as u8
}

/// A DUMP payload of a filter of one-slot sub-filters (BUCKETSIZE 1, EXPANSION 1, one bucket
/// each): `slots[i]` is sub-filter `i`'s one slot (0: empty). Every field is one the loaders
/// accept.
fn one_slot_filter(envelope: &Envelope, slots: &[u8], items: u64) -> Vec<u8> {
    let mut fields: Vec<Field> = [slots.len() as u64, 1, items, 0, 1, 20, 1]
        .map(Field::Unsigned)
        .to_vec();
    for &slot in slots {
        fields.push(Field::Unsigned(1));
        fields.push(Field::Buffer(vec![slot]));
    }
    envelope.payload(&fields)
}

/// The envelope of a real cuckoo filter's DUMP.
fn envelope(conn: &mut Conn) -> Envelope {
    assert_eq!(call(conn, "CF.RESERVE model 8"), Frame::ok());
    let payload = conn.call(&["DUMP", "model"]).bytes();
    Envelope::from_dump(&payload)
}

/// Runs `command` (`verb key args...`) on the filter at its key as it is now, three times (two
/// copies, then the key itself: see [`fastest_on_copies`]): each run answers `expected`, and the
/// fastest, as the server timed it, is under [`STALL_USEC`]. A compaction's moves are a function
/// of the filter alone, so each run does the same work.
fn assert_no_stall(conn: &mut Conn, command: &str, expected: Frame) {
    let words: Vec<&str> = command.split(' ').collect();
    let (replies, fastest) = fastest_on_copies(conn, words[1], words[0], 3, |conn, key| {
        let mut on_key = words.clone();
        on_key[1] = key;
        conn.call(&on_key)
    });
    assert_eq!(replies, vec![expected; 3], "{command}");
    assert!(
        fastest < STALL_USEC,
        "{command} took {fastest} µs at the fastest"
    );
}

fn debug(conn: &mut Conn, key: &str) -> String {
    String::from_utf8(call(conn, &format!("CF.DEBUG {key}")).bytes()).unwrap()
}

#[test]
fn no_compaction_of_a_restored_filter_stalls_the_server() {
    let server = Server::with(Options::default().config("bf.max-filter-bytes", "64mb"));
    let mut conn = server.conn();
    let envelope = envelope(&mut conn);
    let x = fingerprint(b"x");

    // 65,535 one-slot sub-filters, every one full: nothing can move, and RedisBloom's walk tried
    // every older sub-filter for every fingerprint (16 s).
    let full = one_slot_filter(&envelope, &[x; 65_535], 65_535);
    assert_eq!(
        conn.call(&[b"RESTORE".as_slice(), b"full", b"0", &full]),
        Frame::ok()
    );
    let before = debug(&mut conn, "full");
    assert_no_stall(&mut conn, "CF.COMPACT full", Frame::ok());
    assert_eq!(debug(&mut conn, "full"), before, "nothing could move");
    assert_no_stall(&mut conn, "CF.COMPACT full", Frame::ok());

    // A third of them full, a third empty, a third holding one fingerprint, and a count of 10
    // items: a delete compacts (10% deleted), and every fingerprint of the last third has room,
    // but only past the full third, which RedisBloom's walk probed for each one (seconds).
    let third = 21_845;
    let mut slots = vec![x; 3 * third];
    slots[third..2 * third].fill(0);
    let split = one_slot_filter(&envelope, &slots, 10);
    assert_eq!(
        conn.call(&[b"RESTORE".as_slice(), b"split", b"0", &split]),
        Frame::ok()
    );
    assert_no_stall(&mut conn, "CF.DEL split x", Frame::Int(1));
    let fields = debug(&mut conn, "split");
    assert!(fields.contains("items:9 deletes:0 "), "{fields}");
    // The compaction moved fingerprints into the empty third and freed the sub-filters it
    // emptied: fewer than before, no fewer than the full third and one.
    let filters: u64 = fields
        .split(' ')
        .find_map(|field| field.strip_prefix("filters:"))
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        (third as u64 + 1..3 * third as u64).contains(&filters),
        "{fields}"
    );
    // Further compactions go on where it stopped, each as bounded, losing nothing.
    for _ in 0..3 {
        assert_no_stall(&mut conn, "CF.COMPACT split", Frame::ok());
    }
    assert_eq!(call(&mut conn, "CF.EXISTS split x"), Frame::Int(1));
    assert_eq!(conn.call(&["PING"]), Frame::simple("PONG"));
}

#[test]
fn no_compaction_of_a_filter_grown_with_default_settings_stalls_the_server() {
    // CF.RESERVE f 32768 BUCKETSIZE 4 EXPANSION 1 filled by CF.INSERT to its 32 sub-filters
    // (about a million items, 1 MB): RedisBloom's CF.COMPACT takes 155 to 221 ms on it.
    let server = Server::start();
    let mut conn = server.conn();
    assert_eq!(
        call(&mut conn, "CF.RESERVE f 32768 BUCKETSIZE 4 EXPANSION 1"),
        Frame::ok()
    );
    let mut next = 0;
    loop {
        let mut insert = vec!["CF.INSERT".to_string(), "f".into(), "ITEMS".into()];
        insert.extend((next..next + 20_000).map(|i| format!("item:{i}")));
        next += 20_000;
        let reply = conn.call(&insert);
        if reply.items().iter().any(|answer| answer != &Frame::Int(1)) {
            break;
        }
    }
    let fields = debug(&mut conn, "f");
    assert!(fields.contains("filters:32 "), "{fields}");
    // About a millisecond each here (RedisBloom's walk: 76 to 92 ms on the same machine). Timed
    // by the server itself (INFO commandstats: the call alone, not this test's threads waiting
    // for their turn), the fastest of five compactions of the same filter is held to a fifth of
    // that, which a busy machine's scheduling does not reach five times running.
    let (replies, fastest) = fastest_on_copies(&mut conn, "f", "CF.COMPACT", 5, |conn, key| {
        conn.call(&["CF.COMPACT", key])
    });
    assert_eq!(replies, vec![Frame::ok(); 5]);
    assert!(fastest < 20_000.0, "{fastest} µs");
    // Deletes of a tenth of the items, each compacting now and then, all bounded.
    let deletes: Vec<Vec<String>> = (0..next)
        .step_by(10)
        .map(|i| vec!["CF.DEL".into(), "f".into(), format!("item:{i}")])
        .collect();
    // Timed by the server, on average (5 ms each would be 8 minutes).
    assert_eq!(conn.call(&["CONFIG", "RESETSTAT"]), Frame::ok());
    common::pipeline(&mut conn, &deletes);
    let per_delete = common::command_usec(&mut conn, "CF.DEL") / deletes.len() as f64;
    assert!(per_delete < 5_000.0, "{per_delete} µs per delete");
    assert_no_stall(&mut conn, "CF.COMPACT f", Frame::ok());
    assert_eq!(call(&mut conn, "CF.EXISTS f item:1"), Frame::Int(1));
}

/// `bf_cf_evictions` now.
fn evictions(server: &Server) -> u64 {
    info_bf(server, "bf_cf_evictions")
}

/// Adds items one at a time until one is refused: that refusal.
fn fill_until_refused(conn: &mut Conn, key: &str) -> Frame {
    for index in 0.. {
        let reply = conn.call(&["CF.ADD", key, &format!("item:{index}")]);
        if reply != Frame::Int(1) {
            return reply;
        }
        assert!(index < 100_000, "never refused");
    }
    unreachable!()
}

/// `bf_cf_evictions` in an `INFO bf` reply.
fn evictions_in(info: &Frame) -> u64 {
    info.text()
        .lines()
        .find_map(|line| line.strip_prefix("bf_cf_evictions:"))
        .expect("bf_cf_evictions")
        .trim()
        .parse()
        .unwrap()
}

/// Adds new items to a filter at its limit, each followed by `INFO bf` (pipelined), until ten
/// are refused with a text starting with `refusal`: every refusal comes after exactly
/// `iterations` evictions (its MAXITERATIONS, undone). (Another refusal can turn up: an item
/// whose two one-slot buckets hold another item's fingerprint twice is refused as copies.)
fn assert_each_refusal_costs(conn: &mut Conn, key: &str, refusal: &str, iterations: u64) {
    let mut refused = 0;
    let mut last = evictions_in(&conn.call(&["INFO", "bf"]));
    // Rounds of 50 pairs: the replies a round leaves waiting in the server's output buffer count
    // in its used memory, which must stay under maxmemory.
    for round in 0..2000 {
        let commands: Vec<Vec<String>> = (0..50)
            .flat_map(|i| {
                let item = format!("late:{round}:{i}");
                [
                    vec!["CF.ADD".into(), key.into(), item],
                    vec!["INFO".into(), "bf".into()],
                ]
            })
            .collect();
        let replies = common::pipeline(conn, &commands);
        for pair in replies.chunks(2) {
            let now = evictions_in(&pair[1]);
            if pair[0] != Frame::Int(1) {
                assert_eq!(
                    now - last,
                    iterations,
                    "evictions of a refused item: {:?}",
                    pair[0]
                );
                if common::error_text(&pair[0]).starts_with(refusal) {
                    refused += 1;
                }
            }
            last = now;
        }
        if refused >= 10 {
            return;
        }
    }
    panic!("only {refused} refused");
}

#[test]
fn an_item_refused_at_a_size_limit_makes_its_evictions_once() {
    let server = Server::with(Options::default().config("bf.max-filter-bytes", "1kb"));
    let mut conn = server.conn();
    // 512 one-slot buckets fit in a kilobyte; a second sub-filter would not.
    assert_eq!(
        call(
            &mut conn,
            "CF.RESERVE limited 512 BUCKETSIZE 1 MAXITERATIONS 500"
        ),
        Frame::ok()
    );
    let refused = fill_until_refused(&mut conn, "limited");
    let text = common::error_text(&refused);
    assert!(
        text.starts_with("ERR filter would use ")
            && text.contains("over bf.max-filter-bytes (1024)"),
        "{text}"
    );
    // Each refused item: its 500 evictions (undone), once.
    assert_each_refusal_costs(&mut conn, "limited", &text, 500);
    // CF.INSERT: the first refused item of a batch counts its 500 once too, and shows the filter
    // full (it cannot grow past the limit): the items after it make no evictions (issue 52), so
    // the batch counts those 500 and at most 500 more for each item added before it.
    let before = evictions(&server);
    let mut insert = vec!["CF.INSERT".to_string(), "limited".into(), "ITEMS".into()];
    insert.extend((0..20).map(|i| format!("batch:{i}")));
    let reply = conn.call(&insert);
    let first = reply
        .items()
        .iter()
        .position(|a| *a == Frame::Int(-1))
        .unwrap_or_else(|| panic!("no refusal: {reply:?}")) as u64;
    let added = evictions(&server) - before;
    assert!(
        (500..=500 + first * 500).contains(&added),
        "{added} evictions, the first refusal at {first}: {reply:?}"
    );

    // The same buckets with EXPANSION 0 (refused as full, never grown): the same 500 per item.
    assert_eq!(
        call(
            &mut conn,
            "CF.RESERVE fixed 512 BUCKETSIZE 1 MAXITERATIONS 500 EXPANSION 0"
        ),
        Frame::ok()
    );
    let full = fill_until_refused(&mut conn, "fixed");
    assert_eq!(full, Frame::Error("ERR Filter is full".into()));
    assert_each_refusal_costs(&mut conn, "fixed", "ERR Filter is full", 500);
}

#[test]
fn an_item_refused_under_maxmemory_makes_its_evictions_once() {
    let server = Server::start();
    let mut conn = server.conn();
    // A sub-filter of 1 MiB; maxmemory leaves half of that, not room for a second one.
    assert_eq!(
        call(
            &mut conn,
            "CF.RESERVE big 1048576 BUCKETSIZE 4 MAXITERATIONS 300"
        ),
        Frame::ok()
    );
    let maxmemory = (common::used_memory(&mut conn) + (512 << 10)).to_string();
    assert_eq!(
        conn.call(&["CONFIG", "SET", "maxmemory", &maxmemory]),
        Frame::ok()
    );
    // Filled until items are refused.
    for first in (0..).step_by(500) {
        let mut insert = vec!["CF.INSERT".to_string(), "big".into(), "ITEMS".into()];
        insert.extend((first..first + 500).map(|i| format!("item:{i}")));
        if conn.call(&insert).items().contains(&Frame::Int(-1)) {
            break;
        }
        assert!(first < 2 << 20, "never refused");
    }
    // What growth needs: the filter with a second sub-filter less the filter now.
    let growth = Cuckoo::planned_bytes(4, [(1 << 18, 8), (1 << 18, 8)])
        - Cuckoo::planned_bytes(4, [(1 << 18, 8)]);
    let text = format!("OOM filter would need {growth} more bytes, more than maxmemory leaves (");
    assert_each_refusal_costs(&mut conn, "big", &text, 300);
}

#[test]
fn refusals_name_sizes_that_exist() {
    let server = Server::start();
    let mut conn = server.conn();
    let size = |capacity: u64, bucket_size: u8, bits: u8| {
        let buckets = (capacity / u64::from(bucket_size)).next_power_of_two();
        Cuckoo::planned_bytes(bucket_size, [(buckets, bits)])
    };
    let over = |bytes: u64, advice: &str| {
        Frame::Error(format!(
            "ERR filter would use {bytes} bytes, over bf.max-filter-bytes (1073741824); {advice}"
        ))
    };
    // 2^57 buckets of 2 slots: past the format's 2^56 buckets, but a size all the same.
    let bytes = size(1 << 58, 2, 8);
    assert_eq!(bytes, (1 << 58) + 112);
    let advice = "if it is meant to be that big: CONFIG SET bf.max-filter-bytes 268435457gb";
    assert_eq!(
        call(&mut conn, "CF.RESERVE k 288230376151711744"),
        over(bytes, advice)
    );
    assert_eq!(
        call(&mut conn, "CF.INSERT k CAPACITY 288230376151711744 ITEMS a"),
        over(bytes, advice)
    );
    // ERROR 0.01: 12-bit slots, 6 bytes a bucket of 4.
    let bytes = size(1 << 62, 4, 12);
    assert_eq!(
        call(&mut conn, "CF.RESERVE k 4611686018427387904 ERROR 0.01"),
        over(
            bytes,
            "if it is meant to be that big: CONFIG SET bf.max-filter-bytes 6442450945gb"
        )
    );
    // Past what 64 bits count: said in words.
    let words = Frame::Error(
        "ERR filter would use 2^64 bytes or more, over bf.max-filter-bytes (1073741824); no \
         setting allows that much"
            .into(),
    );
    assert_eq!(
        call(
            &mut conn,
            "CF.RESERVE k 9223372036854775807 ERROR 0.000000000001"
        ),
        words
    );
    assert_eq!(
        call(&mut conn, "CF.RESERVE k 9223372036854775807 BUCKETSIZE 255"),
        words
    );
    // Under a limit set past every machine: the size the server could not allocate.
    assert_eq!(
        call(
            &mut conn,
            "CONFIG SET bf.max-filter-bytes 9223372036854775807"
        ),
        Frame::ok()
    );
    assert_eq!(
        call(&mut conn, "CF.RESERVE k 288230376151711744"),
        Frame::Error(format!(
            "ERR out of memory: the server could not allocate {} bytes for the filter",
            size(1 << 58, 2, 8)
        ))
    );
    assert_eq!(conn.call(&["EXISTS", "k"]), Frame::Int(0));
}
