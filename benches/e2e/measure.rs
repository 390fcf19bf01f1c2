//! How the sections measure: the workload sizes (scaled down by `BENCH_QUICK`), `redis-benchmark`
//! pinned beside the server, a command's server cost from `INFO commandstats`, medians of runs.

use crate::common::{self, Conn, Frame, Server};
use std::process::Command;
use std::time::Instant;

/// `BENCH_QUICK=1`: every workload scaled down, for trying the driver out, not for numbers.
pub fn quick() -> bool {
    std::env::var("BENCH_QUICK").is_ok_and(|v| v == "1")
}

/// Scales a workload down in quick mode.
pub fn size(full: u64) -> u64 {
    if quick() {
        (full / 50).max(1000)
    } else {
        full
    }
}

/// Runs redis-benchmark with a custom command; returns requests per second. It runs on CPU 1,
/// the server on CPU 0, so that they do not take turns on one core and blur the server's cost.
pub fn redis_benchmark(server: &Server, requests: u64, keyspace: u64, command: &[String]) -> f64 {
    let mut program = common::pin_to(1);
    program.push("redis-benchmark".into());
    let output = Command::new(&program[0])
        .args(&program[1..])
        .arg("-p")
        .arg(server.port.to_string())
        .args(["-h", "127.0.0.1", "-c", "50", "-P", "16", "--csv"])
        .arg("-n")
        .arg(requests.to_string())
        .arg("-r")
        .arg(keyspace.to_string())
        .args(command)
        .output()
        .expect("run redis-benchmark (apt-get install redis-tools)");
    let text = String::from_utf8_lossy(&output.stdout);
    // "test","rps",...: the second field of the last line.
    text.lines()
        .last()
        .and_then(|line| line.split(',').nth(1))
        .and_then(|rps| rps.trim_matches('"').parse().ok())
        .unwrap_or_else(|| panic!("no rps in redis-benchmark output:\n{text}"))
}

/// Microseconds per call of a command since the last CONFIG RESETSTAT (total `usec` over
/// `calls`: INFO's own `usec_per_call` is rounded to 0.01).
pub fn usec_per_call(conn: &mut Conn, command: &str) -> f64 {
    let info = conn.call(&["INFO", "commandstats"]).text();
    let prefix = format!("cmdstat_{}:", command.to_lowercase());
    let line = info
        .lines()
        .find(|line| line.to_lowercase().starts_with(&prefix))
        .unwrap_or_else(|| panic!("no {prefix} in INFO commandstats"));
    let field = |name: &str| -> f64 {
        line.split([',', ':'])
            .find_map(|field| field.strip_prefix(name))
            .and_then(|value| value.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in {line}"))
    };
    field("usec=") / field("calls=")
}

/// One measured command: its server cost and throughput.
pub struct Measure {
    pub usec: f64,
    pub rps: f64,
}

/// One run of a command's benchmark: its server cost, in microseconds per call.
pub fn measure_once(
    server: &Server,
    name: &str,
    requests: u64,
    keyspace: u64,
    command: &[&str],
) -> f64 {
    let mut conn = server.conn();
    let command: Vec<String> = command.iter().map(|s| s.to_string()).collect();
    assert_eq!(conn.call(&["CONFIG", "RESETSTAT"]), Frame::ok());
    redis_benchmark(server, requests, keyspace, &command);
    usec_per_call(&mut conn, name)
}

/// Runs a command's benchmark three times and keeps the median of each figure.
pub fn measure(
    server: &Server,
    name: &str,
    requests: u64,
    keyspace: u64,
    command: &[&str],
) -> Measure {
    let mut conn = server.conn();
    let command: Vec<String> = command.iter().map(|s| s.to_string()).collect();
    let mut usecs = Vec::new();
    let mut rates = Vec::new();
    for _ in 0..3 {
        assert_eq!(conn.call(&["CONFIG", "RESETSTAT"]), Frame::ok());
        rates.push(redis_benchmark(server, requests, keyspace, &command));
        usecs.push(usec_per_call(&mut conn, name));
    }
    Measure {
        usec: median(usecs),
        rps: median(rates),
    }
}

/// The median of some measures (of an even count, the mean of the middle two).
pub fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let middle = values.len() / 2;
    if values.len().is_multiple_of(2) {
        (values[middle - 1] + values[middle]) / 2.0
    } else {
        values[middle]
    }
}

/// How many pairs of runs a row that compares two sides takes: an even number, for the ABBA
/// order of [`alternate`].
pub const PAIRS: usize = 6;

/// [`PAIRS`] pairs of runs of `a` and `b` in ABBA order (a then b, b then a, a then b, ...):
/// neither side always runs first, so that a machine that drifts (its caches, its clock, its
/// neighbours) over a pair favours each side as often. Each pair's (a, b).
pub fn alternate(mut a: impl FnMut() -> f64, mut b: impl FnMut() -> f64) -> Vec<(f64, f64)> {
    (0..PAIRS)
        .map(|pair| {
            if pair % 2 == 0 {
                let x = a();
                (x, b())
            } else {
                let y = b();
                (a(), y)
            }
        })
        .collect()
}

/// The median time of three runs, in seconds.
pub fn seconds(mut run: impl FnMut()) -> f64 {
    let times: Vec<f64> = (0..3)
        .map(|_| {
            let start = Instant::now();
            run();
            start.elapsed().as_secs_f64()
        })
        .collect();
    median(times)
}

/// A batch command of 100 random items: `verb key item:__rand_int__ ...` (redis-benchmark fills
/// each `__rand_int__` in).
pub fn batch_of_100(verb: &str, key: &str) -> Vec<String> {
    let mut args = vec![verb.to_string(), key.to_string()];
    args.extend((0..100).map(|_| "item:__rand_int__".to_string()));
    args
}
