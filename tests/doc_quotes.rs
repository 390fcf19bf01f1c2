//! The pages under docs/ quote what the module really answers and measure what a server really
//! computes: each error text a page quotes is produced here and found on the page (numbers that
//! vary, such as the memory in use, as the page's placeholders), and the table of cuckoo filters
//! as they grow is computed again, to the character.

mod common;

use common::{Conn, Frame, Options, Server};
use std::path::Path;

/// A page's text with every run of whitespace made one space, so that a quote is found
/// whatever the line breaks.
fn page(file: &str) -> String {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(file))
        .unwrap_or_else(|err| panic!("{file}: {err}"));
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The raw lines of a page.
fn page_lines(file: &str) -> Vec<String> {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(file))
        .unwrap_or_else(|err| panic!("{file}: {err}"))
        .lines()
        .map(str::to_string)
        .collect()
}

fn error_text(frame: Frame) -> String {
    match frame {
        Frame::Error(text) => text,
        other => panic!("not an error: {other:?}"),
    }
}

/// `text` with each run of digits replaced by the next of `names`, as a page writes a number
/// that varies (`N`, `M`...).
fn placeholders(text: &str, names: &[&str]) -> String {
    let mut out = String::new();
    let mut names = names.iter();
    let mut in_number = false;
    for c in text.chars() {
        if c.is_ascii_digit() {
            if !in_number {
                out.push_str(names.next().expect("a name for every number"));
            }
            in_number = true;
        } else {
            out.push(c);
            in_number = false;
        }
    }
    assert!(
        names.next().is_none(),
        "fewer numbers than names in {text:?}"
    );
    out
}

/// 1234567 as 1,234,567.
fn thousands(number: u64) -> String {
    let digits = number.to_string();
    let mut out = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// 30562 as 30,562nd.
fn ordinal(number: u64) -> String {
    let suffix = match (number % 10, number % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{}{suffix}", thousands(number))
}

/// docs/configuration.md: where module commands are allowed, `MODULE UNLOAD bf` is refused by
/// the server for the module's data types (the server `make run` starts refuses the command
/// itself: tests/readme.rs checks that one).
#[test]
fn module_unload_where_module_commands_are_allowed_is_what_the_page_quotes() {
    let server = Server::with(Options::default().config("enable-module-command", "yes"));
    let mut conn = server.conn();
    let text = error_text(conn.call(&["MODULE", "UNLOAD", "bf"]));
    assert_eq!(
        text,
        "ERR Error unloading module: the module exports one or more module-side data types, \
         can't unload"
    );
    let quote = format!("allowed (`enable-module-command yes`, or `local` from the same machine), the server keeps a module with a data type loaded: `{text}`");
    assert!(page("docs/configuration.md").contains(&quote), "{quote}");
}

/// docs/configuration.md: a filter bigger than maxmemory is refused with one text where the
/// server would refuse the write anyway (noeviction) and another under an eviction policy.
#[test]
fn the_maxmemory_refusals_are_what_the_page_quotes() {
    let options = Options::default()
        .config("maxmemory", "10mb")
        .config("maxmemory-policy", "noeviction");
    let server = Server::with(options);
    let mut conn = server.conn();
    let text = error_text(conn.call(&["BF.RESERVE", "big", "0.01", "100000000"]));
    assert!(
        text.starts_with("OOM filter would need 137847352 more bytes, more than maxmemory leaves"),
        "{text}"
    );
    let refusing = placeholders(&text, &["N", "U", "M"]);
    assert_eq!(
        conn.call(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"]),
        Frame::ok()
    );
    let text = error_text(conn.call(&["BF.RESERVE", "big", "0.01", "100000000"]));
    assert_eq!(
        text,
        "OOM filter would use 137847352 bytes, more than maxmemory (10485760): no eviction can \
         make room for it"
    );
    let evicting = placeholders(&text, &["N", "M"]);
    let page = page("docs/configuration.md");
    for quote in [
        format!("refused up front, before anything is allocated, with Redis's own code: `{refusing}`"),
        format!("under an eviction policy with `{evicting}` (N the whole filter's bytes)"),
        format!("(`noeviction`, or `volatile-*` with no key to evict), with the text above, `{refusing}`"),
    ] {
        assert!(page.contains(&quote), "docs/configuration.md should say: {quote}");
    }
}

/// docs/commands.md: the `CF.*` row "Error codes and wording" quotes what the module answers
/// where RedisBloom's texts say nothing of the fault, and the text on `CF.LOADCHUNK` says when
/// an iterator is `ERR invalid iterator`.
#[test]
fn the_cf_error_wording_is_what_the_command_reference_quotes() {
    let server = Server::start();
    let mut conn = server.conn();
    let section = "### Where cuckoo filters differ from RedisBloom, on purpose";
    let lines = page_lines("docs/commands.md");
    let start = lines
        .iter()
        .position(|line| line == section)
        .expect("the section");
    let row = lines[start..]
        .iter()
        .find(|line| line.starts_with("| Error codes and wording |"))
        .expect("the row")
        .clone();
    let quoted = |text: String| {
        assert!(
            row.contains(&format!("`{text}`")),
            "the row should quote `{text}`: {row}"
        );
    };
    // Header chunks: a length that is no header's, a field out of range.
    quoted(error_text(conn.call(&["CF.LOADCHUNK", "k", "1", "abcdef"])));
    let header = [b'x'; 38];
    let command: [&[u8]; 4] = [b"CF.LOADCHUNK", b"k", b"1", &header];
    quoted(error_text(conn.call(&command)));
    // A data chunk out of order, into a filter being restored.
    assert_eq!(conn.call(&["CF.RESERVE", "src", "1000"]), Frame::ok());
    assert_eq!(conn.call(&["CF.ADD", "src", "a"]), Frame::Int(1));
    let first = conn.call(&["CF.SCANDUMP", "src", "0"]).items();
    let header = first[1].bytes();
    let command: [&[u8]; 4] = [b"CF.LOADCHUNK", b"dst", b"1", &header];
    assert_eq!(conn.call(&command), Frame::ok());
    let text = error_text(conn.call(&["CF.LOADCHUNK", "dst", "100", "abcdef"]));
    assert!(
        text.starts_with("ERR invalid chunk: not the next one (loaded already, or out of order"),
        "{text}"
    );
    quoted("ERR invalid chunk: not the next one (...)".to_string());
    // An iterator that places its chunk before the data, 0 included, whatever the filter.
    for (key, iterator) in [("src", "0"), ("src", "2"), ("src", "6"), ("dst", "2")] {
        let text = error_text(conn.call(&["CF.LOADCHUNK", key, iterator, "abcdef"]));
        assert_eq!(text, "ERR invalid iterator", "{key} {iterator}");
    }
    quoted("ERR invalid iterator".to_string());
    let reference = page("docs/commands.md");
    assert!(
        reference.contains("is `ERR invalid iterator` whatever the filter's state: iterator 0, and `CF.LOADCHUNK cf 2 abcdef`"),
        "the CF.LOADCHUNK text"
    );
    // A filter past every limit (RedisBloom: ERR Insufficient memory to create filter).
    let text = error_text(conn.call(&["CF.RESERVE", "huge", "9223372036854775807"]));
    let (said, _) = text.split_once("; ").expect("a refusal and what to do");
    quoted(format!("{}; ...", placeholders(said, &["N", "L"])));
    // An unknown token (RedisBloom's CF.INSERT: Unknown argument received).
    quoted(error_text(conn.call(&[
        "CF.INSERT",
        "k",
        "x",
        "ITEMS",
        "a",
    ])));
}

/// docs/internals.md's figures of memory: the filter `CF.ADD` makes, and the Python dupefilter's
/// default cuckoo filter, whose 13-byte buckets make a block that is no size class.
#[test]
fn the_cuckoo_memory_figures_are_what_cf_info_says() {
    let server = Server::start();
    let mut conn = server.conn();
    let size = |conn: &mut Conn, key: &str| {
        let info = conn.call(&["CF.INFO", key]).items();
        let at = info
            .iter()
            .position(|field| *field == Frame::simple("Size") || *field == Frame::bulk("Size"))
            .expect("Size");
        info[at + 1].int() as u64
    };
    assert_eq!(conn.call(&["CF.ADD", "added", "x"]), Frame::Int(1));
    let made_by_add = size(&mut conn, "added");
    assert_eq!(
        conn.call(&["CF.RESERVE", "default", "100000", "ERROR", "0.000001"]),
        Frame::ok()
    );
    let debug = conn.call(&["CF.DEBUG", "default"]).text();
    assert!(
        debug.contains("buckets:32768 ") && debug.ends_with(" bits:26"),
        "{debug}"
    );
    let dupefilter = size(&mut conn, "default");
    // Around the buckets: the value and the array of one sub-filter.
    let overhead = made_by_add - 1024;
    let buckets = 32_768 * 4 * 26 / 8;
    let text = page("docs/internals.md");
    for quote in [
        format!(
            "{} for the filter `CF.ADD` makes (1,024 bytes of buckets, and {overhead} for the \
             value and the array of sub-filters)",
            thousands(made_by_add)
        ),
        format!(
            "holds {} bytes of buckets, charged {}, and its `Size` is {}",
            thousands(buckets),
            thousands(dupefilter - overhead),
            thousands(dupefilter)
        ),
    ] {
        assert!(
            text.contains(&quote),
            "docs/internals.md should say: {quote}"
        );
    }
    assert!(dupefilter - overhead > buckets);
}

/// CF.INFO's Size and Number of filters.
fn size_and_filters(conn: &mut Conn, key: &str) -> (u64, u64) {
    let info = conn.call(&["CF.INFO", key]).items();
    let field = |name: &str| {
        let at = info
            .iter()
            .position(|field| *field == Frame::simple(name) || *field == Frame::bulk(name))
            .unwrap_or_else(|| panic!("{name}"));
        info[at + 1].int() as u64
    };
    (field("Size"), field("Number of filters"))
}

/// How many of `absent:0` to `absent:199999` the filter at `key` answers 1 for.
fn false_positives(conn: &mut Conn, key: &str) -> u64 {
    let mut hits = 0;
    for start in (0..PROBES).step_by(1000) {
        let mut command = vec!["CF.MEXISTS".to_string(), key.to_string()];
        command.extend((start..start + 1000).map(|i| format!("absent:{i}")));
        hits += conn
            .call(&command)
            .items()
            .iter()
            .map(|answer| answer.int() as u64)
            .sum::<u64>();
    }
    hits
}

const PROBES: u64 = 200_000;

/// The share of `hits` among the probes, as the page prints it.
fn percent(hits: u64) -> String {
    format!("{:.3}%", hits as f64 * 100.0 / PROBES as f64)
}

/// The item (counted from 1) whose add made the filter at `key`, reserved with `reserve`, grow,
/// for items `{prefix}0`, `{prefix}1`, ...
fn growth_item(conn: &mut Conn, reserve: &[&str], prefix: &str) -> u64 {
    conn.call(&["DEL", "g"]);
    let mut command = vec!["CF.RESERVE", "g"];
    command.extend_from_slice(reserve);
    assert_eq!(conn.call(&command), Frame::ok());
    let mut next = 0u64;
    loop {
        // Each add, then the sub-filters it left, pipelined 100 at a time.
        for index in next..next + 100 {
            let item = format!("{prefix}{index}");
            conn.send(&["CF.INSERT", "g", "ITEMS", item.as_str()]);
            conn.send(&["CF.INFO", "g"]);
        }
        for index in next..next + 100 {
            assert_eq!(conn.read(), Frame::Array(vec![Frame::Int(1)]));
            let info = conn.read().items();
            if info[5].int() > 1 {
                // Drain the rest of the pipeline.
                for _ in index + 1..next + 100 {
                    conn.read();
                    conn.read();
                }
                return index + 1;
            }
        }
        next += 100;
    }
}

/// docs/performance.md, "On a server, as filters really grow": the table, recomputed (the items
/// and probes it names, CF.INSERT in batches of 1,000, CF.MEXISTS of 200,000 never-added items),
/// the growth of the first sub-filter over 30 other namings of the items, and the item the
/// filter `CF.ADD` makes refuses. Cuckoo filters here place items without randomness: the same
/// items give the same figures on every run.
#[test]
fn the_cuckoo_growth_table_is_what_a_server_computes() {
    let server = Server::start();
    let mut conn = server.conn();
    let lines = page_lines("docs/performance.md");
    let text = page("docs/performance.md");
    let columns = [1_000u64, 10_000, 100_000, 1_000_000];
    let rows: [(&str, &[&str], &[u64]); 4] = [
        (
            "`CF.RESERVE k 1024 ERROR 0.01`",
            &["1024", "ERROR", "0.01"],
            &columns,
        ),
        (
            "`CF.RESERVE k 1024 ERROR 0.001`",
            &["1024", "ERROR", "0.001"],
            &columns,
        ),
        (
            "`CF.RESERVE k 1000000 ERROR 0.01`",
            &["1000000", "ERROR", "0.01"],
            &[1_000_000],
        ),
        (
            "`CF.RESERVE k 1024 EXPANSION 2` (RedisBloom's kind)",
            &["1024", "EXPANSION", "2"],
            &columns,
        ),
    ];
    for (name, reserve, shown) in rows {
        conn.call(&["DEL", "k"]);
        let mut command = vec!["CF.RESERVE", "k"];
        command.extend_from_slice(reserve);
        assert_eq!(conn.call(&command), Frame::ok());
        let mut added = 0u64;
        let mut row = format!("| {name} ");
        for column in columns {
            if !shown.contains(&column) {
                row.push_str("| ");
                continue;
            }
            while added < column {
                let mut insert = vec!["CF.INSERT".to_string(), "k".into(), "ITEMS".into()];
                insert.extend((added..added + 1000).map(|i| format!("item:{i}")));
                let answers = conn.call(&insert).items();
                assert!(answers.iter().all(|answer| *answer == Frame::Int(1)));
                added += 1000;
            }
            let hits = false_positives(&mut conn, "k");
            let (size, filters) = size_and_filters(&mut conn, "k");
            let bits = size as f64 * 8.0 / added as f64;
            row.push_str(&format!("| {bits:.1} bits, {} ({filters}) ", percent(hits)));
        }
        row.push('|');
        assert!(
            lines.contains(&row),
            "docs/performance.md should have the row\n{row}"
        );
    }
    // The first sub-filter's growth over 30 other namings of the items.
    for (reserve, said) in [
        (["1024", "ERROR", "0.01"], "the first row's filter grew at"),
        (["1024", "ERROR", "0.001"], "the second row's at"),
    ] {
        let grew: Vec<u64> = (0..30)
            .map(|naming| growth_item(&mut conn, &reserve, &format!("n{naming}:")))
            .collect();
        let (low, high) = (grew.iter().min().unwrap(), grew.iter().max().unwrap());
        let held = grew.iter().filter(|&&item| item > 1_000).count();
        let quote = format!(
            "{said} its {} to {} item ({held} of the 30 held 1,000 items in one sub-filter)",
            ordinal(*low),
            ordinal(*high)
        );
        assert!(
            text.contains(&quote),
            "docs/performance.md should say: {quote}"
        );
    }
    // The filter CF.ADD makes on a missing key, up to the item it refuses, then made again with
    // the items before that one alone; and where other namings stop.
    let refused = refused_item(&mut conn, "item:");
    assert_eq!(conn.call(&["DEL", "d"]), Frame::Int(1));
    for index in 0..refused {
        conn.send(&["CF.ADD", "d", format!("item:{index}").as_str()]);
    }
    for _ in 0..refused {
        assert_eq!(conn.read(), Frame::Int(1));
    }
    let item = format!("item:{refused}");
    assert_eq!(
        conn.call(&["CF.ADD", "d", item.as_str()]),
        Frame::error("ERR Maximum expansions reached")
    );
    let (_, filters) = size_and_filters(&mut conn, "d");
    assert_eq!(filters, 32);
    let hits = false_positives(&mut conn, "d");
    let quote = format!(
        "refused its {} distinct item (`item:{refused}`: `ERR Maximum expansions reached`, 32 \
         sub-filters), answering 1 for {} of the never-added items by then",
        ordinal(refused + 1),
        percent(hits)
    );
    assert!(
        text.contains(&quote),
        "docs/performance.md should say: {quote}"
    );
    let others: Vec<u64> = (0..30)
        .map(|naming| refused_item(&mut conn, &format!("n{naming}:")) + 1)
        .collect();
    let quote = format!(
        "Other items stop elsewhere: over the 30 namings above, at the {} to {} item.",
        ordinal(*others.iter().min().unwrap()),
        ordinal(*others.iter().max().unwrap())
    );
    assert!(
        text.contains(&quote),
        "docs/performance.md should say: {quote}"
    );
}

/// The index of the first of `{prefix}0`, `{prefix}1`, ... that `CF.ADD` refuses on a missing
/// key (`ERR Maximum expansions reached`), the adds sent 1,000 at a time.
fn refused_item(conn: &mut Conn, prefix: &str) -> u64 {
    conn.call(&["DEL", "d"]);
    let mut next = 0u64;
    loop {
        for index in next..next + 1000 {
            conn.send(&["CF.ADD", "d", format!("{prefix}{index}").as_str()]);
        }
        let answers: Vec<Frame> = (0..1000).map(|_| conn.read()).collect();
        if let Some(at) = answers.iter().position(Frame::is_error) {
            assert_eq!(answers[at], Frame::error("ERR Maximum expansions reached"));
            return next + at as u64;
        }
        next += 1000;
    }
}
