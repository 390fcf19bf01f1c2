//! Section `redisbloom`: RedisBloom side by side, when `REDISBLOOM_SO` names a build of it: the
//! same server binary, pinned the same way, the same filters and workloads, pairs of runs in ABBA
//! order between the two modules (`measure::alternate`); each row is the median of the ratios of
//! its pairs. Server cost per call of single items and batches on the 10M and 100M filters (the
//! 100M one also in the blocked layout, against RedisBloom's classic one), and the throughput 50
//! clients with pipelines of 16 get, beside GET's under the same load (the ceiling). RedisBloom
//! runs on [`THEIR_SERVERS`] servers that hold the same filters, the pairs taking them in turn:
//! where a filter on small pages lands moves its speed. Every row with a target has an A/A row
//! beside it: the same workload against a second server with this very build, the run's own
//! noise; and the 1e8 rows one of RedisBloom against itself. When `BENCH_BASELINE_SO` names one,
//! the same single commands against this module's previous build (the A/B rows: a regression is
//! a ratio past the A/A row's).

use crate::common::{Frame, Server};
use crate::measure::{alternate, batch_of_100, measure_once, median, redis_benchmark, size};
use crate::report::Row;
use crate::server::{self, fill, reserve};
use std::path::PathBuf;

pub const GROUP: &str = "side by side with RedisBloom 2.4 (usec per call or per item)";
const THROUGHPUT: &str =
    "throughput against RedisBloom 2.4 (50 clients, pipeline 16: usec per request, 1/rps)";
const SELF: &str = "this build against itself (A/A) and its previous build (A/B), usec per call";
/// RedisBloom's servers, each holding the same filters, that the pairs of runs take in turn.
const THEIR_SERVERS: usize = 3;

/// One workload run on both servers.
#[derive(Clone)]
pub struct Workload {
    /// The row's name.
    pub label: &'static str,
    /// The command's name in INFO commandstats.
    pub name: &'static str,
    /// Requests per run.
    pub requests: u64,
    pub command: Vec<String>,
    /// Items per call: the row is per item.
    pub per: f64,
    /// The target ratio.
    pub limit: f64,
}

/// Measures this section and appends its rows.
pub fn rows(main: &Server, rows: &mut Vec<Row>) {
    // Every server compared holds the same filters and nothing else: a server that holds more
    // (the main server, after the other sections) answers the same commands measurably slower
    // (the A/A rows read 1.1x to 1.3x when one side held 100 MB more), which would show as a
    // difference between the modules.
    let ours = server::start();
    prepare(&ours, Filters::Ten);
    self_rows(&ours, rows);
    let Some(module) = std::env::var_os("REDISBLOOM_SO").map(PathBuf::from) else {
        println!(
            "(skipped the comparison with RedisBloom: set REDISBLOOM_SO to a build of it, such as \
             the one ../shared/tools/build-redisbloom.sh makes)"
        );
        return;
    };
    prepare(&ours, Filters::Classic);
    // RedisBloom's filters on several servers, each pair of runs against the next: RedisBloom
    // asks for no huge pages, and a filter on small pages answers at a speed that depends on
    // where it landed (four identical servers of its 1e8 filter read up to 1.2x apart; four of
    // this module's, on huge pages, 1.07x), so that one server would be one draw of that.
    let theirs: Vec<Server> = (0..THEIR_SERVERS)
        .map(|_| {
            let server = server::start_with_module(&module);
            prepare(&server, Filters::Classic);
            server
        })
        .collect();
    let blocked = server::start();
    prepare(&blocked, Filters::Blocked);
    for workload in workloads() {
        let mine = if workload.command[1].ends_with("-b") {
            &blocked
        } else {
            &ours
        };
        rows.push(side_by_side_over(
            mine,
            &theirs,
            workload,
            GROUP,
            "RedisBloom",
        ));
    }
    drop(blocked);
    // RedisBloom's own A/A rows on the 1e8 filter: its first server against its second, the
    // spread that one server of each side would leave in a row.
    for mut workload in workloads().into_iter().skip(2).take(2) {
        workload.limit = f64::INFINITY;
        rows.push(side_by_side(
            &theirs[0],
            &theirs[1],
            workload,
            GROUP,
            "RedisBloom on another server (A/A of RedisBloom)",
        ));
    }
    // The A/A rows of the throughput: a second server with this build and the same filters.
    let same = server::start();
    prepare(&same, Filters::Classic);
    for workload in &workloads()[..2] {
        rows.push(throughput(
            &ours,
            &theirs,
            workload,
            "RedisBloom",
            1.0 / 1.10,
        ));
        rows.push(throughput(
            &ours,
            std::slice::from_ref(&same),
            workload,
            "this build (A/A)",
            f64::INFINITY,
        ));
    }
    rows.push(ceiling(main));
}

/// The time per request of `GET` on a random (missing) key under the same load: the server's
/// own parsing, networking and reply, with no module, which bounds any module command's rate.
fn ceiling(server: &Server) -> Row {
    let command = ["GET".to_string(), "item:__rand_int__".to_string()];
    let times = (0..5)
        .map(|_| 1e6 / redis_benchmark(server, size(1_000_000), 1_000_000_000, &command))
        .collect();
    Row::new(
        THROUGHPUT,
        "GET of a random key (the server alone: the ceiling)",
        median(times),
        "us",
    )
}

/// Which of the section's filters a server gets.
#[derive(Clone, Copy, PartialEq)]
enum Filters {
    /// `ten`: 10M items at 1%, half full.
    Ten,
    /// `ten`, and `hundred`: 100M items at 1%, half full.
    Classic,
    /// `hundred-b`: `hundred` in the blocked layout (this module's), alone.
    Blocked,
}

/// The section's filters, half full, that the server does not hold yet.
fn prepare(server: &Server, filters: Filters) {
    let mut conn = server.conn();
    let wanted = match filters {
        Filters::Ten => vec![("ten", size(10_000_000), "CLASSIC")],
        Filters::Classic => vec![
            ("ten", size(10_000_000), "CLASSIC"),
            ("hundred", size(100_000_000), "CLASSIC"),
        ],
        Filters::Blocked => vec![("hundred-b", size(100_000_000), "BLOCKED")],
    };
    for (key, capacity, layout) in wanted {
        if conn.call(&["EXISTS", key]) == Frame::Int(1) {
            continue;
        }
        if layout == "CLASSIC" {
            reserve(&mut conn, key, capacity);
        } else {
            crate::layout::reserve(&mut conn, key, 0.01, capacity, layout);
        }
        fill(&mut conn, key, capacity / 2);
    }
}

/// The A/A rows (a second server with this build) and the A/B rows (one with the previous
/// build, when `BENCH_BASELINE_SO` names it): single BF.ADD and BF.EXISTS on the 10M filter.
fn self_rows(ours: &Server, rows: &mut Vec<Row>) {
    let same = server::start();
    prepare(&same, Filters::Ten);
    for workload in &workloads()[..2] {
        let mut row = side_by_side(ours, &same, workload.clone(), SELF, "this build (A/A)");
        row.target.as_mut().unwrap().limit = f64::INFINITY;
        rows.push(row);
    }
    drop(same);
    let Some(module) = std::env::var_os("BENCH_BASELINE_SO").map(PathBuf::from) else {
        println!("(skipped the A/B rows: set BENCH_BASELINE_SO to a build of the previous commit)");
        return;
    };
    let before = server::start_with_module(&module);
    prepare(&before, Filters::Ten);
    for workload in &workloads()[..2] {
        let mut row = side_by_side(
            ours,
            &before,
            workload.clone(),
            SELF,
            "previous build (A/B)",
        );
        row.target.as_mut().unwrap().limit = f64::INFINITY;
        rows.push(row);
    }
}

/// The workloads against RedisBloom, with their targets (issue 46: the single commands that
/// are the module's reason to be, ahead of RedisBloom's on big filters).
fn workloads() -> [Workload; 8] {
    let on = |verb: &str, key: &str| vec![verb.to_string(), key.into(), "item:__rand_int__".into()];
    // Ours on `ours`, RedisBloom's on `theirs` (ours blocked against RedisBloom's classic).
    let versus = |verb: &str, ours: &str, theirs: &str| {
        let mut command = on(verb, ours);
        command.push(format!("@{theirs}"));
        command
    };
    [
        Workload {
            label: "BF.ADD, 10M-item filter half full, new items",
            name: "bf.add",
            requests: size(300_000),
            command: on("BF.ADD", "ten"),
            per: 1.0,
            limit: 0.75,
        },
        Workload {
            label: "BF.EXISTS, the same filter",
            name: "bf.exists",
            requests: size(1_000_000),
            command: on("BF.EXISTS", "ten"),
            per: 1.0,
            limit: 0.65,
        },
        Workload {
            label: "BF.ADD, 100M-item filter half full, new items",
            name: "bf.add",
            requests: size(300_000),
            command: on("BF.ADD", "hundred"),
            per: 1.0,
            limit: 0.70,
        },
        Workload {
            label: "BF.EXISTS, the same filter",
            name: "bf.exists",
            requests: size(1_000_000),
            command: on("BF.EXISTS", "hundred"),
            per: 1.0,
            limit: 0.70,
        },
        Workload {
            label: "BF.ADD, 100M-item filter half full, blocked (RedisBloom: classic)",
            name: "bf.add",
            requests: size(300_000),
            command: versus("BF.ADD", "hundred-b", "hundred"),
            per: 1.0,
            limit: 0.70,
        },
        Workload {
            label: "BF.EXISTS, the same filters",
            name: "bf.exists",
            requests: size(1_000_000),
            command: versus("BF.EXISTS", "hundred-b", "hundred"),
            per: 1.0,
            limit: 0.70,
        },
        Workload {
            label: "BF.MADD x100, 100M-item filter half full, per item",
            name: "bf.madd",
            requests: size(20_000),
            command: batch_of_100("BF.MADD", "hundred"),
            per: 100.0,
            limit: 0.34,
        },
        Workload {
            label: "BF.MEXISTS x100, the same filter, per item",
            name: "bf.mexists",
            requests: size(20_000),
            command: batch_of_100("BF.MEXISTS", "hundred"),
            per: 100.0,
            limit: 0.34,
        },
    ]
}

/// The command of a workload on each side: a last word `@key` names the key on the other side
/// (for comparisons of two keys), and is not sent.
fn commands_of(workload: &Workload) -> (Vec<String>, Vec<String>) {
    let mut ours = workload.command.clone();
    let mut theirs = ours.clone();
    if let Some(other) = ours.last().and_then(|word| word.strip_prefix('@')) {
        theirs[1] = other.to_string();
        ours.pop();
        theirs.pop();
    }
    (ours, theirs)
}

/// [`crate::measure::PAIRS`] pairs of runs of one workload in ABBA order (new items every run:
/// a keyspace far bigger than the requests); the row is per item, its ratio the median of the
/// pairs'.
pub fn side_by_side(
    ours: &Server,
    theirs: &Server,
    workload: Workload,
    group: &'static str,
    baseline: &str,
) -> Row {
    side_by_side_over(
        ours,
        std::slice::from_ref(theirs),
        workload,
        group,
        baseline,
    )
}

/// [`side_by_side`] against servers that hold the same filters, each pair against the next in
/// turn.
pub fn side_by_side_over(
    ours: &Server,
    theirs: &[Server],
    workload: Workload,
    group: &'static str,
    baseline: &str,
) -> Row {
    let (mine, their_command) = commands_of(&workload);
    let run = |server: &Server, command: &[String]| {
        let command: Vec<&str> = command.iter().map(String::as_str).collect();
        measure_once(
            server,
            workload.name,
            workload.requests,
            1_000_000_000,
            &command,
        ) / workload.per
    };
    let mut turn = 0;
    let runs = alternate(
        || run(ours, &mine),
        || {
            turn += 1;
            run(&theirs[(turn - 1) % theirs.len()], &their_command)
        },
    );
    pair_row(group, workload.label, runs, baseline, workload.limit, "us")
}

/// A row of pairs of runs: the medians of each side, and the pairs' ratios.
fn pair_row(
    group: &'static str,
    label: &str,
    runs: Vec<(f64, f64)>,
    baseline: &str,
    limit: f64,
    unit: &'static str,
) -> Row {
    let pairs = runs.iter().map(|(a, b)| a / b).collect();
    let (mine, their): (Vec<f64>, Vec<f64>) = runs.into_iter().unzip();
    Row::new(group, label, median(mine), unit)
        .against(baseline, median(their), limit)
        .with_pairs(pairs)
}

/// Pairs of throughput runs of a single-item workload (50 clients, pipelines of 16), as time per
/// request, in ABBA order: at least 1.10 times RedisBloom's requests per second is at most
/// 1/1.10 (0.909) of its time.
fn throughput(
    ours: &Server,
    theirs: &[Server],
    workload: &Workload,
    baseline: &str,
    limit: f64,
) -> Row {
    let run =
        |server| 1e6 / redis_benchmark(server, workload.requests, 1_000_000_000, &workload.command);
    let mut turn = 0;
    let runs = alternate(
        || run(ours),
        || {
            turn += 1;
            run(&theirs[(turn - 1) % theirs.len()])
        },
    );
    pair_row(THROUGHPUT, workload.label, runs, baseline, limit, "us")
}
