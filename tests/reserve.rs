//! BF.RESERVE against a real server, rule by rule of its SPEC.md row, in RESP2 and RESP3: the
//! reply, its options in any letter case, the exact error of each bad number and of bad grammar,
//! and the size ceiling a filter over 1 GiB meets.

mod common;

use common::{Frame, Server};

#[test]
fn reserve_replies_ok_and_a_second_reserve_says_item_exists() {
    let server = Server::start();
    for (protocol, mut conn) in server.both() {
        let key = format!("reserve:{protocol}");
        assert_eq!(conn.call(&["BF.RESERVE", &key, "0.01", "100"]), Frame::ok());
        assert_eq!(
            conn.call(&["BF.RESERVE", &key, "0.01", "100"]),
            Frame::error("ERR item exists")
        );
        assert_eq!(conn.call(&["TYPE", &key]), Frame::simple("MBbloom--"));
    }
}

#[test]
fn reserve_takes_expansion_and_nonscaling_in_any_letter_case() {
    let server = Server::start();
    let mut conn = server.conn();
    assert_eq!(
        conn.call(&["BF.RESERVE", "a", "0.01", "100", "EXPANSION", "4"]),
        Frame::ok()
    );
    assert_eq!(
        conn.call(&["BF.RESERVE", "b", "0.01", "100", "expansion", "1"]),
        Frame::ok()
    );
    assert_eq!(
        conn.call(&["BF.RESERVE", "c", "0.01", "100", "NonScaling"]),
        Frame::ok()
    );
    assert_eq!(conn.call(&["bf.reserve", "d", "0.5", "1"]), Frame::ok());
}

#[test]
fn reserve_refuses_bad_numbers_with_exact_errors() {
    let server = Server::start();
    let mut conn = server.conn();
    let bad_error = Frame::error(
        "ERR bad error rate: must be a number from 8.900295434028806e-308 up to, not including, 1",
    );
    for error in [
        "0", "1", "-0.5", "2", "nan", "inf", "-inf", "1e400", "10abc", "", "0x1p-3",
    ] {
        assert_eq!(
            conn.call(&["BF.RESERVE", "k", error, "100"]),
            bad_error,
            "{error}"
        );
    }
    let bad_capacity =
        Frame::error("ERR bad capacity: must be a whole number from 1 to 9223372036854775807");
    for capacity in [
        "0",
        "-1",
        "10abc",
        "1e3",
        "1.5",
        "",
        "99999999999999999999999",
        "9223372036854775808",
    ] {
        assert_eq!(
            conn.call(&["BF.RESERVE", "k", "0.01", capacity]),
            bad_capacity,
            "{capacity}"
        );
    }
    let bad_expansion = Frame::error("ERR bad expansion: must be a whole number from 1 to 32768");
    for expansion in ["0", "-1", "32769", "2.5", "nan"] {
        assert_eq!(
            conn.call(&["BF.RESERVE", "k", "0.01", "100", "EXPANSION", expansion]),
            bad_expansion,
            "{expansion}"
        );
    }
    assert_eq!(conn.call(&["EXISTS", "k"]), Frame::Int(0));
}

#[test]
fn reserve_refuses_bad_grammar_with_exact_errors() {
    let server = Server::start();
    let mut conn = server.conn();
    let cases: &[(&[&str], &str)] = &[
        (
            &["EXPANSION", "2", "NONSCALING"],
            "ERR EXPANSION cannot be used with NONSCALING",
        ),
        (
            &["NONSCALING", "EXPANSION", "2"],
            "ERR EXPANSION cannot be used with NONSCALING",
        ),
        (
            &["EXPANSION", "2", "expansion", "3"],
            "ERR option EXPANSION given more than once",
        ),
        (
            &["NONSCALING", "nonscaling"],
            "ERR option NONSCALING given more than once",
        ),
        (&["EXPANSION"], "ERR option EXPANSION needs a value"),
        (&["NONSCALE"], "ERR unknown argument 'NONSCALE'"),
        (&["N"], "ERR unknown argument 'N'"),
        (&["EXPANSION", "2", "foo"], "ERR unknown argument 'foo'"),
    ];
    for (options, error) in cases {
        let mut command = vec!["BF.RESERVE", "k", "0.01", "100"];
        command.extend_from_slice(options);
        assert_eq!(conn.call(&command), Frame::error(error), "{options:?}");
    }
    // A binary token is quoted safely, on one line.
    let reply = conn.call(&[&b"BF.RESERVE"[..], b"k", b"0.01", b"100", b"x\r\ny\0"]);
    assert_eq!(
        reply,
        Frame::error("ERR unknown argument 'x\\x0d\\x0ay\\x00'")
    );
    assert_eq!(conn.call(&["EXISTS", "k"]), Frame::Int(0));
}

#[test]
fn a_filter_over_one_gib_is_refused_and_the_server_lives() {
    let server = Server::start();
    let mut conn = server.conn();
    assert_eq!(
        conn.call(&["BF.RESERVE", "huge", "0.01", "10000000000000"]),
        Frame::error(
            "ERR filter would use 13784706453008 bytes, over bf.max-filter-bytes (1073741824); \
             if it is meant to be that big: CONFIG SET bf.max-filter-bytes 12839gb"
        )
    );
    assert_eq!(
        conn.call(&["BF.RESERVE", "huge", "1e-300", "9223372036854775807"]),
        Frame::error(
            "ERR filter would use 2^64 bytes or more, over bf.max-filter-bytes (1073741824); no \
             setting allows that much"
        )
    );
    // Just over the ceiling (800 million items at 1% take 1.03 GiB) is refused too.
    let over = conn.call(&["BF.RESERVE", "huge", "0.01", "800000000"]);
    assert!(
        over.text_of_error()
            .contains("over bf.max-filter-bytes (1073741824)"),
        "{over:?}"
    );
    assert_eq!(conn.call(&["PING"]), Frame::simple("PONG"));
    assert_eq!(conn.call(&["EXISTS", "huge"]), Frame::Int(0));
    // Just under it is allowed (700 million items: 0.9 GiB, mapped lazily, freed at once).
    assert_eq!(
        conn.call(&["BF.RESERVE", "big", "0.01", "700000000"]),
        Frame::ok()
    );
    assert_eq!(conn.call(&["BF.ADD", "big", "x"]), Frame::Int(1));
    assert_eq!(conn.call(&["DEL", "big"]), Frame::Int(1));
}

trait ErrorText {
    fn text_of_error(&self) -> String;
}

impl ErrorText for Frame {
    fn text_of_error(&self) -> String {
        match self {
            Frame::Error(text) => text.clone(),
            other => panic!("not an error: {other:?}"),
        }
    }
}
