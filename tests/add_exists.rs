//! BF.ADD and BF.EXISTS against a real server, rule by rule of their SPEC.md rows, in RESP2 and
//! RESP3: whether an item was new, the filter BF.ADD makes on a missing key, binary items, a full
//! non-scaling filter; and the WRONGTYPE and arity errors of BF.RESERVE, BF.ADD and BF.EXISTS.

mod common;

use common::{boolean, Frame, Server};

#[test]
fn wrong_argument_counts_get_the_servers_arity_error() {
    let server = Server::start();
    let mut conn = server.conn();
    // The command's name as registered: lower case, as RedisBloom's, whatever the client typed.
    let arity = |name: &str| {
        Frame::error(&format!(
            "ERR wrong number of arguments for '{}' command",
            name.to_lowercase()
        ))
    };
    assert_eq!(conn.call(&["BF.RESERVE", "k", "0.01"]), arity("BF.RESERVE"));
    assert_eq!(conn.call(&["BF.ADD", "k"]), arity("BF.ADD"));
    assert_eq!(conn.call(&["BF.ADD", "k", "a", "b"]), arity("BF.ADD"));
    assert_eq!(conn.call(&["BF.EXISTS", "k"]), arity("BF.EXISTS"));
    assert_eq!(conn.call(&["BF.EXISTS", "k", "a", "b"]), arity("BF.EXISTS"));
}

#[test]
fn add_answers_whether_the_item_was_new_in_both_protocols() {
    let server = Server::start();
    for (protocol, mut conn) in server.both() {
        let key = format!("add:{protocol}");
        assert_eq!(
            conn.call(&["BF.ADD", &key, "hello"]),
            boolean(protocol, true)
        );
        assert_eq!(
            conn.call(&["BF.ADD", &key, "hello"]),
            boolean(protocol, false)
        );
        assert_eq!(
            conn.call(&["BF.ADD", &key, "world"]),
            boolean(protocol, true)
        );
    }
}

#[test]
fn add_on_a_missing_key_creates_a_filter_with_the_defaults() {
    let server = Server::start();
    let mut conn = server.conn();
    assert_eq!(conn.call(&["BF.ADD", "fresh", "x"]), Frame::Int(1));
    assert_eq!(conn.call(&["TYPE", "fresh"]), Frame::simple("MBbloom--"));
    // The defaults are capacity 100 at 1%: the same filter as an explicit RESERVE with them.
    assert_eq!(
        conn.call(&["BF.RESERVE", "explicit", "0.01", "100", "EXPANSION", "2"]),
        Frame::ok()
    );
    assert_eq!(conn.call(&["BF.ADD", "explicit", "x"]), Frame::Int(1));
    assert_eq!(
        conn.call(&["DEBUG", "DIGEST-VALUE", "fresh"]),
        conn.call(&["DEBUG", "DIGEST-VALUE", "explicit"])
    );
}

#[test]
fn exists_answers_in_both_protocols_and_a_missing_key_holds_nothing() {
    let server = Server::start();
    for (protocol, mut conn) in server.both() {
        let key = format!("exists:{protocol}");
        assert_eq!(
            conn.call(&["BF.EXISTS", &key, "a"]),
            boolean(protocol, false)
        );
        assert_eq!(conn.call(&["BF.ADD", &key, "a"]), boolean(protocol, true));
        assert_eq!(
            conn.call(&["BF.EXISTS", &key, "a"]),
            boolean(protocol, true)
        );
        assert_eq!(
            conn.call(&["BF.EXISTS", &key, "b"]),
            boolean(protocol, false)
        );
    }
    // EXISTS on a missing key does not create it.
    assert_eq!(
        server.conn().call(&["EXISTS", "nothing-here"]),
        Frame::Int(0)
    );
}

#[test]
fn commands_on_a_key_of_another_type_say_wrongtype() {
    let server = Server::start();
    let wrongtype =
        Frame::error("WRONGTYPE Operation against a key holding the wrong kind of value");
    for (protocol, mut conn) in server.both() {
        let (string, list) = (format!("s:{protocol}"), format!("l:{protocol}"));
        assert_eq!(conn.call(&["SET", &string, "v"]), Frame::ok());
        assert_eq!(conn.call(&["BF.ADD", &string, "x"]), wrongtype);
        assert_eq!(conn.call(&["BF.EXISTS", &string, "x"]), wrongtype);
        assert_eq!(
            conn.call(&["BF.RESERVE", &string, "0.01", "100"]),
            wrongtype
        );
        assert_eq!(conn.call(&["LPUSH", &list, "v"]), Frame::Int(1));
        assert_eq!(conn.call(&["BF.EXISTS", &list, "x"]), wrongtype);
        assert_eq!(conn.call(&["GET", &string]), Frame::bulk("v"));
    }
}

#[test]
fn items_are_binary_safe() {
    let server = Server::start();
    let mut conn = server.conn();
    let items: [&[u8]; 6] = [b"a\0b", b"a\0c", b"", b"\r\n", &[0xff, 0xfe, 0], b"a"];
    for item in items {
        assert_eq!(
            conn.call(&[&b"BF.ADD"[..], b"bin", item]),
            Frame::Int(1),
            "{item:?}"
        );
    }
    for item in items {
        assert_eq!(
            conn.call(&[&b"BF.EXISTS"[..], b"bin", item]),
            Frame::Int(1),
            "{item:?}"
        );
    }
    assert_eq!(
        conn.call(&[&b"BF.EXISTS"[..], b"bin", b"a\0d"]),
        Frame::Int(0)
    );
    // A 1 MiB item, and the same item with its last byte changed.
    let mut big = vec![b'z'; 1 << 20];
    assert_eq!(conn.call(&[&b"BF.ADD"[..], b"big", &big]), Frame::Int(1));
    assert_eq!(conn.call(&[&b"BF.EXISTS"[..], b"big", &big]), Frame::Int(1));
    *big.last_mut().unwrap() = b'y';
    assert_eq!(conn.call(&[&b"BF.EXISTS"[..], b"big", &big]), Frame::Int(0));
}

#[test]
fn a_full_nonscaling_filter_refuses_new_items_and_keeps_its_bits() {
    let server = Server::start();
    for (protocol, mut conn) in server.both() {
        let key = format!("full:{protocol}");
        assert_eq!(
            conn.call(&["BF.RESERVE", &key, "0.001", "2", "NONSCALING"]),
            Frame::ok()
        );
        assert_eq!(conn.call(&["BF.ADD", &key, "one"]), boolean(protocol, true));
        assert_eq!(conn.call(&["BF.ADD", &key, "two"]), boolean(protocol, true));
        let before = conn.call(&["DUMP", &key]);
        assert_eq!(
            conn.call(&["BF.ADD", &key, "three"]),
            Frame::error("ERR non scaling filter is full")
        );
        // Items it holds are still answered, not refused.
        assert_eq!(
            conn.call(&["BF.ADD", &key, "one"]),
            boolean(protocol, false)
        );
        assert_eq!(conn.call(&["DUMP", &key]), before);
        assert_eq!(
            conn.call(&["BF.EXISTS", &key, "three"]),
            boolean(protocol, false)
        );
    }
}
