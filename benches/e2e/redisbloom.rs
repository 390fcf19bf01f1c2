//! Section `redisbloom`: RedisBloom side by side, when `REDISBLOOM_SO` names a build of it: the
//! same server binary, pinned the same way, the same filters and workloads, runs alternating
//! between the two modules; each row is the median of the ratios of its pairs.

use crate::common::Server;
use crate::measure::{batch_of_100, measure_once, median, size};
use crate::report::Row;
use crate::server::{self, fill, reserve};
use std::path::PathBuf;

/// One workload run on both servers.
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
    let Some(module) = std::env::var_os("REDISBLOOM_SO").map(PathBuf::from) else {
        println!(
            "(skipped the comparison with RedisBloom: set REDISBLOOM_SO to a build of it, such as \
             the one ../shared/tools/build-redisbloom.sh makes)"
        );
        return;
    };
    let theirs = server::start_with_module(&module);
    for server in [ours, &theirs] {
        let mut conn = server.conn();
        for (key, capacity) in [("ten", size(10_000_000)), ("hundred", size(100_000_000))] {
            reserve(&mut conn, key, capacity);
            fill(&mut conn, key, capacity / 2);
        }
    }
    for workload in workloads() {
        rows.push(side_by_side(ours, &theirs, workload));
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
            limit: 0.8,
        },
        Workload {
            label: "BF.EXISTS, the same filter",
            name: "bf.exists",
            requests: size(1_000_000),
            command: single("BF.EXISTS"),
            per: 1.0,
            limit: 0.8,
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
pub fn side_by_side(ours: &Server, theirs: &Server, workload: Workload) -> Row {
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
    Row::new(
        "side by side with RedisBloom 2.4 (usec per call or per item)",
        workload.label,
        median(mine),
        "us",
    )
    .against("RedisBloom", median(their), workload.limit)
    .with_pairs(pairs)
}
