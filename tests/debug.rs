//! BF.DEBUG against a real server: a line per sub-filter, the same after DEBUG RELOAD and RESTORE,
//! and the same lines in RESP3.

mod common;

use common::{debug_lines as debug, fill, Frame, Server};

#[test]
fn debug_describes_every_sub_filter_and_survives_a_reload() {
    let server = Server::start();
    let mut conn = server.conn();
    assert_eq!(conn.call(&["BF.RESERVE", "k", "0.01", "10"]), Frame::ok());
    fill(&mut conn, "k", 100);
    let lines = debug(&mut conn, "k");
    assert_eq!(
        lines,
        [
            "size:100",
            "bytes:16 bits:128 hashes:8 hashwidth:64 capacity:10 size:10 ratio:0.005",
            "bytes:32 bits:256 hashes:9 hashwidth:64 capacity:20 size:20 ratio:0.0025",
            "bytes:72 bits:576 hashes:10 hashwidth:64 capacity:40 size:40 ratio:0.00125",
            "bytes:160 bits:1280 hashes:11 hashwidth:64 capacity:80 size:30 ratio:0.000625",
        ]
    );
    assert_eq!(conn.call(&["DEBUG", "RELOAD"]), Frame::ok());
    assert_eq!(debug(&mut conn, "k"), lines);
    let payload = conn.call(&["DUMP", "k"]).bytes();
    assert_eq!(
        conn.call(&[&b"RESTORE"[..], b"copy", b"0", &payload]),
        Frame::ok()
    );
    assert_eq!(debug(&mut conn, "copy"), lines);
    assert_eq!(
        conn.call(&["BF.DEBUG", "missing"]),
        Frame::error("ERR not found")
    );
}

#[test]
fn debug_answers_the_same_lines_in_resp3() {
    let server = Server::start();
    let mut conn = server.conn();
    conn.call(&["BF.MADD", "k", "a", "b"]);
    let lines: Vec<Frame> = debug(&mut conn, "k").into_iter().map(Frame::bulk).collect();
    assert_eq!(server.conn3().call(&["BF.DEBUG", "k"]), Frame::Array(lines));
}
