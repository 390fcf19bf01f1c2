//! The blocked layout (`LAYOUT CLASSIC|BLOCKED`, the `bf.layout` config) against a real server:
//! the option's grammar and refusals, the config and its load argument, BF.INFO's Layout field
//! and BF.DEBUG's per sub-filter layout, the false-positive rate of full blocked filters measured
//! from outside, and every copy of a blocked filter (RDB, AOF rewrite, DUMP/RESTORE, COPY,
//! SCANDUMP/LOADCHUNK, replication) keeping its layout and its bits.

mod common;

use common::{
    debug_lines, digest, error_text, loadchunk, names, pipeline, scandump, Conn, Frame, Options,
    Server,
};

/// A command written as one line, its words split at spaces.
fn call(conn: &mut Conn, line: &str) -> Frame {
    conn.call(&line.split(' ').collect::<Vec<_>>())
}

fn ok(conn: &mut Conn, line: &str) {
    assert_eq!(call(conn, line), Frame::ok(), "{line}");
}

/// `BF.INFO key LAYOUT` (RESP2): its one value, a bulk string.
fn layout(conn: &mut Conn, key: &str) -> String {
    let reply = conn.call(&["BF.INFO", key, "LAYOUT"]).items();
    assert_eq!(reply.len(), 1, "{key}: {reply:?}");
    assert!(matches!(reply[0], Frame::Bulk(_)), "{key}: {reply:?}");
    reply[0].text()
}

/// `command key` followed by `items`, a thousand at a time, as one pipeline: the replies.
fn batches(conn: &mut Conn, command: &str, key: &str, items: &[String]) -> Vec<Frame> {
    let commands: Vec<Vec<&str>> = items
        .chunks(1000)
        .map(|chunk| {
            let mut words = vec![command, key];
            words.extend(chunk.iter().map(String::as_str));
            words
        })
        .collect();
    pipeline(conn, &commands)
        .into_iter()
        .flat_map(|reply| reply.items())
        .collect()
}

/// BF.MADD of `items` into `key`, in pipelined batches; every answer must be 0 or 1.
fn add(conn: &mut Conn, key: &str, items: &[String]) {
    for reply in batches(conn, "BF.MADD", key, items) {
        assert!(matches!(reply, Frame::Int(0 | 1)), "{key}: {reply:?}");
    }
}

/// How many of `items` BF.MEXISTS says `key` holds.
fn count_present(conn: &mut Conn, key: &str, items: &[String]) -> usize {
    batches(conn, "BF.MEXISTS", key, items)
        .iter()
        .filter(|reply| **reply == Frame::Int(1))
        .count()
}

/// Runs a command that creates the filter named by its second word; that filter's layout.
fn create(conn: &mut Conn, command: &str) -> String {
    let reply = call(conn, command);
    assert!(!reply.is_error(), "{command}: {reply:?}");
    layout(conn, command.split(' ').nth(1).unwrap())
}

#[test]
fn layout_is_taken_in_any_position_and_letter_case() {
    let server = Server::start();
    let mut conn = server.conn();
    let blocked = [
        "BF.RESERVE r1 0.01 100 LAYOUT BLOCKED",
        "BF.RESERVE r2 0.01 100 layout Blocked EXPANSION 3",
        "BF.RESERVE r3 0.01 100 NONSCALING LaYoUt blocked",
        "BF.RESERVE r4 0.01 100 WINDOW 60 LAYOUT BLOCKED EXPANSION 2",
        "BF.INSERT i1 LAYOUT BLOCKED CAPACITY 50 ITEMS x",
        "BF.INSERT i2 CAPACITY 50 layout Blocked ERROR 0.05 ITEMS x",
        "BF.INSERT i3 ERROR 0.05 NONSCALING LAYOUT BLOCKED ITEMS x",
    ];
    for command in blocked {
        assert_eq!(create(&mut conn, command), "blocked", "{command}");
    }
    let classic = [
        "BF.RESERVE r5 0.01 100 LAYOUT classic",
        "BF.INSERT i4 WINDOW 60 LAYOUT CLASSIC ITEMS x",
    ];
    for command in classic {
        assert_eq!(create(&mut conn, command), "classic", "{command}");
    }
    // The other options still count, before and after LAYOUT.
    let one = |value| Frame::Array(vec![value]);
    assert_eq!(call(&mut conn, "BF.INFO r2 EXPANSION"), one(Frame::Int(3)));
    let nonscaling = call(&mut conn, "BF.INFO r3 EXPANSION");
    assert_eq!(nonscaling, one(Frame::NullBulk));
    assert_eq!(call(&mut conn, "BF.INFO r4 WINDOW"), one(Frame::Int(60)));
    assert_eq!(call(&mut conn, "BF.INFO i1 CAPACITY"), one(Frame::Int(50)));
    assert!(debug_lines(&mut conn, "i2")[1].contains(" ratio:0.025 "));
    // Past ITEMS, LAYOUT is an item.
    assert_eq!(
        call(&mut conn, "BF.INSERT i5 ITEMS LAYOUT BLOCKED"),
        Frame::Array(vec![Frame::Int(1), Frame::Int(1)])
    );
    assert_eq!(layout(&mut conn, "i5"), "classic");
    assert_eq!(call(&mut conn, "BF.EXISTS i5 LAYOUT"), Frame::Int(1));
}

#[test]
fn a_bad_repeated_or_missing_layout_is_refused_and_leaves_no_key() {
    let server = Server::start();
    let mut conn = server.conn();
    let bad = [
        "BF.RESERVE k 0.01 100 LAYOUT foo",
        "BF.RESERVE k 0.01 100 LAYOUT BLOCK",
        "BF.INSERT k LAYOUT blocky ITEMS x",
        // The word after LAYOUT is its value, even ITEMS.
        "BF.INSERT k LAYOUT ITEMS x",
    ];
    let twice = [
        "BF.RESERVE k 0.01 100 LAYOUT BLOCKED LAYOUT BLOCKED",
        "BF.RESERVE k 0.01 100 layout classic NONSCALING LAYOUT blocked",
        "BF.INSERT k LAYOUT CLASSIC CAPACITY 9 layout CLASSIC ITEMS x",
    ];
    let missing = [
        "BF.RESERVE k 0.01 100 LAYOUT",
        "BF.INSERT k CAPACITY 10 LAYOUT",
        "BF.INSERT k NOCREATE LAYOUT",
    ];
    let cases: [(&str, &[&str]); 3] = [
        ("ERR bad layout: must be CLASSIC or BLOCKED", &bad),
        ("ERR option LAYOUT given more than once", &twice),
        ("ERR option LAYOUT needs a value", &missing),
    ];
    for (error, commands) in cases {
        for command in commands {
            assert_eq!(call(&mut conn, command), Frame::error(error), "{command}");
            assert_eq!(call(&mut conn, "EXISTS k"), Frame::Int(0), "{command}");
        }
    }
    let empty = ["BF.RESERVE", "k", "0.01", "100", "LAYOUT", ""];
    assert_eq!(conn.call(&empty), Frame::error(cases[0].0));
    assert_eq!(call(&mut conn, "DBSIZE"), Frame::Int(0));
}

#[test]
fn layout_on_an_existing_filter_is_ignored_like_capacity() {
    let server = Server::start();
    let mut conn = server.conn();
    for (keys, layout) in [(["c", "c:same"], "CLASSIC"), (["b", "b:same"], "BLOCKED")] {
        for key in keys {
            let reserve = format!("BF.RESERVE {key} 0.01 100 LAYOUT {layout}");
            ok(&mut conn, &reserve);
        }
    }
    let inserts = [
        "BF.INSERT c LAYOUT BLOCKED ITEMS z",
        "BF.INSERT c:same ITEMS z",
        "BF.INSERT b LAYOUT CLASSIC ITEMS z",
        "BF.INSERT b:same ITEMS z",
    ];
    for command in inserts {
        let reply = call(&mut conn, command);
        assert_eq!(reply, Frame::Array(vec![Frame::Int(1)]), "{command}");
    }
    assert_eq!(layout(&mut conn, "c"), "classic");
    assert_eq!(layout(&mut conn, "b"), "blocked");
    assert_eq!(digest(&mut conn, "c"), digest(&mut conn, "c:same"));
    assert_eq!(digest(&mut conn, "b"), digest(&mut conn, "b:same"));
    assert_eq!(
        call(&mut conn, "BF.RESERVE c 0.01 100 LAYOUT BLOCKED"),
        Frame::error("ERR item exists")
    );
}

/// Asserts that CONFIG GET answers `value` for `bf.layout`.
fn assert_config(conn: &mut Conn, value: &str) {
    let expected = Frame::Array(vec![Frame::bulk("bf.layout"), Frame::bulk(value)]);
    assert_eq!(call(conn, "CONFIG GET bf.layout"), expected);
}

#[test]
fn bf_layout_defaults_to_classic_and_refuses_a_bad_value() {
    let server = Server::start();
    let mut conn = server.conn();
    assert_config(&mut conn, "classic");
    for value in ["bogus", "", "1", "blocked classic"] {
        let refused = error_text(&conn.call(&["CONFIG", "SET", "bf.layout", value]));
        let starts = refused.starts_with("ERR CONFIG SET failed");
        assert!(
            starts && refused.contains("classic, blocked"),
            "{value}: {refused}"
        );
    }
    assert_config(&mut conn, "classic");
    ok(&mut conn, "CONFIG SET bf.layout BLOCKED");
    assert_config(&mut conn, "blocked");
    ok(&mut conn, "CONFIG SET bf.layout Classic");
    assert_config(&mut conn, "classic");
}

#[test]
fn bf_layout_blocked_makes_new_filters_blocked_unless_told_classic() {
    let server = Server::start();
    let mut conn = server.conn();
    call(&mut conn, "BF.ADD before x");
    ok(&mut conn, "CONFIG SET bf.layout BLOCKED");
    let creations = [
        "BF.ADD add x",
        "BF.MADD madd x y",
        "BF.INSERT insert ITEMS x",
        "BF.INSERT insert-options CAPACITY 10 ERROR 0.001 ITEMS x",
        "BF.INSERT windowed WINDOW 60 ITEMS x",
        "BF.RESERVE reserve 0.01 100",
        "BF.RESERVE reserve-windowed 0.01 100 WINDOW 60",
        // An explicit LAYOUT CLASSIC wins over the config.
        "BF.RESERVE explicit 0.01 100 LAYOUT CLASSIC",
        "BF.INSERT explicit-insert LAYOUT classic ITEMS x",
    ];
    for command in creations {
        assert!(!call(&mut conn, command).is_error(), "{command}");
    }
    for key in "add madd insert insert-options windowed reserve reserve-windowed".split(' ') {
        assert_eq!(layout(&mut conn, key), "blocked", "{key}");
    }
    // Filters made before the change stay classic.
    for key in ["before", "explicit", "explicit-insert"] {
        assert_eq!(layout(&mut conn, key), "classic", "{key}");
    }
    // BF.ADD makes the filter BF.RESERVE with LAYOUT BLOCKED and the defaults makes.
    ok(&mut conn, "BF.RESERVE same 0.01 100 LAYOUT BLOCKED");
    call(&mut conn, "BF.ADD same x");
    assert_eq!(digest(&mut conn, "same"), digest(&mut conn, "add"));
}

#[test]
fn the_layout_load_argument_sets_bf_layout() {
    for args in [["layout", "blocked"], ["bf.layout", "BLOCKED"]] {
        let server = Server::with(Options::default().module_args(&args));
        let mut conn = server.conn();
        assert_config(&mut conn, "blocked");
        call(&mut conn, "BF.ADD k x");
        assert_eq!(layout(&mut conn, "k"), "blocked", "{args:?}");
    }
    // And as a config directive.
    let server = Server::with(Options::default().config("bf.layout", "blocked"));
    assert_config(&mut server.conn(), "blocked");
}

#[test]
fn a_bad_layout_load_argument_stops_the_module_loading() {
    let started = Server::try_with(Options::default().module_args(&["layout", "foo"]));
    let log = started.err().expect("loaded with layout foo");
    let line = "# <bf> refusing to load: bad value 'foo' for layout: must be classic or blocked";
    assert!(log.contains(line), "{log}");
}

/// BF.INFO's whole reply from its fields: a flat array in RESP2, a map in RESP3.
fn info_reply(protocol: u8, fields: &[(&str, Frame)]) -> Frame {
    let pairs = fields
        .iter()
        .map(|(name, value)| (Frame::simple(name), value.clone()));
    if protocol == 2 {
        Frame::Array(pairs.flat_map(|(name, value)| [name, value]).collect())
    } else {
        Frame::Map(pairs.collect())
    }
}

/// Asserts BF.INFO's reply for one field (`LAYOUT`, `WINDOW`, in any letter case): its value
/// alone in RESP2, a map of its name (`Layout`, `Window`) to its value in RESP3.
fn assert_alone(conn: &mut Conn, protocol: u8, key: &str, field: &str, value: &str) {
    let value = value
        .parse()
        .map_or_else(|_| Frame::bulk(value), Frame::Int);
    let name = field[..1].to_uppercase() + &field[1..].to_lowercase();
    let expected = match protocol {
        2 => Frame::Array(vec![value]),
        _ => Frame::Map(vec![(Frame::simple(&name), value)]),
    };
    assert_eq!(
        conn.call(&["BF.INFO", key, field]),
        expected,
        "{key} {field}"
    );
}

/// BF.INFO's first five fields: RedisBloom's.
fn five_fields(conn: &mut Conn, key: &str, numbers: [i64; 3]) -> Vec<(&'static str, Frame)> {
    let [capacity, filters, expansion] = numbers;
    let size = conn.call(&["BF.INFO", key, "SIZE"]).items()[0].clone();
    vec![
        ("Capacity", Frame::Int(capacity)),
        ("Size", size),
        ("Number of filters", Frame::Int(filters)),
        ("Number of items inserted", conn.call(&["BF.CARD", key])),
        ("Expansion rate", Frame::Int(expansion)),
    ]
}

#[test]
fn info_of_a_blocked_chain_ends_with_its_layout_in_both_protocols() {
    let server = Server::start();
    let mut conn = server.conn();
    ok(&mut conn, "BF.RESERVE k 0.01 100 LAYOUT BLOCKED");
    add(&mut conn, "k", &names("item", 0, 250));
    let mut fields = five_fields(&mut conn, "k", [300, 2, 2]);
    fields.push(("Layout", Frame::bulk("blocked")));
    for (protocol, mut conn) in server.both() {
        assert_eq!(conn.call(&["BF.INFO", "k"]), info_reply(protocol, &fields));
        for field in ["LAYOUT", "layout", "Layout"] {
            assert_alone(&mut conn, protocol, "k", field, "blocked");
        }
    }
}

#[test]
fn info_of_a_blocked_windowed_filter_puts_layout_after_window() {
    let server = Server::start();
    let mut conn = server.conn();
    ok(&mut conn, "BF.RESERVE w 0.01 100 WINDOW 60 LAYOUT BLOCKED");
    assert_eq!(call(&mut conn, "BF.ADD w x"), Frame::Int(1));
    let mut fields = five_fields(&mut conn, "w", [100, 1, 4]);
    fields.push(("Window", Frame::Int(60)));
    fields.push(("Layout", Frame::bulk("blocked")));
    for (protocol, mut conn) in server.both() {
        assert_eq!(conn.call(&["BF.INFO", "w"]), info_reply(protocol, &fields));
        assert_alone(&mut conn, protocol, "w", "LAYOUT", "blocked");
        assert_alone(&mut conn, protocol, "w", "WINDOW", "60");
    }
}

#[test]
fn info_of_a_classic_filter_has_no_layout_field_but_answers_it_alone() {
    let server = Server::start();
    let mut conn = server.conn();
    ok(&mut conn, "BF.RESERVE c 0.01 100");
    ok(&mut conn, "BF.RESERVE w 0.01 100 WINDOW 60 LAYOUT CLASSIC");
    call(&mut conn, "BF.MADD c x y");
    call(&mut conn, "BF.ADD w x");
    let chain = five_fields(&mut conn, "c", [100, 1, 2]);
    let mut window = five_fields(&mut conn, "w", [100, 1, 4]);
    window.push(("Window", Frame::Int(60)));
    for (protocol, mut conn) in server.both() {
        assert_eq!(conn.call(&["BF.INFO", "c"]), info_reply(protocol, &chain));
        assert_eq!(conn.call(&["BF.INFO", "w"]), info_reply(protocol, &window));
        for key in ["c", "w"] {
            assert_alone(&mut conn, protocol, key, "LAYOUT", "classic");
        }
    }
    // BF.DEBUG's lines of a classic filter say nothing of a layout.
    for key in ["c", "w"] {
        let lines = debug_lines(&mut conn, key).join("\n");
        assert!(!lines.contains("layout"), "{lines}");
    }
}

/// The block size at the end of a blocked sub-filter's BF.DEBUG line (then `until:` if `windowed`).
fn block_of(line: &str, windowed: bool) -> &str {
    let tail = line
        .split_once(" layout:blocked block:")
        .map_or("", |(_, tail)| tail);
    let block = match (windowed, tail.split_once(" until:")) {
        (true, Some((block, until))) if until.parse::<u64>().is_ok() => block,
        (true, _) => "",
        (false, _) => tail,
    };
    assert!(block == "512" || block == "1024", "{line}");
    block
}

#[test]
fn debug_gives_each_blocked_sub_filter_its_block() {
    let server = Server::start();
    let mut conn = server.conn();
    ok(&mut conn, "BF.RESERVE k 0.01 100 LAYOUT BLOCKED");
    add(&mut conn, "k", &names("item", 0, 1000));
    let lines = debug_lines(&mut conn, "k");
    let card = call(&mut conn, "BF.CARD k").int();
    assert_eq!(lines[0], format!("size:{card}"));
    let blocks: Vec<&str> = lines[1..]
        .iter()
        .map(|line| block_of(line, false))
        .collect();
    // One 64-byte line per block at the first error rates, two once they are small enough.
    assert_eq!(blocks, ["512", "512", "512", "1024"]);
    assert_eq!(
        lines[1],
        "bytes:192 bits:1536 hashes:7 hashwidth:64 capacity:100 size:100 ratio:0.005 layout:blocked block:512"
    );
}

#[test]
fn debug_of_a_blocked_filter_at_a_tiny_error_rate_shows_a_classic_sub_filter() {
    let server = Server::start();
    let mut conn = server.conn();
    ok(&mut conn, "BF.RESERVE tiny 1e-9 100 LAYOUT BLOCKED");
    call(&mut conn, "BF.ADD tiny x");
    assert_eq!(layout(&mut conn, "tiny"), "blocked");
    let lines = debug_lines(&mut conn, "tiny");
    let classic = lines[1].ends_with(" ratio:5e-10 layout:classic");
    assert!(lines.len() == 2 && classic, "{lines:?}");
}

#[test]
fn debug_of_a_windowed_blocked_filter_puts_the_block_before_until() {
    let server = Server::start();
    let mut conn = server.conn();
    ok(&mut conn, "BF.RESERVE w 0.01 100 WINDOW 60 LAYOUT BLOCKED");
    add(&mut conn, "w", &names("item", 0, 100));
    assert!(windowed_parts(&mut conn, "w") >= 2);
}

/// Asserts that each sub-filter line of the windowed filter `key` has its block before
/// `until:`; how many there are.
fn windowed_parts(conn: &mut Conn, key: &str) -> usize {
    let lines = debug_lines(conn, key);
    let parts: Vec<&String> = lines.iter().filter(|l| l.starts_with("bytes:")).collect();
    parts.iter().for_each(|line| _ = block_of(line, true));
    parts.len()
}

/// Measures `key`'s false-positive rate with `probes` items never added (`absent:<i>`) and
/// asserts it is at most `requested`, give or take three standard deviations of the count of
/// false positives a filter of exactly the requested rate would give. (The sizing puts its bound
/// within 1% of the requested rate, so a filter's measured rate lands above it about as often as
/// below: the allowance is the measurement's noise, not slack in the sizing.)
fn assert_rate_at_most(conn: &mut Conn, key: &str, requested: f64, probes: usize) {
    let found: usize = (0..probes)
        .step_by(100_000)
        .map(|first| {
            let absent = names("absent", first, 100_000.min(probes - first));
            count_present(conn, key, &absent)
        })
        .sum();
    let rate = found as f64 / probes as f64;
    let allowance = 3.0 * (requested * (1.0 - requested) / probes as f64).sqrt();
    eprintln!(
        "{key}: false-positive rate {rate:.7} over {probes} probes (requested {requested}, \
         noise allowance {allowance:.7})"
    );
    assert!(rate <= requested + allowance, "{key}: {rate}");
}

/// Reserves a NONSCALING blocked filter and adds `item:0`, `item:1`, ... until it counts
/// `capacity` items (a false positive while filling is not counted): exactly full. Every item is
/// found, and one more new item is refused.
fn full_blocked_filter(conn: &mut Conn, key: &str, error: f64, capacity: usize) {
    let reserve = format!("BF.RESERVE {key} {error} {capacity} NONSCALING LAYOUT BLOCKED");
    ok(conn, &reserve);
    let mut items = names("item", 0, capacity);
    add(conn, key, &items);
    loop {
        let card = conn.call(&["BF.CARD", key]).int() as usize;
        if card == capacity {
            break;
        }
        let more = names("item", items.len(), capacity - card);
        add(conn, key, &more);
        items.extend(more);
    }
    assert_eq!(count_present(conn, key, &items), items.len(), "{key}");
    assert_eq!(
        conn.call(&["BF.ADD", key, "one more"]),
        Frame::error("ERR non scaling filter is full")
    );
    assert!(debug_lines(conn, key)[1].contains(" layout:blocked block:"));
}

#[test]
fn a_full_nonscaling_blocked_filter_keeps_its_error_rate() {
    let server = Server::start();
    let mut conn = server.conn();
    // Enough probes for a thousand false positives or more at the requested rate.
    for (error, probes) in [(0.01, 200_000), (0.001, 1_000_000), (0.0001, 10_000_000)] {
        let key = format!("full:{error}");
        full_blocked_filter(&mut conn, &key, error, 50_000);
        assert_rate_at_most(&mut conn, &key, error, probes);
    }
}

#[test]
fn a_small_full_blocked_filter_keeps_its_error_rate() {
    let server = Server::start();
    let mut conn = server.conn();
    full_blocked_filter(&mut conn, "small", 0.01, 200);
    assert_rate_at_most(&mut conn, "small", 0.01, 200_000);
}

#[test]
fn a_growing_blocked_chain_keeps_its_error_rate_and_every_item() {
    let server = Server::start();
    let mut conn = server.conn();
    ok(&mut conn, "BF.RESERVE chain 0.01 1000 LAYOUT BLOCKED");
    let items = names("item", 0, 20_000);
    add(&mut conn, "chain", &items);
    // 1000 + 2000 + 4000 + 8000 + 16000: five sub-filters, every one blocked.
    let filters = call(&mut conn, "BF.INFO chain FILTERS");
    assert_eq!(filters, Frame::Array(vec![Frame::Int(5)]));
    for line in &debug_lines(&mut conn, "chain")[1..] {
        block_of(line, false);
    }
    // No false negative.
    assert_eq!(count_present(&mut conn, "chain", &items), items.len());
    assert_rate_at_most(&mut conn, "chain", 0.01, 200_000);
}

/// What a copy of a filter must keep: its layout, BF.DEBUG's lines, DEBUG DIGEST-VALUE.
type State = (String, Vec<String>, Frame);

fn state(conn: &mut Conn, key: &str) -> State {
    (layout(conn, key), debug_lines(conn, key), digest(conn, key))
}

/// A blocked filter: its key, its items, its state.
type Made = (&'static str, Vec<String>, State);

/// Two blocked filters: `chain`, grown to four sub-filters, and `windowed` (WINDOW 3600: nothing
/// expires during a test), grown past its first part.
fn blocked_filters(conn: &mut Conn) -> [Made; 2] {
    ok(conn, "BF.RESERVE chain 0.01 100 LAYOUT BLOCKED");
    let chain = names("chain", 0, 1000);
    add(conn, "chain", &chain);
    let filters = call(conn, "BF.INFO chain FILTERS");
    assert_eq!(filters, Frame::Array(vec![Frame::Int(4)]));
    ok(
        conn,
        "BF.RESERVE windowed 0.01 1000 WINDOW 3600 LAYOUT BLOCKED",
    );
    let windowed = names("windowed", 0, 300);
    add(conn, "windowed", &windowed);
    assert!(windowed_parts(conn, "windowed") >= 2);
    let chain_state = state(conn, "chain");
    [
        ("chain", chain, chain_state),
        ("windowed", windowed, state(conn, "windowed")),
    ]
}

/// Asserts that each filter's copy, `<key><suffix>`, is blocked with the filter's state and
/// holds every one of its items.
fn assert_kept(conn: &mut Conn, filters: &[Made], suffix: &str) {
    for (key, items, expected) in filters {
        let copy = format!("{key}{suffix}");
        assert_eq!(expected.0, "blocked");
        assert_eq!(&state(conn, &copy), expected, "{copy}");
        assert_eq!(count_present(conn, &copy, items), items.len(), "{copy}");
    }
}

#[test]
fn debug_reload_keeps_blocked_filters() {
    let server = Server::start();
    let mut conn = server.conn();
    let filters = blocked_filters(&mut conn);
    ok(&mut conn, "DEBUG RELOAD");
    assert_kept(&mut conn, &filters, "");
}

#[test]
fn dump_restore_and_copy_keep_blocked_filters() {
    let server = Server::start();
    let mut conn = server.conn();
    let filters = blocked_filters(&mut conn);
    for (key, _, _) in &filters {
        let payload = conn.call(&["DUMP", key]).bytes();
        let restored = format!("{key}:restored");
        let restore = [b"RESTORE".as_slice(), restored.as_bytes(), b"0", &payload];
        assert_eq!(conn.call(&restore), Frame::ok());
        let copied = format!("{key}:copied");
        assert_eq!(conn.call(&["COPY", key, &copied]), Frame::Int(1));
    }
    assert_kept(&mut conn, &filters, ":restored");
    assert_kept(&mut conn, &filters, ":copied");
}

#[test]
fn scandump_and_loadchunk_rebuild_blocked_filters() {
    let server = Server::start();
    let mut conn = server.conn();
    let filters = blocked_filters(&mut conn);
    for (key, _, _) in &filters {
        let chunks = scandump(&mut conn, key);
        assert!(chunks.len() >= 2, "{key}");
        for (iterator, data) in &chunks {
            let copy = format!("{key}:loaded");
            assert_eq!(loadchunk(&mut conn, &copy, *iterator, data), Frame::ok());
        }
    }
    assert_kept(&mut conn, &filters, ":loaded");
}

#[test]
fn an_aof_rewrite_replayed_on_restart_keeps_blocked_filters() {
    let options = Options::aof_without_preamble();
    let mut server = Server::with(options.clone());
    let mut conn = server.conn();
    let filters = blocked_filters(&mut conn);
    assert!(!call(&mut conn, "BGREWRITEAOF").is_error());
    server.wait_for_aof_rewrite();
    drop(conn);
    // The rewrite holds the filters as chunks, not as the commands that made them.
    let aof = server.aof_text();
    assert!(aof.contains("BF.LOADCHUNK") && !aof.contains("BF.RESERVE"));
    server.restart_with(options);
    assert_kept(&mut server.conn(), &filters, "");
}

#[test]
fn an_rdb_restart_keeps_blocked_filters() {
    let mut server = Server::start();
    let filters = blocked_filters(&mut server.conn());
    server.restart();
    assert_kept(&mut server.conn(), &filters, "");
}

#[test]
fn a_blocked_filter_digest_differs_from_a_classic_one() {
    let server = Server::start();
    let mut conn = server.conn();
    let items = names("item", 0, 10);
    for creation in ["0.01 100", "0.001 10 NONSCALING", "0.01 100 WINDOW 60"] {
        let mut digests = Vec::new();
        for layout in ["CLASSIC", "BLOCKED"] {
            let key = format!("{creation}:{layout}").replace(' ', "-");
            let reserve = format!("BF.RESERVE {key} {creation} LAYOUT {layout}");
            ok(&mut conn, &reserve);
            let empty = digest(&mut conn, &key);
            add(&mut conn, &key, &items);
            digests.push((empty, digest(&mut conn, &key)));
        }
        assert_ne!(digests[0].0, digests[1].0, "{creation}, empty");
        assert_ne!(digests[0].1, digests[1].1, "{creation}, with items");
    }
}

/// The primary's writes: LAYOUT BLOCKED on BF.RESERVE and BF.INSERT (windowed), and a filter
/// BF.ADD makes under `bf.layout blocked` (set on the primary only).
fn primary_writes(conn: &mut Conn) {
    ok(conn, "BF.RESERVE b 0.01 1000 LAYOUT BLOCKED");
    assert_eq!(call(conn, "BF.ADD b x"), Frame::Int(1));
    add(conn, "b", &names("b", 0, 3000));
    let items = names("w", 0, 100).join(" ");
    let insert = format!("BF.INSERT w WINDOW 60 LAYOUT BLOCKED ITEMS {items}");
    assert!(!call(conn, &insert).is_error());
    ok(conn, "CONFIG SET bf.layout blocked");
    assert_eq!(call(conn, "BF.ADD d x"), Frame::Int(1));
}

/// Asserts that `replica` holds the primary's three blocked filters, bit for bit, while its own
/// `bf.layout` is still classic.
fn assert_replica_has_them(primary: &Server, replica: &Server) {
    let mut mirror = replica.conn();
    let mut conn = primary.conn();
    assert_config(&mut mirror, "classic");
    for key in ["b", "w", "d"] {
        let expected = state(&mut conn, key);
        assert_eq!(expected.0, "blocked", "{key}");
        assert_eq!(state(&mut mirror, key), expected, "{key}");
    }
}

#[test]
fn a_replica_builds_the_primarys_blocked_filters() {
    let primary = Server::start();
    let replica = Server::start();
    replica.replicate(&primary);
    primary_writes(&mut primary.conn());
    replica.catch_up(&primary);
    assert_replica_has_them(&primary, &replica);
}

#[test]
fn a_full_sync_carries_blocked_filters() {
    let primary = Server::start();
    primary_writes(&mut primary.conn());
    let replica = Server::start();
    replica.replicate(&primary);
    assert_replica_has_them(&primary, &replica);
}
