//! Section `hugepages`: big filters with `bf.huge-pages` on (the default) against the same
//! filters with it off, on two servers of this build side by side: the 100M-item filters half
//! full at 1%, classic and blocked, single items and batches of 100, alternating pairs. Only where
//! the kernel's mode is `madvise`: elsewhere the module asks for nothing, and both sides are the
//! same.

use crate::common::Server;
use crate::layout::{command, pairs, reserve, suffix, Side, ANY_ITEM};
use crate::measure::size;
use crate::report::Row;
use crate::server::{self, fill};

const GROUP: &str = "huge pages on against off (usec per call, ns per item in batches)";

/// Measures this section and appends its rows.
pub fn rows(rows: &mut Vec<Row>) {
    let on = server::start();
    if on.info_field("bf", "bf_huge_pages") != "on" {
        println!(
            "(skipped the huge page rows: INFO bf says bf_huge_pages:{}; the kernel's mode must be \
             madvise)",
            on.info_field("bf", "bf_huge_pages")
        );
        return;
    }
    let off = Server::with(server::options().module_args(&[
        "max-filter-bytes",
        "2gb",
        "huge-pages",
        "no",
    ]));
    let hundred = size(100_000_000);
    for server in [&on, &off] {
        let mut conn = server.conn();
        for (key, layout) in [("huge-c", "CLASSIC"), ("huge-b", "BLOCKED")] {
            reserve(&mut conn, key, 0.01, hundred, layout);
            fill(&mut conn, key, hundred / 2);
        }
    }
    // The reading is made by a thread INFO starts: ask, give it a moment, ask again.
    on.info_field("bf", "bf_huge_pages_bytes");
    std::thread::sleep(std::time::Duration::from_secs(1));
    let on_huge = on.info_field("bf", "bf_huge_pages_bytes");
    let off_huge = off.info_field("bf", "bf_huge_pages_bytes");
    println!("(huge pages: {on_huge} bytes on huge pages with the config on, {off_huge} off)");
    for (key, layout) in [("huge-c", "classic"), ("huge-b", "blocked")] {
        for (verb, per) in [
            ("BF.ADD", 1.0),
            ("BF.EXISTS", 1.0),
            ("BF.MADD", 100.0),
            ("BF.MEXISTS", 100.0),
        ] {
            let name = verb.to_lowercase();
            let with = Side {
                server: &on,
                name: &name,
                command: command(verb, key, per),
                per,
                keyspace: ANY_ITEM,
            };
            let without = Side {
                server: &off,
                ..with.clone()
            };
            let label = format!(
                "{verb}{}, 100M-item {layout} filter half full at 1%",
                suffix(per)
            );
            let mut row = pairs(&label, &with, &without, "huge pages off", 1.0);
            row.group = GROUP;
            rows.push(row);
        }
    }
}
