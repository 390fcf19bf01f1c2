//! RedisBloom 2.4.23's cuckoo filters, as its own runs recorded them (`tests/data/redisbloom-2.4.23/
//! cuckoo.json` and `cuckoo.rdb`; their README says how they were made): the same commands here
//! give RedisBloom's replies and leave its bytes (`CF.SCANDUMP` and the stored value, so RedisBloom
//! reads ours back), its RDB file loads and answers as RedisBloom did, and its dumps load with
//! `CF.LOADCHUNK`. The deliberate differences: errors gain the `ERR` code, and an item added again
//! once its buckets hold nothing but its copies is refused (RedisBloom grows the filter).

mod common;

use common::{flavor, Conn, Frame, Options, Server};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/redisbloom-2.4.23")
}

/// The fixtures, by key.
fn fixtures() -> serde_json::Map<String, Value> {
    let text = std::fs::read_to_string(data_dir().join("cuckoo.json")).expect("cuckoo.json");
    match serde_json::from_str(&text).expect("cuckoo.json is JSON") {
        Value::Object(keys) => keys,
        other => panic!("not an object: {other}"),
    }
}

/// A key RedisBloom grew by adding one item again and again, which this module refuses.
const GROWN_BY_COPIES: &str = "cf:dup";

fn hex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex"))
        .collect()
}

/// An argument as the fixtures write it: text, or `hex:...` for bytes.
fn argument(value: &Value) -> Vec<u8> {
    let text = value.as_str().expect("an argument is a string");
    match text.strip_prefix("hex:") {
        Some(digits) => hex(digits),
        None => text.as_bytes().to_vec(),
    }
}

/// The reply RedisBloom recorded, as this module answers it (RESP2): errors with a code.
fn expected(reply: &Value) -> Frame {
    match reply {
        Value::Number(number) => Frame::Int(number.as_i64().expect("an integer")),
        Value::String(text) if text.starts_with('+') => Frame::Simple(text[1..].to_string()),
        Value::String(text) => Frame::bulk(text),
        Value::Array(items) => Frame::Array(items.iter().map(expected).collect()),
        Value::Null => Frame::NullBulk,
        Value::Object(error) => {
            let text = error["error"].as_str().expect("an error text");
            if text.starts_with("ERR ") || text.starts_with("WRONGTYPE ") {
                Frame::error(text)
            } else {
                Frame::error(&format!("ERR {text}"))
            }
        }
        other => panic!("a reply the fixtures do not use: {other}"),
    }
}

/// Runs a key's recorded commands, asserting each reply.
fn replay(conn: &mut Conn, key: &str, commands: &[Value]) {
    for entry in commands {
        if let Some(pattern) = entry.get("pattern") {
            assert_eq!(pattern, "CF.ADD");
            let template = entry["items"].as_str().unwrap();
            let (from, to) = (
                entry["from"].as_u64().unwrap(),
                entry["to"].as_u64().unwrap(),
            );
            let mut replies = Vec::new();
            for run in entry["replies"].as_array().unwrap() {
                let count = run[1].as_u64().unwrap();
                replies.extend(std::iter::repeat_n(expected(&run[0]), count as usize));
            }
            for (i, reply) in (from..to).zip(replies) {
                let item = template.replace("{i}", &i.to_string());
                assert_eq!(conn.call(&["CF.ADD", key, &item]), reply, "{key} {item}");
            }
            continue;
        }
        let command: Vec<Vec<u8>> = entry["command"]
            .as_array()
            .unwrap()
            .iter()
            .map(argument)
            .collect();
        let reply = conn.call(&command);
        let shown: Vec<String> = command
            .iter()
            .map(|a| String::from_utf8_lossy(a).into())
            .collect();
        assert_eq!(reply, expected(&entry["reply"]), "{shown:?}");
    }
}

/// The CF.SCANDUMP sequence of a key, as (iterator in, iterator out, bytes): each chunk is asked
/// for with the iterator the one before it returned (0 for the first), as the fixtures record it.
fn scandump(conn: &mut Conn, key: &str) -> Vec<(i64, i64, Vec<u8>)> {
    let mut asked = 0;
    common::chunks::cf_scandump(conn, key)
        .into_iter()
        .map(|(next, data)| (std::mem::replace(&mut asked, next), next, data))
        .collect()
}

/// Asserts that `key` holds what RedisBloom held: the same dump, debug line, counts (the Size of
/// CF.INFO is this module's own), the same answers for every probe and added item.
fn assert_as_redisbloom(conn: &mut Conn, key: &str, fixture: &Value) {
    let recorded: Vec<(i64, i64, Vec<u8>)> = fixture["scandump"]
        .as_array()
        .unwrap()
        .iter()
        .map(|chunk| {
            (
                chunk["iterator_in"].as_i64().unwrap(),
                chunk["iterator_out"].as_i64().unwrap(),
                hex(chunk["data_hex"].as_str().unwrap()),
            )
        })
        .collect();
    assert_eq!(scandump(conn, key), recorded, "{key}");
    let debug = conn.call(&["CF.DEBUG", key]);
    assert_eq!(
        debug,
        Frame::bulk(fixture["debug"].as_str().unwrap()),
        "{key}"
    );
    let info = conn.call(&["CF.INFO", key]).items();
    for pair in info.chunks(2) {
        let name = pair[0].text();
        if name != "Size" {
            assert_eq!(
                pair[1].int(),
                fixture["info"][&name].as_i64().unwrap(),
                "{key} {name}"
            );
        }
    }
    let probes = &fixture["probes"];
    let template = probes["probe_items"].as_str().unwrap();
    let (from, to) = (
        probes["probe_from"].as_u64().unwrap(),
        probes["probe_to"].as_u64().unwrap(),
    );
    let answers: String = (from..to)
        .map(|i| {
            let item = template.replace("{i}", &i.to_string());
            if conn.call(&["CF.EXISTS", key, &item]).int() == 1 {
                '1'
            } else {
                '0'
            }
        })
        .collect();
    assert_eq!(
        answers,
        probes["probe_exists"].as_str().unwrap(),
        "{key} probes"
    );
    let added: Vec<Vec<u8>> = probes["added_items"]
        .as_array()
        .unwrap()
        .iter()
        .map(argument)
        .collect();
    let exists: String = added
        .iter()
        .map(|item| {
            let reply = conn.call(&[b"CF.EXISTS".as_slice(), key.as_bytes(), item]);
            if reply.int() == 1 {
                '1'
            } else {
                '0'
            }
        })
        .collect();
    assert_eq!(
        exists,
        probes["added_exists"].as_str().unwrap(),
        "{key} added"
    );
    let counts: Vec<i64> = added
        .iter()
        .map(|item| {
            conn.call(&[b"CF.COUNT".as_slice(), key.as_bytes(), item])
                .int()
        })
        .collect();
    let recorded: Vec<i64> = probes["added_count"]
        .as_array()
        .unwrap()
        .iter()
        .map(|count| count.as_i64().unwrap())
        .collect();
    assert_eq!(counts, recorded, "{key} counts");
}

#[test]
fn the_same_commands_give_redisbloom_s_replies_and_bytes() {
    let server = Server::start();
    let mut conn = server.conn();
    let fixtures = fixtures();
    assert!(fixtures.len() >= 19);
    for (key, fixture) in &fixtures {
        if key == GROWN_BY_COPIES {
            continue;
        }
        replay(&mut conn, key, fixture["commands"].as_array().unwrap());
        assert_as_redisbloom(&mut conn, key, fixture);
        // The stored value is RedisBloom's, byte for byte: it reads ours back. (The last 10
        // bytes of a DUMP are the server's RDB version and a checksum.)
        let ours = conn.call(&["DUMP", key]).bytes();
        let theirs = hex(fixture["dump_hex"].as_str().unwrap());
        assert_eq!(
            ours[..ours.len() - 10],
            theirs[..theirs.len() - 10],
            "{key}"
        );
    }
}

#[test]
fn an_item_added_until_its_buckets_hold_only_its_copies_is_refused_not_grown() {
    let server = Server::start();
    let mut conn = server.conn();
    let fixture = &fixtures()[GROWN_BY_COPIES];
    // RedisBloom took six copies of one item and grew a second sub-filter for the fifth; here
    // the fifth is refused and the filter keeps one sub-filter.
    let first = &fixture["commands"][0]["command"];
    let reserve: Vec<Vec<u8>> = first.as_array().unwrap().iter().map(argument).collect();
    assert_eq!(conn.call(&reserve), Frame::ok());
    for _ in 0..4 {
        assert_eq!(
            conn.call(&["CF.ADD", GROWN_BY_COPIES, "dup"]),
            Frame::Int(1)
        );
    }
    let refused = conn.call(&["CF.ADD", GROWN_BY_COPIES, "dup"]);
    assert!(common::error_text(&refused).starts_with("ERR item added too many times"));
    assert!(conn
        .call(&["CF.DEBUG", GROWN_BY_COPIES])
        .text()
        .contains(" filters:1 "));
}

/// A server started on RedisBloom's RDB file.
fn server_on_the_redisbloom_rdb(options: Options) -> Server {
    let mut server = Server::with(options);
    server.kill();
    std::fs::copy(data_dir().join("cuckoo.rdb"), server.dir.join("dump.rdb")).unwrap();
    server
        .relaunch()
        .unwrap_or_else(|log| panic!("the RedisBloom RDB did not load:\n{log}"));
    server
}

#[test]
fn redisbloom_s_rdb_loads_and_every_filter_answers_as_it_did() {
    let server = server_on_the_redisbloom_rdb(Options::default());
    let mut conn = server.conn();
    for (key, fixture) in &fixtures() {
        assert_eq!(
            conn.call(&["TYPE", key]),
            Frame::simple("MBbloomCF"),
            "{key}"
        );
        assert_as_redisbloom(&mut conn, key, fixture);
    }
    // The Bloom filter beside them loads too.
    assert_eq!(
        conn.call(&["BF.EXISTS", "bf:next", "next:3"]),
        Frame::Int(1)
    );
    // And each cuckoo filter's value is what RedisBloom stored.
    for (key, fixture) in &fixtures() {
        let ours = conn.call(&["DUMP", key]).bytes();
        let theirs = hex(fixture["dump_hex"].as_str().unwrap());
        assert_eq!(
            ours[..ours.len() - 10],
            theirs[..theirs.len() - 10],
            "{key}"
        );
    }
    let _ = flavor();
}

#[test]
fn redisbloom_s_dumps_load_with_loadchunk() {
    let server = Server::start();
    let mut conn = server.conn();
    for (key, fixture) in &fixtures() {
        let chunks = fixture["scandump"].as_array().unwrap();
        if chunks.is_empty() {
            continue; // RedisBloom dumps nothing of a filter without items.
        }
        for chunk in chunks {
            let iterator = chunk["iterator_out"].as_i64().unwrap().to_string();
            let data = hex(chunk["data_hex"].as_str().unwrap());
            let reply = conn.call(&[
                b"CF.LOADCHUNK".as_slice(),
                key.as_bytes(),
                iterator.as_bytes(),
                &data,
            ]);
            assert_eq!(reply, Frame::ok(), "{key} at {iterator}");
        }
        assert_as_redisbloom(&mut conn, key, fixture);
    }
}
