//! The examples keep working: the crawler-dedup benchmark, the recrawl after a window, the cache
//! guard and the feed run against a real server with the module, on a small scale, through the
//! pinned redis-py, and the Go crawler through Debian's redigo; against a server without it (a
//! packaged one on 6379, say), each stops with one line that says so.

mod common;

use common::{Frame, Options, Server};
use std::path::{Path, PathBuf};
use std::process::Command;

fn python() -> PathBuf {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: `make test` creates it",
        python.display()
    );
    python
}

/// Runs an example script from its own directory; its standard output.
fn run_example(dir: &str, script: &str, args: &[String]) -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(dir);
    let output = Command::new(python())
        .arg(script)
        .args(args)
        .current_dir(&dir)
        .output()
        .expect("run the example");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{script} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// The cells of the table row that starts with `name`.
fn row(output: &str, name: &str) -> Vec<String> {
    let line = output
        .lines()
        .find(|line| line.starts_with(&format!("| {name} |")))
        .unwrap_or_else(|| panic!("no row for {name}:\n{output}"));
    line.trim_matches('|')
        .split('|')
        .map(|cell| cell.trim().to_string())
        .collect()
}

/// "10.9 KiB" and the like, in KiB.
fn kib(cell: &str) -> f64 {
    let (number, unit) = cell.split_once(' ').unwrap();
    let number: f64 = number.parse().unwrap();
    match unit {
        "MiB" => number * 1024.0,
        "KiB" => number,
        _ => number / 1024.0,
    }
}

#[test]
fn the_crawler_dedup_benchmark_compares_three_approaches() {
    let server = Server::start();
    let output = run_example(
        "crawler_dedup",
        "bench.py",
        &[
            "--port".into(),
            server.port.to_string(),
            "--urls".into(),
            "5000".into(),
        ],
    );
    assert!(
        output.starts_with("5,000 URLs discovered, 4,500 distinct"),
        "{output}"
    );
    let bloom = row(&output, "redis-bf BF.ADD");
    let exact = row(&output, "set of SHA-1 fingerprints (SADD)");
    let client = row(&output, "client-side Bloom (SETBIT x k)");
    // Round trips per URL: one, one, and k = 7 at 1%.
    assert_eq!(bloom[2], "1.0");
    assert_eq!(exact[2], "1.0");
    assert_eq!(client[2], "7.0");
    // The exact set never skips a new URL; the filters skip few.
    assert_eq!(exact[5], "0.000% (0 of 4,500)");
    assert_eq!(exact[6], "0.00%");
    for filter in [&bloom, &client] {
        let rate: f64 = filter[5].split('%').next().unwrap().parse().unwrap();
        assert!(rate < 1.0, "{filter:?}");
    }
    // The module's filter is far smaller than the set.
    assert!(
        kib(&bloom[3]) * 10.0 < kib(&exact[3]),
        "{bloom:?} {exact:?}"
    );
    // It cleaned up after itself.
    assert_eq!(server.conn().call(&["DBSIZE"]), Frame::Int(0));
}

#[test]
fn the_cache_guard_refuses_absent_ids_without_asking_the_store() {
    let server = Server::start();
    let output = run_example(
        "cache_guard",
        "guard.py",
        &[
            "--port".into(),
            server.port.to_string(),
            "--users".into(),
            "5000".into(),
            "--lookups".into(),
            "4000".into(),
        ],
    );
    assert!(
        output.contains("4,000 lookups: 2,000 for users that exist, 2,000 for ids that do not"),
        "{output}"
    );
    // Every lookup of an existing user reaches the store; of the 2,000 absent ids only the false
    // positives do (0.1% expected: a handful at most).
    let queries: usize = output
        .split("store queries: ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .map(|count| count.replace(',', "").parse().unwrap())
        .unwrap();
    assert!((2000..2010).contains(&queries), "{output}");
    assert!(output.contains("a user added after loading is found at once"));
    // A tenth of the users deleted, each id looked up once through each guard: with the Bloom
    // filter every lookup reaches the store (it cannot forget an id); with the cuckoo filter,
    // which deleted the ids, only its false positives do: at most the 0.1% share, rounded up to
    // a whole lookup.
    assert!(
        output.contains("deleted 500 users; each deleted id looked up once through each guard"),
        "{output}"
    );
    let reached = |filter: &str| -> (u64, u64) {
        let rest = output
            .split(&format!(
                "lookups of deleted ids that reached the store with the {filter}: "
            ))
            .nth(1)
            .unwrap_or_else(|| panic!("no {filter} line in {output}"));
        let mut words = rest.split(' ');
        let count = words.next().unwrap().replace(',', "").parse().unwrap();
        assert_eq!(words.next(), Some("of"), "{output}");
        let of = words.next().unwrap().replace(',', "").parse().unwrap();
        (count, of)
    };
    assert_eq!(reached("Bloom filter"), (500, 500), "{output}");
    let (cuckoo, deleted) = reached("cuckoo filter");
    assert_eq!(deleted, 500, "{output}");
    assert!(
        cuckoo as f64 <= (deleted as f64 * 0.001).ceil(),
        "{cuckoo} of {deleted} deleted ids passed the cuckoo guard:\n{output}"
    );
    assert!(
        output.contains("every remaining user looked up still passes the cuckoo guard"),
        "{output}"
    );
    assert_eq!(server.conn().call(&["DBSIZE"]), Frame::Int(0));
}

/// A number after `label` in the output ("fetched again after their window: 4,865 URLs").
fn figure(output: &str, label: &str) -> u64 {
    output
        .split(label)
        .nth(1)
        .map(|rest| {
            let digits: String = rest
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == ',')
                .filter(char::is_ascii_digit)
                .collect();
            digits.parse().unwrap()
        })
        .unwrap_or_else(|| panic!("no {label:?} in:\n{output}"))
}

#[test]
fn the_recrawl_example_fetches_a_page_again_only_after_its_window() {
    let server = Server::start();
    let output = run_example(
        "crawler_dedup",
        "recrawl.py",
        &[
            "--port".into(),
            server.port.to_string(),
            "--urls".into(),
            "3000".into(),
            "--window".into(),
            "2".into(),
        ],
    );
    assert!(
        output.contains("fetches; fetched twice within a window: 0\n"),
        "{output}"
    );
    // Most URLs are discovered again after their window, and then fetched again.
    assert!(
        figure(&output, "fetched again after their window: ") > 1500,
        "{output}"
    );
    // The whole-key TTL recipe refetches pages it had just fetched, all at once.
    assert!(
        figure(&output, "whole-key TTL: fetched twice within a window: ") > 0,
        "{output}"
    );
    assert!(
        figure(&output, "largest tick after the first window: windowed ")
            < figure(&output, ", whole-key TTL "),
        "{output}"
    );
    assert_eq!(server.conn().call(&["DBSIZE"]), Frame::Int(0));
    // The run the README shows is one the script prints: the same lines, figures aside.
    let readme = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/crawler_dedup/README.md"),
    )
    .unwrap();
    let shown = readme
        .split("One run here (Redis 7.0.15):\n\n```\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("the README's run of recrawl.py");
    let printed: Vec<String> = output.lines().map(without_figures).collect();
    for line in shown.lines() {
        assert!(
            printed.contains(&without_figures(line)),
            "the README shows {line:?}, which recrawl.py does not print:\n{output}"
        );
    }
    assert_eq!(shown.lines().count(), printed.len(), "{shown}\n{output}");
    // The run shown refetched no URL sooner than its window (2 s).
    let gap = shown
        .split("time between two fetches of a URL: ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|gap| gap.parse::<f64>().ok())
        .unwrap_or_else(|| panic!("no gap in {shown}"));
    assert!(gap >= 2.0, "{shown}");
}

/// A line with each of its numbers ("12,408", "2.00", "0") made "#".
fn without_figures(line: &str) -> String {
    let mut text = String::new();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() {
            while chars
                .peek()
                .is_some_and(|next| next.is_ascii_digit() || *next == ',' || *next == '.')
            {
                chars.next();
            }
            text.push('#');
        } else {
            text.push(c);
        }
    }
    text
}

#[test]
fn the_feed_example_never_shows_a_video_twice_within_its_window() {
    let server = Server::start();
    let output = run_example(
        "feed",
        "feed.py",
        &[
            "--port".into(),
            server.port.to_string(),
            "--users".into(),
            "20".into(),
            "--window".into(),
            "2".into(),
        ],
    );
    assert!(
        output.contains("shown twice within a window: 0\n"),
        "{output}"
    );
    assert!(
        figure(&output, "shown again after their window: ") > 0,
        "{output}"
    );
    // Every refresh finds ten videos not shown within the window.
    assert_eq!(figure(&output, "videos shown: "), 20 * 30 * 10, "{output}");
    assert_eq!(server.conn().call(&["DBSIZE"]), Frame::Int(0));
    // The README's memory per user: the range it gives holds what the script printed, and the
    // run it shows.
    let readme = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/feed/README.md"),
    )
    .unwrap();
    let low = figure(&readme, "The memory per user is between ");
    let high = figure(&readme, &format!("between {} and ", thousands(low)));
    let printed = figure(&output, "memory per user: ");
    let shown = figure(&readme, "memory per user: ");
    assert!(
        (low..=high).contains(&printed) && (low..=high).contains(&shown),
        "the README says {low} to {high} bytes a user and shows {shown}; the script printed \
         {printed}:\n{output}"
    );
}

/// 9224 as the scripts print it: 9,224.
fn thousands(number: u64) -> String {
    let digits = number.to_string();
    let mut text = String::new();
    for (at, digit) in digits.chars().enumerate() {
        if at > 0 && (digits.len() - at).is_multiple_of(3) {
            text.push(',');
        }
        text.push(digit);
    }
    text
}

#[test]
fn every_example_says_in_one_line_that_a_server_has_no_module() {
    let server = Server::with(Options {
        without_module: true,
        ..Options::default()
    });
    let port = server.port.to_string();
    for (dir, script) in [
        ("crawler_dedup", "bench.py"),
        ("crawler_dedup", "recrawl.py"),
        ("cache_guard", "guard.py"),
        ("feed", "feed.py"),
    ] {
        let output = Command::new(python())
            .arg(script)
            .args(["--port", &port])
            .current_dir(
                Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("examples")
                    .join(dir),
            )
            .output()
            .expect("run the example");
        assert_eq!(output.status.code(), Some(1), "{script}");
        assert_eq!(
            String::from_utf8_lossy(&output.stderr),
            format!(
                "error: the Redis server at 127.0.0.1:{port} has no Bloom filter module loaded: \
                 start one with `make run` (it prints its port) and pass that port with --port\n"
            ),
            "{script}"
        );
        assert!(output.stdout.is_empty(), "{script}");
    }
    assert_eq!(server.conn().call(&["DBSIZE"]), Frame::Int(0));
}

#[test]
fn the_cache_guards_readme_quotes_the_filter_size_the_script_prints() {
    let server = Server::start();
    let output = run_example(
        "cache_guard",
        "guard.py",
        &[
            "--port".into(),
            server.port.to_string(),
            "--users".into(),
            "100000".into(),
            "--lookups".into(),
            "2000".into(),
        ],
    );
    let size = output
        .split("100,000 users loaded into guard:user-ids: ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .unwrap_or_else(|| panic!("no size in {output}"));
    let readme = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/cache_guard/README.md"),
    )
    .unwrap();
    assert!(
        readme.contains(&format!("100,000 users at 0.1% (a {size}-byte filter")),
        "the script prints {size} bytes"
    );
}

/// The Go crawler (examples/go_crawl), built offline against Debian's redigo as its go.mod says
/// (GOPROXY=off, build cache and output under target/go), crawls 2,000 synthetic pages with one
/// BF.MADD per batch of 100 and fetches each page once; against a server without the module it
/// stops with the Python examples' line.
#[test]
fn the_go_crawler_fetches_each_page_once_with_one_bf_madd_per_batch() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let hint = "make test installs golang-go and golang-github-gomodule-redigo-dev";
    let go = Command::new("go").arg("version").output();
    assert!(
        go.is_ok_and(|output| output.status.success()),
        "no `go` on PATH: {hint}"
    );
    let redigo = Path::new("/usr/share/gocode/src/github.com/gomodule/redigo/redis");
    assert!(redigo.is_dir(), "{} is missing: {hint}", redigo.display());
    let out = root.join("target/go");
    let binary = out.join("go_crawl");
    let build = Command::new("go")
        .args(["build", "-o"])
        .arg(&binary)
        .arg(".")
        .current_dir(root.join("examples/go_crawl"))
        .env("GO111MODULE", "on")
        .env("GOFLAGS", "-mod=readonly")
        .env("GOPROXY", "off")
        .env("GOTOOLCHAIN", "local")
        .env("GOPATH", &out)
        .env("GOCACHE", out.join("cache"))
        .output()
        .expect("run go build");
    assert!(
        build.status.success(),
        "go build failed ({hint}):\n{}",
        String::from_utf8_lossy(&build.stderr)
    );

    let server = Server::start();
    let output = Command::new(&binary)
        .args(["--port", &server.port.to_string(), "--pages", "2000"])
        .output()
        .expect("run the Go example");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // 1 start URL and 8 links on each of the 2,000 pages; every page fetched once.
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "2,000 pages on the site; filter crawl:go:seen sized for 1,000,000 URLs at 0.10%; \
         batches of 100 pages\n\
         16,001 URLs discovered, 2,000 new (fetched), 14,001 duplicates skipped; \
         25 BF.MADD calls; pages never reached: 0\n"
    );
    assert_eq!(server.conn().call(&["DBSIZE"]), Frame::Int(0));

    let bare = Server::with(Options {
        without_module: true,
        ..Options::default()
    });
    let port = bare.port.to_string();
    let output = Command::new(&binary)
        .args(["--port", &port])
        .output()
        .expect("run the Go example");
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        format!(
            "error: the Redis server at 127.0.0.1:{port} has no Bloom filter module loaded: \
             start one with `make run` (it prints its port) and pass that port with --port\n"
        )
    );
    assert!(output.stdout.is_empty());
    assert_eq!(bare.conn().call(&["DBSIZE"]), Frame::Int(0));
}
