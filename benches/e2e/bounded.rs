//! Section `bounded`: a batch costs no more per item than the same items as single commands, on
//! the chains where speculative work could blow up (a thousand sub-filters; a thousand hashes).

use crate::common::{Frame, Server};
use crate::measure::{batch_of_100, measure, size};
use crate::report::Row;

/// Measures this section and appends its rows.
pub fn rows(server: &Server, rows: &mut Vec<Row>) {
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
    madd.extend((0..1000).map(|i| format!("item:{i:012}")));
    conn.call(&madd);
    for (key, label, requests) in [
        ("long", "1,021-sub-filter chain", size(100_000) / 50),
        ("hashes", "997-hash filter", size(1_000_000) / 20),
    ] {
        let batch = batch_of_100("BF.MEXISTS", key);
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
        rows.push(
            Row::new(
                "bounded work, us per item",
                format!("BF.MEXISTS x100, {label}"),
                per_item,
                "us",
            )
            // The same work per item either way (the batch spreads the command's own cost): 10%
            // for the noise between two runs.
            .against("BF.EXISTS of one item", single, 1.1),
        );
    }
    conn.call(&["DEL", "long", "hashes"]);
}
