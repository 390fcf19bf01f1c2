//! BF.INFO and BF.CARD against a real server, in RESP2 and RESP3: every field or one, a
//! non-scaling filter's null expansion, the size as the memory the filter takes, and the count of
//! new items.

mod common;

use common::{fill, Frame, Server};

#[test]
fn info_lists_every_field_in_both_protocols() {
    let server = Server::start();
    let mut conn = server.conn();
    assert_eq!(conn.call(&["BF.RESERVE", "k", "0.01", "10"]), Frame::ok());
    fill(&mut conn, "k", 100);
    let size = conn.call(&["BF.INFO", "k", "SIZE"]).items()[0].int();
    let names = [
        "Capacity",
        "Size",
        "Number of filters",
        "Number of items inserted",
        "Expansion rate",
    ];
    let values = [
        Frame::Int(150),
        Frame::Int(size),
        Frame::Int(4),
        Frame::Int(100),
        Frame::Int(2),
    ];
    let flat: Vec<Frame> = names
        .iter()
        .zip(values.iter())
        .flat_map(|(name, value)| [Frame::simple(name), value.clone()])
        .collect();
    assert_eq!(conn.call(&["BF.INFO", "k"]), Frame::Array(flat));
    let pairs: Vec<(Frame, Frame)> = names
        .iter()
        .zip(values.iter())
        .map(|(name, value)| (Frame::simple(name), value.clone()))
        .collect();
    assert_eq!(server.conn3().call(&["BF.INFO", "k"]), Frame::Map(pairs));
}

#[test]
fn info_of_a_nonscaling_filter_has_a_null_expansion() {
    let server = Server::start();
    let mut conn = server.conn();
    assert_eq!(
        conn.call(&["BF.RESERVE", "k", "0.01", "100", "NONSCALING"]),
        Frame::ok()
    );
    assert_eq!(conn.call(&["BF.INFO", "k"]).items()[9], Frame::NullBulk);
    assert_eq!(
        conn.call(&["BF.INFO", "k", "EXPANSION"]),
        Frame::Array(vec![Frame::NullBulk])
    );
    let mut conn3 = server.conn3();
    let Frame::Map(pairs) = conn3.call(&["BF.INFO", "k"]) else {
        panic!("a map")
    };
    assert_eq!(pairs[4], (Frame::simple("Expansion rate"), Frame::Null));
    assert_eq!(
        conn3.call(&["BF.INFO", "k", "expansion"]),
        Frame::Map(vec![(Frame::simple("Expansion rate"), Frame::Null)])
    );
}

#[test]
fn info_answers_single_fields() {
    let server = Server::start();
    let mut conn = server.conn();
    let mut conn3 = server.conn3();
    assert_eq!(
        conn.call(&["BF.RESERVE", "k", "0.01", "1000", "EXPANSION", "3"]),
        Frame::ok()
    );
    conn.call(&["BF.MADD", "k", "a", "b", "c"]);
    let size = conn.call(&["BF.INFO", "k", "size"]).items()[0].int();
    let fields = [
        ("CAPACITY", "Capacity", 1000),
        ("SIZE", "Size", size),
        ("FILTERS", "Number of filters", 1),
        ("ITEMS", "Number of items inserted", 3),
        ("EXPANSION", "Expansion rate", 3),
    ];
    for (field, name, value) in fields {
        assert_eq!(
            conn.call(&["BF.INFO", "k", field]),
            Frame::Array(vec![Frame::Int(value)])
        );
        assert_eq!(
            conn3.call(&["BF.INFO", "k", &field.to_lowercase()]),
            Frame::Map(vec![(Frame::simple(name), Frame::Int(value))])
        );
    }
    assert_eq!(
        conn.call(&["BF.INFO", "k", "BYTES"]),
        Frame::error("ERR unknown argument 'BYTES'")
    );
    assert_eq!(
        conn.call(&["BF.INFO", "k", "SIZE", "ITEMS"]),
        Frame::error("ERR unknown argument 'ITEMS'")
    );
    assert_eq!(
        conn.call(&["BF.INFO", "missing"]),
        Frame::error("ERR not found")
    );
    assert_eq!(
        conn.call(&["BF.INFO", "missing", "SIZE"]),
        Frame::error("ERR not found")
    );
}

#[test]
fn info_size_is_the_memory_the_filter_takes() {
    let server = Server::start();
    let mut conn = server.conn();
    assert_eq!(
        conn.call(&["BF.RESERVE", "k", "0.001", "1000000"]),
        Frame::ok()
    );
    let size = conn.call(&["BF.INFO", "k", "SIZE"]).items()[0].int();
    let usage = conn.call(&["MEMORY", "USAGE", "k"]).int();
    // MEMORY USAGE adds the key's name and its dict entry to the filter's own figure.
    assert!(
        usage > size && usage - size < 64,
        "size {size}, usage {usage}"
    );
    // 1,977,504 bytes of bits, and under 512 bytes of bookkeeping.
    assert!((1_977_504..1_977_504 + 512).contains(&size), "{size}");
}

#[test]
fn card_counts_new_items_and_a_missing_key_has_none() {
    let server = Server::start();
    for (_, mut conn) in server.both() {
        assert_eq!(conn.call(&["BF.CARD", "card"]), Frame::Int(0));
    }
    let mut conn = server.conn();
    conn.call(&["BF.MADD", "card", "a", "b", "a", "c"]);
    conn.call(&["BF.ADD", "card", "b"]);
    assert_eq!(conn.call(&["BF.CARD", "card"]), Frame::Int(3));
    assert_eq!(server.conn3().call(&["BF.CARD", "card"]), Frame::Int(3));
}
