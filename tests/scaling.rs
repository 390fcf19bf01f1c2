//! How a filter grows and where growth stops, against a real server: EXPANSION 1 keeps the first
//! capacity while the hash count grows; the size ceiling (`bf.max-filter-bytes`) guards every path
//! that allocates, growth included; a chain whose next error rate would underflow refuses to grow;
//! and the error-rate floor, checked by every command, config and load argument, leaves filters
//! that can still grow.

mod common;

use common::{debug_lines as debug, fill, Frame, Options, Server};

#[test]
fn expansion_one_keeps_the_first_capacity_while_hashes_grow() {
    let server = Server::start();
    let mut conn = server.conn();
    assert_eq!(
        conn.call(&["BF.RESERVE", "k", "0.01", "10", "EXPANSION", "1"]),
        Frame::ok()
    );
    fill(&mut conn, "k", 50);
    let lines = debug(&mut conn, "k");
    assert_eq!(lines.len(), 6);
    let hashes: Vec<u32> = lines[1..]
        .iter()
        .map(|line| {
            assert!(line.contains(" capacity:10 "), "{line}");
            line.split(' ')
                .find_map(|t| t.strip_prefix("hashes:"))
                .unwrap()
                .parse()
                .unwrap()
        })
        .collect();
    assert_eq!(hashes, [8, 9, 10, 11, 12]);
    assert_eq!(
        conn.call(&["BF.INFO", "k", "CAPACITY"]),
        Frame::Array(vec![Frame::Int(50)])
    );
}

#[test]
fn a_chain_whose_error_rate_would_underflow_refuses_to_grow() {
    let server = Server::start();
    let mut conn = server.conn();
    // Halving 1e-307 reaches subnormal numbers at the third sub-filter.
    assert_eq!(
        conn.call(&["BF.RESERVE", "g", "1e-307", "1", "EXPANSION", "1"]),
        Frame::ok()
    );
    assert_eq!(conn.call(&["BF.ADD", "g", "a"]), Frame::Int(1));
    assert_eq!(conn.call(&["BF.ADD", "g", "b"]), Frame::Int(1));
    let dump = conn.call(&["DUMP", "g"]);
    let refused = Frame::error(
        "ERR filter cannot grow: the next sub-filter's capacity or error rate is out of range; \
         add the items to a new filter reserved with more capacity (or a larger EXPANSION)",
    );
    assert_eq!(conn.call(&["BF.ADD", "g", "c"]), refused);
    assert_eq!(
        conn.call(&["BF.MADD", "g", "a", "c"]),
        Frame::Array(vec![Frame::Int(0), refused.clone()])
    );
    assert_eq!(conn.call(&["DUMP", "g"]), dump);
    assert_eq!(
        debug(&mut conn, "g")[2],
        "bytes:192 bits:1536 hashes:1022 hashwidth:64 capacity:1 size:1 ratio:2.5e-308"
    );
}

#[test]
fn the_size_ceiling_guards_every_path_that_allocates() {
    let server = Server::start();
    let mut conn = server.conn();
    assert_eq!(
        conn.call(&["CONFIG", "SET", "bf.max-filter-bytes", "4096"]),
        Frame::ok()
    );
    let over = |frame: Frame| match frame {
        Frame::Error(text) => {
            assert!(
                text.starts_with("ERR filter would use ")
                    && text.contains(" bytes, over bf.max-filter-bytes (4096); "),
                "{text}"
            );
        }
        other => panic!("not refused: {other:?}"),
    };
    over(conn.call(&["BF.RESERVE", "r", "0.01", "10000"]));
    over(conn.call(&["BF.INSERT", "i", "CAPACITY", "10000", "ITEMS", "a"]));
    assert_eq!(
        conn.call(&["CONFIG", "SET", "bf.initial-size", "10000"]),
        Frame::ok()
    );
    over(conn.call(&["BF.ADD", "a", "x"]));
    over(conn.call(&["BF.MADD", "a", "x"]));
    assert_eq!(conn.call(&["EXISTS", "r", "i", "a"]), Frame::Int(0));
    // Growth: a scaling filter that fits, grown until the next sub-filter would not.
    assert_eq!(conn.call(&["BF.RESERVE", "g", "0.01", "500"]), Frame::ok());
    let mut index = 0;
    let refused = loop {
        let reply = conn.call(&["BF.ADD", "g", &format!("item:{index}")]);
        if reply.is_error() {
            break reply;
        }
        index += 1;
    };
    let card = conn.call(&["BF.CARD", "g"]);
    let dump = conn.call(&["DUMP", "g"]);
    over(refused);
    over(conn.call(&["BF.ADD", "g", &format!("item:{index}")]));
    let reply = conn
        .call(&["BF.MADD", "g", "item:0", &format!("item:{index}")])
        .items();
    assert_eq!(reply[0], Frame::Int(0));
    over(reply[1].clone());
    assert_eq!(conn.call(&["BF.CARD", "g"]), card);
    assert_eq!(conn.call(&["DUMP", "g"]), dump);
    assert_eq!(
        conn.call(&["BF.INFO", "g", "FILTERS"]),
        Frame::Array(vec![Frame::Int(2)])
    );
}

/// The bytes a refusal by `bf.max-filter-bytes` names.
fn refused_bytes(reply: &Frame, limit: i64) -> i64 {
    let text = match reply {
        Frame::Error(text) => text.clone(),
        other => panic!("not refused: {other:?}"),
    };
    let tail = format!(" bytes, over bf.max-filter-bytes ({limit}); ");
    text.strip_prefix("ERR filter would use ")
        .and_then(|rest| rest.split(&tail).next())
        .and_then(|bytes| bytes.parse().ok())
        .unwrap_or_else(|| panic!("{text}"))
}

#[test]
fn the_size_ceiling_holds_to_the_byte_for_chains_of_many_small_sub_filters() {
    let server = Server::start();
    let mut conn = server.conn();
    for (limit, creation) in [
        (4096, "0.01 1 EXPANSION 1"),
        (4096, "0.01 1 EXPANSION 1 LAYOUT BLOCKED"),
        (100_000, "0.01 2 EXPANSION 1"),
        (100_000, "0.001 3 EXPANSION 1 LAYOUT BLOCKED"),
        (20_000, "0.01 5 WINDOW 3600"),
    ] {
        let set = ["CONFIG", "SET", "bf.max-filter-bytes", &limit.to_string()];
        assert_eq!(conn.call(&set), Frame::ok());
        let key = creation.replace(' ', "-");
        let mut reserve = vec!["BF.RESERVE", &key];
        reserve.extend(creation.split(' '));
        assert_eq!(conn.call(&reserve), Frame::ok());
        let mut index = 0;
        let refused = loop {
            let reply = conn.call(&["BF.ADD", &key, &format!("item:{index}")]);
            if reply.is_error() {
                break reply;
            }
            index += 1;
        };
        let size = common::bf_size(&mut conn, &key);
        // Filled to within one sub-filter of the limit, never past it; the refusal names the
        // size the filter would have had, more than it has.
        assert!(size <= limit, "{creation}: Size {size} over {limit}");
        let bytes = refused_bytes(&refused, limit);
        assert!(
            bytes > limit && bytes > size,
            "{creation}: {bytes}, Size {size}"
        );
        let memory = conn.call(&["MEMORY", "USAGE", &key]).int();
        assert!(
            memory >= size && memory <= size + 128,
            "{creation}: {memory}"
        );
    }
}

/// The error-rate floor: 2^-1020.
const FLOOR: &str = "8.900295434028806e-308";
/// The double just under it.
const BELOW: &str = "8.900295434028805e-308";

#[test]
fn an_error_rate_under_the_floor_is_refused_by_every_command_and_config() {
    let server = Server::start();
    let mut conn = server.conn();
    let bad_error = Frame::error(
        "ERR bad error rate: must be a number from 8.900295434028806e-308 up to, not including, 1",
    );
    for below in [BELOW, "1e-310", "5e-324"] {
        for command in [
            &["BF.RESERVE", "k", below, "100"][..],
            &["BF.RESERVE", "k", below, "100", "NONSCALING"],
            &["BF.INSERT", "k", "ERROR", below, "ITEMS", "a"],
            &["BF.INSERT", "k", "ERROR", below, "NONSCALING", "ITEMS", "a"],
        ] {
            assert_eq!(conn.call(command), bad_error, "{command:?}");
        }
        assert_eq!(
            conn.call(&["CONFIG", "SET", "bf.error-rate", below]),
            Frame::error(&format!(
                "ERR CONFIG SET failed (possibly related to argument 'bf.error-rate') - bad value \
                 '{below}' for bf.error-rate: must be a number from 8.900295434028806e-308 up to, \
                 not including, 1"
            ))
        );
    }
    assert_eq!(conn.call(&["EXISTS", "k"]), Frame::Int(0));
}

#[test]
fn at_the_floor_a_filter_is_made_each_way_and_grows() {
    let server = Server::start();
    let mut conn = server.conn();
    assert_eq!(
        conn.call(&["BF.RESERVE", "k", FLOOR, "1", "EXPANSION", "1"]),
        Frame::ok()
    );
    assert_eq!(
        conn.call(&["BF.MADD", "k", "a", "b"]),
        Frame::Array(vec![Frame::Int(1); 2])
    );
    assert_eq!(
        conn.call(&["BF.INFO", "k", "FILTERS"]),
        Frame::Array(vec![Frame::Int(2)])
    );
    assert_eq!(
        conn.call(&[
            "BF.INSERT",
            "i",
            "ERROR",
            FLOOR,
            "CAPACITY",
            "1",
            "ITEMS",
            "a",
            "b"
        ]),
        Frame::Array(vec![Frame::Int(1); 2])
    );
    assert_eq!(
        conn.call(&["BF.RESERVE", "n", FLOOR, "10", "NONSCALING"]),
        Frame::ok()
    );
    assert_eq!(
        conn.call(&["CONFIG", "SET", "bf.error-rate", FLOOR]),
        Frame::ok()
    );
    assert_eq!(
        conn.call(&["CONFIG", "SET", "bf.initial-size", "1"]),
        Frame::ok()
    );
    assert_eq!(
        conn.call(&["BF.MADD", "auto", "a", "b"]),
        Frame::Array(vec![Frame::Int(1); 2])
    );
    assert_eq!(
        conn.call(&["BF.INFO", "auto", "FILTERS"]),
        Frame::Array(vec![Frame::Int(2)])
    );
}

#[test]
fn as_a_load_argument_the_floor_loads_and_the_double_under_it_does_not() {
    let server = Server::with(Options::default().module_args(&["error-rate", FLOOR]));
    assert_eq!(
        server
            .conn()
            .call(&["CONFIG", "GET", "bf.error-rate"])
            .items()[1]
            .text(),
        FLOOR
    );
    let log = Server::try_with(Options::default().module_args(&["error-rate", BELOW]))
        .err()
        .expect("loaded with an error rate under the floor");
    assert!(
        log.contains(&format!("bad value '{BELOW}' for error-rate")),
        "{log}"
    );
}
