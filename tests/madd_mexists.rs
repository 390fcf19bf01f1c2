//! BF.MADD and BF.MEXISTS against a real server, in RESP2 and RESP3: an answer per item, a missing
//! key that holds nothing, and a batch on a full non-scaling filter (BF.INSERT's too) that ends
//! with one error.

mod common;

use common::{boolean, booleans, Frame, Server};

#[test]
fn madd_answers_each_item_in_both_protocols() {
    let server = Server::start();
    for (protocol, mut conn) in server.both() {
        let key = format!("madd:{protocol}");
        assert_eq!(
            conn.call(&["BF.MADD", &key, "a", "b", "a"]),
            Frame::Array(booleans(protocol, &[true, true, false]))
        );
        assert_eq!(
            conn.call(&["BF.MADD", &key, "b", "c"]),
            Frame::Array(booleans(protocol, &[false, true]))
        );
        assert_eq!(conn.call(&["BF.CARD", &key]), Frame::Int(3));
    }
}

#[test]
fn mexists_answers_each_item_and_a_missing_key_holds_nothing() {
    let server = Server::start();
    for (protocol, mut conn) in server.both() {
        let key = format!("mexists:{protocol}");
        conn.call(&["BF.MADD", &key, "a", "b"]);
        assert_eq!(
            conn.call(&["BF.MEXISTS", &key, "a", "x", "b"]),
            Frame::Array(booleans(protocol, &[true, false, true]))
        );
        assert_eq!(
            conn.call(&["BF.MEXISTS", "missing", "a", "b"]),
            Frame::Array(booleans(protocol, &[false, false]))
        );
    }
    assert_eq!(server.conn().call(&["EXISTS", "missing"]), Frame::Int(0));
}

#[test]
fn madd_and_insert_on_a_full_nonscaling_filter_end_with_one_error() {
    let server = Server::start();
    let full = Frame::error("ERR non scaling filter is full");
    for (protocol, mut conn) in server.both() {
        let key = format!("fixed:{protocol}");
        assert_eq!(
            conn.call(&["BF.RESERVE", &key, "0.0001", "3", "NONSCALING"]),
            Frame::ok()
        );
        let mut expected = booleans(protocol, &[true, true, false, true]);
        expected.push(full.clone());
        assert_eq!(
            conn.call(&["BF.MADD", &key, "a", "b", "a", "c", "d", "e"]),
            Frame::Array(expected)
        );
        assert_eq!(conn.call(&["BF.CARD", &key]), Frame::Int(3));
        assert_eq!(
            conn.call(&["BF.EXISTS", &key, "e"]),
            boolean(protocol, false)
        );
        let mut expected = booleans(protocol, &[false]);
        expected.push(full.clone());
        assert_eq!(
            conn.call(&["BF.INSERT", &key, "ITEMS", "c", "f", "g"]),
            Frame::Array(expected)
        );
        // A new filter made full by the same command.
        let fresh = format!("fresh:{protocol}");
        let mut expected = booleans(protocol, &[true, true]);
        expected.push(full.clone());
        assert_eq!(
            conn.call(&[
                "BF.INSERT",
                &fresh,
                "CAPACITY",
                "2",
                "ERROR",
                "0.001",
                "NONSCALING",
                "ITEMS",
                "x",
                "y",
                "z"
            ]),
            Frame::Array(expected)
        );
        assert_eq!(conn.call(&["BF.CARD", &fresh]), Frame::Int(2));
    }
}
