//! Windowed filters from a server whose clock ran ahead (issue 22, item 1: "times in the future
//! beyond the slack"), with real servers an hour apart (tests/clock/ahead.c moves a server's clock). What a loader does with a
//! filter that starts more than a window after its clock depends on whose data it is:
//! - a client's (RESTORE, BF.LOADCHUNK) is refused, and nothing is left at the key;
//! - the server's own (its RDB file, its AOF, after its clock stepped back) is brought back to the
//!   clock: every item held, expiring a window from now at most, with a warning in the log;
//! - a primary's (a full sync, the replication stream) is kept as the primary sent it: the
//!   primary's clock is the filter's, and its writes keep the replica in step.

mod common;

use common::{digest, generations, loadchunk, now_ms, scandump, Frame, Options, Server};

/// A 60-second window: every item is held between 60 and 75 seconds.
const WINDOW_MS: u64 = 60_000;
const SLACK_MS: u64 = 15_000;

fn an_hour_ahead() -> Options {
    Options::default().clock_ahead(3_600_000)
}

/// The server's clock, by `TIME`, in milliseconds.
fn server_ms(server: &Server) -> u64 {
    let time = server.conn().call(&["TIME"]).items();
    let seconds: u64 = time[0].text().parse().unwrap();
    let micros: u64 = time[1].text().parse().unwrap();
    seconds * 1000 + micros / 1000
}

/// A server an hour ahead of this machine's clock, holding `feed`: a windowed filter of two items.
fn ahead_with_a_feed(options: Options) -> Server {
    let server = Server::with(options);
    let ahead = server_ms(&server);
    assert!(
        ahead > now_ms() + 3_500_000,
        "the preloaded clock did not move the server's clock: {ahead}"
    );
    let mut conn = server.conn();
    assert_eq!(
        conn.call(&["BF.RESERVE", "feed", "0.01", "1000", "WINDOW", "60"]),
        Frame::ok()
    );
    assert_eq!(
        conn.call(&["BF.MADD", "feed", "a", "b"]),
        Frame::Array(vec![Frame::Int(1), Frame::Int(1)])
    );
    server
}

/// Every generation of `key` expires within a window and its slack of this machine's clock.
fn expires_on_this_clock(conn: &mut common::Conn, key: &str) {
    let now = now_ms();
    let gens = generations(conn, key);
    assert!(!gens.is_empty(), "{key}: no generation");
    for (_, until, _) in gens {
        assert!(
            until > now && until <= now + WINDOW_MS + SLACK_MS + 1_000,
            "{key}: a generation until {until}, now {now}"
        );
    }
}

#[test]
fn a_clients_filter_from_an_hour_ahead_is_refused_by_restore_and_loadchunk() {
    let ahead = ahead_with_a_feed(an_hour_ahead());
    let mut source = ahead.conn();
    let payload = source.call(&["DUMP", "feed"]).bytes();
    let chunks = scandump(&mut source, "feed");
    let server = Server::start();
    let mut conn = server.conn();
    assert_eq!(
        conn.call(&[b"RESTORE".as_slice(), b"feed", b"0", &payload]),
        Frame::error("ERR Bad data format")
    );
    assert!(server.log().contains(
        "cannot load a filter: a generation starts more than a window after this server's clock"
    ));
    assert_eq!(
        loadchunk(&mut conn, "feed", chunks[0].0, &chunks[0].1),
        Frame::error(
            "ERR invalid chunk: a generation starts more than a window after this server's clock"
        )
    );
    assert_eq!(conn.call(&["EXISTS", "feed"]), Frame::Int(0));
    // The same payload restores on a server whose clock agrees.
    let twin = Server::with(an_hour_ahead());
    let mut twin = twin.conn();
    assert_eq!(
        twin.call(&[b"RESTORE".as_slice(), b"feed", b"0", &payload]),
        Frame::ok()
    );
    assert_eq!(
        twin.call(&["BF.MEXISTS", "feed", "a", "b", "c"]),
        Frame::Array(vec![Frame::Int(1), Frame::Int(1), Frame::Int(0)])
    );
}

#[test]
fn the_servers_own_rdb_from_an_hour_ahead_is_brought_back_to_its_clock() {
    let mut server = ahead_with_a_feed(an_hour_ahead());
    assert_eq!(server.conn().call(&["SAVE"]), Frame::ok());
    // The clock steps back an hour; the server starts from its file.
    server.restart_with(Options::default());
    let mut conn = server.conn();
    assert_eq!(
        conn.call(&["BF.MEXISTS", "feed", "a", "b", "c"]),
        Frame::Array(vec![Frame::Int(1), Frame::Int(1), Frame::Int(0)])
    );
    expires_on_this_clock(&mut conn, "feed");
    let log = server.log();
    assert!(
        log.contains("a windowed filter starts more than a window after this server's clock"),
        "{log}"
    );
    assert!(
        log.contains("seconds back, so that its items expire on this clock"),
        "{log}"
    );
    // It goes on as a windowed filter on this clock.
    assert_eq!(conn.call(&["BF.ADD", "feed", "c"]), Frame::Int(1));
    expires_on_this_clock(&mut conn, "feed");
}

#[test]
fn the_servers_own_aof_from_an_hour_ahead_is_applied_on_its_clock() {
    let aof = |options: Options| {
        options
            .config("appendonly", "yes")
            .config("aof-use-rdb-preamble", "no")
            .config("appendfsync", "always")
    };
    let mut server = ahead_with_a_feed(aof(an_hour_ahead()));
    // The rewrite holds the filter as chunks; the write after it, a BF.INSERT ... AT.
    assert!(!server.conn().call(&["BGREWRITEAOF"]).is_error());
    server.wait_for_aof_rewrite();
    assert_eq!(server.conn().call(&["BF.ADD", "feed", "c"]), Frame::Int(1));
    server.restart_with(aof(Options::default()));
    let mut conn = server.conn();
    assert_eq!(
        conn.call(&["BF.MEXISTS", "feed", "a", "b", "c", "d"]),
        Frame::Array(vec![
            Frame::Int(1),
            Frame::Int(1),
            Frame::Int(1),
            Frame::Int(0)
        ])
    );
    expires_on_this_clock(&mut conn, "feed");
    let log = server.log();
    for warning in [
        "seconds back, so that its items expire on this clock",
        "the AOF holds windowed writes from more than a window after this server's clock",
    ] {
        assert!(log.contains(warning), "{warning}: {log}");
    }
    assert!(!log.contains("internal error"), "{log}");
}

#[test]
fn a_primarys_filter_from_an_hour_ahead_is_kept_by_its_replica() {
    let primary = ahead_with_a_feed(an_hour_ahead().config("enable-debug-command", "yes"));
    let replica = Server::with(Options::default().config("enable-debug-command", "yes"));
    replica.replicate(&primary);
    let mut source = primary.conn();
    let mut copy = replica.conn();
    assert_eq!(
        copy.call(&["BF.MEXISTS", "feed", "a", "b", "c"]),
        Frame::Array(vec![Frame::Int(1), Frame::Int(1), Frame::Int(0)])
    );
    assert_eq!(digest(&mut copy, "feed"), digest(&mut source, "feed"));
    let log = replica.log();
    assert!(log.contains("kept it as its primary sent it"), "{log}");
    // The primary's writes go on applying at its time.
    assert_eq!(source.call(&["BF.ADD", "feed", "c"]), Frame::Int(1));
    replica.catch_up(&primary);
    assert_eq!(copy.call(&["BF.EXISTS", "feed", "c"]), Frame::Int(1));
    assert_eq!(digest(&mut copy, "feed"), digest(&mut source, "feed"));
    assert_eq!(
        generations(&mut copy, "feed"),
        generations(&mut source, "feed")
    );
}
