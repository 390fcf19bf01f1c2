//! Cuckoo filters through every path a value takes: RDB (restart, `DEBUG RELOAD`), `DUMP`/
//! `RESTORE`, `COPY`, an AOF rewrite replayed, `CF.SCANDUMP`/`CF.LOADCHUNK` (in order, once, into
//! a filter being restored only), replicas and full syncs (deterministic whatever the replica's
//! own `bf.cf-*` defaults are, `CF.LOADCHUNK`'s data included), a compaction that stays bounded
//! on a big filter, and the reasons `RESTORE` logs for what it refuses.

mod common;

use common::chunks::{being_restored, cf_loadchunk as loadchunk, cf_scandump as scandump};
use common::payload::{Envelope, Field};
use common::{command_usec, digest, flavor, info_reply_field, Conn, Frame, Options, Server};

fn call(conn: &mut Conn, line: &str) -> Frame {
    conn.call(&line.split(' ').collect::<Vec<_>>())
}

/// `count` items `prefix:i` added with one CF.INSERT per hundred.
fn add_items(conn: &mut Conn, key: &str, prefix: &str, count: usize) {
    for start in (0..count).step_by(100) {
        let mut insert = vec!["CF.INSERT".to_string(), key.into(), "ITEMS".into()];
        insert.extend((start..(start + 100).min(count)).map(|i| format!("{prefix}:{i}")));
        let answers = conn.call(&insert).items();
        assert!(
            answers.iter().all(|a| *a == Frame::Int(1)),
            "{key}: {answers:?}"
        );
    }
}

/// A filter's whole state as a client can see it: its CF.SCANDUMP sequence, CF.DEBUG line and
/// DEBUG DIGEST-VALUE.
#[derive(Debug, PartialEq)]
struct State(Vec<(i64, Vec<u8>)>, Frame, Frame);

fn state(conn: &mut Conn, key: &str) -> State {
    State(
        scandump(conn, key),
        call(conn, &format!("CF.DEBUG {key}")),
        digest(conn, key),
    )
}

/// Four filters made four ways: reserved and grown, auto-created, with deletes that compacted,
/// with bucket size 4 and expansion 2.
fn four_filters(conn: &mut Conn) -> Vec<(&'static str, State)> {
    assert_eq!(call(conn, "CF.RESERVE grown 64 EXPANSION 2"), Frame::ok());
    add_items(conn, "grown", "g", 600);
    assert_eq!(call(conn, "CF.ADD auto x"), Frame::Int(1));
    assert_eq!(
        call(conn, "CF.RESERVE compacted 32 EXPANSION 2"),
        Frame::ok()
    );
    add_items(conn, "compacted", "c", 300);
    for i in (0..300).step_by(3) {
        assert_eq!(
            call(conn, &format!("CF.DEL compacted c:{i}")),
            Frame::Int(1)
        );
    }
    assert_eq!(
        call(
            conn,
            "CF.RESERVE b4 500 BUCKETSIZE 4 EXPANSION 2 MAXITERATIONS 50"
        ),
        Frame::ok()
    );
    add_items(conn, "b4", "b", 1500);
    ["grown", "auto", "compacted", "b4"]
        .into_iter()
        .map(|key| (key, state(conn, key)))
        .collect()
}

fn assert_kept(conn: &mut Conn, filters: &[(&str, State)], suffix: &str) {
    for (key, expected) in filters {
        let copy = format!("{key}{suffix}");
        assert_eq!(&state(conn, &copy), expected, "{copy}");
    }
}

#[test]
fn restarts_reloads_dumps_and_copies_keep_every_byte() {
    let mut server = Server::start();
    let mut conn = server.conn();
    let filters = four_filters(&mut conn);
    assert_eq!(call(&mut conn, "DEBUG RELOAD"), Frame::ok());
    assert_kept(&mut conn, &filters, "");
    for (key, _) in &filters {
        let payload = conn.call(&["DUMP", key]).bytes();
        let copy = format!("{key}:restored");
        let restored = conn.call(&[b"RESTORE".as_slice(), copy.as_bytes(), b"0", &payload]);
        assert_eq!(restored, Frame::ok());
        assert_eq!(
            call(&mut conn, &format!("COPY {key} {key}:copied")),
            Frame::Int(1)
        );
    }
    assert_kept(&mut conn, &filters, ":restored");
    assert_kept(&mut conn, &filters, ":copied");
    drop(conn);
    server.restart();
    let mut conn = server.conn();
    assert_kept(&mut conn, &filters, "");
    assert_kept(&mut conn, &filters, ":copied");
    // MEMORY USAGE is Size and the key's own bytes.
    let size = call(&mut conn, "CF.INFO grown").items()[1].int();
    let usage = call(&mut conn, "MEMORY USAGE grown").int();
    assert_eq!(usage, size + flavor().key_bytes());
}

#[test]
fn an_aof_rewrite_holds_filters_as_loadchunk_calls_and_replays_them() {
    let options = Options::aof_without_preamble();
    let mut server = Server::with(options.clone());
    let mut conn = server.conn();
    let filters = four_filters(&mut conn);
    assert!(!call(&mut conn, "BGREWRITEAOF").is_error());
    server.wait_for_aof_rewrite();
    drop(conn);
    let aof = server.aof_text();
    assert!(aof.contains("CF.LOADCHUNK") && !aof.contains("CF.RESERVE"));
    server.restart_with(options);
    assert_kept(&mut server.conn(), &filters, "");
}

#[test]
fn chunks_rebuild_a_filter_in_order_once_and_only_while_it_is_restored() {
    let server = Server::start();
    let mut conn = server.conn();
    let filters = four_filters(&mut conn);
    for (key, expected) in &filters {
        let chunks = scandump(&mut conn, key);
        let copy = format!("{key}:loaded");
        let (header_iterator, header) = &chunks[0];
        assert_eq!(*header_iterator, 1);
        assert_eq!(header.len(), 38);
        assert_eq!(loadchunk(&mut conn, &copy, 1, header), Frame::ok());
        // Restoring: no add, no lookup, no chunk out of order; the error names CF.LOADCHUNK.
        let total: u64 = chunks[1..]
            .iter()
            .map(|(_, bytes)| bytes.len() as u64)
            .sum();
        assert_eq!(
            call(&mut conn, &format!("CF.ADD {copy} x")),
            being_restored("CF.LOADCHUNK", 0, total)
        );
        assert_eq!(
            call(&mut conn, &format!("CF.EXISTS {copy} x")),
            being_restored("CF.LOADCHUNK", 0, total)
        );
        if let Some((iterator, bytes)) = chunks.get(2) {
            assert!(loadchunk(&mut conn, &copy, *iterator, bytes).is_error());
        }
        let mut loaded = 0;
        for (iterator, bytes) in &chunks[1..] {
            assert_eq!(
                call(&mut conn, &format!("CF.COUNT {copy} x")),
                being_restored("CF.LOADCHUNK", loaded, total)
            );
            assert_eq!(loadchunk(&mut conn, &copy, *iterator, bytes), Frame::ok());
            loaded += bytes.len() as u64;
        }
        assert_eq!(&state(&mut conn, &copy), expected, "{copy}");
        // A filter in use takes no chunk: nobody overwrites a live filter's buckets.
        let (iterator, bytes) = &chunks[1];
        let refused = loadchunk(&mut conn, &copy, *iterator, bytes);
        assert!(refused.is_error(), "{refused:?}");
        assert_eq!(
            loadchunk(&mut conn, &copy, 1, header),
            Frame::error("ERR item exists")
        );
    }
}

/// `payload`'s fields with the first string two bytes short.
fn first_string_short(envelope: &Envelope, payload: &[u8]) -> (Vec<u8>, usize) {
    let mut fields = envelope.fields(payload);
    let string = fields
        .iter_mut()
        .find_map(|field| match field {
            Field::Buffer(bytes) => Some(bytes),
            _ => None,
        })
        .unwrap();
    let len = string.len();
    string.truncate(len - 2);
    (envelope.payload(&fields), len)
}

#[test]
fn restore_logs_why_it_refuses_other_encodings_and_short_sub_filters() {
    let server = Server::start();
    let mut conn = server.conn();
    // Strings as they are, so that the test can read the payloads' fields.
    assert_eq!(call(&mut conn, "CONFIG SET rdbcompression no"), Frame::ok());
    assert_eq!(call(&mut conn, "CF.RESERVE model 64"), Frame::ok());
    assert_eq!(call(&mut conn, "CF.ADD model x"), Frame::Int(1));
    let payload = conn.call(&["DUMP", "model"]).bytes();
    let envelope = Envelope::from_dump(&payload);
    let fields = envelope.fields(&payload);
    let refused = |conn: &mut Conn, forged: &[u8], reason: &str| {
        assert_eq!(
            conn.call(&[b"RESTORE".as_slice(), b"forged", b"0", forged]),
            Frame::error("ERR Bad data format"),
            "{reason}"
        );
        assert_eq!(conn.call(&["EXISTS", "forged"]), Frame::Int(0));
        let log = server.log();
        assert!(
            log.contains(&format!("<bf> cannot load a filter: {reason}")),
            "{reason}: {log}"
        );
    };
    // An older encoding (RedisBloom before 2.2) and a newer one, each said to be what it is.
    let older = envelope.with_encoding_version(3).payload(&fields);
    refused(
        &mut conn,
        &older,
        "a cuckoo filter of encoding version 3: only version 4 loads (RedisBloom 2.2 and later \
         write it, and this module); version 3 is older, from RedisBloom before 2.2, which hashed \
         items with 32-bit MurmurHash2 (no later release answers by it)",
    );
    let newer = envelope.with_encoding_version(5).payload(&fields);
    refused(
        &mut conn,
        &newer,
        "a cuckoo filter of encoding version 5: only version 4 loads (RedisBloom 2.2 and later \
         write it, and this module); version 5 is newer, unknown to this module",
    );
    // A sub-filter's buckets two bytes short, in the cuckoo filter's words.
    let (short, len) = first_string_short(&envelope, &payload);
    refused(
        &mut conn,
        &short,
        &format!("a sub-filter's buckets of {} bytes, not {len}", len - 2),
    );
    // A Bloom filter's bit array keeps its own.
    assert_eq!(call(&mut conn, "BF.ADD bloom x"), Frame::Int(1));
    let bloom = conn.call(&["DUMP", "bloom"]).bytes();
    let (short, len) = first_string_short(&Envelope::from_dump(&bloom), &bloom);
    refused(
        &mut conn,
        &short,
        &format!("a bit-array piece of {} bytes, not {len}", len - 2),
    );
    // The real payload restores.
    assert_eq!(
        conn.call(&[b"RESTORE".as_slice(), b"real", b"0", &payload]),
        Frame::ok()
    );
    assert_eq!(call(&mut conn, "CF.EXISTS real x"), Frame::Int(1));
}

/// A replica's own defaults, unlike the primary's in every cuckoo setting.
fn odd_replica() -> Server {
    Server::with(Options::default().module_args(&[
        "cf-initial-size",
        "40",
        "cf-bucket-size",
        "4",
        "cf-max-iterations",
        "3",
        "cf-expansion-factor",
        "8",
        "cf-max-expansions",
        "2",
        "max-filter-bytes",
        "4096",
    ]))
}

#[test]
fn replicas_and_full_syncs_end_identical_whatever_their_defaults() {
    let primary = Server::start();
    let replica = odd_replica();
    replica.replicate(&primary);
    let mut conn = primary.conn();
    let filters = four_filters(&mut conn);
    // A copy made with LOADCHUNK: its data chunks reach the replica too (RedisBloom 2.4 sends
    // the header alone, and a promoted replica answers 0 for everything).
    for (iterator, bytes) in scandump(&mut conn, "grown") {
        assert_eq!(
            loadchunk(&mut conn, "grown:loaded", iterator, &bytes),
            Frame::ok()
        );
    }
    assert_eq!(call(&mut conn, "CF.COMPACT compacted"), Frame::ok());
    let mut all: Vec<(String, State)> = filters
        .iter()
        .map(|(key, _)| (key.to_string(), state(&mut conn, key)))
        .collect();
    all.push(("grown:loaded".into(), state(&mut conn, "grown:loaded")));
    replica.catch_up(&primary);
    let mut mirror = replica.conn();
    for (key, expected) in &all {
        assert_eq!(&state(&mut mirror, key), expected, "{key}");
    }
    let late = odd_replica();
    late.replicate(&primary);
    let mut mirror = late.conn();
    for (key, expected) in &all {
        assert_eq!(
            &state(&mut mirror, key),
            expected,
            "{key} after a full sync"
        );
    }
}

/// A replica applies a primary's single CF.ADD and CF.ADDNX past its own sub-filter limit: a
/// single add asks whether it is a replay only in a filter at that limit (issue 54), and there
/// the answer must let it through.
#[test]
fn a_replica_applies_single_adds_past_its_own_sub_filter_limit() {
    let primary = Server::start();
    let replica = odd_replica();
    replica.replicate(&primary);
    let mut conn = primary.conn();
    assert_eq!(
        call(&mut conn, "CF.RESERVE single 64 EXPANSION 2"),
        Frame::ok()
    );
    for i in 0..600 {
        assert_eq!(
            call(&mut conn, &format!("CF.ADD single a:{i}")),
            Frame::Int(1)
        );
        // Its answer aside (a new item may seem held), the replica must do as the primary did.
        call(&mut conn, &format!("CF.ADDNX single n:{i}"));
    }
    let filters = info_reply_field(&mut conn, "CF.INFO", "single", "Number of filters");
    assert!(
        matches!(filters, Frame::Int(n) if n > 2),
        "past the replica's limit of 2: {filters:?}"
    );
    let expected = state(&mut conn, "single");
    replica.catch_up(&primary);
    assert_eq!(state(&mut replica.conn(), "single"), expected);
}

#[test]
fn a_delete_on_a_big_filter_compacts_within_a_bounded_budget() {
    let server = Server::start();
    let mut conn = server.conn();
    // Two sub-filters of 2^20 and 2^21 buckets of 2 slots, the newer full of one item's
    // fingerprint (built with CF.LOADCHUNK): 4 million slots past the first, which RedisBloom's
    // compaction walks inside CF.DEL.
    use filters::cuckoo::print::{Hashing, Print};
    let fingerprint = Print::of(b"x", Hashing::RedisBloom).fingerprint(8) as u8;
    let mut header = Vec::new();
    for field in [5u64, 1 << 20, 0, 2] {
        header.extend(field.to_le_bytes());
    }
    for field in [2u16, 20, 2] {
        header.extend(field.to_le_bytes());
    }
    let first = vec![0u8; 2 << 20];
    let newer = vec![fingerprint; 4 << 20];
    // The same filter built, a delete and a compaction made three times: each bounded by the
    // fastest of the three, timed by the server itself (INFO commandstats: the call alone, not
    // this test's waits for a busy machine's scheduler).
    let (mut delete, mut compact) = (f64::INFINITY, f64::INFINITY);
    for round in 0..3 {
        if round > 0 {
            assert_eq!(conn.call(&["DEL", "big"]), Frame::Int(1));
        }
        assert_eq!(loadchunk(&mut conn, "big", 1, &header), Frame::ok());
        assert_eq!(
            loadchunk(&mut conn, "big", 1 + (2 << 20), &first),
            Frame::ok()
        );
        assert_eq!(
            loadchunk(&mut conn, "big", 1 + (6 << 20), &newer),
            Frame::ok()
        );
        // Deleting one item (5 items, 1 delete: past a tenth) compacts: a window of the newer
        // sub-filter, as far as 65,536 probes of older buckets take it.
        assert_eq!(call(&mut conn, "CONFIG RESETSTAT"), Frame::ok());
        assert_eq!(call(&mut conn, "CF.DEL big x"), Frame::Int(1));
        delete = delete.min(command_usec(&mut conn, "CF.DEL"));
        assert_eq!(
            call(&mut conn, "CF.DEBUG big"),
            Frame::bulk(
                "bktsize:2 buckets:1048576 items:4 deletes:0 filters:2 max_iterations:20 \
                 expansion:2"
            )
        );
        // Each fingerprint found room at its first or second probe (the first sub-filter is
        // empty and half as big): between 32,768 and 65,536 moved.
        let moved = scandump(&mut conn, "big")[1]
            .1
            .iter()
            .filter(|&&byte| byte == fingerprint)
            .count();
        assert!((32_768..=65_536).contains(&moved), "{moved}");
        assert_eq!(call(&mut conn, "CF.COMPACT big"), Frame::ok());
        compact = compact.min(command_usec(&mut conn, "CF.COMPACT"));
    }
    assert!(delete < 5e6, "CF.DEL: {delete} µs");
    assert!(compact < 5e6, "CF.COMPACT: {compact} µs");
}
