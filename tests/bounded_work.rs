//! Bounded work: a batch (`BF.MEXISTS`, `BF.MADD`, `BF.INSERT`) costs no more per item than the same
//! items sent one command each, on every chain the grammar allows: a thousand sub-filters of
//! EXPANSION 1, or a sub-filter with about a thousand hashes. Server time comes from `INFO
//! commandstats`; the margin (3x) only catches a blow-up (it was 60x and more before the bound).

mod common;

use common::{command_usec, pipeline, Conn, Frame, Server};

/// Server time of `items` sent as one `batch` command against the same items as `single`
/// commands, pipelined: (batch usec, singles usec), from the round of three where the batch fared
/// best (one command of a few milliseconds can lose its core to another test's server now and
/// then; a blow-up shows in every round).
fn batch_against_singles(
    conn: &mut Conn,
    batch: &[&str],
    single: &str,
    key: &str,
    items: &[String],
) -> (f64, f64) {
    (0..3)
        .map(|_| one_round(conn, batch, single, key, items))
        .min_by(|a, b| (a.0 / a.1).total_cmp(&(b.0 / b.1)))
        .unwrap()
}

/// One round of [`batch_against_singles`]; the commands change nothing a second round would see
/// differently (reads, and adds of items already held).
fn one_round(
    conn: &mut Conn,
    batch: &[&str],
    single: &str,
    key: &str,
    items: &[String],
) -> (f64, f64) {
    assert_eq!(conn.call(&["CONFIG", "RESETSTAT"]), Frame::ok());
    let singles: Vec<Vec<&str>> = items.iter().map(|item| vec![single, key, item]).collect();
    let single_replies = pipeline(conn, &singles);
    let mut command: Vec<&str> = batch.to_vec();
    command.extend(items.iter().map(String::as_str));
    let batch_replies = conn.call(&command).items();
    // The same answers either way.
    assert_eq!(batch_replies, single_replies);
    let batch_name = batch[0];
    (command_usec(conn, batch_name), command_usec(conn, single))
}

fn names(prefix: &str, count: usize) -> Vec<String> {
    (0..count).map(|i| format!("{prefix}{i}")).collect()
}

/// Adds items one command each until the chain stops growing; the number of sub-filters.
fn grow_until_refused(conn: &mut Conn, key: &str, items: &[String]) -> i64 {
    let adds: Vec<Vec<&str>> = items.iter().map(|item| vec!["BF.ADD", key, item]).collect();
    pipeline(conn, &adds);
    conn.call(&["BF.INFO", key, "FILTERS"]).items()[0].int()
}

fn assert_bounded(what: &str, (batch, singles): (f64, f64)) {
    assert!(
        batch <= 3.0 * singles,
        "{what}: the batch took {batch} us of server time, the same items as single commands {singles} us"
    );
}

#[test]
fn a_batch_on_a_thousand_sub_filter_chain_costs_what_singles_cost() {
    let server = Server::start();
    let mut conn = server.conn();
    assert_eq!(
        conn.call(&["BF.RESERVE", "dos", "0.99", "1", "EXPANSION", "1"]),
        Frame::ok()
    );
    // Each new item fills a one-item sub-filter, until the error rate of the next one would leave
    // the range of a double: 1,021 sub-filters.
    let added = names("x", 1100);
    assert_eq!(grow_until_refused(&mut conn, "dos", &added), 1021);
    let absent = names("p", 10_000);
    assert_bounded(
        "BF.MEXISTS of absent items",
        batch_against_singles(
            &mut conn,
            &["BF.MEXISTS", "dos"],
            "BF.EXISTS",
            "dos",
            &absent,
        ),
    );
    // Adds of items the chain holds: every sub-filter is looked at before the answer is 0.
    let present = names("x", 1020);
    assert_bounded(
        "BF.MADD of present items",
        batch_against_singles(&mut conn, &["BF.MADD", "dos"], "BF.ADD", "dos", &present),
    );
    assert_bounded(
        "BF.INSERT of present items",
        batch_against_singles(
            &mut conn,
            &["BF.INSERT", "dos", "NOCREATE", "ITEMS"],
            "BF.ADD",
            "dos",
            &present,
        ),
    );
}

#[test]
fn a_batch_on_an_ordinary_expansion_1_chain_costs_what_singles_cost() {
    let server = Server::start();
    let mut conn = server.conn();
    assert_eq!(
        conn.call(&["BF.RESERVE", "k", "0.01", "100", "EXPANSION", "1"]),
        Frame::ok()
    );
    for start in (0..60_000).step_by(1000) {
        let mut madd = vec!["BF.MADD".to_string(), "k".to_string()];
        madd.extend((start..start + 1000).map(|i| format!("item:{i}")));
        assert!(!conn.call(&madd).items().iter().any(Frame::is_error));
    }
    assert!(conn.call(&["BF.INFO", "k", "FILTERS"]).items()[0].int() >= 590);
    let absent = names("absent:", 1000);
    assert_bounded(
        "BF.MEXISTS on a 600-sub-filter chain",
        batch_against_singles(&mut conn, &["BF.MEXISTS", "k"], "BF.EXISTS", "k", &absent),
    );
}

#[test]
fn a_batch_on_a_filter_with_a_thousand_hashes_costs_what_singles_cost() {
    let server = Server::start();
    let mut conn = server.conn();
    assert_eq!(
        conn.call(&["BF.RESERVE", "many", "1e-300", "1000", "NONSCALING"]),
        Frame::ok()
    );
    let debug = conn.call(&["BF.DEBUG", "many"]).items()[1].text();
    assert!(debug.contains(" hashes:997 "), "{debug}");
    let present = names("in:", 500);
    let mut madd = vec!["BF.MADD", "many"];
    madd.extend(present.iter().map(String::as_str));
    conn.call(&madd);
    let absent = names("out:", 5000);
    assert_bounded(
        "BF.MEXISTS of absent items, 997 hashes",
        batch_against_singles(
            &mut conn,
            &["BF.MEXISTS", "many"],
            "BF.EXISTS",
            "many",
            &absent,
        ),
    );
    assert_bounded(
        "BF.MEXISTS of present items, 997 hashes",
        batch_against_singles(
            &mut conn,
            &["BF.MEXISTS", "many"],
            "BF.EXISTS",
            "many",
            &present,
        ),
    );
    assert_bounded(
        "BF.MADD of present items, 997 hashes",
        batch_against_singles(&mut conn, &["BF.MADD", "many"], "BF.ADD", "many", &present),
    );
}
