//! Section `persistence`: RDB SAVE and load of a 1 GB filter against the same bytes as plain
//! strings.

use crate::common::{Conn, Frame, Server};
use crate::measure::{seconds, size};
use crate::report::Row;
use crate::server::{fill, reserve};
use std::io::{Read, Write};
use std::path::Path;

/// Measures this section and appends its rows.
pub fn rows(server: &Server, rows: &mut Vec<Row>) {
    let mut conn = server.conn();
    // 725 million items at 1% (first sub-filter at 0.5%): 1.0 GB of bits, 10 million items in.
    let capacity = size(725_000_000);
    conn.call(&["FLUSHALL"]);
    reserve(&mut conn, "rdb", capacity);
    fill(&mut conn, "rdb", size(10_000_000));
    let bytes = conn.call(&["BF.INFO", "rdb", "SIZE"]).items()[0].int();
    let (save_filter, load_filter) = save_and_load(&mut conn);
    replace_with_strings(&mut conn, "rdb", &server.dir.join("chunks.bin"));
    let (save_strings, load_strings) = save_and_load(&mut conn);
    conn.call(&["FLUSHALL"]);
    let label = format!("{:.2} GB", bytes as f64 / 1e9);
    rows.push(
        Row::new(
            "persistence",
            format!("RDB SAVE, {label} filter"),
            save_filter,
            "s",
        )
        .against("same bytes as strings", save_strings, 1.2),
    );
    rows.push(
        Row::new(
            "persistence",
            format!("RDB load, {label} filter"),
            load_filter,
            "s",
        )
        .against("same bytes as strings", load_strings, 1.2),
    );
}

/// The median times of SAVE and of loading the dump again (`DEBUG RELOAD NOSAVE`), in seconds.
fn save_and_load(conn: &mut Conn) -> (f64, f64) {
    let save = seconds(|| assert_eq!(conn.call(&["SAVE"]), Frame::ok()));
    let load = seconds(|| assert_eq!(conn.call(&["DEBUG", "RELOAD", "NOSAVE"]), Frame::ok()));
    (save, load)
}

/// Replaces the filter `key` with the same bytes as plain strings: its own chunks, through the
/// file `spool` so that the filter is gone before the strings are made (one gigabyte at a time).
fn replace_with_strings(conn: &mut Conn, key: &str, spool: &Path) {
    let mut lengths = Vec::new();
    {
        let mut file = std::io::BufWriter::new(std::fs::File::create(spool).unwrap());
        let mut iterator = 1;
        loop {
            let reply = conn
                .call(&["BF.SCANDUMP", key, &iterator.to_string()])
                .items();
            iterator = reply[0].int();
            if iterator == 0 {
                break;
            }
            let data = reply[1].bytes();
            file.write_all(&data).unwrap();
            lengths.push(data.len());
        }
    }
    conn.call(&["FLUSHALL"]);
    let mut file = std::fs::File::open(spool).unwrap();
    for (index, len) in lengths.iter().enumerate() {
        let mut data = vec![0; *len];
        file.read_exact(&mut data).unwrap();
        let key = format!("str:{index}");
        assert_eq!(
            conn.call(&[&b"SET"[..], key.as_bytes(), &data]),
            Frame::ok()
        );
    }
    drop(file);
    let _ = std::fs::remove_file(spool);
}
