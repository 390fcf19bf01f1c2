//! `bf.huge-pages` against a real server: big filters' arrays ask the kernel for transparent huge
//! pages where its mode is `madvise`, and give the request back when freed; what a filter holds,
//! reports and is charged does not change; INFO bf says what the kernel allows and how many bytes
//! are on huge pages. Where this machine's kernel is in another mode, the tests check what INFO
//! says of it and that the module asks for nothing.

mod common;

use common::{command_usec, info_bf, Conn, Frame, Options, Server};
use std::time::{Duration, Instant};

/// The kernel's transparent huge page mode, as the module reads it.
fn kernel_mode() -> String {
    let text =
        std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
    text.split_whitespace()
        .find_map(|word| word.strip_prefix('[')?.strip_suffix(']'))
        .unwrap_or("unsupported")
        .to_string()
}

/// What `bf_huge_pages` says with `bf.huge-pages` set to `on`.
fn expected_status(on: bool) -> &'static str {
    match (kernel_mode().as_str(), on) {
        ("madvise", true) => "on",
        ("madvise", false) => "off",
        ("always", _) => "kernel-always",
        ("never", _) => "kernel-never",
        _ => "unsupported",
    }
}

/// Memory ranges of the server process whose flags ask for huge pages (`hg` in VmFlags).
fn ranges_asking(server: &Server) -> usize {
    let smaps = std::fs::read_to_string(format!("/proc/{}/smaps", server.pid())).unwrap();
    smaps
        .lines()
        .filter_map(|line| line.strip_prefix("VmFlags:"))
        .filter(|flags| flags.split_whitespace().any(|flag| flag == "hg"))
        .count()
}

/// A filter of about 34 MB (28M items at 1%), with 20,000 items: every 2 MiB of it touched.
fn big_filter(conn: &mut Conn, key: &str) {
    assert_eq!(
        conn.call(&["BF.RESERVE", key, "0.01", "28000000"]),
        Frame::ok()
    );
    for batch in 0..20 {
        let mut args = vec!["BF.MADD".to_string(), key.to_string()];
        args.extend((0..1000).map(|i| format!("item:{batch}:{i}")));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        assert_eq!(conn.call(&args).items().len(), 1000);
    }
}

#[test]
fn the_config_reads_writes_and_refuses_anything_but_yes_and_no() {
    let server = Server::start();
    let mut conn = server.conn();
    let get = |conn: &mut Conn| conn.call(&["CONFIG", "GET", "bf.huge-pages"]).items()[1].text();
    assert_eq!(get(&mut conn), "yes");
    assert_eq!(
        server.info_field("bf", "bf_huge_pages"),
        expected_status(true)
    );
    assert_eq!(
        conn.call(&["CONFIG", "SET", "bf.huge-pages", "no"]),
        Frame::ok()
    );
    assert_eq!(get(&mut conn), "no");
    assert_eq!(
        server.info_field("bf", "bf_huge_pages"),
        expected_status(false)
    );
    assert_eq!(
        conn.call(&["CONFIG", "SET", "bf.huge-pages", "maybe"]),
        Frame::error(
            "ERR CONFIG SET failed (possibly related to argument 'bf.huge-pages') - argument(s) \
             must be one of the following: no, yes"
        )
    );
    // As a load argument, in any letter case.
    let off = Server::with(Options::default().module_args(&["huge-pages", "NO"]));
    assert_eq!(
        off.conn().call(&["CONFIG", "GET", "bf.huge-pages"]).items()[1].text(),
        "no"
    );
    let log = match Server::try_with(Options::default().module_args(&["huge-pages", "1"])) {
        Ok(_) => panic!("loaded with huge-pages 1"),
        Err(log) => log,
    };
    assert!(
        log.contains("refusing to load: bad value '1' for huge-pages: must be yes or no"),
        "{log}"
    );
}

#[test]
fn big_filters_sit_on_huge_pages_and_give_them_back_when_freed() {
    if kernel_mode() != "madvise" {
        // The module asks for nothing in the other modes: no range of the server asks.
        let server = Server::start();
        big_filter(&mut server.conn(), "big");
        assert_eq!(ranges_asking(&server), 0);
        return;
    }
    let server = Server::start();
    let mut conn = server.conn();
    assert_eq!(info_bf(&server, "bf_huge_pages_bytes"), 0);
    // A small filter asks for nothing.
    assert_eq!(
        conn.call(&["BF.RESERVE", "small", "0.01", "100000"]),
        Frame::ok()
    );
    assert_eq!(ranges_asking(&server), 0);
    big_filter(&mut conn, "big");
    assert!(ranges_asking(&server) > 0);
    // Read by a thread of its own, started by INFO: a moment after the first INFO.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut on_huge = info_bf(&server, "bf_huge_pages_bytes");
    while on_huge == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        on_huge = info_bf(&server, "bf_huge_pages_bytes");
    }
    let size = conn.call(&["BF.INFO", "big", "SIZE"]).items()[0].int() as u64;
    // Some of the array, and no more than it (the server asks for none itself).
    assert!(
        on_huge > 0 && on_huge <= size + (2 << 20),
        "{on_huge} of {size}"
    );
    assert_eq!(on_huge % (2 << 20), 0, "{on_huge}");
    // Freed: no range asks any more, so the allocator's later blocks there do not either.
    assert_eq!(conn.call(&["DEL", "big"]), Frame::Int(1));
    freed(&server);
    // A filter read back from the RDB file asks again, once read.
    big_filter(&mut conn, "big");
    assert_eq!(conn.call(&["DEBUG", "RELOAD"]), Frame::ok());
    assert!(ranges_asking(&server) > 0);
    assert_eq!(conn.call(&["FLUSHALL"]), Frame::ok());
    freed(&server);
}

/// Waits for no range of the server to ask for huge pages: a server that frees big values in a
/// background thread (Valkey 8's `lazyfree-lazy-user-del` and `-flush` are on) frees them a moment
/// after the command has answered.
fn freed(server: &Server) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while ranges_asking(server) != 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(ranges_asking(server), 0);
}

#[test]
fn huge_pages_change_nothing_a_filter_holds_reports_or_is_charged() {
    let on = Server::start();
    let off = Server::with(Options::default().module_args(&["huge-pages", "no"]));
    let mut answers = Vec::new();
    for server in [&on, &off] {
        let mut conn = server.conn();
        big_filter(&mut conn, "big");
        let mut present = vec!["BF.MEXISTS".to_string(), "big".to_string()];
        present.extend((0..1000).map(|i| format!("item:7:{i}")));
        present.extend((0..1000).map(|i| format!("absent:{i}")));
        let present: Vec<&str> = present.iter().map(String::as_str).collect();
        answers.push((
            conn.call(&["BF.INFO", "big"]),
            conn.call(&["MEMORY", "USAGE", "big"]),
            conn.call(&["BF.DEBUG", "big"]),
            conn.call(&present),
            conn.call(&["DEBUG", "DIGEST-VALUE", "big"]),
            conn.call(&["BF.SCANDUMP", "big", "0"]),
        ));
        assert_eq!(
            ranges_asking(server) > 0,
            kernel_mode() == "madvise" && std::ptr::eq(server, &on)
        );
    }
    assert_eq!(answers[0], answers[1]);
    assert_eq!(info_bf(&off, "bf_huge_pages_bytes"), 0);
}

#[test]
fn a_1_gib_filter_is_still_created_without_touching_its_memory() {
    let server = Server::start();
    let mut conn = server.conn();
    let rss = || {
        server
            .info_field("memory", "used_memory_rss")
            .parse::<u64>()
            .unwrap()
    };
    let before = rss();
    // A blow-up bound only: zeroing it by hand takes about a second here, asking takes
    // microseconds. Judged by the server's own time for the call (INFO commandstats, not the
    // test's waits for its turn), the fastest of three creations, each checked not to have
    // touched its memory.
    let mut fastest = f64::MAX;
    for round in 0..3 {
        assert_eq!(conn.call(&["CONFIG", "RESETSTAT"]), Frame::ok());
        // Just under 1 GiB, bf.max-filter-bytes' default (770M items at 1%).
        assert_eq!(
            conn.call(&["BF.RESERVE", "huge", "0.01", "770000000"]),
            Frame::ok()
        );
        fastest = fastest.min(command_usec(&mut conn, "bf.reserve"));
        assert!(rss() < before + (64 << 20), "{} then {}", before, rss());
        if round < 2 {
            assert_eq!(conn.call(&["DEL", "huge"]), Frame::Int(1));
        }
    }
    assert!(fastest > 0.0 && fastest < 300_000.0, "{fastest} us");
    assert_eq!(conn.call(&["BF.ADD", "huge", "x"]), Frame::Int(1));
    assert_eq!(conn.call(&["BF.EXISTS", "huge", "x"]), Frame::Int(1));
}
