//! The rest of the dialect: BF.MADD, BF.MEXISTS, BF.INSERT, BF.INFO, BF.CARD, BF.DEBUG, scaling
//! options visible through them, and the bf.* configs, in RESP2 and RESP3.

mod common;

use common::{boolean, booleans, debug_lines as debug, fill, Conn, Frame, Options, Server};

fn command<'a>(head: &[&'a str], rest: &[&'a str]) -> Vec<&'a str> {
    head.iter().chain(rest).copied().collect()
}

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
fn wrong_types_and_argument_counts_of_the_new_commands() {
    let server = Server::start();
    let mut conn = server.conn();
    conn.call(&["SET", "s", "v"]);
    let wrongtype =
        Frame::error("WRONGTYPE Operation against a key holding the wrong kind of value");
    for cmd in [
        &["BF.MADD", "s", "a"][..],
        &["BF.MEXISTS", "s", "a"],
        &["BF.INSERT", "s", "ITEMS", "a"],
        &["BF.INSERT", "s", "NOCREATE", "ITEMS", "a"],
        &["BF.INFO", "s"],
        &["BF.INFO", "s", "SIZE"],
        &["BF.CARD", "s"],
        &["BF.DEBUG", "s"],
    ] {
        assert_eq!(conn.call(cmd), wrongtype, "{cmd:?}");
    }
    // The command's name as registered (lower case, as RedisBloom's), whatever the client typed.
    let arity = |name: &str| {
        Frame::error(&format!(
            "ERR wrong number of arguments for '{}' command",
            name.to_lowercase()
        ))
    };
    assert_eq!(conn.call(&["BF.MADD", "k"]), arity("BF.MADD"));
    assert_eq!(conn.call(&["BF.MEXISTS", "k"]), arity("BF.MEXISTS"));
    assert_eq!(conn.call(&["BF.INSERT", "k", "ITEMS"]), arity("BF.INSERT"));
    assert_eq!(conn.call(&["BF.INFO"]), arity("BF.INFO"));
    assert_eq!(conn.call(&["BF.CARD"]), arity("BF.CARD"));
    assert_eq!(conn.call(&["BF.CARD", "a", "b"]), arity("BF.CARD"));
    assert_eq!(conn.call(&["BF.DEBUG", "a", "b"]), arity("BF.DEBUG"));
}

#[test]
fn configs_read_and_write_and_refuse_bad_values() {
    let server = Server::start();
    let mut conn = server.conn();
    let get = |conn: &mut Conn, name: &str| conn.call(&["CONFIG", "GET", name]).items()[1].text();
    assert_eq!(get(&mut conn, "bf.error-rate"), "0.01");
    assert_eq!(get(&mut conn, "bf.initial-size"), "100");
    assert_eq!(get(&mut conn, "bf.expansion-factor"), "2");
    assert_eq!(get(&mut conn, "bf.max-filter-bytes"), "1073741824");
    let refused = |name: &str, why: &str| {
        Frame::error(&format!(
            "ERR CONFIG SET failed (possibly related to argument '{name}') - {why}"
        ))
    };
    let cases = [
        (
            "bf.error-rate",
            "1",
            "bad value '1' for bf.error-rate: must be a number from 8.900295434028806e-308 up to, not including, 1",
        ),
        (
            "bf.error-rate",
            "nan",
            "bad value 'nan' for bf.error-rate: must be a number from 8.900295434028806e-308 up to, not including, 1",
        ),
        (
            "bf.initial-size",
            "0",
            "argument must be between 1 and 9223372036854775807 inclusive",
        ),
        (
            "bf.expansion-factor",
            "32769",
            "argument must be between 1 and 32768 inclusive",
        ),
        (
            "bf.max-filter-bytes",
            "1000",
            "argument must be between 1024 and 9223372036854775807 inclusive",
        ),
    ];
    for (name, value, why) in cases {
        assert_eq!(
            conn.call(&["CONFIG", "SET", name, value]),
            refused(name, why),
            "{name} {value}"
        );
    }
    assert_eq!(get(&mut conn, "bf.error-rate"), "0.01");
    assert_eq!(get(&mut conn, "bf.max-filter-bytes"), "1073741824");
    for (name, value) in [
        ("bf.error-rate", "0.001"),
        ("bf.initial-size", "1000"),
        ("bf.expansion-factor", "4"),
        ("bf.max-filter-bytes", "64mb"),
    ] {
        assert_eq!(conn.call(&["CONFIG", "SET", name, value]), Frame::ok());
    }
    assert_eq!(get(&mut conn, "bf.error-rate"), "0.001");
    assert_eq!(get(&mut conn, "bf.max-filter-bytes"), "67108864");
    // New filters take the new defaults: BF.ADD, BF.INSERT without options, BF.RESERVE's expansion.
    conn.call(&["BF.ADD", "auto", "x"]);
    assert_eq!(
        debug(&mut conn, "auto")[1],
        "bytes:1984 bits:15872 hashes:11 hashwidth:64 capacity:1000 size:1 ratio:0.0005"
    );
    assert_eq!(
        conn.call(&["BF.INFO", "auto", "EXPANSION"]),
        Frame::Array(vec![Frame::Int(4)])
    );
    conn.call(&["BF.INSERT", "inserted", "ITEMS", "x"]);
    assert_eq!(debug(&mut conn, "inserted"), debug(&mut conn, "auto"));
    conn.call(&["BF.RESERVE", "reserved", "0.01", "10"]);
    assert_eq!(
        conn.call(&["BF.INFO", "reserved", "EXPANSION"]),
        Frame::Array(vec![Frame::Int(4)])
    );
}

#[test]
fn load_arguments_set_the_configs_in_both_dialects() {
    let options = Options::default().module_args(&[
        "error-rate",
        "0.001",
        "initial-size",
        "1000",
        "expansion-factor",
        "4",
        "max-filter-bytes",
        "1mb",
    ]);
    let server = Server::with(options);
    let mut conn = server.conn();
    let get = |conn: &mut Conn, name: &str| conn.call(&["CONFIG", "GET", name]).items()[1].text();
    assert_eq!(get(&mut conn, "bf.error-rate"), "0.001");
    assert_eq!(get(&mut conn, "bf.initial-size"), "1000");
    assert_eq!(get(&mut conn, "bf.expansion-factor"), "4");
    assert_eq!(get(&mut conn, "bf.max-filter-bytes"), "1048576");
    drop(server);
    let server =
        Server::with(Options::default().module_args(&["ERROR_RATE", "0.05", "INITIAL_SIZE", "7"]));
    let mut conn = server.conn();
    assert_eq!(get(&mut conn, "bf.error-rate"), "0.05");
    assert_eq!(get(&mut conn, "bf.initial-size"), "7");
    conn.call(&["BF.ADD", "k", "x"]);
    assert_eq!(
        debug(&mut conn, "k")[1],
        "bytes:8 bits:64 hashes:6 hashwidth:64 capacity:7 size:1 ratio:0.025"
    );
}

#[test]
fn config_directives_after_loadmodule_apply_too() {
    let server = Server::with(Options::default().config("bf.initial-size", "500"));
    let mut conn = server.conn();
    assert_eq!(
        conn.call(&["CONFIG", "GET", "bf.initial-size"]).items()[1].text(),
        "500"
    );
}

#[test]
fn a_bad_load_argument_stops_the_module_loading_with_a_reason() {
    // Logged once, at warning level, naming the argument as it was typed; the server puts the
    // module's name in front.
    let cases: [(&[&str], &str); 5] = [
        (&["ERROR_RATE", "2"], "# <bf> refusing to load: bad value '2' for ERROR_RATE: must be a number from 8.900295434028806e-308 up to, not including, 1"),
        (&["error-rate", "2"], "# <bf> refusing to load: bad value '2' for error-rate: must be a number from 8.900295434028806e-308 up to, not including, 1"),
        (&["INITIAL_SIZE", "0"], "# <bf> refusing to load: bad value '0' for INITIAL_SIZE: must be a whole number from 1 to 9223372036854775807"),
        (&["colour", "blue"], "# <bf> refusing to load: unknown module argument 'colour'"),
        (&["expansion-factor"], "# <bf> refusing to load: module argument 'expansion-factor' needs a value"),
    ];
    for (args, line) in cases {
        let log = match Server::try_with(Options::default().module_args(args)) {
            Ok(_) => panic!("loaded with {args:?}"),
            Err(log) => log,
        };
        assert!(log.contains(line), "{args:?}: {log}");
        assert_eq!(log.matches("refusing to load").count(), 1, "{log}");
        assert!(!log.contains("bf: "), "{log}");
    }
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
                    && text.ends_with(" bytes, over bf.max-filter-bytes (4096)"),
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
        "ERR filter cannot grow: the next sub-filter's capacity or error rate is out of range",
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

#[test]
fn debug_answers_the_same_lines_in_resp3() {
    let server = Server::start();
    let mut conn = server.conn();
    conn.call(&["BF.MADD", "k", "a", "b"]);
    let lines: Vec<Frame> = debug(&mut conn, "k").into_iter().map(Frame::bulk).collect();
    assert_eq!(server.conn3().call(&["BF.DEBUG", "k"]), Frame::Array(lines));
}

#[test]
fn config_set_refuses_partial_numbers() {
    let server = Server::start();
    let mut conn = server.conn();
    assert_eq!(
        conn.call(&["CONFIG", "SET", "bf.error-rate", "0.01abc"]),
        Frame::error("ERR CONFIG SET failed (possibly related to argument 'bf.error-rate') - bad value '0.01abc' for bf.error-rate: must be a number from 8.900295434028806e-308 up to, not including, 1")
    );
    assert_eq!(
        conn.call(&["CONFIG", "SET", "bf.error-rate", "1e-20"]),
        Frame::ok()
    );
    assert_eq!(
        conn.call(&["CONFIG", "GET", "bf.error-rate"]).items()[1],
        Frame::bulk("1e-20")
    );
}

#[test]
fn load_arguments_take_the_bf_prefix_and_refuse_a_tiny_ceiling() {
    let server = Server::with(Options::default().module_args(&[
        "bf.initial-size",
        "42",
        "BF.MAX-FILTER-BYTES",
        "2kb",
    ]));
    let mut conn = server.conn();
    assert_eq!(
        conn.call(&["CONFIG", "GET", "bf.initial-size"]).items()[1],
        Frame::bulk("42")
    );
    assert_eq!(
        conn.call(&["CONFIG", "GET", "bf.max-filter-bytes"]).items()[1],
        Frame::bulk("2048")
    );
    drop(server);
    let log = match Server::try_with(Options::default().module_args(&["max-filter-bytes", "1000"]))
    {
        Ok(_) => panic!("loaded with a 1000-byte ceiling"),
        Err(log) => log,
    };
    assert!(log.contains("<bf> refusing to load: bad value '1000' for max-filter-bytes: must be a size of at least 1024 bytes (units kb, mb, gb allowed)"), "{log}");
}

#[test]
fn a_percent_sign_in_a_load_argument_is_logged_as_text() {
    let log = match Server::try_with(Options::default().module_args(&["error-rate", "%s%s%s%n%n"]))
    {
        Ok(_) => panic!("loaded"),
        Err(log) => log,
    };
    assert!(
        log.contains("bad value '%s%s%s%n%n' for error-rate"),
        "{log}"
    );
}

#[test]
fn every_accepted_error_rate_makes_a_filter_that_can_grow_and_the_floor_is_checked_everywhere() {
    const FLOOR: &str = "8.900295434028806e-308"; // 2^-1020
    const BELOW: &str = "8.900295434028805e-308"; // the double just under it
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
    // At the floor: created (each way) and grown.
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
    // As a load argument: the floor loads, the double under it does not.
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
