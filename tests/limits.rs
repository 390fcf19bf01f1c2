//! The server's memory is not the client's to take: filters that could not fit under maxmemory
//! are refused up front, a server out of memory refuses writes, and an allocation the operating
//! system refuses becomes an error reply instead of an abort.

mod common;

use common::{Frame, Options, Server};

fn error_text(frame: Frame) -> String {
    match frame {
        Frame::Error(text) => text,
        other => panic!("not an error: {other:?}"),
    }
}

#[test]
fn a_filter_that_cannot_fit_under_maxmemory_is_refused_up_front() {
    let options = Options::default()
        .config("maxmemory", "64mb")
        .config("maxmemory-policy", "noeviction")
        .config("bf.max-filter-bytes", "1gb");
    let server = Server::with(options);
    let mut conn = server.conn();
    // 100 million items at 1%: 138 MB, past what 64 MB leaves.
    let text = error_text(conn.call(&["BF.RESERVE", "big", "0.01", "100000000"]));
    assert!(
        text.starts_with("ERR filter would need 1378")
            && text.contains("more than maxmemory leaves ("),
        "{text}"
    );
    assert!(text.ends_with(" of 67108864 bytes used)"), "{text}");
    let text = error_text(conn.call(&["BF.INSERT", "big", "CAPACITY", "100000000", "ITEMS", "a"]));
    assert!(text.contains("more than maxmemory leaves"), "{text}");
    assert_eq!(conn.call(&["EXISTS", "big"]), Frame::Int(0));
    // Growth too: a filter that fits (6.9 MB), grown until its next sub-filter (55 MB, with
    // EXPANSION 8) would not.
    assert_eq!(
        conn.call(&["BF.RESERVE", "g", "0.01", "5000000", "EXPANSION", "8"]),
        Frame::ok()
    );
    let mut next = 0;
    let refused = loop {
        let mut madd = vec!["BF.MADD".to_string(), "g".to_string()];
        madd.extend((next..next + 10_000).map(|i| format!("i{i}")));
        next += 10_000;
        let reply = conn.call(&madd).items();
        if let Some(Frame::Error(text)) = reply.last() {
            break text.clone();
        }
        assert!(next < 6_000_000, "never refused");
    };
    assert!(refused.contains("more than maxmemory leaves"), "{refused}");
    assert_eq!(
        conn.call(&["BF.INFO", "g", "FILTERS"]),
        Frame::Array(vec![Frame::Int(1)])
    );
    assert_eq!(conn.call(&["BF.CARD", "g"]), Frame::Int(5_000_000));
    // A filter that fits is made.
    assert_eq!(
        conn.call(&["BF.RESERVE", "small", "0.01", "1000"]),
        Frame::ok()
    );
}

#[test]
fn writes_are_refused_when_the_server_is_over_maxmemory() {
    let options = Options::default().config("maxmemory-policy", "noeviction");
    let server = Server::with(options);
    let mut conn = server.conn();
    assert_eq!(conn.call(&["BF.ADD", "f", "a"]), Frame::Int(1));
    // Ten megabytes of plain strings, then a maxmemory below what is used.
    let value = vec![b'x'; 1 << 20];
    for i in 0..10 {
        let key = format!("s{i}");
        assert_eq!(
            conn.call(&[b"SET".as_slice(), key.as_bytes(), &value]),
            Frame::ok()
        );
    }
    assert_eq!(
        conn.call(&["CONFIG", "SET", "maxmemory", "5mb"]),
        Frame::ok()
    );
    let oom = "OOM command not allowed when used memory > 'maxmemory'.";
    for command in [
        &["BF.ADD", "f", "b"][..],
        &["BF.MADD", "f", "b", "c"],
        &["BF.INSERT", "f", "ITEMS", "b"],
        &["BF.RESERVE", "g", "0.01", "10"],
        &["BF.LOADCHUNK", "g", "1", "x"],
    ] {
        assert_eq!(conn.call(command), Frame::error(oom), "{command:?}");
    }
    // Reads still work.
    assert_eq!(conn.call(&["BF.EXISTS", "f", "a"]), Frame::Int(1));
    assert_eq!(conn.call(&["BF.CARD", "f"]), Frame::Int(1));
}

#[test]
fn an_allocation_the_system_refuses_is_an_error_not_a_crash() {
    // 1.5 GB of address space, and a 2 GB filter allowed by the config: the allocation fails.
    let options = Options {
        address_space_kib: Some(1_500_000),
        ..Options::default()
    }
    .config("bf.max-filter-bytes", "4gb");
    let server = Server::with(options);
    let mut conn = server.conn();
    // 1.5 billion items at 1%: 2.07 GB.
    assert_eq!(
        conn.call(&["BF.RESERVE", "huge", "0.01", "1500000000"]),
        Frame::error(
            "ERR out of memory: the server could not allocate 2067703768 bytes for the filter"
        )
    );
    assert_eq!(conn.call(&["EXISTS", "huge"]), Frame::Int(0));
    assert_eq!(conn.call(&["PING"]), Frame::simple("PONG"));
    // What was taken for the refused filter was given back: a big one still fits.
    assert_eq!(
        conn.call(&["BF.RESERVE", "ok", "0.01", "300000000"]),
        Frame::ok()
    );
    assert_eq!(conn.call(&["BF.ADD", "ok", "x"]), Frame::Int(1));
}
