//! Cuckoo filters (`CF.*`) against a real server: every command's replies in RESP2 and RESP3, the
//! strict grammar and RedisBloom's error texts, missing keys and wrong types, duplicates,
//! deletes, growth to the sub-filter limit, and `INFO bf`'s counters. (RedisBloom's own files and
//! dumps: `cuckoo_redisbloom.rs`; persistence and replication: `cuckoo_persistence.rs`.)

mod common;

use common::{Conn, Frame, Server};

fn call(conn: &mut Conn, line: &str) -> Frame {
    conn.call(&line.split(' ').collect::<Vec<_>>())
}

fn ok(conn: &mut Conn, line: &str) {
    assert_eq!(call(conn, line), Frame::ok(), "{line}");
}

fn error(conn: &mut Conn, line: &str, text: &str) {
    assert_eq!(call(conn, line), Frame::error(text), "{line}");
}

/// A boolean as `protocol` answers it.
fn boolean(protocol: u8, value: bool) -> Frame {
    common::boolean(protocol, value)
}

#[test]
fn a_filter_adds_finds_counts_and_forgets_items_in_both_protocols() {
    let server = Server::start();
    for (protocol, mut conn) in server.both() {
        let key = format!("f{protocol}");
        ok(&mut conn, &format!("CF.RESERVE {key} 1000"));
        assert_eq!(
            call(&mut conn, &format!("CF.ADD {key} a")),
            boolean(protocol, true)
        );
        assert_eq!(
            call(&mut conn, &format!("CF.ADD {key} a")),
            boolean(protocol, true)
        );
        assert_eq!(
            call(&mut conn, &format!("CF.ADDNX {key} a")),
            boolean(protocol, false)
        );
        assert_eq!(
            call(&mut conn, &format!("CF.ADDNX {key} b")),
            boolean(protocol, true)
        );
        assert_eq!(
            call(&mut conn, &format!("CF.EXISTS {key} a")),
            boolean(protocol, true)
        );
        assert_eq!(
            call(&mut conn, &format!("CF.EXISTS {key} zz")),
            boolean(protocol, false)
        );
        assert_eq!(
            call(&mut conn, &format!("CF.MEXISTS {key} a zz b")),
            Frame::Array(vec![
                boolean(protocol, true),
                boolean(protocol, false),
                boolean(protocol, true)
            ])
        );
        assert_eq!(call(&mut conn, &format!("CF.COUNT {key} a")), Frame::Int(2));
        assert_eq!(
            call(&mut conn, &format!("CF.DEL {key} a")),
            boolean(protocol, true)
        );
        assert_eq!(call(&mut conn, &format!("CF.COUNT {key} a")), Frame::Int(1));
        assert_eq!(
            call(&mut conn, &format!("CF.DEL {key} a")),
            boolean(protocol, true)
        );
        assert_eq!(
            call(&mut conn, &format!("CF.DEL {key} a")),
            boolean(protocol, false)
        );
        assert_eq!(
            call(&mut conn, &format!("CF.EXISTS {key} a")),
            boolean(protocol, false)
        );
        // CF.INSERT answers booleans in RESP3; CF.INSERTNX stays integers, as RedisBloom 8.
        assert_eq!(
            call(&mut conn, &format!("CF.INSERT {key} ITEMS c d")),
            Frame::Array(vec![boolean(protocol, true), boolean(protocol, true)])
        );
        assert_eq!(
            call(&mut conn, &format!("CF.INSERTNX {key} ITEMS c e")),
            Frame::Array(vec![Frame::Int(0), Frame::Int(1)])
        );
        let fields = [
            ("Size", 1136),
            ("Number of buckets", 512),
            ("Number of filters", 1),
            ("Number of items inserted", 4),
            ("Number of items deleted", 2),
            ("Bucket size", 2),
            ("Expansion rate", 1),
            ("Max iterations", 20),
        ];
        let info = call(&mut conn, &format!("CF.INFO {key}"));
        let expected = if protocol == 3 {
            Frame::Map(
                fields
                    .iter()
                    .map(|(name, value)| (Frame::simple(name), Frame::Int(*value)))
                    .collect(),
            )
        } else {
            Frame::Array(
                fields
                    .iter()
                    .flat_map(|(name, value)| [Frame::simple(name), Frame::Int(*value)])
                    .collect(),
            )
        };
        assert_eq!(info, expected);
        assert_eq!(
            call(&mut conn, &format!("CF.DEBUG {key}")),
            Frame::bulk(
                "bktsize:2 buckets:512 items:4 deletes:2 filters:1 max_iterations:20 expansion:1"
            )
        );
        assert_eq!(
            call(&mut conn, &format!("TYPE {key}")),
            Frame::simple("MBbloomCF")
        );
    }
}

#[test]
fn missing_keys_and_other_types_answer_as_documented() {
    let server = Server::start();
    let mut conn = server.conn();
    assert_eq!(call(&mut conn, "CF.EXISTS none a"), Frame::Int(0));
    assert_eq!(
        call(&mut conn, "CF.MEXISTS none a b"),
        Frame::Array(vec![Frame::Int(0), Frame::Int(0)])
    );
    assert_eq!(call(&mut conn, "CF.COUNT none a"), Frame::Int(0));
    error(&mut conn, "CF.DEL none a", "ERR Not found");
    error(
        &mut conn,
        "CF.COMPACT none",
        "ERR Cuckoo filter was not found",
    );
    error(&mut conn, "CF.INFO none", "ERR not found");
    error(&mut conn, "CF.DEBUG none", "ERR not found");
    error(&mut conn, "CF.SCANDUMP none 0", "ERR not found");
    error(
        &mut conn,
        "CF.INSERT none NOCREATE ITEMS a",
        "ERR not found",
    );
    error(&mut conn, "CF.LOADCHUNK none 9 abcdefgh", "ERR not found");
    error(&mut conn, "CF.LOADCHUNK none 0 abcdefgh", "ERR not found");
    assert_eq!(call(&mut conn, "EXISTS none"), Frame::Int(0));
    // Another type, a Bloom filter's included: WRONGTYPE everywhere (RedisBloom answers 0 for
    // lookups and "Not found" for deletes).
    let wrong = "WRONGTYPE Operation against a key holding the wrong kind of value";
    assert_eq!(call(&mut conn, "SET s x"), Frame::ok());
    assert_eq!(call(&mut conn, "BF.ADD b x"), Frame::Int(1));
    for key in ["s", "b"] {
        for line in [
            "CF.RESERVE {} 100",
            "CF.ADD {} a",
            "CF.ADDNX {} a",
            "CF.INSERT {} ITEMS a",
            "CF.EXISTS {} a",
            "CF.MEXISTS {} a",
            "CF.COUNT {} a",
            "CF.DEL {} a",
            "CF.INFO {}",
            "CF.DEBUG {}",
            "CF.SCANDUMP {} 0",
        ] {
            error(&mut conn, &line.replace("{}", key), wrong);
        }
    }
    ok(&mut conn, "CF.RESERVE c 100");
    // Iterator 0 starts no chunk (RedisBloom answers `Invalid position`).
    error(
        &mut conn,
        "CF.LOADCHUNK c 0 abcdefgh",
        "ERR invalid iterator",
    );
    error(&mut conn, "BF.ADD c x", wrong);
    error(&mut conn, "BF.EXISTS c x", wrong);
    error(&mut conn, "CF.RESERVE c 100", "ERR item exists");
}

#[test]
fn the_grammar_is_strict_and_errors_are_redisbloom_s() {
    let server = Server::start();
    let mut conn = server.conn();
    for (line, text) in [
        ("CF.RESERVE k abc", "ERR Bad capacity"),
        (
            "CF.RESERVE k 3",
            "ERR Capacity must be at least (BucketSize * 2)",
        ),
        (
            "CF.RESERVE k -1",
            "ERR Capacity must be at least (BucketSize * 2)",
        ),
        (
            "CF.RESERVE k 100 MAXITERATIONS x",
            "ERR Couldn't parse MAXITERATIONS",
        ),
        (
            "CF.RESERVE k 100 MAXITERATIONS 0",
            "ERR MAXITERATIONS: value must be an integer between 1 and 65535, inclusive.",
        ),
        (
            "CF.RESERVE k 100 BUCKETSIZE 256",
            "ERR BUCKETSIZE: value must be an integer between 1 and 255, inclusive.",
        ),
        (
            "CF.RESERVE k 100 EXPANSION 32769",
            "ERR EXPANSION: value must be an integer between 0 and 32768, inclusive.",
        ),
        (
            "CF.RESERVE k 100 BUCKETSIZE 60",
            "ERR Capacity must be at least (BucketSize * 2)",
        ),
        // Strict where RedisBloom is loose: no unknown token, no repeat, no value missing (its
        // `CF.RESERVE k 100 x MAXITERATIONS` reads past the arguments and crashes the server).
        ("CF.RESERVE k 100 FOO BAR", "ERR unknown argument 'FOO'"),
        (
            "CF.RESERVE k 100 x MAXITERATIONS",
            "ERR unknown argument 'x'",
        ),
        (
            "CF.RESERVE k 100 MAXITERATIONS",
            "ERR option MAXITERATIONS needs a value",
        ),
        (
            "CF.RESERVE k 100 EXPANSION 2 EXPANSION 4",
            "ERR option EXPANSION given more than once",
        ),
        ("CF.INSERT k CAP 100 ITEMS a", "ERR unknown argument 'CAP'"),
        ("CF.INSERT k nope ITEMS a", "ERR unknown argument 'nope'"),
        (
            "CF.INSERT k CAPACITY 100",
            "ERR ITEMS and at least one item are required",
        ),
        (
            "CF.INSERT k NOCREATE ITEMS",
            "ERR ITEMS and at least one item are required",
        ),
        (
            "CF.INSERT k CAPACITY 1 ITEMS a",
            "ERR Capacity must be at least (BucketSize * 2)",
        ),
        ("CF.INSERT k CAPACITY x ITEMS a", "ERR Bad capacity"),
        ("CF.SCANDUMP k x", "ERR Invalid position"),
        (
            "CF.ADD k",
            "ERR wrong number of arguments for 'cf.add' command",
        ),
        (
            "CF.INFO k x",
            "ERR wrong number of arguments for 'cf.info' command",
        ),
    ] {
        error(&mut conn, line, text);
    }
    assert_eq!(call(&mut conn, "EXISTS k"), Frame::Int(0));
    // Options in any letter case and order; EXPANSION is kept as a power of two.
    ok(
        &mut conn,
        "CF.RESERVE k 100 expansion 3 BucketSize 4 maxIterations 7",
    );
    assert_eq!(
        call(&mut conn, "CF.DEBUG k"),
        Frame::bulk(
            "bktsize:4 buckets:32 items:0 deletes:0 filters:1 max_iterations:7 expansion:4"
        )
    );
    // Everything after ITEMS is an item.
    assert_eq!(
        call(&mut conn, "CF.INSERT k ITEMS NOCREATE CAPACITY"),
        Frame::Array(vec![Frame::Int(1), Frame::Int(1)])
    );
    assert_eq!(call(&mut conn, "CF.EXISTS k NOCREATE"), Frame::Int(1));
}

#[test]
fn an_add_on_a_missing_key_makes_the_default_filter_or_the_asked_capacity() {
    let server = Server::start();
    let mut conn = server.conn();
    assert_eq!(call(&mut conn, "CF.ADD a x"), Frame::Int(1));
    assert_eq!(
        call(&mut conn, "CF.DEBUG a"),
        Frame::bulk(
            "bktsize:2 buckets:512 items:1 deletes:0 filters:1 max_iterations:20 expansion:1"
        )
    );
    assert_eq!(
        call(&mut conn, "CF.INSERT i CAPACITY 100 ITEMS x y"),
        Frame::Array(vec![Frame::Int(1), Frame::Int(1)])
    );
    assert_eq!(
        call(&mut conn, "CF.DEBUG i"),
        Frame::bulk(
            "bktsize:2 buckets:64 items:2 deletes:0 filters:1 max_iterations:20 expansion:1"
        )
    );
    // The configs set what CF.ADD makes.
    for (name, value) in [
        ("bf.cf-initial-size", "40"),
        ("bf.cf-bucket-size", "4"),
        ("bf.cf-max-iterations", "9"),
        ("bf.cf-expansion-factor", "3"),
    ] {
        assert_eq!(conn.call(&["CONFIG", "SET", name, value]), Frame::ok());
    }
    assert_eq!(call(&mut conn, "CF.ADD b x"), Frame::Int(1));
    assert_eq!(
        call(&mut conn, "CF.DEBUG b"),
        Frame::bulk(
            "bktsize:4 buckets:16 items:1 deletes:0 filters:1 max_iterations:9 expansion:4"
        )
    );
}

#[test]
fn a_full_filter_of_expansion_0_refuses_items_and_changes_nothing() {
    let server = Server::start();
    let mut conn = server.conn();
    ok(&mut conn, "CF.RESERVE full 4 EXPANSION 0");
    let mut refused = 0;
    for i in 0..8 {
        match call(&mut conn, &format!("CF.ADD full f{i}")) {
            Frame::Int(1) => {}
            Frame::Error(text) => {
                assert_eq!(text, "ERR Filter is full");
                refused += 1;
            }
            other => panic!("{other:?}"),
        }
    }
    assert!(refused > 0);
    let before = call(&mut conn, "CF.SCANDUMP full 1");
    assert_eq!(
        call(&mut conn, "CF.INSERT full ITEMS z1 z2"),
        Frame::Array(vec![Frame::Int(-1), Frame::Int(-1)])
    );
    assert_eq!(call(&mut conn, "CF.SCANDUMP full 1"), before);
}

#[test]
fn the_sub_filter_limit_is_checked_before_every_item() {
    let server = Server::start();
    let mut conn = server.conn();
    assert_eq!(
        conn.call(&["CONFIG", "SET", "bf.cf-max-expansions", "4"]),
        Frame::ok()
    );
    ok(
        &mut conn,
        "CF.RESERVE m 2 BUCKETSIZE 1 MAXITERATIONS 1 EXPANSION 1",
    );
    let mut added = 0;
    let refused = loop {
        let reply = call(&mut conn, &format!("CF.ADD m i{added}"));
        if reply.is_error() {
            break reply;
        }
        added += 1;
    };
    assert_eq!(refused, Frame::error("ERR Maximum expansions reached"));
    let filters = |conn: &mut Conn| call(conn, "CF.DEBUG m").text();
    assert!(
        filters(&mut conn).contains(" filters:4 "),
        "{}",
        filters(&mut conn)
    );
    // A batch cannot pass the limit either (RedisBloom checks once per command): at the limit,
    // one error; below it, items past the limit answer -1.
    error(
        &mut conn,
        "CF.INSERT m ITEMS a b",
        "ERR Maximum expansions reached",
    );
    ok(
        &mut conn,
        "CF.RESERVE n 2 BUCKETSIZE 1 MAXITERATIONS 1 EXPANSION 1",
    );
    let items: Vec<String> = (0..40).map(|i| format!("j{i}")).collect();
    let mut insert = vec!["CF.INSERT".to_string(), "n".into(), "ITEMS".into()];
    insert.extend(items);
    let answers = conn.call(&insert).items();
    assert!(answers.contains(&Frame::Int(-1)), "{answers:?}");
    assert!(conn.call(&["CF.DEBUG", "n"]).text().contains(" filters:4 "));
}

#[test]
fn adding_one_item_again_and_again_cannot_grow_a_filter() {
    let server = Server::start();
    let mut conn = server.conn();
    ok(&mut conn, "CF.RESERVE d 1024 EXPANSION 2");
    // Its two buckets hold four copies; the fifth would need a new sub-filter every time
    // (RedisBloom grew to gigabytes that way).
    for _ in 0..4 {
        assert_eq!(call(&mut conn, "CF.ADD d same"), Frame::Int(1));
    }
    let text = "ERR item added too many times: its buckets hold nothing but copies of it \
                (delete some, or add it with CF.ADDNX)";
    for _ in 0..100 {
        error(&mut conn, "CF.ADD d same", text);
    }
    assert_eq!(call(&mut conn, "CF.COUNT d same"), Frame::Int(4));
    assert!(call(&mut conn, "CF.DEBUG d").text().contains(" filters:1 "));
    assert_eq!(call(&mut conn, "CF.ADDNX d same"), Frame::Int(0));
}

#[test]
fn info_bf_counts_cuckoo_filters_their_bytes_and_their_items() {
    let server = Server::start();
    let mut conn = server.conn();
    let field = |name: &str| common::info_bf(&server, &format!("bf_{name}"));
    assert_eq!(field("cf_filters"), 0);
    ok(&mut conn, "CF.RESERVE a 1000");
    assert_eq!(call(&mut conn, "CF.ADD b x"), Frame::Int(1));
    assert_eq!(field("cf_filters"), 2);
    assert_eq!(field("cf_bytes"), 2 * 1136);
    call(&mut conn, "CF.MEXISTS a x y z");
    call(&mut conn, "CF.DEL b x");
    assert_eq!(field("cf_adds"), 1);
    assert_eq!(field("cf_lookups"), 3);
    assert_eq!(field("cf_deletes"), 1);
    assert_eq!(call(&mut conn, "DEL a b"), Frame::Int(2));
    assert_eq!(field("cf_filters"), 0);
    assert_eq!(field("cf_bytes"), 0);
    assert_eq!(field("filters"), 0);
}

/// `bf_cf_bytes` against the filter's `Size`, as single adds grow it and single deletes let a
/// compaction free its newer sub-filters (the two commands size a filter only when it changes
/// shape, not on every item).
#[test]
fn info_bf_follows_a_filter_grown_by_adds_and_shrunk_by_deletes() {
    let server = Server::start();
    let mut conn = server.conn();
    let bytes = |conn: &mut Conn| -> u64 {
        let info = call(conn, "INFO bf").text();
        let field = info
            .lines()
            .find_map(|line| line.strip_prefix("bf_cf_bytes:"));
        field.expect("bf_cf_bytes").trim().parse().unwrap()
    };
    let shape = |conn: &mut Conn| {
        let info = call(conn, "CF.INFO g").items();
        (info[1].int() as u64, info[5].int())
    };
    // Sub-filters of 64, 128, 256... buckets: a size taken from the wrong sub-filters is wrong.
    ok(&mut conn, "CF.RESERVE g 64 BUCKETSIZE 2 EXPANSION 2");
    let (mut grown, mut added) = (0, Vec::new());
    for i in 0..400 {
        // CF.ADDNX skips an item the filter seems to hold already (a false positive).
        let verb = if i % 2 == 0 { "CF.ADD" } else { "CF.ADDNX" };
        if call(&mut conn, &format!("{verb} g item:{i}")) == Frame::Int(1) {
            added.push(i);
        }
        let (size, filters) = shape(&mut conn);
        assert_eq!(bytes(&mut conn), size, "after adding item:{i}");
        grown = grown.max(filters);
    }
    assert!(
        grown >= 3 && added.len() > 390,
        "{grown} sub-filters, {added:?}"
    );
    let mut fewest = grown;
    for &i in added.iter().rev() {
        assert_eq!(
            call(&mut conn, &format!("CF.DEL g item:{i}")),
            Frame::Int(1)
        );
        let (size, filters) = shape(&mut conn);
        assert_eq!(bytes(&mut conn), size, "after deleting item:{i}");
        fewest = fewest.min(filters);
    }
    assert_eq!(fewest, 1, "deletes freed the newer sub-filters");
    assert_eq!(call(&mut conn, "DEL g"), Frame::Int(1));
    assert_eq!(bytes(&mut conn), 0);
}

/// A single add that would grow a filter past what `maxmemory` leaves is refused with the bytes
/// the growth needs: the filter's size with the new sub-filter less its size before the add.
#[test]
fn a_growth_maxmemory_refuses_names_the_bytes_it_needs() {
    let server = Server::start();
    let mut conn = server.conn();
    ok(&mut conn, "CF.RESERVE m 65536 BUCKETSIZE 4 EXPANSION 4");
    let size = |conn: &mut Conn| call(conn, "CF.INFO m").items()[1].int();
    // Three fifths full first, in batches (no add needs a new sub-filter yet), then one add at
    // a time: nothing is sent after the one refused.
    for batch in 0..40 {
        let items: Vec<String> = (batch * 1000..(batch + 1) * 1000)
            .map(|i| format!("item:{i}"))
            .collect();
        let mut insert = vec!["CF.INSERT", "m", "NOCREATE", "ITEMS"];
        insert.extend(items.iter().map(String::as_str));
        assert_eq!(conn.call(&insert).items().len(), 1000);
    }
    let before = size(&mut conn);
    let used = common::used_memory(&mut conn);
    // 192 KiB more than the server uses with the filter: room for its own buffers, not for the
    // next sub-filter (256 KiB of buckets).
    ok(
        &mut conn,
        &format!("CONFIG SET maxmemory {}", used + (192 << 10)),
    );
    ok(&mut conn, "CONFIG SET maxmemory-policy noeviction");
    let mut refused = None;
    for i in 40_000..200_000 {
        let item = format!("item:{i}");
        if let Frame::Error(text) = call(&mut conn, &format!("CF.ADD m {item}")) {
            refused = Some((item, text));
            break;
        }
    }
    let (item, text) = refused.expect("an add refused for maxmemory");
    assert_eq!(
        size(&mut conn),
        before,
        "a refused add leaves the filter as it was"
    );
    ok(&mut conn, "CONFIG SET maxmemory 0");
    assert_eq!(call(&mut conn, &format!("CF.ADD m {item}")), Frame::Int(1));
    let grown = size(&mut conn);
    assert!(
        grown > before + (192 << 10),
        "{before} -> {grown} after {text:?}"
    );
    let needed = format!(
        "OOM filter would need {} more bytes, more than maxmemory leaves",
        grown - before
    );
    assert!(text.starts_with(&needed), "{text:?}, expected {needed:?}");
}

#[test]
fn writes_fire_keyspace_events() {
    let server = Server::start();
    let mut conn = server.conn();
    assert_eq!(
        conn.call(&["CONFIG", "SET", "notify-keyspace-events", "KEd"]),
        Frame::ok()
    );
    let mut subscriber = server.conn();
    subscriber.call(&["PSUBSCRIBE", "__keyspace@0__:*"]);
    ok(&mut conn, "CF.RESERVE e 100");
    call(&mut conn, "CF.ADD e x");
    call(&mut conn, "CF.INSERT e ITEMS y");
    call(&mut conn, "CF.DEL e x");
    call(&mut conn, "CF.COMPACT e");
    for event in ["cf.reserve", "cf.add", "cf.add", "cf.del", "cf.compact"] {
        let message = subscriber.read().items();
        assert_eq!(message[3], Frame::bulk(event));
    }
}
