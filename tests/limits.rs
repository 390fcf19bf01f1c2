//! The server's memory is not the client's to take: where the server would refuse a write that
//! passes maxmemory (`noeviction`, or a `volatile-*` policy with nothing to evict), a filter that
//! could not fit is refused up front with Redis's own `OOM` code; under an eviction policy filters
//! grow like native writes and the server evicts; a server out of memory refuses writes; and an
//! allocation the operating system refuses becomes an error reply instead of an abort.

mod common;

use common::{Conn, Frame, Options, Server};

fn error_text(frame: Frame) -> String {
    match frame {
        Frame::Error(text) => text,
        other => panic!("not an error: {other:?}"),
    }
}

#[test]
fn under_noeviction_a_filter_that_cannot_fit_under_maxmemory_is_refused_up_front() {
    let options = Options::default()
        .config("maxmemory", "64mb")
        .config("maxmemory-policy", "noeviction")
        .config("bf.max-filter-bytes", "1gb");
    let server = Server::with(options);
    let mut conn = server.conn();
    // 100 million items at 1%: 138 MB, past what 64 MB leaves.
    let text = error_text(conn.call(&["BF.RESERVE", "big", "0.01", "100000000"]));
    assert!(
        text.starts_with("OOM filter would need 1378")
            && text.contains("more than maxmemory leaves ("),
        "{text}"
    );
    assert!(text.ends_with(" of 67108864 bytes used)"), "{text}");
    let text = error_text(conn.call(&["BF.INSERT", "big", "CAPACITY", "100000000", "ITEMS", "a"]));
    assert!(text.starts_with("OOM filter would need"), "{text}");
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
    assert!(refused.starts_with("OOM filter would need"), "{refused}");
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

/// Fills the server with 1 MB strings `s0`, `s1`... until `used_memory` is within 4 MB of
/// `maxmemory` (30 MB); returns how many.
fn fill_with_strings(conn: &mut Conn) -> usize {
    let value = vec![b'x'; 1 << 20];
    let mut count = 0;
    while common::used_memory(conn) < 26 << 20 {
        let key = format!("s{count}");
        assert_eq!(
            conn.call(&[b"SET".as_slice(), key.as_bytes(), &value]),
            Frame::ok()
        );
        count += 1;
    }
    count
}

/// A connection subscribed to the keyspace event of evictions.
fn evictions(server: &Server) -> Conn {
    let mut conn = server.conn();
    assert_eq!(
        conn.call(&["CONFIG", "SET", "notify-keyspace-events", "Ee"]),
        Frame::ok()
    );
    let subscribed = conn.call(&["SUBSCRIBE", "__keyevent@0__:evicted"]);
    assert_eq!(subscribed.items()[0], Frame::bulk("subscribe"));
    conn
}

/// The next evicted key the subscriber hears of.
fn next_evicted(subscriber: &mut Conn) -> String {
    let message = subscriber.read().items();
    assert_eq!(message[0], Frame::bulk("message"));
    message[2].text()
}

fn thirty_megabytes(policy: &str) -> Options {
    Options::default()
        .config("maxmemory", "30mb")
        .config("maxmemory-policy", policy)
}

#[test]
fn under_an_eviction_policy_filters_are_made_and_grow_and_the_server_evicts() {
    let server = Server::with(thirty_megabytes("allkeys-lru"));
    let mut conn = server.conn();
    let mut subscriber = evictions(&server);
    let strings = fill_with_strings(&mut conn);
    // The LRU clock counts whole seconds: once the server's own clock (moved on by its cron) says
    // the last string has been idle a second, every string is idler than the filters about to
    // come (made in the same second, a filter could be the key the server evicts).
    let last = format!("s{}", strings - 1);
    while conn.call(&["OBJECT", "IDLETIME", &last]).int() < 1 {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // 7 million items at 1%: 9.6 MB, more than maxmemory leaves. A native SET of that size
    // would run and make the server evict: so does the filter.
    assert_eq!(
        conn.call(&["BF.RESERVE", "f", "0.01", "7000000"]),
        Frame::ok()
    );
    assert_eq!(conn.call(&["BF.ADD", "f", "x"]), Frame::Int(1));
    let evicted = next_evicted(&mut subscriber);
    assert!(
        evicted.starts_with('s') && evicted[1..].parse::<usize>().unwrap() < strings,
        "{evicted}"
    );
    assert_eq!(conn.call(&["BF.EXISTS", "f", "x"]), Frame::Int(1));
    // Growth too: a 1.4 MB filter grown by EXPANSION 8 to an 11 MB second sub-filter.
    assert_eq!(
        conn.call(&["BF.RESERVE", "g", "0.01", "1000000", "EXPANSION", "8"]),
        Frame::ok()
    );
    for start in (0..1_000_001).step_by(10_000) {
        let mut madd = vec!["BF.MADD".to_string(), "g".to_string()];
        madd.extend((start..start + 10_000).map(|i| format!("i{i}")));
        let reply = conn.call(&madd).items();
        assert!(!reply.iter().any(Frame::is_error), "{:?}", reply.last());
    }
    assert_eq!(
        conn.call(&["BF.INFO", "g", "FILTERS"]),
        Frame::Array(vec![Frame::Int(2)])
    );
    // The server makes room, a time-limited slice per command and in its timer: it comes back
    // under maxmemory by evicting strings (each command gives it a turn).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while common::used_memory(&mut conn) > 30 << 20 {
        assert!(
            std::time::Instant::now() < deadline,
            "never back under maxmemory"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let evicted: i64 = server.info_field("stats", "evicted_keys").parse().unwrap();
    assert!(evicted >= 5, "{evicted} keys evicted");
}

#[test]
fn under_a_volatile_policy_a_filter_is_refused_only_while_no_key_can_be_evicted() {
    let server = Server::with(thirty_megabytes("volatile-lru"));
    let mut conn = server.conn();
    let mut subscriber = evictions(&server);
    let strings = fill_with_strings(&mut conn);
    // No key has a time to live: the server would refuse a native write past maxmemory, and
    // the filter is refused up front with its code.
    let reply = conn.call(&["BF.RESERVE", "f", "0.01", "7000000"]);
    let Frame::Error(text) = reply else {
        panic!("accepted: {reply:?}")
    };
    assert!(
        text.starts_with("OOM filter would need ") && text.ends_with(" of 31457280 bytes used)"),
        "{text}"
    );
    assert_eq!(conn.call(&["EXISTS", "f"]), Frame::Int(0));
    // Once keys can expire, the server can evict them: the filter is made.
    for i in 0..strings {
        assert_eq!(
            conn.call(&["EXPIRE", &format!("s{i}"), "3600"]),
            Frame::Int(1)
        );
    }
    assert_eq!(
        conn.call(&["BF.RESERVE", "f", "0.01", "7000000"]),
        Frame::ok()
    );
    assert_eq!(conn.call(&["PING"]), Frame::simple("PONG"));
    assert!(next_evicted(&mut subscriber).starts_with('s'));
}

fn memory_field(conn: &mut Conn, name: &str) -> i64 {
    let info = conn.call(&["INFO", "memory"]).text();
    info.lines()
        .find_map(|line| line.strip_prefix(&format!("{name}:")))
        .unwrap_or_else(|| panic!("no {name}"))
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn a_big_filter_is_created_at_once_and_still_counted_to_the_byte() {
    let server = Server::with(Options::default().config("bf.max-filter-bytes", "1gb"));
    let mut conn = server.conn();
    let rss_before = memory_field(&mut conn, "used_memory_rss");
    let used_before = memory_field(&mut conn, "used_memory");
    // 700 million items at 1%, NONSCALING: 838.7 MB of bits. Zeroing them by hand took 0.9 s here
    // and made the resident memory jump by all of it; asking for pages the kernel hands out zeroed
    // takes about a millisecond. Timed by the server itself (INFO commandstats: the call alone, not this test's
    // waits for a busy machine's scheduler), the fastest of three creations is held to a tenth of
    // the slow way, which scheduling does not reach three times running; each creation is checked
    // for its accounting and its resident memory.
    let mut fastest = f64::INFINITY;
    for round in 0..3 {
        if round > 0 {
            assert_eq!(conn.call(&["DEL", "big"]), Frame::Int(1));
        }
        assert_eq!(conn.call(&["CONFIG", "RESETSTAT"]), Frame::ok());
        assert_eq!(
            conn.call(&["BF.RESERVE", "big", "0.01", "700000000", "NONSCALING"]),
            Frame::ok()
        );
        fastest = fastest.min(common::command_usec(&mut conn, "BF.RESERVE"));
        let size = conn.call(&["BF.INFO", "big", "SIZE"]).items()[0].int();
        assert!(size > 838_000_000, "{size}");
        // The server's accounting has every byte; the kernel has handed out almost none yet.
        let used = memory_field(&mut conn, "used_memory") - used_before;
        let rss = memory_field(&mut conn, "used_memory_rss") - rss_before;
        assert!(
            used >= size - 1024,
            "used_memory grew by {used}, the filter is {size}"
        );
        assert!(rss < size / 10, "resident memory grew by {rss}");
        assert!(conn.call(&["MEMORY", "USAGE", "big"]).int() >= size);
    }
    assert!(
        fastest < 90_000.0,
        "BF.RESERVE took {fastest} µs at the fastest"
    );
    // Its bits read as zeros and take the items.
    let mut madd = vec!["BF.MADD".to_string(), "big".to_string()];
    madd.extend((0..1000).map(|i| format!("item:{i}")));
    assert!(!conn.call(&madd).items().contains(&Frame::Int(0)));
    assert_eq!(conn.call(&["BF.CARD", "big"]), Frame::Int(1000));
    assert_eq!(conn.call(&["BF.EXISTS", "big", "item:7"]), Frame::Int(1));
    assert_eq!(conn.call(&["BF.EXISTS", "big", "absent"]), Frame::Int(0));
    assert_eq!(conn.call(&["DEL", "big"]), Frame::Int(1));
    assert!(memory_field(&mut conn, "used_memory") - used_before < 1 << 20);
}

/// A filter bigger than `maxmemory` itself can never fit, whatever the server evicts: it is
/// refused up front under every policy (it was acknowledged, evicted everything, itself included,
/// and the next BF.ADD quietly made a 100-item default filter).
#[test]
fn a_filter_bigger_than_maxmemory_is_refused_under_every_policy() {
    for policy in [
        "allkeys-lru",
        "allkeys-lfu",
        "allkeys-random",
        "volatile-lru",
        "volatile-ttl",
        "noeviction",
    ] {
        let options = Options::default()
            .config("maxmemory", "50mb")
            .config("maxmemory-policy", policy);
        let server = Server::with(options);
        let mut conn = server.conn();
        assert_eq!(conn.call(&["SET", "s", "x", "EX", "3600"]), Frame::ok());
        // 100 million items at 1%: 138 MB.
        for command in [
            &["BF.RESERVE", "big", "0.01", "100000000"][..],
            &["BF.INSERT", "big", "CAPACITY", "100000000", "ITEMS", "a"],
        ] {
            let text = error_text(conn.call(command));
            let evicting = policy != "noeviction";
            if evicting {
                assert_eq!(
                    text,
                    "OOM filter would use 137847352 bytes, more than maxmemory (52428800): no \
                     eviction can make room for it",
                    "{policy}"
                );
            } else {
                assert!(text.starts_with("OOM filter would need 1378"), "{text}");
            }
        }
        assert_eq!(
            conn.call(&["EXISTS", "big", "s"]),
            Frame::Int(1),
            "{policy}"
        );
        // One that fits under maxmemory is made (evicting what it must).
        let fits = conn.call(&["BF.RESERVE", "fits", "0.01", "1000000"]);
        assert_eq!(fits, Frame::ok(), "{policy}");
    }
}
