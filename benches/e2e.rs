//! The end-to-end benchmark behind `make bench`: a real redis-server with the module, driven by
//! `redis-benchmark`, every BF command's server cost (`INFO commandstats` usec_per_call) next to
//! Redis's own SET and GET measured on the same server in the same run; RedisBloom side by side
//! on the same server binary and workloads, when `REDISBLOOM_SO` names a build of it (alternating
//! runs, a ratio per pair and their median); whole-server instructions per request under
//! callgrind; RDB save and load of a 1 GB filter next to the same bytes in plain strings; memory
//! per item; and the core microbenchmarks (criterion's results, if `cargo bench -p bf-filter`
//! ran first).
//!
//! Prints one table; writes `target/bench/report.json` and `target/bench/report.svg`.
//! `BENCH_QUICK=1` shrinks every workload (for trying the driver out, not for numbers);
//! `BENCH_ONLY=commands,persistence` runs only some sections.

#[path = "../tests/common/resp.rs"]
#[allow(dead_code)]
mod resp;

use resp::{Conn, Frame};
use std::fmt::Write as _;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn quick() -> bool {
    std::env::var("BENCH_QUICK").is_ok_and(|v| v == "1")
}

/// Scales a workload down in quick mode.
fn size(full: u64) -> u64 {
    if quick() {
        (full / 50).max(1000)
    } else {
        full
    }
}

/// A command pinned to one CPU when there are two or more: the server on CPU 0, the load
/// generator on CPU 1, so that they do not take turns on one core and blur the server's cost.
fn pinned(program: &str, cpu: usize) -> Command {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus >= 2 && Command::new("taskset").arg("-V").output().is_ok() {
        let mut command = Command::new("taskset");
        command.arg("-c").arg(cpu.to_string()).arg(program);
        command
    } else {
        Command::new(program)
    }
}

/// A redis-server with a module, killed on drop.
struct Server {
    child: Child,
    port: u16,
    dir: PathBuf,
}

/// This module's release build.
fn our_module() -> PathBuf {
    let module = root().join("target/release/libredis_bf.so");
    assert!(module.exists(), "build the module first: make build");
    module
}

impl Server {
    /// A server with this module, allowed filters of up to 2 GiB.
    fn start() -> Server {
        Server::with_module(&our_module(), &["max-filter-bytes", "2gb"], "server")
    }

    /// A server with `module` and its load arguments, its data in `target/bench/<name>`.
    fn with_module(module: &std::path::Path, module_args: &[&str], name: &str) -> Server {
        let dir = root().join("target/bench").join(name);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let port = TcpListener::bind(("127.0.0.1", 0))
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = pinned("redis-server", 0)
            .arg("--port")
            .arg(port.to_string())
            .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .args(["--enable-debug-command", "yes", "--rdbcompression", "yes"])
            .arg("--dir")
            .arg(&dir)
            .arg("--logfile")
            .arg(dir.join("redis.log"))
            .arg("--loadmodule")
            .arg(module)
            .args(module_args)
            .stdin(Stdio::null())
            .spawn()
            .expect("start redis-server");
        let server = Server { child, port, dir };
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(mut conn) = Conn::connect(port) {
                if conn.call(&["PING"]) == Frame::Simple("PONG".into()) {
                    break;
                }
            }
            assert!(Instant::now() < deadline, "redis-server did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        server
    }

    fn conn(&self) -> Conn {
        Conn::connect(self.port).unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Runs redis-benchmark with a custom command; returns requests per second.
fn redis_benchmark(server: &Server, requests: u64, keyspace: u64, command: &[String]) -> f64 {
    let output = pinned("redis-benchmark", 1)
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
fn usec_per_call(conn: &mut Conn, command: &str) -> f64 {
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
struct Measure {
    usec: f64,
    rps: f64,
}

/// One run of a command's benchmark: its server cost, in microseconds per call.
fn measure_once(
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
fn measure(server: &Server, name: &str, requests: u64, keyspace: u64, command: &[&str]) -> Measure {
    let mut conn = server.conn();
    let command: Vec<String> = command.iter().map(|s| s.to_string()).collect();
    let mut usecs = Vec::new();
    let mut rates = Vec::new();
    for _ in 0..3 {
        assert_eq!(conn.call(&["CONFIG", "RESETSTAT"]), Frame::ok());
        rates.push(redis_benchmark(server, requests, keyspace, &command));
        usecs.push(usec_per_call(&mut conn, name));
    }
    let median = |mut values: Vec<f64>| {
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    };
    Measure {
        usec: median(usecs),
        rps: median(rates),
    }
}

/// Adds `count` items (`item:0`...) to `key` with pipelined BF.MADD of 1,000 items each.
fn fill(conn: &mut Conn, key: &str, count: u64) {
    fill_named(conn, key, count, |i| format!("item:{i}"));
}

/// [`fill`] with the items named by `name`.
fn fill_named(conn: &mut Conn, key: &str, count: u64, name: impl Fn(u64) -> String) {
    let batch = 1000;
    let mut pending = 0;
    let mut start = 0;
    while start < count {
        let end = (start + batch).min(count);
        let mut args = vec!["BF.MADD".to_string(), key.to_string()];
        args.extend((start..end).map(&name));
        conn.send(&args);
        pending += 1;
        if pending == 64 {
            for _ in 0..pending {
                assert!(!conn.read().is_error());
            }
            pending = 0;
        }
        start = end;
    }
    for _ in 0..pending {
        assert!(!conn.read().is_error());
    }
}

/// One row of the report.
struct Row {
    group: &'static str,
    name: String,
    value: f64,
    unit: &'static str,
    /// What the value is compared with, and the ratio it must stay at or under.
    target: Option<(String, f64, f64)>,
    /// For side-by-side rows: the ratio of each pair of alternating runs. The row's ratio is then
    /// their median, not the ratio of the two medians.
    pairs: Vec<f64>,
}

impl Row {
    fn ratio(&self) -> Option<f64> {
        if !self.pairs.is_empty() {
            return Some(median(self.pairs.clone()));
        }
        self.target.as_ref().map(|(_, base, _)| self.value / base)
    }

    fn met(&self) -> Option<bool> {
        let ratio = self.ratio()?;
        self.target.as_ref().map(|(_, _, limit)| ratio <= *limit)
    }
}

/// The median of some measures.
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// The median time of three runs, in seconds.
fn seconds(mut run: impl FnMut()) -> f64 {
    let mut times: Vec<f64> = (0..3)
        .map(|_| {
            let start = Instant::now();
            run();
            start.elapsed().as_secs_f64()
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[1]
}

/// The mean of a criterion benchmark, in ns, if it was run.
fn criterion_ns(group: &str, bench: &str) -> Option<f64> {
    let path = root()
        .join("target/criterion")
        .join(group)
        .join(bench.replace('/', "_"))
        .join("new/estimates.json");
    let text = std::fs::read_to_string(path).ok()?;
    // {"mean":{"confidence_interval":{...},"point_estimate":123.4,...
    let mean = text.find("\"mean\"")?;
    let at = text[mean..].find("\"point_estimate\":")? + mean + "\"point_estimate\":".len();
    let end = text[at..].find([',', '}'])? + at;
    text[at..end].trim().parse().ok()
}

fn main() {
    // `cargo bench` passes --bench; nothing else is taken.
    let out = root().join("target/bench");
    std::fs::create_dir_all(&out).unwrap();
    let mut rows: Vec<Row> = Vec::new();

    // BENCH_ONLY=commands,persistence runs some sections (core, commands, batches, redisbloom,
    // callgrind, bounded, creation, memory, window, persistence); all by default.
    let only = std::env::var("BENCH_ONLY").unwrap_or_default();
    let wanted = |section: &str| only.is_empty() || only.split(',').any(|s| s == section);
    if wanted("core") {
        core_rows(&mut rows);
    }
    let server = Server::start();
    if wanted("commands") {
        command_rows(&server, &mut rows);
    }
    if wanted("batches") {
        batch_rows(&server, &mut rows);
    }
    if wanted("redisbloom") {
        redisbloom_rows(&server, &mut rows);
    }
    if wanted("callgrind") {
        callgrind_rows(&mut rows);
    }
    if wanted("bounded") {
        bounded_rows(&server, &mut rows);
    }
    if wanted("creation") {
        creation_rows(&server, &mut rows);
    }
    if wanted("memory") {
        memory_rows(&server, &mut rows);
    }
    if wanted("window") {
        window_rows(&server, &mut rows);
    }
    if wanted("persistence") {
        persistence_rows(&server, &mut rows);
    }
    drop(server);

    let machine = machine();
    print_table(&rows, &machine);
    std::fs::write(out.join("report.json"), json(&rows, &machine)).unwrap();
    std::fs::write(out.join("report.svg"), svg(&rows, &machine)).unwrap();
    println!(
        "\nwrote {} and {}",
        out.join("report.json").display(),
        out.join("report.svg").display()
    );
}

fn core_rows(rows: &mut Vec<Row>) {
    for size in ["1MiB", "1GiB"] {
        for (op, per) in [
            ("add", 1.0),
            ("lookup", 1.0),
            ("add-batch100", 100.0),
            ("lookup-batch100", 100.0),
        ] {
            let ours = criterion_ns(size, &format!("{op}/ours"));
            let theirs = criterion_ns(size, &format!("{op}/bloomfilter"));
            if let (Some(ours), Some(theirs)) = (ours, theirs) {
                rows.push(Row {
                    group: "core (criterion)",
                    name: format!("{op} {size}, ns per item"),
                    value: ours / per,
                    unit: "ns",
                    target: Some(("bloomfilter crate".into(), theirs / per, 1.0)),
                    pairs: Vec::new(),
                });
            }
        }
    }
    if rows.is_empty() {
        eprintln!("(no criterion results: run `cargo bench -p bf-filter --bench core` first)");
    }
}

fn command_rows(server: &Server, rows: &mut Vec<Row>) {
    let mut conn = server.conn();
    let requests = size(1_000_000);
    // Redis's own commands on one key, as the BF commands below work on one filter.
    let set = measure(server, "set", requests, 1_000_000, &["SET", "k", "v"]);
    let get = measure(server, "get", requests, 1_000_000, &["GET", "k"]);
    reserve_small(&mut conn);
    let add = measure(
        server,
        "bf.add",
        requests,
        100_000,
        &["BF.ADD", "small", "item:__rand_int__"],
    );
    let exists = measure(
        server,
        "bf.exists",
        requests,
        100_000,
        &["BF.EXISTS", "small", "item:__rand_int__"],
    );
    // The floor of any module command on Redis 7.0: open a key, read its value, reply; no filter
    // work. What is left between it and GET is the module API's own cost.
    let card = measure(server, "bf.card", requests, 100_000, &["BF.CARD", "small"]);
    let items = size(10_000_000);
    assert_eq!(
        conn.call(&["BF.RESERVE", "big", "0.01", &items.to_string()]),
        Frame::ok()
    );
    fill(&mut conn, "big", items);
    let big_add = measure(
        server,
        "bf.add",
        requests,
        items * 2,
        &["BF.ADD", "big", "item:__rand_int__"],
    );
    let big_exists = measure(
        server,
        "bf.exists",
        requests,
        items * 2,
        &["BF.EXISTS", "big", "item:__rand_int__"],
    );
    let rps = |m: &Measure| m.rps;
    for (name, m, base, base_name, limit) in [
        ("SET k v", &set, None, "", 0.0),
        ("GET k", &get, None, "", 0.0),
        (
            "BF.ADD, 100K-item filter (134 KB)",
            &add,
            Some(set.usec),
            "SET",
            f64::INFINITY,
        ),
        (
            "BF.EXISTS, 100K-item filter (134 KB)",
            &exists,
            Some(get.usec),
            "GET",
            f64::INFINITY,
        ),
        (
            "BF.CARD (module API floor: open key, reply)",
            &card,
            Some(get.usec),
            "GET",
            f64::INFINITY,
        ),
        (
            "BF.ADD, 10M-item filter, full",
            &big_add,
            Some(set.usec),
            "SET",
            f64::INFINITY,
        ),
        (
            "BF.EXISTS, 10M-item filter, full",
            &big_exists,
            Some(get.usec),
            "GET",
            f64::INFINITY,
        ),
    ] {
        rows.push(Row {
            group: "server cost (usec_per_call)",
            name: name.to_string(),
            value: m.usec,
            unit: "us",
            target: base.map(|b| (base_name.to_string(), b, limit)),
            pairs: Vec::new(),
        });
        rows.push(Row {
            group: "throughput (redis-benchmark, 50 clients, pipeline 16)",
            name: name.to_string(),
            value: rps(m),
            unit: "req/s",
            target: None,
            pairs: Vec::new(),
        });
    }
    conn.call(&["DEL", "big"]);
}

/// A small filter: 100,000 items at 1% (134 KB, in the CPU's caches), never past its capacity.
/// Every section that uses it reserves it, so that any one of them can run alone (`BENCH_ONLY`).
fn reserve_small(conn: &mut Conn) {
    let reply = conn.call(&["BF.RESERVE", "small", "0.01", "100000"]);
    assert!(reply == Frame::ok() || reply.is_error(), "{reply:?}");
    let info = conn.call(&["BF.INFO", "small", "CAPACITY"]);
    assert_eq!(info.items()[0].int(), 100_000, "{info:?}");
}

fn batch_rows(server: &Server, rows: &mut Vec<Row>) {
    let mut conn = server.conn();
    reserve_small(&mut conn);
    let capacity = size(100_000_000);
    assert_eq!(
        conn.call(&["BF.RESERVE", "huge", "0.01", &capacity.to_string()]),
        Frame::ok()
    );
    fill(&mut conn, "huge", capacity / 2);
    let requests = size(50_000);
    let batch = |verb: &str, key: &str| -> Vec<String> {
        let mut args = vec![verb.to_string(), key.to_string()];
        args.extend((0..100).map(|_| "item:__rand_int__".to_string()));
        args
    };
    let per_item = |verb: &str, key: &str, keyspace: u64| -> f64 {
        let args = batch(verb, key);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        measure(server, &verb.to_lowercase(), requests, keyspace, &args).usec * 1000.0 / 100.0
    };
    let small_madd = per_item("BF.MADD", "small", 100_000);
    let small_mexists = per_item("BF.MEXISTS", "small", 100_000);
    let huge_madd = per_item("BF.MADD", "huge", capacity);
    let huge_mexists = per_item("BF.MEXISTS", "huge", capacity);
    for (name, value, base) in [
        (
            "BF.MADD x100, 100K-item filter (in cache)",
            small_madd,
            None,
        ),
        (
            "BF.MEXISTS x100, 100K-item filter (in cache)",
            small_mexists,
            None,
        ),
        (
            "BF.MADD x100, 100M-item filter half full (138 MB)",
            huge_madd,
            Some(small_madd),
        ),
        (
            "BF.MEXISTS x100, 100M-item filter half full (138 MB)",
            huge_mexists,
            Some(small_mexists),
        ),
    ] {
        rows.push(Row {
            group: "batches, ns per item",
            name: name.into(),
            value,
            unit: "ns",
            target: base.map(|b| ("same batch in cache".to_string(), b, 3.0)),
            pairs: Vec::new(),
        });
    }
    // Single items: all the cache lines of an item are requested before the first is tested, so
    // a filter far bigger than the caches costs at most twice the one in them.
    let singles = size(300_000);
    for verb in ["BF.ADD", "BF.EXISTS"] {
        let name = verb.to_lowercase();
        let small = measure(
            server,
            &name,
            singles,
            100_000,
            &[verb, "small", "item:__rand_int__"],
        );
        let huge = measure(
            server,
            &name,
            singles,
            capacity,
            &[verb, "huge", "item:__rand_int__"],
        );
        rows.push(Row {
            group: "single items, usec per call",
            name: format!("{verb}, 100M-item filter half full (138 MB)"),
            value: huge.usec,
            unit: "us",
            target: Some(("the same on the 100K-item filter".into(), small.usec, 2.0)),
            pairs: Vec::new(),
        });
    }
    conn.call(&["DEL", "huge"]);
}

/// Bounded work: a batch costs no more per item than the same items as single commands, on the
/// chains where speculative work could blow up (a thousand sub-filters; a thousand hashes).
fn bounded_rows(server: &Server, rows: &mut Vec<Row>) {
    let mut conn = server.conn();
    // 1,021 one-item sub-filters of EXPANSION 1 (adds past that are refused: the error rate of
    // the next one would leave the range of a double).
    assert_eq!(
        conn.call(&["BF.RESERVE", "long", "0.99", "1", "EXPANSION", "1"]),
        Frame::ok()
    );
    for i in 0..1100 {
        conn.call(&["BF.ADD", "long", &format!("x{i}")]);
    }
    // One sub-filter of 997 hashes, holding a thousand items.
    assert_eq!(
        conn.call(&["BF.RESERVE", "hashes", "1e-300", "1000", "NONSCALING"]),
        Frame::ok()
    );
    let mut madd = vec!["BF.MADD".to_string(), "hashes".to_string()];
    madd.extend((0..1000).map(|i| format!("item:{i}")));
    conn.call(&madd);
    let mexists = |key: &str| -> Vec<String> {
        let mut args = vec!["BF.MEXISTS".to_string(), key.to_string()];
        args.extend((0..100).map(|_| "item:__rand_int__".to_string()));
        args
    };
    for (key, label, requests) in [
        ("long", "1,021-sub-filter chain", size(100_000) / 50),
        ("hashes", "997-hash filter", size(1_000_000) / 20),
    ] {
        let batch = mexists(key);
        let batch: Vec<&str> = batch.iter().map(String::as_str).collect();
        let per_item = measure(server, "bf.mexists", requests, 2000, &batch).usec / 100.0;
        let single = measure(
            server,
            "bf.exists",
            requests * 20,
            2000,
            &["BF.EXISTS", key, "item:__rand_int__"],
        )
        .usec;
        rows.push(Row {
            group: "bounded work, us per item",
            name: format!("BF.MEXISTS x100, {label}"),
            value: per_item,
            unit: "us",
            // The same work per item either way (the batch spreads the command's own cost): 10%
            // for the noise between two runs.
            target: Some(("BF.EXISTS of one item".into(), single, 1.1)),
            pairs: Vec::new(),
        });
    }
    conn.call(&["DEL", "long", "hashes"]);
}

/// Creating a big filter: time per GiB of BF.RESERVE, against the server zeroing the same bytes
/// for a string (`SETRANGE` of 512 MB, Redis's largest string), which is what creating a filter
/// cost before its memory was zeroed lazily.
fn creation_rows(server: &Server, rows: &mut Vec<Row>) {
    let mut conn = server.conn();
    let items = size(800_000_000);
    let mut index = 0;
    let mut bytes = 0;
    let reserve = seconds(|| {
        index += 1;
        let key = format!("create:{index}");
        assert_eq!(
            conn.call(&["BF.RESERVE", &key, "0.01", &items.to_string(), "NONSCALING"]),
            Frame::ok()
        );
        bytes = conn.call(&["BF.INFO", &key, "SIZE"]).items()[0].int();
        conn.call(&["DEL", &key]);
    });
    let string_bytes = size(512 << 20) as i64;
    let zero = seconds(|| {
        assert!(!conn
            .call(&["SETRANGE", "zeros", &(string_bytes - 1).to_string(), "x"])
            .is_error());
        conn.call(&["DEL", "zeros"]);
    });
    let gib = f64::from(1u32 << 30);
    rows.push(Row {
        group: "creating a big filter, ms per GiB",
        name: format!("BF.RESERVE, {:.2} GB NONSCALING", bytes as f64 / 1e9),
        value: reserve * 1000.0 * gib / bytes as f64,
        unit: "ms",
        target: Some((
            "zeroing as many bytes (SETRANGE)".into(),
            zero * 1000.0 * gib / string_bytes as f64,
            0.1,
        )),
        pairs: Vec::new(),
    });
}

/// RedisBloom side by side, when `REDISBLOOM_SO` names a build of it: the same server binary,
/// pinned the same way, the same filters and workloads, runs alternating between the two modules;
/// each row is the median of the ratios of its pairs.
fn redisbloom_rows(ours: &Server, rows: &mut Vec<Row>) {
    let Some(module) = std::env::var_os("REDISBLOOM_SO").map(PathBuf::from) else {
        println!(
            "(skipped the comparison with RedisBloom: set REDISBLOOM_SO to a build of it, such as \
             the one ../shared/tools/build-redisbloom.sh makes)"
        );
        return;
    };
    let theirs = Server::with_module(&module, &[], "redisbloom");
    let ten = size(10_000_000);
    let hundred = size(100_000_000);
    for server in [ours, &theirs] {
        let mut conn = server.conn();
        for (key, capacity) in [("ten", ten), ("hundred", hundred)] {
            assert_eq!(
                conn.call(&["BF.RESERVE", key, "0.01", &capacity.to_string()]),
                Frame::ok()
            );
            fill(&mut conn, key, capacity / 2);
        }
    }
    let batch = |verb: &str, key: &str| -> Vec<String> {
        let mut args = vec![verb.to_string(), key.to_string()];
        args.extend((0..100).map(|_| "item:__rand_int__".to_string()));
        args
    };
    let madd = batch("BF.MADD", "hundred");
    let mexists = batch("BF.MEXISTS", "hundred");
    let single = |verb: &str| vec![verb.to_string(), "ten".into(), "item:__rand_int__".into()];
    // (row, command's name in INFO commandstats, requests per run, command, items per call,
    // target ratio)
    type Workload<'a> = (&'a str, &'a str, u64, Vec<String>, f64, f64);
    let workloads: [Workload; 4] = [
        (
            "BF.ADD, 10M-item filter half full, new items",
            "bf.add",
            size(300_000),
            single("BF.ADD"),
            1.0,
            0.8,
        ),
        (
            "BF.EXISTS, the same filter",
            "bf.exists",
            size(1_000_000),
            single("BF.EXISTS"),
            1.0,
            0.8,
        ),
        (
            "BF.MADD x100, 100M-item filter half full, per item",
            "bf.madd",
            size(20_000),
            madd,
            100.0,
            0.34,
        ),
        (
            "BF.MEXISTS x100, the same filter, per item",
            "bf.mexists",
            size(20_000),
            mexists,
            100.0,
            0.34,
        ),
    ];
    for (label, name, requests, command, per, limit) in workloads {
        let command: Vec<&str> = command.iter().map(String::as_str).collect();
        let (mut mine, mut their, mut pairs) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..5 {
            // New items every run: a keyspace far bigger than the requests.
            let a = measure_once(ours, name, requests, 1_000_000_000, &command);
            let b = measure_once(&theirs, name, requests, 1_000_000_000, &command);
            mine.push(a / per);
            their.push(b / per);
            pairs.push(a / b);
        }
        rows.push(Row {
            group: "side by side with RedisBloom 2.4 (usec per call or per item)",
            name: label.to_string(),
            value: median(mine),
            unit: "us",
            target: Some(("RedisBloom".into(), median(their), limit)),
            pairs,
        });
    }
}

/// Whole-server instructions per request: redis-server under callgrind, 20,000 pipelined
/// requests of one command minus an idle run (the same start, setup and shutdown). This counts
/// the request parsing and reply writing that every command shares, which `INFO commandstats`
/// leaves out, so it is the fair comparison of a module command with the server's own.
fn callgrind_rows(rows: &mut Vec<Row>) {
    if Command::new("valgrind").arg("--version").output().is_err() {
        println!("(skipped the callgrind rows: valgrind is not installed)");
        return;
    }
    let requests = size(20_000);
    let idle = instructions_under_callgrind(&[], 0);
    let per_request = |command: &[&str]| -> f64 {
        let busy = instructions_under_callgrind(command, requests);
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
        rows.push(Row {
            group: "whole-server instructions per request (callgrind)",
            name: name.to_string(),
            value,
            unit: "instr",
            target: target.map(|(base, value, limit)| (base.to_string(), value, limit)),
            pairs: Vec::new(),
        });
    }
}

/// Instructions a redis-server with the module executes under callgrind: started, set up (a
/// 100K-item filter `small` with one item, a string `k`), `requests` of `command` pipelined 16
/// deep on one connection, then shut down.
fn instructions_under_callgrind(command: &[&str], requests: u64) -> u64 {
    let dir = root().join("target/bench/callgrind");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let port = TcpListener::bind(("127.0.0.1", 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let out = dir.join("callgrind.out");
    let mut child = Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", out.display()))
        .arg("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no"])
        .arg("--dir")
        .arg(&dir)
        .arg("--loadmodule")
        .arg(our_module())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("run valgrind");
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut conn = loop {
        if let Ok(mut conn) = Conn::connect(port) {
            if conn.call(&["PING"]) == Frame::Simple("PONG".into()) {
                break conn;
            }
        }
        assert!(
            Instant::now() < deadline,
            "redis-server under valgrind did not start"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(
        conn.call(&["BF.RESERVE", "small", "0.01", "100000"]),
        Frame::ok()
    );
    assert_eq!(conn.call(&["BF.ADD", "small", "item:1"]), Frame::Int(1));
    assert_eq!(conn.call(&["SET", "k", "v"]), Frame::ok());
    if requests > 0 {
        let output = Command::new("redis-benchmark")
            .args([
                "-p",
                &port.to_string(),
                "-h",
                "127.0.0.1",
                "-c",
                "1",
                "-P",
                "16",
            ])
            .args(["-r", "100000", "-n", &requests.to_string(), "-q"])
            .args(command)
            .output()
            .expect("run redis-benchmark");
        assert!(output.status.success());
    }
    conn.send(&["SHUTDOWN", "NOSAVE"]);
    let _ = child.wait();
    let profile = std::fs::read_to_string(&out).expect("callgrind's output");
    profile
        .lines()
        .find_map(|line| {
            line.strip_prefix("summary:")
                .or_else(|| line.strip_prefix("totals:"))
        })
        .and_then(|total| total.trim().parse().ok())
        .expect("a total in callgrind's output")
}

fn memory_rows(server: &Server, rows: &mut Vec<Row>) {
    let mut conn = server.conn();
    let items = size(10_000_000);
    assert_eq!(
        conn.call(&["BF.RESERVE", "mem", "0.01", &items.to_string()]),
        Frame::ok()
    );
    fill(&mut conn, "mem", items);
    let usage = conn.call(&["MEMORY", "USAGE", "mem"]).int() as f64;
    let debug = conn.call(&["BF.DEBUG", "mem"]).items();
    let mut bit_bytes = 0.0;
    for line in &debug[1..] {
        let line = line.text();
        let bytes = line
            .split(' ')
            .find_map(|t| t.strip_prefix("bytes:"))
            .unwrap();
        bit_bytes += bytes.parse::<f64>().unwrap();
    }
    let filters = (debug.len() - 1) as f64;
    let card = conn.call(&["BF.CARD", "mem"]).int() as f64;
    rows.push(Row {
        group: "memory",
        name: "MEMORY USAGE per item, 10M items at 1%".into(),
        value: usage / card,
        unit: "bytes",
        target: Some(("theory at p/2 (11.03 bits)".into(), 11.0275 / 8.0, 1.01)),
        pairs: Vec::new(),
    });
    rows.push(Row {
        group: "memory",
        name: "MEMORY USAGE over bit array + 512 B per sub-filter".into(),
        value: usage,
        unit: "bytes",
        target: Some((
            "bit array + 512 B/sub-filter".into(),
            bit_bytes + 512.0 * filters,
            1.01,
        )),
        pairs: Vec::new(),
    });
    conn.call(&["DEL", "mem"]);
}

/// Windowed filters against plain ones of the same capacity and error rate: what a command
/// costs, and the memory per item in steady state (items arriving evenly for three windows) and
/// after a burst (a window's capacity at once).
fn window_rows(server: &Server, rows: &mut Vec<Row>) {
    let mut conn = server.conn();
    // Cost: 100,000 items an hour against a plain filter of 100,000 items, both holding every
    // item the benchmark asks for (redis-benchmark's `__rand_int__` is 12 digits, zero-padded).
    conn.call(&["DEL", "hourly", "plain100k"]);
    assert_eq!(
        conn.call(&["BF.RESERVE", "hourly", "0.01", "100000", "WINDOW", "3600"]),
        Frame::ok()
    );
    assert_eq!(
        conn.call(&["BF.RESERVE", "plain100k", "0.01", "100000"]),
        Frame::ok()
    );
    for key in ["hourly", "plain100k"] {
        fill_named(&mut conn, key, 100_000, |i| format!("item:{i:012}"));
    }
    for (label, name, verb) in [
        ("BF.ADD, 100K items an hour, items held", "bf.add", "BF.ADD"),
        ("BF.EXISTS, the same filter", "bf.exists", "BF.EXISTS"),
    ] {
        let (mut mine, mut plain, mut pairs) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..5 {
            let a = measure_once(
                server,
                name,
                size(300_000),
                100_000,
                &[verb, "hourly", "item:__rand_int__"],
            );
            let b = measure_once(
                server,
                name,
                size(300_000),
                100_000,
                &[verb, "plain100k", "item:__rand_int__"],
            );
            mine.push(a);
            plain.push(b);
            pairs.push(a / b);
        }
        rows.push(Row {
            group: "windowed filters against plain ones",
            name: label.to_string(),
            value: median(mine),
            unit: "us",
            target: Some(("plain filter, 100K items".into(), median(plain), 1.5)),
            pairs,
        });
    }
    conn.call(&["DEL", "hourly", "plain100k"]);

    // Memory: `capacity` items per 4-second window.
    let capacity = size(400_000);
    let window = 4u64;
    conn.call(&["DEL", "plain", "steady", "burst"]);
    for (key, extra) in [
        ("plain", &[][..]),
        ("steady", &["WINDOW", "4"][..]),
        ("burst", &["WINDOW", "4"][..]),
    ] {
        let mut args = vec!["BF.RESERVE", key, "0.01"];
        let capacity = capacity.to_string();
        args.push(&capacity);
        args.extend(extra);
        assert_eq!(conn.call(&args), Frame::ok());
    }
    fill(&mut conn, "plain", capacity);
    fill(&mut conn, "burst", capacity);
    // Read at once: nothing writes to it again, so its parts are swept within the window.
    let burst = conn.call(&["MEMORY", "USAGE", "burst"]).int() as f64;
    // Ten ticks a second, each adding its share of the window's capacity.
    let ticks = window * 10;
    let per_tick = capacity / ticks;
    let start = std::time::Instant::now();
    let mut next = 0u64;
    let mut sizes = Vec::new();
    for tick in 0..ticks * 3 {
        let due = std::time::Duration::from_millis(tick * 100);
        if let Some(wait) = due.checked_sub(start.elapsed()) {
            std::thread::sleep(wait);
        }
        let mut args = vec!["BF.MADD".to_string(), "steady".into()];
        args.extend((next..next + per_tick).map(|i| format!("item:{i}")));
        next += per_tick;
        assert!(!conn
            .call(&args.iter().map(String::as_str).collect::<Vec<_>>())
            .is_error());
        if tick >= ticks * 2 {
            sizes.push(conn.call(&["MEMORY", "USAGE", "steady"]).int() as f64);
        }
    }
    let plain = conn.call(&["MEMORY", "USAGE", "plain"]).int() as f64;
    let steady = sizes.iter().copied().fold(0.0, f64::max);
    let per_item = |bytes: f64| bytes / capacity as f64;
    for (label, bytes, limit) in [
        (
            "MEMORY USAGE per item, windowed, items arriving evenly (most over the third window)",
            steady,
            2.0,
        ),
        (
            "MEMORY USAGE per item, windowed, a window's items in one burst",
            burst,
            3.0,
        ),
    ] {
        rows.push(Row {
            group: "windowed filters against plain ones",
            name: format!("{label}, {capacity} items per window at 1%"),
            value: per_item(bytes),
            unit: "bytes",
            target: Some(("plain filter".into(), per_item(plain), limit)),
            pairs: Vec::new(),
        });
    }
    conn.call(&["DEL", "plain", "steady", "burst"]);
    window_pattern_rows(server, rows);
}

/// Windowed filters under the arrival patterns that cost the most memory (issue 22), each with
/// at most the capacity in any window: 16,000 items per 4-second window at 1%, fed on ticks of a
/// quarter of a slot for three windows; the most MEMORY USAGE each took against a plain filter's.
fn window_pattern_rows(server: &Server, rows: &mut Vec<Row>) {
    let mut conn = server.conn();
    let capacity = 16_000u64;
    let part = capacity / 8;
    // Ticks of 250 ms: 4 a slot, 16 a window, 48 in all.
    let ticks = 48usize;
    let slot_of = |tick: usize| tick / 4;
    let patterns: Vec<(&str, &[&str], Vec<u64>)> = vec![
        (
            "5,250 items in two slots of every four (5.89x before), EXPANSION 4",
            &[],
            (0..ticks)
                .map(|t| {
                    if t % 4 == 0 && slot_of(t) % 4 < 2 {
                        5250
                    } else {
                        0
                    }
                })
                .collect(),
        ),
        (
            "the same, EXPANSION 64 (76.8x before)",
            &["EXPANSION", "64"],
            (0..ticks)
                .map(|t| {
                    if t % 4 == 0 && slot_of(t) % 4 < 2 {
                        5250
                    } else {
                        0
                    }
                })
                .collect(),
        ),
        (
            "alternating: a part and one item, then one item",
            &[],
            (0..ticks)
                .map(|t| match (t % 4, slot_of(t) % 2) {
                    (0, 0) => part + 1,
                    (0, _) => 1,
                    _ => 0,
                })
                .collect(),
        ),
        (
            "a ramp up to a quarter of the capacity a slot and down",
            &[],
            (0..ticks)
                .map(|t| {
                    let slot = slot_of(t) as u64;
                    let level = if slot < 6 { slot } else { 12 - slot };
                    capacity / 4 * level / 6 / 4
                })
                .collect(),
        ),
        (
            "a window's items straddling a slot boundary, twice",
            &[],
            (0..ticks)
                .map(|t| match t {
                    3 | 4 | 21 | 22 => capacity / 2,
                    _ => 0,
                })
                .collect(),
        ),
    ];
    conn.call(&["DEL", "plain16k"]);
    assert_eq!(
        conn.call(&["BF.RESERVE", "plain16k", "0.01", &capacity.to_string()]),
        Frame::ok()
    );
    let plain = conn.call(&["MEMORY", "USAGE", "plain16k"]).int() as f64;
    for (index, (_, extra, counts)) in patterns.iter().enumerate() {
        let key = format!("pattern{index}");
        conn.call(&["DEL", &key]);
        let mut args = vec!["BF.RESERVE", &key, "0.01", "16000", "WINDOW", "4"];
        args.extend(extra.iter());
        assert_eq!(conn.call(&args), Frame::ok());
        // Within the capacity in any window of 16 ticks.
        assert!(counts
            .windows(16)
            .all(|w| w.iter().sum::<u64>() <= capacity));
    }
    let mut peaks = vec![0.0f64; patterns.len()];
    let mut next = 0u64;
    // Start at a slot boundary of the server's clock (1-second slots).
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(
        1000 - now.as_millis() as u64 % 1000 + 5,
    ));
    let start = std::time::Instant::now();
    for tick in 0..ticks {
        let due = std::time::Duration::from_millis(tick as u64 * 250);
        if let Some(wait) = due.checked_sub(start.elapsed()) {
            std::thread::sleep(wait);
        }
        for (index, (_, _, counts)) in patterns.iter().enumerate() {
            let key = format!("pattern{index}");
            if counts[tick] > 0 {
                let mut args = vec!["BF.MADD".to_string(), key.clone()];
                args.extend((next..next + counts[tick]).map(|i| format!("item:{i}")));
                next += counts[tick];
                assert!(!conn
                    .call(&args.iter().map(String::as_str).collect::<Vec<_>>())
                    .is_error());
            }
            let bytes = conn.call(&["MEMORY", "USAGE", &key]).int() as f64;
            peaks[index] = peaks[index].max(bytes);
        }
    }
    for (index, (label, _, _)) in patterns.iter().enumerate() {
        rows.push(Row {
            group: "windowed filters against plain ones",
            name: format!("most MEMORY USAGE, {label}; 16,000 items per 4 s window at 1%"),
            value: peaks[index],
            unit: "bytes",
            target: Some(("plain filter".into(), plain, 3.0)),
            pairs: Vec::new(),
        });
        conn.call(&["DEL", &format!("pattern{index}")]);
    }
    conn.call(&["DEL", "plain16k"]);
}

fn persistence_rows(server: &Server, rows: &mut Vec<Row>) {
    let mut conn = server.conn();
    // 725 million items at 1% (first sub-filter at 0.5%): 1.0 GB of bits, 10 million items in.
    let capacity = size(725_000_000);
    conn.call(&["FLUSHALL"]);
    assert_eq!(
        conn.call(&["BF.RESERVE", "rdb", "0.01", &capacity.to_string()]),
        Frame::ok()
    );
    fill(&mut conn, "rdb", size(10_000_000));
    let bytes = conn.call(&["BF.INFO", "rdb", "SIZE"]).items()[0].int();
    let save_filter = seconds(|| assert_eq!(conn.call(&["SAVE"]), Frame::ok()));
    let load_filter =
        seconds(|| assert_eq!(conn.call(&["DEBUG", "RELOAD", "NOSAVE"]), Frame::ok()));
    // The same bytes as plain strings: the filter's own chunks, through a file so that the
    // filter is gone before the strings are made (one gigabyte at a time).
    let spool = server.dir.join("chunks.bin");
    let mut lengths = Vec::new();
    {
        use std::io::Write;
        let mut file = std::io::BufWriter::new(std::fs::File::create(&spool).unwrap());
        let mut iterator = 1;
        loop {
            let reply = conn
                .call(&["BF.SCANDUMP", "rdb", &iterator.to_string()])
                .items();
            iterator = reply[0].int();
            if iterator == 0 {
                break;
            }
            let data = reply[1].bytes();
            file.write_all(&data).unwrap();
            lengths.push(data.len());
        }
    }
    conn.call(&["FLUSHALL"]);
    {
        use std::io::Read;
        let mut file = std::fs::File::open(&spool).unwrap();
        for (index, len) in lengths.iter().enumerate() {
            let mut data = vec![0; *len];
            file.read_exact(&mut data).unwrap();
            let key = format!("str:{index}");
            assert_eq!(
                conn.call(&[&b"SET"[..], key.as_bytes(), &data]),
                Frame::ok()
            );
        }
    }
    let _ = std::fs::remove_file(&spool);
    let save_strings = seconds(|| assert_eq!(conn.call(&["SAVE"]), Frame::ok()));
    let load_strings =
        seconds(|| assert_eq!(conn.call(&["DEBUG", "RELOAD", "NOSAVE"]), Frame::ok()));
    conn.call(&["FLUSHALL"]);
    let label = format!("{:.2} GB", bytes as f64 / 1e9);
    rows.push(Row {
        group: "persistence",
        name: format!("RDB SAVE, {label} filter"),
        value: save_filter,
        unit: "s",
        target: Some(("same bytes as strings".into(), save_strings, 1.2)),
        pairs: Vec::new(),
    });
    rows.push(Row {
        group: "persistence",
        name: format!("RDB load, {label} filter"),
        value: load_filter,
        unit: "s",
        target: Some(("same bytes as strings".into(), load_strings, 1.2)),
        pairs: Vec::new(),
    });
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines().find_map(|l| {
                l.strip_prefix("model name")
                    .map(|v| v.trim_start_matches([' ', '\t', ':']).to_string())
            })
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let date = Command::new("date")
        .arg("+%Y-%m-%d")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    let redis = Command::new("redis-server")
        .arg("--version")
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .split_whitespace()
                .nth(2)
                .unwrap_or("")
                .to_string()
        })
        .unwrap_or_default();
    format!(
        "{date}, {cpu}, {cores} cores, Redis {}",
        redis.trim_start_matches("v=")
    )
}

fn print_table(rows: &[Row], machine: &str) {
    println!(
        "\nredis-bf benchmark: {machine}{}\n",
        if quick() {
            " (BENCH_QUICK: not for numbers)"
        } else {
            ""
        }
    );
    let mut group = "";
    for row in rows {
        if row.group != group {
            group = row.group;
            println!("{group}");
        }
        let versus = match (&row.target, row.ratio(), row.met()) {
            (Some((name, base, limit)), Some(ratio), Some(met)) => {
                let limit = if limit.is_finite() {
                    format!(
                        " (target <= {limit}x: {})",
                        if met { "met" } else { "MISSED" }
                    )
                } else {
                    String::new()
                };
                format!("  vs {name} {base:.3}: {ratio:.2}x{limit}")
            }
            _ => String::new(),
        };
        println!(
            "  {:<58} {:>14.3} {:<5}{versus}",
            row.name, row.value, row.unit
        );
        if !row.pairs.is_empty() {
            let pairs: Vec<String> = row.pairs.iter().map(|r| format!("{r:.2}")).collect();
            println!("  {:<58} ratio of each pair: {}", "", pairs.join(" "));
        }
    }
}

fn json(rows: &[Row], machine: &str) -> String {
    let escape = |s: &str| s.replace('\\', "\\\\").replace('"', "\\\"");
    let mut out = format!(
        "{{\n  \"machine\": \"{}\",\n  \"quick\": {},\n  \"rows\": [\n",
        escape(machine),
        quick()
    );
    for (index, row) in rows.iter().enumerate() {
        let target = match (&row.target, row.ratio(), row.met()) {
            (Some((name, base, limit)), Some(ratio), Some(met)) => format!(
                ", \"baseline\": \"{}\", \"baseline_value\": {base}, \"ratio\": {ratio}, \"target_ratio\": {}, \"met\": {met}",
                escape(name),
                if limit.is_finite() { limit.to_string() } else { "null".into() }
            ),
            _ => String::new(),
        };
        let _ = writeln!(
            out,
            "    {{\"group\": \"{}\", \"name\": \"{}\", \"value\": {}, \"unit\": \"{}\"{target}}}{}",
            escape(row.group),
            escape(&row.name),
            row.value,
            row.unit,
            if index + 1 < rows.len() { "," } else { "" }
        );
    }
    out.push_str("  ]\n}\n");
    out
}

/// A bar chart of every ratio against its baseline (1.0), with the target marked.
fn svg(rows: &[Row], machine: &str) -> String {
    let rated: Vec<&Row> = rows.iter().filter(|r| r.ratio().is_some()).collect();
    let (left, width, bar, gap) = (420.0, 420.0, 18.0, 8.0);
    let height = 70.0 + rated.len() as f64 * (bar + gap);
    let max = rated
        .iter()
        .filter_map(|r| r.ratio())
        .chain(
            rated
                .iter()
                .filter_map(|r| r.target.as_ref().map(|t| t.2))
                .filter(|l| l.is_finite()),
        )
        .fold(1.5f64, f64::max);
    let x = |ratio: f64| left + ratio / max * width;
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{height}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"10\" y=\"20\" font-size=\"14\">redis-bf: each measure over its baseline (lower is better; | marks the target)</text>\n\
         <text x=\"10\" y=\"38\" fill=\"#555\">{}</text>\n",
        left + width + 80.0,
        machine.replace('&', "&amp;").replace('<', "&lt;")
    );
    let _ = writeln!(out, "<line x1=\"{0}\" y1=\"50\" x2=\"{0}\" y2=\"{1}\" stroke=\"#999\" stroke-dasharray=\"3,3\"/>", x(1.0), height - 10.0);
    for (index, row) in rated.iter().enumerate() {
        let y = 55.0 + index as f64 * (bar + gap);
        let ratio = row.ratio().unwrap_or(0.0);
        let color = match row.met() {
            Some(true) => "#3a7d44",
            _ => "#b33",
        };
        let label = format!(
            "{} ({})",
            row.name,
            row.target.as_ref().map_or("", |t| t.0.as_str())
        );
        let _ = writeln!(
            out,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
            left - 8.0,
            y + 13.0,
            label.replace('&', "&amp;").replace('<', "&lt;")
        );
        let _ = writeln!(
            out,
            "<rect x=\"{left}\" y=\"{y}\" width=\"{:.1}\" height=\"{bar}\" fill=\"{color}\"/>",
            x(ratio) - left
        );
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{}\">{ratio:.2}x</text>",
            x(ratio) + 4.0,
            y + 13.0
        );
        if let Some((_, _, limit)) = &row.target {
            if limit.is_finite() {
                let _ = writeln!(out, "<line x1=\"{0:.1}\" y1=\"{1}\" x2=\"{0:.1}\" y2=\"{2}\" stroke=\"black\" stroke-width=\"2\"/>", x(*limit), y - 2.0, y + bar + 2.0);
            }
        }
    }
    out.push_str("</svg>\n");
    out
}
