//! A server killed in the middle of a write storm keeps what it acknowledged (as the AOF fsync
//! policy promises), and a truncated RDB or AOF is reported, never loaded as a corrupt filter.

mod common;

use common::{Conn, Frame, Options, Server};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a write storm got acknowledged before the server was killed: each item with the moment
/// its acknowledgement came back, and the moment the last acknowledged command was sent.
struct Acknowledged {
    items: Vec<(String, Instant)>,
    last_sent: Option<Instant>,
}

/// Adds items one command at a time (single adds and small batches) until the server stops
/// answering.
fn write_until_killed(conn: &mut Conn, stop: &AtomicBool) -> Acknowledged {
    let mut acked = Acknowledged {
        items: Vec::new(),
        last_sent: None,
    };
    let mut next = 0u64;
    while !stop.load(Ordering::SeqCst) {
        let items: Vec<String> = (next..next + 1 + next % 5)
            .map(|i| format!("item:{i}"))
            .collect();
        next += items.len() as u64;
        let mut args = vec![if items.len() == 1 {
            "BF.ADD"
        } else {
            "BF.MADD"
        }
        .to_string()];
        args.push("storm".to_string());
        args.extend(items.iter().cloned());
        let sent = Instant::now();
        conn.send(&args);
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| conn.read())) {
            Ok(reply) if !reply.is_error() => {
                let now = Instant::now();
                acked
                    .items
                    .extend(items.into_iter().map(|item| (item, now)));
                acked.last_sent = Some(sent);
            }
            _ => break,
        }
    }
    acked
}

/// Kills the server with SIGKILL after `after`, while `write_until_killed` runs.
fn kill_during_writes(server: &Server, after: Duration) -> Acknowledged {
    let stop = Arc::new(AtomicBool::new(false));
    let pid = server.pid();
    let killer = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            std::thread::sleep(after);
            Command::new("kill")
                .args(["-9", &pid.to_string()])
                .status()
                .unwrap();
            std::thread::sleep(Duration::from_millis(200));
            stop.store(true, Ordering::SeqCst);
        })
    };
    let mut conn = server.conn();
    let acked = write_until_killed(&mut conn, &stop);
    killer.join().unwrap();
    acked
}

/// The acknowledged items the restarted server does not have.
fn missing(conn: &mut Conn, items: &[&String]) -> Vec<String> {
    let mut lost = Vec::new();
    for batch in items.chunks(500) {
        let mut args = vec!["BF.MEXISTS".to_string(), "storm".to_string()];
        args.extend(batch.iter().map(|s| s.to_string()));
        let found = conn.call(&args).items();
        lost.extend(
            batch
                .iter()
                .zip(found)
                .filter(|(_, f)| f != &Frame::Int(1))
                .map(|(s, _)| s.to_string()),
        );
    }
    lost
}

#[test]
fn with_fsync_always_every_acknowledged_item_survives_a_kill() {
    let options = Options::default()
        .config("appendonly", "yes")
        .config("appendfsync", "always");
    let mut server = Server::with(options);
    assert_eq!(
        server
            .conn()
            .call(&["BF.RESERVE", "storm", "0.001", "1000", "EXPANSION", "2"]),
        Frame::ok()
    );
    let acked = kill_during_writes(&server, Duration::from_millis(800));
    assert!(
        acked.items.len() > 100,
        "the storm wrote too little: {}",
        acked.items.len()
    );
    server.relaunch().unwrap();
    let items: Vec<&String> = acked.items.iter().map(|(item, _)| item).collect();
    assert_eq!(missing(&mut server.conn(), &items), Vec::<String>::new());
}

#[test]
fn with_fsync_everysec_what_was_acknowledged_two_seconds_before_a_kill_survives() {
    let options = Options::default()
        .config("appendonly", "yes")
        .config("appendfsync", "everysec");
    let mut server = Server::with(options);
    assert_eq!(
        server
            .conn()
            .call(&["BF.RESERVE", "storm", "0.001", "1000"]),
        Frame::ok()
    );
    let acked = kill_during_writes(&server, Duration::from_millis(3500));
    // The server writes what it acknowledged to the AOF file before its next replies, unless a
    // background fsync is still running: then it holds the writes back for up to two seconds of
    // its own clock (`unixtime`: whole seconds, moved on ten times a second or more). A reply to
    // a command sent longer than that after an acknowledgement came back shows the item written,
    // and a kill cannot take it back: judged by the replies, not by when the kill came.
    let last_sent = acked.last_sent.expect("nothing acknowledged");
    let old: Vec<&String> = acked
        .items
        .iter()
        .filter(|(_, at)| last_sent.duration_since(*at) >= Duration::from_millis(2200))
        .map(|(item, _)| item)
        .collect();
    assert!(
        old.len() > 100,
        "the storm wrote too little before the last two seconds"
    );
    server.relaunch().unwrap();
    assert_eq!(missing(&mut server.conn(), &old), Vec::<String>::new());
}

#[test]
fn a_truncated_rdb_is_refused_with_a_reason() {
    let mut server = Server::start();
    let mut conn = server.conn();
    assert_eq!(
        conn.call(&["BF.RESERVE", "f", "0.01", "100000"]),
        Frame::ok()
    );
    conn.call(&["BF.MADD", "f", "a", "b", "c"]);
    assert_eq!(conn.call(&["SAVE"]), Frame::ok());
    drop(conn);
    server.kill();
    let rdb = server.dir.join("dump.rdb");
    let bytes = std::fs::read(&rdb).unwrap();
    // Cut in the middle of the filter's bit array.
    std::fs::write(&rdb, &bytes[..bytes.len() / 2]).unwrap();
    let log = server
        .relaunch()
        .expect_err("a truncated RDB must not load");
    assert!(
        log.contains("<bf> cannot load a filter: the data ends early"),
        "{log}"
    );
}

#[test]
fn a_truncated_aof_loads_only_whole_commands() {
    let options = Options::default()
        .config("appendonly", "yes")
        .config("appendfsync", "always");
    let mut server = Server::with(options);
    let mut conn = server.conn();
    assert_eq!(conn.call(&["BF.RESERVE", "f", "0.01", "1000"]), Frame::ok());
    assert_eq!(
        conn.call(&["BF.MADD", "f", "a", "b"]),
        Frame::Array(vec![Frame::Int(1), Frame::Int(1)])
    );
    assert_eq!(
        conn.call(&["BF.MADD", "f", "c", "d"]),
        Frame::Array(vec![Frame::Int(1), Frame::Int(1)])
    );
    let before_last = conn.call(&["DEBUG", "DIGEST-VALUE", "f"]);
    assert_eq!(conn.call(&["BF.ADD", "f", "last-one"]), Frame::Int(1));
    drop(conn);
    server.kill();
    // Cut the last command (BF.ADD f last-one) short.
    let dir = server.dir.join("appendonlydir");
    let incr = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".incr.aof"))
        .unwrap();
    let bytes = std::fs::read(&incr).unwrap();
    std::fs::write(&incr, &bytes[..bytes.len() - 5]).unwrap();
    server.relaunch().unwrap();
    let mut conn = server.conn();
    assert_eq!(conn.call(&["DEBUG", "DIGEST-VALUE", "f"]), before_last);
    assert_eq!(conn.call(&["BF.CARD", "f"]), Frame::Int(4));
    let log = server.log();
    assert!(
        log.contains("loaded anyway because aof-load-truncated is enabled"),
        "{log}"
    );
}
