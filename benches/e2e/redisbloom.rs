//! Section `redisbloom`: RedisBloom side by side, when `REDISBLOOM_SO` names a build of it: the
//! same server binary, pinned the same way, the same filters and workloads, runs alternating
//! between the two modules; each row is the median of the ratios of its pairs. Server cost per
//! call, and the throughput 50 clients with pipelines of 16 get. Then the same single commands
//! against a second server with this very build (the A/A row: what the run's own noise is) and,
//! when `BENCH_BASELINE_SO` names one, against this module's previous build (the A/B rows: a
//! regression is a ratio past the A/A row's).

use crate::common::{Frame, Server};
use crate::measure::{batch_of_100, measure_once, median, redis_benchmark, size};
use crate::report::Row;
use crate::server::{self, fill, reserve};
use std::path::PathBuf;

pub const GROUP: &str = "side by side with RedisBloom 2.4 (usec per call or per item)";
const THROUGHPUT: &str =
    "throughput against RedisBloom 2.4 (50 clients, pipeline 16: usec per request, 1/rps)";
const SELF: &str = "this build against itself (A/A) and its previous build (A/B), usec per call";

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
pub fn rows(ours: &Server, rows: &mut Vec<Row>) {
    prepare(ours, false);
    self_rows(ours, rows);
    let Some(module) = std::env::var_os("REDISBLOOM_SO").map(PathBuf::from) else {
        println!(
            "(skipped the comparison with RedisBloom: set REDISBLOOM_SO to a build of it, such as \
             the one ../shared/tools/build-redisbloom.sh makes)"
        );
        return;
    };
    let theirs = server::start_with_module(&module);
    prepare(ours, true);
    prepare(&theirs, true);
    for workload in workloads() {
        rows.push(side_by_side(ours, &theirs, workload, GROUP, "RedisBloom"));
    }
    for workload in &workloads()[..2] {
        rows.push(throughput(ours, &theirs, workload));
    }
    rows.push(ceiling(ours));
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

/// The section's filters, half full: `ten` (10M items) and, if `hundred`, `hundred` (100M).
fn prepare(server: &Server, hundred: bool) {
    let mut conn = server.conn();
    let mut filters = vec![("ten", size(10_000_000))];
    if hundred {
        filters.push(("hundred", size(100_000_000)));
    }
    for (key, capacity) in filters {
        if conn.call(&["EXISTS", key]) == Frame::Int(1) {
            continue;
        }
        reserve(&mut conn, key, capacity);
        fill(&mut conn, key, capacity / 2);
    }
}

/// The A/A rows (a second server with this build) and the A/B rows (one with the previous
/// build, when `BENCH_BASELINE_SO` names it): single BF.ADD and BF.EXISTS on the 10M filter.
fn self_rows(ours: &Server, rows: &mut Vec<Row>) {
    let same = server::start();
    prepare(&same, false);
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
    prepare(&before, false);
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

fn workloads() -> [Workload; 4] {
    let single = |verb: &str| vec![verb.to_string(), "ten".into(), "item:__rand_int__".into()];
    [
        Workload {
            label: "BF.ADD, 10M-item filter half full, new items",
            name: "bf.add",
            requests: size(300_000),
            command: single("BF.ADD"),
            per: 1.0,
            limit: 0.85,
        },
        Workload {
            label: "BF.EXISTS, the same filter",
            name: "bf.exists",
            requests: size(1_000_000),
            command: single("BF.EXISTS"),
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

/// Five alternating pairs of runs of one workload, ours then theirs.
pub fn side_by_side(
    ours: &Server,
    theirs: &Server,
    workload: Workload,
    group: &'static str,
    baseline: &str,
) -> Row {
    let command: Vec<&str> = workload.command.iter().map(String::as_str).collect();
    let (mut mine, mut their, mut pairs) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..5 {
        // New items every run: a keyspace far bigger than the requests.
        let run = |server| {
            measure_once(
                server,
                workload.name,
                workload.requests,
                1_000_000_000,
                &command,
            )
        };
        let a = run(ours);
        let b = run(theirs);
        mine.push(a / workload.per);
        their.push(b / workload.per);
        pairs.push(a / b);
    }
    Row::new(group, workload.label, median(mine), "us")
        .against(baseline, median(their), workload.limit)
        .with_pairs(pairs)
}

/// Five alternating pairs of throughput runs of a single-item workload (50 clients, pipelines of
/// 16), as time per request: at least 1.15 times RedisBloom's requests per second is at most
/// 1/1.15 (0.87) of its time.
fn throughput(ours: &Server, theirs: &Server, workload: &Workload) -> Row {
    let (mut mine, mut their, mut pairs) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..5 {
        let run = |server| {
            1e6 / redis_benchmark(server, workload.requests, 1_000_000_000, &workload.command)
        };
        let a = run(ours);
        let b = run(theirs);
        mine.push(a);
        their.push(b);
        pairs.push(a / b);
    }
    Row::new(THROUGHPUT, workload.label, median(mine), "us")
        .against("RedisBloom", median(their), 0.87)
        .with_pairs(pairs)
}
