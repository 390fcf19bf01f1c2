//! Moving off RedisBloom without losing a filter. The fixtures in `tests/data/redisbloom-2.4.23`
//! were written by RedisBloom 2.4.23 on Redis 7.0.15: an RDB file with six filters, and a JSON
//! file with each filter's items, BF.INFO, BF.DEBUG, SCANDUMP chunks, and how it answered 10,000
//! absent probes. After loading the RDB, and separately after replaying the chunks into new keys,
//! every item is found, BF.INFO agrees, and the absent probes answer exactly as RedisBloom
//! answered them, false positives included. The imported filters then keep working: adds,
//! growth by RedisBloom's rules, DEBUG RELOAD, replication, SCANDUMP, AOF rewrite.
//!
//! RedisBloom's older encodings (0 to 3) have no fixture: filters in them are built here by the
//! rules RedisBloom followed (see the fixtures' README) and restored from forged DUMP payloads.

mod common;

use bf_filter::hash::{murmur2, murmur64a};
use common::payload::{Envelope, Field};
use common::{Conn, Frame, Options, Server};
use serde_json::Value;
use std::path::Path;

fn data_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/redisbloom-2.4.23")
}

/// What RedisBloom said about one of its filters.
struct Fixture {
    key: String,
    items: Vec<Vec<u8>>,
    info: serde_json::Map<String, Value>,
    debug: Vec<String>,
    /// (iterator BF.LOADCHUNK takes, bytes), header first.
    chunks: Vec<(u64, Vec<u8>)>,
    absent: Vec<Vec<u8>>,
    positives: Vec<usize>,
}

fn hex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(&text[at..at + 2], 16).unwrap())
        .collect()
}

/// Expands "prefix:{i} for i in 0..N".
fn pattern(text: &str) -> Vec<Vec<u8>> {
    let (template, range) = text.split_once(" for i in ").unwrap();
    let (low, high) = range.split_once("..").unwrap();
    let (low, high): (u64, u64) = (low.parse().unwrap(), high.parse().unwrap());
    (low..high)
        .map(|i| template.replace("{i}", &i.to_string()).into_bytes())
        .collect()
}

fn fixtures() -> Vec<Fixture> {
    let text = std::fs::read_to_string(data_dir().join("redisbloom-2.4.23.json")).unwrap();
    let all: serde_json::Map<String, Value> = serde_json::from_str(&text).unwrap();
    all.into_iter()
        .map(|(key, entry)| {
            let items = if let Some(items) = entry.get("items") {
                items
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|item| item.as_str().unwrap().as_bytes().to_vec())
                    .collect()
            } else if let Some(items) = entry.get("items_hex") {
                items
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|item| hex(item.as_str().unwrap()))
                    .collect()
            } else {
                pattern(entry["items_pattern"].as_str().unwrap())
            };
            let chunks = entry["scandump"]
                .as_array()
                .unwrap()
                .iter()
                .map(|chunk| {
                    (
                        chunk["iterator_out"].as_u64().unwrap(),
                        hex(chunk["data_hex"].as_str().unwrap()),
                    )
                })
                .collect();
            Fixture {
                key,
                items,
                info: entry["bf_info"].as_object().unwrap().clone(),
                debug: entry["bf_debug"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|line| line.as_str().unwrap().to_string())
                    .collect(),
                chunks,
                absent: pattern(entry["absent_probes"].as_str().unwrap()),
                positives: entry["absent_positive_indexes"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|index| index.as_u64().unwrap() as usize)
                    .collect(),
            }
        })
        .collect()
}

/// BF.MEXISTS over many items, a thousand at a time: the indexes that answered 1.
fn present(conn: &mut Conn, key: &str, items: &[Vec<u8>]) -> Vec<usize> {
    let mut found = Vec::new();
    for (batch, chunk) in items.chunks(1000).enumerate() {
        let mut command = vec![b"BF.MEXISTS".to_vec(), key.as_bytes().to_vec()];
        command.extend(chunk.iter().cloned());
        let reply = conn.call(&command).items();
        assert_eq!(reply.len(), chunk.len(), "{key}");
        for (index, answer) in reply.iter().enumerate() {
            match answer {
                Frame::Int(1) => found.push(batch * 1000 + index),
                Frame::Int(0) => {}
                other => panic!("{key}: {other:?}"),
            }
        }
    }
    found
}

/// BF.INFO as (name, value) pairs, RESP2.
fn info(conn: &mut Conn, key: &str) -> Vec<(String, Frame)> {
    conn.call(&["BF.INFO", key])
        .items()
        .chunks(2)
        .map(|pair| (pair[0].text(), pair[1].clone()))
        .collect()
}

fn info_field(conn: &mut Conn, key: &str, name: &str) -> Frame {
    info(conn, key)
        .into_iter()
        .find(|(field, _)| field == name)
        .unwrap_or_else(|| panic!("no {name}"))
        .1
}

/// `name:value` fields of a BF.DEBUG line.
fn fields(line: &str) -> std::collections::HashMap<String, String> {
    line.split_whitespace()
        .filter_map(|field| field.split_once(':'))
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .collect()
}

/// Every item present, BF.INFO and BF.DEBUG in agreement, and the absent probes answered exactly
/// as RedisBloom answered them.
fn answers_as_redisbloom(conn: &mut Conn, key: &str, fixture: &Fixture) {
    let found = present(conn, key, &fixture.items);
    assert_eq!(
        found.len(),
        fixture.items.len(),
        "{key}: an item is missing"
    );
    let positives = present(conn, key, &fixture.absent);
    assert_eq!(positives, fixture.positives, "{key}: absent probes");

    let expected = |name: &str| match &fixture.info[name] {
        Value::Null => Frame::NullBulk,
        value => Frame::Int(value.as_i64().unwrap()),
    };
    for name in [
        "Capacity",
        "Number of filters",
        "Number of items inserted",
        "Expansion rate",
    ] {
        assert_eq!(info_field(conn, key, name), expected(name), "{key} {name}");
    }

    // The same sub-filters: bytes, bits, hashes, capacity, items and error of each.
    let ours: Vec<String> = conn
        .call(&["BF.DEBUG", key])
        .items()
        .iter()
        .map(Frame::text)
        .collect();
    assert_eq!(ours.len(), fixture.debug.len(), "{key}: {ours:?}");
    assert_eq!(
        fields(&ours[0])["size"],
        fields(&fixture.debug[0])["size"],
        "{key}"
    );
    // RedisBloom's own lines, to the character: the same sub-filters, item counts and ratios.
    assert_eq!(ours, fixture.debug, "{key}");
}

fn loadchunk(conn: &mut Conn, key: &str, iterator: u64, data: &[u8]) -> Frame {
    conn.call(&[
        b"BF.LOADCHUNK".to_vec(),
        key.as_bytes().to_vec(),
        iterator.to_string().into_bytes(),
        data.to_vec(),
    ])
}

/// A server started on RedisBloom's RDB file.
fn server_on_the_redisbloom_rdb(options: Options) -> Server {
    let mut server = Server::with(options);
    server.kill();
    std::fs::copy(
        data_dir().join("redisbloom-2.4.23.rdb"),
        server.dir.join("dump.rdb"),
    )
    .unwrap();
    server
        .relaunch()
        .unwrap_or_else(|log| panic!("the RedisBloom RDB did not load:\n{log}"));
    server
}

#[test]
fn an_rdb_written_by_redisbloom_loads_and_answers_as_it_did() {
    let fixtures = fixtures();
    assert_eq!(fixtures.len(), 6);
    let server = server_on_the_redisbloom_rdb(Options::default());
    let mut conn = server.conn();
    assert_eq!(conn.call(&["DBSIZE"]), Frame::Int(6));
    for fixture in &fixtures {
        assert_eq!(
            conn.call(&["TYPE", &fixture.key]),
            Frame::simple("MBbloom--")
        );
        answers_as_redisbloom(&mut conn, &fixture.key, fixture);
    }
}

#[test]
fn redisbloom_scandump_chunks_load_and_answer_as_it_did() {
    let server = Server::start();
    let mut conn = server.conn();
    for fixture in fixtures() {
        let key = format!("copy:{}", fixture.key);
        for (iterator, data) in &fixture.chunks {
            assert_eq!(
                loadchunk(&mut conn, &key, *iterator, data),
                Frame::ok(),
                "{key} at {iterator}"
            );
        }
        answers_as_redisbloom(&mut conn, &key, &fixture);
    }
}

#[test]
fn forged_redisbloom_headers_are_refused() {
    let server = Server::start();
    let mut conn = server.conn();
    let fixtures = fixtures();
    let reserved = fixtures.iter().find(|f| f.key == "fx:reserved").unwrap();
    let header = reserved.chunks[0].1.clone();
    assert_eq!(header.len(), 20 + 53);
    let patched = |at: usize, bytes: &[u8]| {
        let mut forged = header.clone();
        forged[at..at + bytes.len()].copy_from_slice(bytes);
        forged
    };
    let link = 20;
    let cases = [
        (
            "items do not add up",
            patched(0, &501u64.to_le_bytes()),
            "ERR invalid chunk: sub-filter items do not add up to the filter's",
        ),
        (
            "unknown option",
            patched(12, &21u32.to_le_bytes()),
            "ERR invalid chunk: unknown RedisBloom option flags",
        ),
        (
            "entries as bits",
            patched(12, &7u32.to_le_bytes()),
            "ERR invalid chunk: RedisBloom's entries-as-bits option is not supported",
        ),
        (
            "growth zero",
            patched(16, &0u32.to_le_bytes()),
            "ERR invalid chunk: RedisBloom growth out of range",
        ),
        (
            "bytes",
            patched(link, &1985u64.to_le_bytes()),
            "ERR invalid chunk: byte count does not match the bit count",
        ),
        (
            "bits",
            patched(link + 8, &16000u64.to_le_bytes()),
            "ERR invalid chunk: bit count does not match the capacity",
        ),
        (
            "error",
            patched(link + 24, &0.5f64.to_le_bytes()),
            "ERR invalid chunk: bits per item do not match the error rate",
        ),
        (
            "hashes",
            patched(link + 40, &12u32.to_le_bytes()),
            "ERR invalid chunk: hash count does not match the error rate",
        ),
        (
            "items over capacity",
            {
                let mut forged = patched(0, &1001u64.to_le_bytes());
                forged[link + 16..link + 24].copy_from_slice(&1001u64.to_le_bytes());
                forged
            },
            "ERR invalid chunk: more items than capacity",
        ),
        (
            "power of two out of range",
            patched(link + 52, &[63]),
            "ERR invalid chunk: power-of-two size out of range",
        ),
        (
            "cut",
            header[..header.len() - 2].to_vec(),
            "ERR invalid chunk: neither a redis-bf nor a RedisBloom dump header",
        ),
    ];
    for (what, forged, error) in cases {
        assert_eq!(
            loadchunk(&mut conn, "dst", 1, &forged),
            Frame::error(error),
            "{what}"
        );
        assert_eq!(conn.call(&["EXISTS", "dst"]), Frame::Int(0), "{what}");
    }
    // A data chunk must stay within its sub-filter.
    assert_eq!(loadchunk(&mut conn, "dst", 1, &header), Frame::ok());
    assert_eq!(
        loadchunk(&mut conn, "dst", 1 + 1985, &[0u8; 1985]),
        Frame::error("ERR invalid chunk: chunk passes the end of its sub-filter")
    );
}

#[test]
fn imported_filters_keep_working_and_keep_their_hashing() {
    let fixtures = fixtures();
    // Started on the RDB file (a server with appendonly on would load its AOF instead), the AOF
    // switched on later.
    let options = Options::default().config("aof-use-rdb-preamble", "no");
    let mut server = server_on_the_redisbloom_rdb(options.clone());
    let mut conn = server.conn();
    let default = fixtures.iter().find(|f| f.key == "fx:default").unwrap();

    // Adds: fx:default (capacity 300, 298 items) grows by RedisBloom's rule: a third sub-filter
    // of 200 * 2 items at half the newest error, sized by the same formulas.
    let more: Vec<Vec<u8>> = (0..300).map(|i| format!("more:{i}").into_bytes()).collect();
    let mut command = vec![b"BF.MADD".to_vec(), b"fx:default".to_vec()];
    command.extend(more.iter().cloned());
    let added = conn.call(&command).items();
    assert_eq!(added.len(), 300);
    assert_eq!(present(&mut conn, "fx:default", &more).len(), 300);
    assert_eq!(
        info_field(&mut conn, "fx:default", "Number of filters"),
        Frame::Int(3)
    );
    assert_eq!(
        info_field(&mut conn, "fx:default", "Capacity"),
        Frame::Int(700)
    );
    let third = fields(&conn.call(&["BF.DEBUG", "fx:default"]).items()[3].text());
    let (hashes, bits) = common::sizing(400, 0.00125);
    assert_eq!(third["bits"], bits.to_string());
    assert_eq!(third["hashes"], hashes.to_string());
    assert_eq!(third["capacity"], "400");
    assert_eq!(third["ratio"], "0.00125");
    assert_eq!(third["hashwidth"], "64");
    // The old items and the old false positives are where they were.
    assert_eq!(
        present(&mut conn, "fx:default", &default.items).len(),
        default.items.len()
    );

    // Everything the server does with a filter keeps the hashing: DEBUG RELOAD (RDB save and
    // load), SCANDUMP/LOADCHUNK, COPY, replication, an AOF rewrite.
    let keys: Vec<&str> = fixtures.iter().map(|f| f.key.as_str()).collect();
    let snapshot = |conn: &mut Conn| -> Vec<(Frame, Vec<usize>)> {
        fixtures
            .iter()
            .map(|f| {
                (
                    conn.call(&["DEBUG", "DIGEST-VALUE", &f.key]),
                    present(conn, &f.key, &f.absent),
                )
            })
            .collect()
    };
    let before = snapshot(&mut conn);
    for (fixture, (_, positives)) in fixtures.iter().zip(&before) {
        if fixture.key != "fx:default" {
            assert_eq!(positives, &fixture.positives, "{}", fixture.key);
        }
    }
    assert_eq!(conn.call(&["DEBUG", "RELOAD"]), Frame::ok());
    assert_eq!(snapshot(&mut conn), before);

    for key in &keys {
        let mut iterator = 0u64;
        loop {
            let reply = conn
                .call(&["BF.SCANDUMP", key, &iterator.to_string()])
                .items();
            iterator = reply[0].int() as u64;
            if iterator == 0 {
                break;
            }
            let copy = format!("dumped:{key}");
            assert_eq!(
                loadchunk(&mut conn, &copy, iterator, &reply[1].bytes()),
                Frame::ok()
            );
        }
        let copy = format!("dumped:{key}");
        assert_eq!(
            conn.call(&["DEBUG", "DIGEST-VALUE", &copy]),
            conn.call(&["DEBUG", "DIGEST-VALUE", key]),
            "{key}"
        );
        assert_eq!(
            conn.call(&["COPY", key, &format!("copied:{key}")]),
            Frame::Int(1)
        );
    }
    for fixture in &fixtures {
        for prefix in ["dumped", "copied"] {
            let copy = format!("{prefix}:{}", fixture.key);
            let positives = present(&mut conn, &copy, &fixture.absent);
            let original = present(&mut conn, &fixture.key, &fixture.absent);
            assert_eq!(positives, original, "{copy}");
        }
    }

    let replica = Server::start();
    replica.replicate(&server);
    replica.catch_up(&server);
    let mut on_replica = replica.conn();
    assert_eq!(snapshot(&mut on_replica), before);
    // Writes replicate too (BF.ADD to an imported filter reaches the replica as it is).
    assert_eq!(conn.call(&["BF.ADD", "fx:binary", "late"]), Frame::Int(1));
    replica.catch_up(&server);
    assert_eq!(
        on_replica.call(&["BF.EXISTS", "fx:binary", "late"]),
        Frame::Int(1)
    );
    assert_eq!(
        on_replica.call(&["DEBUG", "DIGEST-VALUE", "fx:binary"]),
        conn.call(&["DEBUG", "DIGEST-VALUE", "fx:binary"])
    );

    // Switching the AOF on rewrites it from the keyspace: each filter as its LOADCHUNK sequence.
    let before = snapshot(&mut conn);
    assert_eq!(
        conn.call(&["CONFIG", "SET", "appendonly", "yes"]),
        Frame::ok()
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while server.info_field("persistence", "aof_rewrite_in_progress") != "0"
        || server.info_field("persistence", "aof_rewrite_scheduled") != "0"
        || server.info_field("persistence", "aof_enabled") != "1"
    {
        assert!(
            std::time::Instant::now() < deadline,
            "AOF rewrite did not finish"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    drop(conn);
    // SIGKILL and start again from the AOF alone.
    std::fs::remove_file(server.dir.join("dump.rdb")).unwrap();
    server.restart_with(options.config("appendonly", "yes"));
    let mut conn = server.conn();
    assert_eq!(snapshot(&mut conn), before);
}

// ---- RedisBloom's older encodings, built here by its rules -------------------------------

/// RedisBloom's sizing constants.
#[allow(clippy::approx_constant)]
const LN_2: f64 = 0.693147180559945;
const LN_2_SQUARED: f64 = 0.480453013918201;

/// One sub-filter the way a RedisBloom release built and filled it.
struct OldLink {
    entries: u64,
    error: f64,
    hashes: u64,
    bpe: f64,
    /// The probe modulus.
    bits: u64,
    /// log2 of a power-of-two size, or 0.
    n2: u64,
    data: Vec<u8>,
    items: u64,
}

/// How a release hashed: 64-bit MurmurHash64A, or 32-bit MurmurHash2 with 32- or 64-bit probe
/// arithmetic.
#[derive(Clone, Copy, PartialEq)]
enum OldHashing {
    Murmur64,
    Murmur32 { arithmetic32: bool },
}

fn probes(hashing: OldHashing, item: &[u8], hashes: u64, bits: u64) -> Vec<u64> {
    match hashing {
        OldHashing::Murmur64 => {
            let a = murmur64a(item, 0xc6a4_a793_5bd1_e995);
            let b = murmur64a(item, a);
            (0..hashes)
                .map(|i| a.wrapping_add(i.wrapping_mul(b)) % bits)
                .collect()
        }
        OldHashing::Murmur32 { arithmetic32 } => {
            let a = murmur2(item, 0x9747_b28c);
            let b = murmur2(item, a);
            (0..hashes)
                .map(|i| {
                    if arithmetic32 {
                        u64::from(a.wrapping_add((i as u32).wrapping_mul(b))) % bits
                    } else {
                        u64::from(a).wrapping_add(i.wrapping_mul(u64::from(b))) % bits
                    }
                })
                .collect()
        }
    }
}

impl OldLink {
    /// A sub-filter for `entries` items at `error`, rounded up to a power of two (capacity
    /// raised to fill it) if `round`.
    fn new(entries: u64, error: f64, round: bool) -> OldLink {
        let bpe = error.ln().abs() / LN_2_SQUARED;
        let hashes = (LN_2 * bpe).ceil() as u64;
        let wanted = entries as f64 * bpe;
        let (bits, n2, entries) = if round {
            let n2 = wanted.log2().floor() as u64 + 1;
            let bits = 1u64 << n2;
            let spare = (bits as f64 - wanted).trunc();
            (bits, n2, entries + (spare / bpe) as u64)
        } else {
            (wanted as u64, 0, entries)
        };
        OldLink {
            entries,
            error,
            hashes,
            bpe,
            bits,
            n2,
            data: vec![0; bits.div_ceil(8) as usize],
            items: 0,
        }
    }

    fn has(&self, hashing: OldHashing, item: &[u8]) -> bool {
        probes(hashing, item, self.hashes, self.bits)
            .iter()
            .all(|bit| self.data[(bit >> 3) as usize] & (1 << (bit % 8)) != 0)
    }

    fn add(&mut self, hashing: OldHashing, item: &[u8]) {
        let mut new = false;
        for bit in probes(hashing, item, self.hashes, self.bits) {
            let byte = &mut self.data[(bit >> 3) as usize];
            new |= *byte & (1 << (bit % 8)) == 0;
            *byte |= 1 << (bit % 8);
        }
        self.items += u64::from(new);
    }

    /// The fields RDB encoding `encver` holds for this sub-filter; `bits_field` is what the
    /// release wrote for the bit count (some wrote 0 for a power-of-two size).
    fn fields(&self, encver: u64, bits_field: u64) -> Vec<Field> {
        let mut fields = vec![
            Field::Unsigned(self.entries),
            Field::Double(self.error),
            Field::Unsigned(self.hashes),
            Field::Double(self.bpe),
        ];
        if encver >= 1 {
            fields.push(Field::Unsigned(bits_field));
            fields.push(Field::Unsigned(self.n2));
        }
        fields.push(Field::Buffer(self.data.clone()));
        fields.push(Field::Unsigned(self.items));
        fields
    }
}

/// An envelope for RDB encoding version `encver` of the `MBbloom--` type, from a real DUMP.
fn envelope(conn: &mut Conn, encver: u64) -> Envelope {
    conn.call(&["BF.ADD", "template", "x"]);
    let payload = conn.call(&["DUMP", "template"]).bytes();
    Envelope::from_dump(&payload).with_encoding_version(encver)
}

fn restore(conn: &mut Conn, key: &str, payload: Vec<u8>) -> Frame {
    conn.call(&[
        b"RESTORE".to_vec(),
        key.as_bytes().to_vec(),
        b"0".to_vec(),
        payload,
    ])
}

fn items(prefix: &str, count: usize) -> Vec<Vec<u8>> {
    (0..count)
        .map(|i| format!("{prefix}:{i}").into_bytes())
        .collect()
}

#[test]
fn older_redisbloom_encodings_load_and_answer_by_their_own_rules() {
    let server = Server::start();
    let mut conn = server.conn();
    let absent = items("absent", 20_000);

    // Encoding 0 (ReBloom 1.0): 32-bit hashing, 32-bit probe arithmetic, no rounding (958 bits,
    // not a whole number of bytes), no options, bits and n2 not stored.
    let hashing = OldHashing::Murmur32 { arithmetic32: true };
    let mut link = OldLink::new(100, 0.01, false);
    assert_eq!((link.bits, link.hashes), (958, 7));
    let added = items("v0", 90);
    for item in &added {
        link.add(hashing, item);
    }
    let mut fields = vec![Field::Unsigned(link.items), Field::Unsigned(1)];
    fields.extend(link.fields(0, 0));
    let payload = envelope(&mut conn, 0).payload(&fields);
    assert_eq!(restore(&mut conn, "v0", payload), Frame::ok());
    assert_eq!(present(&mut conn, "v0", &added).len(), added.len());
    // Found if set under 32-bit arithmetic, as this release set them, or under the 64-bit
    // arithmetic of every later one.
    let later = OldHashing::Murmur32 {
        arithmetic32: false,
    };
    let expected: Vec<usize> = (0..absent.len())
        .filter(|&i| link.has(hashing, &absent[i]) || link.has(later, &absent[i]))
        .collect();
    assert_eq!(present(&mut conn, "v0", &absent), expected);
    assert_eq!(conn.call(&["BF.CARD", "v0"]), Frame::Int(link.items as i64));
    // 32-bit hashing shows as RedisBloom shows it.
    assert_eq!(fields_of_debug(&mut conn, "v0")[1]["hashwidth"], "32");

    // Encoding 1: 32-bit hashing with power-of-two sizes (bit count written as 0, n2 stored).
    let hashing = OldHashing::Murmur32 {
        arithmetic32: false,
    };
    let mut link = OldLink::new(100, 0.01, true);
    assert_eq!((link.bits, link.n2, link.entries), (1024, 10, 106));
    let added = items("v1", 106);
    for item in &added {
        link.add(hashing, item);
    }
    let mut fields = vec![Field::Unsigned(link.items), Field::Unsigned(1)];
    fields.extend(link.fields(1, 0));
    let payload = envelope(&mut conn, 1).payload(&fields);
    assert_eq!(restore(&mut conn, "v1", payload), Frame::ok());
    assert_eq!(present(&mut conn, "v1", &added).len(), added.len());
    let expected: Vec<usize> = (0..absent.len())
        .filter(|&i| link.has(hashing, &absent[i]))
        .collect();
    assert_eq!(present(&mut conn, "v1", &absent), expected);
    // It grows as RedisBloom grows such a chain (no option 1: power-of-two sizes): 212 items
    // at 0.005 want 2337.9 bits, so 4096, with room for 159 more.
    let grown = OldLink::new(212, 0.005, true);
    assert_eq!((grown.bits, grown.entries), (4096, 371));
    let more = items("v1-more", 50);
    for item in &more {
        conn.call(&[b"BF.ADD".to_vec(), b"v1".to_vec(), item.clone()]);
    }
    assert_eq!(present(&mut conn, "v1", &more).len(), more.len());
    assert_eq!(
        info_field(&mut conn, "v1", "Capacity"),
        Frame::Int((link.entries + grown.entries) as i64)
    );
    let second = &fields_of_debug(&mut conn, "v1")[2];
    assert_eq!(second["bits"], "4096");
    assert_eq!(second["hashes"], grown.hashes.to_string());

    // Encodings 2 and 3 (ReBloom 1.1 to 2.0): option flags, 64-bit hashing (flag 4),
    // power-of-two sizes, growth 2 not stored; two sub-filters, the second with the error rule
    // of those releases (0.01 * 0.5^2), which differs from today's.
    for encver in [2u64, 3] {
        let hashing = OldHashing::Murmur64;
        let mut first = OldLink::new(50, 0.01, true);
        let mut second = OldLink::new(first.entries * 2, 0.0025, true);
        let added = items(&format!("v{encver}"), (first.entries + 30) as usize);
        for item in &added[..first.entries as usize] {
            first.add(hashing, item);
        }
        for item in &added[first.entries as usize..] {
            if !first.has(hashing, item) {
                second.add(hashing, item);
            }
        }
        let mut fields = vec![
            Field::Unsigned(first.items + second.items),
            Field::Unsigned(2),
            Field::Unsigned(4),
        ];
        fields.extend(first.fields(encver, first.bits));
        fields.extend(second.fields(encver, second.bits));
        let key = format!("v{encver}");
        let payload = envelope(&mut conn, encver).payload(&fields);
        assert_eq!(restore(&mut conn, &key, payload), Frame::ok());
        assert_eq!(present(&mut conn, &key, &added).len(), added.len());
        let expected: Vec<usize> = (0..absent.len())
            .filter(|&i| first.has(hashing, &absent[i]) || second.has(hashing, &absent[i]))
            .collect();
        assert_eq!(present(&mut conn, &key, &absent), expected, "{key}");
        assert_eq!(info_field(&mut conn, &key, "Expansion rate"), Frame::Int(2));
        assert_eq!(
            info_field(&mut conn, &key, "Number of items inserted"),
            Frame::Int((first.items + second.items) as i64)
        );
        assert_eq!(fields_of_debug(&mut conn, &key)[1]["hashwidth"], "64");
    }

    // Everything survives our own save and load.
    let keys = ["v0", "v1", "v2", "v3"];
    let before: Vec<Vec<usize>> = keys
        .iter()
        .map(|key| present(&mut conn, key, &absent))
        .collect();
    assert_eq!(conn.call(&["DEBUG", "RELOAD"]), Frame::ok());
    let after: Vec<Vec<usize>> = keys
        .iter()
        .map(|key| present(&mut conn, key, &absent))
        .collect();
    assert_eq!(after, before);

    // Damaged old payloads are refused, never loaded half-way.
    let link = OldLink::new(100, 0.01, true);
    for (what, encver, fields) in [
        (
            "items do not add up",
            1,
            [
                vec![Field::Unsigned(5), Field::Unsigned(1)],
                link.fields(1, 0),
            ]
            .concat(),
        ),
        (
            "bit array too short",
            1,
            [
                vec![Field::Unsigned(0), Field::Unsigned(1)],
                OldLink {
                    data: vec![0; 100],
                    ..OldLink::new(100, 0.01, true)
                }
                .fields(1, 0),
            ]
            .concat(),
        ),
        (
            "no sub-filters",
            4,
            vec![
                Field::Unsigned(0),
                Field::Unsigned(0),
                Field::Unsigned(5),
                Field::Unsigned(2),
            ],
        ),
    ] {
        let payload = envelope(&mut conn, encver).payload(&fields);
        assert_eq!(
            restore(&mut conn, "bad", payload),
            Frame::error("ERR Bad data format"),
            "{what}"
        );
        assert_eq!(conn.call(&["EXISTS", "bad"]), Frame::Int(0), "{what}");
    }
}

fn fields_of_debug(conn: &mut Conn, key: &str) -> Vec<std::collections::HashMap<String, String>> {
    conn.call(&["BF.DEBUG", key])
        .items()
        .iter()
        .map(|line| fields(&line.text()))
        .collect()
}

/// The SCANDUMP header RedisBloom 2.4 writes for `BF.RESERVE k <2 * error> 1 EXPANSION 1` before
/// any add: one link of one item at `error`, 64 bits.
fn one_item_link_header(error: f64) -> Vec<u8> {
    let bits_per_item = -error.ln() / 0.480453013918201;
    #[allow(clippy::approx_constant)] // RedisBloom's digits, not std's LN_2
    let hashes = (0.693147180559945 * bits_per_item).ceil() as u32;
    let mut header = Vec::new();
    header.extend(0u64.to_le_bytes()); // items
    header.extend(1u32.to_le_bytes()); // links
    header.extend(5u32.to_le_bytes()); // options: 64-bit hashing, no rounding
    header.extend(1u32.to_le_bytes()); // growth
    header.extend(8u64.to_le_bytes()); // bytes
    header.extend(64u64.to_le_bytes()); // bits
    header.extend(0u64.to_le_bytes()); // items in the link
    header.extend(error.to_le_bytes());
    header.extend(bits_per_item.to_le_bytes());
    header.extend(hashes.to_le_bytes());
    header.extend(1u64.to_le_bytes()); // capacity
    header.push(0); // n2
    header
}

#[test]
fn an_imported_expansion_1_chain_grows_as_far_as_redisbloom_let_it() {
    let server = Server::start();
    let mut conn = server.conn();
    // RedisBloom 2.4.23 grew this chain to 1,067 sub-filters (the last at the smallest subnormal
    // error rate) before its adds failed; this module's own chains stop at 1,015.
    assert_eq!(
        loadchunk(&mut conn, "rb", 1, &one_item_link_header(0.005)),
        Frame::ok()
    );
    assert_eq!(loadchunk(&mut conn, "rb", 9, &[0; 8]), Frame::ok());
    let mut next = 0;
    let refused = loop {
        let mut madd = vec!["BF.MADD".to_string(), "rb".to_string()];
        madd.extend((next..next + 1000).map(|i| format!("item:{i}")));
        next += 1000;
        if let Some(Frame::Error(text)) = conn.call(&madd).items().pop() {
            break text;
        }
        assert!(next < 100_000, "never refused");
    };
    assert_eq!(
        refused,
        "ERR filter cannot grow: the next sub-filter's capacity or error rate is out of range"
    );
    assert_eq!(
        info_field(&mut conn, "rb", "Number of filters"),
        Frame::Int(1067)
    );
    let lines = conn.call(&["BF.DEBUG", "rb"]).items();
    let last = lines.last().unwrap().text();
    assert!(last.contains(" bits:1600 hashes:1075 "), "{last}");
    // A native chain asked for the same stops at the normal range.
    assert_eq!(
        conn.call(&["BF.RESERVE", "native", "0.01", "1", "EXPANSION", "1"]),
        Frame::ok()
    );
    let mut next = 0;
    loop {
        let mut madd = vec!["BF.MADD".to_string(), "native".to_string()];
        madd.extend((next..next + 1000).map(|i| format!("item:{i}")));
        next += 1000;
        if let Some(Frame::Error(_)) = conn.call(&madd).items().pop() {
            break;
        }
    }
    assert_eq!(
        info_field(&mut conn, "native", "Number of filters"),
        Frame::Int(1015)
    );
}
