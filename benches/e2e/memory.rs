//! Section `memory`: MEMORY USAGE of a full 10M-item filter at 1%, per item against the theory,
//! and in all against its bit arrays plus a fixed cost per sub-filter.

use crate::common::Server;
use crate::measure::size;
use crate::report::Row;
use crate::server::{fill, reserve};

/// Measures this section and appends its rows.
pub fn rows(server: &Server, rows: &mut Vec<Row>) {
    let mut conn = server.conn();
    let items = size(10_000_000);
    reserve(&mut conn, "mem", items);
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
    rows.push(
        Row::new(
            "memory",
            "MEMORY USAGE per item, 10M items at 1%",
            usage / card,
            "bytes",
        )
        .against("theory at p/2 (11.03 bits)", 11.0275 / 8.0, 1.01),
    );
    rows.push(
        Row::new(
            "memory",
            "MEMORY USAGE over bit array + 512 B per sub-filter",
            usage,
            "bytes",
        )
        .against(
            "bit array + 512 B/sub-filter",
            bit_bytes + 512.0 * filters,
            1.01,
        ),
    );
    conn.call(&["DEL", "mem"]);
}
