//! Section `commands`: each command's server cost (`INFO commandstats`) and throughput, next to
//! Redis's own SET and GET on the same server: on a filter in the CPU's caches and on a full
//! 10M-item one.

use crate::common::Server;
use crate::measure::{measure, size, Measure};
use crate::report::Row;
use crate::server::{fill, reserve, reserve_small};

/// Measures this section and appends its rows.
pub fn rows(server: &Server, rows: &mut Vec<Row>) {
    let mut conn = server.conn();
    let requests = size(1_000_000);
    // Redis's own commands on one key, as the BF commands below work on one filter.
    let set = measure(server, "set", requests, 1_000_000, &["SET", "k", "v"]);
    let get = measure(server, "get", requests, 1_000_000, &["GET", "k"]);
    reserve_small(&mut conn);
    let bf = |verb: &str, key: &str, keyspace: u64| {
        let name = verb.to_lowercase();
        measure(
            server,
            &name,
            requests,
            keyspace,
            &[verb, key, "item:__rand_int__"],
        )
    };
    let add = bf("BF.ADD", "small", 100_000);
    let exists = bf("BF.EXISTS", "small", 100_000);
    // The floor of any module command on Redis 7.0: open a key, read its value, reply; no filter
    // work. What is left between it and GET is the module API's own cost.
    let card = measure(server, "bf.card", requests, 100_000, &["BF.CARD", "small"]);
    let items = size(10_000_000);
    reserve(&mut conn, "big", items);
    fill(&mut conn, "big", items);
    let big_add = bf("BF.ADD", "big", items * 2);
    let big_exists = bf("BF.EXISTS", "big", items * 2);
    let versus_set = Some(("SET", set.usec));
    let versus_get = Some(("GET", get.usec));
    for (name, measured, versus) in [
        ("SET k v", &set, None),
        ("GET k", &get, None),
        ("BF.ADD, 100K-item filter (134 KB)", &add, versus_set),
        ("BF.EXISTS, 100K-item filter (134 KB)", &exists, versus_get),
        (
            "BF.CARD (module API floor: open key, reply)",
            &card,
            versus_get,
        ),
        ("BF.ADD, 10M-item filter, full", &big_add, versus_set),
        ("BF.EXISTS, 10M-item filter, full", &big_exists, versus_get),
    ] {
        push_rows(rows, name, measured, versus);
    }
    conn.call(&["DEL", "big"]);
}

/// A command's two rows: its server cost, against `versus` (a baseline's name and cost) when
/// given, without a target; its throughput.
fn push_rows(rows: &mut Vec<Row>, name: &str, measured: &Measure, versus: Option<(&str, f64)>) {
    let mut cost = Row::new("server cost (usec_per_call)", name, measured.usec, "us");
    if let Some((baseline, usec)) = versus {
        cost = cost.against(baseline, usec, f64::INFINITY);
    }
    rows.push(cost);
    rows.push(Row::new(
        "throughput (redis-benchmark, 50 clients, pipeline 16)",
        name,
        measured.rps,
        "req/s",
    ));
}
