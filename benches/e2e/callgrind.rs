//! Section `callgrind`: whole-server instructions per request. redis-server runs under callgrind,
//! 20,000 pipelined requests of one command minus an idle run (the same start, setup and
//! shutdown). This counts the request parsing and reply writing that every command shares, which
//! `INFO commandstats` leaves out, so it is the fair comparison of a module command with the
//! server's own, and with RedisBloom's (`REDISBLOOM_SO`) and this module's previous build
//! (`BENCH_BASELINE_SO`) on the same server binary. Every server starts with the same random seed
//! (tests/fake/fixed_seed.c, preloaded), so its hash tables lay out alike and the counts repeat
//! from run to run: these rows need no pairs.

use crate::common::{fixed_seed_library, Frame, Options, Server};
use crate::measure::size;
use crate::report::Row;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const GROUP: &str = "whole-server instructions per request (callgrind)";

/// The commands compared with another module: the floor (open the key, reply), a lookup and an
/// add on the 100K-item filter (of items it does not hold, and of items it holds: a crawler's
/// commonest check, issue 54), with their targets against RedisBloom's; and the single cuckoo
/// commands (whose targets are times per item, in section `cuckoo`: these rows say how much of
/// the whole request each module's code is).
const AGAINST_OTHERS: [(&str, &[&str], f64); 9] = [
    (
        "BF.CARD (open the key, reply: the module floor)",
        &["BF.CARD", "small"],
        f64::INFINITY,
    ),
    (
        "BF.EXISTS on a missing key (the floor with an item: no filter work)",
        &["BF.EXISTS", "missing", "item:__rand_int__"],
        f64::INFINITY,
    ),
    (
        "BF.EXISTS, 100K-item filter",
        &["BF.EXISTS", "small", "item:__rand_int__"],
        1.00,
    ),
    (
        "BF.ADD, 100K-item filter",
        &["BF.ADD", "small", "item:__rand_int__"],
        1.00,
    ),
    (
        "BF.EXISTS of held items, 100K-item filter holding 100,000",
        &["BF.EXISTS", "held", "item:__rand_int__"],
        1.00,
    ),
    (
        "BF.ADD of held items, the same filter",
        &["BF.ADD", "held", "item:__rand_int__"],
        1.00,
    ),
    (
        "CF.EXISTS, an empty cuckoo filter of 1M slots",
        &["CF.EXISTS", "cuckoo", "item:__rand_int__"],
        f64::INFINITY,
    ),
    (
        "CF.ADD, the same filter",
        &["CF.ADD", "cuckoo", "item:__rand_int__"],
        f64::INFINITY,
    ),
    (
        "CF.DEL, the same filter",
        &["CF.DEL", "cuckoo", "item:__rand_int__"],
        f64::INFINITY,
    ),
];

/// Measures this section and appends its rows.
pub fn rows(rows: &mut Vec<Row>) {
    if Command::new("valgrind").arg("--version").output().is_err() {
        println!("(skipped the callgrind rows: valgrind is not installed)");
        return;
    }
    let requests = size(20_000);
    let idle = instructions_under_callgrind(None, &[], 0);
    let per_request = |command: &[&str]| -> f64 {
        let busy = instructions_under_callgrind(None, command, requests);
        (busy - idle) as f64 / requests as f64
    };
    let get = per_request(&["GET", "k"]);
    let set = per_request(&["SET", "k", "v"]);
    let card = per_request(&["BF.CARD", "small"]);
    let exists = per_request(&["BF.EXISTS", "small", "item:__rand_int__"]);
    let add = per_request(&["BF.ADD", "small", "item:__rand_int__"]);
    for (name, value, target) in [
        ("GET k", get, None),
        ("SET k v", set, None),
        (
            "BF.CARD (open the key, reply: the module API's floor)",
            card,
            Some(("GET", get, f64::INFINITY)),
        ),
        (
            "BF.EXISTS, 100K-item filter",
            exists,
            Some(("GET", get, 1.15)),
        ),
        ("BF.ADD, 100K-item filter", add, Some(("SET", set, 1.15))),
    ] {
        let mut row = Row::new(GROUP, name, value, "instr");
        if let Some((baseline, value, limit)) = target {
            row = row.against(baseline, value, limit);
        }
        rows.push(row);
    }
    // Against RedisBloom, the targets above; against the previous build, small filters pay
    // nothing for what big ones gained: at most 3% more (issue 46).
    let others: Vec<(PathBuf, &str, Targets)> = [
        ("REDISBLOOM_SO", "RedisBloom 2.4", Targets::RedisBloom),
        ("BENCH_BASELINE_SO", "the previous build", Targets::Previous),
    ]
    .into_iter()
    .filter_map(|(variable, baseline, with_targets)| {
        let module = std::env::var_os(variable).map(PathBuf::from);
        if module.is_none() {
            println!("(callgrind: skipped the rows against {baseline}: set {variable})");
        }
        module.map(|module| (module, baseline, with_targets))
    })
    .collect();
    if others.is_empty() {
        return;
    }
    let missing = per_request(&["BF.EXISTS", "missing", "item:__rand_int__"]);
    let later = AGAINST_OTHERS[4..]
        .iter()
        .map(|(_, command, _)| per_request(command));
    let ours: Vec<f64> = [card, missing, exists, add]
        .into_iter()
        .chain(later)
        .collect();
    for (module, baseline, with_targets) in others {
        let idle = instructions_under_callgrind(Some(&module), &[], 0);
        for ((name, command, limit), &ours) in AGAINST_OTHERS.iter().zip(&ours) {
            let busy = instructions_under_callgrind(Some(&module), command, requests);
            let theirs = (busy - idle) as f64 / requests as f64;
            let limit = match with_targets {
                Targets::RedisBloom => *limit,
                Targets::Previous if name.starts_with("BF.EXISTS, 100K") => 1.03,
                Targets::Previous if name.starts_with("BF.ADD, 100K") => 1.03,
                Targets::Previous if name.starts_with("BF.EXISTS of held") => 1.03,
                Targets::Previous if name.starts_with("BF.ADD of held") => 1.03,
                Targets::Previous => f64::INFINITY,
            };
            rows.push(Row::new(GROUP, *name, ours, "instr").against(baseline, theirs, limit));
        }
    }
}

/// The items the `held` filter holds: every one `-r 100000` draws.
const HELD: u64 = 100_000;

/// Which targets the rows against another module take.
#[derive(Clone, Copy)]
enum Targets {
    /// RedisBloom's: the limits of [`AGAINST_OTHERS`].
    RedisBloom,
    /// This module's previous build: the in-cache lookups and adds (of items held or not) at
    /// most 3% more.
    Previous,
}

/// Instructions a redis-server with the module (this one, or `module`) executes under
/// callgrind: started, set up (a 100K-item filter `small` with one item, another, `held`, holding
/// the 100,000 items redis-benchmark's `item:__rand_int__` names with `-r 100000`, a cuckoo
/// filter `cuckoo` of 1,048,576 slots in buckets of 4, a string `k`),
/// `requests` of `command` pipelined 16 deep on one connection, then shut down.
fn instructions_under_callgrind(module: Option<&Path>, command: &[&str], requests: u64) -> u64 {
    let mut server = Server::with(
        Options {
            module: module.map(Path::to_path_buf),
            // Relative to the server's directory, its working directory.
            prefix: [
                "valgrind",
                "--tool=callgrind",
                "--callgrind-out-file=callgrind.out",
            ]
            .map(String::from)
            .to_vec(),
            start_timeout: Some(Duration::from_secs(120)),
            ..Options::default()
        }
        .config("loglevel", "notice")
        // The server's timer once a second (its default is ten), and no slow log: under callgrind
        // a run takes seconds, and both ran in it for as long as it took (a busier machine, more
        // of them), which moved a count by up to 2% between two runs of one build (issue 54).
        .config("hz", "1")
        .config("slowlog-log-slower-than", "-1")
        // The same seed at every start: the command table's layout, and so the compares a
        // command's lookup makes, repeat (with a random seed they moved a count by up to 3%).
        .env("LD_PRELOAD", &fixed_seed_library().to_string_lossy()),
    );
    let mut conn = server.conn();
    assert_eq!(
        conn.call(&["BF.RESERVE", "small", "0.01", "100000"]),
        Frame::ok()
    );
    assert_eq!(conn.call(&["BF.ADD", "small", "item:1"]), Frame::Int(1));
    assert_eq!(
        conn.call(&["BF.RESERVE", "held", "0.01", "100000"]),
        Frame::ok()
    );
    for start in (0..HELD).step_by(1000) {
        let mut madd = vec!["BF.MADD".to_string(), "held".to_string()];
        madd.extend((start..start + 1000).map(crate::held::item));
        assert!(matches!(conn.call(&madd), Frame::Array(_)));
    }
    let cuckoo = ["CF.RESERVE", "cuckoo", "1048576", "BUCKETSIZE", "4"];
    assert_eq!(conn.call(&cuckoo), Frame::ok());
    assert_eq!(conn.call(&["SET", "k", "v"]), Frame::ok());
    if requests > 0 {
        let output = Command::new("redis-benchmark")
            .args(["-p", &server.port.to_string(), "-h", "127.0.0.1"])
            .args(["-c", "1", "-P", "16"])
            .args(["-r", "100000", "-n", &requests.to_string(), "-q"])
            .args(command)
            .output()
            .expect("run redis-benchmark");
        assert!(output.status.success());
    }
    server.shutdown();
    let profile =
        std::fs::read_to_string(server.dir.join("callgrind.out")).expect("callgrind's output");
    profile
        .lines()
        .find_map(|line| {
            line.strip_prefix("summary:")
                .or_else(|| line.strip_prefix("totals:"))
        })
        .and_then(|total| total.trim().parse().ok())
        .expect("a total in callgrind's output")
}
