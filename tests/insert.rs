//! BF.INSERT against a real server: its options in any order and letter case, NOCREATE, options
//! that do not change an existing filter, everything after ITEMS taken as an item, and the exact
//! error of each bad grammar and bad number.

mod common;

use common::{debug_lines as debug, Frame, Server};

fn command<'a>(head: &[&'a str], rest: &[&'a str]) -> Vec<&'a str> {
    head.iter().chain(rest).copied().collect()
}

#[test]
fn insert_takes_its_options_in_any_order_and_case() {
    let server = Server::start();
    let mut conn = server.conn();
    let orders: [&[&str]; 4] = [
        &["CAPACITY", "1000", "ERROR", "0.001", "EXPANSION", "4"],
        &["ERROR", "0.001", "EXPANSION", "4", "CAPACITY", "1000"],
        &["expansion", "4", "capacity", "1000", "error", "0.001"],
        &["Error", "0.001", "Capacity", "1000", "Expansion", "4"],
    ];
    let mut shapes = Vec::new();
    for (n, options) in orders.iter().enumerate() {
        let key = format!("insert:{n}");
        let cmd = command(
            &["BF.INSERT", &key],
            &command(options, &["ITEMS", "a", "b"]),
        );
        assert_eq!(
            conn.call(&cmd),
            Frame::Array(vec![Frame::Int(1), Frame::Int(1)])
        );
        shapes.push(debug(&mut conn, &key));
    }
    assert!(shapes.windows(2).all(|pair| pair[0] == pair[1]));
    assert_eq!(
        shapes[0][1],
        "bytes:1984 bits:15872 hashes:11 hashwidth:64 capacity:1000 size:2 ratio:0.0005"
    );
    assert_eq!(
        conn.call(&["BF.INFO", "insert:0", "EXPANSION"]),
        Frame::Array(vec![Frame::Int(4)])
    );
    conn.call(&[
        "BF.INSERT",
        "fixed",
        "NONSCALING",
        "CAPACITY",
        "10",
        "ITEMS",
        "a",
    ]);
    assert_eq!(
        debug(&mut conn, "fixed")[1],
        "bytes:16 bits:128 hashes:7 hashwidth:64 capacity:10 size:1 ratio:0.01"
    );
}

#[test]
fn insert_nocreate_on_a_missing_key_is_not_found() {
    let server = Server::start();
    for (_, mut conn) in server.both() {
        let not_found = Frame::error("ERR not found");
        assert_eq!(
            conn.call(&["BF.INSERT", "nokey", "NOCREATE", "ITEMS", "a"]),
            not_found
        );
        assert_eq!(
            conn.call(&[
                "BF.INSERT",
                "nokey",
                "CAPACITY",
                "10",
                "ERROR",
                "0.1",
                "NOCREATE",
                "ITEMS",
                "a"
            ]),
            not_found
        );
        assert_eq!(conn.call(&["EXISTS", "nokey"]), Frame::Int(0));
    }
    let mut conn = server.conn();
    conn.call(&["BF.ADD", "there", "a"]);
    assert_eq!(
        conn.call(&["BF.INSERT", "there", "NOCREATE", "ITEMS", "a", "b"]),
        Frame::Array(vec![Frame::Int(0), Frame::Int(1)])
    );
}

#[test]
fn insert_options_do_not_change_an_existing_filter() {
    let server = Server::start();
    let mut conn = server.conn();
    assert_eq!(conn.call(&["BF.RESERVE", "k", "0.01", "10"]), Frame::ok());
    let before = debug(&mut conn, "k");
    conn.call(&[
        "BF.INSERT",
        "k",
        "CAPACITY",
        "5000",
        "ERROR",
        "0.2",
        "NONSCALING",
        "ITEMS",
        "a",
    ]);
    let after = debug(&mut conn, "k");
    assert_eq!(after[1], before[1].replace("size:0", "size:1"));
    assert_eq!(
        conn.call(&["BF.INFO", "k", "EXPANSION"]),
        Frame::Array(vec![Frame::Int(2)])
    );
}

#[test]
fn everything_after_items_is_an_item() {
    let server = Server::start();
    let mut conn = server.conn();
    assert_eq!(
        conn.call(&["BF.INSERT", "k", "ITEMS", "NOCREATE", "CAPACITY", "ITEMS"]),
        Frame::Array(vec![Frame::Int(1), Frame::Int(1), Frame::Int(1)])
    );
    assert_eq!(
        conn.call(&["BF.MEXISTS", "k", "NOCREATE", "CAPACITY", "ITEMS"]),
        Frame::Array(vec![Frame::Int(1), Frame::Int(1), Frame::Int(1)])
    );
}

#[test]
fn insert_refuses_bad_grammar_with_exact_errors() {
    let server = Server::start();
    let mut conn = server.conn();
    let cases: &[(&[&str], &str)] = &[
        (&["CAPACITY", "10", "x"], "ERR unknown argument 'x'"),
        (
            &["CAPACITY", "10", "NONSCALING"],
            "ERR ITEMS and at least one item are required",
        ),
        (
            &["CAPACITY", "10", "ITEMS"],
            "ERR ITEMS and at least one item are required",
        ),
        (&["CAP", "10", "ITEMS", "a"], "ERR unknown argument 'CAP'"),
        (
            &["CAPACITY", "1", "CAPACITY", "2", "ITEMS", "a"],
            "ERR option CAPACITY given more than once",
        ),
        (
            &["NOCREATE", "NOCREATE", "ITEMS", "a"],
            "ERR option NOCREATE given more than once",
        ),
        (
            &["EXPANSION", "2", "NONSCALING", "ITEMS", "a"],
            "ERR EXPANSION cannot be used with NONSCALING",
        ),
        (
            &["ERROR", "1.5", "ITEMS", "a"],
            "ERR bad error rate: must be a number from 8.900295434028806e-308 up to, not including, 1",
        ),
        (
            &["CAPACITY", "0", "ITEMS", "a"],
            "ERR bad capacity: must be a whole number from 1 to 9223372036854775807",
        ),
        (
            &["EXPANSION", "0", "ITEMS", "a"],
            "ERR bad expansion: must be a whole number from 1 to 32768",
        ),
        (
            &["CAPACITY", "ITEMS", "a"],
            "ERR bad capacity: must be a whole number from 1 to 9223372036854775807",
        ),
    ];
    for (options, error) in cases {
        let cmd = command(&["BF.INSERT", "k"], options);
        assert_eq!(conn.call(&cmd), Frame::error(error), "{options:?}");
    }
    assert_eq!(conn.call(&["EXISTS", "k"]), Frame::Int(0));
}

#[test]
fn insert_refuses_bad_numbers_like_reserve() {
    let server = Server::start();
    let mut conn = server.conn();
    let bad_error = Frame::error(
        "ERR bad error rate: must be a number from 8.900295434028806e-308 up to, not including, 1",
    );
    for error in ["nan", "inf", "1e400", "10abc", "0", "1"] {
        assert_eq!(
            conn.call(&["BF.INSERT", "k", "ERROR", error, "ITEMS", "a"]),
            bad_error,
            "{error}"
        );
    }
    let bad_expansion = Frame::error("ERR bad expansion: must be a whole number from 1 to 32768");
    assert_eq!(
        conn.call(&["BF.INSERT", "k", "EXPANSION", "2.5", "ITEMS", "a"]),
        bad_expansion
    );
    assert_eq!(
        conn.call(&["BF.INSERT", "k", "NONSCALING", "ERROR"]),
        Frame::error("ERR option ERROR needs a value")
    );
    assert_eq!(conn.call(&["EXISTS", "k"]), Frame::Int(0));
}
