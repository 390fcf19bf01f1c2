//! Replicas and AOF replays end bit-identical to the primary, even when their own module
//! configuration differs: creation is propagated with explicit parameters, nothing that changed
//! nothing is propagated, and replayed commands are not held to the local size ceiling.

mod common;

use common::{Conn, Frame, Options, Server};

/// A configuration unlike the default in every setting, with a ceiling no workload here fits.
fn odd_configuration() -> Options {
    Options::default().module_args(&[
        "error-rate",
        "0.2",
        "initial-size",
        "3",
        "expansion-factor",
        "7",
        "max-filter-bytes",
        "2048",
        "layout",
        "blocked",
    ])
}

const KEYS: [&str; 7] = [
    "reserved", "auto", "fixed", "inserted", "grown", "madded", "loaded",
];

/// A mixed workload: RESERVE without options, ADD that creates, MADD that fills a NONSCALING
/// filter (and is answered with an error), INSERT with options, NOCREATE, growth past 2048 bytes.
fn workload(conn: &mut Conn) {
    assert_eq!(
        conn.call(&["BF.RESERVE", "reserved", "0.01", "1000"]),
        Frame::ok()
    );
    conn.call(&["BF.ADD", "reserved", "r1"]);
    assert_eq!(conn.call(&["BF.ADD", "auto", "a1"]), Frame::Int(1));
    conn.call(&["BF.ADD", "auto", "a1"]);
    assert_eq!(
        conn.call(&["BF.RESERVE", "fixed", "0.001", "3", "NONSCALING"]),
        Frame::ok()
    );
    let reply = conn.call(&["BF.MADD", "fixed", "f1", "f2", "f1", "f3", "f4", "f5"]);
    assert!(reply.items()[4].is_error(), "{reply:?}");
    let reply = conn.call(&[
        "BF.INSERT",
        "inserted",
        "ERROR",
        "0.05",
        "CAPACITY",
        "50",
        "ITEMS",
        "i1",
        "i2",
    ]);
    assert_eq!(reply, Frame::Array(vec![Frame::Int(1), Frame::Int(1)]));
    conn.call(&["BF.INSERT", "inserted", "NOCREATE", "ITEMS", "i3"]);
    for i in 0..2000 {
        conn.send(&["BF.ADD", "grown", &format!("g{i}")]);
    }
    for _ in 0..2000 {
        assert!(!conn.read().is_error());
    }
    let items: Vec<String> = (0..300).map(|i| format!("m{i}")).collect();
    let mut madd = vec!["BF.MADD".to_string(), "madded".to_string()];
    madd.extend(items);
    conn.call(&madd);
    // A copy of "grown" through SCANDUMP / LOADCHUNK.
    let mut iterator = 0;
    loop {
        let reply = conn
            .call(&["BF.SCANDUMP", "grown", &iterator.to_string()])
            .items();
        iterator = reply[0].int();
        if iterator == 0 {
            break;
        }
        let next = iterator.to_string();
        let load = conn.call(&[
            &b"BF.LOADCHUNK"[..],
            b"loaded",
            next.as_bytes(),
            &reply[1].bytes(),
        ]);
        assert_eq!(load, Frame::ok());
    }
}

fn digests(conn: &mut Conn) -> Vec<(Frame, Vec<Frame>)> {
    KEYS.iter()
        .map(|key| {
            let digest = conn.call(&["DEBUG", "DIGEST-VALUE", key]);
            let debug = conn.call(&["BF.DEBUG", key]).items();
            (digest, debug)
        })
        .collect()
}

#[test]
fn a_replica_with_other_settings_ends_bit_identical() {
    let primary = Server::start();
    let replica = Server::with(odd_configuration());
    replica.replicate(&primary);
    workload(&mut primary.conn());
    replica.catch_up(&primary);
    let expected = digests(&mut primary.conn());
    assert_eq!(digests(&mut replica.conn()), expected);
    // The auto-created filter has the primary's defaults, not the replica's.
    let debug = replica.conn().call(&["BF.DEBUG", "auto"]).items();
    assert_eq!(
        debug[1],
        Frame::bulk("bytes:144 bits:1152 hashes:8 hashwidth:64 capacity:100 size:1 ratio:0.005")
    );
    // A full sync (a new replica) carries the same bits.
    let late = Server::with(odd_configuration());
    late.replicate(&primary);
    assert_eq!(digests(&mut late.conn()), expected);
}

#[test]
fn writes_that_change_nothing_are_not_propagated() {
    let primary = Server::start();
    let mut conn = primary.conn();
    conn.call(&["BF.MADD", "k", "a", "b"]);
    let offset = |server: &Server| server.info_field("replication", "master_repl_offset");
    let replica = Server::start();
    replica.replicate(&primary);
    replica.catch_up(&primary);
    let before = offset(&primary);
    assert_eq!(conn.call(&["BF.ADD", "k", "a"]), Frame::Int(0));
    assert_eq!(
        conn.call(&["BF.MADD", "k", "a", "b"]),
        Frame::Array(vec![Frame::Int(0), Frame::Int(0)])
    );
    assert_eq!(
        conn.call(&["BF.INSERT", "k", "ITEMS", "b"]),
        Frame::Array(vec![Frame::Int(0)])
    );
    assert_eq!(
        conn.call(&["BF.RESERVE", "k", "0.1", "10"]),
        Frame::error("ERR item exists")
    );
    assert_eq!(offset(&primary), before);
    assert_eq!(conn.call(&["BF.ADD", "k", "c"]), Frame::Int(1));
    assert_ne!(offset(&primary), before);
}

#[test]
fn an_aof_replayed_by_a_server_with_other_settings_rebuilds_the_same_bits() {
    let aof = Options::default()
        .config("appendonly", "yes")
        .config("appendfsync", "always");
    let mut server = Server::with(aof.clone());
    workload(&mut server.conn());
    let expected = digests(&mut server.conn());
    let mut odd = odd_configuration();
    odd.config = aof.config;
    server.restart_with(odd);
    assert_eq!(
        server
            .conn()
            .call(&["CONFIG", "GET", "bf.initial-size"])
            .items()[1],
        Frame::bulk("3")
    );
    assert_eq!(digests(&mut server.conn()), expected);
}
