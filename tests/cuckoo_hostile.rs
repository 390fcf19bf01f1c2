//! Hostile input for cuckoo filters (`MBbloomCF`), the cases the Bloom filter is held to
//! (`datatype.rs`, `redisbloom_older.rs`, `loadchunk_restoring.rs`, `storm.rs`) repeated:
//!
//! - forged DUMP payloads with a valid CRC (the envelope taken from a real `DUMP`, encoding
//!   version 4), every field of RedisBloom's form and of this module's own (sub-filter count 0,
//!   flags) at its edges, strings a byte short or long, every truncation: each refused with
//!   `ERR Bad data format`, nothing left at the key, the server alive; claims of huge filters
//!   refused before anything is allocated for them;
//! - `CF.LOADCHUNK` headers (38 and 58 bytes) at their edges and data chunks out of order, twice,
//!   into a filter in use, past the end, empty: each refused with the module's own text, and
//!   nothing changed;
//! - a storm of clients hammering `CF.ADD`, `CF.DEL`, `CF.LOADCHUNK` and forged `RESTORE`s at
//!   once: the server lives, every filter left behind saves, loads, dumps and replays from an AOF
//!   rewrite unchanged, and no memory stays behind.

mod common;

use common::chunks::{
    being_restored, cf_loadchunk as loadchunk, cf_scandump as scandump, not_restoring, offset,
    out_of_order,
};
use common::payload::{Envelope, Field};
use common::rng::{mangle, Rng};
use common::{command_usec, debug_fields, digest, used_memory, Conn, Frame, Options, Server};
use filters::cuckoo::dump::Header;
use filters::cuckoo::print::{Hashing, Print};
use filters::cuckoo::table::table_bytes;
use filters::cuckoo::Bound;
use std::time::{Duration, Instant};

/// What RESTORE answers a payload its loader refuses.
const BAD_DATA: &str = "ERR Bad data format";

fn call(conn: &mut Conn, line: &str) -> Frame {
    conn.call(&line.split(' ').collect::<Vec<_>>())
}

fn restore(conn: &mut Conn, key: &str, payload: &[u8]) -> Frame {
    conn.call(&[b"RESTORE".as_slice(), key.as_bytes(), b"0", payload])
}

/// The envelope of a real payload: `CF.RESERVE model 8` (4 buckets of 2 slots) holding a, b, c,
/// RedisBloom's fact-sheet filter, whose fields are the ones RedisBloom writes.
fn envelope(conn: &mut Conn) -> (Envelope, Vec<u8>) {
    assert_eq!(call(conn, "CF.RESERVE model 8"), Frame::ok());
    for item in ["a", "b", "c"] {
        assert_eq!(conn.call(&["CF.ADD", "model", item]), Frame::Int(1));
    }
    let payload = conn.call(&["DUMP", "model"]).bytes();
    let envelope = Envelope::from_dump(&payload);
    let fields = format!("{:?}", envelope.fields(&payload));
    let expected = [1, 4, 3, 0, 2, 20, 1, 4].map(Field::Unsigned);
    let expected = format!("{:?}", expected.to_vec());
    assert!(
        fields.starts_with(&expected[..expected.len() - 1]),
        "{fields}"
    );
    (envelope, payload)
}

/// The server still answers, and the filter the envelope came from is intact.
fn still_answers(conn: &mut Conn) {
    assert_eq!(conn.call(&["PING"]), Frame::simple("PONG"));
    assert_eq!(conn.call(&["CF.EXISTS", "model", "a"]), Frame::Int(1));
    assert_eq!(
        call(conn, "CF.DEBUG model"),
        Frame::bulk(
            "bktsize:2 buckets:4 items:3 deletes:0 filters:1 max_iterations:20 expansion:1"
        )
    );
}

/// The fields of RedisBloom's form: sub-filter count, buckets (the first's), items, deletes,
/// bucket size, max iterations, expansion; then up to three sub-filters (each bucket count and
/// its bytes, zeros) following the expansion, their bytes the right length when it is at most a
/// megabyte and 8 bytes otherwise (a huge claim with nothing behind it).
#[derive(Clone, Copy)]
struct Shape {
    count: u64,
    buckets: u64,
    items: u64,
    deletes: u64,
    size: u64,
    iterations: u64,
    expansion: u64,
}

/// Two sub-filters, of 4 and 8 buckets of 2 slots (24 slots), empty.
const VALID: Shape = Shape {
    count: 2,
    buckets: 4,
    items: 0,
    deletes: 0,
    size: 2,
    iterations: 20,
    expansion: 2,
};

impl Shape {
    fn fields(&self) -> Vec<Field> {
        let mut fields: Vec<Field> = [
            self.count,
            self.buckets,
            self.items,
            self.deletes,
            self.size,
            self.iterations,
            self.expansion,
        ]
        .map(Field::Unsigned)
        .to_vec();
        let mut buckets = self.buckets;
        for _ in 0..self.count.min(3) {
            fields.push(Field::Unsigned(buckets));
            let len = buckets.saturating_mul(self.size);
            let len = if len <= 1 << 20 { len as usize } else { 8 };
            fields.push(Field::Buffer(vec![0; len]));
            buckets = buckets.saturating_mul(self.expansion.max(1));
        }
        fields
    }
}

/// [`VALID`]'s fields with field `index` replaced.
fn valid_but(index: usize, field: Field) -> Vec<Field> {
    let mut fields = VALID.fields();
    fields[index] = field;
    fields
}

/// This module's own form: sub-filter count 0, `flags`, then `extra` (the error rate if bounded,
/// the next chunk's offset if restoring), then RedisBloom's fields.
fn ours(flags: u64, extra: &[Field], fields: Vec<Field>) -> Vec<Field> {
    let mut out = vec![Field::Unsigned(0), Field::Unsigned(flags)];
    out.extend_from_slice(extra);
    out.extend(fields);
    out
}

/// The fields of a filter of error rate `error` (bucket size 4, slots as wide as the rate
/// gives): two sub-filters of 4 and 8 buckets, empty.
fn bounded_fields(error: f64) -> Vec<Field> {
    let bound = Bound::for_error(error).unwrap();
    let mut fields = [2, 4, 0, 0, 4, 50, 2].map(Field::Unsigned).to_vec();
    for (index, buckets) in [4u64, 8].into_iter().enumerate() {
        let len = table_bytes(buckets, 4, bound.bits(index)).unwrap();
        fields.push(Field::Unsigned(buckets));
        fields.push(Field::Buffer(vec![0; len as usize]));
    }
    fields
}

#[test]
fn restore_takes_hand_built_filters_of_both_forms_at_their_edges() {
    let server = Server::start();
    let mut conn = server.conn();
    let (envelope, _) = envelope(&mut conn);
    // RedisBloom's form: two empty sub-filters, then one at the largest of each parameter.
    let accepted: Vec<(&str, Vec<Field>)> = vec![
        ("two sub-filters", VALID.fields()),
        (
            "items at the slots, deletes at their top",
            Shape {
                items: 24,
                deletes: u64::MAX,
                ..VALID
            }
            .fields(),
        ),
        (
            "bucket size 255, 65535 iterations, expansion 32768",
            Shape {
                count: 1,
                size: 255,
                iterations: 65_535,
                expansion: 32_768,
                ..VALID
            }
            .fields(),
        ),
        (
            "expansion 0, one sub-filter",
            Shape {
                count: 1,
                expansion: 0,
                ..VALID
            }
            .fields(),
        ),
        (
            "bounded",
            ours(2, &[Field::Double(0.01)], bounded_fields(0.01)),
        ),
        (
            "bounded at the smallest rate",
            ours(2, &[Field::Double(1e-12)], bounded_fields(1e-12)),
        ),
        (
            "restoring at 0",
            ours(1, &[Field::Unsigned(0)], VALID.fields()),
        ),
        (
            "restoring at the last byte",
            ours(1, &[Field::Unsigned(23)], VALID.fields()),
        ),
        (
            "bounded and restoring",
            ours(
                3,
                &[Field::Double(0.01), Field::Unsigned(30)],
                bounded_fields(0.01),
            ),
        ),
    ];
    for (index, (what, fields)) in accepted.into_iter().enumerate() {
        let key = format!("built:{index}");
        let payload = envelope.payload(&fields);
        assert_eq!(restore(&mut conn, &key, &payload), Frame::ok(), "{what}");
        // Each comes back through DUMP and RESTORE (the server compresses long strings: the
        // payload's bytes may differ, not the value), and through DEBUG RELOAD.
        let again = conn.call(&["DUMP", &key]).bytes();
        let copy = format!("copy:{index}");
        assert_eq!(restore(&mut conn, &copy, &again), Frame::ok(), "{what}");
        assert_eq!(digest(&mut conn, &copy), digest(&mut conn, &key), "{what}");
        assert_eq!(
            call(&mut conn, &format!("CF.DEBUG {copy}")),
            call(&mut conn, &format!("CF.DEBUG {key}"))
        );
    }
    let before: Vec<Frame> = (0..9)
        .map(|index| digest(&mut conn, &format!("built:{index}")))
        .collect();
    assert_eq!(call(&mut conn, "DEBUG RELOAD"), Frame::ok());
    for (index, expected) in before.iter().enumerate() {
        assert_eq!(&digest(&mut conn, &format!("built:{index}")), expected);
    }
    assert_eq!(call(&mut conn, "CF.ADD built:0 x"), Frame::Int(1));
    assert_eq!(call(&mut conn, "CF.EXISTS built:0 x"), Frame::Int(1));
    let info = call(&mut conn, "CF.INFO built:4").items();
    assert_eq!(
        info[16..],
        [Frame::simple("Error rate"), Frame::bulk("0.01")]
    );
    // A filter being restored answers nothing until its chunks arrive: the last byte of 24.
    assert_eq!(
        call(&mut conn, "CF.EXISTS built:7 x"),
        Frame::error(
            "ERR filter is being restored by CF.LOADCHUNK (23 of 24 bytes loaded): it answers \
             once its last chunk has arrived"
        )
    );
    assert_eq!(loadchunk(&mut conn, "built:7", 25, &[0]), Frame::ok());
    assert_eq!(call(&mut conn, "CF.EXISTS built:7 x"), Frame::Int(0));
    still_answers(&mut conn);
}

/// RedisBloom's form, every field at its edges and the sub-filters' strings wrong.
fn forged_redisbloom_forms() -> Vec<(&'static str, Vec<Field>)> {
    let shape = |change: fn(&mut Shape)| {
        let mut shape = VALID;
        change(&mut shape);
        shape.fields()
    };
    let mut missing_second = VALID.fields();
    missing_second.truncate(9);
    let mut trailing = VALID.fields();
    trailing.push(Field::Unsigned(0));
    vec![
        ("sub-filter count 0", shape(|s| s.count = 0)),
        (
            "sub-filter count 65535, growth past 2^56 buckets",
            shape(|s| s.count = 65_535),
        ),
        (
            "sub-filter count 65535 of expansion 1, 3 present",
            shape(|s| {
                s.count = 65_535;
                s.expansion = 1;
            }),
        ),
        ("sub-filter count 65536", shape(|s| s.count = 65_536)),
        ("sub-filter count 2^64-1", shape(|s| s.count = u64::MAX)),
        ("second sub-filter missing", missing_second),
        ("bucket count 0", shape(|s| s.buckets = 0)),
        ("bucket count 3", shape(|s| s.buckets = 3)),
        (
            "bucket count 2^56, bytes missing",
            shape(|s| {
                s.count = 1;
                s.buckets = 1 << 56;
            }),
        ),
        (
            "bucket count 2^57",
            shape(|s| {
                s.count = 1;
                s.buckets = 1 << 57;
            }),
        ),
        ("items past the slots", shape(|s| s.items = 25)),
        ("items 2^64-1", shape(|s| s.items = u64::MAX)),
        ("bucket size 0", shape(|s| s.size = 0)),
        ("bucket size 256", shape(|s| s.size = 256)),
        ("max iterations 0", shape(|s| s.iterations = 0)),
        ("max iterations 65536", shape(|s| s.iterations = 65_536)),
        ("expansion 3", shape(|s| s.expansion = 3)),
        ("expansion 65536", shape(|s| s.expansion = 65_536)),
        (
            "expansion 0 with two sub-filters",
            shape(|s| s.expansion = 0),
        ),
        (
            "first sub-filter's count unlike the header's",
            valid_but(7, Field::Unsigned(8)),
        ),
        (
            "second sub-filter not grown by the expansion",
            valid_but(9, Field::Unsigned(4)),
        ),
        (
            "second sub-filter grown twice",
            valid_but(9, Field::Unsigned(16)),
        ),
        (
            "first string a byte short",
            valid_but(8, Field::Buffer(vec![0; 7])),
        ),
        (
            "first string a byte long",
            valid_but(8, Field::Buffer(vec![0; 9])),
        ),
        (
            "last string a byte short",
            valid_but(10, Field::Buffer(vec![0; 15])),
        ),
        (
            "last string a byte long",
            valid_but(10, Field::Buffer(vec![0; 17])),
        ),
        ("a number for a string", valid_but(10, Field::Unsigned(16))),
        (
            "a string for a number",
            valid_but(4, Field::Buffer(vec![2])),
        ),
        ("a double for a number", valid_but(1, Field::Double(4.0))),
        ("trailing field", trailing),
        ("no fields", Vec::new()),
    ]
}

/// This module's own form: flags, the bounded rate and the restoring offset at their edges.
fn forged_own_forms() -> Vec<(&'static str, Vec<Field>)> {
    let rate = |error: f64| ours(2, &[Field::Double(error)], bounded_fields(0.01));
    let mut narrow = bounded_fields(0.01);
    narrow[8] = Field::Buffer(vec![0; 4 * 4]);
    let mut wide_second = bounded_fields(0.01);
    wide_second[10] = Field::Buffer(vec![0; 8 * 6]);
    vec![
        ("flags 0", ours(0, &[], VALID.fields())),
        ("flags 4", ours(4, &[], VALID.fields())),
        ("flags 5", ours(5, &[Field::Unsigned(0)], VALID.fields())),
        ("flags 2^64-1", ours(u64::MAX, &[], VALID.fields())),
        ("no flags", vec![Field::Unsigned(0)]),
        ("rate 0", rate(0.0)),
        ("rate 1", rate(1.0)),
        ("rate NaN", rate(f64::NAN)),
        ("rate 1e-13", rate(1e-13)),
        ("rate -0.01", rate(-0.01)),
        ("rate infinite", rate(f64::INFINITY)),
        (
            "rate of other widths (0.001 for 0.01's)",
            ours(2, &[Field::Double(0.001)], bounded_fields(0.01)),
        ),
        (
            "a number for the rate",
            ours(2, &[Field::Unsigned(1)], bounded_fields(0.01)),
        ),
        (
            "bounded with buckets of 2",
            ours(2, &[Field::Double(0.01)], VALID.fields()),
        ),
        (
            "bounded with 8-bit slots",
            ours(2, &[Field::Double(0.01)], narrow),
        ),
        (
            "bounded second sub-filter as wide as the first",
            ours(2, &[Field::Double(0.01)], wide_second),
        ),
        (
            "restoring at the end",
            ours(1, &[Field::Unsigned(24)], VALID.fields()),
        ),
        (
            "restoring past the end",
            ours(1, &[Field::Unsigned(1000)], VALID.fields()),
        ),
        (
            "restoring at 2^64-1",
            ours(1, &[Field::Unsigned(u64::MAX)], VALID.fields()),
        ),
        ("restoring without its offset", ours(1, &[], Vec::new())),
        (
            "sub-filter count 0 again",
            ours(
                1,
                &[Field::Unsigned(0)],
                Shape { count: 0, ..VALID }.fields(),
            ),
        ),
        (
            "sub-filter count 65536 after the flags",
            ours(
                1,
                &[Field::Unsigned(0)],
                Shape {
                    count: 65_536,
                    ..VALID
                }
                .fields(),
            ),
        ),
        (
            "bounded, restoring, truncated after the rate",
            ours(3, &[Field::Double(0.01)], Vec::new()),
        ),
    ]
}

#[test]
fn restore_refuses_forged_filters_and_the_server_lives() {
    let server = Server::start();
    let mut conn = server.conn();
    let (envelope, _) = envelope(&mut conn);
    let before = digest(&mut conn, "model");
    let forged = forged_redisbloom_forms()
        .into_iter()
        .chain(forged_own_forms());
    for (what, fields) in forged {
        let payload = envelope.payload(&fields);
        assert_eq!(
            restore(&mut conn, "forged", &payload),
            Frame::error(BAD_DATA),
            "{what}"
        );
        assert_eq!(conn.call(&["EXISTS", "forged"]), Frame::Int(0), "{what}");
        // Over an existing filter, with REPLACE: refused, and the filter is left as it was.
        let replaced = conn.call(&[b"RESTORE".as_slice(), b"model", b"0", &payload, b"REPLACE"]);
        assert_eq!(replaced, Frame::error(BAD_DATA), "{what}");
        assert_eq!(digest(&mut conn, "model"), before, "{what}");
        still_answers(&mut conn);
    }
    // Encoding versions other than 4: RedisBloom's older ones hashed otherwise; newer ones are
    // no one's yet.
    for encver in [0, 1, 2, 3, 5, 1023] {
        let payload = envelope
            .with_encoding_version(encver)
            .payload(&VALID.fields());
        let reply = restore(&mut conn, "forged", &payload);
        assert!(reply.is_error(), "encoding version {encver}: {reply:?}");
        assert_eq!(conn.call(&["EXISTS", "forged"]), Frame::Int(0));
        still_answers(&mut conn);
    }
}

#[test]
fn restore_refuses_every_truncation_of_real_payloads_and_the_server_lives() {
    let server = Server::start();
    let mut conn = server.conn();
    let (envelope, model) = envelope(&mut conn);
    // This module's form too: a bounded filter being restored.
    let own = envelope.payload(&ours(
        3,
        &[Field::Double(0.01), Field::Unsigned(30)],
        bounded_fields(0.01),
    ));
    assert_eq!(restore(&mut conn, "own", &own), Frame::ok());
    for real in [&model, &own] {
        let body = envelope.body_len(real);
        for len in 0..body {
            let payload = envelope.truncated(real, len);
            let reply = restore(&mut conn, "cut", &payload);
            // The server reads a value on into the 10 bytes that close a payload (RDB version,
            // CRC): a cut that leaves at most that much out can be made whole by them (the last
            // string's missing bytes taken from them, and a 0 among them read as the end), which
            // depends on the server's version and the CRC. Such a value loaded is a filter like
            // any other, whose own dump loads back; every longer cut is refused.
            if body - len <= 10 && reply == Frame::ok() {
                let again = conn.call(&["DUMP", "cut"]).bytes();
                assert_eq!(restore(&mut conn, "cut:again", &again), Frame::ok());
                assert_eq!(digest(&mut conn, "cut:again"), digest(&mut conn, "cut"));
                assert_eq!(conn.call(&["DEL", "cut", "cut:again"]), Frame::Int(2));
                continue;
            }
            assert_eq!(reply, Frame::error(BAD_DATA), "cut at {len} of {body}");
            assert_eq!(conn.call(&["EXISTS", "cut"]), Frame::Int(0));
        }
        still_answers(&mut conn);
    }
}

#[test]
fn claims_of_huge_filters_are_refused_before_anything_is_allocated_for_them() {
    // 1.5 GB of address space: a filter allocated for any of these claims could not even be
    // tried; each is refused at once, from the claim alone or from the string that does not
    // match it, and no memory stays taken.
    let options = Options {
        address_space_kib: Some(1_500_000),
        ..Options::default()
    }
    .config("bf.max-filter-bytes", "4gb");
    let server = Server::with(options);
    let mut conn = server.conn();
    let (envelope, _) = envelope(&mut conn);
    let baseline = used_memory(&mut conn);
    let claims: [(&str, Shape); 5] = [
        (
            "2^30 buckets of 4 slots (4 GiB), an 8-byte string",
            Shape {
                count: 1,
                buckets: 1 << 30,
                size: 4,
                ..VALID
            },
        ),
        (
            "2^40 buckets, an 8-byte string",
            Shape {
                count: 1,
                buckets: 1 << 40,
                size: 1,
                ..VALID
            },
        ),
        (
            "2^56 buckets of 255 slots",
            Shape {
                count: 1,
                buckets: 1 << 56,
                size: 255,
                ..VALID
            },
        ),
        (
            "65535 sub-filters of 2^40 buckets",
            Shape {
                count: 65_535,
                buckets: 1 << 40,
                size: 1,
                expansion: 1,
                ..VALID
            },
        ),
        (
            "65535 sub-filters of 2^32 buckets, items at the slots",
            Shape {
                count: 65_535,
                buckets: 1 << 32,
                items: 65_535 << 33,
                size: 2,
                expansion: 1,
                ..VALID
            },
        ),
    ];
    for (what, shape) in claims {
        let payload = envelope.payload(&shape.fields());
        // Refused at once: timed by the server itself (INFO commandstats: the call alone, not
        // this test's waits for a busy machine's scheduler), the fastest of three refusals.
        let mut fastest = f64::INFINITY;
        for _ in 0..3 {
            assert_eq!(conn.call(&["CONFIG", "RESETSTAT"]), Frame::ok());
            assert_eq!(
                restore(&mut conn, "huge", &payload),
                Frame::error(BAD_DATA),
                "{what}"
            );
            fastest = fastest.min(command_usec(&mut conn, "RESTORE"));
            assert_eq!(conn.call(&["EXISTS", "huge"]), Frame::Int(0));
            still_answers(&mut conn);
        }
        assert!(fastest < 1e6, "{what}: {fastest} µs");
    }
    assert!(
        (used_memory(&mut conn) - baseline).abs() < 1 << 20,
        "memory taken by refused claims"
    );
    // A header that passes every check but asks for 2 GiB: the allocation is tried and fails, an
    // error and not a crash.
    let head = header(0, 1 << 30, 0, 1, 2, 20, 1);
    assert_eq!(
        loadchunk(&mut conn, "huge", 1, &head),
        Frame::error(
            "ERR out of memory: the server could not allocate 2147483648 bytes for the filter"
        )
    );
    assert_eq!(conn.call(&["EXISTS", "huge"]), Frame::Int(0));
    still_answers(&mut conn);
}

#[test]
fn a_count_loaded_above_the_fingerprints_stays_within_the_slots_and_still_saves() {
    // A count at the slots over empty buckets passes every check (RedisBloom's releases that lost
    // a fingerprint in a failed eviction saved such counts): adds must not take it past the
    // slots, or the filter would save as data that no loader takes back, an RDB the server could
    // not start from.
    let mut server = Server::start();
    let mut conn = server.conn();
    let (envelope, _) = envelope(&mut conn);
    let full_count = Shape {
        count: 1,
        items: 8,
        expansion: 0,
        ..VALID
    };
    let payload = envelope.payload(&full_count.fields());
    assert_eq!(restore(&mut conn, "counted", &payload), Frame::ok());
    // The same through CF.LOADCHUNK: a header claiming 24 items over 24 empty slots.
    let head = header(24, 4, 0, 2, 2, 20, 2);
    assert_eq!(loadchunk(&mut conn, "chunked", 1, &head), Frame::ok());
    assert_eq!(loadchunk(&mut conn, "chunked", 9, &[0; 8]), Frame::ok());
    assert_eq!(loadchunk(&mut conn, "chunked", 25, &[0; 16]), Frame::ok());
    for i in 0..6 {
        let item = format!("item:{i}");
        assert_eq!(conn.call(&["CF.ADD", "counted", &item]), Frame::Int(1));
        assert_eq!(conn.call(&["CF.ADD", "chunked", &item]), Frame::Int(1));
    }
    assert_eq!(
        call(&mut conn, "CF.DEBUG counted"),
        Frame::bulk(
            "bktsize:2 buckets:4 items:8 deletes:0 filters:1 max_iterations:20 expansion:0"
        )
    );
    assert_eq!(
        call(&mut conn, "CF.DEBUG chunked"),
        Frame::bulk(
            "bktsize:2 buckets:4 items:24 deletes:0 filters:2 max_iterations:20 expansion:2"
        )
    );
    let digests = [digest(&mut conn, "counted"), digest(&mut conn, "chunked")];
    assert_eq!(call(&mut conn, "DEBUG RELOAD"), Frame::ok());
    // Its dump loads back too.
    for key in ["counted", "chunked"] {
        let chunks = scandump(&mut conn, key);
        let copy = format!("{key}:copy");
        for (iterator, data) in &chunks {
            assert_eq!(loadchunk(&mut conn, &copy, iterator, data), Frame::ok());
        }
        assert_eq!(digest(&mut conn, &copy), digest(&mut conn, key));
    }
    drop(conn);
    server.restart();
    let mut conn = server.conn();
    assert_eq!(
        [digest(&mut conn, "counted"), digest(&mut conn, "chunked")],
        digests
    );
    for i in 0..6 {
        let item = format!("item:{i}");
        assert_eq!(conn.call(&["CF.EXISTS", "counted", &item]), Frame::Int(1));
    }
}

/// A CF.LOADCHUNK header of RedisBloom's (38 bytes).
fn header(
    items: u64,
    buckets: u64,
    deletes: u64,
    tables: u64,
    size: u16,
    iterations: u16,
    expansion: u16,
) -> Vec<u8> {
    let mut out = Vec::new();
    for value in [items, buckets, deletes, tables] {
        out.extend(value.to_le_bytes());
    }
    for value in [size, iterations, expansion] {
        out.extend(value.to_le_bytes());
    }
    out
}

/// This module's header (58 bytes): the magic, `version`, the error rate, then RedisBloom's 38.
fn bounded_header(version: u32, error: f64, rest: &[u8]) -> Vec<u8> {
    let mut out = b"redis-cf".to_vec();
    out.extend(version.to_le_bytes());
    out.extend(error.to_le_bytes());
    out.extend_from_slice(rest);
    out
}

fn invalid_chunk(why: &str) -> String {
    format!("ERR invalid chunk: {why}")
}

/// What CF.LOADCHUNK answers a header that would take `bytes`, past a `bf.max-filter-bytes` of
/// `limit` (the message names the setting that would allow it, in whole megabytes up to a
/// gigabyte and whole gigabytes past it, when there is one).
fn too_large(bytes: u64, limit: u64) -> String {
    if bytes == u64::MAX {
        // Past what 64 bits count: said in words, not as a size.
        return format!(
            "ERR filter would use 2^64 bytes or more, over bf.max-filter-bytes ({limit}); no \
             setting allows that much"
        );
    }
    const MB: u64 = 1 << 20;
    const GB: u64 = 1 << 30;
    let advice = if bytes > i64::MAX as u64 - GB {
        "no setting allows that much".to_string()
    } else if bytes > GB {
        format!(
            "if it is meant to be that big: CONFIG SET bf.max-filter-bytes {}gb",
            bytes.div_ceil(GB)
        )
    } else {
        format!(
            "if it is meant to be that big: CONFIG SET bf.max-filter-bytes {}mb",
            bytes.div_ceil(MB)
        )
    };
    format!("ERR filter would use {bytes} bytes, over bf.max-filter-bytes ({limit}); {advice}")
}

#[test]
fn loadchunk_refuses_headers_at_their_edges_with_the_module_s_texts() {
    let server = Server::with(Options::default().config("bf.max-filter-bytes", "1mb"));
    let mut conn = server.conn();
    let (_, _) = envelope(&mut conn);
    let good = header(3, 4, 0, 1, 2, 20, 1);
    let length = invalid_chunk("a cuckoo filter header is 38 bytes (58 with a bounded error rate)");
    let not_power = invalid_chunk("a bucket count that is not a power of two");
    let tables = invalid_chunk("sub-filter count out of range");
    // A bounded filter's rate, as CF.RESERVE's ERROR takes it.
    let bad_rate =
        "ERR bad error rate: must be a number from 1e-12 up to, not including, 1".to_string();
    let bounded_ok = header(0, 4, 0, 2, 4, 50, 2);
    let huge = header(0, 1 << 56, 0, 1, 255, 20, 1);
    let huge_bytes = Header::parse(&huge).unwrap().planned_bytes();
    let over = header(0, 1 << 20, 0, 1, 2, 20, 1);
    let over_bytes = Header::parse(&over).unwrap().planned_bytes();
    let mut magic_misspelt = bounded_header(1, 0.01, &bounded_ok);
    magic_misspelt[0] = b'R';
    let cases: Vec<(&str, Vec<u8>, String)> = vec![
        ("empty", Vec::new(), length.clone()),
        ("37 bytes", good[..37].to_vec(), length.clone()),
        ("39 bytes", [&good[..], &[0]].concat(), length.clone()),
        (
            "57 bytes",
            bounded_header(1, 0.01, &bounded_ok)[..57].to_vec(),
            length.clone(),
        ),
        (
            "59 bytes",
            [&bounded_header(1, 0.01, &bounded_ok)[..], &[0]].concat(),
            length.clone(),
        ),
        ("58 bytes without the magic", magic_misspelt, length.clone()),
        (
            "header version 0",
            bounded_header(0, 0.01, &bounded_ok),
            invalid_chunk("unknown cuckoo filter header version"),
        ),
        (
            "header version 2",
            bounded_header(2, 0.01, &bounded_ok),
            invalid_chunk("unknown cuckoo filter header version"),
        ),
        (
            "rate 0",
            bounded_header(1, 0.0, &bounded_ok),
            bad_rate.clone(),
        ),
        (
            "rate 1",
            bounded_header(1, 1.0, &bounded_ok),
            bad_rate.clone(),
        ),
        (
            "rate NaN",
            bounded_header(1, f64::NAN, &bounded_ok),
            bad_rate.clone(),
        ),
        (
            "rate 1e-13",
            bounded_header(1, 1e-13, &bounded_ok),
            bad_rate.clone(),
        ),
        (
            "bounded with buckets of 2",
            bounded_header(1, 0.01, &good),
            invalid_chunk("a bounded filter's bucket size is 4"),
        ),
        (
            "bucket count 0",
            header(0, 0, 0, 1, 2, 20, 1),
            not_power.clone(),
        ),
        (
            "bucket count 3",
            header(0, 3, 0, 1, 2, 20, 1),
            not_power.clone(),
        ),
        (
            "bucket count 2^57",
            header(0, 1 << 57, 0, 1, 2, 20, 1),
            not_power.clone(),
        ),
        (
            "growth past 2^56 buckets",
            header(0, 1 << 56, 0, 2, 2, 20, 2),
            not_power.clone(),
        ),
        (
            "bucket count 2^56 of 255 slots",
            huge,
            too_large(huge_bytes, 1 << 20),
        ),
        ("2 MiB of buckets", over, too_large(over_bytes, 1 << 20)),
        (
            "items past the slots",
            header(9, 4, 0, 1, 2, 20, 1),
            invalid_chunk("more items than slots"),
        ),
        (
            "sub-filter count 0",
            header(0, 4, 0, 0, 2, 20, 1),
            tables.clone(),
        ),
        (
            "sub-filter count 65536",
            header(0, 4, 0, 65_536, 2, 20, 1),
            tables.clone(),
        ),
        (
            "sub-filter count 2^64-1",
            header(0, 4, 0, u64::MAX, 2, 20, 1),
            tables.clone(),
        ),
        (
            "bucket size 0",
            header(0, 4, 0, 1, 0, 20, 1),
            invalid_chunk("bucket size out of range"),
        ),
        (
            "bucket size 256",
            header(0, 4, 0, 1, 256, 20, 1),
            invalid_chunk("bucket size out of range"),
        ),
        (
            "max iterations 0",
            header(0, 4, 0, 1, 2, 0, 1),
            invalid_chunk("max iterations out of range"),
        ),
        (
            "expansion 3",
            header(0, 4, 0, 1, 2, 20, 3),
            invalid_chunk("an expansion that is not a power of two"),
        ),
        (
            "expansion 32769",
            header(0, 4, 0, 1, 2, 20, 32_769),
            invalid_chunk("expansion out of range"),
        ),
        (
            "expansion 65535",
            header(0, 4, 0, 1, 2, 20, 65_535),
            invalid_chunk("expansion out of range"),
        ),
        // (The second sub-filter of expansion 0 would have 0 buckets.)
        (
            "expansion 0 with two sub-filters",
            header(0, 4, 0, 2, 2, 20, 0),
            not_power.clone(),
        ),
    ];
    for (what, data, expected) in cases {
        assert_eq!(
            loadchunk(&mut conn, "loaded", 1, &data),
            Frame::error(&expected),
            "{what}"
        );
        assert_eq!(conn.call(&["EXISTS", "loaded"]), Frame::Int(0), "{what}");
        still_answers(&mut conn);
    }
    // The edges that are in range make filters waiting for their chunks (65535 sub-filters take
    // more than a megabyte).
    assert_eq!(
        call(&mut conn, "CONFIG SET bf.max-filter-bytes 64mb"),
        Frame::ok()
    );
    let accepted: [(&str, Vec<u8>); 7] = [
        ("RedisBloom's", good.clone()),
        (
            "65535 sub-filters of one bucket",
            header(0, 1, 0, 65_535, 1, 20, 1),
        ),
        ("bucket size 255", header(0, 1, 0, 1, 255, 20, 1)),
        (
            "65535 iterations, expansion 32768",
            header(0, 4, 0, 2, 2, 65_535, 32_768),
        ),
        ("items at the slots", header(24, 4, 0, 2, 2, 20, 2)),
        ("bounded", bounded_header(1, 0.01, &bounded_ok)),
        ("bounded at 1e-12", bounded_header(1, 1e-12, &bounded_ok)),
    ];
    for (what, data) in accepted {
        assert_eq!(
            loadchunk(&mut conn, "loaded", 1, &data),
            Frame::ok(),
            "{what}"
        );
        // A header on an existing key, being restored or in use.
        assert_eq!(
            loadchunk(&mut conn, "loaded", 1, &data),
            Frame::error("ERR item exists"),
            "{what}"
        );
        assert_eq!(conn.call(&["DEL", "loaded"]), Frame::Int(1));
    }
    assert_eq!(
        loadchunk(&mut conn, "model", 1, &good),
        Frame::error("ERR item exists")
    );
    // A key of another type.
    assert_eq!(call(&mut conn, "BF.ADD bloom x"), Frame::Int(1));
    assert_eq!(call(&mut conn, "SET text x"), Frame::ok());
    let wrongtype =
        Frame::error("WRONGTYPE Operation against a key holding the wrong kind of value");
    for key in ["bloom", "text"] {
        assert_eq!(loadchunk(&mut conn, key, 1, &good), wrongtype);
        assert_eq!(loadchunk(&mut conn, key, 9, &[0; 8]), wrongtype);
    }
    still_answers(&mut conn);
}

/// A filter of several sub-filters: `CF.RESERVE key 8 BUCKETSIZE 2 EXPANSION 2` holding 60
/// items; its SCANDUMP sequence (the header first, one chunk per sub-filter).
fn source(conn: &mut Conn, key: &str) -> Vec<(i64, Vec<u8>)> {
    assert_eq!(
        call(
            conn,
            &format!("CF.RESERVE {key} 8 BUCKETSIZE 2 EXPANSION 2")
        ),
        Frame::ok()
    );
    let mut insert = vec!["CF.INSERT".to_string(), key.into(), "ITEMS".into()];
    insert.extend((0..60).map(|i| format!("item:{i}")));
    conn.call(&insert);
    let chunks = scandump(conn, key);
    assert!(chunks.len() >= 4, "{} chunks", chunks.len());
    chunks
}

#[test]
fn data_chunks_come_in_order_once_within_their_sub_filter_and_only_while_restoring() {
    let server = Server::start();
    let mut conn = server.conn();
    let chunks = source(&mut conn, "src");
    let total: u64 = chunks[1..].iter().map(|c| c.1.len() as u64).sum();
    let (head, first, second) = (&chunks[0].1, &chunks[1], &chunks[2]);
    // No key, and keys of other types.
    assert_eq!(
        loadchunk(&mut conn, "dst", first.0, &first.1),
        Frame::error("ERR not found")
    );
    assert_eq!(loadchunk(&mut conn, "dst", 1, head), Frame::ok());
    let fresh = digest(&mut conn, "dst");
    let unchanged = |conn: &mut Conn, what: &str, expected: &Frame| {
        assert_eq!(&digest(conn, "dst"), expected, "{what}");
    };
    // Iterators that are no chunk's, or no number.
    for token in ["abc", "-1", "", "1.5", "18446744073709551616", " 9"] {
        assert_eq!(
            loadchunk(&mut conn, "dst", token, &first.1),
            Frame::error("ERR Invalid position"),
            "{token:?}"
        );
    }
    for iterator in [0, first.1.len() as u64] {
        assert_eq!(
            loadchunk(&mut conn, "dst", iterator, &first.1),
            Frame::error("ERR invalid iterator"),
            "{iterator}"
        );
    }
    assert_eq!(
        loadchunk(&mut conn, "dst", u64::MAX, &first.1),
        out_of_order(0)
    );
    unchanged(&mut conn, "bad iterators", &fresh);
    // Out of order: the second sub-filter's first.
    assert_eq!(
        loadchunk(&mut conn, "dst", second.0, &second.1),
        out_of_order(0)
    );
    // Past the end of its sub-filter: a byte more, or the first two sub-filters in one chunk.
    let longer = [&first.1[..], &[0]].concat();
    let both = [&first.1[..], &second.1[..]].concat();
    for data in [&longer, &both] {
        assert_eq!(
            loadchunk(&mut conn, "dst", data.len() as u64 + 1, data),
            Frame::error(&invalid_chunk("chunk passes the end of its sub-filter"))
        );
    }
    unchanged(&mut conn, "refused chunks", &fresh);
    // While restoring: no add, lookup, delete or dump.
    for line in [
        "CF.ADD dst x",
        "CF.ADDNX dst x",
        "CF.INSERT dst ITEMS x",
        "CF.EXISTS dst x",
        "CF.MEXISTS dst x y",
        "CF.COUNT dst x",
        "CF.DEL dst x",
        "CF.COMPACT dst",
        "CF.SCANDUMP dst 0",
    ] {
        assert_eq!(
            call(&mut conn, line),
            being_restored("CF.LOADCHUNK", 0, total),
            "{line}"
        );
    }
    // The first sub-filter in pieces of 3 bytes (a chunk may have any length within its
    // sub-filter), one of them twice.
    let start = offset(first);
    for (index, piece) in first.1.chunks(3).enumerate() {
        let at = start + index as u64 * 3;
        let iterator = at + piece.len() as u64 + 1;
        assert_eq!(loadchunk(&mut conn, "dst", iterator, piece), Frame::ok());
        if index == 1 {
            let before = digest(&mut conn, "dst");
            assert_eq!(
                loadchunk(&mut conn, "dst", iterator, piece),
                out_of_order(at + piece.len() as u64)
            );
            unchanged(&mut conn, "a piece twice", &before);
        }
    }
    // Empty, at the right place (the next sub-filter's start; at 0 its iterator would be the
    // header's, 1).
    let empty = digest(&mut conn, "dst");
    assert_eq!(
        loadchunk(&mut conn, "dst", offset(second) + 1, b""),
        Frame::error(&invalid_chunk("an empty chunk"))
    );
    unchanged(&mut conn, "an empty chunk", &empty);
    // The whole first chunk again: loaded already.
    assert_eq!(
        loadchunk(&mut conn, "dst", first.0, &first.1),
        out_of_order(offset(second))
    );
    // The state survives a reload.
    assert_eq!(call(&mut conn, "DEBUG RELOAD"), Frame::ok());
    assert_eq!(
        call(&mut conn, "CF.EXISTS dst x"),
        being_restored("CF.LOADCHUNK", offset(second), total)
    );
    for chunk in &chunks[2..] {
        assert_eq!(loadchunk(&mut conn, "dst", chunk.0, &chunk.1), Frame::ok());
    }
    assert_eq!(digest(&mut conn, "dst"), digest(&mut conn, "src"));
    for i in 0..60 {
        let item = format!("item:{i}");
        assert_eq!(conn.call(&["CF.EXISTS", "dst", &item]), Frame::Int(1));
    }
    // In use: no chunk goes in, not even the next one past the end, nor a header.
    let done = digest(&mut conn, "dst");
    let last = chunks.last().unwrap();
    for (iterator, data) in [
        (first.0, first.1.clone()),
        (last.0, last.1.clone()),
        (last.0 + 8, vec![0xff; 8]),
        (total as i64 + 1, Vec::new()),
    ] {
        assert_eq!(
            loadchunk(&mut conn, "dst", iterator, &data),
            not_restoring(),
            "{iterator}"
        );
    }
    assert_eq!(
        loadchunk(&mut conn, "dst", 1, head),
        Frame::error("ERR item exists")
    );
    unchanged(&mut conn, "a filter in use", &done);
    // Nor into the source, a filter that was never restored.
    let source = digest(&mut conn, "src");
    assert_eq!(
        loadchunk(&mut conn, "src", first.0, &vec![0xff; first.1.len()]),
        not_restoring()
    );
    assert_eq!(digest(&mut conn, "src"), source);
    // A restore abandoned with DEL: its chunks find no key.
    assert_eq!(loadchunk(&mut conn, "gone", 1, head), Frame::ok());
    assert_eq!(conn.call(&["DEL", "gone"]), Frame::Int(1));
    assert_eq!(
        loadchunk(&mut conn, "gone", first.0, &first.1),
        Frame::error("ERR not found")
    );
    assert_eq!(conn.call(&["PING"]), Frame::simple("PONG"));
}

/// Material taken from real filters before the storm: SCANDUMP sequences and DUMP payloads; and
/// payloads of filters of many sub-filters, restored whole into the shared keys.
struct Samples {
    dumps: Vec<Vec<(i64, Vec<u8>)>>,
    payloads: Vec<Vec<u8>>,
    many: Vec<Vec<u8>>,
    envelope: Envelope,
}

/// A payload of `count` one-slot sub-filters (BUCKETSIZE 1, EXPANSION 1), the first `filled`
/// holding fingerprints of the storm's items and the rest empty.
fn many_sub_filters(envelope: &Envelope, count: usize, filled: usize) -> Vec<u8> {
    let mut fields: Vec<Field> = [count as u64, 1, filled.min(count) as u64, 0, 1, 20, 1]
        .map(Field::Unsigned)
        .to_vec();
    for index in 0..count {
        let item = format!("item:{}", index % 300);
        let print = Print::of(item.as_bytes(), Hashing::RedisBloom).fingerprint(8) as u8;
        fields.push(Field::Unsigned(1));
        fields.push(Field::Buffer(vec![if index < filled { print } else { 0 }]));
    }
    envelope.payload(&fields)
}

fn samples(conn: &mut Conn) -> Samples {
    let setups = [
        "CF.RESERVE sample:a 8 BUCKETSIZE 2 EXPANSION 2",
        "CF.RESERVE sample:b 64 BUCKETSIZE 4 EXPANSION 1 MAXITERATIONS 50",
        "CF.RESERVE sample:c 16 ERROR 0.01 EXPANSION 2",
        "CF.RESERVE sample:d 20 BUCKETSIZE 1 EXPANSION 0",
        // Grown by adds to hundreds of sub-filters.
        "CF.RESERVE sample:e 2 BUCKETSIZE 1 EXPANSION 1",
    ];
    let mut dumps = Vec::new();
    let mut payloads = Vec::new();
    for setup in setups {
        assert_eq!(call(conn, setup), Frame::ok());
        let key = setup.split(' ').nth(1).unwrap();
        let mut insert = vec!["CF.INSERT".to_string(), key.into(), "ITEMS".into()];
        let items = if key == "sample:e" { 400 } else { 50 };
        insert.extend((0..items).map(|i| format!("s{i}")));
        conn.call(&insert);
        dumps.push(scandump(conn, key));
        payloads.push(conn.call(&["DUMP", key]).bytes());
    }
    let fields = debug_fields(&String::from_utf8(call(conn, "CF.DEBUG sample:e").bytes()).unwrap());
    let grown: u64 = fields["filters"].parse().unwrap();
    assert!(grown > 100, "{grown} sub-filters");
    let envelope = Envelope::from_dump(&payloads[0]);
    // Hundreds of one-slot sub-filters: all full, the older half full, three quarters full.
    let many = vec![
        many_sub_filters(&envelope, 600, 600),
        many_sub_filters(&envelope, 600, 300),
        many_sub_filters(&envelope, 600, 450),
    ];
    call(conn, "DEL sample:a sample:b sample:c sample:d sample:e");
    Samples {
        dumps,
        payloads,
        many,
        envelope,
    }
}

/// The keys the storm's clients share.
fn shared_key(rng: &mut Rng) -> String {
    format!("k{}", rng.below(8))
}

/// One client of the storm: `commands` random commands on the shared keys, and now and then a
/// whole restore of its own (a header and every chunk, in order, between the others' commands),
/// which must succeed. The replies it got, per command: (errors, others).
fn storm_client(
    mut conn: Conn,
    seed: u64,
    commands: usize,
    samples: &Samples,
) -> std::collections::BTreeMap<String, (usize, usize)> {
    let mut rng = Rng(seed);
    let mut tally: std::collections::BTreeMap<String, (usize, usize)> = Default::default();
    let mut own = 0;
    for _ in 0..commands {
        let args: Vec<Vec<u8>> = match rng.below(20) {
            // A header, real or mangled.
            0 | 1 => {
                let dump = rng.pick(&samples.dumps);
                let mut head = dump[0].1.clone();
                if rng.below(3) == 0 {
                    mangle(&mut rng, &mut head);
                }
                vec![
                    b"CF.LOADCHUNK".to_vec(),
                    shared_key(&mut rng).into(),
                    b"1".to_vec(),
                    head,
                ]
            }
            // A real data chunk at its own iterator, a nearby one or any.
            2..=4 => {
                let dump = rng.pick(&samples.dumps);
                let (iterator, data) = dump[1 + rng.below(dump.len() - 1)].clone();
                // As u64: "any" includes numbers past i64::MAX.
                let iterator = match rng.below(4) {
                    0 | 1 => iterator as u64,
                    2 => (iterator as u64)
                        .wrapping_add(rng.below(16) as u64)
                        .wrapping_sub(8),
                    _ => rng.next(),
                };
                vec![
                    b"CF.LOADCHUNK".to_vec(),
                    shared_key(&mut rng).into(),
                    iterator.to_string().into(),
                    data,
                ]
            }
            // A filter of many sub-filters, restored whole.
            5 if rng.below(2) == 0 => vec![
                b"RESTORE".to_vec(),
                shared_key(&mut rng).into(),
                b"0".to_vec(),
                rng.pick(&samples.many).clone(),
                b"REPLACE".to_vec(),
            ],
            // A forged payload with a valid CRC.
            5 => {
                let real = rng.pick(&samples.payloads).clone();
                let seed = rng.next() | 1;
                let payload = samples.envelope.altered(&real, |body| {
                    mangle(&mut Rng(seed), body);
                });
                vec![
                    b"RESTORE".to_vec(),
                    shared_key(&mut rng).into(),
                    b"0".to_vec(),
                    payload,
                    b"REPLACE".to_vec(),
                ]
            }
            // A whole restore into a key of its own.
            6 => {
                let dump = rng.pick(&samples.dumps).clone();
                let key = format!("own:{seed}:{own}");
                own += 1;
                for (iterator, data) in &dump {
                    assert_eq!(
                        loadchunk(&mut conn, &key, iterator, data),
                        Frame::ok(),
                        "{key}"
                    );
                }
                vec![b"CF.EXISTS".to_vec(), key.into(), b"s1".to_vec()]
            }
            7..=10 => {
                let command = *rng.pick(&["CF.ADD", "CF.ADDNX", "CF.ADD", "CF.INSERT"]);
                let mut args = vec![command.into(), shared_key(&mut rng).into_bytes()];
                if command == "CF.INSERT" {
                    args.push(b"ITEMS".to_vec());
                }
                for _ in 0..1 + rng.below(3) {
                    args.push(format!("item:{}", rng.below(300)).into());
                }
                args
            }
            11 | 12 => {
                let item = format!("item:{}", rng.below(300));
                vec![b"CF.DEL".to_vec(), shared_key(&mut rng).into(), item.into()]
            }
            13 => vec![b"CF.COMPACT".to_vec(), shared_key(&mut rng).into()],
            14 | 15 => {
                let command = *rng.pick(&["CF.EXISTS", "CF.COUNT", "CF.MEXISTS", "CF.INFO"]);
                let mut args = vec![command.into(), shared_key(&mut rng).into_bytes()];
                if command != "CF.INFO" {
                    args.push(format!("item:{}", rng.below(300)).into());
                }
                args
            }
            16 => {
                let iterator = *rng.pick(&["0", "1", "9", "17", "25", "100000"]);
                vec![
                    b"CF.SCANDUMP".to_vec(),
                    shared_key(&mut rng).into(),
                    iterator.into(),
                ]
            }
            17 => {
                let capacity = (4 + rng.below(200)).to_string();
                let mut args = vec![
                    b"CF.RESERVE".to_vec(),
                    shared_key(&mut rng).into(),
                    capacity.into(),
                ];
                let many = rng.below(4) == 0;
                if many {
                    // One-slot sub-filters, each as big as the last: adds grow hundreds.
                    args[2] = b"2".to_vec();
                    args.extend([b"BUCKETSIZE".to_vec(), b"1".to_vec()]);
                } else if rng.below(2) == 0 {
                    args.extend([b"ERROR".to_vec(), b"0.01".to_vec()]);
                } else {
                    args.extend([
                        b"BUCKETSIZE".to_vec(),
                        (1 + rng.below(4)).to_string().into(),
                    ]);
                }
                let expansion = if many { 1 } else { rng.below(3) };
                args.extend([b"EXPANSION".to_vec(), expansion.to_string().into()]);
                args
            }
            18 => vec![b"DEL".to_vec(), shared_key(&mut rng).into()],
            _ => vec![b"CF.DEBUG".to_vec(), shared_key(&mut rng).into()],
        };
        let reply = conn.call(&args);
        assert!(!matches!(reply, Frame::Push(_)), "a push for {args:?}");
        let name = String::from_utf8_lossy(&args[0]).to_uppercase();
        let entry = tally.entry(name).or_default();
        if reply.is_error() {
            entry.0 += 1;
        } else {
            entry.1 += 1;
        }
    }
    tally
}

/// Every key holding a cuckoo filter, with its digest.
fn cuckoo_keys(conn: &mut Conn) -> Vec<(Vec<u8>, Frame)> {
    let mut keys: Vec<Vec<u8>> = conn
        .call(&["KEYS", "*"])
        .items()
        .iter()
        .map(Frame::bytes)
        .collect();
    keys.sort();
    let mut filters = Vec::new();
    for key in keys {
        if conn.call(&[b"TYPE".as_slice(), &key]) == Frame::simple("MBbloomCF") {
            let digest = conn.call(&[b"DEBUG".as_slice(), b"DIGEST-VALUE", &key]);
            filters.push((key, digest));
        }
    }
    filters
}

#[test]
fn a_storm_of_clients_leaves_the_server_answering_and_every_filter_consistent() {
    let options = Options::default()
        .config("bf.max-filter-bytes", "64kb")
        .config("bf.cf-max-expansions", "1000")
        .config("slowlog-log-slower-than", "-1");
    let mut server = Server::with(options.clone());
    let mut conn = server.conn();
    let samples = samples(&mut conn);
    // One round of everything first, then a flush, so that the server's one-time allocations are
    // made before the baseline.
    storm_client(server.conn(), 7, 300, &samples);
    assert_eq!(call(&mut conn, "FLUSHALL"), Frame::ok());
    let baseline = used_memory(&mut conn);
    let clients = 8;
    let tallies: Vec<_> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..clients)
            .map(|client| {
                let conn = server.conn();
                let samples = &samples;
                scope.spawn(move || {
                    storm_client(conn, 0x5eed_0000 + client as u64 * 7919, 2500, samples)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut tally: std::collections::BTreeMap<String, (usize, usize)> = Default::default();
    for part in tallies {
        for (name, (errors, others)) in part {
            let entry = tally.entry(name).or_default();
            entry.0 += errors;
            entry.1 += others;
        }
    }
    eprintln!("storm replies (errors, others): {tally:?}");
    for command in ["CF.ADD", "CF.DEL", "CF.LOADCHUNK", "RESTORE"] {
        let (errors, others) = tally[command];
        assert!(errors > 0 && others > 0, "{command}: {tally:?}");
    }
    assert_eq!(conn.call(&["PING"]), Frame::simple("PONG"));

    // Every filter left behind comes back unchanged through DUMP and RESTORE (after a FLUSHALL
    // that gives back all the memory the storm took), through its chunks, DEBUG RELOAD, and an
    // AOF rewrite replayed.
    let filters = cuckoo_keys(&mut conn);
    assert!(filters.len() > 8, "{} filters", filters.len());
    // Some of them of hundreds of sub-filters, restored or grown, compacted along the way.
    let sub_filters: Vec<u64> = filters
        .iter()
        .filter_map(|(key, _)| {
            let debug = conn.call(&[b"CF.DEBUG".as_slice(), key]);
            let line = String::from_utf8(debug.bytes()).ok()?;
            debug_fields(&line).get("filters")?.parse().ok()
        })
        .collect();
    let many: Vec<u64> = sub_filters
        .into_iter()
        .filter(|&count| count > 100)
        .collect();
    eprintln!("filters left with over 100 sub-filters: {many:?}");
    assert!(many.len() >= 2, "{many:?}");
    let payloads: Vec<Vec<u8>> = filters
        .iter()
        .map(|(key, _)| conn.call(&[b"DUMP".as_slice(), key]).bytes())
        .collect();
    assert_eq!(call(&mut conn, "FLUSHALL"), Frame::ok());
    let deadline = Instant::now() + Duration::from_secs(10);
    while server.info_field("clients", "connected_clients") != "1" && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let after = used_memory(&mut conn);
    assert!(
        (after - baseline).abs() < 1 << 20,
        "used_memory {baseline} before the storm, {after} after it and a FLUSHALL"
    );
    assert_eq!(common::info_bf(&server, "bf_cf_filters"), 0);
    assert_eq!(common::info_bf(&server, "bf_cf_bytes"), 0);
    for ((key, _), payload) in filters.iter().zip(&payloads) {
        assert_eq!(
            conn.call(&[b"RESTORE".as_slice(), key, b"0", payload]),
            Frame::ok()
        );
    }
    assert_eq!(cuckoo_keys(&mut conn), filters);
    let mut dumped = 0;
    for (key, expected) in &filters {
        let key = String::from_utf8(key.clone()).unwrap();
        if call(&mut conn, &format!("CF.SCANDUMP {key} 0")).is_error() {
            continue; // being restored
        }
        let copy = format!("copy:{key}");
        let chunks = scandump(&mut conn, &key);
        for (iterator, data) in &chunks {
            assert_eq!(loadchunk(&mut conn, &copy, iterator, data), Frame::ok());
        }
        if !chunks.is_empty() {
            assert_eq!(&digest(&mut conn, &copy), expected, "{key}");
            assert_eq!(conn.call(&["DEL", &copy]), Frame::Int(1));
            dumped += 1;
        }
    }
    assert!(dumped > 4, "{dumped} filters dumped");
    assert_eq!(call(&mut conn, "DEBUG RELOAD"), Frame::ok());
    assert_eq!(cuckoo_keys(&mut conn), filters);
    let replayed = aof_view(&mut conn);
    assert_eq!(
        call(&mut conn, "CONFIG SET aof-use-rdb-preamble no"),
        Frame::ok()
    );
    assert_eq!(call(&mut conn, "CONFIG SET appendonly yes"), Frame::ok());
    server.wait_for_aof_rewrite();
    drop(conn);
    assert!(server.aof_text().contains("CF.LOADCHUNK"));
    server.restart_with(
        options
            .config("appendonly", "yes")
            .config("aof-use-rdb-preamble", "no"),
    );
    let mut conn = server.conn();
    assert_eq!(aof_view(&mut conn), replayed);
    assert_eq!(conn.call(&["PING"]), Frame::simple("PONG"));
}

/// What an AOF rewrite keeps of every cuckoo filter: a filter in use whole (its digest); of one
/// being restored, what its header said and the chunks that arrived (CF.DEBUG, and the error that
/// says how far it got). (Past those chunks its buckets hold whatever its stored form held: zeros,
/// unless a forged RESTORE put bytes there, which the rest of the restore overwrites anyway.)
fn aof_view(conn: &mut Conn) -> Vec<(Vec<u8>, Vec<Frame>)> {
    cuckoo_keys(conn)
        .into_iter()
        .map(|(key, digest)| {
            let dump = conn.call(&[b"CF.SCANDUMP".as_slice(), &key, b"0"]);
            let view = if matches!(&dump, Frame::Error(text) if text.contains("being restored")) {
                vec![conn.call(&[b"CF.DEBUG".as_slice(), &key]), dump]
            } else {
                vec![digest]
            };
            (key, view)
        })
        .collect()
}

#[test]
fn info_bf_counts_no_bytes_for_a_restore_that_completed_once_its_filter_is_gone() {
    let server = Server::start();
    let mut conn = server.conn();
    let chunks = source(&mut conn, "src");
    let size = call(&mut conn, "CF.INFO src").items()[1].int() as u64;
    assert_eq!(common::info_bf(&server, "bf_cf_bytes"), size);
    for (iterator, data) in &chunks {
        assert_eq!(loadchunk(&mut conn, "copy", iterator, data), Frame::ok());
    }
    assert_eq!(common::info_bf(&server, "bf_cf_bytes"), 2 * size);
    assert_eq!(call(&mut conn, "DEL src copy"), Frame::Int(2));
    assert_eq!(common::info_bf(&server, "bf_cf_filters"), 0);
    assert_eq!(common::info_bf(&server, "bf_cf_bytes"), 0);
}
