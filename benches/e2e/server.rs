//! The servers the sections run on, started by the test harness (`tests/common`), and the filters
//! they fill.

use crate::common::{self, Conn, Frame, Options, Server};
use std::path::Path;

/// How the benchmark starts a server: pinned to CPU 0 (`redis-benchmark` runs on CPU 1),
/// logging at Redis's default level rather than the tests' `verbose`.
pub fn options() -> Options {
    Options {
        prefix: common::pin_to(0),
        ..Options::default()
    }
    .config("rdbcompression", "yes")
    .config("loglevel", "notice")
}

/// A server with this module's release build, allowed filters of up to 2 GiB.
pub fn start() -> Server {
    Server::with(options().module_args(&["max-filter-bytes", "2gb"]))
}

/// A server with another module (RedisBloom) in place of this one, started the same way.
pub fn start_with_module(module: &Path) -> Server {
    Server::with(Options {
        module: Some(module.to_path_buf()),
        ..options()
    })
}

/// Adds `count` items to `key` with pipelined BF.MADD of 1,000 items each: `item:000000000000`,
/// `item:000000000001`... as redis-benchmark spells `item:__rand_int__` (12 digits, zero-padded),
/// so that a benchmark of `item:__rand_int__` with `-r` up to `count` asks for held items.
pub fn fill(conn: &mut Conn, key: &str, count: u64) {
    fill_named(conn, key, count, |i| format!("item:{i:012}"));
}

/// [`fill`] with the items named by `name`.
pub fn fill_named(conn: &mut Conn, key: &str, count: u64, name: impl Fn(u64) -> String) {
    let batch = 1000;
    let mut pending = 0;
    let mut start = 0;
    while start < count {
        let end = (start + batch).min(count);
        let mut args = vec!["BF.MADD".to_string(), key.to_string()];
        args.extend((start..end).map(&name));
        conn.send(&args);
        pending += 1;
        if pending == 64 {
            for _ in 0..pending {
                assert!(!conn.read().is_error());
            }
            pending = 0;
        }
        start = end;
    }
    for _ in 0..pending {
        assert!(!conn.read().is_error());
    }
}

/// A small filter: 100,000 items at 1% (134 KB, in the CPU's caches), never past its capacity.
/// Every section that uses it reserves it, so that any one of them can run alone (`BENCH_ONLY`).
pub fn reserve_small(conn: &mut Conn) {
    let reply = conn.call(&["BF.RESERVE", "small", "0.01", "100000"]);
    assert!(reply == Frame::ok() || reply.is_error(), "{reply:?}");
    let info = conn.call(&["BF.INFO", "small", "CAPACITY"]);
    assert_eq!(info.items()[0].int(), 100_000, "{info:?}");
}

/// `BF.RESERVE key 0.01 capacity`, which must succeed.
pub fn reserve(conn: &mut Conn, key: &str, capacity: u64) {
    assert_eq!(
        conn.call(&["BF.RESERVE", key, "0.01", &capacity.to_string()]),
        Frame::ok()
    );
}
