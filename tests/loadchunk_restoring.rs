//! No chunk can overwrite a filter in use. `BF.LOADCHUNK`'s header chunk creates a filter in a
//! restoring state; only that filter takes data chunks, in order, each once; until the last one
//! arrives it refuses adds and lookups; `DEL` abandons it. The state survives `DEBUG RELOAD`,
//! replication and an AOF rewrite.

mod common;

use common::chunks::{not_restoring, offset, out_of_order};
use common::{acl_user, digest, loadchunk, scandump, Conn, Frame, Options, Server};

/// What a filter BF.LOADCHUNK is rebuilding answers, `loaded` of `total` bytes in.
fn restoring(loaded: u64, total: u64) -> Frame {
    common::chunks::being_restored("BF.LOADCHUNK", loaded, total)
}

/// A filter of four sub-filters (a header and four data chunks) holding `item:0`... `item:299`.
fn source(conn: &mut Conn, key: &str) -> Vec<(i64, Vec<u8>)> {
    assert_eq!(conn.call(&["BF.RESERVE", key, "0.01", "20"]), Frame::ok());
    let mut madd = vec!["BF.MADD".to_string(), key.to_string()];
    madd.extend((0..300).map(|i| format!("item:{i}")));
    conn.call(&madd);
    assert_eq!(conn.call(&["BF.INFO", key, "FILTERS"]).items()[0].int(), 4);
    let chunks = scandump(conn, key);
    assert_eq!(chunks.len(), 5);
    chunks
}

fn total(chunks: &[(i64, Vec<u8>)]) -> u64 {
    chunks[1..].iter().map(|(_, data)| data.len() as u64).sum()
}

/// Every add and lookup command on `key`, and the reply each gives.
fn adds_and_lookups_answer(conn: &mut Conn, key: &str, expected: &Frame) {
    for command in [
        &["BF.ADD", key, "item:1"][..],
        &["BF.ADD", key, "new"],
        &["BF.MADD", key, "new", "other"],
        &["BF.INSERT", key, "ITEMS", "new"],
        &["BF.INSERT", key, "NOCREATE", "ITEMS", "new"],
        &["BF.EXISTS", key, "item:1"],
        &["BF.MEXISTS", key, "item:1", "new"],
        &["BF.SCANDUMP", key, "0"],
        &["BF.SCANDUMP", key, "1"],
    ] {
        assert_eq!(&conn.call(command), expected, "{command:?}");
    }
}

#[test]
fn a_filter_being_restored_refuses_adds_and_lookups_until_its_last_chunk() {
    let server = Server::start();
    let mut conn = server.conn();
    let chunks = source(&mut conn, "src");
    let total = total(&chunks);
    assert_eq!(
        loadchunk(&mut conn, "dst", chunks[0].0, &chunks[0].1),
        Frame::ok()
    );
    for (index, chunk) in chunks[1..].iter().enumerate() {
        adds_and_lookups_answer(&mut conn, "dst", &restoring(offset(chunk), total));
        // What the header said is known: capacity, items, sub-filters.
        assert_eq!(
            conn.call(&["BF.CARD", "dst"]),
            conn.call(&["BF.CARD", "src"])
        );
        assert_eq!(
            conn.call(&["BF.INFO", "dst", "FILTERS"]).items()[0].int(),
            4
        );
        assert_eq!(
            loadchunk(&mut conn, "dst", chunk.0, &chunk.1),
            Frame::ok(),
            "{index}"
        );
    }
    // Complete: the same filter, answering.
    assert_eq!(digest(&mut conn, "dst"), digest(&mut conn, "src"));
    for i in 0..300 {
        assert_eq!(
            conn.call(&["BF.EXISTS", "dst", &format!("item:{i}")]),
            Frame::Int(1)
        );
    }
    assert_eq!(
        conn.call(&["BF.ADD", "dst", "new"]),
        conn.call(&["BF.ADD", "src", "new"])
    );
}

#[test]
fn data_chunks_come_in_order_each_once() {
    let server = Server::start();
    let mut conn = server.conn();
    let chunks = source(&mut conn, "src");
    assert_eq!(
        loadchunk(&mut conn, "dst", chunks[0].0, &chunks[0].1),
        Frame::ok()
    );
    let before = digest(&mut conn, "dst");
    // The second data chunk first: refused, nothing written.
    assert_eq!(
        loadchunk(&mut conn, "dst", chunks[2].0, &chunks[2].1),
        out_of_order(0)
    );
    assert_eq!(digest(&mut conn, "dst"), before);
    assert_eq!(
        loadchunk(&mut conn, "dst", chunks[1].0, &chunks[1].1),
        Frame::ok()
    );
    // The same chunk again.
    let next = offset(&chunks[2]);
    assert_eq!(
        loadchunk(&mut conn, "dst", chunks[1].0, &chunks[1].1),
        out_of_order(next)
    );
    // A second header for the key.
    assert_eq!(
        loadchunk(&mut conn, "dst", chunks[0].0, &chunks[0].1),
        Frame::error("ERR item exists")
    );
    for chunk in &chunks[2..] {
        assert_eq!(loadchunk(&mut conn, "dst", chunk.0, &chunk.1), Frame::ok());
    }
    assert_eq!(digest(&mut conn, "dst"), digest(&mut conn, "src"));
}

#[test]
fn no_data_chunk_goes_into_a_filter_in_use() {
    let server = Server::start();
    let mut conn = server.conn();
    let chunks = source(&mut conn, "src");
    // Another filter of the same shape, holding other items.
    assert_eq!(
        conn.call(&["BF.RESERVE", "other", "0.01", "20"]),
        Frame::ok()
    );
    let mut madd = vec!["BF.MADD".to_string(), "other".to_string()];
    madd.extend((0..300).map(|i| format!("other:{i}")));
    conn.call(&madd);
    let before = digest(&mut conn, "src");
    let zeros: Vec<(i64, Vec<u8>)> = chunks[1..]
        .iter()
        .map(|(iterator, data)| (*iterator, vec![0; data.len()]))
        .collect();
    let foreign = scandump(&mut conn, "other");
    for chunk in zeros.iter().chain(&chunks[1..]).chain(&foreign[1..]) {
        assert_eq!(
            loadchunk(&mut conn, "src", chunk.0, &chunk.1),
            not_restoring()
        );
    }
    assert_eq!(digest(&mut conn, "src"), before);
    for i in 0..300 {
        assert_eq!(
            conn.call(&["BF.EXISTS", "src", &format!("item:{i}")]),
            Frame::Int(1)
        );
    }
    // Nor into a finished restore.
    for chunk in &chunks {
        assert_eq!(loadchunk(&mut conn, "copy", chunk.0, &chunk.1), Frame::ok());
    }
    assert_eq!(
        loadchunk(&mut conn, "copy", zeros[0].0, &zeros[0].1),
        not_restoring()
    );
    assert_eq!(digest(&mut conn, "copy"), before);
    // A data chunk for a missing key.
    assert_eq!(
        loadchunk(&mut conn, "missing", chunks[1].0, &chunks[1].1),
        Frame::error("ERR not found")
    );
}

#[test]
fn del_abandons_a_restore() {
    let server = Server::start();
    let mut conn = server.conn();
    let chunks = source(&mut conn, "src");
    assert_eq!(
        loadchunk(&mut conn, "dst", chunks[0].0, &chunks[0].1),
        Frame::ok()
    );
    assert_eq!(
        loadchunk(&mut conn, "dst", chunks[1].0, &chunks[1].1),
        Frame::ok()
    );
    assert_eq!(conn.call(&["DEL", "dst"]), Frame::Int(1));
    assert_eq!(
        loadchunk(&mut conn, "dst", chunks[2].0, &chunks[2].1),
        Frame::error("ERR not found")
    );
    // A new restore starts from its header.
    for chunk in &chunks {
        assert_eq!(loadchunk(&mut conn, "dst", chunk.0, &chunk.1), Frame::ok());
    }
    assert_eq!(digest(&mut conn, "dst"), digest(&mut conn, "src"));
}

#[test]
fn a_loadchunk_only_user_can_restore_a_new_filter_but_not_touch_one_in_use() {
    let server = Server::start();
    let mut admin = server.conn();
    let chunks = source(&mut admin, "live");
    let before = digest(&mut admin, "live");
    let mut restorer = acl_user(&server, "restorer", &["+bf.loadchunk", "~*"]);
    // Every chunk of every shape it could try on the live filter is refused.
    for chunk in &chunks[1..] {
        for data in [chunk.1.clone(), vec![0; chunk.1.len()]] {
            assert_eq!(
                loadchunk(&mut restorer, "live", chunk.0, &data),
                not_restoring()
            );
        }
    }
    assert_eq!(
        loadchunk(&mut restorer, "live", chunks[0].0, &chunks[0].1),
        Frame::error("ERR item exists")
    );
    assert_eq!(digest(&mut admin, "live"), before);
    // It can restore a filter into a new key.
    for chunk in &chunks {
        assert_eq!(
            loadchunk(&mut restorer, "new", chunk.0, &chunk.1),
            Frame::ok()
        );
    }
    assert_eq!(digest(&mut admin, "new"), before);
}

#[test]
fn the_restoring_state_survives_debug_reload_and_a_restart() {
    let mut server = Server::start();
    let mut conn = server.conn();
    let chunks = source(&mut conn, "src");
    let total = total(&chunks);
    for chunk in &chunks[..3] {
        assert_eq!(loadchunk(&mut conn, "dst", chunk.0, &chunk.1), Frame::ok());
    }
    let half = digest(&mut conn, "dst");
    assert_eq!(conn.call(&["DEBUG", "RELOAD"]), Frame::ok());
    assert_eq!(digest(&mut conn, "dst"), half);
    adds_and_lookups_answer(&mut conn, "dst", &restoring(offset(&chunks[3]), total));
    assert_eq!(
        loadchunk(&mut conn, "dst", chunks[1].0, &chunks[1].1),
        out_of_order(offset(&chunks[3]))
    );
    assert_eq!(
        loadchunk(&mut conn, "dst", chunks[3].0, &chunks[3].1),
        Frame::ok()
    );
    server.restart();
    let mut conn = server.conn();
    adds_and_lookups_answer(&mut conn, "dst", &restoring(offset(&chunks[4]), total));
    assert_eq!(
        loadchunk(&mut conn, "dst", chunks[4].0, &chunks[4].1),
        Frame::ok()
    );
    assert_eq!(digest(&mut conn, "dst"), digest(&mut conn, "src"));
}

#[test]
fn a_replica_follows_the_restore_chunk_by_chunk() {
    let primary = Server::start();
    let replica = Server::start();
    replica.replicate(&primary);
    let mut conn = primary.conn();
    let chunks = source(&mut conn, "src");
    let total = total(&chunks);
    let mut on_replica = replica.conn();
    for (index, chunk) in chunks.iter().enumerate() {
        assert_eq!(loadchunk(&mut conn, "dst", chunk.0, &chunk.1), Frame::ok());
        replica.catch_up(&primary);
        assert_eq!(digest(&mut on_replica, "dst"), digest(&mut conn, "dst"));
        if let Some(next) = chunks.get(index + 1) {
            assert_eq!(
                on_replica.call(&["BF.EXISTS", "dst", "item:1"]),
                restoring(offset(next), total)
            );
        }
    }
    assert_eq!(
        on_replica.call(&["BF.EXISTS", "dst", "item:1"]),
        Frame::Int(1)
    );
    assert_eq!(digest(&mut on_replica, "dst"), digest(&mut conn, "src"));
}

#[test]
fn an_aof_rewrite_of_a_half_restored_filter_rebuilds_the_same_half() {
    let options = Options::default()
        .config("appendonly", "yes")
        .config("aof-use-rdb-preamble", "no");
    let mut server = Server::with(options.clone());
    let mut conn = server.conn();
    let chunks = source(&mut conn, "src");
    let total = total(&chunks);
    for chunk in &chunks[..3] {
        assert_eq!(loadchunk(&mut conn, "dst", chunk.0, &chunk.1), Frame::ok());
    }
    let half = digest(&mut conn, "dst");
    assert_eq!(
        conn.call(&["BGREWRITEAOF"]),
        Frame::simple("Background append only file rewriting started")
    );
    server.wait_for_aof_rewrite();
    // Restarted from the rewritten AOF alone.
    server.restart_with(options);
    let mut conn = server.conn();
    assert_eq!(digest(&mut conn, "dst"), half);
    adds_and_lookups_answer(&mut conn, "dst", &restoring(offset(&chunks[3]), total));
    for chunk in &chunks[3..] {
        assert_eq!(loadchunk(&mut conn, "dst", chunk.0, &chunk.1), Frame::ok());
    }
    assert_eq!(digest(&mut conn, "dst"), digest(&mut conn, "src"));
}

/// INFO bf counts a copy made with BF.LOADCHUNK as what it is once its last chunk frees the
/// restore's own state, and nothing once both filters are gone.
#[test]
fn info_bf_counts_a_completed_restore_at_its_size_and_nothing_once_it_is_gone() {
    let server = Server::start();
    let mut conn = server.conn();
    let chunks = source(&mut conn, "src");
    let size = conn.call(&["BF.INFO", "src", "SIZE"]).items()[0].int() as u64;
    assert_eq!(common::info_bf(&server, "bf_bytes"), size);
    for (iterator, data) in &chunks {
        assert_eq!(loadchunk(&mut conn, "copy", *iterator, data), Frame::ok());
    }
    assert_eq!(common::info_bf(&server, "bf_bytes"), 2 * size);
    assert_eq!(conn.call(&["DEL", "src", "copy"]), Frame::Int(2));
    assert_eq!(common::info_bf(&server, "bf_filters"), 0);
    assert_eq!(common::info_bf(&server, "bf_bytes"), 0);
}
