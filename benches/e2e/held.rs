//! Section `held`: a crawler's real workload, checks of items the filter mostly holds already
//! (issue 54). A crawler checks every link it finds, and most links point to pages it has seen:
//! 98% or more of its checks find their item (Scrapy's dupefilter sends `BF.ADD` and gets 0, a
//! cache guard sends `BF.EXISTS` and gets 1). Needs `REDISBLOOM_SO`.
//!
//! The filters are the issue's: `BF.RESERVE crawl 0.01 100000000` (classic, and `LAYOUT BLOCKED`
//! on a server of its own) holding the 20,000,000 items `item:000000000000` to
//! `item:000019999999`, redis-benchmark's spelling of `item:__rand_int__` (12 digits, zero-padded),
//! so that `-r 20000000` draws held items only, `-r 40000000` half held, and a prefix no item has
//! none; and `CF.RESERVE crawl 16777216 BUCKETSIZE 4 MAXITERATIONS 500` holding 10,000,000 such
//! items. Every row is [`PAIRS`](crate::measure::PAIRS) pairs of runs in ABBA order against
//! RedisBloom 2.4's same filter (its Bloom filter on three servers the pairs take in turn: see the
//! `redisbloom` section), the median of the pairs' ratios and their spread; the A/A rows (this
//! build on a second server holding the same filter, and RedisBloom on its first against its
//! second) are the run's noise, and `GET` of a missing key on the two servers their bias. The
//! crawl replays pages' links: each page's 50 links, 15 to the site's 200 pages every page
//! links to, 34 to pages seen before anywhere in the site, 1 to a page not seen yet, each sent
//! as a `BF.ADD` (98% answered 0).
//!
//! To check a row by hand: the same filter on two servers, then for instance
//! `redis-benchmark -p PORT -P 16 -n 1000000 -r 20408163 BF.EXISTS crawl item:__rand_int__`
//! (98% held) against each, time per call from `INFO commandstats` after `CONFIG RESETSTAT`
//! (docs/performance.md gives the recipe of each row).

use crate::common::rng::Rng;
use crate::common::{Conn, Frame, Server};
use crate::measure::{alternate, measure_once, median, size};
use crate::report::Row;
use crate::server::{self, fill_named};
use std::cell::Cell;
use std::path::{Path, PathBuf};

const GROUP: &str = "held items, a crawler's checks: usec per call vs RedisBloom 2.4";
const CUCKOO_GROUP: &str = "held items in cuckoo filters: usec per call vs RedisBloom 2.4";

/// The key of every filter of the section.
const KEY: &str = "crawl";

/// The name of item `i`, as redis-benchmark spells `item:__rand_int__` for the number `i`.
pub fn item(i: u64) -> String {
    format!("item:{i:012}")
}

/// How many of the items asked for the filter holds.
#[derive(Clone, Copy)]
enum Share {
    /// None: items of a prefix no item has, new in every run (so that adds stay new).
    None,
    /// Half: random items from twice as many as it holds.
    Half,
    /// 98%: random items from 1/0.98 times as many as it holds.
    Most,
}

impl Share {
    fn label(self) -> &'static str {
        match self {
            Share::None => "0% held",
            Share::Half => "50% held",
            Share::Most => "98% held",
        }
    }

    /// The item argument and redis-benchmark's `-r` for a filter holding `held` items, in run
    /// number `run`.
    fn items(self, held: u64, run: usize) -> (String, u64) {
        match self {
            Share::None => (format!("new{run}:__rand_int__"), held),
            Share::Half => ("item:__rand_int__".to_string(), held * 2),
            Share::Most => ("item:__rand_int__".to_string(), held * 100 / 98),
        }
    }
}

/// One side of a row: a server and the command's verb.
struct Side<'a> {
    servers: &'a [Server],
    verb: &'a str,
}

/// Measures this section and appends its rows.
pub fn rows(_main: &Server, rows: &mut Vec<Row>) {
    let Some(module) = std::env::var_os("REDISBLOOM_SO").map(PathBuf::from) else {
        println!("(skipped the held items against RedisBloom: set REDISBLOOM_SO)");
        return;
    };
    bloom_rows(&module, rows);
    cuckoo_rows(&module, rows);
}

/// The Bloom filters' rows: lookups and adds by the share held, both layouts, the crawl, the A/A
/// rows and the servers' bias.
fn bloom_rows(module: &Path, rows: &mut Vec<Row>) {
    let held = size(20_000_000);
    let capacity = size(100_000_000);
    let bloom = |server: Server, layout: &[&str]| {
        let mut conn = server.conn();
        let mut reserve = vec!["BF.RESERVE", KEY, "0.01"];
        let capacity = capacity.to_string();
        reserve.push(&capacity);
        reserve.extend(layout);
        assert_eq!(conn.call(&reserve), Frame::ok());
        fill_named(&mut conn, KEY, held, item);
        assert_holds(&mut conn, "BF.MEXISTS", held);
        server
    };
    let ours = [bloom(server::start(), &[])];
    let blocked = [bloom(server::start(), &["LAYOUT", "BLOCKED"])];
    let theirs: Vec<Server> = (0..3)
        .map(|_| bloom(server::start_with_module(module), &[]))
        .collect();
    let same = [bloom(server::start(), &[])];
    for (mine, layout) in [(&ours, "classic"), (&blocked, "blocked")] {
        for (verb, shares, requests) in [
            (
                "BF.EXISTS",
                &[Share::None, Share::Half, Share::Most][..],
                size(1_000_000),
            ),
            ("BF.ADD", &[Share::None, Share::Most][..], size(300_000)),
        ] {
            for &share in shares {
                let limit = match share {
                    Share::Half => f64::INFINITY,
                    _ => 0.70,
                };
                let label = format!(
                    "{verb}, 1e8 {layout} filter of 20M items, {}",
                    share.label()
                );
                let ours = Side {
                    servers: mine,
                    verb,
                };
                let redisbloom = Side {
                    servers: &theirs,
                    verb,
                };
                rows.push(pairs(
                    GROUP,
                    &label,
                    (&ours, &redisbloom),
                    (held, share, requests),
                    ("RedisBloom (classic)", limit),
                ));
            }
        }
        let label = format!("crawl: pages' links by BF.ADD, 98% seen, 1e8 {layout} filter");
        let runs = alternate(crawl_run(&mine[0], held), crawl_run(&theirs[0], held));
        rows.push(row(
            GROUP,
            &label,
            runs,
            "RedisBloom (classic)",
            f64::INFINITY,
        ));
    }
    // The run's noise: this build against a second server with the same filter, RedisBloom
    // against itself; and what the servers themselves cost apart from any module.
    for (verb, requests) in [("BF.EXISTS", size(1_000_000)), ("BF.ADD", size(300_000))] {
        let label =
            format!("{verb}, 1e8 classic filter, 98% held (A/A: this build on two servers)");
        rows.push(aa_row(
            GROUP,
            &label,
            verb,
            (&ours, &same),
            (held, requests),
            "this build (A/A)",
        ));
    }
    rows.push(aa_row(
        GROUP,
        "BF.EXISTS, 1e8 classic filter, 98% held (A/A of RedisBloom: its first server and its second)",
        "BF.EXISTS",
        (&theirs[..1], &theirs[1..2]),
        (held, size(1_000_000)),
        "RedisBloom (A/A)",
    ));
    let runs = alternate(
        || get(&ours[0], size(1_000_000)),
        rotating(&theirs, |server| get(server, size(1_000_000))),
    );
    rows.push(row(
        GROUP,
        "GET of a missing key on the same servers (their bias, no module code)",
        runs,
        "RedisBloom's servers",
        f64::INFINITY,
    ));
    let runs = alternate(crawl_run(&ours[0], held), crawl_run(&same[0], held));
    rows.push(row(
        GROUP,
        "crawl, 1e8 classic filter (A/A: this build on two servers)",
        runs,
        "this build (A/A)",
        f64::INFINITY,
    ));
}

/// The cuckoo filters' rows: lookups and adds by the share held on the 10M-item filter, with
/// A/A rows.
fn cuckoo_rows(module: &Path, rows: &mut Vec<Row>) {
    let held = size(10_000_000);
    let capacity = (held * 16 / 10).next_power_of_two().to_string();
    let cuckoo = |server: Server| {
        let mut conn = server.conn();
        let reserve = [
            "CF.RESERVE",
            KEY,
            &capacity,
            "BUCKETSIZE",
            "4",
            "MAXITERATIONS",
            "500",
        ];
        assert_eq!(conn.call(&reserve), Frame::ok());
        fill_cuckoo(&mut conn, held);
        assert_holds(&mut conn, "CF.MEXISTS", held);
        server
    };
    let ours = [cuckoo(server::start())];
    let theirs = [cuckoo(server::start_with_module(module))];
    let same = [cuckoo(server::start())];
    let lookups = size(1_000_000);
    let adds = size(300_000);
    for (verb, share, requests) in [
        ("CF.EXISTS", Share::None, lookups),
        ("CF.EXISTS", Share::Half, lookups),
        ("CF.EXISTS", Share::Most, lookups),
        ("CF.ADDNX", Share::Most, adds),
        ("CF.ADD", Share::Most, adds),
    ] {
        let limit = match share {
            Share::Half => f64::INFINITY,
            _ => 0.8,
        };
        let label = format!("{verb}, 10M-item filter (buckets of 4), {}", share.label());
        rows.push(pairs(
            CUCKOO_GROUP,
            &label,
            (
                &Side {
                    servers: &ours,
                    verb,
                },
                &Side {
                    servers: &theirs,
                    verb,
                },
            ),
            (held, share, requests),
            ("RedisBloom", limit),
        ));
    }
    for (verb, requests) in [("CF.EXISTS", lookups), ("CF.ADDNX", adds)] {
        let label = format!("{verb}, the same, 98% held (A/A: this build on two servers)");
        rows.push(aa_row(
            CUCKOO_GROUP,
            &label,
            verb,
            (&ours, &same),
            (held, requests),
            "this build (A/A)",
        ));
    }
}

/// Checks that the filter really holds the items the rows call held: a sample of them, by a
/// batch lookup (`BF.MEXISTS` or `CF.MEXISTS`), all found.
fn assert_holds(conn: &mut Conn, mexists: &str, held: u64) {
    let mut command = vec![mexists.to_string(), KEY.to_string()];
    command.extend((0..held).step_by((held / 1000).max(1) as usize).map(item));
    let found = conn.call(&command);
    assert!(
        found.items().iter().all(|reply| *reply == Frame::Int(1)),
        "{mexists}: not every item held"
    );
}

/// Adds the items `item(0)`... to the cuckoo filter with pipelined CF.INSERT of 1,000 each.
fn fill_cuckoo(conn: &mut Conn, count: u64) {
    let mut pending = 0;
    for start in (0..count).step_by(1000) {
        let mut args = vec!["CF.INSERT".to_string(), KEY.into(), "ITEMS".into()];
        args.extend((start..(start + 1000).min(count)).map(item));
        conn.send(&args);
        pending += 1;
        if pending == 64 {
            (0..pending).for_each(|_| assert!(!conn.read().is_error()));
            pending = 0;
        }
    }
    (0..pending).for_each(|_| assert!(!conn.read().is_error()));
}

/// Pairs of runs of one workload on two sides, in ABBA order, each side's servers taken in turn.
fn pairs(
    group: &'static str,
    label: &str,
    (a, b): (&Side, &Side),
    (held, share, requests): (u64, Share, u64),
    (baseline, limit): (&str, f64),
) -> Row {
    // Each run its own number: new items stay new for adds of none held.
    let runs_made = Cell::new(0);
    let run = |server: &Server, verb: &str| {
        runs_made.set(runs_made.get() + 1);
        let (items, keyspace) = share.items(held, runs_made.get());
        let name = verb.to_lowercase();
        measure_once(server, &name, requests, keyspace, &[verb, KEY, &items])
    };
    let runs = alternate(
        rotating(a.servers, |server| run(server, a.verb)),
        rotating(b.servers, |server| run(server, b.verb)),
    );
    row(group, label, runs, baseline, limit)
}

/// A measure that takes `servers` in turn, one a run.
fn rotating<'a>(
    servers: &'a [Server],
    mut measure: impl FnMut(&'a Server) -> f64 + 'a,
) -> impl FnMut() -> f64 + 'a {
    let mut turn = 0;
    move || {
        turn += 1;
        measure(&servers[(turn - 1) % servers.len()])
    }
}

/// An A/A row: `verb` of items 98% held, on two sets of servers that hold the same filter, with no
/// limit (the row is the run's noise).
fn aa_row(
    group: &'static str,
    label: &str,
    verb: &str,
    (a, b): (&[Server], &[Server]),
    (held, requests): (u64, u64),
    baseline: &str,
) -> Row {
    let a = Side { servers: a, verb };
    let b = Side { servers: b, verb };
    pairs(
        group,
        label,
        (&a, &b),
        (held, Share::Most, requests),
        (baseline, f64::INFINITY),
    )
}

/// A row of pairs of runs: the medians of each side and the pairs' ratios.
fn row(group: &'static str, label: &str, runs: Vec<(f64, f64)>, baseline: &str, limit: f64) -> Row {
    let pairs = runs.iter().map(|(a, b)| a / b).collect();
    let (mine, theirs): (Vec<f64>, Vec<f64>) = runs.into_iter().unzip();
    Row::new(group, label, median(mine), "us")
        .against(baseline, median(theirs), limit)
        .with_pairs(pairs)
}

/// Time per call of `GET` of random missing keys on `server`.
fn get(server: &Server, requests: u64) -> f64 {
    measure_once(
        server,
        "get",
        requests,
        1_000_000_000,
        &["GET", "item:__rand_int__"],
    )
}

/// Pages the crawl replays a run; 50 links each.
const PAGES: usize = 20_000;
/// The pages every page links to (the site's navigation).
const SITE_WIDE: u64 = 200;

/// A crawl run on `server`'s filter of `held` items, each run with its own new pages: time per
/// `BF.ADD`.
fn crawl_run(server: &Server, held: u64) -> impl FnMut() -> f64 + '_ {
    let mut run = 0;
    move || {
        run += 1;
        crawl(server, held, run)
    }
}

/// Replays a crawl's checks: for each of [`PAGES`] pages, its 50 links as `BF.ADD`, pipelined 20
/// pages at a time; the server's time per call (`INFO commandstats`).
fn crawl(server: &Server, held: u64, run: usize) -> f64 {
    let pages = (size(PAGES as u64 * 50) / 50) as usize;
    // The same links every run but for the new ones, which are new to every run.
    let mut rng = Rng(0x5eed_c4a1);
    let mut conn = server.conn();
    assert_eq!(conn.call(&["CONFIG", "RESETSTAT"]), Frame::ok());
    let mut seen = 0;
    for batch in (0..pages).collect::<Vec<_>>().chunks(20) {
        let mut commands = Vec::with_capacity(batch.len() * 50);
        for &page in batch {
            for link in 0..50u64 {
                let name = match link {
                    0..15 => item(rng.next() % SITE_WIDE),
                    15..49 => item(rng.next() % held),
                    _ => format!("page:{run}:{page}"),
                };
                commands.push(vec!["BF.ADD".to_string(), KEY.to_string(), name]);
            }
        }
        for reply in crate::common::pipeline(&mut conn, &commands) {
            seen += usize::from(reply == Frame::Int(0));
        }
    }
    assert!(
        seen * 100 >= pages * 50 * 97,
        "the crawl's links were not mostly seen"
    );
    crate::measure::usec_per_call(&mut conn, "bf.add")
}
