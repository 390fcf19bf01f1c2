//! Real client libraries against the module: what applications actually run.

mod common;

use common::Server;
use redis::bloom::{
    BloomFilterDumpIterator, BloomFilterInfoType, BloomFilterInfoTypeResponse,
    BloomFilterInsertOptions, BloomFilterScalingOptions,
};
use redis::{Commands, Value};
use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

/// The Python of the virtual environment `make test` prepares, with the pinned redis-py.
fn python() -> std::path::PathBuf {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: `make test` creates it (python3 -m venv target/venv, redis-py pinned)",
        python.display()
    );
    python
}

/// Runs a client script against a fresh server, once in RESP2 and once in RESP3 (`program script
/// port protocol`); each run must succeed and print `RESP<n>: ok`.
fn run_in_both_protocols(program: &Path, script: &Path, what: &str) {
    let server = Server::start();
    for protocol in ["2", "3"] {
        let output = Command::new(program)
            .arg(script)
            .arg(server.port.to_string())
            .arg(protocol)
            .output()
            .expect(what);
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.success(),
            "RESP{protocol}:\n{stdout}\n{stderr}"
        );
        assert!(stdout.contains(&format!("RESP{protocol}: ok")), "{stdout}");
    }
}

#[test]
fn redis_py_drives_the_dialect_in_resp2_and_resp3() {
    let python = python();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/redis_py_bf.py");
    run_in_both_protocols(&python, &script, "run the redis-py script");
}

/// redis-py's `r.cf()`, in RESP2 and RESP3, in its legacy and unified response shapes: redis-py
/// 8.1.0's own cuckoo tests ported (sync and asyncio, and the `cf()` lines of its ACL tests), then
/// every CFCommands method with its options and exact replies, a grown filter copied with
/// scandump/loadchunk, and this module's deliberate differences from RedisBloom
/// (tests/clients/redis_py_cf.py).
#[test]
fn redis_py_drives_the_cuckoo_filter_in_resp2_and_resp3() {
    let python = python();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/redis_py_cf.py");
    run_in_both_protocols(&python, &script, "run the redis-py cuckoo script");
}

/// The directory `make test` installs node-redis into, exactly as tests/clients/package-lock.json
/// locks it.
fn node_dir() -> std::path::PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/node");
    assert!(
        dir.join("node_modules/redis").exists(),
        "{} is missing node-redis: `make test` installs it (npm ci from tests/clients)",
        dir.display()
    );
    dir
}

#[test]
fn node_redis_drives_the_dialect_in_resp2_and_resp3() {
    let dir = node_dir();
    // Node resolves `import 'redis'` from the script's own directory: run a copy beside
    // node_modules.
    let script = dir.join("node_redis_bf.mjs");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/node_redis_bf.mjs"),
        &script,
    )
    .expect("copy the node-redis script");
    run_in_both_protocols(
        Path::new("node"),
        &script,
        "run node (make test installs Node.js when it can)",
    );
}

/// node-redis's `client.cf.*` (@redis/bloom), in RESP2 and RESP3: the scenarios of node-redis's own
/// cuckoo specs, then every command with its options and exact replies, a grown filter copied with
/// scanDump/loadChunk (Buffers), and this module's deliberate differences from RedisBloom
/// (tests/clients/node_redis_cf.mjs).
#[test]
fn node_redis_drives_the_cuckoo_filter_in_resp2_and_resp3() {
    let dir = node_dir();
    // Node resolves `import 'redis'` from the script's own directory: run a copy beside
    // node_modules.
    let script = dir.join("node_redis_cf.mjs");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/node_redis_cf.mjs"),
        &script,
    )
    .expect("copy the node-redis cuckoo script");
    run_in_both_protocols(
        Path::new("node"),
        &script,
        "run node (make test installs Node.js when it can)",
    );
}

/// Runs `test` on a connection of the redis crate (redis-rs) to a fresh server in RESP2, then
/// in RESP3 (`"resp2"`, `"resp3"`), each time on an empty keyspace.
fn with_redis_rs(test: impl Fn(&mut redis::Connection, &str)) {
    let server = Server::start();
    for protocol in ["resp2", "resp3"] {
        let client = redis::Client::open(format!(
            "redis://127.0.0.1:{}/?protocol={protocol}",
            server.port
        ))
        .unwrap();
        let mut con = client.get_connection().unwrap();
        let _: () = redis::cmd("FLUSHALL").query(&mut con).unwrap();
        test(&mut con, protocol);
    }
}

/// The text of an error reply, as redis-rs gives it.
fn error_text(err: redis::RedisError) -> String {
    err.detail().unwrap_or_default().to_string()
}

/// The options the redis-rs tests make `inserted` with (this client sends NOCREATE and ERROR
/// before CAPACITY).
fn insert_options() -> BloomFilterInsertOptions {
    BloomFilterInsertOptions::default()
        .capacity(500)
        .error_rate(0.001)
        .expansion(BloomFilterScalingOptions::ExpansionRate(3))
}

/// The filters the redis-rs tests read, made through the crate as the first tests make them:
/// `urls` (1,000 items at 1%) holding `https://example.com/`, `a` and `b`; `wide` (EXPANSION 4);
/// `inserted` (capacity 500 at 0.1%, EXPANSION 3) holding `p` and `q`.
fn urls_wide_and_inserted(con: &mut redis::Connection) {
    let _: () = con.bf_reserve("urls", 0.01, 1000).unwrap();
    let _: () = con
        .bf_reserve_options(
            "wide",
            0.001,
            100,
            BloomFilterScalingOptions::ExpansionRate(4),
        )
        .unwrap();
    let _: bool = con.bf_add("urls", "https://example.com/").unwrap();
    let _: Vec<bool> = con.bf_madd("urls", &["a", "b", "a"]).unwrap();
    let _: Vec<bool> = con
        .bf_insert_options("inserted", &["p", "q"], insert_options())
        .unwrap();
}

/// redis-rs with its `bloom` feature: the typed `bf_*` commands, in RESP2 and RESP3. Reserve in its
/// three forms, add and madd, and a full non-scaling filter.
#[test]
fn redis_rs_reserves_and_adds_in_resp2_and_resp3() {
    with_redis_rs(|con, protocol| {
        let _: () = con.bf_reserve("urls", 0.01, 1000).unwrap();
        let _: () = con
            .bf_reserve_options(
                "wide",
                0.001,
                100,
                BloomFilterScalingOptions::ExpansionRate(4),
            )
            .unwrap();
        let _: () = con
            .bf_reserve_options("fixed", 0.01, 2, BloomFilterScalingOptions::NonScaling)
            .unwrap();
        let again: Result<(), _> = con.bf_reserve("urls", 0.01, 1000);
        assert_eq!(error_text(again.unwrap_err()), "item exists", "{protocol}");

        assert!(con
            .bf_add::<_, _, bool>("urls", "https://example.com/")
            .unwrap());
        assert!(!con
            .bf_add::<_, _, bool>("urls", "https://example.com/")
            .unwrap());
        let added: Vec<bool> = con.bf_madd("urls", &["a", "b", "a"]).unwrap();
        assert_eq!(added, [true, true, false], "{protocol}");

        // a full non-scaling filter: the reply ends with an error element, which this client
        // raises as the command's error; the items before it were added
        let full: Result<Value, _> = redis::cmd("BF.MADD")
            .arg("fixed")
            .arg(&["x", "y", "z"])
            .query(con);
        assert_eq!(
            error_text(full.unwrap_err()),
            "non scaling filter is full",
            "{protocol}"
        );
        let found: Vec<bool> = con.bf_mexists("fixed", &["x", "y", "z"]).unwrap();
        assert_eq!(found, [true, true, false], "{protocol}");
    });
}

#[test]
fn redis_rs_inserts_with_options_in_resp2_and_resp3() {
    with_redis_rs(|con, protocol| {
        let inserted: Vec<bool> = con
            .bf_insert_options("inserted", &["p", "q"], insert_options())
            .unwrap();
        assert_eq!(inserted, [true, true], "{protocol}");
        let inserted: Vec<bool> = con.bf_insert("plain", &["p"]).unwrap();
        assert_eq!(inserted, [true], "{protocol}");
        let nowhere: Result<Vec<bool>, _> = con.bf_insert_options(
            "nowhere",
            &["p"],
            BloomFilterInsertOptions::default().nocreate(),
        );
        assert_eq!(error_text(nowhere.unwrap_err()), "not found", "{protocol}");
    });
}

#[test]
fn redis_rs_checks_items_in_resp2_and_resp3() {
    with_redis_rs(|con, protocol| {
        urls_wide_and_inserted(con);
        assert!(con
            .bf_exists::<_, _, bool>("urls", "https://example.com/")
            .unwrap());
        assert!(!con
            .bf_exists::<_, _, bool>("urls", "https://example.org/")
            .unwrap());
        assert!(!con.bf_exists::<_, _, bool>("missing", "a").unwrap());
        let found: Vec<bool> = con.bf_mexists("urls", &["a", "zzz", "b"]).unwrap();
        assert_eq!(found, [true, false, true], "{protocol}");
    });
}

#[test]
fn redis_rs_reads_info_whole_and_by_field_and_card_in_resp2_and_resp3() {
    with_redis_rs(|con, protocol| {
        urls_wide_and_inserted(con);
        let info: HashMap<String, BloomFilterInfoTypeResponse> = con.bf_info("urls").unwrap();
        assert_eq!(info.len(), 5, "{protocol}: {info:?}");
        assert_eq!(info["Capacity"], 1000.0);
        assert_eq!(info["Number of filters"], 1.0);
        assert_eq!(info["Number of items inserted"], 3.0);
        assert_eq!(info["Expansion rate"], 2.0);
        assert!(*info["Size"] > 1000.0 * 11.0 / 8.0);
        let capacity: BloomFilterInfoTypeResponse = con
            .bf_info_type("inserted", BloomFilterInfoType::Capacity)
            .unwrap();
        assert_eq!(capacity, 500.0);
        let expansion: BloomFilterInfoTypeResponse = con
            .bf_info_type("wide", BloomFilterInfoType::Expansion)
            .unwrap();
        assert_eq!(expansion, 4.0);
        assert_eq!(con.bf_card::<_, usize>("urls").unwrap(), 3);
        assert_eq!(con.bf_card::<_, usize>("missing").unwrap(), 0);
    });
}

#[test]
fn redis_rs_copies_a_filter_with_its_dump_iterator_in_resp2_and_resp3() {
    with_redis_rs(|con, protocol| {
        urls_wide_and_inserted(con);
        let info: HashMap<String, BloomFilterInfoTypeResponse> = con.bf_info("urls").unwrap();
        // scandump / loadchunk through the crate's own iterator
        let chunks: Vec<_> = BloomFilterDumpIterator::new(con, "urls")
            .map(|chunk| chunk.unwrap())
            .collect();
        assert_eq!(chunks[0].iterator, 1, "{protocol}");
        assert!(chunks[0].data.starts_with(b"redis-bf"));
        for chunk in chunks {
            let _: () = con.bf_loadchunk("urls-copy", chunk).unwrap();
        }
        let copied: HashMap<String, BloomFilterInfoTypeResponse> =
            con.bf_info("urls-copy").unwrap();
        assert_eq!(copied, info, "{protocol}");
        let digest = |con: &mut redis::Connection, key: &str| -> Vec<String> {
            redis::cmd("DEBUG")
                .arg("DIGEST-VALUE")
                .arg(key)
                .query(con)
                .unwrap()
        };
        assert_eq!(digest(con, "urls-copy"), digest(con, "urls"));
    });
}

/// Runs a cluster client script against a fresh cluster of three primaries (`program script port
/// port port`); it must succeed and print `cluster: ok`.
fn run_on_a_cluster(program: &Path, script: &Path, what: &str) {
    let servers = common::three_primaries();
    let output = Command::new(program)
        .arg(script)
        .args(servers.iter().map(|server| server.port.to_string()))
        .output()
        .expect(what);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.ends_with("cluster: ok\n"), "{stdout}");
}

/// redis-py's `RedisCluster(...).bf()` and `.cf()` on three primaries, in RESP2 and RESP3: 12 Bloom
/// filters and 8 cuckoo filters on each primary (picked by hash slot) get every BF and CF command,
/// one of each is copied with SCANDUMP/LOADCHUNK to a slot of another primary, and each primary's
/// commandstats show exactly its share of the commands, none rejected and no MOVED or ASK answered
/// (tests/clients/redis_py_cluster.py).
#[test]
fn redis_py_cluster_client_routes_every_command_by_its_key() {
    let python = python();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/redis_py_cluster.py");
    run_on_a_cluster(&python, &script, "run the redis-py cluster script");
}

/// node-redis's `createCluster` (`cluster.bf.*`, `cluster.cf.*`) on three primaries, in RESP2 and
/// RESP3: the same checks as redis-py's, the SCANDUMP chunks read as Buffers
/// (tests/clients/node_redis_cluster.mjs).
#[test]
fn node_redis_cluster_client_routes_every_command_by_its_key() {
    let dir = node_dir();
    // Node resolves `import 'redis'` from the script's own directory: run a copy beside
    // node_modules.
    let script = dir.join("node_redis_cluster.mjs");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/node_redis_cluster.mjs"),
        &script,
    )
    .expect("copy the node-redis cluster script");
    run_on_a_cluster(
        Path::new("node"),
        &script,
        "run node (make test installs Node.js when it can)",
    );
}
