//! Moving off RedisBloom without losing a filter. The fixtures in `tests/data/redisbloom-2.4.23`
//! were written by RedisBloom 2.4.23 on Redis 7.0.15: an RDB file with six filters, and a JSON
//! file with each filter's items, BF.INFO, BF.DEBUG, SCANDUMP chunks, and how it answered 10,000
//! absent probes. After loading the RDB, and separately after replaying the chunks into new keys,
//! every item is found, BF.INFO agrees, and the absent probes answer exactly as RedisBloom
//! answered them, false positives included. The imported filters then keep working: adds,
//! growth by RedisBloom's rules, DEBUG RELOAD, replication, SCANDUMP, AOF rewrite.
//!
//! RedisBloom's older encodings (0 to 3) have no fixture: `redisbloom_older.rs`.

mod common;

use common::{bf_info_field, debug_fields, present, Conn, Forged, Frame, Options, Server};
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
        assert_eq!(
            bf_info_field(conn, key, name),
            expected(name),
            "{key} {name}"
        );
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
        debug_fields(&ours[0])["size"],
        debug_fields(&fixture.debug[0])["size"],
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

/// SCANDUMP headers no RedisBloom filter has, each with the error BF.LOADCHUNK refuses it with:
/// fields of fx:reserved's real `header` (one link, at byte 20) wrong in turn, and a cut header.
fn forged_redisbloom_headers(header: &[u8]) -> Vec<Forged<Vec<u8>>> {
    let patched = |at: usize, bytes: &[u8]| {
        let mut forged = header.to_vec();
        forged[at..at + bytes.len()].copy_from_slice(bytes);
        forged
    };
    let link = 20;
    vec![
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
    ]
}

/// The SCANDUMP header RedisBloom wrote for fx:reserved.
fn reserved_header() -> Vec<u8> {
    let fixtures = fixtures();
    let reserved = fixtures.iter().find(|f| f.key == "fx:reserved").unwrap();
    let header = reserved.chunks[0].1.clone();
    assert_eq!(header.len(), 20 + 53);
    header
}

#[test]
fn forged_redisbloom_headers_are_refused() {
    let server = Server::start();
    let mut conn = server.conn();
    for (what, forged, error) in forged_redisbloom_headers(&reserved_header()) {
        assert_eq!(
            loadchunk(&mut conn, "dst", 1, &forged),
            Frame::error(error),
            "{what}"
        );
        assert_eq!(conn.call(&["EXISTS", "dst"]), Frame::Int(0), "{what}");
    }
}

#[test]
fn a_redisbloom_data_chunk_must_stay_within_its_sub_filter() {
    let server = Server::start();
    let mut conn = server.conn();
    assert_eq!(
        loadchunk(&mut conn, "dst", 1, &reserved_header()),
        Frame::ok()
    );
    assert_eq!(
        loadchunk(&mut conn, "dst", 1 + 1985, &[0u8; 1985]),
        Frame::error("ERR invalid chunk: chunk passes the end of its sub-filter")
    );
}

/// The 300 items the tests of imported filters add to fx:default.
fn more() -> Vec<Vec<u8>> {
    (0..300).map(|i| format!("more:{i}").into_bytes()).collect()
}

/// A server started on RedisBloom's RDB file (a server with appendonly on would load its AOF
/// instead: the AOF is switched on later, with `options`), fx:default (capacity 300, 298 items)
/// then grown by [`more`] items; and the fixtures.
fn imported_and_grown() -> (Server, Options, Vec<Fixture>) {
    let options = Options::default().config("aof-use-rdb-preamble", "no");
    let server = server_on_the_redisbloom_rdb(options.clone());
    let mut command = vec![b"BF.MADD".to_vec(), b"fx:default".to_vec()];
    command.extend(more());
    let added = server.conn().call(&command).items();
    assert_eq!(added.len(), 300);
    (server, options, fixtures())
}

/// Each filter's DEBUG DIGEST-VALUE, and which of its absent probes answer 1.
fn snapshot(conn: &mut Conn, fixtures: &[Fixture]) -> Vec<(Frame, Vec<usize>)> {
    fixtures
        .iter()
        .map(|f| {
            (
                conn.call(&["DEBUG", "DIGEST-VALUE", &f.key]),
                present(conn, &f.key, &f.absent),
            )
        })
        .collect()
}

#[test]
fn an_imported_filter_grows_by_redisbloom_rules_and_keeps_its_items() {
    let (server, _, fixtures) = imported_and_grown();
    let mut conn = server.conn();
    let default = fixtures.iter().find(|f| f.key == "fx:default").unwrap();
    // fx:default grew by RedisBloom's rule: a third sub-filter of 200 * 2 items at half the
    // newest error, sized by the same formulas.
    assert_eq!(present(&mut conn, "fx:default", &more()).len(), 300);
    assert_eq!(
        bf_info_field(&mut conn, "fx:default", "Number of filters"),
        Frame::Int(3)
    );
    assert_eq!(
        bf_info_field(&mut conn, "fx:default", "Capacity"),
        Frame::Int(700)
    );
    let third = debug_fields(&conn.call(&["BF.DEBUG", "fx:default"]).items()[3].text());
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
}

#[test]
fn debug_reload_keeps_the_hashing_of_imported_filters() {
    let (server, _, fixtures) = imported_and_grown();
    let mut conn = server.conn();
    let before = snapshot(&mut conn, &fixtures);
    for (fixture, (_, positives)) in fixtures.iter().zip(&before) {
        if fixture.key != "fx:default" {
            assert_eq!(positives, &fixture.positives, "{}", fixture.key);
        }
    }
    assert_eq!(conn.call(&["DEBUG", "RELOAD"]), Frame::ok());
    assert_eq!(snapshot(&mut conn, &fixtures), before);
}

#[test]
fn scandump_loadchunk_and_copy_keep_the_hashing_of_imported_filters() {
    let (server, _, fixtures) = imported_and_grown();
    let mut conn = server.conn();
    for key in fixtures.iter().map(|f| f.key.as_str()) {
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
}

#[test]
fn a_replica_keeps_the_hashing_of_imported_filters_and_takes_their_writes() {
    let (server, _, fixtures) = imported_and_grown();
    let mut conn = server.conn();
    let before = snapshot(&mut conn, &fixtures);
    let replica = Server::start();
    replica.replicate(&server);
    replica.catch_up(&server);
    let mut on_replica = replica.conn();
    assert_eq!(snapshot(&mut on_replica, &fixtures), before);
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
}

#[test]
fn an_aof_rewrite_keeps_the_hashing_of_imported_filters() {
    let (mut server, options, fixtures) = imported_and_grown();
    let mut conn = server.conn();
    // Switching the AOF on rewrites it from the keyspace: each filter as its LOADCHUNK sequence.
    let before = snapshot(&mut conn, &fixtures);
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
    assert_eq!(snapshot(&mut conn, &fixtures), before);
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
        "ERR filter cannot grow: the next sub-filter's capacity or error rate is out of range; \
         add the items to a new filter reserved with more capacity (or a larger EXPANSION)"
    );
    assert_eq!(
        bf_info_field(&mut conn, "rb", "Number of filters"),
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
        bf_info_field(&mut conn, "native", "Number of filters"),
        Frame::Int(1015)
    );
}
