//! What a filter stores, dumps, digests and reports as its size does not depend on the server's
//! allocator: the same filter built on the server under test (in the matrix: Valkey 9.1 with libc
//! malloc among them) and on Debian's Redis 7.0 (jemalloc) gives the same SCANDUMP chunks, the
//! same DEBUG DIGEST-VALUE and the same `Size`, before and after DEBUG RELOAD and a restart, and
//! `Size` stays within the bit array plus the bookkeeping SPEC.md allows.

mod common;

use common::{bf_size, digest, scandump, Conn, Frame, Options, Server};
use std::path::PathBuf;

/// Debian's redis-server 7.0 (jemalloc), whatever `$REDIS_SERVER` says.
fn reference() -> Server {
    Server::with(Options {
        server: Some(PathBuf::from("redis-server")),
        ..Options::default()
    })
}

/// Builds the test's filters: a 2 MB one with 20,000 items, and a scaling one grown to five
/// sub-filters.
fn build(conn: &mut Conn) {
    let ok = Frame::ok();
    assert_eq!(conn.call(&["BF.RESERVE", "big", "0.01", "1700000"]), ok);
    assert_eq!(
        conn.call(&["BF.RESERVE", "grown", "0.001", "100", "EXPANSION", "2"]),
        ok
    );
    for batch in 0..20 {
        for key in ["big", "grown"] {
            let mut command = vec!["BF.MADD".to_string(), key.to_string()];
            command.extend((0..1000).map(|i| format!("item:{batch}:{i}")));
            if key == "grown" && batch > 2 {
                continue;
            }
            assert_eq!(conn.call(&command).items().len(), 1000);
        }
    }
}

/// Everything about a key that must not depend on the allocator: its SCANDUMP chunks, digest,
/// Size and BF.DEBUG lines.
type Fingerprint = (Vec<(i64, Vec<u8>)>, Frame, i64, Vec<String>);

fn fingerprint(conn: &mut Conn, key: &str) -> Fingerprint {
    (
        scandump(conn, key),
        digest(conn, key),
        bf_size(conn, key),
        common::debug_lines(conn, key),
    )
}

#[test]
fn filters_dump_digest_and_measure_the_same_on_any_allocator() {
    let mut server = Server::start();
    let mut conn = server.conn();
    build(&mut conn);
    let keys = ["big", "grown"];
    let first: Vec<_> = keys.iter().map(|key| fingerprint(&mut conn, key)).collect();

    // The bit array of "big", one sub-filter (BF.DEBUG's `bits:`).
    let lines = common::debug_lines(&mut conn, "big");
    let bits: u64 = lines[1]
        .split(' ')
        .find_map(|field| field.strip_prefix("bits:"))
        .unwrap()
        .parse()
        .unwrap();
    let size = bf_size(&mut conn, "big") as u64;
    assert!(
        size >= bits / 8 && size <= bits / 8 + 4096,
        "Size {size} for {bits} bits"
    );
    let usage = conn.call(&["MEMORY", "USAGE", "big"]).int() as u64;
    assert!(
        usage >= size && usage <= size + 256,
        "MEMORY USAGE {usage}, Size {size}"
    );

    // The same after DEBUG RELOAD and after a restart.
    assert_eq!(conn.call(&["DEBUG", "RELOAD"]), Frame::ok());
    for (key, expected) in keys.iter().zip(&first) {
        assert_eq!(
            &fingerprint(&mut conn, key),
            expected,
            "{key} after DEBUG RELOAD"
        );
    }
    server.restart();
    let mut conn = server.conn();
    for (key, expected) in keys.iter().zip(&first) {
        assert_eq!(
            &fingerprint(&mut conn, key),
            expected,
            "{key} after a restart"
        );
    }

    // And the same as on Redis 7.0 with jemalloc.
    let reference = reference();
    let mut other = reference.conn();
    build(&mut other);
    for (key, expected) in keys.iter().zip(&first) {
        assert_eq!(
            &fingerprint(&mut other, key),
            expected,
            "{key} on Redis 7.0"
        );
    }
}
