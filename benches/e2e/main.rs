//! The end-to-end benchmark behind `make bench`: a real redis-server with the module, driven by
//! `redis-benchmark`, every BF command's server cost (`INFO commandstats` usec_per_call) next to
//! Redis's own SET and GET measured on the same server in the same run; RedisBloom side by side
//! on the same server binary and workloads, when `REDISBLOOM_SO` names a build of it (alternating
//! runs, a ratio per pair and their median); whole-server instructions per request under
//! callgrind (against RedisBloom's and the previous build's, `BENCH_BASELINE_SO`); what the
//! module's presence costs Redis's own commands on a server with no filter (`neighbours`); big filters
//! with huge pages on and off; RDB save and load of a 1 GB filter next to the same bytes in plain strings; memory
//! per item; and the core microbenchmarks (criterion's results, if `cargo bench -p filters`
//! ran first).
//!
//! Prints one table; writes `target/bench/report.json` and `target/bench/report.svg`.
//! `BENCH_QUICK=1` shrinks every workload (for trying the driver out, not for numbers);
//! `BENCH_ONLY=commands,persistence` runs only some sections.
//!
//! One module per section under `benches/e2e/`; the servers are the integration tests' harness
//! (`tests/common`); `measure` and `report` are shared by the sections.

#[path = "../../tests/common/mod.rs"]
mod common;

mod measure;
mod report;
mod server;

mod batches;
mod bounded;
mod callgrind;
mod commands;
mod compaction;
mod creation;
mod cuckoo;
mod filter_core;
mod held;
mod huge_pages;
mod layout;
mod memory;
mod neighbours;
mod persistence;
mod redisbloom;
mod walks;
mod window;

use std::path::Path;

fn main() {
    // `cargo bench` passes --bench; nothing else is taken.
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench");
    std::fs::create_dir_all(&out).unwrap();
    let mut rows = Vec::new();

    // BENCH_ONLY=commands,persistence runs some sections (core, commands, batches, redisbloom,
    // cuckoo, held, callgrind, neighbours, bounded, compaction, walks, creation, memory, window,
    // layout, hugepages, persistence); all by default.
    let only = std::env::var("BENCH_ONLY").unwrap_or_default();
    let wanted = |section: &str| only.is_empty() || only.split(',').any(|s| s == section);
    if wanted("core") {
        filter_core::rows(&mut rows);
    }
    let server = server::start();
    if wanted("commands") {
        commands::rows(&server, &mut rows);
    }
    if wanted("batches") {
        batches::rows(&server, &mut rows);
    }
    if wanted("redisbloom") {
        redisbloom::rows(&server, &mut rows);
    }
    if wanted("cuckoo") {
        cuckoo::rows(&server, &mut rows);
    }
    if wanted("held") {
        held::rows(&server, &mut rows);
    }
    if wanted("callgrind") {
        callgrind::rows(&mut rows);
    }
    if wanted("neighbours") {
        neighbours::rows(&mut rows);
    }
    if wanted("bounded") {
        bounded::rows(&server, &mut rows);
    }
    if wanted("compaction") {
        compaction::rows(&server, &mut rows);
    }
    if wanted("walks") {
        walks::rows(&server, &mut rows);
    }
    if wanted("creation") {
        creation::rows(&server, &mut rows);
    }
    if wanted("memory") {
        memory::rows(&server, &mut rows);
    }
    if wanted("window") {
        window::rows(&server, &mut rows);
    }
    if wanted("layout") {
        layout::rows(&server, &mut rows);
    }
    if wanted("hugepages") {
        huge_pages::rows(&mut rows);
    }
    if wanted("persistence") {
        persistence::rows(&server, &mut rows);
    }
    drop(server);
    report::write(&rows, &out);
}
